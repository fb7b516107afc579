#!/usr/bin/env bash
# Sourced by the scripts: `help_if_asked "$@"` prints the calling script's
# header comment (its documentation) and exits 0 when the first argument is
# -h or --help.
help_if_asked() {
    case ${1:-} in
    -h | --help)
        local script=${BASH_SOURCE[1]}
        # The comment block after the shebang, without the leading "# ".
        awk 'NR == 1 && /^#!/ { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$script"
        exit 0
        ;;
    esac
}
