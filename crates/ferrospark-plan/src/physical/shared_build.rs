//! Built broadcast join sides kept across the tasks of one stage that one worker runs: Spark
//! builds a broadcast relation once per executor, and every task of the stage probes it.
//!
//! A task plans its fragment afresh, so a join finds its built side here by a key the planner
//! gives it (the join's position in the fragment, the same in every task of the stage). Only a
//! join whose build side depends on nothing but broadcast rows gets a key: its build is the
//! same in every task. Each task probes a fork of the built table (the rows and the index are
//! shared, not copied), and the runtime filters made from its keys are handed to the task as
//! if it had built them.
//!
//! ```text
//!   task 1: build --> SharedBuilds[key] = (built join, runtime filters) --> fork --> probe
//!   task 2:           SharedBuilds[key] ------------------------------------> fork --> probe
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ferrospark_common::{FerroError, Result};
use ferrospark_expr::KeySet;
use ferrospark_join::JoinExec;

/// One built join side and the runtime filters its keys made.
pub(crate) struct SharedBuild {
    /// The join with its build side read and indexed (forked for each probe).
    pub exec: Mutex<JoinExec>,
    /// The runtime filters published when it was built, by filter id.
    pub filters: Vec<(usize, Arc<KeySet>)>,
}

impl std::fmt::Debug for SharedBuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedBuild")
            .field("filters", &self.filters.len())
            .finish_non_exhaustive()
    }
}

/// The built sides of one stage's broadcast joins in one worker, by the planner's key.
#[derive(Debug, Default)]
pub struct SharedBuilds {
    built: Mutex<HashMap<String, Arc<SharedBuild>>>,
    builds: AtomicUsize,
    reuses: AtomicUsize,
}

impl SharedBuilds {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many join sides were built here.
    pub fn builds(&self) -> usize {
        self.builds.load(Ordering::Relaxed)
    }

    /// How many times a task probed a side built by an earlier task.
    pub fn reuses(&self) -> usize {
        self.reuses.load(Ordering::Relaxed)
    }

    /// The side built for `key`, built by `build` if no task has yet; whether it was built
    /// now. The lock is held while building: two threads of one worker never build a side
    /// twice.
    pub(crate) fn get_or_build(
        &self,
        key: &str,
        build: impl FnOnce() -> Result<SharedBuild>,
    ) -> Result<(Arc<SharedBuild>, bool)> {
        let mut built = self
            .built
            .lock()
            .map_err(|_| FerroError::Internal("shared join builds poisoned".into()))?;
        if let Some(b) = built.get(key) {
            self.reuses.fetch_add(1, Ordering::Relaxed);
            return Ok((b.clone(), false));
        }
        let b = Arc::new(build()?);
        built.insert(key.to_string(), b.clone());
        self.builds.fetch_add(1, Ordering::Relaxed);
        Ok((b, true))
    }
}
