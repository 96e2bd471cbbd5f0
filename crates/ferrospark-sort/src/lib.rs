//! Sorting batches by key columns, shared by the operators that sort: the sort-based
//! aggregation fall-back and the sort-merge join. Batches carry their key columns first;
//! a run is a key-sorted sequence of such batches, in memory or spilled to an Arrow IPC file,
//! and [`RunMerger`] reads any number of runs back as one key-sorted stream.

pub mod runs;

pub use runs::{key_converter, sort_by_keys, sort_indices, write_run, Run, RunMerger};
