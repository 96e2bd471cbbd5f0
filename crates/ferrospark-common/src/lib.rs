//! Shared foundations of ferrospark: the one error type, Spark-named configuration, metrics,
//! the memory pool, spill files and Spark's decimal averaging.
//!
//! Every engine crate returns [`Result`]; the Python bindings map each [`FerroError`] variant to
//! one Python exception class, so the error a user sees is decided here, once.

pub mod atomic_file;
pub mod batch;
pub mod config;
pub mod decimal;
pub mod error;
pub mod hive_paths;
pub mod memory;
pub mod metrics;
pub mod murmur3;
pub mod order;
pub mod progress;
pub mod spark_bits;
pub mod spill;
pub mod workers;
pub mod xxhash64;

pub use batch::{batch_with_rows, take_batch};
pub use config::{parse_byte_size, Config};
pub use error::{FerroError, Result};
pub use memory::{batch_bytes, MemoryPool, MemoryReservation};
pub use metrics::{MetricValue, MetricsSet};
pub use progress::QueryProgress;
pub use spill::{SpillDir, SpillFile, SpillReader, SpillWriter};
