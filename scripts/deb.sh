#!/usr/bin/env bash
# Builds a Debian package of the ptr_ring mempool handler for the DPDK
# installed on this machine (bookworm: 22.11, trixie: 24.11, forky: 25.11):
#   build/deb/librte-mempool-ptr-ring<ABI>_<version>+dpdk<ABI>_<arch>.deb
# named like Debian's own DPDK drivers (librte-mempool-ring23, ...-ring25,
# ...-ring26), <ABI> being DPDK's ABI (23, 25, 26) and <version> pmd-glue's.
# Build the handler first (make build): the package holds what
# `DESTDIR=<stage> PREFIX=/usr scripts/install.sh install` stages (see its
# --help), without the install manifest (dpkg keeps its own list) and without
# the separate debug file:
#   <plugindir>/librte_mempool_ptr_ring.so.<ABI>.<minor>   (stripped)
#   <plugindir>/librte_mempool_ptr_ring.so.<ABI>, ...so    symlinks
#   <includedir>/rte_mempool_ptr_ring.h, <pcdir>/libdpdk-mempool-ptr-ring.pc
# <plugindir> is EAL's (e.g. /usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0).
# Depends: what dpkg-shlibdeps finds for the library's DT_NEEDED libraries
# (librte-eal<ABI>, librte-mempool<ABI>, ...), so the package installs only
# next to the DPDK release it was built for.
#
# WARNING: once the package is installed, every DPDK application on the host
# loads the handler (it takes one of the 16 mempool ops slots of each process).
#
#   scripts/deb.sh            builds the package, prints its path last
#
# Environment:
#   LIB                      library to package (default target/release/librte_mempool_ptr_ring.so)
#   PTR_RING_DEB_MAINTAINER  the Maintainer field (default: user <user@host>)
# Needs dpkg-dev (dpkg-shlibdeps), binutils and pkg-config with libdpdk-dev;
# runs as any user. In a root of another release: scripts/dpdk-root.sh SUITE bash scripts/deb.sh
set -euo pipefail
# shellcheck source=scripts/help.sh
source "$(dirname "${BASH_SOURCE[0]}")/help.sh"
help_if_asked "$@"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "deb: error: $*" >&2; exit 1; }
(($# == 0)) || die "unknown argument '$1' (see --help)"

NAME=librte_mempool_ptr_ring
HEADER=rte_mempool_ptr_ring.h
PC_NAME=libdpdk-mempool-ptr-ring
lib=${LIB:-$repo/target/release/$NAME.so}
out=$repo/build/deb

for tool in dpkg-deb dpkg-shlibdeps readelf pkg-config; do
    command -v "$tool" >/dev/null || die "$tool not found (Debian: apt-get install dpkg-dev binutils pkg-config)"
done
[[ -f $lib ]] || die "$lib not found: run 'make build' first"
pkg-config --exists libdpdk || die "libdpdk not found by pkg-config (Debian: libdpdk-dev)"

# The ABI the library was built for; install.sh checks it against the
# installed DPDK's plugin directory.
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ $soname =~ ^$NAME\.so\.([0-9]+)$ ]] || die "$lib has soname '$soname', expected $NAME.so.<ABI>: rebuild it ('make build')"
abi=${BASH_REMATCH[1]}
# Debian's name for a DPDK driver: librte-<class>-<driver><ABI>, with a '-'
# before the ABI when the name ends in a digit (librte-mempool-dpaa2-23).
pkg=librte-mempool-ptr-ring$abi
arch=$(dpkg --print-architecture)
dpdk_version=$(pkg-config --modversion libdpdk)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# dpkg-shlibdeps wants a debian/control and the files under debian/<package>.
mkdir -p "$tmp/debian"
stage=$tmp/debian/$pkg
mkdir -m 755 "$stage"
if ! DESTDIR=$stage PREFIX=/usr LIB=$lib bash "$repo/scripts/install.sh" install >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log" >&2
    die "scripts/install.sh install into the staging tree failed"
