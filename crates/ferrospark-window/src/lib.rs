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
//! `cume_dist`, `ntile`), the offset functions `lag` and `lead` (defaults, IGNORE NULLS), and
//! `count`, `sum`, `min` and `max` over ROWS and RANGE frames ([`WindowFrame`]), each frame
//! in one pass per partition.

mod aggregates;
mod counter_diff;
mod exec;
mod frame;
mod functions;
mod spec;
mod spill;
mod statistics;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_frames;
#[cfg(test)]
mod tests_spill;

pub use aggregates::FrameAggregate;
pub use exec::{WindowExec, WINDOW_METRICS};
pub use frame::{FrameBound, FrameOffset, FrameUnit, WindowFrame};
pub use functions::{WindowCall, WindowFunction};
pub use spec::{OrderKey, WindowSpec};
