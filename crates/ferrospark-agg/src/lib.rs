//! Spark's aggregation engine, native: hash, object-hash and sort aggregation with Spark's
//! partial / partial-merge / final / complete modes, memory-bounded spill and the fall-back to
//! sort-based aggregation.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use arrow_array::{Int64Array, RecordBatch, StringArray};
//! use arrow_schema::{DataType, Field, Schema};
//! use ferrospark_agg::{AggregateCall, AggregatePlan};
//! use ferrospark_common::Config;
//! use ferrospark_expr::Expr;
//!
//! let schema = Arc::new(Schema::new(vec![
//!     Field::new("k", DataType::Utf8, true),
//!     Field::new("x", DataType::Int64, true),
//! ]));
//! let batch = RecordBatch::try_new(schema.clone(), vec![
//!     Arc::new(StringArray::from(vec!["a", "b", "a"])),
//!     Arc::new(Int64Array::from(vec![1, 2, 3])),
//! ])?;
//! let plan = AggregatePlan::new(
//!     &schema,
//!     &[Expr::col("k")],
//!     &[AggregateCall::new("sum", vec![Expr::col("x")]), AggregateCall::new("count", vec![])],
//!     &Config::new(),
//! )?;
//! let (out, _metrics) = plan.run_complete(vec![Ok(batch)], &Config::new())?;
//! assert_eq!(out[0].num_rows(), 2);
//! assert_eq!(out[0].schema().field(1).name(), "sum(x)");
//! # Ok(())
//! # }
//! ```

pub mod accumulators;
pub mod exchange;
pub mod exec;
pub mod functions;
pub mod group_values;
pub mod plan;
pub mod sort_aggregate;

#[cfg(test)]
mod tests;

pub use exec::{AggregateOptions, GroupKey, HashAggregateExec, AGG_METRICS};
pub use functions::{AggregateCall, AggregateExpr, AggregateFunction, AggregateMode};
pub use plan::{AggregatePlan, AggregateStage};
