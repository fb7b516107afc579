//! The Rust (bindgen) layout of the DPDK structures the handler touches must
//! match the C compiler's, which `csrc/layout.c` records in a table.

use std::collections::BTreeMap;
use std::ffi::{c_char, CStr};
use std::mem::{align_of, offset_of, size_of};

use dpdk_sys::*;

#[repr(C)]
struct LayoutEntry {
    name: *const c_char,
    value: usize,
}

extern "C" {
    static dpdk_sys_layout: [LayoutEntry; 0];
    static dpdk_sys_layout_len: usize;
}

/// The C side's table, by entry name.
fn c_layout() -> BTreeMap<String, usize> {
    // SAFETY: csrc/layout.c defines `dpdk_sys_layout` as an array of exactly
    // `dpdk_sys_layout_len` entries whose names are static C strings.
    unsafe {
        let entries = std::slice::from_raw_parts(dpdk_sys_layout.as_ptr(), dpdk_sys_layout_len);
        entries
            .iter()
            .map(|e| {
                (
                    CStr::from_ptr(e.name).to_string_lossy().into_owned(),
                    e.value,
                )
            })
            .collect()
    }
}

/// The same facts as Rust sees them; the names follow csrc/layout.c.
fn rust_layout() -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    macro_rules! size {
        ($t:ident) => {
            m.insert(
                concat!("size_of ", stringify!($t)).to_owned(),
                size_of::<$t>(),
            );
        };
    }
    macro_rules! align {
        ($t:ident) => {
            m.insert(
                concat!("align_of ", stringify!($t)).to_owned(),
                align_of::<$t>(),
            );
        };
    }
    macro_rules! offset {
        ($t:ident, $f:ident) => {
            offset!($t, $f, offset_of!($t, $f))
        };
        ($t:ident, $f:ident, $value:expr) => {
            m.insert(
                concat!("offset_of ", stringify!($t), ".", stringify!($f)).to_owned(),
                $value,
            );
        };
    }

    size!(rte_mempool);
    align!(rte_mempool);
    offset!(rte_mempool, name);
    // `pool_data` sits in an anonymous union with `pool_id`.
    offset!(
        rte_mempool,
        pool_data,
        offset_of!(rte_mempool, __bindgen_anon_1)
            + offset_of!(rte_mempool__bindgen_ty_1, pool_data)
    );
    offset!(rte_mempool, pool_config);
    offset!(rte_mempool, mz);
    offset!(rte_mempool, flags);
    offset!(rte_mempool, socket_id);
    offset!(rte_mempool, size);
    offset!(rte_mempool, cache_size);
    offset!(rte_mempool, elt_size);
    offset!(rte_mempool, header_size);
    offset!(rte_mempool, trailer_size);
    offset!(rte_mempool, private_data_size);
    offset!(rte_mempool, ops_index);
    offset!(rte_mempool, local_cache);
    offset!(rte_mempool, populated_size);
    offset!(rte_mempool, elt_list);
    offset!(rte_mempool, nb_mem_chunks);
    offset!(rte_mempool, mem_list);

    size!(rte_mempool_ops);
    align!(rte_mempool_ops);
    offset!(rte_mempool_ops, name);
    offset!(rte_mempool_ops, alloc);
    offset!(rte_mempool_ops, free);
    offset!(rte_mempool_ops, enqueue);
    offset!(rte_mempool_ops, dequeue);
    offset!(rte_mempool_ops, get_count);
    offset!(rte_mempool_ops, calc_mem_size);
    offset!(rte_mempool_ops, populate);
    offset!(rte_mempool_ops, get_info);
    offset!(rte_mempool_ops, dequeue_contig_blocks);

    size!(rte_mempool_ops_table);
    offset!(rte_mempool_ops_table, num_ops);
    offset!(rte_mempool_ops_table, ops);

    size!(rte_mempool_objhdr);
    offset!(rte_mempool_objhdr, mp);
    offset!(rte_mempool_objhdr, iova);

    size!(rte_mempool_cache);
    align!(rte_mempool_cache);
    offset!(rte_mempool_cache, size);
    offset!(rte_mempool_cache, flushthresh);
    offset!(rte_mempool_cache, len);
    offset!(rte_mempool_cache, objs);

    size!(rte_mempool_memhdr);
    offset!(rte_mempool_memhdr, addr);
    offset!(rte_mempool_memhdr, iova);
    offset!(rte_mempool_memhdr, len);

    size!(rte_mempool_info);
    offset!(rte_mempool_info, contig_block_size);

    size!(rte_mbuf);
    align!(rte_mbuf);
    offset!(rte_mbuf, buf_addr);
    offset!(rte_mbuf, buf_iova);
    // data_off, pkt_len and the other fields that 24.07 moved into anonymous
    // unions are read through dpdk_sys::compat (C), not through bindgen's
    // release-dependent paths, so they have no entry here.
    offset!(rte_mbuf, ol_flags);
    offset!(rte_mbuf, pool);
    offset!(rte_mbuf, next);
    offset!(rte_mbuf, priv_size);

    size!(rte_pktmbuf_pool_private);
    offset!(rte_pktmbuf_pool_private, mbuf_data_room_size);
    offset!(rte_pktmbuf_pool_private, mbuf_priv_size);
    offset!(rte_pktmbuf_pool_private, flags);
    m
}

#[test]
fn rust_layout_matches_c_compiler() {
    let c = c_layout();
    let rust = rust_layout();
    assert!(
        c.len() > 50,
        "layout table from csrc/layout.c looks truncated: {} entries",
        c.len()
    );

    let mut problems = Vec::new();
    for (name, c_value) in &c {
        match rust.get(name) {
            Some(r) if r == c_value => {}
            Some(r) => problems.push(format!("{name}: C {c_value}, Rust {r}")),
            None => problems.push(format!(
                "{name}: in csrc/layout.c but not checked in tests/layout.rs"
            )),
        }
    }
    for name in rust.keys().filter(|name| !c.contains_key(*name)) {
        problems.push(format!(
            "{name}: checked in tests/layout.rs but not in csrc/layout.c"
        ));
    }
    assert!(
        problems.is_empty(),
        "layout mismatches:\n{}",
        problems.join("\n")
    );
}

#[test]
fn well_known_sizes() {
    // Facts the handler relies on, independent of the C table.
    assert_eq!(size_of::<rte_mbuf>(), 128, "rte_mbuf is two cache lines");
    assert_eq!(
        align_of::<rte_mempool>(),
        64,
        "rte_mempool is cache aligned"
    );
    assert_eq!(RTE_MEMPOOL_MAX_OPS_IDX, 16);
    assert_eq!(LCORE_ID_ANY, u32::MAX);
}
