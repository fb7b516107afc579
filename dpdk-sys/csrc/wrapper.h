/*
 * The DPDK API that dpdk-sys binds. bindgen parses this file with the full
 * `pkg-config --cflags libdpdk` (which force-includes rte_config.h and sets
 * -march), and the generated static-inline wrappers include it again.
 */
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_launch.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <rte_dev.h>
#include <rte_bus_vdev.h>
#include <rte_alarm.h>
#include <rte_memory.h>
#include <rte_memzone.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_mempool.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_ethdev.h>
#include <rte_telemetry.h>
