//! In-process EAL: create a pktmbuf pool on DPDK's own `ring_mp_mc` handler,
//! allocate and free mbufs through the wrapped `static inline` API, and check
//! the counts. EAL can be initialised once per process, so this file holds a
//! single test that runs every step in order.

use std::ffi::{c_char, c_int, CStr, CString};
use std::ptr;

use dpdk_sys::*;

/// Works without hugepages; `--no-shconf` keeps shared-config files out of
/// /var/run/dpdk, so concurrent runs do not clash. (`--in-memory` is refused
/// with `--no-huge`, which implies `--legacy-mem`.)
const EAL_ARGS: &[&str] = &[
    "dpdk-sys-test",
    "--no-huge",
    "-m",
    "256",
    "--no-pci",
    "--no-shconf",
    "--no-telemetry",
    "-l",
    "0",
    "--log-level=lib.eal:error",
];

const POOL_SIZE: u32 = 1023;
const CACHE_SIZE: u32 = 32;
const ALLOCS: usize = 100;

fn eal_init() {
    let args: Vec<CString> = EAL_ARGS.iter().map(|a| CString::new(*a).unwrap()).collect();
    // rte_eal_init may permute argv, so it gets its own array of pointers.
    let mut argv: Vec<*mut c_char> = args.iter().map(|a| a.as_ptr().cast_mut()).collect();
    // SAFETY: argv holds argc valid NUL-terminated strings that outlive the
    // call; EAL is initialised once, from this thread.
    let ret = unsafe { rte_eal_init(argv.len() as c_int, argv.as_mut_ptr()) };
    assert!(ret >= 0, "rte_eal_init failed: rte_errno {}", errno());
}