fi
# Not packaged: the manifest (dpkg lists the files itself) and the debug file.
rm -rf "$stage/usr/share/$NAME" "$stage/usr/lib/debug"
find "$stage" -mindepth 1 -depth -type d -empty -delete

real=$(cd "$stage" && find . -type f -name "$NAME.so.$abi.*" | sed 's/^\.//')
[[ -n $real && $real != *$'\n'* ]] || die "no $NAME.so.$abi.* in the staging tree (see scripts/install.sh)"
plugindir=$(dirname "$real")
pc=$(cd "$stage" && find . -type f -name "$PC_NAME.pc" | sed 's/^\.//')
[[ -n $pc ]] || die "no $PC_NAME.pc in the staging tree"
version=$(sed -n 's/^Version: *//p' "$stage$pc")
[[ -n $version ]] || die "no Version in $pc"
debversion=$version+dpdk$abi

# Depends from the shared libraries' own shlibs/symbols files.
printf 'Source: ptr-ring\n\nPackage: %s\nArchitecture: any\n' "$pkg" >"$tmp/debian/control"
shlibs=$(cd "$tmp" && dpkg-shlibdeps -O -e"$stage$real" 2>"$tmp/shlibdeps.log") ||
    { cat "$tmp/shlibdeps.log" >&2; die "dpkg-shlibdeps failed"; }
depends=$(sed -n 's/^shlibs:Depends=//p' <<<"$shlibs")
[[ -n $depends ]] || die "dpkg-shlibdeps found no dependencies: $shlibs"
# EAL's and the mempool library's packages must be there, whatever the
# handler links: they provide the plugin directory and the ops table.
libdir=$(pkg-config --variable=libdir libdpdk)
for l in librte_eal.so.$abi librte_mempool.so.$abi; do
    owner=$(dpkg -S "$libdir/$l" 2>/dev/null | head -n1 | cut -d: -f1 || true)
    [[ -n $owner ]] || die "no package owns $libdir/$l"
    if ! grep -Eq "(^|, )$owner( |,|$)" <<<"$depends"; then
        v=$(dpkg-query -W -f='${Version}' "$owner")
        depends="$depends, $owner (>= ${v%%-*})"
    fi
done

maintainer=${PTR_RING_DEB_MAINTAINER:-$(id -un) <$(id -un)@$(uname -n)>}
size=$(du -sk --apparent-size "$stage" | cut -f1)
mkdir -m 755 "$stage/DEBIAN"
cat >"$stage/DEBIAN/control" <<EOF
Package: $pkg
Version: $debversion
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: $depends
Section: libs
Priority: optional
Description: ptr_ring mempool handler for DPDK $dpdk_version (ABI $abi)
 A DPDK mempool handler named ptr_ring, laid out like DPDK's own drivers:
 $NAME.so.$abi in EAL's plugin directory
 $plugindir,
 with its header $HEADER and its pkg-config file
 $PC_NAME.pc.
 An application selects it for its mbuf pools with the EAL option
 --mbuf-pool-ops-name ptr_ring (any other pool with
 rte_mempool_set_ops_byname(mp, "ptr_ring", NULL)).
 .
 Warning: once this package is installed, every DPDK application on this
 host loads the handler from EAL's plugin directory, without -d, and it
 takes one of the 16 mempool ops slots in each of them.
EOF
chmod 644 "$stage/DEBIAN/control"

mkdir -p "$out"
deb=$out/${pkg}_${debversion}_$arch.deb
dpkg-deb --build --root-owner-group "$stage" "$deb" >"$tmp/dpkg-deb.log" 2>&1 ||
    { cat "$tmp/dpkg-deb.log" >&2; die "dpkg-deb --build failed"; }
echo "deb: $pkg $debversion for DPDK $dpdk_version (Depends: $depends)"
echo "$deb"
