#!/usr/bin/env bash
# Install numacoll into a scratch prefix, then build and run the example against it twice:
# through pkg-config and through the CMake package (find_package).
set -euo pipefail
build=$1 src=$2
prefix=$build/install-test
rm -rf "$prefix" "$build/install-consumer"
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(ls -d "$prefix"/lib*/ | head -1)
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc -std=c11 -o "$prefix/consumer_pkgconfig" "$src/examples/barrier_fork.c" \
   $(pkg-config --cflags --libs numacoll) -Wl,-rpath,"$libdir"
"$prefix/consumer_pkgconfig" 3 500
cmake -S "$src/tests/install" -B "$build/install-consumer" -DCMAKE_PREFIX_PATH="$prefix" \
      -DEXAMPLE_SOURCE="$src/examples/barrier_fork.c" >/dev/null
cmake --build "$build/install-consumer" >/dev/null
LD_LIBRARY_PATH=$libdir "$build/install-consumer/consumer_find_package" 3 500
test -f "$prefix/include/numacoll/numacoll.h"
test -x "$prefix/bin/numacoll-info"
LD_LIBRARY_PATH=$libdir "$prefix/bin/numacoll-info" --check
echo "install check passed"
