#!/usr/bin/env bash
# Checks the Debian package made by scripts/deb.sh, for the DPDK installed
# here (run it in a root of another release with scripts/dpdk-root.sh):
#   1. the package builds; dpkg-deb -I / -c: its name (librte-mempool-ptr-ring<ABI>),
#      version, architecture and section; exactly the plugin in this DPDK's
#      plugin directory (pmds-<ABI>.<minor>) as .so.<ABI>.<minor> with the
#      .so.<ABI> and .so symlinks, the header and the .pc file (no manifest,
#      no debug file); the plugin's soname .so.<ABI>; the .pc parses; the
#      Description names --mbuf-pool-ops-name ptr_ring; Depends names the
#      package of every DT_NEEDED library (librte-eal<ABI>, librte-mempool<ABI>, ...).
#   2. inside a root of scripts/dpdk-root.sh (DPDK_ROOT_SUITE set), or with
#      TEST_DEB_REAL=1 as root: dpkg -i, testpmd WITHOUT -d on ptr_ring
#      (mb_pool_0's ops name read through telemetry, scripts/pool-ops.sh),
#      dpkg --purge, then the plugin directory is as before, no file of the
#      package is left and dpkg no longer knows it. Elsewhere reported as
#      skipped (not counted): while installed, every DPDK application on the
#      host loads the handler.
# Logs in build/test-deb/. Ends with "deb: N passed, M failed"; exits
# non-zero on a failure.
set -uo pipefail
# shellcheck source=scripts/help.sh
source "$(dirname "${BASH_SOURCE[0]}")/help.sh"
help_if_asked "$@"

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
# shellcheck source=scripts/pool-ops.sh
source "$repo/scripts/pool-ops.sh"

NAME=librte_mempool_ptr_ring
LIB=$repo/target/release/$NAME.so
logs=$repo/build/test-deb
passed=0 failed=0
pass() { echo "PASS $1${2:+: $2}"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
finish() {
    echo "deb: $passed passed, $failed failed"
    ((failed == 0))
    exit
}

[[ -f $LIB ]] || { echo "test-deb: $LIB missing: run 'make build'" >&2; exit 1; }
rm -rf "$logs"
mkdir -p "$logs"

# shellcheck source=scripts/dpdk-layout.sh
source "$repo/scripts/dpdk-layout.sh"
dpdk_layout "$NAME" || exit 1
pkg=librte-mempool-ptr-ring$abi
echo "test-deb: DPDK $(pkg-config --modversion libdpdk) (ABI $abi, ${DPDK_ROOT_SUITE:-this machine}), package $pkg"

# The package owning a shared library the dynamic linker finds by NAME
# (ldconfig's path, its real path, with and without the /usr of a merged /usr).
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
lib_package() {
    local p c out
    p=$("$ldconfig" -p | awk -v n="$1" '$1 == n { print $NF; exit }')
    [[ -n $p ]] || return 1
    for c in "$p" "$(readlink -f "$p")" "/usr${p#/usr}" "${p#/usr}"; do
        out=$(dpkg -S "$c" 2>/dev/null | grep -v '^diversion' | head -n1) || continue
        [[ -n $out ]] && { echo "${out%%:*}"; return 0; }
    done
    return 1
}

# Whether dpkg has the package in its database in any state but
# unknown/not-installed (what a purge leaves).
dpkg_knows() {
    local st
    st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null | tr -d ' ')
    [[ -n $st && $st != un ]]
}

# ------------------------------------------------------------ 1. the package
if ! bash scripts/deb.sh >"$logs/deb.log" 2>&1; then
    fail deb_build "$(tail -n 1 "$logs/deb.log") (see $logs/deb.log)"
    finish
fi
deb=$(tail -n 1 "$logs/deb.log")
if [[ -f $deb && $(basename "$deb") == "${pkg}_"*"+dpdk${abi}_$(dpkg --print-architecture).deb" ]]; then
    pass deb_build "${deb#"$repo"/}"
else
    fail deb_build "no ${pkg}_*+dpdk${abi}_*.deb: '$deb'"
    finish
fi

dpkg-deb -I "$deb" >"$logs/info.txt" 2>&1
dpkg-deb -c "$deb" >"$logs/contents.txt" 2>&1
field() { dpkg-deb -f "$deb" "$1"; }
f_pkg=$(field Package) f_ver=$(field Version) f_arch=$(field Architecture) f_sec=$(field Section)
[[ $f_pkg == "$pkg" && $f_ver == *+dpdk$abi && $f_arch == "$(dpkg --print-architecture)" && $f_sec == libs ]] &&
    pass deb_fields "$f_pkg $f_ver $f_arch, section $f_sec" ||
    fail deb_fields "Package '$f_pkg' Version '$f_ver' Architecture '$f_arch' Section '$f_sec' (see $logs/info.txt)"
grep -q -- '--mbuf-pool-ops-name ptr_ring' "$logs/info.txt" && grep -qi 'every DPDK application' "$logs/info.txt" &&
    pass deb_description "names --mbuf-pool-ops-name ptr_ring and warns of every application loading it" ||
    fail deb_description "see $logs/info.txt"

# Files and links (not directories): "path" or "path -> target".
entries=$(grep -v '^d' "$logs/contents.txt" | sed -E 's/^([^ ]+ +){5}\.//' | sort)
paths=$(sed 's/ -> .*//' <<<"$entries")
want=$(printf '%s\n' "$plugindir/$NAME.so" "$plugindir/$NAME.so.$abi" "$plugindir/$real" \
    "$incdir/rte_mempool_ptr_ring.h" "$pcdir/libdpdk-mempool-ptr-ring.pc" | sort)
