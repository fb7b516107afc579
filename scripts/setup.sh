#!/usr/bin/env bash
# Prepares this machine for building and running the ptr_ring mempool handler:
#   1. Debian packages: the release's DPDK (runtime, headers, dpdk-testpmd/dpdk-test,
#      docs), libclang for bindgen, pkg-config, a C compiler, binutils, file and
#      dpkg-dev (the install and package scripts);
#   2. checks that cargo is there;
#   3. 2 MB hugepages (reserved and hugetlbfs mounted) when the machine allows,
#      else EAL's --no-huge fallback;
#   4. writes the EAL memory arguments to build/eal-mem.env for the other scripts.
# Idempotent and quiet when everything is already in place. Run as root, or as
# a user with sudo.
#
# Environment:
#   PTR_RING_NO_HUGE=1     use --no-huge even when hugepages are available
#   PTR_RING_HUGEPAGES=N   number of 2 MB hugepages to reserve (default 512)
set -euo pipefail
# shellcheck source=scripts/help.sh
source "$(dirname "${BASH_SOURCE[0]}")/help.sh"
help_if_asked "$@"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
packages=(dpdk dpdk-dev libdpdk-dev dpdk-doc libclang-dev pkg-config gcc libc6-dev binutils file dpkg-dev
    valgrind)
want_pages=${PTR_RING_HUGEPAGES:-512}
hp_dir=/sys/kernel/mm/hugepages/hugepages-2048kB
hp_mount=/dev/hugepages
nohuge_mem="--no-huge -m 1024 --no-shconf"
huge_mem="--in-memory"

say() { echo "setup: $*"; }
die() { echo "setup: error: $*" >&2; exit 1; }

# Root commands go through sudo when we are not root and sudo exists.
if [[ $(id -u) -eq 0 ]]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
else
    as_root=(none)
fi
can_root() { [[ ${as_root[*]-} != none ]]; }
root() { "${as_root[@]}" "$@"; }

install_packages() {
    local missing=() pkg
    for pkg in "${packages[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$pkg")
        fi
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    command -v apt-get >/dev/null 2>&1 || die "missing packages ${missing[*]} and no apt-get (a Debian bookworm machine is expected)"
    can_root || die "missing packages ${missing[*]}; run this script as root or install sudo"
    say "installing ${missing[*]}"
    local log
    log=$(mktemp)
    if ! { root env DEBIAN_FRONTEND=noninteractive apt-get update &&
        root env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"; } >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        rm -f "$log"
        die "apt-get could not install ${missing[*]}"
    fi
    rm -f "$log"
}

check_cargo() {
    command -v cargo >/dev/null 2>&1 ||
        die "cargo not found: install a Rust toolchain (rustup, or Debian's cargo package) and put cargo on PATH"
}

hugepages_mounted() { awk '$3 == "hugetlbfs" { found = 1 } END { exit !found }' /proc/mounts; }

# Reserves and mounts hugepages; prints the number of reserved 2 MB pages (0
# when hugepages cannot be used here: nothing reserved, none free, or no mount).
try_hugepages() {
    [[ -d $hp_dir ]] || { echo 0; return; }
    local have
    have=$(cat "$hp_dir/nr_hugepages")
    if (( have < want_pages )) && can_root; then
        echo "$want_pages" | root tee "$hp_dir/nr_hugepages" >/dev/null 2>&1 || true
    fi
    if ! hugepages_mounted && can_root; then
        root mkdir -p "$hp_mount" 2>/dev/null || true
        root mount -t hugetlbfs nodev "$hp_mount" 2>/dev/null || true
    fi
    # Pages held by a DPDK process running right now are not free, but are
    # reserved for us all the same; at least one must be free.
    if hugepages_mounted && (($(cat "$hp_dir/free_hugepages") > 0)); then
        cat "$hp_dir/nr_hugepages"
    else
        echo 0
    fi
}

choose_memory() {
    local pages=0 mode mem
    if [[ ${PTR_RING_NO_HUGE:-0} != 1 ]]; then
        pages=$(try_hugepages)
    fi
    # 128 pages (256 MB) are enough for testpmd on two null ports.
    if ((pages >= 128)); then
        mode=hugepages
        mem=$huge_mem
    else
        mode=nohuge
        mem=$nohuge_mem
    fi

    mkdir -p "$repo/build"
    local env_file=$repo/build/eal-mem.env
    local new
    new=$(printf '# Written by scripts/setup.sh; sourced by scripts/*.sh.\nEAL_MODE=%s\nEAL_MEM="%s"\n' "$mode" "$mem")
    if [[ ! -f $env_file ]] || [[ $(cat "$env_file") != "$new" ]]; then
        printf '%s\n' "$new" >"$env_file"
        if [[ $mode == hugepages ]]; then
            say "hugepages mode ($pages x 2MB)"
        elif [[ ${PTR_RING_NO_HUGE:-0} == 1 ]]; then
            say "PTR_RING_NO_HUGE=1, using --no-huge -m 1024"
        else
            say "no hugepages available, falling back to --no-huge -m 1024"
        fi
    fi
}

install_packages
check_cargo
choose_memory
