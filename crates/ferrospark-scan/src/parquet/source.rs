//! Where a Parquet file's bytes come from: plain reads of exactly the ranges the decoder asks
//! for, and, for one row-group task, each column chunk read whole the first time it is touched.
//!
//! Reads copy from the page cache instead of mapping the file: a mapping turns every decoded
//! page into page faults and its unmapping into serial work when the scan ends, and a file
//! truncated while mapped kills the process with SIGBUS, where a read just fails.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::{Buf, Bytes};
use ferrospark_common::{FerroError, Result};
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};

use super::footer_cache::FileVersion;

/// How much a header read (`get_read`) fetches when it falls outside a loaded chunk; page
/// headers are a few dozen bytes.
const HEADER_READ: u64 = 64 * 1024;

/// A Parquet file read by ranges. Clones share one handle (their reads take turns), opened
/// when first needed and released by [`FileSource::close`], so a scan of thousands of files
/// holds no descriptors between planning and reading; a task takes its own handle with
/// [`FileSource::reopen`].
#[derive(Debug, Clone)]
pub(crate) struct FileSource {
    inner: Arc<OpenFile>,
}

#[derive(Debug)]
struct OpenFile {
    path: PathBuf,
    file: Mutex<Option<File>>,
    len: u64,
    version: Option<FileVersion>,
}

impl FileSource {
    /// Opens `path` and notes its length and version.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| FerroError::io(path, e))?;
        let meta = file.metadata().map_err(|e| FerroError::io(path, e))?;
        let (len, version) = (meta.len(), FileVersion::of(&meta));
        Ok(Self {
            inner: Arc::new(OpenFile {
                path: path.to_path_buf(),
                file: Mutex::new(Some(file)),
                len,
                version,
            }),
        })
    }

    /// The file's version when it was opened (for the footer cache).
    pub fn version(&self) -> Option<FileVersion> {
        self.inner.version
    }

    /// The path it was opened from.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// A private handle on the same file for one task, so tasks never wait for each other's
    /// reads; fails if the file was replaced or resized since it was planned.
    pub fn reopen(&self) -> Result<Self> {
        let again = Self::open(self.path())?;
        if !self.same_content(&again) {
            return Err(self.changed());
        }
        Ok(again)
    }

    /// Releases the shared handle; the next read opens the file again (and checks it).
    pub fn close(&self) {
        *self.inner.file.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn same_content(&self, other: &Self) -> bool {
        match (self.inner.version, other.inner.version) {
            (Some(a), Some(b)) => a.same_content(&b),
            _ => other.inner.len == self.inner.len,
        }
    }

    fn changed(&self) -> FerroError {
        FerroError::parquet(
            self.path(),
            "the file changed while it was being read; read it again",
        )
    }

    fn read_range(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let end = start.checked_add(length as u64);
        let file_len = self.inner.len;
        if end.is_none_or(|e| e > file_len) {
            return Err(ParquetError::EOF(format!(
                "range {start}+{length} lies beyond the end of the file ({file_len} bytes); the file is truncated or corrupt"
            )));
        }
        // A poisoned lock only means another reader panicked mid-read; every read seeks first.
        let mut slot = self.inner.file.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            let again = Self::open(self.path()).map_err(|e| ParquetError::External(Box::new(e)))?;
            if !self.same_content(&again) {
                return Err(ParquetError::External(Box::new(self.changed())));
            }
            let mut f = again.inner.file.lock().unwrap_or_else(|p| p.into_inner());
            *slot = f.take();
        }
        let Some(file) = slot.as_mut() else {
            return Err(ParquetError::General("file handle unavailable".into()));
        };
        file.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::with_capacity(length);
        // `read_to_end` fills spare capacity without zeroing it first.
        file.take(length as u64).read_to_end(&mut buf)?;
        if buf.len() != length {
            return Err(ParquetError::EOF(format!(
                "expected {length} bytes at offset {start}, read {}; the file is truncated",
                buf.len()
            )));
        }
        Ok(Bytes::from(buf))
    }
}

impl Length for FileSource {
    fn len(&self) -> u64 {
        self.inner.len
    }
}

impl ChunkReader for FileSource {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let n = self.inner.len.saturating_sub(start).min(HEADER_READ) as usize;
        Ok(self.read_range(start, n)?.reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.read_range(start, length)
    }
}

/// The column chunks one task decodes, each read with one call the first time the decoder
/// touches it; reads outside them (none in practice) go to the file directly. Clones share
/// the chunks.
#[derive(Clone)]
pub(crate) struct RowGroupChunks {
    inner: Arc<Chunks>,
}

struct Chunks {
    source: FileSource,
    /// `(start, length)` of each chunk, sorted by start.
    ranges: Vec<(u64, u64)>,
    loaded: Vec<Mutex<Option<Bytes>>>,
}

impl RowGroupChunks {
    /// Chunks at `ranges` (file offset, length) of `source`.
    pub fn new(source: FileSource, mut ranges: Vec<(u64, u64)>) -> Self {
        ranges.sort_unstable();
        ranges.dedup();
        let loaded = ranges.iter().map(|_| Mutex::new(None)).collect();
        Self {
            inner: Arc::new(Chunks {
                source,
                ranges,
                loaded,
            }),
        }
    }

    /// The loaded chunk holding `[start, start + length)` and the offset of `start` in it.
    fn chunk(&self, start: u64, length: u64) -> parquet::errors::Result<Option<(Bytes, usize)>> {
        let c = &self.inner;
        let i = c.ranges.partition_point(|&(s, _)| s <= start);
        let Some(i) = i.checked_sub(1) else {
            return Ok(None);
        };
        let (s, len) = c.ranges[i];
        if start.saturating_add(length) > s.saturating_add(len) {
            return Ok(None);
        }
        let mut slot = c.loaded[i].lock().unwrap_or_else(|p| p.into_inner());
        let data = match &*slot {
            Some(d) => d.clone(),
            None => {
                let d = c.source.read_range(s, len as usize)?;
                *slot = Some(d.clone());
                d
            }
        };
        Ok(Some((data, (start - s) as usize)))
    }
}

impl Length for RowGroupChunks {
    fn len(&self) -> u64 {
        self.inner.source.len()
    }
}

impl ChunkReader for RowGroupChunks {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        match self.chunk(start, 0)? {
            Some((data, at)) => Ok(data.slice(at..).reader()),
            None => self.inner.source.get_read(start),
        }
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        match self.chunk(start, length as u64)? {
            Some((data, at)) => Ok(data.slice(at..at + length)),
            None => self.inner.source.read_range(start, length),
        }
    }
}
