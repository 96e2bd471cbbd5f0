//! The default provider, as Spark's `HDFSBackedStateStoreProvider`: each version's state is a
//! hash map in memory; a commit writes the version's changes as a delta file, and a snapshot
//! of the whole map when `minDeltasForSnapshot` deltas have been written since the last one.
//!
//! A store changes the map it was loaded with in place and logs each key's first old value, so
//! that an abort (or an error that drops the store) puts the version back as it was. The commit
//! makes the version's delta from the map: the map's arena is written in order, so the entries
//! it gained since the store opened that are still live are the version's puts, each key once
//! with its last value; the keys removed are listed as they go. Spark's delta stream holds
//! every change as made instead (a join row put, then put again marked matched, twice): the
//! same version when applied, and writing each change as it was made cost a join batch 9-10%
//! more CPU than writing the outcome once. The undo log finds a key again by an arena entry
//! holding it. Spark copies the map for every version instead, which costs the whole state
//! every batch. The latest committed version stays in memory (and one more, when an older one
//! is read); an older one is rebuilt from its latest snapshot and the deltas after it, which is
//! also how a batch re-run after a crash reads the version it started from.
//!
//! As in Spark, a hash map has no order: a prefix scan is served by an index of keys by their
//! prefix when the store asks for one ([`StateStoreConf::prefix_index`], Spark's
//! `PrefixScannableHDFSBackedStateStoreMap`); [`StateStore::scan`] otherwise collects and
//! sorts what it visits, and [`StateStore::for_each`] visits in no order at all.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Instant;

use hashbrown::HashMap;

use super::byte_map::{Before, ByteMap, Bytes, Entry, Mark};
use crate::state::{Found, Update, Visit};
use ferrospark_common::memory::MemoryReservation;
use ferrospark_common::{FerroError, Result};

use super::files::{self, FileBuffer, FileKind};
use super::{
    state_error, StateStore, StateStoreConf, StateStoreId, StateStoreMetrics, StateStoreProvider,
};

/// The prefix a prefix-indexed key is scanned by: its length (`u32`, big-endian) and that
/// many bytes after it. `None` for a key not laid out so.
fn key_prefix(key: &[u8]) -> Option<&[u8]> {
    let len = u32::from_be_bytes(key.get(..4)?.try_into().ok()?) as usize;
    key.get(..4usize.checked_add(len)?)
}

/// Bytes an indexed key costs beyond its own: its box and its place in a B-tree node
/// (an estimate: what the memory pool is told, not an allocator's count).
const INDEXED_KEY_BYTES: u64 = 32;
/// Bytes a prefix costs beyond its own: its box, its set and its hash-table slot.
const INDEXED_PREFIX_BYTES: u64 = 64;

/// The keys of each prefix, in order (a store's index for prefix scans).
#[derive(Debug, Default)]
struct PrefixIndex {
    keys: HashMap<Bytes, BTreeSet<Bytes>>,
    /// Bytes it holds, as estimated for the memory pool.
    bytes: u64,
}

impl PrefixIndex {
    /// Enters `key` (`present`) or takes it out.
    fn set(&mut self, key: &[u8], present: bool) {
        let Some(prefix) = key_prefix(key) else {
            return;
        };
        let key_bytes = key.len() as u64 + INDEXED_KEY_BYTES;
        match (self.keys.get_mut(prefix), present) {
            (Some(keys), true) => {
                if keys.insert(key.into()) {
                    self.bytes += key_bytes;
                }
            }
            (None, true) => {
                self.keys
                    .insert(prefix.into(), BTreeSet::from([key.into()]));
                self.bytes += key_bytes + prefix.len() as u64 + INDEXED_PREFIX_BYTES;
            }
            (Some(keys), false) => {
                if keys.remove(key) {
                    self.bytes -= key_bytes;
                }
                if keys.is_empty() {
                    self.keys.remove(prefix);
                    self.bytes -= prefix.len() as u64 + INDEXED_PREFIX_BYTES;
                }
            }
            (None, false) => {}
        }
    }
}

