/*
 * The C compiler's view of the DPDK structures that the handler touches.
 * tests/layout.rs compares every entry with the Rust (bindgen) view; an entry
 * the Rust side does not know fails the test, so the two lists stay in step.
 */
#include <stddef.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

struct dpdk_sys_layout_entry {
	const char *name;
	size_t value;
};

#define SIZE(t) { "size_of " #t, sizeof(struct t) }
#define ALIGN(t) { "align_of " #t, _Alignof(struct t) }
#define OFFSET(t, f) { "offset_of " #t "." #f, offsetof(struct t, f) }

const struct dpdk_sys_layout_entry dpdk_sys_layout[] = {
	SIZE(rte_mempool),
	ALIGN(rte_mempool),
	OFFSET(rte_mempool, name),
	OFFSET(rte_mempool, pool_data),
	OFFSET(rte_mempool, pool_config),
	OFFSET(rte_mempool, mz),
	OFFSET(rte_mempool, flags),
	OFFSET(rte_mempool, socket_id),
	OFFSET(rte_mempool, size),
	OFFSET(rte_mempool, cache_size),
	OFFSET(rte_mempool, elt_size),
	OFFSET(rte_mempool, header_size),
	OFFSET(rte_mempool, trailer_size),
	OFFSET(rte_mempool, private_data_size),
	OFFSET(rte_mempool, ops_index),
	OFFSET(rte_mempool, local_cache),
	OFFSET(rte_mempool, populated_size),
	OFFSET(rte_mempool, elt_list),
	OFFSET(rte_mempool, nb_mem_chunks),
	OFFSET(rte_mempool, mem_list),

	SIZE(rte_mempool_ops),
	ALIGN(rte_mempool_ops),
	OFFSET(rte_mempool_ops, name),
	OFFSET(rte_mempool_ops, alloc),
	OFFSET(rte_mempool_ops, free),
	OFFSET(rte_mempool_ops, enqueue),
	OFFSET(rte_mempool_ops, dequeue),
	OFFSET(rte_mempool_ops, get_count),
	OFFSET(rte_mempool_ops, calc_mem_size),
	OFFSET(rte_mempool_ops, populate),
	OFFSET(rte_mempool_ops, get_info),
	OFFSET(rte_mempool_ops, dequeue_contig_blocks),

	SIZE(rte_mempool_ops_table),
	OFFSET(rte_mempool_ops_table, num_ops),
	OFFSET(rte_mempool_ops_table, ops),

	SIZE(rte_mempool_objhdr),
	OFFSET(rte_mempool_objhdr, mp),
	OFFSET(rte_mempool_objhdr, iova),

	SIZE(rte_mempool_cache),
	ALIGN(rte_mempool_cache),
	OFFSET(rte_mempool_cache, size),
	OFFSET(rte_mempool_cache, flushthresh),
	OFFSET(rte_mempool_cache, len),
	OFFSET(rte_mempool_cache, objs),

	SIZE(rte_mempool_memhdr),
	OFFSET(rte_mempool_memhdr, addr),
	OFFSET(rte_mempool_memhdr, iova),
	OFFSET(rte_mempool_memhdr, len),

	SIZE(rte_mempool_info),
	OFFSET(rte_mempool_info, contig_block_size),

	SIZE(rte_mbuf),
	ALIGN(rte_mbuf),
	OFFSET(rte_mbuf, buf_addr),
	OFFSET(rte_mbuf, buf_iova),
	/* Fields inside anonymous unions (24.07 on) are read in C: compat.rs. */
	OFFSET(rte_mbuf, ol_flags),
	OFFSET(rte_mbuf, pool),
	OFFSET(rte_mbuf, next),
	OFFSET(rte_mbuf, priv_size),

	SIZE(rte_pktmbuf_pool_private),
	OFFSET(rte_pktmbuf_pool_private, mbuf_data_room_size),
	OFFSET(rte_pktmbuf_pool_private, mbuf_priv_size),
	OFFSET(rte_pktmbuf_pool_private, flags),
};

const size_t dpdk_sys_layout_len =
	sizeof(dpdk_sys_layout) / sizeof(dpdk_sys_layout[0]);
