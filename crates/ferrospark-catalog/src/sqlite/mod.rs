//! The persistent external catalog (`catalog="sqlite:///path"`): a SQLite file laid out as
//! the Hive metastore's database.
//!
//! Every change is one `BEGIN IMMEDIATE` transaction, so it is whole or absent after a crash,
//! and writers from several processes take turns: the file is in WAL mode (readers never wait
//! for a writer), a writer waits up to the busy timeout for another, and a transaction that
//! still finds the file busy is run again from the start, a bounded number of times.

mod rows;
pub mod schema;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use ferrospark_common::{FerroError, Result};
use rusqlite::{Connection, ErrorCode, TransactionBehavior};

use crate::external::{
    database_exists, database_not_empty, database_not_found, function_exists, function_not_found,
    matches_partial, partitions_exist, partitions_not_found, table_exists, table_not_found,
    ExternalCatalog,
};
use crate::model::{
    CatalogDatabase, CatalogFunction, CatalogPartition, CatalogTable, PartitionSpec, TableIdent,
    TableStats,
};
use crate::names::partition_path;
use rows::sql;

/// How long a writer waits for another process's transaction before retrying.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// How many times a transaction that found the file busy is run again.
const RETRIES: u32 = 40;

/// A metastore in a SQLite file.
#[derive(Debug)]
pub struct SqliteCatalog {
    path: PathBuf,
    conn: Mutex<Connection>,
}

/// Why a transaction failed: the file was busy (run it again) or anything else (give up).
enum Failure {
    Busy(rusqlite::Error),
    Other(FerroError),
}

impl From<FerroError> for Failure {
    fn from(e: FerroError) -> Self {
        Failure::Other(e)
    }
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => Failure::Busy(e),
            _ => Failure::Other(sql(e)),
        }
    }
}

fn schema_version(c: &Connection) -> rusqlite::Result<usize> {
    let has: i64 = c.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'VERSION'",
        [],
        |r| r.get(0),
    )?;
    if has == 0 {
        return Ok(0);
    }
    let v: Option<String> = c
        .query_row(
            "SELECT SCHEMA_VERSION FROM VERSION WHERE VER_ID = 1",
            [],
            |r| r.get(0),
        )
        .ok();
    Ok(v.and_then(|v| v.parse().ok()).unwrap_or(0))
}

