# numacoll top-level Makefile.
#   make          check dependencies, configure and build into build/
#   make test     the whole test suite (ctest), installing missing Debian packages as root
#   make bench    the main job: numacoll against the native MPI on this machine -> results/
#   make install  cmake --install (PREFIX=/usr/local)
#   make format   clang-format every C source in place

BUILD    ?= build
PREFIX   ?= /usr/local
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
ifdef CI
CMAKE_FLAGS += -DNUMACOLL_WERROR=ON
endif

# Debian packages: to build, to test (MPI, Fortran, plots), to benchmark.
BUILD_PKGS = gcc make cmake pkg-config hwloc libhwloc-dev libnuma-dev libcmocka-dev
TEST_PKGS  = $(BUILD_PKGS) openmpi-bin libopenmpi-dev mpich libmpich-dev gfortran \
             python3-matplotlib python3-dev python3-pip python3-venv
BENCH_PKGS = $(TEST_PKGS)

.PHONY: all deps deps-test configure build test bench install format clean

all: build

deps:
	@scripts/ensure-packages.sh $(BUILD_PKGS)

deps-test:
	@scripts/ensure-packages.sh $(TEST_PKGS)

configure: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: deps-test
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	@cd $(BUILD) && ctest --output-on-failure --timeout 600 -j 1

bench: deps-test
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	@scripts/bench.sh $(BUILD) results

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	@rm -rf $(BUILD)
