//! The in-memory external catalog (`catalog="memory"`, Spark's `InMemoryCatalog`): gone with
//! the session, for tests and one-off jobs.

use std::collections::BTreeMap;
use std::sync::RwLock;

use ferrospark_common::{FerroError, Result};

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

#[derive(Debug)]
struct TableEntry {
    table: CatalogTable,
    /// By partition path (`p=1/q=a`), which orders them as `SHOW PARTITIONS` lists them.
    partitions: BTreeMap<String, CatalogPartition>,
    /// The job id of its last recorded write.
    last_write_job: Option<String>,
}

#[derive(Debug)]
struct DatabaseEntry {
    db: CatalogDatabase,
    tables: BTreeMap<String, TableEntry>,
    functions: BTreeMap<String, CatalogFunction>,
}

/// Databases, tables, partitions and functions in a map behind a lock.
#[derive(Debug, Default)]
pub struct InMemoryCatalog {
    dbs: RwLock<BTreeMap<String, DatabaseEntry>>,
}

fn poisoned() -> FerroError {
    FerroError::Internal("the in-memory catalog's lock is poisoned".into())
}

impl InMemoryCatalog {
    /// An empty catalog.
    pub fn new() -> Self {
        Self::default()
    }

    /// A catalog holding `db` only.
    pub fn with_database(db: CatalogDatabase) -> Self {
        let mut dbs = BTreeMap::new();
        dbs.insert(
            db.name.clone(),
            DatabaseEntry {
                db,
                tables: BTreeMap::new(),
                functions: BTreeMap::new(),
            },
        );
        Self {
            dbs: RwLock::new(dbs),
        }
    }

    fn read<T>(&self, f: impl FnOnce(&BTreeMap<String, DatabaseEntry>) -> Result<T>) -> Result<T> {
        f(&*self.dbs.read().map_err(|_| poisoned())?)
    }

    fn write<T>(
        &self,
        f: impl FnOnce(&mut BTreeMap<String, DatabaseEntry>) -> Result<T>,
    ) -> Result<T> {
        f(&mut *self.dbs.write().map_err(|_| poisoned())?)
    }
}

fn db_mut<'a>(
    dbs: &'a mut BTreeMap<String, DatabaseEntry>,
    name: &str,
) -> Result<&'a mut DatabaseEntry> {
    dbs.get_mut(name).ok_or_else(|| database_not_found(name))
}

fn table_ref<'a>(
    dbs: &'a BTreeMap<String, DatabaseEntry>,
    ident: &TableIdent,
) -> Result<&'a TableEntry> {
    dbs.get(&ident.database)
        .and_then(|d| d.tables.get(&ident.table))
        .ok_or_else(|| table_not_found(&ident.quoted()))
}

fn table_mut<'a>(
    dbs: &'a mut BTreeMap<String, DatabaseEntry>,
    ident: &TableIdent,
) -> Result<&'a mut TableEntry> {
    db_mut(dbs, &ident.database)?
        .tables
        .get_mut(&ident.table)
        .ok_or_else(|| table_not_found(&ident.quoted()))
}

impl ExternalCatalog for InMemoryCatalog {
    fn create_database(&self, db: &CatalogDatabase, ignore_if_exists: bool) -> Result<()> {
        self.write(|dbs| {
            if dbs.contains_key(&db.name) {
                return if ignore_if_exists {
                    Ok(())
                } else {
                    Err(database_exists(&db.name))
                };
            }
            dbs.insert(
                db.name.clone(),
                DatabaseEntry {
                    db: db.clone(),
                    tables: BTreeMap::new(),
                    functions: BTreeMap::new(),
                },
            );
            Ok(())
        })
    }

