//! Join runtime filters (Spark's `InjectRuntimeFilter`, exact instead of a Bloom filter): once
//! a hash or sort-merge join has read its build side, the build keys' distinct values become a
//! filter on the probe side's scan, so rows that cannot find a partner are dropped inside the
//! scan (row groups and pages by the keys' range, rows by membership) before the rest of
//! their columns decode or reach the join.
//!
//! ```text
//!   planning:  Join ──accept_runtime_filter(probe key, Target)──▶ Project/Filter/Join/Aggregate ──▶ FileScan (records Target)
//!   running:   Join builds ──KeySet──▶ TaskContext.runtime_filters[id] ──▶ FileScan plans its reader with it
//! ```
//! The build always finishes before the probe side starts, so the scan finds the keys. A scan
//! that runs without them (a filter too large to build) reads as before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::ArrayRef;
use ferrospark_expr::KeySet;

/// One runtime filter as a scan knows it: which filter, and the build keys it is made of
/// (for EXPLAIN).
#[derive(Debug, Clone)]
pub struct Target {
    /// The filter's id within the query.
    pub id: usize,
    /// The build side's key, as EXPLAIN prints it.
    pub build_key: String,
}

/// The filters one run of a query has built, by id.
#[derive(Debug, Default)]
pub struct RuntimeFilters(Mutex<HashMap<usize, Arc<KeySet>>>);

impl RuntimeFilters {
    /// Publishes filter `id` built from a build side's key arrays (no filter when the key's
    /// type has no [`KeySet`]).
    pub fn publish(&self, id: usize, keys: &[ArrayRef]) -> Option<usize> {
        let set = Arc::new(KeySet::try_new(keys)?);
        let n = set.len();
        if let Ok(mut m) = self.0.lock() {
            m.insert(id, set);
        }
        Some(n)
    }

    /// Hands this run filter `id` as another task's join built it (a shared broadcast side).
    pub fn insert(&self, id: usize, set: Arc<KeySet>) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(id, set);
        }
    }

    /// Filter `id`, when its join has built it in this run.
    pub fn get(&self, id: usize) -> Option<Arc<KeySet>> {
        self.0.lock().ok()?.get(&id).cloned()
    }
}
