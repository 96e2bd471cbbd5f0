//! `SHOW ...` and `DESCRIBE ...`: the catalog's contents as rows shaped as Spark's (column
//! names, nullability, row order, the text of each cell).

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use ferrospark_catalog::names::{filter_names, normalize, quote};
use ferrospark_catalog::types::{catalog_string, ddl_string};
use ferrospark_catalog::warehouse::location_uri;
use ferrospark_catalog::{CatalogTable, Relation, TableType};
use ferrospark_common::{FerroError, Result};

use super::ddl::{normalize_spec, not_partitioned, require_table};
use super::{col, listing_rows, string_rows, Command, FunctionScope, OutCol};
use crate::engine::QueryEngine;

const DESC_TABLE: [OutCol; 3] = [
    OutCol {
        name: "col_name",
        nullable: false,
        comment: Some("name of the column"),
    },
    OutCol {
        name: "data_type",
        nullable: false,
        comment: Some("data type of the column"),
    },
    OutCol {
        name: "comment",
        nullable: true,
        comment: Some("comment of the column"),
    },
];

const DESC_DB: [OutCol; 2] = [
    OutCol {
        name: "info_name",
        nullable: false,
        comment: Some("name of the namespace info"),
    },
    OutCol {
        name: "info_value",
        nullable: true,
        comment: Some("value of the namespace info"),
    },
];

const DESC_COLUMN: [OutCol; 2] = [
    OutCol {
        name: "info_name",
        nullable: false,
        comment: Some("name of the column info"),
    },
    OutCol {
        name: "info_value",
        nullable: false,
        comment: Some("value of the column info"),
    },
];

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

/// Java's `Date.toString` in UTC, as Spark prints creation times.
fn java_date(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| d.format("%a %b %d %H:%M:%S UTC %Y").to_string())
        .unwrap_or_default()
}

