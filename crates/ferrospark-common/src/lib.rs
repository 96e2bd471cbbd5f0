//! Shared foundations of ferrospark: the one error type, Spark-named configuration and metrics.
//!
//! Every engine crate returns [`Result`]; the Python bindings map each [`FerroError`] variant to
//! one Python exception class, so the error a user sees is decided here, once.

pub mod config;
pub mod error;
pub mod metrics;

pub use config::{parse_byte_size, Config};
pub use error::{FerroError, Result};
pub use metrics::{MetricValue, MetricsSet};
