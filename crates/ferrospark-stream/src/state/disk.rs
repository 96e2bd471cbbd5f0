//! The provider for state larger than memory, in place of Spark's
//! `RocksDBStateStoreProvider`: the state lives in an embedded SQLite file (`state.db` in the
//! store's directory), every version's rows kept side by side.
//!
//! ```text
//!   state(key, version, value)   value NULL = removed at that version
//!   the value of k at version v = its row with the largest version <= v
//!   meta: committed (latest version), oldest (first version still loadable), keys
//! ```
//! A store of version `v` writes its changes as rows of version `v + 1` inside one SQLite
//! transaction, left open until commit (so its own reads see them) and rolled back by an
//! abort or a crash. Opening version `v` for writing first drops rows of later versions (a
//! batch re-run replaces what the interrupted run committed). Rows no version from `oldest`
//! on can see are deleted at commit. SQLite's page cache is bounded, so the state may be far
//! larger than memory.

use std::path::PathBuf;
use std::time::Instant;

use crate::state::{Update, Visit};
use ferrospark_common::{FerroError, Result};
use rusqlite::{params, Connection, OptionalExtension};

use super::{
    state_error, StateStore, StateStoreConf, StateStoreId, StateStoreMetrics, StateStoreProvider,
};

/// SQLite's page cache, in KiB (negative `cache_size` is KiB).
const CACHE_KIB: i64 = 64 * 1024;

/// State in an embedded SQLite file.
#[derive(Debug)]
pub struct DiskStateStoreProvider {
    path: PathBuf,
    conn: Connection,
    conf: StateStoreConf,
    metrics: StateStoreMetrics,
}

fn sql_error(path: &std::path::Path) -> impl Fn(rusqlite::Error) -> FerroError + '_ {
    move |e| {
        state_error(path, format!("{e}; if the file is damaged, restore the checkpoint or start the query with a new one"))
    }
}

/// The state file at `path`, its tables made.
fn setup(path: &std::path::Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -{CACHE_KIB};
         CREATE TABLE IF NOT EXISTS state (key BLOB NOT NULL, version INTEGER NOT NULL, value BLOB,
             PRIMARY KEY (key, version)) WITHOUT ROWID;
         CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
         INSERT OR IGNORE INTO meta VALUES ('committed', 0), ('oldest', 0), ('keys', 0);"
    ))?;
    Ok(conn)
}

/// The state file's name in a store's directory.
pub(crate) const DB_FILE: &str = "state.db";

impl DiskStateStoreProvider {
    /// The provider of store `id` (its directory and file made).
    pub fn open(id: &StateStoreId, conf: StateStoreConf) -> Result<Self> {
        let dir = id.dir();
        std::fs::create_dir_all(&dir).map_err(|e| FerroError::io(&dir, e))?;
        let path = dir.join(DB_FILE);
        let conn = setup(&path).map_err(sql_error(&path))?;
        Ok(Self {
            path,
            conn,
            conf,
            metrics: StateStoreMetrics::default(),
        })
    }

    /// The provider of store `id` whose state starts as `entries` at `version` (the oldest
    /// it can load): a store moving from memory to disk. The file is built under a temporary
    /// name and renamed into place, so a crash leaves the move whole or not begun.
    pub(crate) fn import(
        id: &StateStoreId,
        conf: StateStoreConf,
        version: u64,
        entries: &mut dyn Iterator<Item = (&[u8], &[u8])>,
    ) -> Result<Self> {
        let dir = id.dir();
        let tmp = dir.join(format!(".{DB_FILE}.tmp"));
        remove_db(&tmp);
        {
            let conn = setup(&tmp).map_err(sql_error(&tmp))?;
            let filled = (|| -> rusqlite::Result<()> {
                conn.execute_batch("BEGIN IMMEDIATE")?;
                let mut keys = 0i64;
                {
                    let mut st = conn
                        .prepare("INSERT INTO state (key, version, value) VALUES (?1, ?2, ?3)")?;
                    for (k, v) in entries {
                        st.execute(params![k, version as i64, v])?;
                        keys += 1;
                    }
                }
                conn.execute(
                    "UPDATE meta SET value = CASE name WHEN 'keys' THEN ?2 ELSE ?1 END",
                    params![version as i64, keys],
                )?;
                conn.execute_batch("COMMIT; PRAGMA wal_checkpoint(TRUNCATE);")
            })();
            if let Err(e) = filled {
                drop(conn);
                remove_db(&tmp);
                return Err(sql_error(&tmp)(e));
            }
        }
        ferrospark_common::atomic_file::rename_into_place(&tmp, &dir.join(DB_FILE))?;
        remove_db(&tmp);
        Self::open(id, conf)
    }

