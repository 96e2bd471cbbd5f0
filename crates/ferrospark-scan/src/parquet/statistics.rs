//! A table's statistics read from its Parquet footers: its row count, and each numeric or date
//! column's range and NULL count. They are what Spark's cost-based optimizer reads from
//! `ANALYZE TABLE ... FOR COLUMNS` (min, max, nulls), here free with the footers, so the
//! planner can estimate how many rows a filter keeps (`p_size = 15` of sizes 1..50 keeps one
//! in 50) and how many groups an aggregation makes, without an ANALYZE.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::ArrayRef;
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;

use parquet::column::page::{Page, PageReader};
use parquet::file::serialized_reader::SerializedPageReader;

use super::dictionary::all_dictionary_encoded;
use super::plan::{single_leaf, ParquetScan};

/// Statistics of one column over every row group of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStatistics {
    /// Smallest and largest value, as numbers (a date as days since the epoch, a decimal as
    /// its value); `None` for strings.
    pub range: Option<(f64, f64)>,
    /// NULLs.
    pub nulls: u64,
    /// How many distinct values the column holds at most: for discrete numbers, how many fit
    /// in the range (`(max - min) * 10^scale + 1`); for strings, the values of a row group's
    /// dictionary; `None` for floats and strings without a small dictionary.
    pub distinct_bound: Option<f64>,
}

/// Statistics of a table: rows, and the columns whose footers carry a range.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableStatistics {
    /// Rows in all files.
    pub rows: u64,
    /// By column name, as the files spell it.
    pub columns: HashMap<String, ColumnStatistics>,
}

/// The number of `a` (a statistics array) as `f64`s, when its type is a number or a date.
fn as_numbers(a: &ArrayRef) -> Option<Vec<Option<f64>>> {
    let a = match a.data_type() {
        DataType::Date32 => arrow_cast::cast(a, &DataType::Int32).ok()?,
        DataType::Date64 | DataType::Timestamp(..) => arrow_cast::cast(a, &DataType::Int64).ok()?,
        t if t.is_numeric() => a.clone(),
        _ => return None,
    };
    let f = arrow_cast::cast(&a, &DataType::Float64).ok()?;
    Some(f.as_primitive::<Float64Type>().iter().collect())
}

/// How many discrete values a column of type `t` holds per unit of its numbers.
fn values_per_unit(t: &DataType) -> Option<f64> {
    match t {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Date32
        | DataType::Date64
        | DataType::Timestamp(..) => Some(1.0),
        DataType::Decimal128(_, s) | DataType::Decimal256(_, s) => Some(10f64.powi(*s as i32)),
        _ => None,
    }
}

impl ParquetScan {
    /// The table's statistics from the footers already read (no I/O).
    pub fn table_statistics(&self) -> TableStatistics {
        let s = &self.shared;
        let mut out = TableStatistics {
            rows: s
                .files
                .iter()
                .map(|f| f.meta.metadata().file_metadata().num_rows().max(0) as u64)
                .sum(),
            columns: HashMap::new(),
        };
        'columns: for (index, field) in s
            .table_schema
            .fields()
            .iter()
            .take(s.data_columns)
            .enumerate()
        {
            if matches!(
                field.data_type(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            ) {
                if let Some(distinct) = self.dictionary_size(index) {
                    out.columns.insert(
                        field.name().clone(),
                        ColumnStatistics {
                            range: None,
                            nulls: 0,
                            distinct_bound: Some(distinct as f64),
                        },
                    );
                }
                continue;
            }
            let Some(per_unit) = values_per_unit(field.data_type())
                .or_else(|| field.data_type().is_floating().then_some(0.0))
            else {
                continue;
            };
            let mut col: Option<ColumnStatistics> = None;
            for f in &s.files {
                let meta = &f.meta;
                let Ok(conv) = StatisticsConverter::try_new(
                    field.name(),
                    meta.schema(),
                    meta.parquet_schema(),
                ) else {
                    continue 'columns;
                };
                let groups = meta.metadata().row_groups();
                let (Ok(mins), Ok(maxes), Ok(nulls)) = (
                    conv.row_group_mins(groups.iter()),
                    conv.row_group_maxes(groups.iter()),
                    conv.row_group_null_counts(groups.iter()),
                ) else {
                    continue 'columns;
                };
                let (Some(mins), Some(maxes)) = (as_numbers(&mins), as_numbers(&maxes)) else {
                    continue 'columns;
                };
                for ((lo, hi), n) in mins.into_iter().zip(maxes).zip(nulls.iter()) {
                    let (Some(lo), Some(hi), Some(n)) = (lo, hi, n) else {
                        continue 'columns;
                    };
                    if lo.is_nan() || hi.is_nan() {
                        continue 'columns;
                    }
                    let c = col.get_or_insert(ColumnStatistics {
                        range: Some((lo, hi)),
                        nulls: 0,
                        distinct_bound: None,
                    });
                    if let Some((min, max)) = &mut c.range {
                        *min = min.min(lo);
                        *max = max.max(hi);
                    }
                    c.nulls += n;
                }
            }
            if let Some(mut c) = col {
                if let (true, Some((min, max))) = (per_unit > 0.0, c.range) {
                    c.distinct_bound = Some(((max - min) * per_unit).round() + 1.0);
                }
                out.columns.insert(field.name().clone(), c);
            }
        }
        out
    }

    /// The most values a dictionary of the first row group of the first files lists, when
    /// those chunks are wholly dictionary-encoded with a small dictionary (`p_brand`'s 25,
    /// `c_mktsegment`'s 5): a string column's distinct values. Reads one small page per file.
    fn dictionary_size(&self, column: usize) -> Option<usize> {
        let mut most: Option<usize> = None;
        for f in self.shared.files.iter().take(FILES_SAMPLED) {
            let md = f.meta.metadata();
            let rg = md.row_groups().first()?;
            let leaf = single_leaf(f.meta.parquet_schema(), column)?;
            let col = rg.column(leaf);
            let start = col.dictionary_page_offset()?;
            if col.data_page_offset().saturating_sub(start) > MAX_DICTIONARY_BYTES
                || !all_dictionary_encoded(col)
            {
                return None;
            }
            let mut pages = SerializedPageReader::new(
                std::sync::Arc::new(f.source.clone()),
                col,
                rg.num_rows().max(0) as usize,
                None,
            )
            .ok()?;
            let Ok(Some(Page::DictionaryPage { num_values, .. })) = pages.get_next_page() else {
                return None;
            };
            most = Some(most.unwrap_or(0).max(num_values as usize));
        }
        most
    }
}

/// Files whose first dictionary a string column's distinct count is read from.
const FILES_SAMPLED: usize = 4;
/// Larger dictionaries (near-unique names and comments) are not read for statistics.
const MAX_DICTIONARY_BYTES: i64 = 64 * 1024;
