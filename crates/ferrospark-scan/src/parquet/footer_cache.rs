//! A process-wide cache of parsed Parquet footers, keyed by path and checked against the
//! file's size and modification time.
//!
//! Parsing a footer with its page index costs milliseconds per file, and freeing it costs
//! nearly as much again; a query that reads the same files twice should pay neither. A cached
//! footer is used only while the file's length and mtime are those it was parsed from, so a
//! rewritten file is parsed afresh. The cache holds parsed metadata only, never file data.
//! Its budget is `ferrospark.parquet.metadataCache.size` (0 turns it off); the least recently
//! used footers are evicted first.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use parquet::arrow::arrow_reader::ArrowReaderMetadata;

/// What identifies one version of a file: length, modification time and, on Unix, inode and
/// status-change time (which nobody can set, so `cp -p` or `rsync -t` copies differ too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileVersion {
    len: u64,
    modified: SystemTime,
    inode: u64,
    changed: (i64, i64),
}

/// Files changed this recently are not cached: file-system timestamps tick coarsely (a few
/// milliseconds), so a file rewritten within one tick could keep its timestamps.
const SETTLE: Duration = Duration::from_secs(2);

impl FileVersion {
    /// The version of a file from its metadata, where the file system reports an inode and
    /// change time (Unix); elsewhere `None`, and footers are not cached, because a same-size
    /// copy that keeps the modification time could not be told apart.
    pub fn of(m: &std::fs::Metadata) -> Option<Self> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(Self {
                len: m.len(),
                modified: m.modified().ok()?,
                inode: m.ino(),
                changed: (m.ctime(), m.ctime_nsec()),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = m;
            None
        }
    }

    /// Same bytes as far as the file system can tell: length, mtime and inode (the change time
    /// also moves on chmod or a new hard link, which leave the bytes alone).
    pub fn same_content(&self, other: &Self) -> bool {
        self.len == other.len && self.modified == other.modified && self.inode == other.inode
    }

    /// Whether the file has been left alone long enough for its timestamps to identify it.
    fn settled(&self) -> bool {
        let now = SystemTime::now();
        let changed = SystemTime::UNIX_EPOCH
            + Duration::from_secs(u64::try_from(self.changed.0).unwrap_or(0))
            + Duration::from_nanos(u64::try_from(self.changed.1).unwrap_or(0));
        [self.modified, changed]
            .iter()
            .all(|t| now.duration_since(*t).is_ok_and(|age| age >= SETTLE))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    path: PathBuf,
    page_index: bool,
}

struct Entry {
    version: FileVersion,
    meta: ArrowReaderMetadata,
    bytes: usize,
    last_used: u64,
}

#[derive(Default)]
struct State {
    entries: HashMap<Key, Entry>,
    bytes: usize,
    clock: u64,
    hits: u64,
    misses: u64,
}

impl State {
    fn evict_to(&mut self, budget: usize) {
        while self.bytes > budget {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(e) = self.entries.remove(&oldest) {
                self.bytes -= e.bytes;
            }
        }
    }
}

fn state() -> &'static Mutex<State> {
    static CACHE: OnceLock<Mutex<State>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(State::default()))
}

fn lock() -> std::sync::MutexGuard<'static, State> {
    // A panic while holding the lock cannot leave an entry half-written (inserts are single
    // map operations), so a poisoned cache is still consistent.
    state().lock().unwrap_or_else(|p| p.into_inner())
}

/// The cached footer of `path` if it was parsed from this very version of the file.
pub(crate) fn get(
    path: &Path,
    page_index: bool,
    version: FileVersion,
) -> Option<ArrowReaderMetadata> {
    let mut s = lock();
    let key = Key {
        path: path.to_path_buf(),
        page_index,
    };
    s.clock += 1;
    let now = s.clock;
    let found = match s.entries.get_mut(&key) {
        Some(e) if e.version == version => {
            e.last_used = now;
            Some(e.meta.clone())
        }
        Some(_) => {
            // The file changed since it was cached.
            if let Some(stale) = s.entries.remove(&key) {
                s.bytes -= stale.bytes;
            }
            None
        }
        None => None,
    };
    if found.is_some() {
        s.hits += 1;
    } else {
        s.misses += 1;
    }
    found
}

/// Remembers a freshly parsed footer, evicting older ones to stay within `budget` bytes.
pub(crate) fn put(
    path: &Path,
    page_index: bool,
    version: FileVersion,
    meta: &ArrowReaderMetadata,
    budget: usize,
) {
    let bytes = meta.metadata().memory_size();
    if bytes > budget || !version.settled() {
        return;
    }
    let mut s = lock();
    s.clock += 1;
    let entry = Entry {
        version,
        meta: meta.clone(),
        bytes,
        last_used: s.clock,
    };
    let key = Key {
        path: path.to_path_buf(),
        page_index,
    };
    if let Some(old) = s.entries.insert(key, entry) {
        s.bytes -= old.bytes;
    }
    s.bytes += bytes;
    s.evict_to(budget);
}

/// Footers held, bytes they take, hits and misses since the process started.
pub fn footer_cache_stats() -> FooterCacheStats {
    let s = lock();
    FooterCacheStats {
        entries: s.entries.len(),
        bytes: s.bytes,
        hits: s.hits,
        misses: s.misses,
    }
}

/// Empties the footer cache (the next scan of every file parses its footer again).
pub fn clear_footer_cache() {
    let mut s = lock();
    s.entries.clear();
    s.bytes = 0;
}

/// A snapshot of the footer cache, from [`footer_cache_stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FooterCacheStats {
    /// Footers held.
    pub entries: usize,
    /// Their estimated size in memory.
    pub bytes: usize,
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that had to parse the footer.
    pub misses: u64,
}
