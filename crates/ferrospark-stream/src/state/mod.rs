//! The state store: one versioned key-value store per (operator, partition), as Spark's
//! `StateStore` / `StateStoreProvider`.
//!
//! ```text
//!  provider.get_store(v)  ──▶ store at version v ── get / put / remove / scan ──┐
//!                                                                              │
//!        commit() ──▶ version v + 1 durable (atomically) ◀── or ── abort() ◀──┘
//! ```
//!
//! Two providers, chosen by `spark.sql.streaming.stateStore.providerClass`:
//! * [`memory::MemoryStateStoreProvider`] (Spark's `HDFSBackedStateStoreProvider`, the
//!   default): the state in memory; each commit writes a delta file of the version's
//!   changes, and every `spark.sql.streaming.stateStore.minDeltasForSnapshot` versions a
//!   snapshot of the whole state. A version is recovered as its latest snapshot plus the
//!   deltas after it.
//! * [`disk::DiskStateStoreProvider`] (in place of Spark's `RocksDBStateStoreProvider`,
//!   selected by that class name or `disk`): the state in an embedded SQLite file, so it may
//!   outgrow memory; every version's rows are kept (multi-version), a commit is one SQLite
//!   transaction.
//!
//! With the memory provider, `ferrospark.memory.limit` bounds the state in memory: a store
//! whose version the query's memory pool refuses moves to disk between batches
//! ([`spill::SpillingStateStoreProvider`]), with the same answers.
//!
//! The memory provider's files are compressed by the codec
//! `spark.sql.streaming.stateStore.compression.codec` names (`lz4`, Spark's default, or
//! `zstd`).
//!
//! Old versions go after `spark.sql.streaming.minBatchesToRetain` newer ones. A version that
//! was committed can be loaded again (a micro-batch re-run after a crash reloads the version
//! it started from, and its commit replaces what the interrupted run may have committed).

mod byte_map;
pub mod disk;
mod files;
pub mod memory;
pub mod spill;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use ferrospark_common::memory::MemoryPool;
use ferrospark_common::{Config, FerroError, Result};

/// Spark's key choosing the provider.
pub const PROVIDER_CLASS: &str = "spark.sql.streaming.stateStore.providerClass";
/// Spark's key: deltas between two snapshots.
pub const MIN_DELTAS_FOR_SNAPSHOT: &str = "spark.sql.streaming.stateStore.minDeltasForSnapshot";
/// Spark's key: versions kept behind the latest.
pub const MIN_BATCHES_TO_RETAIN: &str = "spark.sql.streaming.minBatchesToRetain";
/// Spark's key: the codec compressing the state's files.
pub const COMPRESSION_CODEC: &str = "spark.sql.streaming.stateStore.compression.codec";

pub use files::Codec;

/// Which (operator, partition) a store holds, under which checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateStoreId {
    /// The query's checkpoint location.
    pub checkpoint: PathBuf,
    /// The stateful operator's id in the query.
    pub operator_id: u64,
    /// The state partition.
    pub partition_id: u32,
    /// A store of the operator's (a stream-stream join keeps four per partition).
    pub store_name: String,
}

impl StateStoreId {
    /// The operator's default store of `partition_id`.
    pub fn new(checkpoint: impl AsRef<Path>, operator_id: u64, partition_id: u32) -> Self {
        Self {
            checkpoint: checkpoint.as_ref().to_path_buf(),
            operator_id,
            partition_id,
            store_name: "default".into(),
        }
    }

    /// The same partition's store named `name`.
    pub fn named(mut self, name: &str) -> Self {
        self.store_name = name.to_string();
        self
    }

    /// Its directory: `<checkpoint>/state/<operator>/<partition>[/<store name>]`, as Spark
    /// lays them out.
    pub fn dir(&self) -> PathBuf {
        let d = self
            .checkpoint
            .join("state")
            .join(self.operator_id.to_string())
            .join(self.partition_id.to_string());
        if self.store_name == "default" {
            d
        } else {
            d.join(&self.store_name)
        }
    }
}

/// Where a provider keeps the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// In memory, with delta and snapshot files.
    Memory,
    /// On disk, in an embedded SQLite file.
    Disk,
}