    /// The oldest version it can load.
    pub(crate) fn oldest(&self) -> Result<u64> {
        self.meta("oldest")
    }

    fn meta(&self, name: &str) -> Result<u64> {
        let v: i64 = self
            .conn
            .query_row("SELECT value FROM meta WHERE name = ?1", [name], |r| {
                r.get(0)
            })
            .map_err(sql_error(&self.path))?;
        Ok(v as u64)
    }
}

impl StateStoreProvider for DiskStateStoreProvider {
    fn get_store(&mut self, version: u64) -> Result<Box<dyn StateStore + '_>> {
        let (committed, oldest) = (self.meta("committed")?, self.meta("oldest")?);
        if version > committed || version < oldest {
            return Err(state_error(
                &self.path,
                format!(
                    "version {version} cannot be loaded: versions {oldest} to {committed} are kept"
                ),
            ));
        }
        // Read before the transaction opens, so no failure leaves it open.
        let keys_now = self.meta("keys")?;
        let path = self.path.clone();
        let err = sql_error(&path);
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(&err)?;
        let keys = if version < committed {
            // A re-run: the later versions go, and the key count is that of `version`.
            let dropped = self
                .conn
                .execute("DELETE FROM state WHERE version > ?1", [version as i64])
                .and_then(|_| count_keys(&self.conn, version));
            match dropped {
                Ok(n) => n,
                Err(e) => {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    return Err(err(e));
                }
            }
        } else {
            keys_now
        };
        Ok(Box::new(DiskStateStore {
            provider: self,
            version,
            keys,
            updated: 0,
            removed: 0,
            state: Open::Updating,
        }))
    }

    fn latest_version(&self) -> Result<u64> {
        self.meta("committed")
    }

    fn metrics(&self) -> StateStoreMetrics {
        // Read when asked, not at every commit.
        let on_disk = super::files::dir_bytes(self.path.parent().unwrap_or(&self.path));
        StateStoreMetrics {
            memory_bytes: (CACHE_KIB as u64 * 1024).min(on_disk),
            disk_bytes: on_disk,
            ..self.metrics.clone()
        }
    }
}

/// Removes the SQLite file at `path` and its journals, if there.
fn remove_db(path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(std::path::PathBuf::from(p));
    }
}

/// Keys holding a value at `version`.
fn count_keys(c: &Connection, version: u64) -> rusqlite::Result<u64> {
    let n: i64 = c.query_row(
        "SELECT count(*) FROM state s WHERE version = (SELECT max(version) FROM state WHERE key = s.key AND version <= ?1) AND value IS NOT NULL",
        [version as i64],
        |r| r.get(0),
    )?;
    Ok(n as u64)
}

/// Where a store is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    /// Its transaction is open.
    Updating,
    /// Committed or aborted: the transaction is over.
    Done,
}

struct DiskStateStore<'a> {
    provider: &'a mut DiskStateStoreProvider,
    version: u64,
    /// Keys with a value, as of the changes so far.
    keys: u64,
    updated: u64,
    removed: u64,
    state: Open,
}

impl DiskStateStore<'_> {
    fn err(&self) -> impl Fn(rusqlite::Error) -> FerroError + '_ {
        sql_error(&self.provider.path)
    }

    fn updating(&self) -> Result<()> {
        match self.state {
            Open::Updating => Ok(()),
            Open::Done => Err(FerroError::Internal(format!(
                "state store version {} used after its commit or abort",
                self.version
            ))),
        }
    }

    fn next(&self) -> i64 {
        (self.version + 1) as i64
    }

    /// Writes `key`'s value in the next version; `new`: the key had none.
    fn write(&mut self, key: &[u8], value: &[u8], new: bool) -> Result<()> {
        if new {
            self.keys += 1;
        }
        self.provider
            .conn
            .prepare_cached(
                "INSERT OR REPLACE INTO state (key, version, value) VALUES (?1, ?2, ?3)",
            )
            .and_then(|mut st| st.execute(params![key, self.next(), value]))
            .map_err(self.err())?;
        self.updated += 1;
        Ok(())
    }
}