/// One version's state.
#[derive(Debug, Default)]
struct Version {
    map: ByteMap,
    /// The store's index for prefix scans, when it asks for one.
    prefixes: Option<PrefixIndex>,
    /// The checksum of the version's delta file as this map knows it (`None`: unknown), so a
    /// later version can be reached by applying the deltas after it, once the file is known
    /// to be the same.
    delta_checksum: Option<u32>,
}

impl Version {
    fn empty(indexed: bool) -> Self {
        Self {
            prefixes: indexed.then(PrefixIndex::default),
            ..Self::default()
        }
    }

    /// Bytes it holds in memory: the map's arena and table, and its index.
    fn footprint(&self) -> u64 {
        self.map.footprint() + self.prefixes.as_ref().map_or(0, |p| p.bytes)
    }

    /// Enters `key` in the prefix index (`present`) or takes it out, when there is one.
    fn index(&mut self, key: &[u8], present: bool) {
        if let Some(index) = self.prefixes.as_mut() {
            index.set(key, present);
        }
    }

    /// Sets `key` (whose hash is `hash`: [`ByteMap::hash`]) to `value` as a change of
    /// version `version`.
    fn insert(&mut self, hash: u64, key: &[u8], value: &[u8], version: u64) -> Before {
        let before = self.map.insert_hashed(hash, key, value, version);
        self.indexed(key, &before);
        before
    }

    /// Sets `key` to what `make` makes of its value (with one lookup), as a change of
    /// version `version`.
    fn upsert<'v>(
        &mut self,
        hash: u64,
        key: &[u8],
        version: u64,
        make: impl FnOnce(Option<&[u8]>) -> Result<&'v [u8]>,
    ) -> Result<Before> {
        let before = self.map.upsert_hashed(hash, key, version, make)?;
        self.indexed(key, &before);
        Ok(before)
    }

    /// Indexes `key` if a change found it absent (only such a key is new to the index).
    fn indexed(&mut self, key: &[u8], before: &Before) {
        if matches!(before, Before::First { old: None, .. }) {
            self.index(key, true);
        }
    }

    /// Removes `key` as a change of version `version`: what it replaced and the entry that
    /// held it (`None`: it was absent).
    fn remove(&mut self, key: &[u8], version: u64) -> Option<(Before, Entry)> {
        let removed = self.map.remove(key, version)?;
        self.index(key, false);
        Some(removed)
    }

    /// Puts `key` back to `old`.
    fn restore(&mut self, key: &[u8], old: Option<Entry>) {
        self.index(key, old.is_some());
        self.map.restore(key, old);
    }

    /// Applies one record of a file.
    fn apply(&mut self, key: &[u8], value: Option<&[u8]>) {
        self.index(key, value.is_some());
        self.map.load(key, value);
    }
}

/// Keys a [`StateStore::put_many`] or [`StateStore::update_many`] looks up before changing
/// them: their slots and entries (a few cache lines each) stay well inside a core's L2 cache
/// until the changes reach them.
const TOUCHED_AT_ONCE: usize = 2048;

/// Versions kept loaded.
const VERSIONS_IN_MEMORY: usize = 2;

/// State in memory, durable as delta and snapshot files in the store's directory.
#[derive(Debug)]
pub struct MemoryStateStoreProvider {
    dir: PathBuf,
    conf: StateStoreConf,
    /// Loaded versions no store is changing.
    loaded: BTreeMap<u64, Version>,
    metrics: StateStoreMetrics,
    /// A spent store's delta buffer and undo log, empty, for the next store: a batch's
    /// changes fill memory the last batch's already had, without growing into it again.
    buffers: (FileBuffer, Vec<(Entry, Option<Entry>)>),
}

impl MemoryStateStoreProvider {
    /// The provider of store `id` (its directory made).
    pub fn open(id: &StateStoreId, conf: StateStoreConf) -> Result<Self> {
        let codec = conf.codec;
        let dir = id.dir();
        std::fs::create_dir_all(&dir).map_err(|e| FerroError::io(&dir, e))?;
        Ok(Self {
            dir,
            conf,
            loaded: BTreeMap::new(),
            metrics: StateStoreMetrics::default(),
            buffers: (FileBuffer::new(codec), Vec::new()),
        })
    }