/// A store's settings, by Spark's keys.
#[derive(Debug, Clone)]
pub struct StateStoreConf {
    /// The provider.
    pub provider: ProviderKind,
    /// Deltas written between two snapshots (Spark's default 10).
    pub min_deltas_for_snapshot: u64,
    /// Versions kept behind the latest (Spark's default 100).
    pub min_versions_to_retain: u64,
    /// How the memory provider's files are compressed (Spark's default LZ4).
    pub codec: Codec,
    /// Whether the store's keys are `length (u32, big-endian) ++ prefix ++ rest` and scanned
    /// by `length ++ prefix`, which the memory provider then indexes (Spark's prefix-key
    /// encoder spec). Set by the operator, not by configuration.
    pub prefix_index: bool,
    /// The query's memory pool (`ferrospark.memory.limit`): state in memory that it refuses
    /// moves to disk. Clones share it, so every store of a conf shares one budget.
    pub pool: MemoryPool,
}

impl PartialEq for StateStoreConf {
    /// Equal settings; pools are equal by their limits.
    fn eq(&self, o: &Self) -> bool {
        self.provider == o.provider
            && self.min_deltas_for_snapshot == o.min_deltas_for_snapshot
            && self.min_versions_to_retain == o.min_versions_to_retain
            && self.codec == o.codec
            && self.prefix_index == o.prefix_index
            && self.pool.limit() == o.pool.limit()
    }
}

impl Default for StateStoreConf {
    fn default() -> Self {
        Self {
            provider: ProviderKind::Memory,
            min_deltas_for_snapshot: 10,
            min_versions_to_retain: 100,
            codec: Codec::default(),
            prefix_index: false,
            pool: MemoryPool::unbounded(),
        }
    }
}

impl StateStoreConf {
    /// The settings in `cfg`; a provider class nobody knows is a `ConfigError` naming both.
    pub fn from_config(cfg: &Config) -> Result<Self> {
        let d = Self::default();
        let provider = match cfg.get(PROVIDER_CLASS).map(str::trim) {
            None => d.provider,
            Some(v) => match v.rsplit('.').next().unwrap_or(v).to_ascii_lowercase().as_str() {
                "hdfsbackedstatestoreprovider" | "memory" => ProviderKind::Memory,
                "rocksdbstatestoreprovider" | "disk" => ProviderKind::Disk,
                _ => {
                    return Err(FerroError::Config(format!(
                        "{PROVIDER_CLASS} is '{v}': use org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider (state in memory, the default) or org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider (state on disk)"
                    )))
                }
            },
        };
        let codec = match cfg.get(COMPRESSION_CODEC).map(str::trim) {
            None => d.codec,
            Some(v) => Codec::parse(v).ok_or_else(|| {
                FerroError::Config(format!(
                    "{COMPRESSION_CODEC} is '{v}': ferrospark compresses state files with lz4 (Spark's default) or zstd"
                ))
            })?,
        };
        let positive = |key: &str, default: u64| -> Result<u64> {
            Ok(cfg.get_positive(key, default as usize)? as u64)
        };
        Ok(Self {
            provider,
            min_deltas_for_snapshot: positive(MIN_DELTAS_FOR_SNAPSHOT, d.min_deltas_for_snapshot)?,
            min_versions_to_retain: positive(MIN_BATCHES_TO_RETAIN, d.min_versions_to_retain)?,
            codec,
            prefix_index: d.prefix_index,
            pool: MemoryPool::new(cfg.memory_limit()?),
        })
    }
}

/// A store's counters, as Spark's `StateStoreMetrics` and its provider's custom metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateStoreMetrics {
    /// Keys in the state after the last commit (Spark's `numRowsTotal`).
    pub num_keys: u64,
    /// Keys put in this version (`numRowsUpdated`).
    pub rows_updated: u64,
    /// Keys removed in this version (`numRowsRemoved`).
    pub rows_removed: u64,
    /// Bytes of keys and values held in memory (`memoryUsedBytes`).
    pub memory_bytes: u64,
    /// Bytes of the state on disk.
    pub disk_bytes: u64,
    /// Milliseconds the last commit took (`commitTimeMs`).
    pub commit_ms: f64,
    /// Snapshot files written by this provider.
    pub snapshots_written: u64,
    /// Delta files written by this provider.
    pub deltas_written: u64,
    /// Versions loaded from files rather than from memory (`loadedMapCacheMissCount`).
    pub loads_from_files: u64,
    /// Times the state moved from memory to disk, the memory pool refusing it.
    pub spills: u64,
    /// Deltas applied to a version kept in memory to reach a later one another process
    /// committed (instead of loading the later one whole from its files).
    pub deltas_caught_up: u64,
    /// Milliseconds the operator's last batch spent joining or merging its rows and putting
    /// them in its state (Spark's operator metric `allUpdatesTimeMs`; 0 for a bare store).
    pub all_updates_ms: f64,
    /// Milliseconds the operator's last batch spent finding and removing the state the
    /// watermark frees (`allRemovalsTimeMs`).
    pub all_removals_ms: f64,
}

