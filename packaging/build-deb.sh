#!/usr/bin/env bash
# Build the Debian package of zx: packaging/debian is linked to ./debian
# (where dpkg-buildpackage looks for it), then
#   dpkg-buildpackage -us -uc -b
# leaves zx_<version>_<arch>.deb (and .buildinfo, .changes) in the folder
# above the source tree; this script moves them to $ZX_DEB_OUT (default
# ./build-deb) and prints the .deb's path.  Needs debhelper, dpkg-dev,
# fakeroot and the build packages (packaging/install-deps.sh --test).
# An existing ./debian that is not this link is refused, never replaced.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
out="${ZX_DEB_OUT:-$src/build-deb}"

if [ -e debian ] || [ -L debian ]; then
    if [ "$(readlink debian)" != packaging/debian ]; then
        echo "zx: ./debian exists and is not a link to packaging/debian; not touching it" >&2
        exit 1
    fi
else
    ln -s packaging/debian debian
fi
cleanup() {
    rm -f "$src/debian"
    rm -rf "$src/obj-"* "$src/packaging/debian/zx" "$src/packaging/debian/.debhelper" \
        "$src/packaging/debian/debhelper-build-stamp" "$src/packaging/debian/files" \
        "$src/packaging/debian/zx.substvars" "$src/packaging/debian/"*.debhelper* \
        "$src/packaging/debian/tmp"
}
trap cleanup EXIT

dpkg-buildpackage -us -uc -b >&2
mkdir -p "$out"
version=$(dpkg-parsechangelog -S Version)
parent=$(dirname "$src")
for f in "$parent"/zx_"$version"_*.deb "$parent"/zx-dbgsym_"$version"_*.deb \
         "$parent"/zx_"$version"_*.buildinfo "$parent"/zx_"$version"_*.changes; do
    [ -e "$f" ] && mv -f "$f" "$out/"
done
ls "$out"/zx_"$version"_*.deb
