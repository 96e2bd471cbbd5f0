//! Expressions and predicates over Arrow with Spark SQL semantics.
//!
//! The flow is *parse or build → bind → evaluate*:
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use arrow_array::{Int32Array, RecordBatch};
//! use arrow_schema::{DataType, Field, Schema};
//! use ferrospark_expr::{bind_predicate, filter_batch, parse_expr, BindContext};
//!
//! let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, true)]));
//! let batch = RecordBatch::try_new(
//!     schema.clone(),
//!     vec![Arc::new(Int32Array::from(vec![Some(1), None, Some(7)]))],
//! )?;
//! let expr = parse_expr("a > 2 OR a IS NULL")?;                  // logical, unresolved
//! let pred = bind_predicate(&expr, &BindContext::new(&schema))?; // typed, resolved
//! assert_eq!(filter_batch(&batch, &pred)?.num_rows(), 2);
//! # Ok(())
//! # }
//! ```
//!
//! [`Expr`] is what users write and prints as Spark SQL text that parses back to itself, so an
//! expression crosses process boundaries (a Spark task) as a string. [`PhysicalExpr`] is the
//! bound form with Spark's implicit casts made explicit.

pub mod bind;
mod cast;
pub mod collected;
pub mod csv;
mod depth;
pub mod dialect;
pub mod eval;
pub mod expr;
pub mod functions;
pub mod in_set;
pub mod interval;
mod interval_cast;
mod interval_syntax;
pub mod json;
mod like_pieces;
mod nested_cmp;
mod normalize;
pub mod parser;
pub mod physical;
pub mod shared;
pub mod text_options;
mod timestamp_text;
pub mod transform;
pub mod types;
pub mod udf;
pub mod wire;

#[cfg(test)]
mod tests;

pub use bind::{
    bind, bind_predicate, resolve_column, resolve_column_or_path, BindContext, ColumnRef,
};
pub use cast::to_spark_string;
pub use depth::{
    check_expr_depth, expr_depth, parse_expr_checked, too_deep_error, with_stack_for_text,
    MAX_EXPR_DEPTH,
};
pub use eval::{evaluate, evaluate_predicate, filter_batch, pack_bits, ColumnarValue};
pub use expr::{aggregate_call_name, strip_ids, BinaryOp, Expr, Literal, StringMatch};
pub use in_set::KeySet;
pub use normalize::normalize_key;
pub use parser::parse_expr;
pub use physical::{CastMode, PhysicalExpr, ScalarFunction};
pub use shared::SharedExprs;
pub use udf::{RegisteredUdf, ScalarUdf, ScalarUdfImpl};
