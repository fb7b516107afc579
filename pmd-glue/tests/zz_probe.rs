use dpdk_sys as sys;
fn names() -> Vec<String> {
    unsafe {
        let t = &*core::ptr::addr_of!(sys::rte_mempool_ops_table);
        (0..t.num_ops as usize).map(|i| std::ffi::CStr::from_ptr(t.ops[i].name.as_ptr()).to_string_lossy().into_owned()).collect()
    }
}
#[test]
fn probe() {
    eprintln!("at start: {:?}", names());
    rte_mempool_ptr_ring::api::eal_init(&["p", "--in-memory", "--no-telemetry", "--no-pci", "-l", "0"]).unwrap();
    eprintln!("after init: {:?}", names());
}
