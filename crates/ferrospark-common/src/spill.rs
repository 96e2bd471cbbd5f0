//! Spill files: batches written to an anonymous Arrow IPC file in `ferrospark.spill.dir` (or
//! the system temp directory) and read back in order. The file has no name on disk and is gone
//! when the [`SpillFile`] is dropped, also if the process dies.

use std::fs::File;
use std::io::{BufReader, BufWriter, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::SchemaRef;

use crate::{FerroError, Result};

/// Where spill files go.
#[derive(Debug, Clone, Default)]
pub struct SpillDir(Option<PathBuf>);

impl SpillDir {
    /// `dir`, or the system temp directory when `None`.
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self(dir)
    }

    fn path(&self) -> PathBuf {
        self.0.clone().unwrap_or_else(std::env::temp_dir)
    }

    fn error(&self, e: std::io::Error) -> FerroError {
        let path = self.path();
        FerroError::Io {
            path: path.clone(),
            source: std::io::Error::new(
                e.kind(),
                format!("cannot write a spill file ({e}); set ferrospark.spill.dir to a writable directory with free space"),
            ),
        }
    }

    /// Starts a new spill file for batches of `schema`.
    pub fn create(&self, schema: &SchemaRef) -> Result<SpillWriter> {
        let file = tempfile::tempfile_in(self.path()).map_err(|e| self.error(e))?;
        let reopen = file.try_clone().map_err(|e| self.error(e))?;
        let writer = StreamWriter::try_new(BufWriter::with_capacity(1 << 20, file), schema)?;
        Ok(SpillWriter {
            writer,
            reopen,
            dir: self.clone(),
            rows: 0,
            batches: 0,
        })
    }
}

/// A spill file being written.
pub struct SpillWriter {
    writer: StreamWriter<BufWriter<File>>,
    reopen: File,
    dir: SpillDir,
    rows: usize,
    batches: usize,
}

impl SpillWriter {
    /// Appends a batch.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.rows += batch.num_rows();
        self.batches += 1;
        self.writer.write(batch).map_err(|e| match e {
            arrow_schema::ArrowError::IoError(m, err) => {
                self.dir.error(std::io::Error::new(err.kind(), m))
            }
            other => FerroError::from(other),
        })
    }

    /// Closes the file for reading.
    pub fn finish(mut self) -> Result<SpillFile> {
        self.writer.finish()?;
        let inner = self.writer.into_inner()?;
        drop(inner);
        let bytes = self
            .reopen
            .metadata()
            .map(|m| m.len())
            .map_err(|e| self.dir.error(e))?;
        Ok(SpillFile {
            file: self.reopen,
            rows: self.rows,
            bytes,
        })
    }
}

/// A finished spill file.
pub struct SpillFile {
    file: File,
    rows: usize,
    bytes: u64,
}

impl SpillFile {
    /// Rows written.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Size on disk.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Reads the batches back, in order.
    pub fn read(&self) -> Result<SpillReader> {
        let mut file = self.file.try_clone().map_err(spill_read_error)?;
        file.seek(SeekFrom::Start(0)).map_err(spill_read_error)?;
        let reader = StreamReader::try_new(BufReader::with_capacity(1 << 20, file), None)?;
        Ok(SpillReader(reader))
    }
}

fn spill_read_error(e: std::io::Error) -> FerroError {
    FerroError::io(Path::new("<spill file>"), e)
}

/// The batches of a spill file.
pub struct SpillReader(StreamReader<BufReader<File>>);

impl Iterator for SpillReader {
    type Item = Result<RecordBatch>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|r| r.map_err(FerroError::from))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    #[test]
    fn batches_come_back_in_order() -> Result<()> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let mut w = SpillDir::default().create(&schema)?;
        for i in 0..3i64 {
            let b = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(vec![Some(i), None])),
                    Arc::new(StringArray::from(vec![Some("é"), Some("x")])),
                ],
            )?;
            w.write(&b)?;
        }
        let f = w.finish()?;
        assert_eq!(f.rows(), 6);
        assert!(f.bytes() > 0);
        let back: Vec<RecordBatch> = f.read()?.collect::<Result<_>>()?;
        assert_eq!(back.len(), 3);
        assert_eq!(
            back[2].column(0).as_ref(),
            &Int64Array::from(vec![Some(2), None])
        );
        // a second read starts again from the beginning
        assert_eq!(f.read()?.count(), 3);
        Ok(())
    }
}