    /// The state at `version`, taken from memory, else read from its latest snapshot and the
    /// deltas after it.
    fn take(&mut self, version: u64) -> Result<Version> {
        let indexed = self.conf.prefix_index;
        if version == 0 {
            return Ok(Version::empty(indexed));
        }
        if let Some(m) = self.loaded.remove(&version) {
            return Ok(m);
        }
        let (deltas, snapshots) = files::list_versions(&self.dir)?;
        if let Some(state) = self.catch_up(version, &deltas)? {
            return Ok(state);
        }
        if !deltas.contains(&version) && !snapshots.contains(&version) {
            let latest = deltas.last().copied().unwrap_or(0);
            return Err(state_error(
                &self.dir,
                format!("version {version} was never committed (the latest is {latest}), or is older than the versions kept"),
            ));
        }
        let base = snapshots.iter().rev().find(|&&s| s <= version).copied();
        let mut state = Version::empty(indexed);
        if let Some(s) = base {
            files::read(&self.dir, FileKind::Snapshot, s, &mut |k, v| {
                state.apply(k, v)
            })?;
        }
        for v in base.map_or(1, |s| s + 1)..=version {
            files::read(&self.dir, FileKind::Delta, v, &mut |k, val| {
                state.apply(k, val)
            })?;
        }
        state.delta_checksum = files::checksum(&self.dir, FileKind::Delta, version);
        state.map.compact_if_wasteful();
        self.metrics.loads_from_files += 1;
        Ok(state)
    }

    /// `version` made from an older version kept in memory and the deltas after it, when
    /// that version's delta file is still the one it was made with (another process may have
    /// committed the versions since: a partition that moved between Spark's Python workers
    /// and back). `None` when no kept version can be used.
    fn catch_up(&mut self, version: u64, deltas: &[u64]) -> Result<Option<Version>> {
        let Some((&from, kept)) = self.loaded.range(..version).next_back() else {
            return Ok(None);
        };
        let same = kept.delta_checksum.is_some()
            && kept.delta_checksum == files::checksum(&self.dir, FileKind::Delta, from);
        if !same || !(from + 1..=version).all(|v| deltas.binary_search(&v).is_ok()) {
            return Ok(None);
        }
        let Some(mut state) = self.loaded.remove(&from) else {
            return Ok(None);
        };
        for v in from + 1..=version {
            state.delta_checksum = Some(files::read(
                &self.dir,
                FileKind::Delta,
                v,
                &mut |k, val| state.apply(k, val),
            )?);
        }
        state.map.compact_if_wasteful();
        self.metrics.deltas_caught_up += version - from;
        Ok(Some(state))
    }

    /// Bytes the state at `version` holds in memory (loaded and kept): its entries with
    /// their headers, dead ones not yet compacted away, its hash table and prefix index.
    pub(crate) fn version_footprint(&mut self, version: u64) -> Result<u64> {
        let state = self.take(version)?;
        let bytes = state.footprint();
        self.keep(version, state);
        Ok(bytes)
    }

    /// What `f` makes of every entry at `version` (loaded and kept), in no order.
    pub(crate) fn with_entries<T>(
        &mut self,
        version: u64,
        f: impl FnOnce(&mut dyn Iterator<Item = (&[u8], &[u8])>) -> Result<T>,
    ) -> Result<T> {
        let state = self.take(version)?;
        let out = f(&mut state.map.iter());
        self.keep(version, state);
        out
    }

    /// Drops every version kept in memory.
    pub(crate) fn forget(&mut self) {
        self.loaded.clear();
    }

    fn keep(&mut self, version: u64, state: Version) {
        self.loaded.insert(version, state);
        while self.loaded.len() > VERSIONS_IN_MEMORY {
            if let Some(&oldest) = self.loaded.keys().next() {
                self.loaded.remove(&oldest);
            }
        }
    }

