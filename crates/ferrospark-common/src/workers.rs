//! The threads a query's parallel steps run on: the session's pool of workers.
//!
//! A session owns one [`WorkerPool`] (rayon's, sized to `ferrospark.scan.threads`), and its
//! queries run on it. A step that splits its work ([`run_each`], [`join`]) then hands the
//! pieces to the pool's idle threads instead of starting threads of its own: no thread is
//! created or torn down per query, and each thread keeps its allocator heap warm from one
//! query to the next. Called off the pool (a stream pulled from Python, a unit test), the
//! same functions start scoped threads, as every step did before the pool.
//!
//! Work handed to the pool must not block on other work of the pool (a pool thread waiting
//! for a queue that only a queued task would fill could wait forever); the ordered scan's
//! workers, which block on a bounded queue, keep threads of their own.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::{FerroError, Result};

/// What a panicking piece of work left.
pub type Panic = Box<dyn Any + Send + 'static>;

/// A pool of worker threads, shared by the queries of one session.
#[derive(Clone)]
pub struct WorkerPool {
    pool: Arc<rayon::ThreadPool>,
}

impl std::fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WorkerPool({} threads)", self.pool.current_num_threads())
    }
}

impl WorkerPool {
    /// A pool of `threads` workers, each with a `stack` bytes stack (address space only:
    /// pages are touched as used).
    pub fn new(threads: usize, stack: usize) -> Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .stack_size(stack)
            .thread_name(|i| format!("ferrospark-worker-{i}"))
            .build()
            .map_err(|e| FerroError::Internal(format!("cannot start the worker threads: {e}")))?;
        Ok(Self {
            pool: Arc::new(pool),
        })
    }

    /// Runs `work` on one of the pool's threads, without waiting for it; the steps it
    /// splits run on the pool.
    pub fn spawn(&self, work: impl FnOnce() + Send + 'static) {
        self.pool.spawn(work);
    }

    /// Runs `work` on the pool and waits for it.
    pub fn install<T: Send>(&self, work: impl FnOnce() -> T + Send) -> T {
        self.pool.install(work)
    }
}

/// Whether the calling thread is a pool's worker.
fn on_pool() -> bool {
    rayon::current_thread_index().is_some()
}

/// `work(item)` for every item, the pieces running at once (the first on the calling
/// thread), results in item order; a piece that panicked gives its panic.
pub fn run_each<I, R, F>(items: Vec<I>, work: F) -> Vec<std::result::Result<R, Panic>>
where
    I: Send,
    R: Send,
    F: Fn(I) -> R + Sync,
{
    let n = items.len();
    let guarded = |i: I| catch_unwind(AssertUnwindSafe(|| work(i)));
    let mut items = items.into_iter();
    let Some(first) = items.next() else {
        return Vec::new();
    };
    if n == 1 {
        return vec![guarded(first)];
    }
    if on_pool() {
        let mut slots: Vec<Option<std::result::Result<R, Panic>>> = (0..n).map(|_| None).collect();
        let (head, rest) = slots.split_at_mut(1);
        let guarded = &guarded;
        rayon::in_place_scope(|s| {
            for (slot, item) in rest.iter_mut().zip(items) {
                s.spawn(move |_| *slot = Some(guarded(item)));
            }
            head[0] = Some(guarded(first));
        });
        return slots
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(Box::new("a worker did not run"))))
            .collect();
    }
    std::thread::scope(|s| {
        let guarded = &guarded;
        let handles: Vec<_> = items.map(|i| s.spawn(move || guarded(i))).collect();
        let mut out = vec![guarded(first)];
        out.extend(handles.into_iter().map(|h| h.join().unwrap_or_else(Err)));
        out
    })
}

/// The text a panic carried (`panic!("...")` gives a `&str` or a `String`).
pub fn panic_message(p: &Panic) -> &str {
    p.downcast_ref::<&str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

/// [`run_each`] where a panic becomes [`FerroError::Internal`] naming `what`, and the
/// first error of any piece is returned.
pub fn try_run_each<I, R, F>(items: Vec<I>, what: &str, work: F) -> Result<Vec<R>>
where
    I: Send,
    R: Send,
    F: Fn(I) -> Result<R> + Sync,
{
    run_each(items, work)
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.unwrap_or_else(|p| {
                Err(FerroError::Internal(format!(
                    "{what} (piece {i}) panicked: {}",
                    panic_message(&p)
                )))
            })
        })
        .collect()
}

/// `(a(), b())`, run at once (`a` on the calling thread).
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if on_pool() {
        return rayon::join(a, b);
    }
    std::thread::scope(|s| {
        let hb = s.spawn(b);
        let ra = a();
        match hb.join() {
            Ok(rb) => (ra, rb),
            Err(p) => std::panic::resume_unwind(p),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_run_on_the_pool_and_keep_their_order() {
        let pool = WorkerPool::new(2, 1 << 20).expect("pool");
        let names = pool.install(|| {
            run_each((0..6).collect(), |i: usize| {
                (i, std::thread::current().name().map(str::to_string))
            })
        });
        for (i, r) in names.into_iter().enumerate() {
            let (j, name) = r.expect("no panic");
            assert_eq!(i, j);
            assert!(name.is_some_and(|n| n.starts_with("ferrospark-worker-")));
        }
    }

    #[test]
    fn off_the_pool_pieces_run_on_their_own_threads() {
        let out = try_run_each(vec![1, 2, 3], "a test step", |i: i32| Ok(i * 10)).expect("runs");
        assert_eq!(out, vec![10, 20, 30]);
        assert_eq!(join(|| 1, || 2), (1, 2));
    }

    #[test]
    fn a_panicking_piece_is_an_internal_error_on_and_off_the_pool() {
        let work = |i: i32| -> Result<i32> {
            if i == 2 {
                panic!("boom");
            }
            Ok(i)
        };
        let off = try_run_each(vec![1, 2, 3], "a test step", work);
        assert!(
            matches!(&off, Err(FerroError::Internal(m)) if m.contains("a test step (piece 1) panicked: boom")),
            "{off:?}"
        );
        let pool = WorkerPool::new(2, 1 << 20).expect("pool");
        let on = pool.install(|| try_run_each(vec![1, 2, 3], "a test step", work));
        assert!(matches!(on, Err(FerroError::Internal(_))));
    }
}
