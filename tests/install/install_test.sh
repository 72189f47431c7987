#!/bin/sh
# Installs the build into a temporary prefix, then builds tests/install/consumer outside the tree against
# the installed package both ways (pkg-config; CMake's find_package with the shared and the static
# library) and runs what it built; checks that libtandem.so exports the C API only.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR [EXTRA_CFLAGS]   (EXTRA_CFLAGS: the sanitizer flags)
set -eu
build=$1
src=$2
extra=${3:-}
work=$(mktemp -d /tmp/tandem-install-XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; exit 1; }
for f in include/tandem/tandem.h include/tandem/tandem.hpp include/tandem/tandem_abi.h bin/tandem bin/tandemd \
         lib/libtandem.a lib/libtandem.so lib/libtandem.so.0 lib/pkgconfig/tandem.pc lib/cmake/tandem/tandemConfig.cmake \
         lib/systemd/user/tandemd.service share/tandem/tandemd.toml \
         lib/tandem-accumulate/sw/libaccumulate.so.1 lib/tandem-accumulate/tandem/libaccumulate.so.1; do
  [ -e "$prefix/$f" ] || { echo "install_test: $f was not installed"; exit 1; }
done
readelf -d "$prefix/lib/libtandem.so" | grep -q 'SONAME.*libtandem\.so\.0' || { echo "install_test: no versioned soname"; exit 1; }
grep -q "ExecStart=$prefix/bin/tandemd " "$prefix/lib/systemd/user/tandemd.service" ||
  { echo "install_test: the unit does not start $prefix/bin/tandemd"; exit 1; }

# Only the C API leaves the shared library.
leaked=$(nm -D --defined-only "$prefix/lib/libtandem.so" | awk '{print $3}' | grep -v -E '^(tandem_[a-z0-9_]+(@@TANDEM_0)?|TANDEM_0)$' || true)
[ -z "$leaked" ] || { echo "install_test: libtandem.so exports more than the C API:"; echo "$leaked" | head; exit 1; }

# pkg-config, the shared library, run from another directory (no build tree in sight).
cp "$src/tests/install/consumer/consumer.c" "$work/"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cc -std=c99 -Wall -Werror $extra "$work/consumer.c" -o "$work/consumer_pc" $(pkg-config --cflags --libs tandem) \
   -Wl,-rpath,"$(pkg-config --variable=libdir tandem)"
(cd "$work" && ./consumer_pc)

# find_package(tandem): the shared and the static library.
cmake -S "$src/tests/install/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_C_FLAGS="$extra" -DCMAKE_EXE_LINKER_FLAGS="$extra" >"$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
cmake --build "$work/cmake-build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
(cd "$work" && ./cmake-build/consumer && ./cmake-build/consumer_static)
echo "install_test: ok"