    /// After committing `version`: a snapshot when enough deltas came since the last, and
    /// the files no kept version needs removed.
    /// `deltas` and `snapshots`: the directory's versions, `version`'s delta among them.
    fn maintain(
        &mut self,
        version: u64,
        state: &Version,
        deltas: Vec<u64>,
        mut snapshots: Vec<u64>,
    ) -> Result<()> {
        let last_snapshot = snapshots.last().copied().unwrap_or(0);
        let since = deltas
            .iter()
            .filter(|&&d| d > last_snapshot && d <= version)
            .count() as u64;
        if since >= self.conf.min_deltas_for_snapshot {
            files::write(
                &self.dir,
                FileKind::Snapshot,
                version,
                self.conf.codec,
                state.map.iter().map(|(k, v)| (k, Some(v))),
            )?;
            self.metrics.snapshots_written += 1;
            snapshots.push(version);
        }
        // Keep every version from `version - retain` on: from the latest snapshot at or
        // before the oldest of them, with the deltas after it.
        let Some(oldest) = version.checked_sub(self.conf.min_versions_to_retain) else {
            return Ok(());
        };
        let Some(&base) = snapshots.iter().rev().find(|&&s| s <= oldest) else {
            return Ok(());
        };
        for d in deltas.into_iter().filter(|&d| d <= base) {
            let _ = std::fs::remove_file(FileKind::Delta.path(&self.dir, d));
        }
        for s in snapshots.into_iter().filter(|&s| s < base) {
            let _ = std::fs::remove_file(FileKind::Snapshot.path(&self.dir, s));
        }
        Ok(())
    }
}

impl MemoryStateStoreProvider {
    /// The store at `version`, its growth during the batch held from `budget`'s reservation:
    /// a change the pool refuses fails with [`FerroError::MemoryLimit`] and marks `budget`
    /// refused (the batch's changes are undone when the store is dropped).
    pub(crate) fn get_store_within<'a>(
        &'a mut self,
        version: u64,
        budget: Option<&'a mut StoreBudget>,
    ) -> Result<Box<dyn StateStore + 'a>> {
        let state = self.take(version)?;
        let spare = (FileBuffer::new(self.conf.codec), Vec::new());
        let (delta, undo) = std::mem::replace(&mut self.buffers, spare);
        Ok(Box::new(MemoryStateStore {
            provider: self,
            version,
            since: state.map.mark(),
            state,
            delta,
            undo,
            removed_keys: Vec::new(),
            updated: 0,
            removed: 0,
            status: StoreStatus::Updating,
            budget,
        }))
    }
}

/// The memory a store in memory may hold, from the query's pool, and whether the pool
/// refused it more.
#[derive(Debug)]
pub(crate) struct StoreBudget {
    pub(crate) reservation: MemoryReservation,
    pub(crate) refused: bool,
}

impl StateStoreProvider for MemoryStateStoreProvider {
    fn get_store(&mut self, version: u64) -> Result<Box<dyn StateStore + '_>> {
        self.get_store_within(version, None)
    }

    fn latest_version(&self) -> Result<u64> {
        let (deltas, snapshots) = files::list_versions(&self.dir)?;
        Ok(deltas
            .last()
            .copied()
            .max(snapshots.last().copied())
            .unwrap_or(0))
    }

    fn metrics(&self) -> StateStoreMetrics {
        StateStoreMetrics {
            // Read when asked, not at every commit.
            disk_bytes: files::dir_bytes(&self.dir),
            ..self.metrics.clone()
        }
    }
}

/// Where a store is in its life.
///
/// ```text
///   Updating ──commit()──▶ Committed   (the map, changed, kept as version + 1)
///      │
///      └──abort() / drop──▶ Aborted    (the map, undone, kept as the version it was)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoreStatus {
    Updating,
    Committed,
    Aborted,
}

