//! The default provider under `ferrospark.memory.limit`: the state in memory
//! ([`MemoryStateStoreProvider`]) while the query's memory pool holds it, moved to disk
//! ([`DiskStateStoreProvider`]) when the pool refuses it.
//!
//! ```text
//!   get_store(v) ──▶ in memory: reserve the bytes of version v from the pool
//!                      ├── granted ─▶ a store in memory
//!                      └── refused ─▶ version v copied into state.db (oldest = v), memory
//!                                     freed ─▶ a store on disk, from now on
//!                ──▶ in memory, its last batch refused mid-way ─▶ moved to disk, as above
//!                ──▶ on disk, v >= oldest ─▶ a store on disk
//!                ──▶ on disk, v <  oldest ─▶ an error naming the move
//! ```
//! The pool also holds what a batch adds: a store in memory asks it for its growth as the
//! batch puts rows, and one it refuses fails its change with `MemoryLimit` and marks itself
//! refused; the operator drops the batch's stores (their changes undone) and runs the batch
//! again, and `get_store` then moves the version to disk without asking the pool. A batch
//! far larger than the limit so runs on disk from its first version, as Spark's RocksDB
//! provider would, instead of holding it all in memory until its commit.
//!
//! Only the last committed batch runs again (a retry), and the move happens at the start of
//! a batch, so no operator needs a version from before it.
//! The move happens between batches, on a committed version, so a crash during it leaves
//! the state as it was (the file is renamed into place whole). A restarted query finds
//! `state.db` and goes on on disk. Spark's own HDFS-backed provider fails the executor
//! instead; its RocksDB provider must be chosen up front.

use ferrospark_common::Result;

use super::disk::{DiskStateStoreProvider, DB_FILE};
use super::memory::{MemoryStateStoreProvider, StoreBudget};
use super::{
    state_error, StateStore, StateStoreConf, StateStoreId, StateStoreMetrics, StateStoreProvider,
};

/// State in memory until the memory pool refuses it, then on disk.
#[derive(Debug)]
pub struct SpillingStateStoreProvider {
    id: StateStoreId,
    conf: StateStoreConf,
    memory: MemoryStateStoreProvider,
    /// Where the state is once it has moved.
    disk: Option<DiskStateStoreProvider>,
    /// The bytes of the version in memory (and what its batch adds), held from the pool.
    budget: StoreBudget,
    spills: u64,
}

impl SpillingStateStoreProvider {
    /// The provider of store `id`: on disk if its state moved there before.
    pub fn open(id: &StateStoreId, conf: StateStoreConf) -> Result<Self> {
        let memory = MemoryStateStoreProvider::open(id, conf.clone())?;
        let disk = if id.dir().join(DB_FILE).exists() {
            Some(DiskStateStoreProvider::open(id, conf.clone())?)
        } else {
            None
        };
        let reservation = conf
            .pool
            .reservation(format!("state store {}", id.dir().display()));
        Ok(Self {
            id: id.clone(),
            conf,
            memory,
            disk,
            budget: StoreBudget {
                reservation,
                refused: false,
            },
            spills: 0,
        })
    }

    /// Whether the state is on disk though this provider holds it in memory.
    fn moved_elsewhere(&self) -> bool {
        self.id.dir().join(DB_FILE).exists()
    }
}

impl StateStoreProvider for SpillingStateStoreProvider {
    fn get_store(&mut self, version: u64) -> Result<Box<dyn StateStore + '_>> {
        if self.disk.is_none() && self.moved_elsewhere() {
            // Another process (a Spark Python worker this partition ran on) moved it.
            self.memory.forget();
            self.budget.reservation.free();
            self.disk = Some(DiskStateStoreProvider::open(&self.id, self.conf.clone())?);
        }
        if let Some(d) = &self.disk {
            let oldest = d.oldest()?;
            if version < oldest {
                return Err(state_error(
                    &self.id.dir(),
                    format!("version {version} is from before this store's state moved to disk at version {oldest} (ferrospark.memory.limit was reached); only versions from {oldest} on can be loaded"),
                ));
            }
        }
        if self.disk.is_none() {
            let bytes = self.memory.version_footprint(version)?;
            // A batch the pool refused mid-way runs again on disk, whatever the version holds.
            if !self.budget.refused && self.budget.reservation.try_resize(bytes) {
                return self
                    .memory
                    .get_store_within(version, Some(&mut self.budget));
            }
            let (id, conf) = (&self.id, &self.conf);
            let disk = self.memory.with_entries(version, |entries| {
                DiskStateStoreProvider::import(id, conf.clone(), version, entries)
            })?;
            self.memory.forget();
            self.budget.reservation.free();
            self.budget.refused = false;
            self.spills += 1;
            self.disk = Some(disk);
        }
        match &mut self.disk {
            Some(d) => d.get_store(version),
            None => Err(state_error(&self.id.dir(), "no provider holds the state")),
        }
    }

    fn latest_version(&self) -> Result<u64> {
        match &self.disk {
            Some(d) => d.latest_version(),
            None if self.moved_elsewhere() => {
                DiskStateStoreProvider::open(&self.id, self.conf.clone())?.latest_version()
            }
            None => self.memory.latest_version(),
        }
    }

    fn refused_memory(&self) -> bool {
        self.budget.refused
    }

    fn metrics(&self) -> StateStoreMetrics {
        let mut m = match &self.disk {
            Some(d) => d.metrics(),
            None => self.memory.metrics(),
        };
        m.spills = self.spills;
        m
    }
}
