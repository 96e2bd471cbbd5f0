//! Spark's runnable commands: catalog and write statements run eagerly against the session
//! catalog when `Session.sql` is called (Spark's `RunnableCommand` / `ExecutedCommandExec`),
//! their output a small relation shaped as Spark's (column names, types, nullability, order).
//!
//! ```text
//!  text ──parse──▶ Command ──run──▶ ddl    (databases, tables, views, partitions, functions)
//!                                  show   (SHOW ..., DESCRIBE ...)
//!                                  write  (INSERT, CTAS, saveAsTable: staged Parquet, one commit)
//!                                  analyze (ANALYZE TABLE: statistics for join selection)
//! ```

mod analyze;
mod ddl;
pub(crate) mod functions;
mod parse;
pub mod relation;
mod show;
pub mod write;

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use ferrospark_common::Result;

use crate::engine::QueryEngine;

pub(crate) use parse::{is_command, parse_command};

/// A column of `CREATE TABLE` / `ALTER TABLE ADD COLUMNS`.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    /// Its name.
    pub name: String,
    /// Its type.
    pub data_type: DataType,
    /// Whether NULL is allowed.
    pub nullable: bool,
    /// `COMMENT`.
    pub comment: Option<String>,
}

/// `CREATE TABLE ...` and `CREATE TABLE ... AS SELECT`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTable {
    /// The name as written.
    pub name: Vec<String>,
    /// `OR REPLACE`.
    pub replace: bool,
    /// `EXTERNAL`.
    pub external: bool,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// Declared columns (partition columns declared in `PARTITIONED BY` at the end).
    pub columns: Option<Vec<ColumnDef>>,
    /// `USING`.
    pub provider: Option<String>,
    /// `OPTIONS`.
    pub options: BTreeMap<String, String>,
    /// `PARTITIONED BY`.
    pub partition_by: Vec<String>,
    /// `LOCATION`.
    pub location: Option<String>,
    /// `COMMENT`.
    pub comment: Option<String>,
    /// `TBLPROPERTIES`.
    pub properties: BTreeMap<String, String>,
    /// `AS query`.
    pub query: Option<String>,
}

/// `CREATE [OR REPLACE] [GLOBAL] [TEMPORARY] VIEW [IF NOT EXISTS] name [(cols)] AS query`.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewDef {
    /// The name as written.
    pub name: Vec<String>,
    /// `OR REPLACE`.
    pub replace: bool,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// Temporary, global temporary or persistent.
    pub kind: ViewKind,
    /// Names given to the query's columns.
    pub columns: Vec<String>,
    /// The query's text.
    pub query: String,
    /// `COMMENT`.
    pub comment: Option<String>,
    /// `TBLPROPERTIES`.
    pub properties: BTreeMap<String, String>,
}

/// Which views `CREATE VIEW` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewKind {
    /// `TEMPORARY`: this session's.
    Temp,
    /// `GLOBAL TEMPORARY`: under `global_temp`.
    GlobalTemp,
    /// Stored in the catalog.
    Persistent,
}

/// What `ANALYZE TABLE` computes.
#[derive(Debug, Clone, PartialEq)]
pub enum StatsMode {
    /// Size only.
    NoScan,
    /// Size and rows.
    Scan,
    /// Size, rows and these columns' statistics.
    Columns(Vec<String>),
    /// Size, rows and every column's statistics.
    AllColumns,
}

/// Which functions `SHOW FUNCTIONS` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FunctionScope {
    /// Built-ins and user functions.
    All,
    /// SQL functions users made.
    User,
    /// Built-ins.
    System,
}

/// A partition spec of `INSERT`: a value per key, `None` where the key is dynamic,
/// `Some(None)` for NULL.
pub type InsertSpec = Vec<(String, Option<Option<String>>)>;

/// A partition spec with a value for every key (`PARTITION (k = v, ...)`).
pub type StaticSpec = Vec<(String, Option<String>)>;

