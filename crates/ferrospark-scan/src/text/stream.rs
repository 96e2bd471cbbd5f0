//! The batches of a text scan, in file order, converted in pieces of about [`PIECE_BYTES`]
//! on the shared thread pool.
//!
//! A plain UTF-8 file whose records are lines is cut into byte ranges, and each pool thread
//! reads its piece itself before converting it ([`super::direct`]). Other files (compressed,
//! another charset, `multiLine`) are read in blocks: each block cut at line ends into pieces
//! that convert in parallel, and after a file's first block the next one is read ahead on a
//! thread of its own ([`super::read_ahead`]).
//!
//! ```text
//!   plain file:  byte ranges --each thread reads its range's lines--> convert --> batches
//!   other file:  --read--> block (the previous block's unfinished line first)
//!                --cut at its last line end--> pieces --convert in parallel--> batches
//!                --the unfinished line carries over to the next block
//! ```
//!
//! Memory stays at a block of text (or a piece per thread) however large the file; a record
//! (a line) longer than a block grows the block until it ends.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::DataType;
use ferrospark_common::{Config, FerroError, Result};

use super::assemble::Assembler;
use super::direct::DirectRead;
use super::read_ahead::ReadAhead;
use super::{
    byte_splits, can_cut, file_reads, fill_lines, open_text, read_text, Charset, FileRanges,
    FileRead, FileScanPlan, LineRange,
};

/// A batch of records of one format, before its fields convert.
pub(crate) trait RawRows {
    /// Rows in the batch.
    fn len(&self) -> usize;
    /// Rows malformed before any field converts (a wrong field count, text that is not JSON).
    fn malformed(&self) -> Vec<bool>;
    /// Rows whose converted values Spark discards once the pushed filters have seen them: a
    /// JSON record with a syntax error keeps the fields read before the error only long enough
    /// for a filter to drop the record.
    fn values_lost(&self) -> Vec<bool> {
        vec![false; self.len()]
    }
    /// Needed field `k` (its position among the needed fields) of every row as `to`, and
    /// which rows have a value that did not convert.
    fn convert(
        &self,
        text: &[u8],
        k: usize,
        to: &DataType,
        cfg: &Config,
    ) -> Result<(ArrayRef, Vec<bool>)>;
    /// Keeps the rows whose `keep` is true.
    fn retain(&mut self, keep: &[bool]);
    /// Reads the rest of each record read only up to the filter's fields (the rows left
    /// have passed the pushed filter); a syntax error found now makes a row malformed.
    fn finish(&mut self, _text: &[u8]) {}
    /// Where row `row`'s record lies in the text (`start..end`) and its first line.
    fn span(&self, row: usize) -> (usize, usize, u64);
    /// The text of row `row`'s record (for the corrupt-record column and errors).
    fn text(&self, text: &[u8], row: usize) -> String {
        let (start, end, _) = self.span(row);
        String::from_utf8_lossy(&text[start..end]).into_owned()
    }
    /// The first line of row `row`'s record.
    fn line(&self, row: usize) -> u64 {
        self.span(row).2
    }
    /// Where row `row`'s record starts: rows of one record (a JSON array of objects) share
    /// it, and a malformed one makes them all malformed, as Spark fails the whole record.
    fn record(&self, row: usize) -> usize {
        self.span(row).0
    }
}

/// Converts `pieces` in parallel on the shared pool, a piece per thread, adding their
/// batches to `pending` in order.
pub(crate) fn convert_in_parallel<P: Sync>(
    pieces: &[P],
    convert: impl Fn(&P) -> Result<Vec<RecordBatch>> + Sync + Send,
    pending: &mut VecDeque<RecordBatch>,
) -> Result<()> {
    use rayon::prelude::*;
    let outs: Vec<Result<Vec<RecordBatch>>> = pieces.par_iter().map(convert).collect();
    for o in outs {
        pending.extend(o?);
    }
    Ok(())
}