/// One version of a [`MemoryStateStoreProvider`]'s state, being changed into the next.
struct MemoryStateStore<'a> {
    provider: &'a mut MemoryStateStoreProvider,
    version: u64,
    /// The state, with this version's changes made.
    state: Version,
    /// Where the map's arena ended when the store was opened: the version's puts are the
    /// live entries after it.
    since: Mark,
    /// The delta file, made by the commit.
    delta: FileBuffer,
    /// Each changed key (an arena entry holding its bytes) and its value before
    /// that change (`None`: absent), in the order of the changes. A key removed and put
    /// again comes twice.
    undo: Vec<(Entry, Option<Entry>)>,
    /// Entries holding the keys removed in this version, in the order removed.
    removed_keys: Vec<Entry>,
    /// Puts and removes made (Spark's `numUpdatedStateRows` / `numRemovedStateRows`).
    updated: u64,
    removed: u64,
    status: StoreStatus,
    /// The pool's share the version may grow into, when the state moves to disk past it.
    budget: Option<&'a mut StoreBudget>,
}

impl MemoryStateStore<'_> {
    /// Holds what the store has grown to from its budget; refused, the budget is marked and
    /// the change fails (the batch runs again on disk: `SpillingStateStoreProvider`).
    fn within_budget(&mut self) -> Result<()> {
        let Some(budget) = self.budget.as_deref_mut() else {
            return Ok(());
        };
        let undo = self.undo.capacity() * std::mem::size_of::<(Entry, Option<Entry>)>()
            + self.removed_keys.capacity() * std::mem::size_of::<Entry>();
        let bytes = self.state.footprint() + undo as u64;
        let held = budget.reservation.size();
        // Grown in steps of an eighth, so a batch asks the pool a few dozen times, not at
        // every put.
        if bytes <= held || budget.reservation.try_resize(bytes + bytes / 8) {
            return Ok(());
        }
        budget.refused = true;
        Err(FerroError::MemoryLimit(format!(
            "state store {} needs {bytes} bytes for batch {} but ferrospark.memory.limit is \
             reached: its state moves to disk and the batch runs again there",
            self.provider.dir.display(),
            self.version,
        )))
    }

    fn updating(&self) -> Result<()> {
        match self.status {
            StoreStatus::Updating => Ok(()),
            s => Err(FerroError::Internal(format!(
                "state store version {} used after it was {}",
                self.version,
                if s == StoreStatus::Committed {
                    "committed"
                } else {
                    "aborted"
                }
            ))),
        }
    }

    /// A put of `key`, whose hash is `hash`: made, logged.
    fn put_hashed(&mut self, hash: u64, key: &[u8], value: &[u8]) -> Result<()> {
        let before = self.state.insert(hash, key, value, self.next());
        self.log(before);
        self.updated += 1;
        Ok(())
    }

    fn log(&mut self, before: Before) {
        if let Before::First { old, key } = before {
            self.undo.push((key, old));
        }
    }

    /// Makes the version's delta file's records: each key put in the version, once, with
    /// the value it was last put (the live entries the map's arena has gained since the
    /// store opened), then each key removed in it that is absent now. Applied in order to
    /// the version before, they make this one, as every change they stand for would.
    fn fill_delta(&mut self) -> Result<()> {
        let map = &self.state.map;
        for (k, v) in map.live_since(self.since) {
            self.delta.push(k, Some(v))?;
        }
        for &e in &self.removed_keys {
            let k = map.key_of(e);
            if map.get(k).is_none() {
                self.delta.push(k, None)?;
            }
        }
        Ok(())
    }

    /// Empties the delta buffer and undo log (the file written or the changes undone) and
    /// gives them to the provider for its next store.
    fn hand_back_buffers(&mut self) {
        self.delta.clear();
        self.undo.clear();
        self.provider.buffers = (
            std::mem::replace(&mut self.delta, FileBuffer::new(self.provider.conf.codec)),
            std::mem::take(&mut self.undo),
        );
    }

    /// The hashes of a run of keys about to change, their slots and entries brought into
    /// cache by lookups made side by side (their misses overlapping); the changes after
    /// find them there, hashed once for both.
    fn hashed_in_cache(&self, keys: &[&[u8]]) -> Vec<u64> {
        let hashes = self.state.map.hashes(keys);
        std::hint::black_box(self.state.map.find_hashed(keys, &hashes));
        hashes
    }

    /// The version this store's changes make.
    fn next(&self) -> u64 {
        self.version + 1
    }

    /// Visits `entries` in key order.
    fn visit_sorted<'e>(mut entries: Vec<(&'e [u8], &'e [u8])>, f: Visit<'_>) -> Result<()> {
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (k, v) in entries {
            if !f(k, v)? {
                break;
            }
        }
        Ok(())
    }
}

