//! The session catalog (Spark's `SessionCatalog`): the current database, name resolution,
//! temporary and global temporary views, temporary functions and the relation cache, in
//! front of an external catalog that persists the rest.
//!
//! `V` is what a view or cached relation is to the query layer (its logical plan); this
//! crate only stores and hands them back.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use ferrospark_common::{FerroError, Result};

use crate::external::{database_not_found, function_exists, table_not_found, ExternalCatalog};
use crate::model::{CatalogDatabase, CatalogFunction, CatalogTable, TableIdent};
use crate::names::{normalize, quote, validate};
use crate::warehouse::{remove_managed, Warehouse};
use ferrospark_expr::RegisteredUdf;

/// The database holding global temporary views.
pub const GLOBAL_TEMP_DATABASE: &str = "global_temp";

/// Global temporary views, shared by the sessions made from one another
/// (`Session.newSession()`), as Spark shares them within an application.
#[derive(Debug)]
pub struct GlobalTempViews<V>(RwLock<BTreeMap<String, V>>);

impl<V> Default for GlobalTempViews<V> {
    fn default() -> Self {
        Self(RwLock::new(BTreeMap::new()))
    }
}

/// What a name refers to.
#[derive(Debug, Clone)]
pub enum Relation<V> {
    /// A temporary view of this session.
    TempView(V),
    /// A global temporary view.
    GlobalTempView(V),
    /// A table or persistent view of the external catalog.
    Table(Box<CatalogTable>),
}

fn default_database(warehouse: &Warehouse) -> CatalogDatabase {
    CatalogDatabase {
        name: "default".into(),
        description: "default database".into(),
        location: warehouse.root().to_string_lossy().into_owned(),
        properties: BTreeMap::new(),
    }
}

fn poisoned() -> FerroError {
    FerroError::Internal("a session catalog lock is poisoned".into())
}

/// A session's view of the catalog.
#[derive(Debug)]
pub struct SessionCatalog<V> {
    external: Arc<dyn ExternalCatalog>,
    warehouse: Warehouse,
    current: RwLock<String>,
    temp_views: RwLock<BTreeMap<String, V>>,
    global_views: Arc<GlobalTempViews<V>>,
    temp_functions: RwLock<BTreeMap<String, CatalogFunction>>,
    temp_udfs: RwLock<BTreeMap<String, RegisteredUdf>>,
    relation_cache: RwLock<HashMap<TableIdent, V>>,
}

impl<V: Clone> SessionCatalog<V> {
    /// A session over `external`, creating the `default` database if it is missing.
    pub fn new(
        external: Arc<dyn ExternalCatalog>,
        warehouse: Warehouse,
        global_views: Arc<GlobalTempViews<V>>,
    ) -> Result<Self> {
        if external.get_database("default")?.is_none() {
            external.create_database(&default_database(&warehouse), true)?;
        }
        Ok(Self::over(external, warehouse, global_views))
    }

    /// A session over a new in-memory catalog holding only `default`.
    pub fn in_memory(warehouse: Warehouse) -> Self {
        let external = crate::memory::InMemoryCatalog::with_database(default_database(&warehouse));
        Self::over(Arc::new(external), warehouse, Arc::default())
    }

    fn over(
        external: Arc<dyn ExternalCatalog>,
        warehouse: Warehouse,
        global_views: Arc<GlobalTempViews<V>>,
    ) -> Self {
        Self {
            external,
            warehouse,
            current: RwLock::new("default".into()),
            temp_views: RwLock::new(BTreeMap::new()),
            global_views,
            temp_functions: RwLock::new(BTreeMap::new()),
            temp_udfs: RwLock::new(BTreeMap::new()),
            relation_cache: RwLock::new(HashMap::new()),
        }
    }

    /// A new session over the same external catalog and global temporary views, with its
    /// own current database, temporary views and functions.
    pub fn new_session(&self) -> Result<Self> {
        Self::new(
            self.external.clone(),
            self.warehouse.clone(),
            self.global_views.clone(),
        )
    }

    /// The external catalog.
    pub fn external(&self) -> &Arc<dyn ExternalCatalog> {
        &self.external
    }

    /// The warehouse.
    pub fn warehouse(&self) -> &Warehouse {
        &self.warehouse
    }

    /// The current database.
    pub fn current_database(&self) -> String {
        self.current
            .read()
            .map(|c| c.clone())
            .unwrap_or_else(|_| "default".into())
    }

    /// `USE db`.
    pub fn set_current_database(&self, name: &str) -> Result<()> {
        let name = normalize(name);
        self.require_database(&name)?;
        *self.current.write().map_err(|_| poisoned())? = name;
        Ok(())
    }

