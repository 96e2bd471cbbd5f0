//! The default provider, as Spark's `HDFSBackedStateStoreProvider`: each version's state is a
//! sorted map in memory; a commit writes the version's changes as a delta file, and a
//! snapshot of the whole map when `minDeltasForSnapshot` deltas have been written since the
//! last one. The latest committed version stays in memory (and one more, when an older one is
//! read); an older one is rebuilt from its latest snapshot and the deltas after it. A commit takes the version it started from
//! over and changes it in place (Spark copies it, which costs the whole state every
//! batch): re-running that batch after a crash reads it back from its files.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crate::state::Visit;
use ferrospark_common::{FerroError, Result};

use super::files::{self, Changes, FileKind};
use super::{
    state_error, StateStore, StateStoreConf, StateStoreId, StateStoreMetrics, StateStoreProvider,
};

/// One version's state.
type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// A loaded version: its map and the bytes of its keys and values.
#[derive(Debug, Clone, Default)]
struct Version {
    map: Map,
    bytes: u64,
}

/// Versions kept loaded.
const VERSIONS_IN_MEMORY: usize = 2;

/// State in memory, durable as delta and snapshot files in the store's directory.
#[derive(Debug)]
pub struct MemoryStateStoreProvider {
    dir: PathBuf,
    conf: StateStoreConf,
    loaded: BTreeMap<u64, Arc<Version>>,
    metrics: StateStoreMetrics,
}

impl MemoryStateStoreProvider {
    /// The provider of store `id` (its directory made).
    pub fn open(id: &StateStoreId, conf: StateStoreConf) -> Result<Self> {
        let dir = id.dir();
        std::fs::create_dir_all(&dir).map_err(|e| FerroError::io(&dir, e))?;
        Ok(Self {
            dir,
            conf,
            loaded: BTreeMap::new(),
            metrics: StateStoreMetrics::default(),
        })
    }

    /// The state at `version`: from memory, else its latest snapshot and the deltas after.
    fn load(&mut self, version: u64) -> Result<Arc<Version>> {
        if version == 0 {
            return Ok(Arc::new(Version::default()));
        }
        if let Some(m) = self.loaded.get(&version) {
            return Ok(m.clone());
        }
        let (deltas, snapshots) = files::list_versions(&self.dir)?;
        if !deltas.contains(&version) && !snapshots.contains(&version) {
            let latest = deltas.last().copied().unwrap_or(0);
            return Err(state_error(
                &self.dir,
                format!("version {version} was never committed (the latest is {latest}), or is older than the versions kept"),
            ));
        }
        let base = snapshots.iter().rev().find(|&&s| s <= version).copied();
        let mut map = Map::new();
        if let Some(s) = base {
            files::read(&self.dir, FileKind::Snapshot, s, &mut |k, v| {
                if let Some(v) = v {
                    map.insert(k, v);
                }
            })?;
        }
        for v in base.map_or(1, |s| s + 1)..=version {
            files::read(&self.dir, FileKind::Delta, v, &mut |k, val| match val {
                Some(val) => {
                    map.insert(k, val);
                }
                None => {
                    map.remove(&k);
                }
            })?;
        }
        self.metrics.loads_from_files += 1;
        let bytes = map.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        let loaded = Arc::new(Version { map, bytes });
        self.keep(version, loaded.clone());
        Ok(loaded)
    }

    fn keep(&mut self, version: u64, map: Arc<Version>) {
        self.loaded.insert(version, map);
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
        map: &Map,
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
                map.iter().map(|(k, v)| (k.as_slice(), Some(v.as_slice()))),
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

impl StateStoreProvider for MemoryStateStoreProvider {
    fn get_store(&mut self, version: u64) -> Result<Box<dyn StateStore + '_>> {
        let base = self.load(version)?;
        Ok(Box::new(MemoryStateStore {
            provider: self,
            version,
            base,
            changes: Changes::new(),
            state: StoreState::Updating,
        }))
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
        self.metrics.clone()
    }
}

/// Where a store is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoreState {
    Updating,
    Committed,
    Aborted,
}

/// One version of a [`MemoryStateStoreProvider`]'s state with the changes made to it.
struct MemoryStateStore<'a> {
    provider: &'a mut MemoryStateStoreProvider,
    version: u64,
    /// The loaded version, shared with the provider's cache.
    base: Arc<Version>,
    /// This version's changes over `base`.
    changes: Changes,
    state: StoreState,
}

impl MemoryStateStore<'_> {
    fn updating(&self) -> Result<()> {
        match self.state {
            StoreState::Updating => Ok(()),
            s => Err(FerroError::Internal(format!(
                "state store version {} used after it was {}",
                self.version,
                if s == StoreState::Committed {
                    "committed"
                } else {
                    "aborted"
                }
            ))),
        }
    }
}

