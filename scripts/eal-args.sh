# shellcheck shell=bash
# Sourced (not run) by the other scripts: loads the EAL memory arguments that
# scripts/setup.sh chose for this machine.
#
#   EAL_MODE   hugepages | nohuge
#   EAL_MEM    EAL memory arguments, word-split when used:
#              hugepages: --in-memory   (no files left behind, runs don't clash)
#              nohuge:    --no-huge -m 1024 --no-shconf
# Both choices make each run a private primary process; a multi-process run
# replaces --in-memory / --no-shconf with its own --file-prefix.

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
eal_env_file=$repo_root/build/eal-mem.env

if [[ ! -f $eal_env_file ]]; then
    echo "eal-args: $eal_env_file is missing; run scripts/setup.sh (or make setup) first" >&2
    return 1
fi
# shellcheck source=/dev/null
source "$eal_env_file"

# EAL refuses a -d plugin when the file or any directory above it is
# world-writable ("... is world-writable and insecure"). Fails early, naming
# the directory and the fix; $1: the library.
plugin_path_ok() {
    local p
    p=$(readlink -f "$1") || return 0
    while [[ -n $p ]]; do
        if [[ -e $p && ! -L $p ]] && ((8#$(stat -c '%a' "$p") & 2)); then
            echo "$1: $p is world-writable and EAL refuses plugins under it: build or copy the handler elsewhere (not under /tmp), or chmod o-w $p" >&2
            return 1
        fi
        [[ $p == / ]] && break
        p=$(dirname "$p")
    done
}
