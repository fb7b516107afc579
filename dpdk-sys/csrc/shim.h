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


struct rte_tel_data;
struct rte_mbuf;

/* Telemetry dict values: rte_tel_data_add_dict_uint / _int (64-bit) from
 * 23.03, rte_tel_data_add_dict_u64 / 32-bit _int (saturated) before. */
int dpdk_sys_tel_add_dict_uint(struct rte_tel_data *d, const char *name, uint64_t val);
int dpdk_sys_tel_add_dict_int(struct rte_tel_data *d, const char *name, int64_t val);

/* rte_mbuf fields that 24.07 moved into anonymous unions. */
uint16_t dpdk_sys_mbuf_data_off(const struct rte_mbuf *m);
uint32_t dpdk_sys_mbuf_pkt_len(const struct rte_mbuf *m);
uint16_t dpdk_sys_mbuf_data_len(const struct rte_mbuf *m);
uint16_t dpdk_sys_mbuf_port(const struct rte_mbuf *m);

struct rte_mempool;

/* fn(mp, arg) under the tailq read lock, if mp is still on the mempool
 * list (rte_mempool_free unlinks it first, under that lock's write side):
 * 1 when it ran, 0 when mp is not listed. */
int dpdk_sys_mempool_listed_call(const struct rte_mempool *mp,
				 void (*fn)(struct rte_mempool *, void *), void *arg);

struct rte_device;

/* The IOMMU group of a PCI device bound to vfio-pci (its rte_dev_dma_map
 * goes to DPDK's default VFIO container), or 0 for any other device. */
int dpdk_sys_dev_vfio_group(const struct rte_device *dev);

/* rte_mempool_lookup, walking the list under the tailq lock that
 * rte_mempool_free unlinks under (DPDK's own walks under another lock and
 * can read an entry a concurrent free has freed). */
struct rte_mempool *dpdk_sys_mempool_lookup_listed(const char *name);
/* rte_mempool_walk under that lock; fn takes neither lock. */
void dpdk_sys_mempool_walk_listed(void (*fn)(struct rte_mempool *, void *), void *arg);

#endif