    fn drop_database(
        &self,
        name: &str,
        ignore_if_not_exists: bool,
        cascade: bool,
    ) -> Result<Vec<CatalogTable>> {
        self.write(|dbs| {
            let Some(entry) = dbs.get(name) else {
                return if ignore_if_not_exists {
                    Ok(Vec::new())
                } else {
                    Err(database_not_found(name))
                };
            };
            if !cascade && (!entry.tables.is_empty() || !entry.functions.is_empty()) {
                return Err(database_not_empty(name));
            }
            let entry = dbs.remove(name).ok_or_else(|| database_not_found(name))?;
            Ok(entry.tables.into_values().map(|t| t.table).collect())
        })
    }

    fn alter_database(&self, db: &CatalogDatabase) -> Result<()> {
        self.write(|dbs| {
            db_mut(dbs, &db.name)?.db = db.clone();
            Ok(())
        })
    }

    fn get_database(&self, name: &str) -> Result<Option<CatalogDatabase>> {
        self.read(|dbs| Ok(dbs.get(name).map(|e| e.db.clone())))
    }

    fn list_databases(&self) -> Result<Vec<String>> {
        self.read(|dbs| Ok(dbs.keys().cloned().collect()))
    }

    fn create_table_with_partitions(
        &self,
        table: &CatalogTable,
        parts: &[CatalogPartition],
        ignore_if_exists: bool,
    ) -> Result<bool> {
        self.write(|dbs| {
            let db = db_mut(dbs, &table.ident.database)?;
            if db.tables.contains_key(&table.ident.table) {
                return if ignore_if_exists {
                    Ok(false)
                } else {
                    Err(table_exists(&table.ident))
                };
            }
            let partitions = parts
                .iter()
                .map(|p| (partition_path(&p.spec), p.clone()))
                .collect();
            db.tables.insert(
                table.ident.table.clone(),
                TableEntry {
                    table: table.clone(),
                    partitions,
                    last_write_job: None,
                },
            );
            Ok(true)
        })
    }

    fn drop_table(
        &self,
        ident: &TableIdent,
        ignore_if_not_exists: bool,
    ) -> Result<Option<CatalogTable>> {
        self.write(|dbs| {
            let db = db_mut(dbs, &ident.database)?;
            match db.tables.remove(&ident.table) {
                Some(e) => Ok(Some(e.table)),
                None if ignore_if_not_exists => Ok(None),
                None => Err(table_not_found(&ident.quoted())),
            }
        })
    }

    fn alter_table(&self, table: &CatalogTable) -> Result<()> {
        self.write(|dbs| {
            table_mut(dbs, &table.ident)?.table = table.clone();
            Ok(())
        })
    }

    fn rename_table(
        &self,
        from: &TableIdent,
        to: &str,
        new_location: Option<String>,
    ) -> Result<()> {
        self.write(|dbs| {
            let db = db_mut(dbs, &from.database)?;
            let target = TableIdent::new(&from.database, to);
            if db.tables.contains_key(to) {
                return Err(table_exists(&target));
            }
            let mut entry = db
                .tables
                .remove(&from.table)
                .ok_or_else(|| table_not_found(&from.quoted()))?;
            if let (Some(new), Some(old)) = (&new_location, entry.table.location.clone()) {
                for p in entry.partitions.values_mut() {
                    if let Some(rest) = p.location.strip_prefix(&old) {
                        p.location = format!("{new}{rest}");
                    }
                }
                entry.table.location = Some(new.clone());
            }
            entry.table.ident = target;
            db.tables.insert(to.to_string(), entry);
            Ok(())
        })
    }

    fn get_table(&self, ident: &TableIdent) -> Result<Option<CatalogTable>> {
        self.read(|dbs| {
            Ok(dbs
                .get(&ident.database)
                .and_then(|d| d.tables.get(&ident.table))
                .map(|e| e.table.clone()))
        })
    }

    fn list_tables(&self, database: &str) -> Result<Vec<String>> {
        self.read(|dbs| {
            let db = dbs
                .get(database)
                .ok_or_else(|| database_not_found(database))?;
            Ok(db.tables.keys().cloned().collect())
        })
    }

