//! Where panics stop: native work runs under `catch_unwind`, so a Rust panic reaches Python as
//! `ferrospark.InternalError` (a bug to report, naming the panic) instead of pyo3's
//! `PanicException`, and the process and the session stay usable.
//!
//! Bindings release the GIL through [`Detach::run_detached`] rather than `Python::detach`
//! (clippy's `disallowed-methods` in this crate's `clippy.toml` enforces it); code that calls
//! the engine with the GIL held wraps itself in [`guarded`]. Threads the engine spawns convert
//! their own panics into `FerroError::Internal` when joined, which maps to the same class.

use std::any::Any;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use ferrospark_common::FerroError;
use pyo3::prelude::*;

thread_local! {
    /// Where the last panic on this thread happened (set by the hook installed below).
    static LAST_PANIC_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs, once, a panic hook that records the panic's location for the error message and
/// then runs the previous hook (which prints the panic to stderr, with a backtrace when
/// `RUST_BACKTRACE` is set).
pub(crate) fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let at = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()));
            LAST_PANIC_AT.with(|cell| *cell.borrow_mut() = at);
            previous(info);
        }));
    });
}

/// The engine error for a caught panic: `FerroError::Internal`, whose message says it is a
/// ferrospark bug and asks to report it.
pub(crate) fn panic_error(payload: Box<dyn Any + Send>) -> FerroError {
    let message = ferrospark_common::workers::panic_message(&payload);
    let at = LAST_PANIC_AT
        .with(|cell| cell.borrow_mut().take())
        .map(|l| format!(" at {l}"))
        .unwrap_or_default();
    FerroError::Internal(format!("Rust panic{at}: {message}"))
}

/// Releasing the GIL with panics caught.
pub(crate) trait Detach {
    /// Runs `f` with the GIL released, as `Python::detach` does; a panic inside becomes
    /// `FerroError::Internal` (raised as `ferrospark.InternalError`).
    fn run_detached<T, F>(self, f: F) -> Result<T, FerroError>
    where
        F: FnOnce() -> Result<T, FerroError> + Send,
        T: Send;
}

impl Detach for Python<'_> {
    #[allow(clippy::disallowed_methods)] // the one place allowed to call it
    fn run_detached<T, F>(self, f: F) -> Result<T, FerroError>
    where
        F: FnOnce() -> Result<T, FerroError> + Send,
        T: Send,
    {
        self.detach(|| catch_unwind(AssertUnwindSafe(f)))
            .unwrap_or_else(|p| Err(panic_error(p)))
    }
}

/// Runs `f` with the GIL held, turning a panic into `ferrospark.InternalError`.
pub(crate) fn guarded<T>(py: Python<'_>, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(crate::to_py(py, panic_error(p))))
}

/// Test hook (`_native._panic_for_test`): panics with `message` inside a detached native call,
/// or with the GIL held when `detached` is false, so tests can see the panic arrive as
/// `ferrospark.InternalError`.
#[pyfunction]
#[pyo3(name = "_panic_for_test", signature = (message, detached=true))]
pub(crate) fn panic_for_test(py: Python<'_>, message: String, detached: bool) -> PyResult<()> {
    if detached {
        py.run_detached(|| -> Result<(), FerroError> { panic!("{message}") })
            .map_err(|e| crate::to_py(py, e))
    } else {
        guarded(py, || -> PyResult<()> { panic!("{message}") })
    }
}