[[ $paths == "$want" ]] && pass deb_files "plugin in $plugindir, header, .pc; no manifest, no debug file" ||
    fail deb_files "got: $(echo $paths)"
grep -qxF "$plugindir/$NAME.so -> $NAME.so.$abi" <<<"$entries" &&
    grep -qxF "$plugindir/$NAME.so.$abi -> $real" <<<"$entries" &&
    grep -q "^-" <(grep -F "./${plugindir#/}/$real" "$logs/contents.txt") &&
    pass deb_symlinks "$NAME.so -> $NAME.so.$abi -> $real" ||
    fail deb_symlinks "$(grep -F "$NAME.so" <<<"$entries" | tr '\n' ';')"

x=$logs/extract
dpkg-deb -x "$deb" "$x"
son=$(readelf -d "$x$plugindir/$real" 2>/dev/null | sed -n 's/.*soname: \[\(.*\)\]/\1/p')
[[ $son == "$NAME.so.$abi" ]] && pass deb_soname "$son" || fail deb_soname "'$son'"
cf=$(PKG_CONFIG_PATH=$x$pcdir PKG_CONFIG_SYSROOT_DIR=$x pkg-config --cflags libdpdk-mempool-ptr-ring 2>&1) &&
    pd=$(PKG_CONFIG_PATH=$x$pcdir pkg-config --variable=plugindir libdpdk-mempool-ptr-ring 2>&1) &&
    [[ $cf == *"-I$x$incdir"* && $pd == "$plugindir" ]] && pass deb_pkgconfig "-I$incdir, plugindir $pd" ||
    fail deb_pkgconfig "cflags '$cf', plugindir '${pd:-}'"

# Depends: the package of every DT_NEEDED library (found here independently
# of dpkg-shlibdeps), EAL's and the mempool library's included.
depends=$(field Depends)
needed=$(readelf -d "$x$plugindir/$real" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
missing=() named=()
for n in $needed; do
    p=$(lib_package "$n") || { missing+=("$n:(no package)"); continue; }
    if grep -Eq "(^|, )$p( |,|$)" <<<"$depends"; then named+=("$p"); else missing+=("$n:$p"); fi
done
for core in librte_eal.so.$abi librte_mempool.so.$abi; do
    grep -qxF "$core" <<<"$needed" || missing+=("$core:(not NEEDED)")
done
((${#missing[@]} == 0)) && [[ -n $needed ]] &&
    pass deb_depends "$(printf '%s\n' "${named[@]}" | sort -u | paste -sd ' ')" ||
    fail deb_depends "not in Depends: ${missing[*]} (Depends: $depends)"

# ------------------------------------------------------------ 2. dpkg -i
if [[ -z ${DPDK_ROOT_SUITE:-} && ${TEST_DEB_REAL:-0} != 1 ]]; then
    echo "SKIP real_install real_no_d real_purge real_files_gone real_plugindir: dpkg -i only inside a root" \
        "(scripts/dpdk-root.sh SUITE bash scripts/test-deb.sh) or with TEST_DEB_REAL=1 as root"
    finish
fi
if [[ $(id -u) != 0 ]]; then
    fail real_install "dpkg -i needs root"
    finish
fi
if dpkg_knows; then
    fail real_install "$pkg is already known to dpkg: 'dpkg --purge $pkg' first"
    finish
fi
if compgen -G "$plugindir/$NAME.so*" >/dev/null; then
    fail real_install "$plugindir/$NAME.so* exists already (make install?): 'make uninstall' first"
    finish
fi
# shellcheck source=scripts/eal-args.sh
source "$repo/scripts/eal-args.sh" || { fail real_install "no EAL memory arguments: run scripts/setup.sh"; finish; }

before=$(ls -l "$plugindir")
# Purged also when interrupted.
trap 'dpkg --purge "$pkg" >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM
if dpkg -i "$deb" >"$logs/dpkg.log" 2>&1 &&
    [[ $(dpkg-query -W -f='${Status} ${Version}' "$pkg" 2>&1) == "install ok installed $f_ver" ]]; then
    pass real_install "dpkg -i: $pkg $f_ver installed"
    ops=$(testpmd_pool_ops "$logs" real)
    [[ $ops == ptr_ring ]] && pass real_no_d "mb_pool_0 ops_name $ops without -d (telemetry)" ||
        fail real_no_d "mb_pool_0 ops_name '$ops' (see $logs/real.log)"
else
    fail real_install "$(tail -n 1 "$logs/dpkg.log") (see $logs/dpkg.log)"
fi
dpkg --purge "$pkg" >>"$logs/dpkg.log" 2>&1
trap - EXIT INT TERM
! dpkg_knows && pass real_purge "dpkg no longer knows $pkg" ||
    fail real_purge "dpkg-query: $(dpkg-query -W -f='${db:Status-Abbrev} ${Version}' "$pkg" 2>&1) (see $logs/dpkg.log)"
left=()
for p in $paths; do [[ -e $p || -L $p ]] && left+=("$p"); done
((${#left[@]} == 0)) && pass real_files_gone "none of the package's $(wc -w <<<"$paths") files is left" ||
    fail real_files_gone "left: ${left[*]}"
[[ $(ls -l "$plugindir") == "$before" ]] && pass real_plugindir "plugin directory as before" ||
    fail real_plugindir "plugin directory differs after purge"

finish
