//! Pieces of a plain text file read by the thread that converts them.
//!
//! A file (or a task's split of it) that can be cut at line ends is not read block by block
//! through one thread: the range is cut into pieces of about [`super::stream`]'s piece size,
//! and each pool thread reads its piece's bytes itself (a positioned read, `pread`) just
//! before converting them. The kernel's copy out of the page cache, a fifth of a JSON scan's
//! CPU, then runs on every core rather than on one reader thread the converting threads
//! wait for, and a piece is still in the core's cache when it converts.
//!
//! A piece `[start, end)` holds the lines a split of those bounds holds (see
//! [`super::split`]): those after the first `\n` at or after `start` (from the start when
//! `start` is the range's own start at the file's start), through the line holding byte
//! `end`. Lines are numbered from 1 within a piece; an error's line is made absolute only
//! when one is raised, by counting the line ends before the piece.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ferrospark_common::{FerroError, Result};

/// Bytes read at a time past a piece's end, looking for the end of its last line.
const OVERHANG: usize = 64 << 10;

/// A range of a file being read piece by piece.
#[derive(Debug)]
pub(crate) struct DirectRead {
    path: PathBuf,
    /// The range read, and where the next piece starts.
    start: u64,
    end: u64,
    next: u64,
    /// Spent piece buffers, for the next pieces.
    buffers: Mutex<Vec<Vec<u8>>>,
}

/// A piece's text: `text[first..last]` holds its whole lines.
pub(crate) struct PieceText {
    /// The bytes read from the piece's start.
    pub text: Vec<u8>,
    /// Where its first line starts in `text`, and where its last one ends.
    pub first: usize,
    /// See `first`.
    pub last: usize,
    /// The file position of `text[0]`.
    pub at: u64,
}

impl DirectRead {
    /// Reads `path` over `range` (the whole file when `None`).
    pub fn open(path: &Path, range: Option<(u64, u64)>) -> Result<Self> {
        let (start, end) = match range {
            Some(r) => r,
            None => (
                0,
                std::fs::metadata(path)
                    .map_err(|e| FerroError::io(path, e))?
                    .len(),
            ),
        };
        Ok(Self {
            path: path.to_path_buf(),
            start,
            end,
            next: start,
            buffers: Mutex::new(Vec::new()),
        })
    }

    /// The next (at most) `n` pieces of about `bytes` each, as `(start, end)`; none at the
    /// range's end.
    pub fn next_pieces(&mut self, n: usize, bytes: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n && self.next < self.end {
            let end = (self.next + bytes).min(self.end);
            out.push((self.next, end));
            self.next = end;
        }
        out
    }

    /// Whether piece `start` is the file's first, which holds its header and byte order mark.
    pub fn starts_file(&self, start: u64) -> bool {
        start == 0
    }

    /// The text of the piece `(start, end)`; `None` when no line starts in it.
    pub fn read(&self, (start, end): (u64, u64)) -> Result<Option<PieceText>> {
        let mut text = self
            .buffers
            .lock()
            .ok()
            .and_then(|mut b| b.pop())
            .unwrap_or_default();
        text.clear();
        let span = (end - start) as usize;
        let mut file = self.open_at(start)?;
        let mut ended = self.read_into(&mut file, &mut text, span)?;
        let first = if start == 0 {
            0
        } else {
            // The line this piece starts inside belongs to the piece before.
            match memchr::memchr(b'\n', &text) {
                Some(i) if i < span => i + 1,
                _ => {
                    self.recycle(text);
                    return Ok(None);
                }
            }
        };
        // On past the piece's end to the end of the line holding it.
        let mut from = span.max(first);
        let last = loop {
            if let Some(i) = memchr::memchr(b'\n', &text[from.min(text.len())..]) {
                break from + i + 1;
            }
            if ended {
                break text.len();
            }
            from = text.len();
            ended = self.read_into(&mut file, &mut text, OVERHANG)?;
        };
        Ok(Some(PieceText {
            text,
            first,
            last,
            at: start,
        }))
    }

