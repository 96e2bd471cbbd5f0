//! Sorting batches by key columns, shared by the operators that sort: the sort-based
//! aggregation fall-back and the sort-merge join. Batches carry their key columns first;
//! a run is a key-sorted sequence of such batches, in memory or spilled to an Arrow IPC file,
//! and [`RunMerger`] reads any number of runs back as one key-sorted stream.
//! [`sort_rows`] is the in-memory stable sort of row-format keys the window operator uses.

pub mod row_sort;
pub mod runs;

pub use row_sort::{sort_dense_keys, sort_rows};

pub use runs::{key_converter, sort_by_keys, sort_indices, write_run, Run, RunMerger};
