//! Byte-range splits of row-format files, so that Spark tasks share one large file as Spark's
//! `FilePartition` shares it: which files split, where, and which records a split reads.
//!
//! A text split `[start, end)` reads the lines that begin in `(start, end]`, plus the first
//! line when `start` is 0 (Hadoop's `LineRecordReader`, which Spark's CSV and JSON sources
//! read through): it skips past the first `\n` at or after `start` and reads on past `end`
//! to the first `\n` at or after it. Neighbouring splits meet exactly, so every line is read
//! once whatever the cut. An Avro split reads the blocks whose preceding sync marker begins
//! in `[start, end)` (Avro's `DataFileReader.sync` / `pastSync`).
//!
//! Compressed text and records that may span lines (`multiLine`) do not split: such a file
//! is one split, as Spark reads it.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use ferrospark_common::{FerroError, Result};

use crate::listing::Listing;

/// The byte ranges `(start, end)` of each file a task reads; a file not named is not read.
pub type FileRanges = HashMap<PathBuf, Vec<(u64, u64)>>;

/// One read of a scan: a file of its listing, all of it or a byte range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FileRead {
    /// The file's position in the listing.
    pub file: usize,
    /// The split read (`None`: the whole file).
    pub range: Option<(u64, u64)>,
}

impl FileRead {
    /// Where the split starts when it is not the file's start (its lines are counted from
    /// there).
    pub fn offset(&self) -> Option<u64> {
        self.range.map(|r| r.0).filter(|s| *s > 0)
    }

    /// `e`, saying where its line numbers count from when the split starts inside the file.
    pub fn locate(&self, e: FerroError) -> FerroError {
        match (e, self.offset()) {
            (
                FerroError::Malformed {
                    path,
                    line,
                    message,
                },
                Some(at),
            ) => FerroError::Malformed {
                path,
                line,
                message: format!(
                    "{message} (lines counted from byte {at}, where this task's split of the file starts)"
                ),
            },
            (e, _) => e,
        }
    }
}

/// The reads of `listing`: every file whole, or the ranges `only` names, in listing order.
pub(crate) fn file_reads(listing: &Listing, only: Option<&FileRanges>) -> Vec<FileRead> {
    let mut out = Vec::new();
    for (file, f) in listing.files.iter().enumerate() {
        match only {
            None => out.push(FileRead { file, range: None }),
            Some(only) => {
                let mut ranges = only.get(&f.path).cloned().unwrap_or_default();
                ranges.sort_unstable();
                out.extend(ranges.into_iter().map(|r| FileRead {
                    file,
                    range: Some(r),
                }));
            }
        }
    }
    out
}

/// The splits of `listing`'s files of at most `max_bytes` each: `(path, start, end)`; a file
/// `splittable` rejects is one split.
pub(crate) fn byte_splits(
    listing: &Listing,
    max_bytes: u64,
    splittable: impl Fn(&Path) -> bool,
) -> Vec<(PathBuf, u64, u64)> {
    let max_bytes = max_bytes.max(1);
    let mut out = Vec::new();
    for f in &listing.files {
        if !splittable(&f.path) || f.size <= max_bytes {
            out.push((f.path.clone(), 0, f.size));
            continue;
        }
        let mut start = 0;
        while start < f.size {
            let end = (start + max_bytes).min(f.size);
            out.push((f.path.clone(), start, end));
            start = end;
        }
    }
    out
}

/// A reader of the lines a text split reads (see the module docs).
pub(crate) struct LineRange<R> {
    inner: R,
    /// The absolute position of the next byte `inner` returns.
    pos: u64,
    end: u64,
    /// Still skipping the line the split starts inside (the previous split reads it).
    skipping: bool,
    done: bool,
}