/// A parsed command.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    CreateDatabase {
        name: String,
        if_not_exists: bool,
        comment: Option<String>,
        location: Option<String>,
        properties: BTreeMap<String, String>,
    },
    DropDatabase {
        name: String,
        if_exists: bool,
        cascade: bool,
    },
    AlterDatabaseProperties {
        name: String,
        properties: BTreeMap<String, String>,
    },
    AlterDatabaseLocation {
        name: String,
        location: String,
    },
    Use {
        name: String,
    },
    ShowDatabases {
        pattern: Option<String>,
    },
    ShowTables {
        db: Option<String>,
        pattern: Option<String>,
    },
    ShowViews {
        db: Option<String>,
        pattern: Option<String>,
    },
    ShowPartitions {
        table: Vec<String>,
        spec: Option<Vec<(String, Option<String>)>>,
    },
    ShowColumns {
        table: Vec<String>,
    },
    ShowTblProperties {
        table: Vec<String>,
        key: Option<String>,
    },
    ShowCreateTable {
        table: Vec<String>,
    },
    ShowFunctions {
        scope: FunctionScope,
        pattern: Option<String>,
    },
    DescribeTable {
        table: Vec<String>,
        extended: bool,
        column: Option<String>,
    },
    DescribeDatabase {
        name: String,
        extended: bool,
    },
    DescribeFunction {
        name: Vec<String>,
        extended: bool,
    },
    CreateTable(Box<CreateTable>),
    CreateView(Box<ViewDef>),
    DropTable {
        name: Vec<String>,
        if_exists: bool,
        is_view: bool,
    },
    RenameTable {
        from: Vec<String>,
        to: Vec<String>,
    },
    AddColumns {
        table: Vec<String>,
        columns: Vec<ColumnDef>,
    },
    SetTblProperties {
        table: Vec<String>,
        properties: BTreeMap<String, String>,
    },
    UnsetTblProperties {
        table: Vec<String>,
        keys: Vec<String>,
        if_exists: bool,
    },
    AddPartitions {
        table: Vec<String>,
        if_not_exists: bool,
        parts: Vec<(StaticSpec, Option<String>)>,
    },
    DropPartitions {
        table: Vec<String>,
        if_exists: bool,
        specs: Vec<Vec<(String, Option<String>)>>,
    },
    RecoverPartitions {
        table: Vec<String>,
    },
    Analyze {
        table: Vec<String>,
        spec: Option<InsertSpec>,
        mode: StatsMode,
    },
    Refresh {
        table: Vec<String>,
    },
    Truncate {
        table: Vec<String>,
        spec: Option<Vec<(String, Option<String>)>>,
    },
    Insert {
        table: Vec<String>,
        overwrite: bool,
        spec: InsertSpec,
        columns: Vec<String>,
        query: String,
    },
    CreateFunction {
        name: Vec<String>,
        temporary: bool,
        replace: bool,
        if_not_exists: bool,
        params: Vec<(String, String)>,
        returns: Option<String>,
        body: String,
    },
    DropFunction {
        name: Vec<String>,
        temporary: bool,
        if_exists: bool,
    },
}

/// Runs a command; its output rows.
pub fn run(engine: &QueryEngine, cmd: Command) -> Result<RecordBatch> {
    use Command as C;
    match cmd {
        C::ShowDatabases { .. }
        | C::ShowTables { .. }
        | C::ShowViews { .. }
        | C::ShowPartitions { .. }
        | C::ShowColumns { .. }
        | C::ShowTblProperties { .. }
        | C::ShowCreateTable { .. }
        | C::ShowFunctions { .. }
        | C::DescribeTable { .. }
        | C::DescribeDatabase { .. }
        | C::DescribeFunction { .. } => show::run(engine, cmd),
        C::Insert {
            table,
            overwrite,
            spec,
            columns,
            query,
        } => {
            let plan = engine.query_plan(&query)?;
            write::insert_sql(engine, &table, plan, overwrite, spec, columns)?;
            Ok(empty())
        }
        C::Analyze { table, mode, .. } => {
            analyze::analyze(engine, &table, &mode)?;
            Ok(empty())
        }
        other => {
            ddl::run(engine, other)?;
            Ok(empty())
        }
    }
}

/// The empty output of a command with none.
pub(crate) fn empty() -> RecordBatch {
    RecordBatch::new_empty(Arc::new(Schema::empty()))
}

/// A column of a command's output: name, nullability, Spark's column comment.
pub(crate) struct OutCol {
    name: &'static str,
    nullable: bool,
    comment: Option<&'static str>,
}

pub(crate) const fn col(name: &'static str) -> OutCol {
    OutCol {
        name,
        nullable: false,
        comment: None,
    }
}

/// `f` with its column comment (field metadata `comment`, where the catalog keeps it).
pub(crate) fn with_comment(f: Field, comment: Option<&str>) -> Field {
    match comment {
        Some(text) => f.with_metadata([("comment".to_string(), text.to_string())].into()),
        None => f,
    }
}

/// A string column's output with the rows given.
pub(crate) fn string_rows(cols: &[OutCol], rows: Vec<Vec<Option<String>>>) -> Result<RecordBatch> {
    let fields: Vec<Field> = cols
        .iter()
        .map(|c| with_comment(Field::new(c.name, DataType::Utf8, c.nullable), c.comment))
        .collect();
    let arrays: Vec<ArrayRef> = (0..cols.len())
        .map(|i| {
            Arc::new(StringArray::from_iter(
                rows.iter().map(|r| r.get(i).cloned().flatten()),
            )) as ArrayRef
        })
        .collect();
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}

/// `SHOW TABLES` / `SHOW VIEWS` rows: namespace, name, isTemporary.
pub(crate) fn listing_rows(
    name_col: &'static str,
    rows: Vec<(String, String, bool)>,
) -> Result<RecordBatch> {
    let schema = Schema::new(vec![
        Field::new("namespace", DataType::Utf8, false),
        Field::new(name_col, DataType::Utf8, false),
        Field::new("isTemporary", DataType::Boolean, false),
    ]);
    Ok(RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.0.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.1.as_str()),
            )),
            Arc::new(BooleanArray::from_iter(rows.iter().map(|r| Some(r.2)))),
        ],
    )?)
}
