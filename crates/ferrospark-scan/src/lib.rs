//! File scans for ferrospark: the vectorised Parquet reader, and the CSV reader.
//!
//! [`parquet::ParquetScan`] plans a scan (list files and hive partitions, read footers, prune
//! files, row groups and pages) and [`parquet::ParquetScan::execute`] runs it on worker
//! threads, yielding Arrow batches in file order.

pub mod csv;
pub mod listing;
pub mod parquet;

pub use listing::{list_files, Listing, PartitionedFile};
pub use parquet::{
    ColumnStatistics, KeyFilter, ParquetScan, ParquetScanOptions, ScanReader, ScanSplit,
    ScanStream, TableStatistics,
};