    /// The database, or `[SCHEMA_NOT_FOUND]`.
    pub fn require_database(&self, name: &str) -> Result<CatalogDatabase> {
        self.external
            .get_database(name)?
            .ok_or_else(|| database_not_found(name))
    }

    /// The identifier of a table name of one to three parts (`t`, `db.t`,
    /// `spark_catalog.db.t`), normalized.
    pub fn qualify(&self, parts: &[String]) -> Result<TableIdent> {
        match parts {
            [t] => Ok(TableIdent::new(self.current_database(), normalize(t))),
            [db, t] => Ok(TableIdent::new(normalize(db), normalize(t))),
            [c, db, t] if c.eq_ignore_ascii_case("spark_catalog") => {
                Ok(TableIdent::new(normalize(db), normalize(t)))
            }
            _ => Err(FerroError::Analysis(format!(
                "[REQUIRES_SINGLE_PART_NAMESPACE] {} is not a valid table name: use table, database.table or spark_catalog.database.table",
                parts.iter().map(|p| quote(p)).collect::<Vec<_>>().join(".")
            ))),
        }
    }

    /// What `parts` names: a temporary view first, then a global temporary view under
    /// `global_temp`, then a table or view of the catalog.
    pub fn lookup(&self, parts: &[String]) -> Result<Option<Relation<V>>> {
        if let [name] = parts {
            if let Some(v) = self.temp_view(name)? {
                return Ok(Some(Relation::TempView(v)));
            }
        }
        if let [db, name] = parts {
            if db.eq_ignore_ascii_case(GLOBAL_TEMP_DATABASE) {
                return Ok(self.global_temp_view(name)?.map(Relation::GlobalTempView));
            }
        }
        let ident = self.qualify(parts)?;
        Ok(self
            .external
            .get_table(&ident)?
            .map(|t| Relation::Table(Box::new(t))))
    }

    /// `[TABLE_OR_VIEW_NOT_FOUND]` for a name the user wrote, with Spark's search path.
    pub fn not_found(&self, parts: &[String]) -> FerroError {
        let shown = parts.iter().map(|p| quote(p)).collect::<Vec<_>>().join(".");
        let FerroError::Analysis(m) = table_not_found(&shown) else {
            return table_not_found(&shown);
        };
        let path = format!(
            "Search path: [`system`.`builtin`, `system`.`session`, `spark_catalog`.{}].",
            quote(&self.current_database())
        );
        FerroError::Analysis(m.replacen(
            "the schema and catalog.\n",
            &format!("the schema and catalog.\n{path}\n"),
            1,
        ))
    }

    /// A table of the catalog, or `[TABLE_OR_VIEW_NOT_FOUND]`.
    pub fn require_table(&self, ident: &TableIdent) -> Result<CatalogTable> {
        self.require_database(&ident.database)?;
        self.external
            .get_table(ident)?
            .ok_or_else(|| table_not_found(&ident.quoted()))
    }

    /// Creates a database (its directory too).
    pub fn create_database(&self, mut db: CatalogDatabase, if_not_exists: bool) -> Result<()> {
        db.name = normalize(&db.name);
        validate(&db.name, "schema")?;
        if db.name == GLOBAL_TEMP_DATABASE {
            return Err(FerroError::Analysis(format!(
                "[UNSUPPORTED_FEATURE.SET_NAMESPACE_PROPERTY] {GLOBAL_TEMP_DATABASE} is a system preserved database, please rename your existing database to resolve the name conflict, or set a different value for spark.sql.globalTempDatabase, and launch your Spark application again."
            )));
        }
        if db.location.is_empty() {
            db.location = self
                .warehouse
                .database_location(&db.name)
                .to_string_lossy()
                .into_owned();
        }
        if self.external.get_database(&db.name)?.is_some() && if_not_exists {
            return Ok(());
        }
        self.external.create_database(&db, if_not_exists)?;
        let dir = std::path::Path::new(&db.location);
        std::fs::create_dir_all(dir).map_err(|e| FerroError::io(dir, e))?;
        Ok(())
    }

    /// Drops a database; with `cascade`, its tables (managed ones' files removed) and
    /// functions. Its directory goes too once nothing else is left in it.
    pub fn drop_database(&self, name: &str, if_exists: bool, cascade: bool) -> Result<()> {
        let name = normalize(name);
        if name == "default" {
            return Err(FerroError::Analysis(
                "[UNSUPPORTED_FEATURE.DROP_DATABASE] The feature is not supported: Drop the default database `default`. SQLSTATE: 0A000".into(),
            ));
        }
        let db = self.external.get_database(&name)?;
        let dropped = self.external.drop_database(&name, if_exists, cascade)?;
        self.invalidate_all();
        if let Some(db) = db {
            for t in dropped {
                if t.table_type == crate::model::TableType::Managed {
                    if let Some(loc) = &t.location {
                        remove_managed(loc, &db.location, &t.ident.table)?;
                    }
                }
            }
            // Only an empty directory: external tables or user files stay where they are.
            let _ = std::fs::remove_file(std::path::Path::new(&db.location).join("_SUCCESS"));
            let _ = std::fs::remove_dir(&db.location);
        }
        Ok(())
    }

