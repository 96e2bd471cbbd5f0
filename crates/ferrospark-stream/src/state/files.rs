//! The memory provider's files: a delta (one version's puts and removes) and a snapshot
//! (a whole version), each written atomically and checked when read.
//!
//! ```text
//!   magic "FSSTATE2" | kind u8 (1 delta, 2 snapshot) | version u64 | codec u8 (1 lz4, 2 zstd)
//!   blocks: raw length u32 | stored length u32 | the block's records, compressed
//!   trailer: records u64 | crc32 of every byte before it
//!   records (once decompressed): op u8 (1 put, 2 remove) | key len u32 | key | [value len u32 | value]
//! ```
//! (little-endian). Records are compressed in blocks of 64 KiB (files written before hold
//! blocks of up to 1 MiB) by the codec `spark.sql.streaming.stateStore.compression.codec`
//! names (LZ4 by default, as Spark's); a record may run on into the next block. A memory
//! store's delta holds the outcome of the version's changes: each key put once, with its last
//! value, then the keys removed (see `memory.rs`). Files of the first format ("FSSTATE1": no
//! codec byte, no blocks, the records as they are) are still read. A file is written whole or not
//! at all (`ferrospark_common::atomic_file`). A file that is short, whose checksum disagrees,
//! that does not decompress, or that holds another version is an error naming it, never a
//! partial state.

use std::path::{Path, PathBuf};

use ferrospark_common::{FerroError, Result};

use super::state_error;

const MAGIC: &[u8; 8] = b"FSSTATE2";
/// Files written before records were compressed.
const MAGIC_UNCOMPRESSED: &[u8; 8] = b"FSSTATE1";
const PUT: u8 = 1;
const REMOVE: u8 = 2;
/// Raw bytes of records per compressed block: small enough that the block being filled
/// and compressed stays in the core's cache (LZ4 finds matches only 64 KiB back anyway).
/// Measured on a join's million-row batches: writing records took 27% of the profile with
/// 1 MiB blocks, 16% with 64 KiB ones.
const BLOCK: usize = 64 << 10;
/// The largest block a reader accepts (files written before blocks were 64 KiB hold 1 MiB
/// blocks).
const MAX_BLOCK: usize = 1 << 20;

/// How a file's records are compressed (Spark's
/// `spark.sql.streaming.stateStore.compression.codec`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Codec {
    /// LZ4 (Spark's default): about 1 GB/s, deltas of a join a third of their size.
    #[default]
    Lz4,
    /// Zstandard at level 1: smaller files, slower to write.
    Zstd,
}

impl Codec {
    /// The codec Spark's short name or class name `name` stands for.
    pub fn parse(name: &str) -> Option<Self> {
        let short = name.rsplit('.').next().unwrap_or(name).to_ascii_lowercase();
        match short.trim_end_matches("compressioncodec") {
            "lz4" => Some(Codec::Lz4),
            "zstd" => Some(Codec::Zstd),
            _ => None,
        }
    }

    fn tag(self) -> u8 {
        match self {
            Codec::Lz4 => 1,
            Codec::Zstd => 2,
        }
    }

    fn from_tag(tag: u8) -> Option<Self> {
        match tag {
            1 => Some(Codec::Lz4),
            2 => Some(Codec::Zstd),
            _ => None,
        }
    }

    /// Appends `raw` compressed to `out`.
    fn compress(self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        match self {
            Codec::Lz4 => {
                let at = out.len();
                out.resize(at + lz4_flex::block::get_maximum_output_size(raw.len()), 0);
                let n = lz4_flex::block::compress_into(raw, &mut out[at..])
                    .map_err(|e| FerroError::Internal(format!("LZ4 compression: {e}")))?;
                out.truncate(at + n);
            }
            Codec::Zstd => {
                let c = zstd::bulk::compress(raw, 1)
                    .map_err(|e| FerroError::Internal(format!("zstd compression: {e}")))?;
                out.extend_from_slice(&c);
            }
        }
        Ok(())
    }