pub(super) fn run(engine: &QueryEngine, cmd: Command) -> Result<RecordBatch> {
    let cat = engine.catalog();
    match cmd {
        Command::ShowDatabases { pattern } => {
            let names = filter_names(cat.list_databases()?, pattern.as_deref());
            string_rows(
                &[col("namespace")],
                names.into_iter().map(|n| vec![Some(n)]).collect(),
            )
        }
        Command::ShowTables { db, pattern } | Command::ShowViews { db, pattern }
            if db.as_deref().is_some_and(|d| {
                d.eq_ignore_ascii_case(ferrospark_catalog::session::GLOBAL_TEMP_DATABASE)
            }) =>
        {
            let mut rows: Vec<(String, String, bool)> =
                filter_names(cat.global_temp_view_names()?, pattern.as_deref())
                    .into_iter()
                    .map(|n| ("global_temp".to_string(), n, true))
                    .collect();
            rows.extend(temp_rows(engine, pattern.as_deref())?);
            listing_rows("tableName", rows)
        }
        Command::ShowTables { db, pattern } => {
            let db = normalize(&db.unwrap_or_else(|| cat.current_database()));
            let mut rows: Vec<(String, String, bool)> =
                filter_names(cat.list_tables(&db)?, pattern.as_deref())
                    .into_iter()
                    .map(|n| (db.clone(), n, false))
                    .collect();
            rows.extend(temp_rows(engine, pattern.as_deref())?);
            listing_rows("tableName", rows)
        }
        Command::ShowViews { db, pattern } => {
            let db = normalize(&db.unwrap_or_else(|| cat.current_database()));
            let mut rows = Vec::new();
            for n in filter_names(cat.list_tables(&db)?, pattern.as_deref()) {
                let t = cat
                    .external()
                    .get_table(&ferrospark_catalog::TableIdent::new(&db, &n))?;
                if t.is_some_and(|t| t.table_type == TableType::View) {
                    rows.push((db.clone(), n, false));
                }
            }
            rows.extend(temp_rows(engine, pattern.as_deref())?);
            listing_rows("viewName", rows)
        }
        Command::ShowPartitions { table, spec } => {
            let t = require_table(engine, &table)?;
            if !t.is_partitioned() {
                return Err(not_partitioned(&t));
            }
            let partial = match spec {
                Some(s) => Some(normalize_spec(&t, &s, false)?),
                None => None,
            };
            let names = cat
                .external()
                .list_partition_names(&t.ident, partial.as_ref())?;
            string_rows(
                &[col("partition")],
                names.into_iter().map(|n| vec![Some(n)]).collect(),
            )
        }
        Command::ShowColumns { table } => {
            let (fields, _) = relation_fields(engine, &table)?;
            string_rows(
                &[col("col_name")],
                fields.into_iter().map(|(n, _, _)| vec![Some(n)]).collect(),
            )
        }
        Command::ShowTblProperties { table, key } => {
            let t = require_table(engine, &table)?;
            let mut props = t.properties.clone();
            if let Some(c) = &t.comment {
                props.insert("comment".into(), c.clone());
            }
            let rows: Vec<Vec<Option<String>>> = match key {
                Some(k) => match props.get(&k) {
                    Some(v) => vec![vec![Some(k), Some(v.clone())]],
                    None => vec![vec![
                        Some(k.clone()),
                        Some(format!(
                            "Table {} does not have property: {k}",
                            t.ident.quoted()
                        )),
                    ]],
                },
                None => props
                    .into_iter()
                    .map(|(k, v)| vec![Some(k), Some(v)])
                    .collect(),
            };
            string_rows(&[col("key"), col("value")], rows)
        }
        Command::ShowCreateTable { table } => {
            if let [name] = table.as_slice() {
                if cat.temp_view(name)?.is_some() {
                    return Err(FerroError::Analysis(format!(
                        "[EXPECT_PERMANENT_VIEW_NOT_TEMP] 'SHOW CREATE TABLE' expects a permanent view but {} is a temp view. SQLSTATE: 42809",
                        quote(name)
                    )));
                }
            }
            let t = require_table(engine, &table)?;
            string_rows(
                &[col("createtab_stmt")],
                vec![vec![Some(create_statement(&t))]],
            )
        }
        Command::ShowFunctions { scope, pattern } => {
            // Patterns match a function's own name; persistent ones are listed qualified.
            let mut names: Vec<String> = Vec::new();
            if scope != FunctionScope::User {
                names.extend(filter_names(builtin_functions(), pattern.as_deref()));
            }
            if scope != FunctionScope::System {
                names.extend(filter_names(cat.temp_function_names()?, pattern.as_deref()));
                let db = cat.current_database();
                for f in filter_names(cat.external().list_functions(&db)?, pattern.as_deref()) {
                    names.push(format!("spark_catalog.{db}.{f}"));
                }
            }
            names.sort();
            names.dedup();
            string_rows(
                &[col("function")],
                names.into_iter().map(|n| vec![Some(n)]).collect(),
            )
        }
        Command::DescribeDatabase { name, extended } => {
            let db = cat.require_database(&normalize(&name))?;
            let mut rows = vec![
                vec![s("Catalog Name"), s("spark_catalog")],
                vec![s("Namespace Name"), Some(db.name.clone())],
                vec![s("Comment"), Some(db.description.clone())],
                vec![s("Location"), Some(location_uri(&db.location))],
                vec![s("Owner"), Some(super::ddl::owner())],
            ];
            if extended {
                let props: Vec<String> = db
                    .properties
                    .iter()
                    .map(|(k, v)| format!("({k},{v})"))
                    .collect();
                let text = if props.is_empty() {
                    String::new()
                } else {
                    format!("({})", props.join(", "))
                };
                rows.push(vec![s("Properties"), Some(text)]);
            }
            string_rows(&DESC_DB, rows)
        }
        Command::DescribeFunction { name, extended } => {
            let rows = match cat.lookup_function(&name)? {
                Some(f) => {
                    let shown = if f.database == "session" {
                        f.name.clone()
                    } else {
                        format!("spark_catalog.{}.{}", f.database, f.name)
                    };
                    let input: Vec<String> =
                        f.params.iter().map(|(n, t)| format!("{n} {t}")).collect();
                    vec![
                        vec![Some(format!("Function: {shown}"))],
                        vec![s("Type:     SCALAR")],
                        vec![Some(format!("Input:    {}", input.join(", ")))],
                        vec![Some(format!(
                            "Returns:  {}",
                            f.returns.clone().unwrap_or_default()
                        ))],
                    ]
                }
                None => {
                    let n = name.last().map(|n| n.to_lowercase()).unwrap_or_default();
                    if !builtin_functions().contains(&n) {
                        return Err(ferrospark_catalog::external::function_not_found(
                            &name.iter().map(|p| quote(p)).collect::<Vec<_>>().join("."),
                        ));
                    }
                    if ferrospark_expr::parser::CAST_ALIASES.contains(&n.as_str()) {
                        // `boolean(x)`, `int(x)`, ...: Spark registers these as casts.
                        let mut rows = vec![
                            vec![Some(format!("Function: {n}"))],
                            vec![s("Class: org.apache.spark.sql.catalyst.expressions.Cast")],
                            vec![Some(format!(
                                "Usage: {n}(expr) - Casts the value `expr` to the target data type `{n}`."
                            ))],
                        ];
                        if extended {
                            rows.push(vec![Some(format!(
                                "Extended Usage:\n    No example/argument for {n}.\n\n    Since: 2.0.1\n"
                            ))]);
                        }
                        rows
                    } else {
                        vec![
                            vec![Some(format!("Function: {n}"))],
                            vec![Some(format!("Usage: {n}(...): a built-in function"))],
                        ]
                    }
                }
            };
            string_rows(
                &[OutCol {
                    name: "function_desc",
                    nullable: false,
                    comment: None,
                }],
                rows,
            )
        }
        Command::DescribeTable {
            table,
            extended,
            column,
        } => match column {
            Some(c) => describe_column(engine, &table, &c, extended),
            None => describe_table(engine, &table, extended),
        },
        other => Err(FerroError::Internal(format!("{other:?} shows nothing"))),
    }
}

