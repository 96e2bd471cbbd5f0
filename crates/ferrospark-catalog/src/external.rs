//! The external catalog: where databases, tables, partitions and functions persist (Spark's
//! `ExternalCatalog`), and the errors Spark raises when a name is missing or taken.
//!
//! Each method is one change: the SQLite catalog makes it one transaction, so a process that
//! dies between two calls leaves the first whole and the second absent.

use ferrospark_common::{FerroError, Result};

use crate::model::{
    CatalogDatabase, CatalogFunction, CatalogPartition, CatalogTable, PartitionSpec, TableIdent,
    TableStats,
};
use crate::names::quote;

/// Persistent metadata of a session catalog.
pub trait ExternalCatalog: Send + Sync + std::fmt::Debug {
    /// Creates a database; an existing one is an error unless `ignore_if_exists`.
    fn create_database(&self, db: &CatalogDatabase, ignore_if_exists: bool) -> Result<()>;
    /// Drops a database and, with `cascade`, its tables and functions (returned, so the
    /// caller can remove managed files once the change is committed).
    fn drop_database(
        &self,
        name: &str,
        ignore_if_not_exists: bool,
        cascade: bool,
    ) -> Result<Vec<CatalogTable>>;
    /// Replaces a database's comment, location and properties.
    fn alter_database(&self, db: &CatalogDatabase) -> Result<()>;
    /// A database by name.
    fn get_database(&self, name: &str) -> Result<Option<CatalogDatabase>>;
    /// Every database name.
    fn list_databases(&self) -> Result<Vec<String>>;

    /// Creates a table or view; whether it did (an existing name is an error unless
    /// `ignore_if_exists`).
    fn create_table(&self, table: &CatalogTable, ignore_if_exists: bool) -> Result<bool> {
        self.create_table_with_partitions(table, &[], ignore_if_exists)
    }
    /// Creates a table with its partitions in one change (`CREATE TABLE ... AS SELECT`);
    /// whether it did.
    fn create_table_with_partitions(
        &self,
        table: &CatalogTable,
        parts: &[CatalogPartition],
        ignore_if_exists: bool,
    ) -> Result<bool>;
    /// Drops a table or view with its partitions and statistics; what it was.
    fn drop_table(
        &self,
        ident: &TableIdent,
        ignore_if_not_exists: bool,
    ) -> Result<Option<CatalogTable>>;
    /// Replaces a table's metadata (schema, properties, location, statistics).
    fn alter_table(&self, table: &CatalogTable) -> Result<()>;
    /// Renames a table within its database, moving its location to `new_location` if given.
    fn rename_table(&self, from: &TableIdent, to: &str, new_location: Option<String>)
        -> Result<()>;
    /// A table or view by name.
    fn get_table(&self, ident: &TableIdent) -> Result<Option<CatalogTable>>;
    /// The table and view names of a database.
    fn list_tables(&self, database: &str) -> Result<Vec<String>>;

    /// Adds partitions; existing ones are an error unless `ignore_if_exists`.
    fn create_partitions(
        &self,
        ident: &TableIdent,
        parts: &[CatalogPartition],
        ignore_if_exists: bool,
    ) -> Result<()>;
    /// Drops partitions; what they were.
    fn drop_partitions(
        &self,
        ident: &TableIdent,
        specs: &[PartitionSpec],
        ignore_if_not_exists: bool,
    ) -> Result<Vec<CatalogPartition>>;
    /// The partitions matching every value of `partial` (all without one), by path.
    fn list_partitions(
        &self,
        ident: &TableIdent,
        partial: Option<&PartitionSpec>,
    ) -> Result<Vec<CatalogPartition>>;
    /// The names (`p=1/q=a`) of the partitions matching `partial`, sorted: what `SHOW
    /// PARTITIONS` lists, without loading each partition.
    fn list_partition_names(
        &self,
        ident: &TableIdent,
        partial: Option<&PartitionSpec>,
    ) -> Result<Vec<String>> {
        Ok(sorted_names(&self.list_partitions(ident, partial)?))
    }
    /// Every partition's values and directory, by path: what a scan of the table reads,
    /// without the partitions' parameters.
    fn list_partition_locations(&self, ident: &TableIdent) -> Result<Vec<(PartitionSpec, String)>> {
        Ok(self
            .list_partitions(ident, None)?
            .into_iter()
            .map(|p| (p.spec, p.location))
            .collect())
    }
    /// The end of a write: the partitions it replaced are dropped, those it made added
    /// (existing ones kept), the table's statistics set and the write's `job` recorded as
    /// the table's last, in one change.
    fn commit_write(
        &self,
        ident: &TableIdent,
        dropped: &[PartitionSpec],
        added: &[CatalogPartition],
        stats: Option<TableStats>,
        job: Option<&str>,
    ) -> Result<()>;
    /// The job id of the table's last recorded write (`None` for a table never written or
    /// not there).
    fn last_write_job(&self, ident: &TableIdent) -> Result<Option<String>>;

    /// Creates (or with `replace` replaces) a function.
    fn create_function(&self, f: &CatalogFunction, replace: bool) -> Result<()>;
    /// Drops a function.
    fn drop_function(&self, database: &str, name: &str, ignore_if_not_exists: bool) -> Result<()>;
    /// A function by name.
    fn get_function(&self, database: &str, name: &str) -> Result<Option<CatalogFunction>>;
    /// The function names of a database.
    fn list_functions(&self, database: &str) -> Result<Vec<String>>;
}