    /// Appends `stored` decompressed (`raw_len` bytes) to `out`: `false` when it does not
    /// decompress to that.
    fn decompress(self, stored: &[u8], raw_len: usize, out: &mut Vec<u8>) -> bool {
        let at = out.len();
        match self {
            Codec::Lz4 => {
                out.resize(at + raw_len, 0);
                matches!(lz4_flex::block::decompress_into(stored, &mut out[at..]), Ok(n) if n == raw_len)
            }
            Codec::Zstd => match zstd::bulk::decompress(stored, raw_len) {
                Ok(d) if d.len() == raw_len => {
                    out.extend_from_slice(&d);
                    true
                }
                _ => false,
            },
        }
    }
}

/// What a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// One version's changes.
    Delta,
    /// One version's whole state.
    Snapshot,
}

impl FileKind {
    fn tag(self) -> u8 {
        match self {
            FileKind::Delta => 1,
            FileKind::Snapshot => 2,
        }
    }

    fn extension(self) -> &'static str {
        match self {
            FileKind::Delta => "delta",
            FileKind::Snapshot => "snapshot",
        }
    }

    /// `<dir>/<version>.delta` or `.snapshot`.
    pub(crate) fn path(self, dir: &Path, version: u64) -> PathBuf {
        dir.join(format!("{version}.{}", self.extension()))
    }
}