impl SqliteCatalog {
    /// Opens (creating if needed) the metastore at `path`, upgrading an older schema in place.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_at_version(path, schema::CURRENT_VERSION)
    }

    /// Opens the metastore at `path` with its schema brought to `version` (older versions
    /// exist to test upgrades).
    pub fn open_at_version(path: &Path, version: usize) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| FerroError::io(dir, e))?;
        }
        let conn = Connection::open(path).map_err(|e| {
            FerroError::Metastore(format!("cannot open the metastore {}: {e}", path.display()))
        })?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        let cat = Self {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
        };
        cat.with_conn(|c| {
            // WAL lets readers go on while a writer commits; NORMAL sync is durable against a
            // killed process (only power loss can lose the last commits).
            c.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
            c.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
            Ok(())
        })
        .map_err(|e| {
            FerroError::Metastore(format!("{} is not a usable metastore: {e}", path.display()))
        })?;
        cat.upgrade(version)?;
        Ok(cat)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the file.
    pub fn version(&self) -> Result<usize> {
        self.with_conn(schema_version).map_err(sql)
    }

    fn with_conn<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let c = self
            .conn
            .lock()
            .map_err(|_| rusqlite::Error::InvalidQuery)?;
        f(&c)
    }

    fn upgrade(&self, target: usize) -> Result<()> {
        self.tx(|c| {
            let have = schema_version(c)?;
            if have > schema::CURRENT_VERSION {
                return Err(Failure::Other(FerroError::Metastore(format!(
                    "the metastore {} has schema version {have}, newer than this ferrospark's {}: upgrade ferrospark to use it",
                    self.path.display(),
                    schema::CURRENT_VERSION
                ))));
            }
            for (i, step) in schema::MIGRATIONS.iter().enumerate().take(target).skip(have) {
                c.execute_batch(step)?;
                c.execute(
                    "INSERT OR REPLACE INTO VERSION (VER_ID, SCHEMA_VERSION, VERSION_COMMENT) VALUES (1, ?1, 'ferrospark metastore')",
                    [(i + 1).to_string()],
                )?;
            }
            Ok(())
        })
    }

    /// Runs `f` in one immediate transaction, again from the start while the file is busy.
    fn tx<T>(
        &self,
        mut f: impl FnMut(&Connection) -> std::result::Result<T, Failure>,
    ) -> Result<T> {
        let mut conn = self.conn.lock().map_err(|_| {
            FerroError::Internal("the metastore connection's lock is poisoned".into())
        })?;
        let mut last = None;
        for attempt in 0..RETRIES {
            let mut run = || -> std::result::Result<T, Failure> {
                let t = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let out = f(&t)?;
                t.commit()?;
                Ok(out)
            };
            match run() {
                Ok(v) => return Ok(v),
                Err(Failure::Other(e)) => return Err(e),
                Err(Failure::Busy(e)) => {
                    last = Some(e);
                    std::thread::sleep(Duration::from_millis(5 + 5 * u64::from(attempt % 10)));
                }
            }
        }
        Err(FerroError::Metastore(format!(
            "the metastore {} stayed locked by other processes ({}); try again, or look for a process holding it",
            self.path.display(),
            last.map(|e| e.to_string()).unwrap_or_default()
        )))
    }

    /// Runs a read in one transaction (a consistent snapshot), retried while busy.
    fn read<T>(&self, mut f: impl FnMut(&Connection) -> Result<T>) -> Result<T> {
        let mut conn = self.conn.lock().map_err(|_| {
            FerroError::Internal("the metastore connection's lock is poisoned".into())
        })?;
        for attempt in 0..RETRIES {
            let t = match conn.transaction_with_behavior(TransactionBehavior::Deferred) {
                Ok(t) => t,
                Err(e) => match Failure::from(e) {
                    Failure::Busy(_) => {
                        std::thread::sleep(Duration::from_millis(5 + u64::from(attempt)));
                        continue;
                    }
                    Failure::Other(e) => return Err(e),
                },
            };
            return f(&t);
        }
        Err(FerroError::Metastore(format!(
            "the metastore {} stayed locked by other processes",
            self.path.display()
        )))
    }
}

fn need_db(c: &Connection, name: &str) -> std::result::Result<i64, Failure> {
    rows::db_id(c, name)?.ok_or_else(|| Failure::Other(database_not_found(name)))
}

fn need_table(c: &Connection, ident: &TableIdent) -> std::result::Result<(i64, i64), Failure> {
    need_db(c, &ident.database)?;
    rows::table_id(c, ident)?.ok_or_else(|| Failure::Other(table_not_found(&ident.quoted())))
}

fn partition_keys(c: &Connection, id: i64) -> Result<Vec<String>> {
    rows::names(
        c,
        "SELECT PKEY_NAME FROM PARTITION_KEYS WHERE TBL_ID = ?1 ORDER BY INTEGER_IDX",
        &id,
    )
}

impl ExternalCatalog for SqliteCatalog {
    fn create_database(&self, db: &CatalogDatabase, ignore_if_exists: bool) -> Result<()> {
        self.tx(|c| {
            if rows::db_id(c, &db.name)?.is_some() {
                return if ignore_if_exists {
                    Ok(())
                } else {
                    Err(database_exists(&db.name).into())
                };
            }
            Ok(rows::insert_db(c, db)?)
        })
    }

