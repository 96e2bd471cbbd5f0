//! One query's progress and its cancellation: the scans it runs register their live
//! counters here, whoever waits for the query reads them to draw a progress bar, and
//! Ctrl-C (or any caller) cancels the query through the same object.
//!
//! Progress is counted in scan tasks (Parquet row groups): the work a query can measure
//! before it ends. Operators above the scans (a sort, a join's build) add no tasks, so the bar
//! reaches 100% when the last row group is decoded, as Spark's console bar counts finished
//! tasks of the stages it knows about.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::MetricsSet;

/// The scan counter a finished task bumps.
pub const TASKS_DONE: &str = "row_groups_done";
/// The scan counter of tasks planned (after pruning).
pub const TASKS_PLANNED: &str = "row_groups_read";

/// Shared by a query's operators and the thread waiting for it.
#[derive(Debug, Default)]
pub struct QueryProgress {
    scans: Mutex<Vec<MetricsSet>>,
    cancelled: Arc<AtomicBool>,
}

impl QueryProgress {
    /// A query that has not started.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts a scan's tasks into the query's progress (its metrics carry
    /// [`TASKS_PLANNED`] and [`TASKS_DONE`]).
    pub fn register_scan(&self, metrics: MetricsSet) {
        if let Ok(mut s) = self.scans.lock() {
            s.push(metrics);
        }
    }

    /// `(tasks done, tasks planned)` over every scan registered so far.
    pub fn tasks(&self) -> (u64, u64) {
        let Ok(s) = self.scans.lock() else {
            return (0, 0);
        };
        s.iter().fold((0, 0), |(d, t), m| {
            (d + m.get(TASKS_DONE), t + m.get(TASKS_PLANNED))
        })
    }

    /// Asks every operator to stop; they fail with [`crate::FerroError::Cancelled`].
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether [`QueryProgress::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// The flag a scan polls between tasks.
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        self.cancelled.clone()
    }
}

/// One line of a console progress bar: `[=====>      ]  45% 24/53 row groups  3.1 s`.
pub fn render_bar(done: u64, total: u64, elapsed_s: f64, width: usize) -> String {
    let total = total.max(done);
    let frac = if total == 0 {
        0.0
    } else {
        done as f64 / total as f64
    };
    let filled = ((frac * width as f64) as usize).min(width);
    let mut bar = String::with_capacity(width + 2);
    bar.push('[');
    for i in 0..width {
        bar.push(if i < filled {
            '='
        } else if i == filled {
            '>'
        } else {
            ' '
        });
    }
    bar.push(']');
    format!(
        "{bar} {:>3}% {done}/{total} row groups {elapsed_s:.1} s",
        (frac * 100.0) as u32
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MetricValue;

    #[test]
    fn tasks_sum_over_scans_and_cancel_is_shared() {
        let p = QueryProgress::new();
        let metrics = || {
            MetricsSet::new(&[
                (TASKS_DONE, MetricValue::Count),
                (TASKS_PLANNED, MetricValue::Count),
            ])
        };
        let (a, b) = (metrics(), metrics());
        a.add(TASKS_PLANNED, 10);
        b.add(TASKS_PLANNED, 5);
        a.add(TASKS_DONE, 3);
        p.register_scan(a);
        p.register_scan(b.clone());
        b.add(TASKS_DONE, 5);
        assert_eq!(p.tasks(), (8, 15));
        let flag = p.cancel_flag();
        assert!(!p.is_cancelled());
        p.cancel();
        assert!(flag.load(Ordering::Relaxed));
    }

    #[test]
    fn the_bar_fills_with_the_fraction() {
        assert_eq!(
            render_bar(5, 10, 2.0, 10),
            "[=====>    ]  50% 5/10 row groups 2.0 s"
        );
        assert!(render_bar(0, 0, 0.0, 4).starts_with("[>   ]   0%"));
        assert!(render_bar(3, 3, 1.0, 4).starts_with("[====] 100%"));
    }
}
