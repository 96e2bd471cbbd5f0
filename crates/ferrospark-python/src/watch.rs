//! Waiting for a query: the work runs on one of the session's workers while the calling thread, GIL
//! released, wakes every [`SIGNAL_POLL`] to run Python's signal handlers and to redraw the
//! console progress bar.
//!
//! ```text
//!   caller (GIL released) ── recv_timeout ──┬─ result ─────────────▶ clear bar, return
//!                                           ├─ timeout ─▶ signals? ─ KeyboardInterrupt ─▶ cancel,
//!                                           │             draw bar   wait for the query, raise
//!   session worker ── execute_watched ──────┘
//! ```
//! Ctrl-C cancels through [`QueryProgress::cancel`]: scans stop at their next row group, the
//! query unwinds with `FerroError::Cancelled`, and the caller raises the `KeyboardInterrupt`.

use std::io::{IsTerminal, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrospark_common::progress::render_bar;
use ferrospark_common::workers::WorkerPool;
use ferrospark_common::{Config, FerroError, QueryProgress};
use pyo3::prelude::*;

use crate::guard::{panic_error, Detach};
use crate::{IntoPyResult, SIGNAL_POLL};

/// Stack of a worker thread, where queries run: optimizing and planning recurse once per expression level, and
/// an expression at `MAX_EXPR_DEPTH` needs more than a spawned thread's default 2 MiB (the
/// interpreter's main thread, where queries ran before, has 8 MiB). Address space only: pages
/// are touched as used.
pub(crate) const QUERY_STACK: usize = 64 * 1024 * 1024;

/// Width of the bar between its brackets.
const BAR_WIDTH: usize = 40;

/// What one wait gave.
enum Waited<T> {
    Done(Result<T, FerroError>),
    Pending,
}

/// Runs `work` on one of the session's `workers`, handling Ctrl-C and drawing the progress bar per `cfg`
/// (`ferrospark.progress.bar`, `ferrospark.progress.delay`) while it runs.
pub(crate) fn run_watched<T, F>(
    py: Python<'_>,
    cfg: &Config,
    workers: &WorkerPool,
    work: F,
) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce(Arc<QueryProgress>) -> Result<T, FerroError> + Send + 'static,
{
    let show = cfg
        .progress_bar()
        .py(py)?
        .unwrap_or_else(|| std::io::stderr().is_terminal());
    let delay = Duration::from_millis(cfg.progress_delay_ms().py(py)?);
    let progress = Arc::new(QueryProgress::new());
    let (tx, rx) = sync_channel(1);
    let theirs = progress.clone();
    workers.spawn(move || {
        let r =
            catch_unwind(AssertUnwindSafe(|| work(theirs))).unwrap_or_else(|p| Err(panic_error(p)));
        let _ = tx.send(r);
    });
    // Behind a mutex only so the detached closures may borrow it (a Receiver is not Sync).
    let rx = Mutex::new(rx);
    let started = Instant::now();
    let mut drawn = false;
    loop {
        let waited = py
            .run_detached(|| {
                let rx = rx.lock().unwrap_or_else(|p| p.into_inner());
                Ok(match rx.recv_timeout(SIGNAL_POLL) {
                    Ok(r) => Waited::Done(r),
                    Err(RecvTimeoutError::Timeout) => Waited::Pending,
                    Err(RecvTimeoutError::Disconnected) => Waited::Done(Err(FerroError::Internal(
                        "the query's worker ended without a result".into(),
                    ))),
                })
            })
            .py(py)?;
        match waited {
            Waited::Done(r) => {
                if drawn {
                    clear_bar();
                }
                return r.py(py);
            }
            Waited::Pending => {
                if let Err(e) = py.check_signals() {
                    progress.cancel();
                    // The query stops at its next row group; its error is replaced by the
                    // signal's exception.
                    let _ =
                        py.run_detached(|| Ok(rx.lock().unwrap_or_else(|p| p.into_inner()).recv()));
                    if drawn {
                        clear_bar();
                    }
                    return Err(e);
                }
                if show && started.elapsed() >= delay {
                    let (done, total) = progress.tasks();
                    let line = render_bar(done, total, started.elapsed().as_secs_f64(), BAR_WIDTH);
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r{line}");
                    let _ = err.flush();
                    drawn = true;
                }
            }
        }
    }
}

/// Erases the bar's line.
fn clear_bar() {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r{:width$}\r", "", width = BAR_WIDTH + 48);
    let _ = err.flush();
}