    /// Every database name (`global_temp` is not one), sorted.
    pub fn list_databases(&self) -> Result<Vec<String>> {
        let mut v = self.external.list_databases()?;
        v.sort();
        Ok(v)
    }

    /// Creates a table or view; whether it did.
    pub fn create_table(&self, table: &CatalogTable, if_not_exists: bool) -> Result<bool> {
        validate(&table.ident.table, "table")?;
        self.require_database(&table.ident.database)?;
        self.invalidate(&table.ident);
        self.external.create_table(table, if_not_exists)
    }

    /// Creates a table and its partitions in one change (after its files were committed).
    pub fn create_table_with_partitions(
        &self,
        table: &CatalogTable,
        parts: &[crate::model::CatalogPartition],
    ) -> Result<()> {
        validate(&table.ident.table, "table")?;
        self.require_database(&table.ident.database)?;
        self.invalidate(&table.ident);
        self.external
            .create_table_with_partitions(table, parts, false)
            .map(|_| ())
    }

    /// Drops a table or view (a managed table's files too); what it was.
    pub fn drop_table(&self, ident: &TableIdent, if_exists: bool) -> Result<Option<CatalogTable>> {
        let db = self.require_database(&ident.database)?;
        let dropped = self.external.drop_table(ident, if_exists)?;
        self.invalidate(ident);
        if let Some(t) = &dropped {
            if t.table_type == crate::model::TableType::Managed {
                if let Some(loc) = &t.location {
                    remove_managed(loc, &db.location, &ident.table)?;
                }
            }
        }
        Ok(dropped)
    }

    /// Replaces a table's metadata.
    pub fn alter_table(&self, table: &CatalogTable) -> Result<()> {
        self.invalidate(&table.ident);
        self.external.alter_table(table)
    }

    /// Table and view names of `database`, sorted.
    pub fn list_tables(&self, database: &str) -> Result<Vec<String>> {
        let database = normalize(database);
        self.require_database(&database)?;
        let mut v = self.external.list_tables(&database)?;
        v.sort();
        Ok(v)
    }

    /// Registers a temporary view (an existing one is an error unless `replace`).
    pub fn create_temp_view(&self, name: &str, view: V, replace: bool) -> Result<()> {
        let key = normalize(name);
        let mut views = self.temp_views.write().map_err(|_| poisoned())?;
        if !replace && views.contains_key(&key) {
            return Err(FerroError::Analysis(format!(
                "[TEMP_TABLE_OR_VIEW_ALREADY_EXISTS] Cannot create the temporary view {} because it already exists.\nChoose a different name, drop or replace the existing view, or add the IF NOT EXISTS clause to tolerate pre-existing views. SQLSTATE: 42P07",
                quote(name)
            )));
        }
        views.insert(key, view);
        Ok(())
    }

    /// A temporary view.
    pub fn temp_view(&self, name: &str) -> Result<Option<V>> {
        Ok(self
            .temp_views
            .read()
            .map_err(|_| poisoned())?
            .get(&normalize(name))
            .cloned())
    }

    /// Drops a temporary view; whether it existed.
    pub fn drop_temp_view(&self, name: &str) -> Result<bool> {
        Ok(self
            .temp_views
            .write()
            .map_err(|_| poisoned())?
            .remove(&normalize(name))
            .is_some())
    }

    /// Temporary view names, sorted.
    pub fn temp_view_names(&self) -> Result<Vec<String>> {
        Ok(self
            .temp_views
            .read()
            .map_err(|_| poisoned())?
            .keys()
            .cloned()
            .collect())
    }

    /// Registers a global temporary view.
    pub fn create_global_temp_view(&self, name: &str, view: V, replace: bool) -> Result<()> {
        let key = normalize(name);
        let mut views = self.global_views.0.write().map_err(|_| poisoned())?;
        if !replace && views.contains_key(&key) {
            return Err(FerroError::Analysis(format!(
                "[TEMP_TABLE_OR_VIEW_ALREADY_EXISTS] Cannot create the temporary view `{GLOBAL_TEMP_DATABASE}`.{} because it already exists.\nChoose a different name, drop or replace the existing view, or add the IF NOT EXISTS clause to tolerate pre-existing views. SQLSTATE: 42P07",
                quote(name)
            )));
        }
        views.insert(key, view);
        Ok(())
    }

