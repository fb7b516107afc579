/* SPDX-License-Identifier: MIT OR Apache-2.0
 *
 * C API of the ptr_ring mempool handler (librte_mempool_ptr_ring.so).
 * Select the handler with `-d librte_mempool_ptr_ring.so
 * --mbuf-pool-ops-name ptr_ring`; these functions are optional extras.
 */
#ifndef RTE_MEMPOOL_PTR_RING_H
#define RTE_MEMPOOL_PTR_RING_H

#include <stdint.h>
#include <rte_mempool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Per-pool settings: pass a pointer to one as the pool_config argument of
 * rte_mempool_set_ops_byname(mp, "ptr_ring", &cfg). It is read once, when the
 * pool is populated, and must live until then. A field left at -1 keeps the
 * process-wide default (PTR_RING_CACHE_SIZE, PTR_RING_VALIDATE,
 * PTR_RING_ORDER); a NULL
 * pool_config keeps them all. Anything else out of range makes the populate
 * fail with -EINVAL and a log line naming the field. */
#define PTR_RING_POOL_CONFIG_VERSION 1

struct ptr_ring_pool_config {
	uint32_t version;   /* PTR_RING_POOL_CONFIG_VERSION */
	int32_t cache_size; /* handler per-lcore cache: -1 default, 0 off,
			     * N objects (N <= min(512, pool size / 1.5)) */
	int32_t validate;   /* validation mode: -1 default, 0 off, 1 on */
	int32_t order;      /* the order gets hand objects out in: -1 or 0
			     * default, or PTR_RING_ORDER_* below (0 was
			     * "reserved" before: old code keeps the default) */
};

/* ptr_ring_pool_config.order */
#define PTR_RING_ORDER_OLDEST_FIRST 1 /* every get takes the oldest objects */
#define PTR_RING_ORDER_NEWEST_FIRST 2 /* an lcore gets back first what it put
				       * last, the others the oldest */

#define PTR_RING_POOL_CONFIG_DEFAULT \
	{ PTR_RING_POOL_CONFIG_VERSION, -1, -1, -1 }

/* Values of ptr_ring_stats.state. */
#define PTR_RING_STATE_ACTIVE   0 /* serving gets and puts */
#define PTR_RING_STATE_DRAINING 1 /* shutting down, waiting for buffers */
/* 2 is reserved: never reported. */
#define PTR_RING_STATE_RELEASED 3 /* every buffer back, pool released */

struct ptr_ring_stats {
	uint64_t size;               /* objects the pool was created for */
	uint64_t populated;          /* objects laid out by populate */
	uint64_t in_ring;            /* objects in the ring */
	uint64_t in_caches;          /* objects in the handler's per-lcore caches */
	int64_t inflight;            /* objects out (application, DPDK caches);
	                              * negative: more came back than went out */
	uint64_t hold;               /* objects handed out, modulo 2^32 */
	uint64_t release;            /* taken back (incl. initial fill), mod 2^32 */
	uint64_t iova_chunks;        /* IOVA table records */
	uint64_t dma_maps;           /* DMA map calls */
	uint64_t dma_unmaps;         /* DMA unmap calls */
	uint64_t rejected_foreign;   /* validation: foreign pointers rejected */
	uint64_t rejected_double_free; /* validation: double frees rejected */
	uint32_t validation;         /* 1 when validation mode is on */
	uint32_t state;              /* PTR_RING_STATE_* */
};

/* 0, or -EINVAL when mp does not use the ptr_ring handler. */
int ptr_ring_stats(const struct rte_mempool *mp, struct ptr_ring_stats *out);

/* Moves lcore's handler cache back to the ring. lcore must be quiescent
 * (no get/put on mp during the call). Returns objects moved or -errno. */
int ptr_ring_flush_lcore_cache(const struct rte_mempool *mp, unsigned int lcore);

/* Index of ptr_ring in this process's mempool ops table, or -1. The handler
 * registers after every other one, and a secondary process takes its
 * primary's table order (see DESIGN.md, "Multi-process"), so this index is the
 * same in every process sharing the pools. */