/// The sorted names (`p=1/q=a`) of `parts`.
pub fn sorted_names(parts: &[CatalogPartition]) -> Vec<String> {
    let mut names: Vec<String> = parts
        .iter()
        .map(|p| crate::names::partition_path(&p.spec))
        .collect();
    names.sort();
    names
}

/// Whether `part` has every value of `partial`.
pub fn matches_partial(part: &PartitionSpec, partial: &PartitionSpec) -> bool {
    partial.iter().all(|(k, v)| {
        part.iter()
            .any(|(pk, pv)| pk.eq_ignore_ascii_case(k) && pv == v)
    })
}

/// `[SCHEMA_ALREADY_EXISTS]`.
pub fn database_exists(name: &str) -> FerroError {
    FerroError::Analysis(format!(
        "[SCHEMA_ALREADY_EXISTS] Cannot create schema {} because it already exists.\nChoose a different name, drop the existing schema, or add the IF NOT EXISTS clause to tolerate pre-existing schema. SQLSTATE: 42P06",
        quote(name)
    ))
}

/// `[SCHEMA_NOT_FOUND]`.
pub fn database_not_found(name: &str) -> FerroError {
    FerroError::Analysis(format!(
        "[SCHEMA_NOT_FOUND] The schema `spark_catalog`.{} cannot be found. Verify the spelling and correctness of the schema and catalog.\nIf you did not qualify the name with a catalog, verify the current_schema() output, or qualify the name with the correct catalog.\nTo tolerate the error on drop use DROP SCHEMA IF EXISTS. SQLSTATE: 42704",
        quote(name)
    ))
}

/// `[SCHEMA_NOT_EMPTY]`.
pub fn database_not_empty(name: &str) -> FerroError {
    FerroError::Analysis(format!(
        "[SCHEMA_NOT_EMPTY] Cannot drop a schema {} because it contains objects.\nUse DROP SCHEMA ... CASCADE to drop the schema and all its objects. SQLSTATE: 2BP01",
        quote(name)
    ))
}

/// `[TABLE_OR_VIEW_ALREADY_EXISTS]`.
pub fn table_exists(ident: &TableIdent) -> FerroError {
    FerroError::Analysis(format!(
        "[TABLE_OR_VIEW_ALREADY_EXISTS] Cannot create table or view {} because it already exists.\nChoose a different name, drop or replace the existing object, or add the IF NOT EXISTS clause to tolerate pre-existing objects. SQLSTATE: 42P07",
        ident.quoted()
    ))
}

/// `[TABLE_OR_VIEW_NOT_FOUND]` for a name as the user wrote it.
pub fn table_not_found(name: &str) -> FerroError {
    FerroError::Analysis(format!(
        "[TABLE_OR_VIEW_NOT_FOUND] The table or view {name} cannot be found. Verify the spelling and correctness of the schema and catalog.\nIf you did not qualify the name with a schema, verify the current_schema() output, or qualify the name with the correct schema and catalog.\nTo tolerate the error on drop use DROP VIEW IF EXISTS or DROP TABLE IF EXISTS. SQLSTATE: 42P01"
    ))
}

fn spec_text(spec: &PartitionSpec) -> String {
    let items: Vec<String> = spec
        .iter()
        .map(|(k, v)| match v {
            Some(v) => format!("{} = {v}", quote(k)),
            None => format!("{} = NULL", quote(k)),
        })
        .collect();
    format!("PARTITION ({})", items.join(", "))
}

/// `[PARTITIONS_ALREADY_EXIST]`.
pub fn partitions_exist(ident: &TableIdent, specs: &[PartitionSpec]) -> FerroError {
    let list: Vec<String> = specs.iter().map(spec_text).collect();
    FerroError::Analysis(format!(
        "[PARTITIONS_ALREADY_EXIST] Cannot ADD or RENAME TO partition(s) {} in table {} because they already exist.\nChoose a different name, drop the existing partition, or add the IF NOT EXISTS clause to tolerate a pre-existing partition. SQLSTATE: 428FT",
        list.join(", "),
        ident.quoted()
    ))
}

/// `[PARTITIONS_NOT_FOUND]`.
pub fn partitions_not_found(ident: &TableIdent, specs: &[PartitionSpec]) -> FerroError {
    let list: Vec<String> = specs.iter().map(spec_text).collect();
    FerroError::Analysis(format!(
        "[PARTITIONS_NOT_FOUND] The partition(s) {} cannot be found in table {}.\nVerify the partition specification and table name.\nTo tolerate the error on drop use ALTER TABLE ... DROP IF EXISTS PARTITION. SQLSTATE: 428FT",
        list.join(", "),
        ident.quoted()
    ))
}

/// `[ROUTINE_ALREADY_EXISTS]`.
pub fn function_exists(database: &str, name: &str) -> FerroError {
    FerroError::Analysis(format!(
        "[ROUTINE_ALREADY_EXISTS] Cannot create the function `spark_catalog`.{}.{} because it already exists.\nChoose a different name, drop or replace the existing function, or add the IF NOT EXISTS clause to tolerate a pre-existing function. SQLSTATE: 42723",
        quote(database),
        quote(name)
    ))
}

/// `[ROUTINE_NOT_FOUND]`.
pub fn function_not_found(name: &str) -> FerroError {
    FerroError::Analysis(format!(
        "[ROUTINE_NOT_FOUND] The routine {name} cannot be found. Verify the spelling and correctness of the schema and catalog.\nIf you did not qualify the name with a schema and catalog, verify the current_schema() output, or qualify the name with the correct schema and catalog.\nTo tolerate the error on drop use DROP ... IF EXISTS. SQLSTATE: 42883"
    ))
}
