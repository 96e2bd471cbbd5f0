//! Spark's window operator over Arrow batches (issue 5, in progress).
//!
//! A window specification partitions rows by keys and orders each partition
//! ([`WindowSpec`]); window functions ([`WindowFunction`]) compute one value per row from its
//! partition. [`WindowExec`] buffers its input, sorts it by partition then order keys (as
//! Spark's planner puts a sort under its `WindowExec`), evaluates every function of one
//! specification in one pass over each partition, and emits the input columns followed by
//! one column per function, in the sorted order.
//!
//! Built so far: the ranking functions (`row_number`, `rank`, `dense_rank`, `percent_rank`,
//! `cume_dist`, `ntile`) and the offset functions `lag` and `lead` (defaults, IGNORE NULLS).
//! Frames and aggregates over them come next.

mod exec;
mod functions;
mod spec;
#[cfg(test)]
mod tests;

pub use exec::{WindowExec, WINDOW_METRICS};
pub use functions::{WindowCall, WindowFunction};
pub use spec::{OrderKey, WindowSpec};
