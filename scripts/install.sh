#!/usr/bin/env bash
# Installs (or uninstalls) the ptr_ring mempool handler next to the system
# DPDK, laid out like DPDK's own drivers. See --help.
set -euo pipefail

NAME=librte_mempool_ptr_ring
PC_NAME=libdpdk-mempool-ptr-ring
HEADER=rte_mempool_ptr_ring.h

usage() {
    cat <<EOF
usage: scripts/install.sh [install|uninstall] [--help]

install (default): copies target/release/$NAME.so (build it first
  with 'make build') into EAL's plugin directory, so that every DPDK
  application on the host loads it without -d:
    <plugindir>/$NAME.so.<ABI>.<minor>
        stripped, with a .gnu_debuglink
    <plugindir>/$NAME.so.<ABI>, <plugindir>/$NAME.so
        symlinks
    <PREFIX>/lib/debug<plugindir>/$NAME.so.<ABI>.<minor>.debug
    <includedir>/$HEADER
        next to rte_mempool.h
    <pcdir>/$PC_NAME.pc
        next to libdpdk.pc (Requires: libdpdk)
    <PREFIX>/share/$NAME/install-manifest
        what was written, for uninstall
  <plugindir> is read from the DPDK_PLUGIN_PATH string in librte_eal.so
  (where EAL itself looks); <includedir>/<pcdir> from pkg-config libdpdk.
  Paths under DPDK's prefix are moved under PREFIX.
  <ABI> is the library's own, from its soname $NAME.so.<ABI>
  (set by the build from the DPDK it was built against: 23 for 22.11, 25 for
  24.11, 26 for 25.11). The installed DPDK's plugin directory is named
  pmds-<ABI>.<minor>; a library built for another ABI is refused.
uninstall: removes exactly the files (and the directories it created) listed
  in the manifest.

environment:
  PREFIX   install prefix (default /usr, DPDK's prefix on Debian)
  DESTDIR  staging root prepended to every path (default empty)
  LIB      library to install (default target/release/$NAME.so)

WARNING: an installed plugin is loaded by every DPDK application on the host
and takes one of the 16 mempool ops slots (Debian's drivers already use 14 in
DPDK 22.11, 15 in 24.11 and 25.11).
EOF
}

action=install
for a in "$@"; do
    case "$a" in
        -h|--help) usage; exit 0 ;;
        install|uninstall) action=$a ;;
        *) echo "install.sh: unknown argument '$a' (see --help)" >&2; exit 2 ;;
    esac
done

PREFIX=${PREFIX:-/usr}
PREFIX=${PREFIX%/}
DESTDIR=${DESTDIR:-}
DESTDIR=${DESTDIR%/}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "install.sh: $*" >&2; exit 1; }

command -v pkg-config >/dev/null || die "pkg-config not found: run 'make setup'"
pkg-config --exists libdpdk || die "libdpdk not found by pkg-config: run 'make setup' (Debian: libdpdk-dev)"

dpdk_prefix=$(pkg-config --variable=prefix libdpdk)
dpdk_prefix=${dpdk_prefix%/}
eal="$(pkg-config --variable=libdir libdpdk)/librte_eal.so"
[ -e "$eal" ] || die "$eal not found (Debian: libdpdk-dev)"
# Where EAL loads plugins from: the string EAL itself reads (first entry).
plugindir=$(strings -a "$eal" | sed -n 's/^DPDK_PLUGIN_PATH=//p' | head -n1)
plugindir=${plugindir%%:*}
[ -n "$plugindir" ] || die "no DPDK_PLUGIN_PATH in $eal: this DPDK was built without a plugin directory"
includedir=$(dirname "$(find "$(pkg-config --variable=includedir libdpdk)" -name rte_mempool.h -print -quit 2>/dev/null)")
[ -n "$includedir" ] && [ "$includedir" != . ] || die "rte_mempool.h not found under $(pkg-config --variable=includedir libdpdk)"
pcdir=$(pkg-config --variable=pcfiledir libdpdk)