    fn drop_database(
        &self,
        name: &str,
        ignore_if_not_exists: bool,
        cascade: bool,
    ) -> Result<Vec<CatalogTable>> {
        self.tx(|c| {
            let Some(id) = rows::db_id(c, name)? else {
                return if ignore_if_not_exists {
                    Ok(Vec::new())
                } else {
                    Err(database_not_found(name).into())
                };
            };
            let tables = rows::names(c, "SELECT TBL_NAME FROM TBLS WHERE DB_ID = ?1", &id)?;
            let functions = rows::names(c, "SELECT FUNC_NAME FROM FUNCS WHERE DB_ID = ?1", &id)?;
            if !cascade && (!tables.is_empty() || !functions.is_empty()) {
                return Err(database_not_empty(name).into());
            }
            let mut dropped = Vec::new();
            for t in tables {
                let ident = TableIdent::new(name, t);
                if let Some(table) = rows::load_table(c, &ident)? {
                    dropped.push(table);
                }
                if let Some((tid, _)) = rows::table_id(c, &ident)? {
                    rows::delete_table(c, tid)?;
                }
            }
            c.execute("DELETE FROM DBS WHERE DB_ID = ?1", [id])?;
            Ok(dropped)
        })
    }

    fn alter_database(&self, db: &CatalogDatabase) -> Result<()> {
        self.tx(|c| {
            let id = need_db(c, &db.name)?;
            Ok(rows::update_db(c, id, db)?)
        })
    }

    fn get_database(&self, name: &str) -> Result<Option<CatalogDatabase>> {
        self.read(|c| rows::load_db(c, name))
    }

    fn list_databases(&self) -> Result<Vec<String>> {
        self.read(|c| rows::names(c, "SELECT NAME FROM DBS WHERE ?1 ORDER BY NAME", &1))
    }

    fn create_table_with_partitions(
        &self,
        table: &CatalogTable,
        parts: &[CatalogPartition],
        ignore_if_exists: bool,
    ) -> Result<bool> {
        self.tx(|c| {
            let db = need_db(c, &table.ident.database)?;
            if rows::table_id(c, &table.ident)?.is_some() {
                return if ignore_if_exists {
                    Ok(false)
                } else {
                    Err(table_exists(&table.ident).into())
                };
            }
            let id = rows::insert_table(c, db, table)?;
            if !parts.is_empty() {
                let (_, sd) = rows::table_id(c, &table.ident)?
                    .ok_or_else(|| FerroError::Internal("a table just made is missing".into()))?;
                let storage = rows::partition_storage(c, sd)?;
                for p in parts {
                    rows::insert_partition(c, id, &storage, p)?;
                }
            }
            Ok(true)
        })
    }

    fn drop_table(
        &self,
        ident: &TableIdent,
        ignore_if_not_exists: bool,
    ) -> Result<Option<CatalogTable>> {
        self.tx(|c| {
            need_db(c, &ident.database)?;
            let Some((id, _)) = rows::table_id(c, ident)? else {
                return if ignore_if_not_exists {
                    Ok(None)
                } else {
                    Err(table_not_found(&ident.quoted()).into())
                };
            };
            let table = rows::load_table(c, ident)?;
            rows::delete_table(c, id)?;
            Ok(table)
        })
    }

    fn alter_table(&self, table: &CatalogTable) -> Result<()> {
        self.tx(|c| {
            let (id, sd) = need_table(c, &table.ident)?;
            Ok(rows::update_table(c, id, sd, table)?)
        })
    }

