//! The vectorised Parquet reader.
//!
//! ```text
//!  paths ──list──▶ files (+ hive partition values)
//!        ──footers (parallel)──▶ schema check, bind filter
//!        ──prune──▶ files (partition values) ▶ row groups (min/max/nulls, bloom filters,
//!                   dictionaries) ▶ pages (page index → RowSelection)
//!        ──execute (N threads, file order kept)──▶ RowFilter decodes the filter columns
//!                   first, then only the surviving rows of the rest ──▶ RecordBatches
//! ```

mod bloom;
mod dictionary;
mod dictionary_codes;
mod exec;
mod footer_cache;
mod ordered;
mod page_header;
mod plan;
pub mod pruning;
mod source;
pub mod spark_types;
mod statistics;

#[cfg(test)]
mod tests;

use ferrospark_common::config::{self, Config};
use ferrospark_common::{MetricValue, MetricsSet, Result};
use ferrospark_expr::Expr;

pub use exec::{ScanReader, ScanStream};
pub use footer_cache::{clear_footer_cache, footer_cache_stats, FooterCacheStats};
pub use plan::{ParquetScan, ScanSplit};
pub use statistics::{ColumnStatistics, TableStatistics};

/// What to read and how.
#[derive(Debug, Clone)]
pub struct ParquetScanOptions {
    /// Output columns by name (file or partition columns), in order; `None` = all.
    pub columns: Option<Vec<String>>,
    /// Rows to keep, as Spark's `filter(cond)` would.
    pub filter: Option<Expr>,
    /// Rows per output batch.
    pub batch_size: usize,
    /// Rows per decoded batch when a filter runs (`ferrospark.scan.filterBatchSize`).
    pub filter_batch_size: usize,
    /// Worker threads decoding row groups.
    pub threads: usize,
    /// Session time zone for TIMESTAMP literals.
    pub session_tz: String,
    /// `spark.sql.parquet.filterPushdown`: prune with statistics, page index, bloom filters
    /// and dictionaries. The filter is applied either way.
    pub filter_pushdown: bool,
    /// Prune row groups with bloom filters.
    pub bloom_filter: bool,
    /// Prune row groups with dictionary pages.
    pub dictionary_filter: bool,
    /// Convert output to the Arrow types Spark accepts (for `mapInArrow`).
    pub spark_types: bool,
    /// Restrict the scan to these row groups of a single file (a Spark split).
    pub row_groups: Option<Vec<usize>>,
    /// Restrict the scan to these files and, in each, these row groups (the splits a Spark
    /// task of a whole-query stage was given); other files are not opened.
    pub only: Option<std::sync::Arc<std::collections::HashMap<std::path::PathBuf, Vec<usize>>>>,
    /// Budget of the process-wide footer cache (`ferrospark.parquet.metadataCache.size`);
    /// 0 parses every footer afresh.
    pub metadata_cache_bytes: usize,
    /// Decide the first filter column on its dictionary codes when every page of it is
    /// dictionary-encoded (`ferrospark.scan.dictionaryCodeFilter`).
    pub dictionary_codes: bool,
    /// Target bytes of one Spark split (`spark.sql.files.maxPartitionBytes`).
    pub max_partition_bytes: u64,
    /// Set by the query's owner to stop the scan between row groups
    /// ([`ferrospark_common::QueryProgress::cancel_flag`]); the scan then fails with
    /// `FerroError::Cancelled`.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Runtime filters: rows whose column is not among a join's build keys are dropped
    /// (row groups and pages by the keys' range, rows by membership, before the other
    /// columns decode).
    pub key_filters: Vec<KeyFilter>,
    /// A catalog table's partition directories, read instead of walking the paths.
    pub partition_dirs: Option<std::sync::Arc<crate::listing::PartitionDirs>>,
}

/// A join's runtime filter on one scan column: only rows whose `column` is in `set` can
/// find a join partner.
#[derive(Debug, Clone)]
pub struct KeyFilter {
    /// The file (or partition) column.
    pub column: String,
    /// The build side's distinct keys.
    pub set: std::sync::Arc<ferrospark_expr::KeySet>,
}

impl Default for ParquetScanOptions {
    fn default() -> Self {
        Self {
            columns: None,
            filter: None,
            batch_size: 8192,
            filter_batch_size: 65536,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            session_tz: "UTC".into(),
            filter_pushdown: true,
            bloom_filter: true,
            dictionary_filter: true,
            spark_types: false,
            row_groups: None,
            only: None,
            metadata_cache_bytes: config::DEFAULT_METADATA_CACHE_BYTES as usize,
            dictionary_codes: true,
            max_partition_bytes: 128 * 1024 * 1024,
            cancel: None,
            key_filters: Vec::new(),
            partition_dirs: None,
        }
    }
}

impl ParquetScanOptions {
    /// Options from a session configuration (Spark's keys and ferrospark's own).
    pub fn from_config(cfg: &Config) -> Result<Self> {
        Ok(Self {
            batch_size: cfg.batch_size()?,
            filter_batch_size: cfg.filter_batch_size()?,
            threads: cfg.scan_threads()?,
            session_tz: cfg.session_time_zone().to_string(),
            filter_pushdown: cfg.get_bool(config::PARQUET_FILTER_PUSHDOWN, true)?,
            bloom_filter: cfg.get_bool(config::PARQUET_BLOOM_FILTER, true)?,
            dictionary_filter: cfg.get_bool(config::PARQUET_DICTIONARY_FILTER, true)?,
            metadata_cache_bytes: usize::try_from(cfg.metadata_cache_size()?).unwrap_or(usize::MAX),
            dictionary_codes: cfg.get_bool(config::SCAN_DICTIONARY_CODES, true)?,
            max_partition_bytes: cfg.max_partition_bytes()?,
            ..Self::default()
        })
    }
}

/// The metrics every Parquet scan records.
pub const SCAN_METRICS: &[(&str, MetricValue)] = &[
    ("files_total", MetricValue::Count),
    ("files_pruned", MetricValue::Count),
    ("row_groups_total", MetricValue::Count),
    ("row_groups_pruned_statistics", MetricValue::Count),
    ("row_groups_pruned_bloom_filter", MetricValue::Count),
    ("row_groups_pruned_dictionary", MetricValue::Count),
    ("row_groups_read", MetricValue::Count),
    (ferrospark_common::progress::TASKS_DONE, MetricValue::Count),
    ("pages_total", MetricValue::Count),
    ("pages_pruned", MetricValue::Count),
    ("rows_total", MetricValue::Count),
    ("rows_read", MetricValue::Count),
    ("rows_output", MetricValue::Count),
    ("batches_output", MetricValue::Count),
    ("bytes_read", MetricValue::Bytes),
    ("decode_time_ns", MetricValue::TimeNs),
    ("plan_time_ns", MetricValue::TimeNs),
    ("footers_cached", MetricValue::Count),
    ("row_groups_filtered_by_codes", MetricValue::Count),
    ("row_groups_masked_by_codes", MetricValue::Count),
    ("columns_from_codes", MetricValue::Count),
    ("columns_taken_by_codes", MetricValue::Count),
    ("row_groups_decided_first", MetricValue::Count),
    ("row_groups_masked_after_deciding", MetricValue::Count),
    ("row_groups_filtered_after_decode", MetricValue::Count),
    ("columns_as_dictionary", MetricValue::Count),
];

fn new_metrics() -> MetricsSet {
    MetricsSet::new(SCAN_METRICS)
}