int ptr_ring_ops_index(void);

/* Makes mp reachable by the device (rte_device) of port, once for the pool's
 * life and device; two ports of one device share it. Chunks in EAL memory
 * are mapped by EAL for VFIO devices already and are only recorded; chunks
 * in memory registered with rte_extmem_register are mapped with
 * rte_dev_dma_map, one call per run of VA- and IOVA-contiguous pages and
 * once per mapping domain (PCI devices bound to vfio-pci share DPDK's
 * default container), and unmapped once when the device goes away (its last
 * attached port released, or device removal) or the pool is freed.
 * Returns the chunk records handled now (0 when nothing is new or the
 * device has no DMA mapping), -EINVAL for memory that is neither, or
 * -errno. */
int ptr_ring_attach_port(struct rte_mempool *mp, uint16_t port);

/* Safe port shutdown: stops RX, cleans up TX, stops and closes the ports,
 * flushes DPDK's per-lcore caches and the handler caches, then frees mp once
 * every buffer is back.
 * No lcore (of any process using mp) may be inside a get/put on mp during
 * the call; buffers the application still holds may be returned later from
 * any thread.
 * DPDK's per-lcore cache of mp is turned off (mp->cache_size = 0): mp lives
 * in shared memory, so this holds for every process using the pool, whose
 * later puts then go straight to the handler.
 * One shutdown per pool: a second call (any process) returns -EALREADY;
 * a shutdown claimed by a process that has exited is taken over.
 * mp is the handler's to free afterwards. To free it yourself while its
 * release is deferred, call ptr_ring_release_cancel(mp) first and free it
 * only if that returns 0. A plain rte_mempool_free(mp) during a deferred
 * release is left alone by the release only if it begins before the
 * release has found every buffer back; one that begins later is a double
 * free (reported by the handler if it gets that far).
 * Returns 0: mp freed; 1: release deferred (*inflight buffers still out; an
 * EAL alarm retries every second, warns every minute, and frees mp when the
 * last buffer is back; *inflight is 0 when none is out but a put has not
 * finished storing its buffers, on a pool with RTE_MEMPOOL_F_SP_PUT and no
 * handler cache: the log says so); or -errno. */
int ptr_ring_port_shutdown(const uint16_t *ports, uint16_t nb_ports,
			   struct rte_mempool *mp, uint32_t wait_ms,
			   int64_t *inflight);

/* ptr_ring_port_shutdown that also hands back the objects held in nb_caches
 * user-owned caches (rte_mempool_cache_create) used with mp. Caches not
 * passed keep their objects out of the pool, and the release waits until
 * the application flushes them (rte_mempool_cache_flush(cache, mp)). No
 * other thread may use the caches during the call. */
int ptr_ring_port_shutdown_caches(const uint16_t *ports, uint16_t nb_ports,
				  struct rte_mempool_cache *const *caches,
				  uint32_t nb_caches, struct rte_mempool *mp,
				  uint32_t wait_ms, int64_t *inflight);

/* Takes the free of mp back from its deferred release (any process): on 0
 * no release of the handler frees mp and the caller must free it
 * (rte_mempool_free), also when no release was pending. -ENOENT: mp is not
 * on DPDK's mempool list (freed, or being freed): do not free it; mp is
 * only compared with the listed pools, never read, so a stale pointer is
 * safe. -EBUSY: the release found every buffer back and is freeing mp: do
 * not free it. */
int ptr_ring_release_cancel(struct rte_mempool *mp);

/* Ends this process's deferred releases: call before rte_eal_cleanup()
 * when ptr_ring_port_shutdown may have deferred a release (DPDK gives a
 * handler no hook there, and an alarm armed past the memory detach would
 * read unmapped memory). Cancels the alarms, logs each pool still waiting
 * with its inflight count, and gives its release back, so that another
 * process may shut it down again; no release is deferred afterwards.
 * Returns the number of releases abandoned. */
int ptr_ring_cleanup(void);

#ifdef __cplusplus
}
#endif

#endif