    fn rename_table(
        &self,
        from: &TableIdent,
        to: &str,
        new_location: Option<String>,
    ) -> Result<()> {
        self.tx(|c| {
            let (id, sd) = need_table(c, from)?;
            let target = TableIdent::new(&from.database, to);
            if rows::table_id(c, &target)?.is_some() {
                return Err(table_exists(&target).into());
            }
            c.execute(
                "UPDATE TBLS SET TBL_NAME = ?1 WHERE TBL_ID = ?2",
                rusqlite::params![to, id],
            )?;
            c.execute(
                "UPDATE TAB_COL_STATS SET TABLE_NAME = ?1 WHERE TBL_ID = ?2",
                rusqlite::params![to, id],
            )?;
            if let Some(new) = &new_location {
                let old: Option<String> =
                    c.query_row("SELECT LOCATION FROM SDS WHERE SD_ID = ?1", [sd], |r| r.get(0))?;
                c.execute(
                    "UPDATE SDS SET LOCATION = ?1 WHERE SD_ID = ?2",
                    rusqlite::params![new, sd],
                )?;
                if let Some(old) = old {
                    // Partition directories under the old location move with it.
                    c.execute(
                        "UPDATE SDS SET LOCATION = ?1 || substr(LOCATION, ?2) WHERE SD_ID IN (SELECT SD_ID FROM PARTITIONS WHERE TBL_ID = ?3) AND substr(LOCATION, 1, ?4) = ?5",
                        rusqlite::params![new, old.len() as i64 + 1, id, old.len() as i64, old],
                    )?;
                }
            }
            Ok(())
        })
    }

    fn get_table(&self, ident: &TableIdent) -> Result<Option<CatalogTable>> {
        self.read(|c| rows::load_table(c, ident))
    }

    fn list_tables(&self, database: &str) -> Result<Vec<String>> {
        self.read(|c| {
            let id = rows::db_id(c, database)?.ok_or_else(|| database_not_found(database))?;
            rows::names(
                c,
                "SELECT TBL_NAME FROM TBLS WHERE DB_ID = ?1 ORDER BY TBL_NAME",
                &id,
            )
        })
    }

    fn create_partitions(
        &self,
        ident: &TableIdent,
        parts: &[CatalogPartition],
        ignore_if_exists: bool,
    ) -> Result<()> {
        self.tx(|c| {
            let (id, sd) = need_table(c, ident)?;
            let mut taken = Vec::new();
            for p in parts {
                if rows::partition_id(c, id, &partition_path(&p.spec))?.is_some() {
                    taken.push(p.spec.clone());
                }
            }
            if !taken.is_empty() && !ignore_if_exists {
                return Err(partitions_exist(ident, &taken).into());
            }
            let storage = rows::partition_storage(c, sd)?;
            for p in parts {
                if rows::partition_id(c, id, &partition_path(&p.spec))?.is_none() {
                    rows::insert_partition(c, id, &storage, p)?;
                }
            }
            Ok(())
        })
    }

    fn drop_partitions(
        &self,
        ident: &TableIdent,
        specs: &[PartitionSpec],
        ignore_if_not_exists: bool,
    ) -> Result<Vec<CatalogPartition>> {
        self.tx(|c| {
            let (id, _) = need_table(c, ident)?;
            let keys = partition_keys(c, id)?;
            let all = rows::load_partitions(c, id, &keys)?;
            let mut missing = Vec::new();
            let mut dropped = Vec::new();
            for s in specs {
                match rows::partition_id(c, id, &partition_path(s))? {
                    Some(part) => {
                        if let Some(p) = all
                            .iter()
                            .find(|p| partition_path(&p.spec) == partition_path(s))
                        {
                            dropped.push(p.clone());
                        }
                        rows::delete_partition(c, part)?;
                    }
                    None => missing.push(s.clone()),
                }
            }
            if !missing.is_empty() && !ignore_if_not_exists {
                return Err(partitions_not_found(ident, &missing).into());
            }
            Ok(dropped)
        })
    }

    fn list_partitions(
        &self,
        ident: &TableIdent,
        partial: Option<&PartitionSpec>,
    ) -> Result<Vec<CatalogPartition>> {
        self.read(|c| {
            let (id, _) =
                rows::table_id(c, ident)?.ok_or_else(|| table_not_found(&ident.quoted()))?;
            let keys = partition_keys(c, id)?;
            let mut parts = rows::load_partitions(c, id, &keys)?;
            if let Some(s) = partial {
                parts.retain(|p| matches_partial(&p.spec, s));
            }
            Ok(parts)
        })
    }