/// How a format splits a file's text into records.
pub(crate) trait RecordReader: Send + Sync + 'static {
    /// A batch of records.
    type Rows: RawRows;
    /// Where records start in a file's text (past a byte order mark or a header) and the
    /// line there.
    fn first_record(&self, text: &[u8]) -> (usize, u64);
    /// Whether a record may span lines, so that a file cannot be cut at line ends.
    fn whole_file(&self) -> bool;
    /// The files' character set.
    fn charset(&self) -> Charset {
        Charset::Utf8
    }
    /// Whether fields convert in the filter's order rather than the file's.
    fn filter_first(&self) -> bool;
    /// The records of `text[start..end]` whose first line is `line`, in batches of at most
    /// `batch` rows, keeping the data fields `needed` (in file order) only. A format may read
    /// a record only until it has the fields at positions `early` of `needed` (those the
    /// pushed filter reads) and the rest in [`RawRows::finish`].
    fn records(
        &self,
        text: &[u8],
        piece: (usize, usize, u64),
        needed: &[usize],
        early: &[usize],
        batch: usize,
        each: &mut dyn FnMut(Self::Rows) -> Result<()>,
    ) -> Result<()>;
}

/// A format's reader without its batch type, so a stream is one type for every format.
trait PieceConverter: Send + Sync {
    fn first_record(&self, text: &[u8]) -> (usize, u64);
    fn whole_file(&self) -> bool;
    fn charset(&self) -> Charset;
    fn convert(
        &self,
        asm: &Assembler,
        plan: &FileScanPlan,
        file: usize,
        text: &[u8],
        piece: (usize, usize, u64),
    ) -> Result<Vec<RecordBatch>>;
}

impl<R: RecordReader> PieceConverter for R {
    fn first_record(&self, text: &[u8]) -> (usize, u64) {
        RecordReader::first_record(self, text)
    }
    fn whole_file(&self) -> bool {
        RecordReader::whole_file(self)
    }
    fn charset(&self) -> Charset {
        RecordReader::charset(self)
    }
    fn convert(
        &self,
        asm: &Assembler,
        plan: &FileScanPlan,
        file: usize,
        text: &[u8],
        piece: (usize, usize, u64),
    ) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        self.records(
            text,
            piece,
            &asm.needed,
            asm.early(),
            plan.batch_size,
            &mut |rows| {
                if rows.len() > 0 {
                    let b = asm.batch(plan, file, text, rows)?;
                    if b.num_rows() > 0 {
                        out.push(b);
                    }
                }
                Ok(())
            },
        )?;
        Ok(out)
    }
}

/// `plan`'s files in splits of at most `max_bytes` for a format read by `reader`: a file
/// cut only where its records cannot span lines and it is not compressed.
pub(crate) fn text_splits(
    plan: &FileScanPlan,
    reader: &impl RecordReader,
    max_bytes: u64,
) -> Vec<(std::path::PathBuf, u64, u64)> {
    byte_splits(&plan.listing, max_bytes, |p| {
        can_cut(reader.whole_file(), reader.charset(), p)
    })
}

/// Bytes of one piece of a file converted on its own. Small, so that a block's text is
/// still in the cache when it converts (4 MB pieces in 32 MB blocks cost a sixth more CPU
/// than this on JSON).
const PIECE_BYTES: usize = 512 << 10;

/// Pieces a thread converts from each block: with several, a thread that finishes early
/// takes another rather than waiting for the slowest (the read-ahead thread shares the
/// cores).
const PIECES_PER_THREAD: usize = 4;

/// The records of `text` from `start` (line `line`) in pieces of about [`PIECE_BYTES`], each
/// ending at a line end; each piece knows its first line. Also the line after the text.
pub(crate) fn pieces(
    text: &[u8],
    start: usize,
    line: u64,
    whole: bool,
) -> (Vec<(usize, usize, u64)>, u64) {
    let mut out = Vec::new();
    let (mut at, mut line) = (start, line);
    while at < text.len() {
        let guess = if whole {
            text.len()
        } else {
            (at + PIECE_BYTES).min(text.len())
        };
        let end = match memchr::memchr(b'\n', &text[guess..]) {
            Some(i) => guess + i + 1,
            None => text.len(),
        };
        out.push((at, end, line));
        line += memchr::memchr_iter(b'\n', &text[at..end]).count() as u64;
        at = end;
    }
    (out, line)
}