impl StateStore for MemoryStateStore<'_> {
    fn version(&self) -> u64 {
        self.version
    }

    fn get(&self, key: &[u8]) -> Result<Option<Cow<'_, [u8]>>> {
        Ok(self.state.map.get(key).map(Cow::Borrowed))
    }

    fn get_many(&self, keys: &[&[u8]], found: Found<'_>) -> Result<()> {
        let map = &self.state.map;
        for (i, place) in map.find_many(keys).into_iter().enumerate() {
            if let Some(p) = place {
                found(i, map.value(p))?;
            }
        }
        Ok(())
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.updating()?;
        self.put_hashed(self.state.map.hash(key), key, value)?;
        self.within_budget()
    }

    fn put_many(&mut self, entries: &[(&[u8], &[u8])]) -> Result<()> {
        self.updating()?;
        self.undo.reserve(entries.len());
        for run in entries.chunks(TOUCHED_AT_ONCE) {
            let keys: Vec<&[u8]> = run.iter().map(|(k, _)| *k).collect();
            let hashes = self.hashed_in_cache(&keys);
            for ((k, v), hash) in run.iter().zip(hashes) {
                self.put_hashed(hash, k, v)?;
            }
            self.within_budget()?;
        }
        Ok(())
    }

    fn update_many(&mut self, keys: &[&[u8]], update: Update<'_>) -> Result<()> {
        self.updating()?;
        self.undo.reserve(keys.len());
        let mut value = Vec::new();
        let version = self.next();
        for (run_at, run) in keys.chunks(TOUCHED_AT_ONCE).enumerate() {
            let hashes = self.hashed_in_cache(run);
            for ((i, k), hash) in run.iter().enumerate().zip(hashes) {
                let at = run_at * TOUCHED_AT_ONCE + i;
                let buf = &mut value;
                let update = &mut *update;
                let before = self.state.upsert(hash, k, version, move |old| {
                    buf.clear();
                    update(at, old, buf)?;
                    // Moved out (`{buf}`), not reborrowed: the value outlives the closure.
                    let made: &Vec<u8> = { buf };
                    Ok(made.as_slice())
                })?;
                self.log(before);
                self.updated += 1;
            }
            self.within_budget()?;
        }
        Ok(())
    }

    fn remove(&mut self, key: &[u8]) -> Result<()> {
        self.updating()?;
        if let Some((before, held)) = self.state.remove(key, self.next()) {
            self.log(before);
            self.removed_keys.push(held);
            self.removed += 1;
        }
        Ok(())
    }

    fn scan(&self, prefix: &[u8], f: Visit<'_>) -> Result<()> {
        let map = &self.state.map;
        if let Some(index) = &self.state.prefixes {
            if !prefix.is_empty() && key_prefix(prefix) == Some(prefix) {
                for k in index.keys.get(prefix).into_iter().flatten() {
                    if let Some(v) = map.get(k) {
                        if !f(k, v)? {
                            break;
                        }
                    }
                }
                return Ok(());
            }
        }
        Self::visit_sorted(
            map.iter().filter(|(k, _)| k.starts_with(prefix)).collect(),
            f,
        )
    }

    fn for_each(&self, f: Visit<'_>) -> Result<()> {
        for (k, v) in self.state.map.iter() {
            if !f(k, v)? {
                break;
            }
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<u64> {
        self.updating()?;
        let start = Instant::now();
        let next = self.next();
        // A re-run of an earlier batch replaces its version: files of this version and of
        // later ones (what the interrupted run went on to commit) are stale.
        // One listing serves the whole commit: it is kept up to date below.
        let dir = self.provider.dir.clone();
        let (mut deltas, mut snapshots) = files::list_versions(&dir)?;
        for d in deltas.iter().filter(|&&d| d > next) {
            let _ = std::fs::remove_file(FileKind::Delta.path(&dir, *d));
        }
        for s in snapshots.iter().filter(|&&s| s >= next) {
            let _ = std::fs::remove_file(FileKind::Snapshot.path(&dir, *s));
        }
        deltas.retain(|&d| d < next);
        snapshots.retain(|&s| s < next);
        self.fill_delta()?;
        let checksum = self.delta.write(&dir, FileKind::Delta, next)?;
        // The delta is the commit: from here on this store is spent, whatever follows.
        self.status = StoreStatus::Committed;
        self.hand_back_buffers();
        let mut state = std::mem::take(&mut self.state);
        state.map.compact_if_wasteful();
        state.delta_checksum = Some(checksum);
        let p = &mut *self.provider;
        p.metrics.deltas_written += 1;
        deltas.push(next);
        // Snapshots and clean-up are upkeep, as in Spark: a failure leaves the committed
        // version readable from its deltas and is tried again at the next commit.
        let _ = p.maintain(next, &state, deltas, snapshots);
        // Only the new version stays loaded: an older one would stay pinned, and after a
        // re-run of this batch versions after it are stale.
        p.loaded.clear();
        p.metrics.num_keys = state.map.len() as u64;
        p.metrics.memory_bytes = state.footprint();
        p.metrics.rows_updated = self.updated;
        p.metrics.rows_removed = self.removed;
        p.keep(next, state);
        p.metrics.commit_ms = start.elapsed().as_secs_f64() * 1000.0;
        Ok(next)
    }

    fn abort(&mut self) {
        if self.status != StoreStatus::Updating {
            return;
        }
        self.status = StoreStatus::Aborted;
        // Latest change first, so a key logged twice ends at its first old value.
        for &(at, old) in self.undo.iter().rev() {
            // Copied out: the restore changes the arena the key is read from.
            let key = self.state.map.key_of(at).to_vec();
            self.state.restore(&key, old);
        }
        self.hand_back_buffers();
        let mut state = std::mem::take(&mut self.state);
        state.map.compact_if_wasteful();
        self.provider.keep(self.version, state);
    }

    fn metrics(&self) -> StateStoreMetrics {
        let mut m = self.provider.metrics();
        if self.status == StoreStatus::Updating {
            m.rows_updated = self.updated;
            m.rows_removed = self.removed;
        }
        m
    }
}

impl Drop for MemoryStateStore<'_> {
    /// A store dropped unfinished (an error in the batch) leaves its version as it was.
    fn drop(&mut self) {
        self.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `len ++ prefix ++ rest`, as an indexed store's keys are.
    fn key(prefix: &[u8], rest: &[u8]) -> Vec<u8> {
        let mut k = (prefix.len() as u32).to_be_bytes().to_vec();
        k.extend_from_slice(prefix);
        k.extend_from_slice(rest);
        k
    }

    #[test]
    fn a_prefix_index_counts_what_it_holds_and_nothing_once_empty() {
        let mut index = PrefixIndex::default();
        let keys: Vec<Vec<u8>> = (0..30u8).map(|i| key(&[i % 4; 3], &[i; 5])).collect();
        for k in &keys {
            index.set(k, true);
            index.set(k, true);
        }
        let want: u64 = keys
            .iter()
            .map(|k| k.len() as u64 + INDEXED_KEY_BYTES)
            .sum::<u64>()
            + 4 * (7 + INDEXED_PREFIX_BYTES);
        assert_eq!(index.bytes, want, "each key and prefix counted once");
        for k in &keys {
            index.set(k, false);
            index.set(k, false);
        }
        assert_eq!(index.bytes, 0);
        assert!(index.keys.is_empty());
    }
}