/// The versions of `dir`'s files of each kind, sorted.
pub(crate) fn list_versions(dir: &Path) -> Result<(Vec<u64>, Vec<u64>)> {
    let mut deltas = Vec::new();
    let mut snapshots = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((deltas, snapshots)),
        Err(e) => return Err(FerroError::io(dir, e)),
    };
    for e in entries {
        let e = e.map_err(|e| FerroError::io(dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((stem, ext)) = name.split_once('.') else {
            continue;
        };
        let Ok(v) = stem.parse::<u64>() else {
            continue;
        };
        match ext {
            "delta" => deltas.push(v),
            "snapshot" => snapshots.push(v),
            _ => {}
        }
    }
    deltas.sort_unstable();
    snapshots.sort_unstable();
    Ok((deltas, snapshots))
}

/// Bytes of a file before its blocks: magic, kind, version, codec.
const HEAD: usize = MAGIC.len() + 1 + 8 + 1;

/// A file being built in memory, record by record (a store's delta grows with each change,
/// as Spark's delta stream does, so a commit only seals and writes it). Each block of
/// records is compressed as soon as it is full: what is held is the file as it will be
/// written, a third of the records' size for a join, and one block of records.
#[derive(Debug)]
pub(crate) struct FileBuffer {
    codec: Codec,
    /// Records not compressed yet: less than a block after each push.
    raw: Vec<u8>,
    /// The file so far: room for its head, then each sealed block with its lengths.
    file: Vec<u8>,
    records: u64,
}

fn len_bytes(n: usize) -> Result<[u8; 4]> {
    u32::try_from(n).map(u32::to_le_bytes).map_err(|_| {
        FerroError::Unsupported(format!(
            "a state key or value of {n} bytes (the limit is 4 GiB)"
        ))
    })
}

impl FileBuffer {
    /// An empty file whose records `codec` compresses.
    pub(crate) fn new(codec: Codec) -> Self {
        Self {
            codec,
            raw: Vec::new(),
            file: vec![0; HEAD],
            records: 0,
        }
    }

    /// Drops every record (keeping the memory).
    pub(crate) fn clear(&mut self) {
        self.raw.clear();
        self.file.truncate(HEAD);
        self.records = 0;
    }

    /// Adds a put (`Some`) or a remove (`None`) of `key`.
    pub(crate) fn push(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let klen = len_bytes(key.len())?;
        let vlen = value.map(|v| len_bytes(v.len())).transpose()?;
        self.raw
            .reserve(1 + klen.len() + key.len() + value.map_or(0, |v| 4 + v.len()));
        self.raw.push(if value.is_some() { PUT } else { REMOVE });
        self.raw.extend_from_slice(&klen);
        self.raw.extend_from_slice(key);
        if let (Some(v), Some(vlen)) = (value, vlen) {
            self.raw.extend_from_slice(&vlen);
            self.raw.extend_from_slice(v);
        }
        self.records += 1;
        if self.raw.len() >= BLOCK {
            self.seal(BLOCK)?;
        }
        Ok(())
    }

    /// Compresses the first `n` bytes of records as the file's next block.
    fn seal(&mut self, n: usize) -> Result<()> {
        let at = self.file.len();
        self.file.extend_from_slice(&len_bytes(n)?);
        self.file.extend_from_slice(&[0; 4]);
        self.codec.compress(&self.raw[..n], &mut self.file)?;
        let stored = len_bytes(self.file.len() - at - 8)?;
        self.file[at + 4..at + 8].copy_from_slice(&stored);
        self.raw.drain(..n);
        Ok(())
    }

    /// Writes the records as `dir`'s file of `kind` and `version`, atomically; its
    /// checksum. The buffer is left empty, its memory kept for the next version's records.
    pub(crate) fn write(&mut self, dir: &Path, kind: FileKind, version: u64) -> Result<u32> {
        let written = self.finish(kind, version).and_then(|crc| {
            std::fs::create_dir_all(dir).map_err(|e| FerroError::io(dir, e))?;
            ferrospark_common::atomic_file::write_atomic(&kind.path(dir, version), &self.file)?;
            Ok(crc)
        });
        self.clear();
        written
    }

    /// Seals the last block and completes the file: its head, its record count, its
    /// checksum (returned).
    fn finish(&mut self, kind: FileKind, version: u64) -> Result<u32> {
        while !self.raw.is_empty() {
            self.seal(self.raw.len().min(BLOCK))?;
        }
        self.file[..MAGIC.len()].copy_from_slice(MAGIC);
        self.file[MAGIC.len()] = kind.tag();
        self.file[MAGIC.len() + 1..HEAD - 1].copy_from_slice(&version.to_le_bytes());
        self.file[HEAD - 1] = self.codec.tag();
        let records = std::mem::take(&mut self.records);
        self.file.extend_from_slice(&records.to_le_bytes());
        let crc = crc32fast::hash(&self.file);
        self.file.extend_from_slice(&crc.to_le_bytes());
        Ok(crc)
    }
}

/// Writes `version`'s `entries` as a file of `kind` in `dir`; its checksum.
pub(crate) fn write<'a>(
    dir: &Path,
    kind: FileKind,
    version: u64,
    codec: Codec,
    entries: impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)>,
) -> Result<u32> {
    let mut file = FileBuffer::new(codec);
    for (k, v) in entries {
        file.push(k, v)?;
    }
    file.write(dir, kind, version)
}

/// What [`read`] calls with each record: a key and its value (`None`: removed).
pub(crate) type Record<'a> = &'a mut dyn FnMut(&[u8], Option<&[u8]>);

/// The checksum `version`'s file of `kind` in `dir` ends with, if it is there: which of the
/// versions ever committed as `version` it holds (a batch run again writes its version anew).
pub(crate) fn checksum(dir: &Path, kind: FileKind, version: u64) -> Option<u32> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(kind.path(dir, version)).ok()?;
    f.seek(SeekFrom::End(-4)).ok()?;
    let mut b = [0u8; 4];
    f.read_exact(&mut b).ok()?;
    Some(u32::from_le_bytes(b))
}