fn temp_rows(engine: &QueryEngine, pattern: Option<&str>) -> Result<Vec<(String, String, bool)>> {
    Ok(filter_names(engine.catalog().temp_view_names()?, pattern)
        .into_iter()
        .map(|n| (String::new(), n, true))
        .collect())
}

/// A column as `DESCRIBE` shows it: name, catalog type string, comment.
type FieldRow = (String, String, Option<String>);

/// The columns of what `parts` names, and its catalog entry when it is a table or
/// persistent view (one lookup for both).
fn relation_fields(
    engine: &QueryEngine,
    parts: &[String],
) -> Result<(Vec<FieldRow>, Option<CatalogTable>)> {
    let cat = engine.catalog();
    match cat.lookup(parts)? {
        Some(Relation::TempView(p)) | Some(Relation::GlobalTempView(p)) => Ok((
            p.output()
                .iter()
                .map(|a| (a.name.clone(), catalog_string(&a.data_type), None))
                .collect(),
            None,
        )),
        Some(Relation::Table(t)) => Ok((
            t.schema
                .fields()
                .iter()
                .map(|f| {
                    (
                        f.name().clone(),
                        catalog_string(f.data_type()),
                        f.metadata().get("comment").cloned(),
                    )
                })
                .collect(),
            Some(*t),
        )),
        None => {
            let ident = cat.qualify(parts)?;
            cat.require_database(&ident.database)?;
            Err(super::ddl::missing_table(engine, &ident))
        }
    }
}

