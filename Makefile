# numacoll top-level Makefile.
#   make          check dependencies, configure and build into build/
#   make test     the whole test suite (ctest), installing missing Debian packages as root
#   make test-sanitize  the tests built with AddressSanitizer and UBSan (CI runs it too)
#   make bench    the main job: numacoll against the native MPI on this machine -> results/
#                 (the reference run of this repository is in docs/results/)
#   make install  cmake --install (PREFIX=/usr/local)
#   make format   clang-format every C source in place

BUILD    ?= build
SAN_BUILD ?= build-sanitize
PREFIX   ?= /usr/local
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
ifdef CI
CMAKE_FLAGS += -DNUMACOLL_WERROR=ON
endif

# Debian packages: to build, to test (MPI, Fortran, plots), to benchmark.
BUILD_PKGS = gcc make cmake pkg-config hwloc libhwloc-dev libnuma-dev libcmocka-dev help2man
TEST_PKGS  = $(BUILD_PKGS) openmpi-bin libopenmpi-dev mpich libmpich-dev gfortran \
             python3-matplotlib python3-mpi4py python3-dev python3-pip python3-venv \
             python3-setuptools
BENCH_PKGS = $(TEST_PKGS)

.PHONY: all deps deps-test configure build test test-sanitize bench install format clean

all: build

deps:
	@tools/scripts/dev/ensure-packages.sh $(BUILD_PKGS)

deps-test:
	@tools/scripts/dev/ensure-packages.sh $(TEST_PKGS)

configure: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: deps-test
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	@cd $(BUILD) && ctest --output-on-failure --timeout 600 -j 1

# Everything under ASan + UBSan (any finding fails the test). The tests without MPI check
# leaks at exit too; the MPI tests do not (the MPI libraries keep memory to the end) and let
# the preloaded, instrumented library come before the sanitizer runtime (the churn tests
# drop their resident-memory bound there: ASan keeps freed memory in quarantine). Left out:
# mpi4py's suite (an uninstrumented Python) and the install test (an uninstrumented example
# built against the instrumented library).
SAN_SKIP = ^install_and_consume$$
test-sanitize: deps-test
	@cmake -S . -B $(SAN_BUILD) $(CMAKE_FLAGS) -DNUMACOLL_SANITIZE=address,undefined >/dev/null
	@cmake --build $(SAN_BUILD) -j $(JOBS)
	@cd $(SAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1 \
	    ctest --output-on-failure --timeout 600 -j 1 -LE mpi -E '$(SAN_SKIP)'
	@cd $(SAN_BUILD) && ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:abort_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1 \
	    ctest --output-on-failure --timeout 600 -j 1 -L mpi -LE mpi4py -E '$(SAN_SKIP)'

# results/ is this run's (not tracked); docs/results/ holds the reference run shipped with
# the repository
bench: deps-test
	@CMAKE_FLAGS="$(CMAKE_FLAGS)" tools/scripts/dev/bench.sh --build $(BUILD) results

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	@rm -rf $(BUILD) $(SAN_BUILD)
