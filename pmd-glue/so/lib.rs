//! `librte_mempool_ptr_ring.so`: the pmd-glue library (`rte_mempool_ptr_ring`)
//! linked whole into a shared object, with its C API and its load-time
//! constructor, for EAL's `-d`.

pub use glue::*;