impl StateStore for DiskStateStore<'_> {
    fn version(&self) -> u64 {
        self.version
    }

    fn get(&self, key: &[u8]) -> Result<Option<std::borrow::Cow<'_, [u8]>>> {
        let row: Option<Option<Vec<u8>>> = self
            .provider
            .conn
            .prepare_cached("SELECT value FROM state WHERE key = ?1 AND version <= ?2 ORDER BY version DESC LIMIT 1")
            .and_then(|mut st| st.query_row(params![key, self.next()], |r| r.get(0)).optional())
            .map_err(self.err())?;
        Ok(row.flatten().map(std::borrow::Cow::Owned))
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.updating()?;
        let new = self.get(key)?.is_none();
        self.write(key, value, new)
    }

    fn update_many(&mut self, keys: &[&[u8]], update: Update<'_>) -> Result<()> {
        self.updating()?;
        let mut value = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            // One read: it gives the old value and whether the key is new.
            let old = self.get(k)?.map(std::borrow::Cow::into_owned);
            value.clear();
            update(i, old.as_deref(), &mut value)?;
            self.write(k, &value, old.is_none())?;
        }
        Ok(())
    }

    fn remove(&mut self, key: &[u8]) -> Result<()> {
        self.updating()?;
        if self.get(key)?.is_none() {
            return Ok(());
        }
        self.keys -= 1;
        self.provider
            .conn
            .prepare_cached(
                "INSERT OR REPLACE INTO state (key, version, value) VALUES (?1, ?2, NULL)",
            )
            .and_then(|mut st| st.execute(params![key, self.next()]))
            .map_err(self.err())?;
        self.removed += 1;
        Ok(())
    }

    fn scan(&self, prefix: &[u8], f: Visit<'_>) -> Result<()> {
        let mut st = self
            .provider
            .conn
            .prepare_cached(
                "SELECT key, value FROM state s WHERE key >= ?1 AND version = (SELECT max(version) FROM state WHERE key = s.key AND version <= ?2) AND value IS NOT NULL ORDER BY key",
            )
            .map_err(self.err())?;
        let mut rows = st.query(params![prefix, self.next()]).map_err(self.err())?;
        while let Some(r) = rows.next().map_err(self.err())? {
            let k: &[u8] = r
                .get_ref(0)
                .and_then(|v| v.as_blob().map_err(Into::into))
                .map_err(self.err())?;
            if !k.starts_with(prefix) {
                return Ok(());
            }
            let v: &[u8] = r
                .get_ref(1)
                .and_then(|v| v.as_blob().map_err(Into::into))
                .map_err(self.err())?;
            if !f(k, v)? {
                return Ok(());
            }
        }
        Ok(())
    }

    fn for_each(&self, f: Visit<'_>) -> Result<()> {
        // SQLite walks its index in key order anyway.
        self.scan(b"", f)
    }

    fn commit(&mut self) -> Result<u64> {
        self.updating()?;
        let start = Instant::now();
        let next = self.version + 1;
        let retain = self.provider.conf.min_versions_to_retain;
        // Never below the version the state came to disk at: nothing before it is here.
        let oldest = next.saturating_sub(retain).max(self.provider.oldest()?);
        let c = &self.provider.conn;
        let done = (|| -> rusqlite::Result<()> {
            if oldest > 0 {
                // Rows hidden from every kept version by a newer row at or before `oldest`.
                c.execute(
                    "DELETE FROM state WHERE version < ?1 AND EXISTS (SELECT 1 FROM state n WHERE n.key = state.key AND n.version > state.version AND n.version <= ?1)",
                    [oldest as i64],
                )?;
                c.execute(
                    "DELETE FROM state WHERE value IS NULL AND version <= ?1 AND NOT EXISTS (SELECT 1 FROM state o WHERE o.key = state.key AND o.version < state.version)",
                    [oldest as i64],
                )?;
            }
            c.execute(
                "UPDATE meta SET value = CASE name WHEN 'committed' THEN ?1 WHEN 'oldest' THEN ?2 ELSE ?3 END",
                params![next as i64, oldest as i64, self.keys as i64],
            )?;
            c.execute_batch("COMMIT")
        })();
        if let Err(e) = done {
            let _ = c.execute_batch("ROLLBACK");
            self.state = Open::Done;
            return Err(sql_error(&self.provider.path)(e));
        }
        self.state = Open::Done;
        let m = &mut self.provider.metrics;
        m.num_keys = self.keys;
        m.rows_updated = self.updated;
        m.rows_removed = self.removed;
        m.commit_ms = start.elapsed().as_secs_f64() * 1000.0;
        Ok(next)
    }

    fn abort(&mut self) {
        if self.state == Open::Updating {
            let _ = self.provider.conn.execute_batch("ROLLBACK");
        }
        self.state = Open::Done;
    }

    fn metrics(&self) -> StateStoreMetrics {
        let mut m = self.provider.metrics();
        if self.state == Open::Updating {
            m.rows_updated = self.updated;
            m.rows_removed = self.removed;
            m.num_keys = self.keys;
        }
        m
    }
}

impl Drop for DiskStateStore<'_> {
    fn drop(&mut self) {
        // A store dropped without a commit is aborted, as Spark aborts an unfinished task's.
        self.abort();
    }
}