    fn last_write_job(&self, ident: &TableIdent) -> Result<Option<String>> {
        self.read(|c| match rows::table_id(c, ident)? {
            Some((id, _)) => rows::last_write_job(c, id),
            None => Ok(None),
        })
    }

    fn list_partition_locations(&self, ident: &TableIdent) -> Result<Vec<(PartitionSpec, String)>> {
        self.read(|c| {
            let (id, _) =
                rows::table_id(c, ident)?.ok_or_else(|| table_not_found(&ident.quoted()))?;
            rows::partition_locations(c, id)
        })
    }

    fn list_partition_names(
        &self,
        ident: &TableIdent,
        partial: Option<&PartitionSpec>,
    ) -> Result<Vec<String>> {
        if partial.is_some() {
            return Ok(crate::external::sorted_names(
                &self.list_partitions(ident, partial)?,
            ));
        }
        self.read(|c| {
            let (id, _) =
                rows::table_id(c, ident)?.ok_or_else(|| table_not_found(&ident.quoted()))?;
            rows::names(
                c,
                "SELECT PART_NAME FROM PARTITIONS WHERE TBL_ID = ?1 ORDER BY PART_NAME",
                &id,
            )
        })
    }

    fn commit_write(
        &self,
        ident: &TableIdent,
        dropped: &[PartitionSpec],
        added: &[CatalogPartition],
        stats: Option<TableStats>,
        job: Option<&str>,
    ) -> Result<()> {
        self.tx(|c| {
            let (id, sd) = need_table(c, ident)?;
            if let Some(job) = job {
                rows::set_last_write_job(c, id, job)?;
            }
            for s in dropped {
                if let Some(part) = rows::partition_id(c, id, &partition_path(s))? {
                    rows::delete_partition(c, part)?;
                }
            }
            let storage = rows::partition_storage(c, sd)?;
            for p in added {
                if rows::partition_id(c, id, &partition_path(&p.spec))?.is_none() {
                    rows::insert_partition(c, id, &storage, p)?;
                }
            }
            Ok(rows::set_stats(c, id, stats.as_ref())?)
        })
    }

    fn create_function(&self, f: &CatalogFunction, replace: bool) -> Result<()> {
        self.tx(|c| {
            let db = need_db(c, &f.database)?;
            let exists = rows::load_function(c, &f.database, &f.name)?.is_some();
            if exists && !replace {
                return Err(function_exists(&f.database, &f.name).into());
            }
            c.execute(
                "DELETE FROM FUNCS WHERE DB_ID = ?1 AND FUNC_NAME = ?2",
                rusqlite::params![db, f.name],
            )?;
            Ok(rows::insert_function(c, db, f)?)
        })
    }

    fn drop_function(&self, database: &str, name: &str, ignore_if_not_exists: bool) -> Result<()> {
        self.tx(|c| {
            let db = need_db(c, database)?;
            let n = c.execute(
                "DELETE FROM FUNCS WHERE DB_ID = ?1 AND FUNC_NAME = ?2",
                rusqlite::params![db, name],
            )?;
            if n == 0 && !ignore_if_not_exists {
                return Err(function_not_found(&format!("`{database}`.`{name}`")).into());
            }
            Ok(())
        })
    }

    fn get_function(&self, database: &str, name: &str) -> Result<Option<CatalogFunction>> {
        self.read(|c| rows::load_function(c, database, name))
    }

    fn list_functions(&self, database: &str) -> Result<Vec<String>> {
        self.read(|c| {
            let id = rows::db_id(c, database)?.ok_or_else(|| database_not_found(database))?;
            rows::names(
                c,
                "SELECT FUNC_NAME FROM FUNCS WHERE DB_ID = ?1 ORDER BY FUNC_NAME",
                &id,
            )
        })
    }
}