    /// A global temporary view.
    pub fn global_temp_view(&self, name: &str) -> Result<Option<V>> {
        Ok(self
            .global_views
            .0
            .read()
            .map_err(|_| poisoned())?
            .get(&normalize(name))
            .cloned())
    }

    /// Drops a global temporary view; whether it existed.
    pub fn drop_global_temp_view(&self, name: &str) -> Result<bool> {
        Ok(self
            .global_views
            .0
            .write()
            .map_err(|_| poisoned())?
            .remove(&normalize(name))
            .is_some())
    }

    /// Global temporary view names, sorted.
    pub fn global_temp_view_names(&self) -> Result<Vec<String>> {
        Ok(self
            .global_views
            .0
            .read()
            .map_err(|_| poisoned())?
            .keys()
            .cloned()
            .collect())
    }

    /// Registers a temporary SQL function.
    pub fn create_temp_function(&self, f: CatalogFunction, replace: bool) -> Result<()> {
        let mut fs = self.temp_functions.write().map_err(|_| poisoned())?;
        let mut udfs = self.temp_udfs.write().map_err(|_| poisoned())?;
        if !replace && (fs.contains_key(&f.name) || udfs.contains_key(&f.name)) {
            return Err(function_exists("session", &f.name));
        }
        udfs.remove(&f.name);
        fs.insert(f.name.clone(), f);
        Ok(())
    }

    /// Drops a temporary function (a SQL one or a registered Python one); whether it existed.
    pub fn drop_temp_function(&self, name: &str) -> Result<bool> {
        let name = normalize(name);
        let sql = self
            .temp_functions
            .write()
            .map_err(|_| poisoned())?
            .remove(&name)
            .is_some();
        let udf = self
            .temp_udfs
            .write()
            .map_err(|_| poisoned())?
            .remove(&name)
            .is_some();
        Ok(sql || udf)
    }

    /// Registers a Python function under `name` for SQL (`spark.udf.register`), replacing a
    /// temporary function of that name. Like Spark's, it shadows a built-in function of the
    /// same name in this session.
    pub fn register_udf(&self, name: &str, f: RegisteredUdf) -> Result<()> {
        let name = normalize(name);
        self.temp_functions
            .write()
            .map_err(|_| poisoned())?
            .remove(&name);
        self.temp_udfs
            .write()
            .map_err(|_| poisoned())?
            .insert(name, f);
        Ok(())
    }

    /// The Python function registered under `name`, if any.
    pub fn udf(&self, name: &str) -> Result<Option<RegisteredUdf>> {
        let udfs = self.temp_udfs.read().map_err(|_| poisoned())?;
        if udfs.is_empty() {
            return Ok(None);
        }
        Ok(udfs.get(&normalize(name)).cloned())
    }

    /// A SQL function by name: a temporary one, else one of the current database (or of
    /// the named database for `db.f`).
    pub fn lookup_function(&self, parts: &[String]) -> Result<Option<CatalogFunction>> {
        match parts {
            [name] => {
                let name = normalize(name);
                if let Some(f) = self
                    .temp_functions
                    .read()
                    .map_err(|_| poisoned())?
                    .get(&name)
                {
                    return Ok(Some(f.clone()));
                }
                self.external.get_function(&self.current_database(), &name)
            }
            [db, name] => self.external.get_function(&normalize(db), &normalize(name)),
            [_, db, name] => self.external.get_function(&normalize(db), &normalize(name)),
            _ => Ok(None),
        }
    }

    /// Temporary function names (SQL and Python ones), sorted.
    pub fn temp_function_names(&self) -> Result<Vec<String>> {
        let mut names: Vec<String> = self
            .temp_functions
            .read()
            .map_err(|_| poisoned())?
            .keys()
            .cloned()
            .collect();
        names.extend(
            self.temp_udfs
                .read()
                .map_err(|_| poisoned())?
                .keys()
                .cloned(),
        );
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// The cached relation of a table.
    pub fn cached(&self, ident: &TableIdent) -> Option<V> {
        self.relation_cache.read().ok()?.get(ident).cloned()
    }

    /// Caches a table's relation (its file listing, its schema).
    pub fn cache(&self, ident: &TableIdent, v: V) {
        if let Ok(mut c) = self.relation_cache.write() {
            c.insert(ident.clone(), v);
        }
    }

    /// Forgets a table's cached relation (every command that changes it calls this).
    pub fn invalidate(&self, ident: &TableIdent) {
        if let Ok(mut c) = self.relation_cache.write() {
            c.remove(ident);
        }
    }

    /// Forgets every cached relation.
    pub fn invalidate_all(&self) {
        if let Ok(mut c) = self.relation_cache.write() {
            c.clear();
        }
    }
}
