//! File scans for ferrospark: the vectorised Parquet reader, and the row-format readers
//! (CSV, JSON, Avro).
//!
//! [`parquet::ParquetScan`] plans a scan (list files and hive partitions, read footers, prune
//! files, row groups and pages) and [`parquet::ParquetScan::execute`] runs it on worker
//! threads, yielding Arrow batches in file order. [`FileScan`] plans a CSV, JSON or Avro scan
//! and [`FileScan::stream`] reads it, checking pushed filters while records convert.

pub mod avro;
pub mod csv;
pub mod formats;
pub mod json;
pub mod listing;
pub mod parquet;
pub mod text;
pub mod write;

pub use formats::{FileBatches, FileFormat, FileScan};
pub use listing::{
    list_files, list_partition_dirs, Listing, PartitionDir, PartitionDirs, PartitionedFile,
};
pub use parquet::{
    ColumnStatistics, KeyFilter, ParquetScan, ParquetScanOptions, ScanReader, ScanSplit,
    ScanStream, TableStatistics,
};
pub use text::{Charset, FileRanges, FileScanPlan, ParseMode, TextStream, FILE_SCAN_METRICS};
