//! What a catalog holds: databases, tables (and views), partitions, functions, statistics.
//!
//! Names here are already normalized (lower case, see [`crate::names`]); a table's schema is
//! its data columns followed by its partition columns, as Spark's `CatalogTable.schema` is.

use std::collections::BTreeMap;

use arrow_schema::SchemaRef;

/// A table's name within its database.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableIdent {
    /// The database.
    pub database: String,
    /// The table.
    pub table: String,
}

impl TableIdent {
    /// `database`.`table`.
    pub fn new(database: impl Into<String>, table: impl Into<String>) -> Self {
        Self {
            database: database.into(),
            table: table.into(),
        }
    }

    /// Spark's quoted form: `` `spark_catalog`.`db`.`t` ``.
    pub fn quoted(&self) -> String {
        format!(
            "`spark_catalog`.{}.{}",
            crate::names::quote(&self.database),
            crate::names::quote(&self.table)
        )
    }
}

impl std::fmt::Display for TableIdent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.database, self.table)
    }
}

/// A database (Spark's namespace / schema).
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogDatabase {
    /// Its name.
    pub name: String,
    /// `COMMENT`.
    pub description: String,
    /// Where its managed tables live (an absolute path).
    pub location: String,
    /// `DBPROPERTIES`.
    pub properties: BTreeMap<String, String>,
}

/// Whether the catalog owns a table's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableType {
    /// Files under the warehouse, removed with the table.
    Managed,
    /// Files at a user's location, left alone by DROP.
    External,
    /// A stored query.
    View,
}

impl TableType {
    /// Spark's name (`MANAGED`, `EXTERNAL`, `VIEW`).
    pub fn spark_name(self) -> &'static str {
        match self {
            TableType::Managed => "MANAGED",
            TableType::External => "EXTERNAL",
            TableType::View => "VIEW",
        }
    }

    /// The Hive metastore's `TBL_TYPE`.
    pub fn hive_name(self) -> &'static str {
        match self {
            TableType::Managed => "MANAGED_TABLE",
            TableType::External => "EXTERNAL_TABLE",
            TableType::View => "VIRTUAL_VIEW",
        }
    }

    /// From the Hive metastore's `TBL_TYPE`.
    pub fn from_hive(s: &str) -> Option<Self> {
        Some(match s {
            "MANAGED_TABLE" => TableType::Managed,
            "EXTERNAL_TABLE" => TableType::External,
            "VIRTUAL_VIEW" => TableType::View,
            _ => return None,
        })
    }
}

/// Statistics of one column (`ANALYZE TABLE ... FOR COLUMNS`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnStat {
    /// Approximate distinct non-null values.
    pub distinct_count: Option<u64>,
    /// Smallest value, as Spark prints it.
    pub min: Option<String>,
    /// Largest value, as Spark prints it.
    pub max: Option<String>,
    /// NULLs.
    pub null_count: Option<u64>,
    /// Average length in bytes.
    pub avg_len: Option<u64>,
    /// Longest length in bytes.
    pub max_len: Option<u64>,
}

/// Statistics of a table or partition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableStats {
    /// Bytes of its files.
    pub size_in_bytes: u64,
    /// Rows, when counted (`ANALYZE TABLE` without `NOSCAN`).
    pub row_count: Option<u64>,
    /// Column statistics by column name.
    pub columns: BTreeMap<String, ColumnStat>,
}

/// A table or view.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogTable {
    /// Its name.
    pub ident: TableIdent,
    /// Managed, external or view.
    pub table_type: TableType,
    /// The data source (`parquet`, `csv`, `json`, `avro`); `None` for a view.
    pub provider: Option<String>,
    /// Where its files are; `None` for a view.
    pub location: Option<String>,
    /// Data columns then partition columns, with comments in field metadata `comment`.
    pub schema: SchemaRef,
    /// Partition column names, in order.
    pub partition_columns: Vec<String>,
    /// `TBLPROPERTIES`.
    pub properties: BTreeMap<String, String>,
    /// The data source's `OPTIONS`.
    pub storage_options: BTreeMap<String, String>,
    /// `COMMENT`.
    pub comment: Option<String>,
    /// A view's SQL text.
    pub view_text: Option<String>,
    /// Milliseconds since the epoch.
    pub created_ms: i64,
    /// Who made it.
    pub owner: String,
    /// `ANALYZE TABLE` results.
    pub stats: Option<TableStats>,
}

impl CatalogTable {
    /// Whether it is partitioned.
    pub fn is_partitioned(&self) -> bool {
        !self.partition_columns.is_empty()
    }

    /// The data columns' fields (partition columns left out).
    pub fn data_fields(&self) -> Vec<arrow_schema::FieldRef> {
        self.schema
            .fields()
            .iter()
            .filter(|f| {
                !self
                    .partition_columns
                    .iter()
                    .any(|p| p.eq_ignore_ascii_case(f.name()))
            })
            .cloned()
            .collect()
    }
}

/// A partition's values, in the table's partition column order; `None` is NULL.
pub type PartitionSpec = Vec<(String, Option<String>)>;

/// One partition of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogPartition {
    /// Its values.
    pub spec: PartitionSpec,
    /// Its directory.
    pub location: String,
    /// Its parameters (statistics among them).
    pub parameters: BTreeMap<String, String>,
    /// Milliseconds since the epoch.
    pub created_ms: i64,
}

/// A SQL function (`CREATE FUNCTION f(x INT) RETURNS INT RETURN x + 1`).
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogFunction {
    /// Its database.
    pub database: String,
    /// Its name.
    pub name: String,
    /// Parameters: (name, Spark type name).
    pub params: Vec<(String, String)>,
    /// The declared return type, if any.
    pub returns: Option<String>,
    /// The expression it returns, as SQL text.
    pub body: String,
    /// Milliseconds since the epoch.
    pub created_ms: i64,
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