/// The batches of a text scan.
pub struct TextStream {
    plan: Arc<FileScanPlan>,
    reader: Arc<dyn PieceConverter>,
    asm: Assembler,
    /// The files (or splits of them) to read, the one being read and the next one.
    reads: Vec<FileRead>,
    read: FileRead,
    next_read: usize,
    /// The open file's blocks after the first (`None` once read to the end or read whole).
    ahead: Option<ReadAhead>,
    /// The open file when it is plain text its pieces read themselves ([`super::direct`]).
    direct: Option<DirectRead>,
    /// The current block of text (whole lines, perhaps then the start of an unfinished one).
    text: Vec<u8>,
    pieces: Vec<(usize, usize, u64)>,
    next_piece: usize,
    /// Converted batches not handed out yet.
    pending: VecDeque<RecordBatch>,
    done: bool,
}

impl std::fmt::Debug for TextStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextStream")
            .field("read", &self.read)
            .finish()
    }
}

impl TextStream {
    /// The stream of `plan`'s files, or of the splits `only` names.
    pub(crate) fn new<R: RecordReader>(
        plan: Arc<FileScanPlan>,
        reader: R,
        only: Option<&FileRanges>,
    ) -> Result<Self> {
        let asm = Assembler::new(&plan, reader.filter_first())?;
        Ok(Self {
            reads: file_reads(&plan.listing, only),
            plan,
            reader: Arc::new(reader),
            asm,
            read: FileRead {
                file: 0,
                range: None,
            },
            next_read: 0,
            ahead: None,
            direct: None,
            text: Vec::new(),
            pieces: Vec::new(),
            next_piece: 0,
            pending: VecDeque::new(),
            done: false,
        })
    }

    /// Pieces converted at a time: [`PIECES_PER_THREAD`] for each thread.
    fn group_pieces() -> usize {
        PIECES_PER_THREAD * rayon::current_num_threads().max(1)
    }

    /// Bytes of text read at a time: a group of pieces.
    fn block_bytes() -> usize {
        Self::group_pieces() * PIECE_BYTES
    }

    /// Opens the next file (or split) and reads its first block; false when none is left.
    fn open_next(&mut self) -> Result<bool> {
        let (path, split, cut) = loop {
            let Some(read) = self.reads.get(self.next_read).copied() else {
                return Ok(false);
            };
            self.next_read += 1;
            self.read = read;
            let f = &self.plan.listing.files[read.file];
            let split = read.range.filter(|&(s, e)| s > 0 || e < f.size);
            let cut = can_cut(self.reader.whole_file(), self.reader.charset(), &f.path);
            // A file that cannot split is read whole by the split at its start.
            match split {
                Some((s, _)) if !cut => {
                    if s == 0 {
                        break (f.path.clone(), None, cut);
                    }
                }
                _ => break (f.path.clone(), split, cut),
            }
        };
        self.plan.metrics.add("files", 1);
        self.text.clear();
        self.ahead = None;
        self.pieces.clear();
        self.next_piece = 0;
        if cut {
            self.direct = Some(DirectRead::open(&path, split)?);
            return Ok(true);
        }
        let mut rest = None;
        if self.reader.whole_file() {
            self.text = read_text(&path, self.reader.charset())?;
        } else {
            let mut source: Box<dyn std::io::Read + Send> = match split {
                Some(range) => Box::new(LineRange::open(&path, range)?),
                None => open_text(&path, self.reader.charset())?,
            };
            // The first block holds at least one whole line (a header is read from it).
            let more = fill_lines(&mut *source, &mut self.text, 0, Self::block_bytes(), &path)?;
            rest = more.then_some(source);
        }
        self.plan.metrics.add("bytes_read", self.text.len() as u64);
        // A split after the file's start has no byte order mark or header, and counts its
        // lines from where it starts.
        let (pos, line) = match self.read.offset() {
            Some(_) => (0, 1),
            None => self.reader.first_record(&self.text),
        };
        // Whole lines now; the rest of the file is read ahead while they convert.
        let end = match rest {
            None => self.text.len(),
            Some(_) => memchr::memrchr(b'\n', &self.text)
                .map_or(pos, |i| i + 1)
                .max(pos),
        };
        let whole = self.reader.whole_file();
        let next_line;
        (self.pieces, next_line) = pieces(&self.text[..end], pos, line, whole);
        self.next_piece = 0;
        if let Some(source) = rest {
            self.ahead = Some(ReadAhead::start(
                source,
                path,
                self.text[end..].to_vec(),
                next_line,
                Self::block_bytes(),
                self.plan.metrics.clone(),
            )?);
        }
        Ok(true)
    }

