//! `ANALYZE TABLE ... COMPUTE STATISTICS [NOSCAN | FOR COLUMNS ... | FOR ALL COLUMNS]`: the
//! table's size (its files), rows (a count) and column statistics (one aggregate query),
//! kept in the catalog. The size is what join selection reads for the table afterwards.

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use ferrospark_catalog::names::quote;
use ferrospark_catalog::{ColumnStat, TableStats, TableType};
use ferrospark_common::{FerroError, Result};

use super::ddl::{require_table, table_location};
use super::StatsMode;
use crate::engine::QueryEngine;

/// Bytes of the data files a reader sees under `dir` (the scan's own listing).
pub(crate) fn data_size(dir: &Path) -> Result<u64> {
    match ferrospark_scan::list_files(&[dir.to_path_buf()]) {
        Ok(l) => Ok(l.files.iter().map(|f| f.size).sum()),
        Err(FerroError::PathNotFound(_)) => Ok(0),
        Err(e) => Err(e),
    }
}

/// Spark's default size of a value of `dt` (its `defaultSize`), the average and maximum
/// length of a fixed-width column.
fn default_size(dt: &DataType) -> Option<u64> {
    Some(match dt {
        DataType::Boolean | DataType::Int8 => 1,
        DataType::Int16 => 2,
        DataType::Int32 | DataType::Float32 | DataType::Date32 => 4,
        DataType::Int64 | DataType::Float64 | DataType::Timestamp(_, _) => 8,
        DataType::Decimal128(p, _) => {
            if *p <= 18 {
                8
            } else {
                16
            }
        }
        _ => return None,
    })
}

fn run_one_row(engine: &QueryEngine, sql: &str) -> Result<RecordBatch> {
    let plan = engine.query_plan(sql)?;
    let r = engine.execute(&plan)?;
    let schema = r.schema.clone();
    let batches: Vec<RecordBatch> = r.stream.collect::<Result<_>>()?;
    Ok(arrow_select::concat::concat_batches(&schema, &batches)?)
}

fn int_at(b: &RecordBatch, i: usize) -> Option<u64> {
    let c = b.column(i);
    if c.is_null(0) {
        return None;
    }
    let c = arrow_cast::cast(c, &DataType::Int64).ok()?;
    Some(c.as_primitive::<Int64Type>().value(0) as u64)
}

fn text_at(b: &RecordBatch, i: usize) -> Option<String> {
    let c = b.column(i);
    if c.is_null(0) {
        return None;
    }
    let c = arrow_cast::cast(c, &DataType::Utf8).ok()?;
    Some(c.as_string::<i32>().value(0).to_string())
}

pub(super) fn analyze(engine: &QueryEngine, table: &[String], mode: &StatsMode) -> Result<()> {
    let cat = engine.catalog();
    let mut t = require_table(engine, table)?;
    if t.table_type == TableType::View {
        return Err(FerroError::Analysis(format!(
            "[UNSUPPORTED_FEATURE.ANALYZE_VIEW] The feature is not supported: The ANALYZE TABLE command does not support views. SQLSTATE: 0A000 ({})",
            t.ident.quoted()
        )));
    }
    let size_in_bytes = data_size(&table_location(&t)?)?;
    let name = format!("{}.{}", quote(&t.ident.database), quote(&t.ident.table));
    let columns: Vec<String> = match mode {
        StatsMode::Columns(c) => c.clone(),
        StatsMode::AllColumns => t.schema.fields().iter().map(|f| f.name().clone()).collect(),
        _ => Vec::new(),
    };
    let mut fields = Vec::new();
    for c in &columns {
        let f = t
            .schema
            .fields()
            .iter()
            .find(|f| f.name().eq_ignore_ascii_case(c))
            .cloned()
            .ok_or_else(|| {
                FerroError::Analysis(format!(
                    "[COLUMN_NOT_FOUND] The column {} cannot be found. Verify the spelling and correctness of the column name according to the SQL config spark.sql.caseSensitive. SQLSTATE: 42703",
                    quote(c)
                ))
            })?;
        if matches!(
            f.data_type(),
            DataType::List(_) | DataType::Struct(_) | DataType::Map(_, _) | DataType::Binary
        ) {
            return Err(FerroError::Analysis(format!(
                "[UNSUPPORTED_FEATURE.ANALYZE_UNSUPPORTED_COLUMN_TYPE] The feature is not supported: The ANALYZE TABLE FOR COLUMNS command does not support the type \"{}\" of the column {} in the table {}. SQLSTATE: 0A000",
                ferrospark_expr::types::spark_type_name(f.data_type()),
                quote(f.name()),
                t.ident.quoted()
            )));
        }
        fields.push(f);
    }
    let row_count = if matches!(mode, StatsMode::NoScan) {
        None
    } else {
        // One query: the count, then per column its non-NULL count, distinct estimate,
        // extremes and lengths.
        let mut items = vec!["count(*)".to_string()];
        for f in &fields {
            let c = quote(f.name());
            items.push(format!("count({c})"));
            items.push(format!("approx_count_distinct({c})"));
            let ordered = ferrospark_expr::types::is_numeric(f.data_type())
                || matches!(f.data_type(), DataType::Date32 | DataType::Timestamp(_, _));
            if ordered {
                items.push(format!("CAST(min({c}) AS STRING)"));
                items.push(format!("CAST(max({c}) AS STRING)"));
            } else {
                items.push("CAST(NULL AS STRING)".into());
                items.push("CAST(NULL AS STRING)".into());
            }
            if default_size(f.data_type()).is_some() {
                items.push("CAST(NULL AS BIGINT)".into());
                items.push("CAST(NULL AS BIGINT)".into());
            } else {
                items.push(format!("CAST(ceil(avg(octet_length({c}))) AS BIGINT)"));
                items.push(format!("CAST(max(octet_length({c})) AS BIGINT)"));
            }
        }
        let b = run_one_row(engine, &format!("SELECT {} FROM {name}", items.join(", ")))?;
        let rows = int_at(&b, 0).unwrap_or(0);
        let mut stats = t
            .stats
            .as_ref()
            .map(|s| s.columns.clone())
            .unwrap_or_default();
        for (i, f) in fields.iter().enumerate() {
            let at = 1 + i * 6;
            let non_null = int_at(&b, at).unwrap_or(0);
            let fixed = default_size(f.data_type());
            stats.insert(
                f.name().clone(),
                ColumnStat {
                    distinct_count: int_at(&b, at + 1),
                    min: text_at(&b, at + 2),
                    max: text_at(&b, at + 3),
                    null_count: Some(rows - non_null),
                    avg_len: fixed.or_else(|| Some(int_at(&b, at + 4).unwrap_or(20))),
                    max_len: fixed.or_else(|| Some(int_at(&b, at + 5).unwrap_or(20))),
                },
            );
        }
        t.stats = Some(TableStats {
            size_in_bytes,
            row_count: Some(rows),
            columns: stats,
        });
        Some(rows)
    };
    if row_count.is_none() {
        let columns = t
            .stats
            .as_ref()
            .map(|s| s.columns.clone())
            .unwrap_or_else(BTreeMap::new);
        let rows = t.stats.as_ref().and_then(|s| s.row_count);
        t.stats = Some(TableStats {
            size_in_bytes,
            row_count: rows,
            columns,
        });
    }
    cat.alter_table(&t)
}
