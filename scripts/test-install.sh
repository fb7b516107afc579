#!/usr/bin/env bash
# Checks `make install` / `make uninstall` (scripts/install.sh):
#   1. install into a DESTDIR under build/: file list, soname, stripped with a
#      debug link, symlinks, the .pc file parses; the staged plugin directory,
#      loaded with -d <dir> (as EAL loads its plugin directory), serves
#      testpmd's mb_pool_0, proven by its ops name read through telemetry
#      (scripts/pool-ops.sh); then uninstall leaves nothing.
#   2. only with TEST_INSTALL_REAL=1, as root: a real install (PREFIX /usr),
#      testpmd WITHOUT -d on ptr_ring, a run with the installed plugin and a
#      -d copy (one registration, the other copy logs that it stays unused),
#      uninstall, plugin directory as before. Not run by default: while
#      installed, every DPDK application on the host loads the handler.
# Ends with "install: N passed, M failed"; exits non-zero on a failure.
set -uo pipefail
# shellcheck source=scripts/help.sh
source "$(dirname "${BASH_SOURCE[0]}")/help.sh"
help_if_asked "$@"

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
# shellcheck source=scripts/eal-args.sh
source "$repo/scripts/eal-args.sh" || exit 1
# shellcheck source=scripts/pool-ops.sh
source "$repo/scripts/pool-ops.sh"

NAME=librte_mempool_ptr_ring
LIB=$repo/target/release/$NAME.so
logs=$repo/build/test-install
dest=$repo/build/test-install/dest
passed=0 failed=0
pass() { echo "PASS $1${2:+: $2}"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

[[ -f $LIB ]] || { echo "test-install: $LIB missing: run 'make build'" >&2; exit 1; }
rm -rf "$logs"
mkdir -p "$logs"

# shellcheck source=scripts/dpdk-layout.sh
source "$repo/scripts/dpdk-layout.sh"
# The installed names are $NAME.so.<ABI>.<minor> ($real), soname $NAME.so.<ABI>.
dpdk_layout "$NAME" || exit 1
# (A library built for another ABI makes destdir_install fail: install.sh
# refuses it, naming both ABIs.)

# ------------------------------------------------------------ 1. DESTDIR
rm -rf "$dest"
if ! PREFIX=/usr DESTDIR=$dest bash scripts/install.sh install >"$logs/install.log" 2>&1; then
    fail destdir_install "$(tail -n 1 "$logs/install.log")"
else
    pd=$dest$plugindir
    want=$(printf '%s\n' \
        "$plugindir/$NAME.so" "$plugindir/$NAME.so.$abi" "$plugindir/$real" \
        "/usr/lib/debug$plugindir/$real.debug" "$incdir/rte_mempool_ptr_ring.h" \
        "$pcdir/libdpdk-mempool-ptr-ring.pc" "/usr/share/$NAME/install-manifest" | sort)
    got=$(cd "$dest" && find . ! -type d | sed 's/^\.//' | sort)
    [[ $got == "$want" ]] && pass destdir_files || fail destdir_files "got: $(echo $got)"
    son=$(readelf -d "$pd/$real" | sed -n 's/.*soname: \[\(.*\)\]/\1/p')
    [[ $son == "$NAME.so.$abi" ]] && pass destdir_soname "$son" || fail destdir_soname "'$son'"
    if file -L "$pd/$real" | grep -q ', stripped' &&
        readelf -S "$pd/$real" | grep -q gnu_debuglink &&
        ! readelf -S "$pd/$real" | grep -q '\.debug_info' &&
        readelf -S "$dest/usr/lib/debug$plugindir/$real.debug" | grep -q '\.debug_info'; then
        pass destdir_stripped "debug info in /usr/lib/debug, .gnu_debuglink set"
    else
        fail destdir_stripped "$(file -L "$pd/$real")"
    fi
    [[ $(readlink "$pd/$NAME.so") == "$NAME.so.$abi" && $(readlink "$pd/$NAME.so.$abi") == "$real" ]] &&
        pass destdir_symlinks || fail destdir_symlinks "$(ls -l "$pd")"
    cf=$(PKG_CONFIG_PATH=$dest$pcdir PKG_CONFIG_SYSROOT_DIR=$dest pkg-config --cflags libdpdk-mempool-ptr-ring 2>&1) &&
        [[ $cf == *"-I$dest$incdir"* ]] && pass destdir_pkgconfig "$cf" || fail destdir_pkgconfig "$cf"
    ops=$(testpmd_pool_ops "$logs" destdir -d "$pd")
    [[ $ops == ptr_ring ]] && pass destdir_plugin_dir "mb_pool_0 ops_name $ops (telemetry)" ||
        fail destdir_plugin_dir "mb_pool_0 ops_name '$ops' (see $logs/destdir.log)"
    # The staged plugin directory and a -d copy in one process: one
    # registration; the copy loaded second logs (at NOTICE) that it stays unused.
    ops=$(testpmd_pool_ops "$logs" destdir_two -d "$pd" -d "$LIB")
    n=$(grep -c 'by another copy of the handler' "$logs/destdir_two.log")
    [[ $ops == ptr_ring && $n == 1 ]] && pass destdir_two_copies "one registration; the other copy idle" ||
        fail destdir_two_copies "ops_name '$ops', $n 'another copy' lines (see $logs/destdir_two.log)"
    if PREFIX=/usr DESTDIR=$dest bash scripts/install.sh uninstall >>"$logs/install.log" 2>&1 &&
        [[ -z $(find "$dest" -mindepth 1) ]]; then
        pass destdir_uninstall "nothing left"
    else
        fail destdir_uninstall "left: $(cd "$dest" && find . -mindepth 1 | head)"
    fi
fi

# ------------------------------------------------------------ 2. real install
if [[ ${TEST_INSTALL_REAL:-0} == 1 ]]; then
    if [[ $(id -u) != 0 ]]; then
        fail real_install "TEST_INSTALL_REAL=1 needs root"
    elif [[ -e $plugindir/$NAME.so ]]; then
        fail real_install "$plugindir/$NAME.so exists already: 'make uninstall' first"
    else
        before=$(ls -l "$plugindir")
        if bash scripts/install.sh install >>"$logs/install.log" 2>&1; then
            ops=$(testpmd_pool_ops "$logs" real)
            [[ $ops == ptr_ring ]] && pass real_no_d "mb_pool_0 ops_name $ops without -d" ||
                fail real_no_d "mb_pool_0 ops_name '$ops' (see $logs/real.log)"
            ops=$(testpmd_pool_ops "$logs" twocopies -d "$LIB")
            n=$(grep -c 'by another copy of the handler' "$logs/twocopies.log")
            [[ $ops == ptr_ring && $n == 1 ]] && pass real_two_copies "one registration; other copy idle" ||
                fail real_two_copies "ops_name '$ops', $n 'another copy' lines (see $logs/twocopies.log)"
            bash scripts/install.sh uninstall >>"$logs/install.log" 2>&1
        else
            fail real_install "$(tail -n 1 "$logs/install.log")"
        fi
        [[ $(ls -l "$plugindir") == "$before" ]] && pass real_uninstall "plugin directory as before" ||
            fail real_uninstall "plugin directory differs after uninstall"
    fi
fi

echo "install: $passed passed, $failed failed"
((failed == 0))
