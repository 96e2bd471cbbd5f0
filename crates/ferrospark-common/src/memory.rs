//! The memory pool operators reserve their buffers from (`ferrospark.memory.limit`).
//!
//! Operators do not allocate through the pool; they *account* for what they hold. A
//! [`MemoryReservation`] grows before an operator keeps more data and is refused when the
//! pool's limit would be passed: the operator then spills (and shrinks) instead of failing.
//! Dropping a reservation gives its bytes back.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::{FerroError, Result};

/// A shared budget of bytes. Cheap to clone; clones share the budget.
#[derive(Clone)]
pub struct MemoryPool {
    inner: Arc<PoolInner>,
}

struct PoolInner {
    limit: Option<u64>,
    used: AtomicU64,
    peak: AtomicU64,
}

impl MemoryPool {
    /// A pool that never refuses.
    pub fn unbounded() -> Self {
        Self::new(None)
    }

    /// A pool of at most `limit` bytes (`None`: unbounded).
    pub fn new(limit: Option<u64>) -> Self {
        Self {
            inner: Arc::new(PoolInner {
                limit,
                used: AtomicU64::new(0),
                peak: AtomicU64::new(0),
            }),
        }
    }

    /// The limit, if any.
    pub fn limit(&self) -> Option<u64> {
        self.inner.limit
    }

    /// Bytes currently reserved by all reservations.
    pub fn reserved(&self) -> u64 {
        self.inner.used.load(Ordering::Relaxed)
    }

    /// The most bytes ever reserved at once.
    pub fn peak(&self) -> u64 {
        self.inner.peak.load(Ordering::Relaxed)
    }

    /// A new, empty reservation for the consumer `name` (used in error messages).
    pub fn reservation(&self, name: impl Into<String>) -> MemoryReservation {
        MemoryReservation {
            pool: self.clone(),
            name: name.into(),
            size: 0,
        }
    }

    fn try_grow(&self, bytes: u64) -> bool {
        let inner = &self.inner;
        let mut current = inner.used.load(Ordering::Relaxed);
        loop {
            let next = current.saturating_add(bytes);
            if matches!(inner.limit, Some(limit) if next > limit) {
                return false;
            }
            match inner.used.compare_exchange_weak(
                current,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    inner.peak.fetch_max(next, Ordering::Relaxed);
                    return true;
                }
                Err(seen) => current = seen,
            }
        }
    }

    fn release(&self, bytes: u64) {
        self.inner.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

impl fmt::Debug for MemoryPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryPool")
            .field("limit", &self.inner.limit)
            .field("reserved", &self.reserved())
            .finish()
    }
}

/// Bytes held by one consumer. Returned to the pool when dropped.
#[derive(Debug)]
pub struct MemoryReservation {
    pool: MemoryPool,
    name: String,
    size: u64,
}

impl MemoryReservation {
    /// Bytes held.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Tries to hold `bytes` more; `false` (and nothing changes) when the pool refuses.
    pub fn try_grow(&mut self, bytes: u64) -> bool {
        if bytes == 0 || self.pool.try_grow(bytes) {
            self.size += bytes;
            true
        } else {
            false
        }
    }

    /// Holds `bytes` more or fails with [`FerroError::MemoryLimit`], for consumers that cannot
    /// spill what they are asking for.
    pub fn grow(&mut self, bytes: u64) -> Result<()> {
        if self.try_grow(bytes) {
            return Ok(());
        }
        Err(FerroError::MemoryLimit(format!(
            "{} needs {} more bytes but ferrospark.memory.limit ({}) is reached ({} in use); raise the limit",
            self.name,
            bytes,
            self.pool.limit().unwrap_or(u64::MAX),
            self.pool.reserved()
        )))
    }

    /// Sets the held size to `bytes`, growing (possibly refused) or shrinking.
    pub fn try_resize(&mut self, bytes: u64) -> bool {
        if bytes >= self.size {
            self.try_grow(bytes - self.size)
        } else {
            self.shrink(self.size - bytes);
            true
        }
    }

    /// Gives `bytes` back (at most what is held).
    pub fn shrink(&mut self, bytes: u64) {
        let bytes = bytes.min(self.size);
        self.pool.release(bytes);
        self.size -= bytes;
    }

    /// Gives everything back.
    pub fn free(&mut self) {
        self.shrink(self.size);
    }
}

impl Drop for MemoryReservation {
    fn drop(&mut self) {
        self.free();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_share_the_limit_and_return_bytes_on_drop() {
        let pool = MemoryPool::new(Some(100));
        let mut a = pool.reservation("a");
        let mut b = pool.reservation("b");
        assert!(a.try_grow(60));
        assert!(!b.try_grow(50));
        assert!(b.try_grow(40));
        assert_eq!(pool.reserved(), 100);
        assert!(b.grow(1).is_err());
        a.shrink(30);
        assert!(b.try_resize(70));
        drop(a);
        drop(b);
        assert_eq!(pool.reserved(), 0);
        assert_eq!(pool.peak(), 100);
    }
}

/// The memory `batch` holds for its rows: for columns that are slices of larger arrays
/// (a sorted run cut into batches, a window's output), only the slice's share. Counting each
/// slice's whole buffer, as `get_array_memory_size` does, charges an operator that buffers
/// every slice of one array the array's size once per slice.
pub fn batch_bytes(batch: &arrow_array::RecordBatch) -> usize {
    batch
        .columns()
        .iter()
        .map(|c| {
            c.to_data()
                .get_slice_memory_size()
                .unwrap_or_else(|_| c.get_array_memory_size())
        })
        .sum()
}

#[cfg(test)]
mod batch_bytes_tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch};

    use super::batch_bytes;

    #[test]
    fn slices_count_their_share_not_the_whole_buffer() {
        let big: ArrayRef = Arc::new(Int64Array::from_iter_values(0..100_000));
        let whole = RecordBatch::try_from_iter([("v", big)]).expect("batch");
        let total = batch_bytes(&whole);
        let slices: usize = (0..10)
            .map(|i| batch_bytes(&whole.slice(i * 10_000, 10_000)))
            .sum();
        assert!(total >= 800_000, "{total}");
        // Ten slices cover the array once, not ten times.
        assert!(slices <= total + 1024, "{slices} vs {total}");
        assert!(whole.slice(0, 10_000).get_array_memory_size() >= total);
    }
}