    /// Hands a converted piece's buffer back.
    pub fn recycle(&self, text: Vec<u8>) {
        if let Ok(mut b) = self.buffers.lock() {
            b.push(text);
        }
    }

    /// Appends up to `n` bytes of `file` (from where it stands) to `text`; true when the
    /// file ended first. `read_to_end` fills the buffer's spare room without zeroing it.
    fn read_into(&self, file: &mut File, text: &mut Vec<u8>, n: usize) -> Result<bool> {
        let got = file
            .by_ref()
            .take(n as u64)
            .read_to_end(text)
            .map_err(|e| FerroError::io(&self.path, e))?;
        Ok(got < n)
    }

    /// `path` opened at `at`: a handle of its own, so that threads reading pieces at once
    /// do not share a file position.
    fn open_at(&self, at: u64) -> Result<File> {
        let mut file = File::open(&self.path).map_err(|e| FerroError::io(&self.path, e))?;
        file.seek(SeekFrom::Start(at))
            .map_err(|e| FerroError::io(&self.path, e))?;
        Ok(file)
    }

    /// Lines of the range before file position `at` (a line's start): the line ends before
    /// it, less the one ending the line the range starts inside.
    pub fn lines_before(&self, at: u64) -> Result<u64> {
        let mut file = self.open_at(self.start)?;
        let mut buf = Vec::new();
        let (mut pos, mut lines) = (self.start, 0u64);
        while pos < at {
            buf.clear();
            let want = ((at - pos) as usize).min(1 << 20);
            let ended = self.read_into(&mut file, &mut buf, want)?;
            lines += memchr::memchr_iter(b'\n', &buf).count() as u64;
            pos += buf.len() as u64;
            if ended {
                break;
            }
        }
        Ok(lines - u64::from(self.start > 0 && lines > 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Every line of `text`, read as pieces of `bytes` over `range`, as (line, number).
    fn lines(text: &[u8], range: Option<(u64, u64)>, bytes: u64) -> Vec<(Vec<u8>, u64)> {
        let mut f = tempfile::NamedTempFile::new().expect("temp file");
        f.write_all(text).expect("write");
        let mut d = DirectRead::open(f.path(), range).expect("open");
        let mut out = Vec::new();
        loop {
            let pieces = d.next_pieces(3, bytes);
            if pieces.is_empty() {
                return out;
            }
            for p in pieces {
                let Some(t) = d.read(p).expect("read") else {
                    continue;
                };
                let first = d.lines_before(t.at + t.first as u64).expect("count") + 1;
                let text = &t.text[t.first..t.last];
                for (n, line) in (first..).zip(text.split_inclusive(|&b| b == b'\n')) {
                    out.push((line.to_vec(), n));
                }
                d.recycle(t.text);
            }
        }
    }

    /// Pieces of every size hold every line once, in order and numbered, as one read of the
    /// whole file does; split ranges hold what a split reader holds.
    #[test]
    fn pieces_hold_each_line_once_numbered() {
        let text = b"a\n\nbcd\nefghij\nk\n\nlmnopqrstuvwxyz\nlast-without-end";
        let whole = lines(text, None, 1 << 20);
        assert_eq!(whole.len(), 8);
        assert_eq!(whole[7], (b"last-without-end".to_vec(), 8));
        for bytes in [1, 2, 3, 5, 7, 16, 64] {
            assert_eq!(lines(text, None, bytes), whole, "{bytes}");
        }
        for cut in 1..text.len() as u64 {
            let len = text.len() as u64;
            let mut a = lines(text, Some((0, cut)), 3);
            let b = lines(text, Some((cut, len)), 2);
            // A split numbers its lines from its first.
            let base = a.len() as u64;
            a.extend(b.into_iter().map(|(l, n)| (l, n + base)));
            assert_eq!(a, whole, "cut at {cut}");
        }
    }
}
