//! The single error type of the engine, one variant per Python exception class.

use std::path::{Path, PathBuf};

/// Result alias used across ferrospark.
pub type Result<T, E = FerroError> = std::result::Result<T, E>;

/// Everything that can go wrong in ferrospark. Messages name the file, column or option at
/// fault and, where it helps, what to do next.
#[derive(Debug, thiserror::Error)]
pub enum FerroError {
    /// A path given by the user does not exist.
    #[error("path does not exist: {}", .0.display())]
    PathNotFound(PathBuf),
    /// An I/O failure other than a missing path.
    #[error("I/O error on {}: {source}", .path.display())]
    Io {
        /// The file being read or written.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A corrupt, truncated or non-Parquet file.
    #[error("cannot read Parquet file {}: {message}", .path.display())]
    Parquet {
        /// The file at fault.
        path: PathBuf,
        /// What the decoder said.
        message: String,
    },
    /// A record of a text file (CSV, JSON) that does not parse, in FAILFAST mode.
    #[error("{message} (file {}, line {line})", .path.display())]
    Malformed {
        /// The file at fault.
        path: PathBuf,
        /// The record's first line in it (1-based).
        line: u64,
        /// Spark's message, with the record.
        message: String,
    },
    /// Schemas that do not agree (across files, or with a requested schema).
    #[error("{0}")]
    Schema(String),
    /// A query that cannot be analysed: unknown column, bad SQL text, type mismatch.
    #[error("{0}")]
    Analysis(String),
    /// ANSI-mode runtime failures: overflow, division by zero, invalid cast.
    #[error("{0}")]
    Arithmetic(String),
    /// An invalid configuration value or option.
    #[error("{0}")]
    Config(String),
    /// A valid request that ferrospark does not support (yet).
    #[error("{0}")]
    Unsupported(String),
    /// Memory could not be granted and spilling could not help.
    #[error("{0}")]
    MemoryLimit(String),
    /// The metastore could not be read or changed (a locked, corrupt or newer file).
    #[error("{0}")]
    Metastore(String),
    /// A streaming state store's file or version that cannot be used (corrupt, truncated,
    /// missing, or written by something else).
    #[error("state store {}: {message}", .path.display())]
    StateStore {
        /// The file or directory at fault.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },
    /// A user-defined function (a Python UDF) raised; the message names the function and
    /// carries its exception and traceback.
    #[error("{0}")]
    UserFunction(String),
    /// The query was cancelled (Ctrl-C, or its caller gave up) before it finished.
    #[error("query cancelled")]
    Cancelled,
    /// An invariant of ferrospark itself was broken; a bug to report.
    #[error("internal error: {0} (this is a ferrospark bug; please report it)")]
    Internal(String),
}

impl FerroError {
    /// An I/O error on `path`, mapping "not found" to [`FerroError::PathNotFound`].
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        if source.kind() == std::io::ErrorKind::NotFound {
            FerroError::PathNotFound(path.to_path_buf())
        } else {
            FerroError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    }

    /// A Parquet decoding failure in `path`.
    pub fn parquet(path: &Path, err: impl std::fmt::Display) -> Self {
        FerroError::Parquet {
            path: path.to_path_buf(),
            message: err.to_string(),
        }
    }

    /// Maps an Arrow kernel error raised while evaluating user expressions.
    ///
    /// Overflow, division by zero and failed casts are ANSI runtime errors in Spark; anything
    /// else from a kernel means ferrospark planned something the kernel could not run.
    pub fn from_arrow(err: arrow_schema::ArrowError) -> Self {
        use arrow_schema::ArrowError as A;
        match err {
            A::ArithmeticOverflow(m) => FerroError::Arithmetic(format!(
                "[ARITHMETIC_OVERFLOW] {m}. Use a wider type (CAST to BIGINT or DECIMAL) to avoid it."
            )),
            A::DivideByZero => FerroError::Arithmetic(
                "[DIVIDE_BY_ZERO] Division by zero. Guard the divisor (e.g. NULLIF(x, 0)).".into(),
            ),
            A::CastError(m) | A::ParseError(m) => {
                FerroError::Arithmetic(format!("[CAST_INVALID_INPUT] {m}"))
            }
            A::InvalidArgumentError(m) if m.contains("overflow") || m.contains("too large") => {
                FerroError::Arithmetic(format!("[NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION] {m}"))
            }
            A::ExternalError(e) => match e.downcast::<FerroError>() {
                Ok(fe) => *fe,
                Err(e) => FerroError::Internal(e.to_string()),
            },
            other => FerroError::Internal(other.to_string()),
        }
    }
}

impl From<arrow_schema::ArrowError> for FerroError {
    fn from(err: arrow_schema::ArrowError) -> Self {
        FerroError::from_arrow(err)
    }
}

impl From<FerroError> for arrow_schema::ArrowError {
    fn from(err: FerroError) -> Self {
        arrow_schema::ArrowError::ExternalError(Box::new(err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_maps_to_path_not_found() {
        let e = FerroError::io(
            Path::new("/nope"),
            std::io::Error::from(std::io::ErrorKind::NotFound),
        );
        assert!(matches!(e, FerroError::PathNotFound(_)));
        assert!(e.to_string().contains("/nope"));
    }

    #[test]
    fn ferro_error_survives_a_trip_through_arrow() {
        let e: arrow_schema::ArrowError = FerroError::Analysis("unknown column x".into()).into();
        match FerroError::from(e) {
            FerroError::Analysis(m) => assert_eq!(m, "unknown column x"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn overflow_is_an_ansi_arithmetic_error() {
        let e = FerroError::from(arrow_schema::ArrowError::ArithmeticOverflow("1 + 2".into()));
        assert!(matches!(e, FerroError::Arithmetic(_)));
        assert!(e.to_string().contains("ARITHMETIC_OVERFLOW"));
    }
}
