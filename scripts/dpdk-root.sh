#!/usr/bin/env bash
# Runs a command in this checkout inside a Debian root of another DPDK LTS
# release, made on first use with mmdebstrap and kept for the next run:
#   trixie   Debian 13: DPDK 24.11 (ABI 25)
#   forky    Debian 14: DPDK 25.11 (ABI 26)
# (bookworm, DPDK 22.11, is the machine itself: run the command directly.)
#
#   scripts/dpdk-root.sh SUITE [COMMAND ...]    (default COMMAND: an interactive bash)
#   scripts/dpdk-root.sh SUITE --create         (make or update the root, run nothing)
#
# Inside, the checkout sits at the same path; target/ and build/ are the
# root's own (target/dpdk-roots/SUITE/{target,build} seen from outside), so
# that builds against each release never mix. The toolchain (rustup, cargo
# and its registry) is bind-mounted from this machine, with /dev (hugepages
# included), /proc and /sys. Everything is mounted in a private mount
# namespace, gone when the command ends. Run as root.
#
# Environment:
#   PTR_RING_ROOTS=DIR     where the roots live (default /var/cache/ptr-ring/roots)
#   PTR_RING_MIRROR=URL    Debian mirror (default: the first in this machine's apt sources)
# Passed into the root: CI, and every PTR_RING_*, TEST_*, BENCH_*, SOAK_*,
# AUTOTEST_*, TESTPMD_*, L2FWD_*, LOOM_* and CARGO_* variable.
set -euo pipefail
# shellcheck source=scripts/help.sh
source "$(dirname "${BASH_SOURCE[0]}")/help.sh"
help_if_asked "$@"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { echo "dpdk-root: $*" >&2; }
die() { echo "dpdk-root: error: $*" >&2; exit 1; }

suite=${1:-}
case $suite in
trixie | forky) ;;
"") die "usage: scripts/dpdk-root.sh trixie|forky [COMMAND ...] (--help)" ;;
*) die "unknown suite '$suite': trixie (DPDK 24.11) or forky (DPDK 25.11)" ;;
esac
shift
[[ $(id -u) -eq 0 ]] || die "needs root (mmdebstrap, chroot, mounts)"

roots=${PTR_RING_ROOTS:-/var/cache/ptr-ring/roots}
root=$roots/$suite
stamp=$root/.ptr-ring-packages
# What the DPDK-facing suite, the demo, the bench and the packaging use.
packages=(dpdk dpdk-dev libdpdk-dev dpdk-doc libclang-dev pkg-config gcc libc6-dev make
    python3 procps iproute2 binutils file ca-certificates coreutils gawk dpkg-dev git linux-perf
    valgrind)

mirror() {
    if [[ -n ${PTR_RING_MIRROR:-} ]]; then
        echo "$PTR_RING_MIRROR"
        return
    fi
    local url
    url=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
        awk '/^URIs:/ && $2 ~ /\/debian\/?$/ { print $2; exit }')
    [[ -n $url ]] || url=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
    echo "${url:-http://deb.debian.org/debian}"
}

# The apt mirror here may be a snapshot whose Release files have expired;
# mmdebstrap writes the option into the root's apt configuration too.
apt_opt='Acquire::Check-Valid-Until "false"'

create_root() {
    if ! command -v mmdebstrap >/dev/null; then
        say "installing mmdebstrap"
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y mmdebstrap; } >/dev/null ||
            die "cannot install mmdebstrap (apt-get install mmdebstrap)"
    fi
    local url tmp log
    url=$(mirror)
    tmp=$root.new
    log=$roots/$suite.mmdebstrap.log
    mkdir -p "$roots"
    rm -rf "$tmp"
    say "making the $suite root in $root from $url (about two minutes; log $log)"
    local list
    list=$(IFS=,; echo "${packages[*]}")
    if ! mmdebstrap --variant=apt --aptopt="$apt_opt" --include="$list" \
        "$suite" "$tmp" "deb $url $suite main" >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        rm -rf "$tmp"
        die "mmdebstrap $suite failed (log $log)"
    fi
    rm -rf "$root"
    mv "$tmp" "$root"
    printf '%s\n' "${packages[@]}" >"$stamp"
}

# A root made for a shorter package list gets what is missing.
update_root() {
    [[ $(cat "$stamp" 2>/dev/null) == "$(printf '%s\n' "${packages[@]}")" ]] && return 0
    say "installing the $suite root's missing packages"
    cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
    chroot "$root" env DEBIAN_FRONTEND=noninteractive sh -c \
        "apt-get update && apt-get install -y ${packages[*]}" >"$roots/$suite.apt.log" 2>&1 ||
        { tail -n 20 "$roots/$suite.apt.log" >&2; die "apt-get in the $suite root failed"; }
    printf '%s\n' "${packages[@]}" >"$stamp"
}

[[ -f $stamp ]] || create_root
update_root
if [[ ${1:-} == --create ]]; then
    chroot "$root" dpkg-query -W -f='${Package} ${Version}\n' libdpdk-dev >&2
    exit 0
fi

# The toolchain as this machine has it.
cargo_bin=$(command -v cargo) || die "cargo not found"
cargo_home=${CARGO_HOME:-$(dirname "$(dirname "$cargo_bin")")}
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
state=$repo/target/dpdk-roots/$suite
mkdir -p "$state/target" "$state/build" "$repo/build"

pass_env=(PATH="$cargo_home/bin:/usr/sbin:/usr/bin:/sbin:/bin" HOME="$HOME" LANG=C.UTF-8
    TERM="${TERM:-dumb}" CARGO_HOME="$cargo_home" RUSTUP_HOME="$rustup_home" DPDK_ROOT_SUITE="$suite")
while IFS='=' read -r name _; do
    case $name in
    CI | PTR_RING_* | TEST_* | BENCH_* | SOAK_* | AUTOTEST_* | TESTPMD_* | L2FWD_* | LOOM_* | CARGO_*)
        [[ $name == CARGO_HOME ]] || pass_env+=("$name=${!name}") ;;
    esac
done < <(env)
(($#)) || set -- bash -i

# The mounts, in a mount namespace of their own: nothing outlives the command.
# shellcheck disable=SC2016
exec unshare --mount --propagation private -- bash -euc '
    root=$1 repo=$2 state=$3 cargo_home=$4 rustup_home=$5
    shift 5
    bind() { mkdir -p "$root$2"; mount --bind "$1" "$root$2"; }
    mount --rbind /dev "$root/dev"
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    bind "$cargo_home" "$cargo_home"
    bind "$rustup_home" "$rustup_home"
    bind "$repo" "$repo"
    bind "$state/target" "$repo/target"
    bind "$state/build" "$repo/build"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    cd "$root$repo"
    exec chroot "$root" bash -c "cd \"\$0\" && exec \"\$@\"" "$repo" "$@"
' bash "$root" "$repo" "$state" "$cargo_home" "$rustup_home" env -i "${pass_env[@]}" "$@"