impl StateStore for MemoryStateStore<'_> {
    fn version(&self) -> u64 {
        self.version
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(match self.changes.get(key) {
            Some(change) => change.clone(),
            None => self.base.map.get(key).cloned(),
        })
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.updating()?;
        self.changes.insert(key.to_vec(), Some(value.to_vec()));
        Ok(())
    }

    fn remove(&mut self, key: &[u8]) -> Result<()> {
        self.updating()?;
        let present = match self.changes.get(key) {
            Some(change) => change.is_some(),
            None => self.base.map.contains_key(key),
        };
        if present {
            self.changes.insert(key.to_vec(), None);
        }
        Ok(())
    }

    fn scan(&self, prefix: &[u8], f: Visit<'_>) -> Result<()> {
        // The base and the changes merged in key order; a change wins over the base.
        let range = (Bound::Included(prefix.to_vec()), Bound::Unbounded);
        let mut base = self
            .base
            .map
            .range(range.clone())
            .take_while(|(k, _)| k.starts_with(prefix))
            .peekable();
        let mut changed = self
            .changes
            .range(range)
            .take_while(|(k, _)| k.starts_with(prefix))
            .peekable();
        loop {
            let next = match (base.peek(), changed.peek()) {
                (None, None) => return Ok(()),
                (Some((bk, _)), Some((ck, _))) if bk < ck => base.next().map(|(k, v)| (k, Some(v))),
                (Some((bk, _)), Some((ck, _))) if bk == ck => {
                    base.next();
                    changed.next().map(|(k, v)| (k, v.as_ref()))
                }
                (Some(_), None) => base.next().map(|(k, v)| (k, Some(v))),
                _ => changed.next().map(|(k, v)| (k, v.as_ref())),
            };
            if let Some((k, Some(v))) = next {
                if !f(k, v)? {
                    return Ok(());
                }
            }
        }
    }

    fn commit(&mut self) -> Result<u64> {
        self.updating()?;
        let start = Instant::now();
        let next = self.version + 1;
        let p = &mut *self.provider;
        // A re-run of an earlier batch replaces its version: files of this version and of
        // later ones (what the interrupted run went on to commit) are stale.
        // One listing serves the whole commit: it is kept up to date below.
        let (mut deltas, mut snapshots) = files::list_versions(&p.dir)?;
        for d in deltas.iter().filter(|&&d| d > next) {
            let _ = std::fs::remove_file(FileKind::Delta.path(&p.dir, *d));
        }
        for s in snapshots.iter().filter(|&&s| s >= next) {
            let _ = std::fs::remove_file(FileKind::Snapshot.path(&p.dir, *s));
        }
        deltas.retain(|&d| d < next);
        snapshots.retain(|&s| s < next);
        files::write(
            &p.dir,
            FileKind::Delta,
            next,
            self.changes
                .iter()
                .map(|(k, v)| (k.as_slice(), v.as_deref())),
        )?;
        // The delta is the commit: from here on this store is spent, whatever follows.
        self.state = StoreState::Committed;
        // The cache gives the version up so that, unshared, it is changed in place.
        p.loaded.remove(&self.version);
        let base = std::mem::take(&mut self.base);
        let Version { mut map, mut bytes } =
            Arc::try_unwrap(base).unwrap_or_else(|shared| shared.as_ref().clone());
        let (mut updated, mut removed) = (0, 0);
        for (k, v) in std::mem::take(&mut self.changes) {
            let size = k.len() as u64;
            let old = match v {
                Some(v) => {
                    updated += 1;
                    bytes += size + v.len() as u64;
                    map.insert(k, v)
                }
                None => {
                    removed += 1;
                    map.remove(&k)
                }
            };
            if let Some(old) = old {
                bytes -= size + old.len() as u64;
            }
        }
        p.metrics.deltas_written += 1;
        deltas.push(next);
        // Snapshots and clean-up are upkeep, as in Spark: a failure leaves the committed
        // version readable from its deltas and is tried again at the next commit.
        let _ = p.maintain(next, &map, deltas, snapshots);
        // Only the new version stays loaded: an older one would stay pinned, and after a
        // re-run of this batch versions after it are stale.
        p.loaded.clear();
        p.metrics.num_keys = map.len() as u64;
        p.metrics.memory_bytes = bytes;
        p.metrics.rows_updated = updated;
        p.metrics.rows_removed = removed;
        p.keep(next, Arc::new(Version { map, bytes }));
        p.metrics.commit_ms = start.elapsed().as_secs_f64() * 1000.0;
        p.metrics.disk_bytes = files::dir_bytes(&p.dir);
        Ok(next)
    }

    fn abort(&mut self) {
        self.changes.clear();
        self.state = StoreState::Aborted;
    }

    fn metrics(&self) -> StateStoreMetrics {
        let mut m = self.provider.metrics.clone();
        if self.state == StoreState::Updating {
            m.rows_updated = self.changes.values().filter(|v| v.is_some()).count() as u64;
            m.rows_removed = self.changes.values().filter(|v| v.is_none()).count() as u64;
        }
        m
    }
}