    fn create_partitions(
        &self,
        ident: &TableIdent,
        parts: &[CatalogPartition],
        ignore_if_exists: bool,
    ) -> Result<()> {
        self.write(|dbs| {
            let t = table_mut(dbs, ident)?;
            let taken: Vec<PartitionSpec> = parts
                .iter()
                .filter(|p| t.partitions.contains_key(&partition_path(&p.spec)))
                .map(|p| p.spec.clone())
                .collect();
            if !taken.is_empty() && !ignore_if_exists {
                return Err(partitions_exist(ident, &taken));
            }
            for p in parts {
                t.partitions
                    .entry(partition_path(&p.spec))
                    .or_insert_with(|| p.clone());
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
        self.write(|dbs| {
            let t = table_mut(dbs, ident)?;
            let missing: Vec<PartitionSpec> = specs
                .iter()
                .filter(|s| !t.partitions.contains_key(&partition_path(s)))
                .cloned()
                .collect();
            if !missing.is_empty() && !ignore_if_not_exists {
                return Err(partitions_not_found(ident, &missing));
            }
            Ok(specs
                .iter()
                .filter_map(|s| t.partitions.remove(&partition_path(s)))
                .collect())
        })
    }

    fn list_partitions(
        &self,
        ident: &TableIdent,
        partial: Option<&PartitionSpec>,
    ) -> Result<Vec<CatalogPartition>> {
        self.read(|dbs| {
            let t = table_ref(dbs, ident)?;
            Ok(t.partitions
                .values()
                .filter(|p| partial.is_none_or(|s| matches_partial(&p.spec, s)))
                .cloned()
                .collect())
        })
    }

    fn list_partition_names(
        &self,
        ident: &TableIdent,
        partial: Option<&PartitionSpec>,
    ) -> Result<Vec<String>> {
        self.read(|dbs| {
            let t = table_ref(dbs, ident)?;
            // Keyed by name already, in order.
            Ok(t.partitions
                .iter()
                .filter(|(_, p)| partial.is_none_or(|s| matches_partial(&p.spec, s)))
                .map(|(name, _)| name.clone())
                .collect())
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
        self.write(|dbs| {
            let t = table_mut(dbs, ident)?;
            if let Some(job) = job {
                t.last_write_job = Some(job.to_string());
            }
            for s in dropped {
                t.partitions.remove(&partition_path(s));
            }
            for p in added {
                t.partitions
                    .entry(partition_path(&p.spec))
                    .or_insert_with(|| p.clone());
            }
            t.table.stats = stats;
            Ok(())
        })
    }

    fn last_write_job(&self, ident: &TableIdent) -> Result<Option<String>> {
        self.read(|dbs| {
            Ok(table_ref(dbs, ident)
                .ok()
                .and_then(|t| t.last_write_job.clone()))
        })
    }

    fn create_function(&self, f: &CatalogFunction, replace: bool) -> Result<()> {
        self.write(|dbs| {
            let db = db_mut(dbs, &f.database)?;
            if !replace && db.functions.contains_key(&f.name) {
                return Err(function_exists(&f.database, &f.name));
            }
            db.functions.insert(f.name.clone(), f.clone());
            Ok(())
        })
    }

    fn drop_function(&self, database: &str, name: &str, ignore_if_not_exists: bool) -> Result<()> {
        self.write(|dbs| {
            let db = db_mut(dbs, database)?;
            if db.functions.remove(name).is_none() && !ignore_if_not_exists {
                return Err(function_not_found(&format!("`{database}`.`{name}`")));
            }
            Ok(())
        })
    }

    fn get_function(&self, database: &str, name: &str) -> Result<Option<CatalogFunction>> {
        self.read(|dbs| {
            Ok(dbs
                .get(database)
                .and_then(|d| d.functions.get(name))
                .cloned())
        })
    }

    fn list_functions(&self, database: &str) -> Result<Vec<String>> {
        self.read(|dbs| {
            let db = dbs
                .get(database)
                .ok_or_else(|| database_not_found(database))?;
            Ok(db.functions.keys().cloned().collect())
        })
    }
}