/// Names of all registered mempool handlers (drivers auto-loaded by EAL).
fn registered_ops() -> Vec<String> {
    // SAFETY: EAL is initialised; the table is only written by constructors
    // (`RTE_MEMPOOL_REGISTER_OPS`), which have all run by now.
    let table = unsafe { &*ptr::addr_of!(rte_mempool_ops_table) };
    table.ops[..table.num_ops as usize]
        .iter()
        .map(|ops| {
            // SAFETY: registered entries have a NUL-terminated name.
            unsafe { CStr::from_ptr(ops.name.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

fn avail(mp: *const rte_mempool) -> u32 {
    // SAFETY: mp is a live pool.
    unsafe { rte_mempool_avail_count(mp) }
}

#[test]
fn eal_pktmbuf_pool_on_ring_mp_mc() {
    eal_init();
    assert_eq!(
        lcore_id(),
        0,
        "the thread that ran rte_eal_init is the main lcore"
    );
    // The inlined TLS read agrees with DPDK's own inline function (through the
    // C shim) on the main lcore, on a thread EAL does not know, and on one
    // registered with rte_thread_register.
    assert_eq!(lcore_id_shim(), 0);
    let (plain, registered) = std::thread::spawn(|| {
        let plain = (lcore_id(), lcore_id_shim());
        // SAFETY: EAL is initialised; registers the calling thread.
        let rc = unsafe { rte_thread_register() };
        assert_eq!(rc, 0, "rte_thread_register failed: rte_errno {}", errno());
        let registered = (lcore_id(), lcore_id_shim());
        // SAFETY: the calling thread registered itself above.
        unsafe { rte_thread_unregister() };
        (plain, registered)
    })
    .join()
    .unwrap();
    assert_eq!(plain, (u32::MAX, u32::MAX), "non-EAL thread: LCORE_ID_ANY");
    assert_eq!(registered.0, registered.1);
    assert_ne!(
        registered.0,
        u32::MAX,
        "a registered thread gets an lcore id"
    );

    let handlers = registered_ops();
    assert!(
        handlers.iter().any(|h| h == "ring_mp_mc"),
        "ring_mp_mc not registered; handlers: {handlers:?}"
    );

    // rte_errno through the shim: a failed lookup sets ENOENT.
    set_errno(0);
    // SAFETY: the name is a valid C string.
    let missing = unsafe { rte_mempool_lookup(c"no_such_pool".as_ptr()) };
    assert!(missing.is_null());
    assert_eq!(errno(), libc::ENOENT);

    // SAFETY: EAL is initialised; name and ops name are valid C strings.
    let mp = unsafe {
        rte_pktmbuf_pool_create_by_ops(
            c"dpdk_sys_test".as_ptr(),
            POOL_SIZE,
            CACHE_SIZE,
            0,
            RTE_MBUF_DEFAULT_BUF_SIZE as u16,
            SOCKET_ID_ANY,
            c"ring_mp_mc".as_ptr(),
        )
    };
    assert!(
        !mp.is_null(),
        "rte_pktmbuf_pool_create_by_ops failed: rte_errno {}",
        errno()
    );

    // SAFETY: mp is live; ops_index was set by the pool creation.
    let ops = unsafe { &*rte_mempool_get_ops((*mp).ops_index as c_int) };
    // SAFETY: the ops name is NUL-terminated.
    let ops_name = unsafe { CStr::from_ptr(ops.name.as_ptr()) };
    assert_eq!(ops_name.to_str().unwrap(), "ring_mp_mc");
    // SAFETY: mp is live.
    let (size, populated) = unsafe { ((*mp).size, (*mp).populated_size) };
    assert_eq!(size, POOL_SIZE);
    assert_eq!(populated, POOL_SIZE);
    assert_eq!(avail(mp), POOL_SIZE);

    let mut mbufs = Vec::with_capacity(ALLOCS);
    for _ in 0..ALLOCS {
        // SAFETY: mp is a live pktmbuf pool.
        let m = unsafe { rte_pktmbuf_alloc(mp) };
        assert!(
            !m.is_null(),
            "rte_pktmbuf_alloc failed after {} mbufs",
            mbufs.len()
        );
        // SAFETY: m is a freshly allocated mbuf.
        unsafe {
            assert_eq!((*m).pool, mp);
            assert_eq!(compat::mbuf_data_off(m) as u32, RTE_PKTMBUF_HEADROOM);
            assert_eq!(
                u32::from(compat::mbuf_data_off(m)),
                u32::from(rte_pktmbuf_headroom(m))
            );
            assert_eq!(compat::mbuf_pkt_len(m), 0);
            assert_eq!(compat::mbuf_data_len(m), 0);
        }
        mbufs.push(m);
    }
    assert_eq!(avail(mp), POOL_SIZE - ALLOCS as u32);
    // SAFETY: mp is live.
    assert_eq!(unsafe { rte_mempool_in_use_count(mp) }, ALLOCS as u32);

    for m in mbufs.drain(..) {
        // SAFETY: m came from rte_pktmbuf_alloc and is freed once.
        unsafe { rte_pktmbuf_free(m) };
    }
    assert_eq!(avail(mp), POOL_SIZE);

    // Bulk API too: get and put 64 raw objects.
    let mut objs = [ptr::null_mut::<std::ffi::c_void>(); 64];
    assert_eq!(
        // SAFETY: objs has room for 64 pointers.
        unsafe { rte_mempool_get_bulk(mp, objs.as_mut_ptr(), 64) },
        0
    );
    assert_eq!(avail(mp), POOL_SIZE - 64);
    // SAFETY: the 64 objects came from mp and are returned once.
    unsafe { rte_mempool_put_bulk(mp, objs.as_ptr(), 64) };
    assert_eq!(avail(mp), POOL_SIZE);

    // SAFETY: no object of mp is outstanding; mp is not used afterwards.
    unsafe { rte_mempool_free(mp) };
    // SAFETY: EAL was initialised by this process and nothing uses it now.
    assert_eq!(unsafe { rte_eal_cleanup() }, 0);
}