impl StateStoreMetrics {
    /// Adds another partition's counters (commit time: the longest).
    pub fn add(&mut self, o: &StateStoreMetrics) {
        self.num_keys += o.num_keys;
        self.rows_updated += o.rows_updated;
        self.rows_removed += o.rows_removed;
        self.memory_bytes += o.memory_bytes;
        self.disk_bytes += o.disk_bytes;
        self.commit_ms = self.commit_ms.max(o.commit_ms);
        self.snapshots_written += o.snapshots_written;
        self.deltas_written += o.deltas_written;
        self.loads_from_files += o.loads_from_files;
        self.spills += o.spills;
        self.deltas_caught_up += o.deltas_caught_up;
        // Spark sums its operator timings over a stage's tasks.
        self.all_updates_ms += o.all_updates_ms;
        self.all_removals_ms += o.all_removals_ms;
    }
}

impl std::iter::Sum for StateStoreMetrics {
    /// Several stores' or partitions' counters, as [`StateStoreMetrics::add`] adds them.
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), |mut m, o| {
            m.add(&o);
            m
        })
    }
}

/// What [`StateStore::scan`] calls with each key and value; `false` stops the scan.
pub type Visit<'a> = &'a mut dyn FnMut(&[u8], &[u8]) -> Result<bool>;

/// What [`StateStore::get_many`] calls with each key found: its position, its value.
pub type Found<'a> = &'a mut dyn FnMut(usize, &[u8]) -> Result<()>;

/// What [`StateStore::update_many`] calls with each key's position and value (`None`:
/// absent), to write the key's new value into the (empty) buffer it is given.
pub type Update<'a> = &'a mut dyn FnMut(usize, Option<&[u8]>, &mut Vec<u8>) -> Result<()>;