fn describe_table(engine: &QueryEngine, parts: &[String], extended: bool) -> Result<RecordBatch> {
    let (fields, table) = relation_fields(engine, parts)?;
    let mut rows: Vec<Vec<Option<String>>> = fields
        .iter()
        .map(|(n, t, c)| vec![Some(n.clone()), Some(t.clone()), c.clone()])
        .collect();
    if let Some(t) = &table {
        if t.is_partitioned() {
            rows.push(vec![s("# Partition Information"), s(""), s("")]);
            rows.push(vec![s("# col_name"), s("data_type"), s("comment")]);
            for p in &t.partition_columns {
                if let Some((n, ty, c)) = fields.iter().find(|(n, _, _)| n == p) {
                    rows.push(vec![Some(n.clone()), Some(ty.clone()), c.clone()]);
                }
            }
        }
        if extended {
            rows.push(vec![s(""), s(""), s("")]);
            rows.push(vec![s("# Detailed Table Information"), s(""), s("")]);
            for (k, v) in table_details(t) {
                rows.push(vec![Some(k), Some(v), s("")]);
            }
        }
    }
    string_rows(&DESC_TABLE, rows)
}

/// The `# Detailed Table Information` section, in Spark's order.
fn table_details(t: &CatalogTable) -> Vec<(String, String)> {
    let mut d = vec![
        ("Catalog".to_string(), "spark_catalog".to_string()),
        ("Database".into(), t.ident.database.clone()),
        ("Table".into(), t.ident.table.clone()),
        ("Created Time".into(), java_date(t.created_ms)),
        ("Last Access".into(), "UNKNOWN".into()),
        (
            "Created By".into(),
            format!("ferrospark {}", env!("CARGO_PKG_VERSION")),
        ),
        ("Type".into(), t.table_type.spark_name().into()),
    ];
    if let Some(p) = &t.provider {
        d.push(("Provider".into(), p.clone()));
    }
    if let Some(c) = &t.comment {
        d.push(("Comment".into(), c.clone()));
    }
    if t.table_type == TableType::View {
        let text = t.view_text.clone().unwrap_or_default();
        d.push(("View Text".into(), text.clone()));
        d.push(("View Original Text".into(), text));
        d.push(("View Schema Mode".into(), "COMPENSATION".into()));
        d.push((
            "View Catalog and Namespace".into(),
            format!("spark_catalog.{}", t.ident.database),
        ));
        let cols: Vec<String> = t.schema.fields().iter().map(|f| quote(f.name())).collect();
        d.push((
            "View Query Output Columns".into(),
            format!("[{}]", cols.join(", ")),
        ));
    }
    if !t.properties.is_empty() {
        d.push(("Table Properties".into(), bracket(&t.properties)));
    }
    if let Some(st) = &t.stats {
        let text = match st.row_count {
            Some(r) => format!("{} bytes, {r} rows", st.size_in_bytes),
            None => format!("{} bytes", st.size_in_bytes),
        };
        d.push(("Statistics".into(), text));
    }
    if let Some(l) = &t.location {
        d.push(("Location".into(), location_uri(l)));
    }
    if !t.storage_options.is_empty() {
        d.push(("Storage Properties".into(), bracket(&t.storage_options)));
    }
    if t.is_partitioned() {
        d.push(("Partition Provider".into(), "Catalog".into()));
    }
    d
}

fn bracket(m: &BTreeMap<String, String>) -> String {
    let items: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("[{}]", items.join(", "))
}

fn describe_column(
    engine: &QueryEngine,
    parts: &[String],
    column: &str,
    extended: bool,
) -> Result<RecordBatch> {
    let (fields, table) = relation_fields(engine, parts)?;
    let Some((name, ty, comment)) = fields
        .iter()
        .find(|(n, _, _)| n.eq_ignore_ascii_case(column))
    else {
        return Err(FerroError::Analysis(format!(
            "[COLUMN_NOT_FOUND] The column {} cannot be found. Verify the spelling and correctness of the column name according to the SQL config spark.sql.caseSensitive. SQLSTATE: 42703",
            quote(column)
        )));
    };
    let null = || s("NULL");
    let mut rows = vec![
        vec![s("col_name"), Some(name.clone())],
        vec![s("data_type"), Some(ty.clone())],
        vec![s("comment"), comment.clone().or_else(null)],
    ];
    if extended {
        let stat = table
            .as_ref()
            .and_then(|t| t.stats.as_ref())
            .and_then(|st| st.columns.get(name).cloned());
        let n = |v: Option<u64>| v.map(|v| v.to_string()).or_else(null);
        let st = stat.unwrap_or_default();
        rows.push(vec![s("min"), st.min.clone().or_else(null)]);
        rows.push(vec![s("max"), st.max.clone().or_else(null)]);
        rows.push(vec![s("num_nulls"), n(st.null_count)]);
        rows.push(vec![s("distinct_count"), n(st.distinct_count)]);
        rows.push(vec![s("avg_col_len"), n(st.avg_len)]);
        rows.push(vec![s("max_col_len"), n(st.max_len)]);
        rows.push(vec![s("histogram"), null()]);
    }
    string_rows(&DESC_COLUMN, rows)
}

