//! Ordered hand-off of task outputs from workers that claim tasks freely.
//!
//! ```text
//!  workers: claim the next task (at most `window` ahead of the reader) ─┐
//!           push batches into that task's slot (at most `slot_cap` queued)│
//!  reader:  pops slot[consumed] in order; a finished slot advances it ◀──┘
//! ```
//!
//! Any idle worker takes the next task, so a slow row group never leaves a core idle, while
//! output stays in task order and memory stays bounded: at most `window` tasks are in flight
//! and each buffers at most `slot_cap` batches. The task being read is always drained, so a
//! worker blocked on a full slot waits only for the reader to reach it: no deadlock.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

use arrow_array::RecordBatch;
use ferrospark_common::FerroError;

#[derive(Default)]
struct Slot {
    batches: VecDeque<RecordBatch>,
    done: bool,
    error: Option<FerroError>,
}

struct State {
    slots: Vec<Slot>,
    next_claim: usize,
    consumed: usize,
    cancelled: bool,
}

/// Shared between the workers and the reader of one scan.
pub(crate) struct OrderedQueue {
    state: Mutex<State>,
    changed: Condvar,
    window: usize,
    slot_cap: usize,
}

impl OrderedQueue {
    pub(crate) fn new(tasks: usize, window: usize, slot_cap: usize) -> Self {
        Self {
            state: Mutex::new(State {
                slots: (0..tasks).map(|_| Slot::default()).collect(),
                next_claim: 0,
                consumed: 0,
                cancelled: false,
            }),
            changed: Condvar::new(),
            window: window.max(1),
            slot_cap: slot_cap.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A worker that panicked mid-push leaves consistent data: keep going.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wait<'a>(&self, guard: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed.wait(guard).unwrap_or_else(|p| p.into_inner())
    }

    /// The next task for a worker, or `None` when there is none left (or the reader left).
    pub(crate) fn claim(&self) -> Option<usize> {
        let mut s = self.lock();
        loop {
            if s.cancelled || s.next_claim >= s.slots.len() {
                return None;
            }
            if s.next_claim < s.consumed + self.window {
                let t = s.next_claim;
                s.next_claim += 1;
                return Some(t);
            }
            s = self.wait(s);
        }
    }

    /// Queues a batch of task `t`; `false` when the reader has gone away.
    pub(crate) fn push(&self, t: usize, batch: RecordBatch) -> bool {
        let mut s = self.lock();
        while !s.cancelled && t != s.consumed && s.slots[t].batches.len() >= self.slot_cap {
            s = self.wait(s);
        }
        if s.cancelled {
            return false;
        }
        s.slots[t].batches.push_back(batch);
        drop(s);
        self.changed.notify_all();
        true
    }

    /// Marks task `t` finished, successfully or not.
    pub(crate) fn finish(&self, t: usize, error: Option<FerroError>) {
        let mut s = self.lock();
        s.slots[t].done = true;
        s.slots[t].error = error;
        drop(s);
        self.changed.notify_all();
    }

    /// The next batch in task order; `None` at the end.
    pub(crate) fn next(&self) -> Option<Result<RecordBatch, FerroError>> {
        let mut s = self.lock();
        loop {
            let c = s.consumed;
            if c >= s.slots.len() || s.cancelled {
                return None;
            }
            if let Some(b) = s.slots[c].batches.pop_front() {
                drop(s);
                self.changed.notify_all();
                return Some(Ok(b));
            }
            if let Some(e) = s.slots[c].error.take() {
                s.cancelled = true;
                drop(s);
                self.changed.notify_all();
                return Some(Err(e));
            }
            if s.slots[c].done {
                s.consumed += 1;
                self.changed.notify_all();
                continue;
            }
            s = self.wait(s);
        }
    }

    /// Stops the workers (the reader is gone).
    pub(crate) fn cancel(&self) {
        self.lock().cancelled = true;
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn batch(v: i32) -> RecordBatch {
        let a: arrow_array::ArrayRef = Arc::new(arrow_array::Int32Array::from(vec![v]));
        RecordBatch::try_from_iter([("v", a)]).expect("batch")
    }

    #[test]
    fn output_follows_task_order_whatever_the_workers_do() {
        let q = Arc::new(OrderedQueue::new(50, 4, 2));
        let workers: Vec<_> = (0..3)
            .map(|w| {
                let q = q.clone();
                std::thread::spawn(move || {
                    while let Some(t) = q.claim() {
                        if (t + w) % 3 == 0 {
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                        for k in 0..3 {
                            if !q.push(t, batch((t * 10 + k) as i32)) {
                                return;
                            }
                        }
                        q.finish(t, None);
                    }
                })
            })
            .collect();
        let mut got = Vec::new();
        while let Some(b) = q.next() {
            let b = b.expect("no error");
            let v = b
                .column(0)
                .as_any()
                .downcast_ref::<arrow_array::Int32Array>()
                .expect("ints");
            got.push(v.value(0));
        }
        workers.into_iter().for_each(|w| w.join().expect("worker"));
        let want: Vec<i32> = (0..50)
            .flat_map(|t| (0..3).map(move |k| t * 10 + k))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn an_error_stops_the_stream_and_cancel_frees_workers() {
        let q = Arc::new(OrderedQueue::new(3, 2, 1));
        assert_eq!(q.claim(), Some(0));
        q.finish(0, Some(FerroError::Internal("boom".into())));
        assert!(matches!(q.next(), Some(Err(FerroError::Internal(_)))));
        assert!(q.next().is_none());
        assert_eq!(q.claim(), None, "cancelled after the error");
    }
}