/// One version of a store, being changed into the next.
pub trait StateStore {
    /// The version it was loaded at.
    fn version(&self) -> u64;
    /// The value of `key` (borrowed from a store in memory).
    fn get(&self, key: &[u8]) -> Result<Option<Cow<'_, [u8]>>>;
    /// Calls `found` with the position and value of each of `keys` present: many lookups
    /// at once, which a store in memory makes side by side so that their cache misses
    /// overlap.
    fn get_many(&self, keys: &[&[u8]], found: Found<'_>) -> Result<()> {
        for (i, k) in keys.iter().enumerate() {
            if let Some(v) = self.get(k)? {
                found(i, &v)?;
            }
        }
        Ok(())
    }
    /// Sets `key` to `value`.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Sets each key to its value, in order: many puts at once (a store in memory looks a
    /// run of keys up side by side before changing them, as [`Self::get_many`]).
    fn put_many(&mut self, entries: &[(&[u8], &[u8])]) -> Result<()> {
        for (k, v) in entries {
            self.put(k, v)?;
        }
        Ok(())
    }
    /// Sets each of `keys`, in order, to the value `update` makes of its value: a read
    /// and a put of each key (a join side's row count read and put back one more), which
    /// a store in memory makes with one lookup. A key given twice sees the value its first
    /// update put.
    fn update_many(&mut self, keys: &[&[u8]], update: Update<'_>) -> Result<()> {
        let mut value = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            let old = self.get(k)?.map(Cow::into_owned);
            value.clear();
            update(i, old.as_deref(), &mut value)?;
            self.put(k, &value)?;
        }
        Ok(())
    }
    /// Removes `key` (nothing when absent).
    fn remove(&mut self, key: &[u8]) -> Result<()>;
    /// Calls `f` with each key starting with `prefix` (all with an empty one) and its value,
    /// in key order, until it returns `false`. Changes made before the call are seen.
    fn scan(&self, prefix: &[u8], f: Visit<'_>) -> Result<()>;
    /// Calls `f` with every key and value, in no particular order (Spark's `iterator`),
    /// until it returns `false`. Changes made before the call are seen.
    fn for_each(&self, f: Visit<'_>) -> Result<()>;
    /// Makes the changes durable as version `version() + 1`, which it returns.
    fn commit(&mut self) -> Result<u64>;
    /// Drops the changes.
    fn abort(&mut self);
    /// Its counters.
    fn metrics(&self) -> StateStoreMetrics;
}

/// Keeps one (operator, partition)'s versions and hands out stores over them.
pub trait StateStoreProvider: Send {
    /// The store at `version` (0 is the empty state before the first batch); a version
    /// never committed, or removed as too old, is an error naming it.
    fn get_store(&mut self, version: u64) -> Result<Box<dyn StateStore + '_>>;
    /// The latest committed version (0 when none).
    fn latest_version(&self) -> Result<u64>;
    /// The counters of its last store.
    fn metrics(&self) -> StateStoreMetrics;
    /// Whether the memory pool refused its last store's growth mid-batch (the store's
    /// change failed with [`FerroError::MemoryLimit`]): the next `get_store` puts the state
    /// on disk, and the batch can run again there.
    fn refused_memory(&self) -> bool {
        false
    }
}

/// Runs a batch on `s` (`batch`), and again while it failed because the memory pool refused
/// a store's growth mid-way (`refused(s)`): each refusal moved that store to disk when the
/// batch opened it again, so a batch over `stores` stores runs at most `stores + 1` times.
/// The batch's stores must all be dropped unfinished when it fails (their changes undone).
pub fn run_moving_to_disk<S: ?Sized, T>(
    s: &mut S,
    stores: usize,
    mut batch: impl FnMut(&mut S) -> Result<T>,
    refused: impl Fn(&S) -> bool,
) -> Result<T> {
    let mut runs = 0;
    loop {
        runs += 1;
        match batch(s) {
            Err(FerroError::MemoryLimit(_)) if runs <= stores && refused(s) => {}
            out => return out,
        }
    }
}

/// Applies `puts` then `removes` to `version` of `provider`'s state and commits: the new
/// version (run again on disk if the memory pool refuses it mid-way).
pub fn commit_changes(
    provider: &mut dyn StateStoreProvider,
    version: u64,
    puts: &[(Vec<u8>, Vec<u8>)],
    removes: &[Vec<u8>],
) -> Result<u64> {
    run_moving_to_disk(
        provider,
        1,
        |p| {
            let mut store = p.get_store(version)?;
            for (k, v) in puts {
                store.put(k, v)?;
            }
            for k in removes {
                store.remove(k)?;
            }
            store.commit()
        },
        |p| p.refused_memory(),
    )
}

/// The provider `conf` chooses for store `id`, its directory made.
pub fn open_provider(
    id: &StateStoreId,
    conf: &StateStoreConf,
) -> Result<Box<dyn StateStoreProvider>> {
    Ok(match conf.provider {
        ProviderKind::Memory => {
            Box::new(spill::SpillingStateStoreProvider::open(id, conf.clone())?)
        }
        ProviderKind::Disk => Box::new(disk::DiskStateStoreProvider::open(id, conf.clone())?),
    })
}

/// The smallest of `versions`: the latest batch every one of several stores (or
/// partitions) committed, which a batch a crash cut between them runs again.
pub fn min_latest(versions: impl IntoIterator<Item = Result<u64>>) -> Result<u64> {
    let mut latest = u64::MAX;
    for v in versions {
        latest = latest.min(v?);
    }
    Ok(latest)
}

/// The name of `schema`'s column `name` as the schema spells it, found as Spark finds it
/// (an exact match, else the one column equal but for case; none is `[UNRESOLVED_COLUMN]`
/// with suggestions). An operator spells its columns so once, and then finds them by name.
pub fn column_name(schema: &arrow_schema::Schema, name: &str) -> Result<String> {
    let i = ferrospark_expr::resolve_column(schema, name)?;
    Ok(schema.field(i).name().clone())
}

/// Checks that batch `batch_id` may run on state whose latest version is `latest`: the next
/// batch, or the last one again (a retry after a crash).
pub fn check_batch(batch_id: u64, latest: u64) -> Result<()> {
    if batch_id + 1 < latest {
        return Err(FerroError::Config(format!(
            "batch {batch_id} is older than the last committed batch {}: only the last one can run again",
            latest - 1
        )));
    }
    if batch_id > latest {
        return Err(FerroError::Config(format!(
            "batch {batch_id} follows no committed batch (the next one is {latest})"
        )));
    }
    Ok(())
}

/// Every entry of `store` starting with `prefix`, in key order.
pub fn collect(store: &dyn StateStore, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut out = Vec::new();
    store.scan(prefix, &mut |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        Ok(true)
    })?;
    Ok(out)
}

/// The error of a state file or version that cannot be used.
pub(crate) fn state_error(path: &Path, message: impl std::fmt::Display) -> FerroError {
    FerroError::StateStore {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}
