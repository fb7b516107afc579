/*
 * Hand-written accessors for what bindgen cannot bind: DPDK's per-lcore
 * variables are thread-local (`per_lcore_*`), and Rust cannot name a C
 * thread-local. Each accessor reads or writes the calling thread's copy.
 */
#ifndef DPDK_SYS_SHIM_H
#define DPDK_SYS_SHIM_H

#include <stdint.h>

/* rte_lcore_id(): LCORE_ID_ANY (UINT32_MAX) on unregistered non-EAL threads. */
uint32_t rust_rte_lcore_id(void);
/* rte_socket_id(): the NUMA socket of the calling thread. */
unsigned int rust_rte_socket_id(void);
/* rte_errno, the per-lcore error number set by failing DPDK calls. */
int rust_rte_errno(void);
void rust_rte_errno_set(int value);

#endif
