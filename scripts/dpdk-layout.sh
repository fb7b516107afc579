# shellcheck shell=bash
# Sourced (not run) by the install and package tests: where the installed
# DPDK keeps what a driver installs next to it, as EAL and pkg-config say.
#
#   dpdk_layout NAME
#       Sets plugindir (EAL's plugin directory: the first entry of the
#       DPDK_PLUGIN_PATH string in librte_eal.so), incdir (where rte_mempool.h
#       is), pcdir (libdpdk.pc's directory), abi and real: this DPDK's ABI
#       and the installed file name NAME.so.<ABI>.<minor>, from the plugin
#       directory's name (pmds-<ABI>.<minor>). Returns 1, with a message on
#       stderr, when the plugin directory is not named that way.

dpdk_layout() {
    local name=$1
    plugindir=$(strings -a "$(pkg-config --variable=libdir libdpdk)/librte_eal.so" | sed -n 's/^DPDK_PLUGIN_PATH=//p' | head -n1)
    plugindir=${plugindir%%:*}
    incdir=$(dirname "$(find "$(pkg-config --variable=includedir libdpdk)" -name rte_mempool.h -print -quit)")
    pcdir=$(pkg-config --variable=pcfiledir libdpdk)
    if [[ ${plugindir##*/} =~ ^pmds-([0-9]+)\.([0-9]+)$ ]]; then
        abi=${BASH_REMATCH[1]}
        real=$name.so.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
    else
        echo "plugin directory '$plugindir' is not named pmds-<ABI>.<minor>" >&2
        return 1
    fi
}
