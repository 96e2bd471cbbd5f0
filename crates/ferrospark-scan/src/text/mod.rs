//! What the text-based readers (CSV, JSON) share: reading a file's text, Spark's parse
//! modes, the plan of a scan (files, schema, output, pushed filters) and the stream that
//! converts records in parallel pieces with filters checked while fields convert.
//!
//! A format supplies two things: how a piece of a file splits into records
//! ([`RecordReader`]) and how one field of a batch of records converts to its type
//! ([`RawRows`]). Everything after that (early skipping, modes, the corrupt-record
//! column, partition columns, the output's shape) is [`assemble`]'s, once for all formats.
//! The plan and the assembler serve the Avro reader too, over batches `arrow-avro` decodes.

pub(crate) mod assemble;
mod direct;
mod plan;
mod read_ahead;
mod split;
mod stream;

use std::io::Read;
use std::path::Path;

use ferrospark_common::{FerroError, Result};

pub(crate) use ferrospark_expr::text_options::flag;
pub use ferrospark_expr::text_options::{Charset, DateTimeFormats, ParseMode};
pub(crate) use plan::PlanSpec;
pub use plan::{FileScanPlan, FILE_SCAN_METRICS};
pub use split::FileRanges;
pub(crate) use split::{byte_splits, file_reads, FileRead, LineRange};
pub use stream::TextStream;
pub(crate) use stream::{convert_in_parallel, fused, pieces, text_splits, RawRows, RecordReader};

/// A file's compression by its extension.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Compression {
    None,
    Gzip,
    Bzip2,
    Zstd,
}

fn compression(path: &Path) -> Compression {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match ext.as_str() {
        "gz" | "gzip" => Compression::Gzip,
        "bz2" => Compression::Bzip2,
        "zst" | "zstd" => Compression::Zstd,
        _ => Compression::None,
    }
}

/// Whether `path`'s text is compressed (by its extension), so that it cannot be split.
pub(crate) fn compressed(path: &Path) -> bool {
    compression(path) != Compression::None
}

/// A reader of `path`'s text as UTF-8, decompressed by its extension (`.gz`, `.bz2`, `.zst`)
/// and decoded from `charset`.
pub(crate) fn open_text(path: &Path, charset: Charset) -> Result<Box<dyn Read + Send>> {
    let file = std::fs::File::open(path).map_err(|e| FerroError::io(path, e))?;
    let buffered = |f| std::io::BufReader::with_capacity(1 << 20, f);
    let bytes: Box<dyn Read + Send> = match compression(path) {
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(buffered(file))),
        Compression::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(buffered(file))),
        Compression::Zstd => Box::new(
            zstd::stream::read::Decoder::with_buffer(buffered(file))
                .map_err(|e| FerroError::io(path, e))?,
        ),
        // Plain text is read in large blocks already: no buffer between.
        Compression::None => Box::new(file),
    };
    Ok(charset.reader(bytes))
}

/// Reads from `r` into `buf` until it holds `want` bytes or the text ends; false at the end.
pub(crate) fn fill(r: &mut dyn Read, buf: &mut Vec<u8>, want: usize, path: &Path) -> Result<bool> {
    while buf.len() < want {
        let before = buf.len();
        // `read_to_end` reads into spare capacity without zeroing it first.
        buf.reserve(want - before);
        let got = r
            .take((want - before) as u64)
            .read_to_end(buf)
            .map_err(|e| FerroError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::new(e.kind(), format!("cannot read the text: {e}")),
            })?;
        if got == 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Fills `buf` from `r` to `want` bytes, then on while the bytes after `from` hold no line end
/// (a line longer than a block grows it until it ends); false at the text's end.
pub(crate) fn fill_lines(
    r: &mut dyn Read,
    buf: &mut Vec<u8>,
    from: usize,
    want: usize,
    path: &Path,
) -> Result<bool> {
    let mut more = fill(r, buf, want, path)?;
    while more && memchr::memchr(b'\n', &buf[from..]).is_none() {
        let want = buf.len() * 2;
        more = fill(r, buf, want, path)?;
    }
    Ok(more)
}

/// Whether a file can be cut at line ends (into blocks, or into splits across tasks): not
/// when a record may span lines (`whole_file`), the file is compressed, or its text is not
/// UTF-8 (its `\n` bytes are not its line ends).
pub(crate) fn can_cut(whole_file: bool, charset: Charset, path: &Path) -> bool {
    !whole_file && !compressed(path) && charset == Charset::Utf8
}

/// The whole text of `path` as UTF-8, decompressed by its extension and decoded from `charset`.
pub(crate) fn read_text(path: &Path, charset: Charset) -> Result<Vec<u8>> {
    let mut r = open_text(path, charset)?;
    let mut out = Vec::new();
    r.read_to_end(&mut out).map_err(|e| FerroError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(e.kind(), format!("cannot read the text: {e}")),
    })?;
    Ok(out)
}