impl LineRange<std::fs::File> {
    /// The lines of `path`'s split `start..end`.
    pub fn open(path: &Path, (start, end): (u64, u64)) -> Result<Self> {
        let mut file = std::fs::File::open(path).map_err(|e| FerroError::io(path, e))?;
        file.seek(SeekFrom::Start(start))
            .map_err(|e| FerroError::io(path, e))?;
        Ok(Self {
            inner: file,
            pos: start,
            end,
            skipping: start > 0,
            done: false,
        })
    }
}

impl<R: Read> Read for LineRange<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while !self.done && !buf.is_empty() {
            let n = self.inner.read(buf)?;
            if n == 0 {
                self.done = true;
                break;
            }
            let at = self.pos;
            self.pos += n as u64;
            let mut from = 0;
            if self.skipping {
                match memchr::memchr(b'\n', &buf[..n]) {
                    // A split whose first line end is past its end starts no line.
                    Some(i) if at + i as u64 >= self.end => {
                        self.done = true;
                        break;
                    }
                    Some(i) => {
                        self.skipping = false;
                        from = i + 1;
                    }
                    None => continue,
                }
            }
            let mut to = n;
            let last_from = (self.end.saturating_sub(at) as usize).max(from);
            if last_from < n {
                if let Some(i) = memchr::memchr(b'\n', &buf[last_from..n]) {
                    to = last_from + i + 1;
                    self.done = true;
                }
            }
            if to > from {
                buf.copy_within(from..to, 0);
                return Ok(to - from);
            }
        }
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_split(text: &[u8], start: u64, end: u64, chunk: usize) -> Vec<u8> {
        /// A reader returning at most `chunk` bytes a call, to cross every boundary.
        struct Trickle<'a>(&'a [u8], usize);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(self.1).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut r = LineRange {
            inner: Trickle(&text[start as usize..], chunk),
            pos: start,
            end,
            skipping: start > 0,
            done: false,
        };
        let mut out = Vec::new();
        r.read_to_end(&mut out).expect("read");
        out
    }

    #[test]
    fn splits_read_every_line_once_whatever_the_cut() {
        let texts: [&[u8]; 4] = [
            b"a,1\nbb,22\n\nccc,333\r\ndddd,4444\n",
            b"no final newline\nx\ny",
            b"\n\n\n",
            b"one line only",
        ];
        for text in texts {
            let len = text.len() as u64;
            for size in 1..=len + 1 {
                for chunk in [1, 2, 3, 7, 64] {
                    let mut all = Vec::new();
                    let mut start = 0;
                    while start < len {
                        let end = (start + size).min(len);
                        all.extend(read_split(text, start, end, chunk));
                        start = end;
                    }
                    assert_eq!(all, text, "split size {size}, chunk {chunk}");
                }
            }
        }
    }

    #[test]
    fn large_files_split_and_others_stay_whole() {
        let listing = Listing {
            files: vec![
                crate::listing::PartitionedFile {
                    path: "a.csv".into(),
                    size: 25,
                    partition_values: vec![],
                },
                crate::listing::PartitionedFile {
                    path: "b.csv.gz".into(),
                    size: 25,
                    partition_values: vec![],
                },
            ],
            partition_fields: vec![],
        };
        let s = byte_splits(&listing, 10, |p| !super::super::compressed(p));
        let got: Vec<(String, u64, u64)> = s
            .into_iter()
            .map(|(p, a, b)| (p.display().to_string(), a, b))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a.csv".into(), 0, 10),
                ("a.csv".into(), 10, 20),
                ("a.csv".into(), 20, 25),
                ("b.csv.gz".into(), 0, 25),
            ]
        );
        let only: FileRanges = [(PathBuf::from("a.csv"), vec![(10, 20), (0, 10)])].into();
        let reads = file_reads(&listing, Some(&only));
        assert_eq!(
            reads,
            vec![
                FileRead {
                    file: 0,
                    range: Some((0, 10))
                },
                FileRead {
                    file: 0,
                    range: Some((10, 20))
                },
            ]
        );
    }
}