    /// The open file's next block, read ahead; false at its end.
    fn next_block(&mut self) -> Result<bool> {
        let Some(ahead) = &self.ahead else {
            return Ok(false);
        };
        match ahead.next()? {
            Some(block) => {
                ahead.recycle(std::mem::replace(&mut self.text, block.text));
                self.pieces = block.pieces;
                self.next_piece = 0;
                Ok(true)
            }
            None => {
                self.ahead = None;
                Ok(false)
            }
        }
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if let Some(b) = self.pending.pop_front() {
                return Ok(Some(b));
            }
            if self.done {
                return Ok(None);
            }
            if let Some(direct) = &mut self.direct {
                let take = Self::group_pieces();
                let group = direct.next_pieces(take, PIECE_BYTES as u64);
                if group.is_empty() {
                    self.direct = None;
                    continue;
                }
                let (reader, asm, plan, read) = (&self.reader, &self.asm, &*self.plan, self.read);
                let direct = &*direct;
                convert_in_parallel(
                    &group,
                    |&piece| convert_direct(&**reader, asm, plan, read.file, direct, piece),
                    &mut self.pending,
                )
                .map_err(|e| read.locate(e))?;
                continue;
            }
            if self.next_piece >= self.pieces.len() {
                if !self.next_block()? && !self.open_next()? {
                    self.done = true;
                }
                continue;
            }
            let take = Self::group_pieces();
            let group: Vec<(usize, usize, u64)> = self.pieces
                [self.next_piece..(self.next_piece + take).min(self.pieces.len())]
                .to_vec();
            self.next_piece += group.len();
            let (reader, asm, plan, text, read) = (
                &self.reader,
                &self.asm,
                &*self.plan,
                &self.text[..],
                self.read,
            );
            convert_in_parallel(
                &group,
                |&piece| reader.convert(asm, plan, read.file, text, piece),
                &mut self.pending,
            )
            .map_err(|e| read.locate(e))?;
        }
    }
}

/// The batches of the piece `(start, end)` of a file read directly: the piece reads its own
/// text; an error's line, counted within the piece, is made absolute.
fn convert_direct(
    reader: &dyn PieceConverter,
    asm: &Assembler,
    plan: &FileScanPlan,
    file: usize,
    direct: &DirectRead,
    (start, end): (u64, u64),
) -> Result<Vec<RecordBatch>> {
    let Some(piece) = direct.read((start, end))? else {
        return Ok(Vec::new());
    };
    plan.metrics
        .add("bytes_read", (piece.last - piece.first) as u64);
    let text = &piece.text[..piece.last];
    let starts_file = direct.starts_file(start);
    let (pos, line) = if starts_file {
        reader.first_record(text)
    } else {
        (piece.first, 1)
    };
    let out = match reader.convert(asm, plan, file, text, (pos, piece.last, line)) {
        Err(FerroError::Malformed {
            path,
            line,
            message,
        }) if !starts_file => Err(FerroError::Malformed {
            path,
            line: line + direct.lines_before(piece.at + piece.first as u64)?,
            message,
        }),
        out => out,
    };
    direct.recycle(piece.text);
    out
}

/// An iterator's next item from `next` (a batch, the end, or an error), the stream marked
/// `done` after an error so that it ends there.
pub(crate) fn fused(
    done: &mut bool,
    next: Result<Option<RecordBatch>>,
) -> Option<Result<RecordBatch>> {
    match next {
        Ok(b) => b.map(Ok),
        Err(e) => {
            *done = true;
            Some(Err(e))
        }
    }
}

impl Iterator for TextStream {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let next = self.next_batch();
        fused(&mut self.done, next)
    }
}