/// `SHOW CREATE TABLE`'s statement.
fn create_statement(t: &CatalogTable) -> String {
    let name = format!("spark_catalog.{}.{}", t.ident.database, t.ident.table);
    let cols: Vec<String> = t
        .schema
        .fields()
        .iter()
        .map(|f| {
            let mut c = format!("  {} {}", f.name(), ddl_string(f.data_type()));
            if !f.is_nullable() {
                c.push_str(" NOT NULL");
            }
            if let Some(text) = f.metadata().get("comment") {
                c.push_str(&format!(" COMMENT '{}'", text.replace('\'', "\\'")));
            }
            c
        })
        .collect();
    if t.table_type == TableType::View {
        let names: Vec<String> = t
            .schema
            .fields()
            .iter()
            .map(|f| format!("  {}", f.name()))
            .collect();
        return format!(
            "CREATE VIEW {}.{} (\n{})\nWITH SCHEMA COMPENSATION\nAS {}\n",
            t.ident.database,
            t.ident.table,
            names.join(",\n"),
            t.view_text.clone().unwrap_or_default()
        );
    }
    let mut out = format!("CREATE TABLE {name} (\n{})\n", cols.join(",\n"));
    out.push_str(&format!(
        "USING {}\n",
        t.provider.clone().unwrap_or_default()
    ));
    let props = |m: &BTreeMap<String, String>| {
        m.iter()
            .map(|(k, v)| format!("  '{k}' = '{v}'"))
            .collect::<Vec<_>>()
            .join(",\n")
    };
    if !t.storage_options.is_empty() {
        out.push_str(&format!("OPTIONS (\n{})\n", props(&t.storage_options)));
    }
    if t.is_partitioned() {
        out.push_str(&format!(
            "PARTITIONED BY ({})\n",
            t.partition_columns.join(", ")
        ));
    }
    if t.table_type == TableType::External {
        if let Some(l) = &t.location {
            out.push_str(&format!("LOCATION '{}'\n", location_uri(l)));
        }
    }
    if let Some(c) = &t.comment {
        out.push_str(&format!("COMMENT '{c}'\n"));
    }
    if !t.properties.is_empty() {
        out.push_str(&format!("TBLPROPERTIES (\n{})\n", props(&t.properties)));
    }
    out
}

/// The built-in functions `SHOW FUNCTIONS` lists: scalar functions, aggregates, window
/// functions.
fn builtin_functions() -> Vec<String> {
    let mut v: Vec<String> = ferrospark_expr::functions::FUNCTION_NAMES
        .iter()
        .map(|s| s.to_string())
        .collect();
    for a in [
        "approx_count_distinct",
        "avg",
        "collect_list",
        "collect_set",
        "count",
        "count_if",
        "first",
        "last",
        "max",
        "max_by",
        "median",
        "percentile",
        "percentile_cont",
        "percentile_disc",
        "mean",
        "min",
        "min_by",
        "stddev",
        "stddev_pop",
        "stddev_samp",
        "corr",
        "covar_pop",
        "covar_samp",
        "regr_sxx",
        "regr_syy",
        "regr_slope",
        "sum",
        "var_pop",
        "var_samp",
        "variance",
        "counter_diff",
        "cume_dist",
        "dense_rank",
        "lag",
        "lead",
        "nth_value",
        "ntile",
        "percent_rank",
        "rank",
        "row_number",
    ] {
        v.push(a.to_string());
    }
    v.sort();
    v.dedup();
    v
}
