//! A check of an Avro object container file's framing before it is decoded: the header, then
//! blocks of (row count, byte size, data, sync marker) up to the very end of the file.
//!
//! `arrow-avro` stops without an error when a file ends inside a block, which would lose the
//! block's rows silently; walking the framing (sizes only, nothing decompressed) turns a
//! truncated or overwritten file into an error naming it, as Spark's reader fails on it. The
//! blocks found are what the reader decodes in parallel.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use ferrospark_common::{FerroError, Result};

/// Why a file is not well-framed Avro.
fn broken(path: &Path, why: &str) -> FerroError {
    FerroError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("[FAILED_READ_FILE.NO_HINT] not a readable Avro file: {why}"),
        ),
    }
}

struct Cursor {
    r: BufReader<File>,
    at: u64,
}

impl Cursor {
    fn byte(&mut self) -> Option<u8> {
        let mut b = [0u8; 1];
        self.r.read_exact(&mut b).ok()?;
        self.at += 1;
        Some(b[0])
    }

    /// A zig-zag variable-length long.
    fn long(&mut self) -> Option<i64> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Some(((v >> 1) as i64) ^ -((v & 1) as i64));
            }
        }
        None
    }

    fn skip(&mut self, n: i64) -> Option<()> {
        if n < 0 {
            return None;
        }
        self.r.seek_relative(n).ok()?;
        self.at += n as u64;
        Some(())
    }

    fn bytes<const N: usize>(&mut self) -> Option<[u8; N]> {
        let mut b = [0u8; N];
        self.r.read_exact(&mut b).ok()?;
        self.at += N as u64;
        Some(b)
    }
}

/// Bytes of a sync marker.
const SYNC: u64 = 16;

/// The position of the first `sync` marker at or after `from` in `path` (`len` bytes).
fn find_sync(path: &Path, sync: &[u8; 16], from: u64, len: u64) -> Result<Option<u64>> {
    let file = File::open(path).map_err(|e| FerroError::io(path, e))?;
    let finder = memchr::memmem::Finder::new(sync);
    let mut buf = vec![0u8; 1 << 20];
    let mut at = from;
    while at < len {
        let n = ((len - at) as usize).min(buf.len());
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut buf[..n], at)
            .map_err(|e| FerroError::io(path, e))?;
        if let Some(i) = finder.find(&buf[..n]) {
            return Ok(Some(at + i as u64));
        }
        if at + n as u64 >= len {
            break;
        }
        // The next window overlaps this one by a marker's length less one.
        at += (n - (SYNC as usize - 1)) as u64;
    }
    Ok(None)
}

/// Where an Avro object container file's parts lie.
#[derive(Debug, Clone)]
pub(crate) struct Framing {
    /// Bytes of the header (magic, metadata, sync marker).
    pub header: u64,
    /// Each block's byte range (count, size, data and sync marker).
    pub blocks: Vec<(u64, u64)>,
}

/// Checks that `path` is framed as an Avro object container file, and finds its blocks: all
/// of them up to the file's last byte, or (`range`) those whose preceding sync marker starts in
/// `start..end`, found from the first marker at or after `start` (Avro's
/// `DataFileReader.sync`), so that a Spark task walks its own split only. A truncated file is
/// an error for the split holding its end.
pub(crate) fn check_framing(path: &Path, range: Option<(u64, u64)>) -> Result<Framing> {
    let file = File::open(path).map_err(|e| FerroError::io(path, e))?;
    let len = file.metadata().map_err(|e| FerroError::io(path, e))?.len();
    let mut c = Cursor {
        r: BufReader::with_capacity(64 << 10, file),
        at: 0,
    };
    if c.bytes::<4>() != Some(*b"Obj\x01") {
        return Err(broken(path, "it does not start with Avro's magic bytes"));
    }
    // The metadata map: blocks of entries (a negative count is followed by a byte size).
    loop {
        let n = c
            .long()
            .ok_or_else(|| broken(path, "its header is cut short"))?;
        if n == 0 {
            break;
        }
        if n < 0 {
            c.long()
                .ok_or_else(|| broken(path, "its header is cut short"))?;
        }
        for _ in 0..n.unsigned_abs() {
            for _ in 0..2 {
                let size = c
                    .long()
                    .ok_or_else(|| broken(path, "its header is cut short"))?;
                c.skip(size)
                    .ok_or_else(|| broken(path, "its header is cut short"))?;
            }
        }
    }
    let sync = c
        .bytes::<16>()
        .ok_or_else(|| broken(path, "its header is cut short"))?;
    let header = c.at;
    let (start, end) = range.unwrap_or((0, len));
    if start > header - SYNC {
        match find_sync(path, &sync, start, len)? {
            Some(at) => {
                c.r.seek(SeekFrom::Start(at + SYNC))
                    .map_err(|e| FerroError::io(path, e))?;
                c.at = at + SYNC;
            }
            None => c.at = len,
        }
    }
    let mut blocks = Vec::new();
    let mut block = 0u64;
    // A block belongs to the split its preceding marker starts in.
    while c.at < len && c.at - SYNC < end {
        block += 1;
        let start = c.at;
        let cut = || {
            broken(
                path,
                &format!("block {block} of the split at byte {start} is cut short (the file is truncated)"),
            )
        };
        let count = c.long().ok_or_else(cut)?;
        let size = c.long().ok_or_else(cut)?;
        if count < 0 || size < 0 || c.at + size as u64 + 16 > len {
            return Err(cut());
        }
        c.skip(size).ok_or_else(cut)?;
        if c.bytes::<16>().ok_or_else(cut)? != sync {
            return Err(broken(
                path,
                &format!("block {block} of the split at byte {start} does not end with the file's sync marker"),
            ));
        }
        blocks.push((start, c.at - start));
    }
    Ok(Framing { header, blocks })
}