# A path under DPDK's prefix, moved under PREFIX.
reprefix() {
    case "$1" in
        "$dpdk_prefix"/*) echo "$PREFIX${1#"$dpdk_prefix"}" ;;
        *) echo "$1" ;;
    esac
}
plugindir=$(reprefix "$plugindir")
includedir=$(reprefix "$includedir")
pcdir=$(reprefix "$pcdir")
debugdir="$PREFIX/lib/debug$plugindir"
sharedir="$PREFIX/share/$NAME"
manifest="$sharedir/install-manifest"

do_uninstall() {
    local m="$DESTDIR$manifest"
    [ -f "$m" ] || die "nothing to uninstall: no manifest at $m"
    # Files and links first, then directories deepest first (only if empty).
    local kind path
    while read -r kind path; do
        [ "$kind" = f ] || [ "$kind" = l ] || continue
        rm -f "$DESTDIR$path"
    done <"$m"
    local dirs
    dirs=$(grep '^d ' "$m" | cut -d' ' -f2- | sort -r)
    rm -f "$m"
    rmdir "$DESTDIR$sharedir" 2>/dev/null || true
    while read -r path; do
        [ -z "$path" ] || rmdir "$DESTDIR$path" 2>/dev/null || true
    done <<<"$dirs"
    echo "uninstalled $NAME from ${DESTDIR:-/} (plugin directory $plugindir)"
}

do_install() {
    local lib=${LIB:-$ROOT/target/release/$NAME.so}
    [ -f "$lib" ] || die "$lib not found: run 'make build' first"
    # The ABI the library was built for (its soname) and the one of the
    # installed DPDK (the name of its plugin directory) must agree.
    local soname abi dpdk_abi abi_minor
    soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
    abi=$(printf '%s\n' "$soname" | sed -n "s/^$NAME\\.so\\.\\([0-9][0-9]*\\)\$/\\1/p")
    [ -n "$abi" ] || die "$lib has soname '$soname', expected $NAME.so.<ABI>: rebuild it ('make build')"
    dpdk_abi=$(basename "$plugindir" | sed -n 's/^pmds-\([0-9][0-9]*\)\.[0-9][0-9]*$/\1/p')
    abi_minor=$(basename "$plugindir" | sed -n 's/^pmds-[0-9][0-9]*\.\([0-9][0-9]*\)$/\1/p')
    [ -n "$dpdk_abi" ] && [ -n "$abi_minor" ] ||
        die "plugin directory $plugindir is not named pmds-<ABI>.<minor>: cannot tell this DPDK's ABI"
    [ "$abi" = "$dpdk_abi" ] ||
        die "$lib was built for ABI $abi, this DPDK's plugin directory is for ABI $dpdk_abi ($plugindir): rebuild with make build"
    [ -f "$DESTDIR$manifest" ] && die "already installed (manifest $DESTDIR$manifest): run 'make uninstall' first"

    [ -z "$DESTDIR" ] || mkdir -p "$DESTDIR"
    local entries=()
    mkdirs() { # records directories that did not exist
        local d=$1 missing=()
        while [ "$d" != / ] && [ ! -d "$DESTDIR$d" ]; do missing+=("$d"); d=$(dirname "$d"); done
        local i
        for ((i = ${#missing[@]} - 1; i >= 0; i--)); do
            mkdir -m 755 "$DESTDIR${missing[$i]}"
            entries+=("d ${missing[$i]}")
        done
    }
    for d in "$plugindir" "$debugdir" "$includedir" "$pcdir" "$sharedir"; do mkdirs "$d"; done

    local real="$NAME.so.$abi.$abi_minor"
    local dbg="$debugdir/$real.debug"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    objcopy --only-keep-debug "$lib" "$tmp/$real.debug"
    cp "$lib" "$tmp/$real"
    strip --strip-debug --strip-unneeded "$tmp/$real"
    (cd "$tmp" && objcopy --add-gnu-debuglink="$real.debug" "$real")
    install -m 644 "$tmp/$real" "$DESTDIR$plugindir/$real"
    entries+=("f $plugindir/$real")
    install -m 644 "$tmp/$real.debug" "$DESTDIR$dbg"
    entries+=("f $dbg")
    ln -sfn "$real" "$DESTDIR$plugindir/$NAME.so.$abi"
    entries+=("l $plugindir/$NAME.so.$abi")
    ln -sfn "$NAME.so.$abi" "$DESTDIR$plugindir/$NAME.so"
    entries+=("l $plugindir/$NAME.so")
    install -m 644 "$ROOT/pmd-glue/include/$HEADER" "$DESTDIR$includedir/$HEADER"
    entries+=("f $includedir/$HEADER")

    # pmd-glue's version: its own, or the workspace's (version.workspace = true).
    local version dpdk_version
    version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$ROOT/pmd-glue/Cargo.toml" | head -n1)
    [ -n "$version" ] || version=$(awk '/^\[/ { ws = ($0 == "[workspace.package]") }
        ws && /^version *=/ { sub(/^version *= *"/, ""); sub(/".*/, ""); print; exit }' "$ROOT/Cargo.toml")
    dpdk_version=$(pkg-config --modversion libdpdk)
    cat >"$tmp/$PC_NAME.pc" <<EOF
prefix=$PREFIX
includedir=$includedir
plugindir=$plugindir

Name: DPDK mempool handler ptr_ring
Description: ptr_ring mempool ops for DPDK $dpdk_version (loaded by EAL from its plugin directory; header $HEADER)
Version: ${version:-0.1.0}
Requires: libdpdk
Cflags: -I\${includedir}
EOF
    install -m 644 "$tmp/$PC_NAME.pc" "$DESTDIR$pcdir/$PC_NAME.pc"
    entries+=("f $pcdir/$PC_NAME.pc")

    printf '%s\n' "${entries[@]}" >"$tmp/manifest"
    install -m 644 "$tmp/manifest" "$DESTDIR$manifest"
    echo "installed $NAME into ${DESTDIR:-/} (plugin directory $plugindir; manifest $manifest)"
    echo "note: every DPDK application on this host now loads it; select it with --mbuf-pool-ops-name ptr_ring"
}

"do_$action"
