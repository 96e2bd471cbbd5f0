//! Reading a text file's next block on a thread of its own while the pool converts the
//! current one.
//!
//! Reading from the page cache is a copy in the kernel, and decompression is work too: done
//! between blocks, either leaves a core idle while the other finishes its last piece and
//! makes the pool wait for it. A file longer than one block is read one block ahead instead:
//!
//! ```text
//!   reader thread:  fill block k+1 (the unfinished line of k first), cut into pieces --send-->
//!   stream:         convert block k's pieces in parallel <--recv-- block k+1 ... block k's
//!                   buffer goes back to the reader for block k+2
//! ```
//!
//! At most two blocks wait or fill beside the one converting. Dropping the stream drops the
//! receiver, and the reader stops at its next block.

use ferrospark_common::{FerroError, MetricsSet, Result};
use std::io::Read;
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use super::fill_lines;
use super::stream::pieces;

/// A block of a file's text: whole lines, cut into pieces, then the start of the next
/// unfinished line (which the next block repeats).
pub(crate) struct Block {
    /// The text.
    pub text: Vec<u8>,
    /// Its whole lines in pieces: `(start, end, first line)`.
    pub pieces: Vec<(usize, usize, u64)>,
}

/// The blocks after a file's first, read ahead on a thread.
pub(crate) struct ReadAhead {
    blocks: Receiver<Result<Option<Block>>>,
    /// Buffers the stream is done with, for the reader to fill again.
    spent: SyncSender<Vec<u8>>,
}

/// What the reader thread reads from and where it stands.
struct Source {
    read: Box<dyn Read + Send>,
    path: PathBuf,
    /// The unfinished line at the end of the last block.
    carry: Vec<u8>,
    /// The line `carry` starts on.
    line: u64,
    block_bytes: usize,
    /// Whether the file has been read to its end.
    ended: bool,
    /// The scan's counters (`bytes_read`).
    metrics: MetricsSet,
}

impl ReadAhead {
    /// Starts reading `read` (the file at `path`) after its first block, whose unfinished
    /// last line `carry` starts on line `line`.
    pub fn start(
        read: Box<dyn Read + Send>,
        path: PathBuf,
        carry: Vec<u8>,
        line: u64,
        block_bytes: usize,
        metrics: MetricsSet,
    ) -> Result<Self> {
        let (tx, blocks) = sync_channel(0);
        let (spent, buffers) = sync_channel(2);
        let source = Source {
            read,
            path,
            carry,
            line,
            block_bytes,
            ended: false,
            metrics,
        };
        std::thread::Builder::new()
            .name("ferrospark-text-read".into())
            .spawn(move || source.run(&tx, &buffers))
            .map_err(|e| FerroError::Internal(format!("cannot start the text reader: {e}")))?;
        Ok(Self { blocks, spent })
    }

    /// The next block, `None` at the file's end.
    pub fn next(&self) -> Result<Option<Block>> {
        self.blocks.recv().unwrap_or_else(|_| {
            Err(FerroError::Internal(
                "the text reader thread stopped before the file's end".into(),
            ))
        })
    }

    /// Hands a converted block's buffer back for reuse.
    pub fn recycle(&self, mut text: Vec<u8>) {
        text.clear();
        // A full queue or a finished reader: the buffer is freed instead.
        let _ = self.spent.try_send(text);
    }
}

impl Source {
    fn run(mut self, tx: &SyncSender<Result<Option<Block>>>, buffers: &Receiver<Vec<u8>>) {
        loop {
            // A spent buffer when the stream has handed one back.
            let mut text = buffers.try_recv().unwrap_or_default();
            let next = self.next_block(&mut text).map(|more| {
                more.then(|| {
                    let (pieces, line) = pieces(&text, 0, self.line, false);
                    self.line = line;
                    Block { text, pieces }
                })
            });
            let last = !matches!(next, Ok(Some(_)));
            // A closed channel: the stream was dropped.
            if tx.send(next).is_err() || last {
                return;
            }
        }
    }

    /// Fills `text` with the carried line and the next block's whole lines, keeping the
    /// next unfinished line as the carry; false at the file's end.
    fn next_block(&mut self, text: &mut Vec<u8>) -> Result<bool> {
        if self.ended {
            return Ok(false);
        }
        text.extend_from_slice(&self.carry);
        let before = text.len();
        let want = self.block_bytes.max(before + 1);
        let more = fill_lines(&mut *self.read, text, before, want, &self.path)?;
        self.metrics.add("bytes_read", (text.len() - before) as u64);
        self.carry.clear();
        if more {
            let end = memchr::memrchr(b'\n', text).map_or(0, |i| i + 1);
            self.carry.extend_from_slice(&text[end..]);
            text.truncate(end);
        } else {
            self.ended = true;
        }
        Ok(!text.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::FILE_SCAN_METRICS;

    /// Every block's pieces, as (text, first line) of each line.
    fn lines_read(text: &[u8], first: usize, block_bytes: usize) -> Vec<(String, u64)> {
        let end = memchr::memchr(b'\n', &text[..first]).map_or(0, |i| i + 1);
        let ahead = ReadAhead::start(
            Box::new(std::io::Cursor::new(text[first..].to_vec())),
            PathBuf::from("t.txt"),
            text[end..first].to_vec(),
            2,
            block_bytes,
            MetricsSet::new(FILE_SCAN_METRICS),
        )
        .expect("reader");
        let mut out = Vec::new();
        while let Some(block) = ahead.next().expect("block") {
            assert!(
                block.text.ends_with(b"\n")
                    || block.pieces.last().map(|p| p.1) == Some(block.text.len())
            );
            for (s, e, mut line) in block.pieces {
                for l in block.text[s..e].split_inclusive(|c| *c == b'\n') {
                    out.push((String::from_utf8_lossy(l).into_owned(), line));
                    line += 1;
                }
            }
            ahead.recycle(block.text);
        }
        out
    }

    #[test]
    fn blocks_hold_whole_lines_numbered_in_order() {
        // Short lines, one line longer than any block, and no newline at the end.
        let mut text = String::from("first\n");
        for i in 0..300 {
            text.push_str(&format!("line {i}\n"));
            if i == 150 {
                text.push_str(&"x".repeat(5000));
                text.push('\n');
            }
        }
        text.push_str("last");
        let want: Vec<(String, u64)> = text
            .split_inclusive('\n')
            .skip(1)
            .zip(2..)
            .map(|(l, n)| (l.to_string(), n))
            .collect();
        // The first block ended in the middle of line 2.
        for block_bytes in [1, 7, 64, 1000, 1 << 20] {
            assert_eq!(
                lines_read(text.as_bytes(), 9, block_bytes),
                want,
                "{block_bytes}"
            );
        }
    }

    #[test]
    fn a_read_error_reaches_the_stream() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk on fire"))
            }
        }
        let ahead = ReadAhead::start(
            Box::new(Broken),
            PathBuf::from("t.txt"),
            Vec::new(),
            1,
            64,
            MetricsSet::new(FILE_SCAN_METRICS),
        )
        .expect("reader");
        let err = ahead.next().err().expect("an error");
        assert!(err.to_string().contains("disk on fire"), "{err}");
    }
}