/// Reads `version`'s file of `kind` in `dir`, calling `apply` with each record in order; its
/// checksum.
pub(crate) fn read(dir: &Path, kind: FileKind, version: u64, apply: Record<'_>) -> Result<u32> {
    let path = kind.path(dir, version);
    let buf = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(state_error(
                &path,
                format!(
                    "the {} of version {version} is missing: the checkpoint was changed by hand or its files were lost; restore it or start the query with a new checkpoint",
                    kind.extension()
                ),
            ))
        }
        Err(e) => return Err(FerroError::io(&path, e)),
    };
    let corrupt = |why: &str| {
        state_error(
            &path,
            format!("{why}: the file is corrupt or truncated; restore the checkpoint or start the query with a new one"),
        )
    };
    let header = MAGIC.len() + 1 + 8;
    if buf.len() < header + 12 {
        return Err(corrupt("too short"));
    }
    let (body, crc) = buf.split_at(buf.len() - 4);
    let want = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    if crc32fast::hash(body) != want {
        return Err(corrupt("checksum mismatch"));
    }
    let compressed = &body[..MAGIC.len()] == MAGIC;
    if !(compressed || &body[..MAGIC.len()] == MAGIC_UNCOMPRESSED)
        || body[MAGIC.len()] != kind.tag()
    {
        return Err(corrupt("not a ferrospark state file of this kind"));
    }
    let u64_at = |s: &[u8]| {
        let mut b = [0u8; 8];
        b.copy_from_slice(s);
        u64::from_le_bytes(b)
    };
    if u64_at(&body[MAGIC.len() + 1..header]) != version {
        return Err(corrupt(&format!("it does not hold version {version}")));
    }
    let (blocks, trailer) = body[header..].split_at(body.len() - header - 8);
    let records = u64_at(trailer);
    let raw = if compressed {
        let Some((&tag, mut rest)) = blocks.split_first() else {
            return Err(corrupt("too short"));
        };
        let codec = Codec::from_tag(tag).ok_or_else(|| corrupt("an unknown compression codec"))?;
        let mut raw = Vec::new();
        while !rest.is_empty() {
            let lens = rest
                .get(..8)
                .ok_or_else(|| corrupt("a block runs past the end"))?;
            let raw_len = u32_at(&lens[..4]);
            let stored_len = u32_at(&lens[4..]);
            let stored = rest
                .get(8..8 + stored_len)
                .ok_or_else(|| corrupt("a block runs past the end"))?;
            if raw_len > MAX_BLOCK || !codec.decompress(stored, raw_len, &mut raw) {
                return Err(corrupt("a block does not decompress"));
            }
            rest = &rest[8 + stored_len..];
        }
        std::borrow::Cow::Owned(raw)
    } else {
        std::borrow::Cow::Borrowed(blocks)
    };
    parse_records(&raw, records, apply).map_err(corrupt)?;
    Ok(want)
}

fn u32_at(s: &[u8]) -> usize {
    let mut b = [0u8; 4];
    b.copy_from_slice(s);
    u32::from_le_bytes(b) as usize
}

/// Calls `apply` with each of the `records` records in `raw`: what is wrong with them, if
/// anything is.
fn parse_records(raw: &[u8], records: u64, apply: Record<'_>) -> Result<(), &'static str> {
    let mut at = 0;
    let take = |at: &mut usize, n: usize| -> Result<&[u8], &'static str> {
        let end = at
            .checked_add(n)
            .filter(|&e| e <= raw.len())
            .ok_or("a record runs past the end")?;
        let s = &raw[*at..end];
        *at = end;
        Ok(s)
    };
    for _ in 0..records {
        let op = take(&mut at, 1)?[0];
        let klen = u32_at(take(&mut at, 4)?);
        let key = take(&mut at, klen)?;
        match op {
            PUT => {
                let vlen = u32_at(take(&mut at, 4)?);
                apply(key, Some(take(&mut at, vlen)?));
            }
            REMOVE => apply(key, None),
            _ => return Err("an unknown record"),
        }
    }
    if at != raw.len() {
        return Err("bytes after the last record");
    }
    Ok(())
}

/// Bytes of the files directly in `dir` (what a store keeps on disk).
pub(crate) fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
