//! The check that a checkpoint's state was encoded as this build encodes rows.
//!
//! State keys and values are `arrow-row` bytes, and in one process a batch's rows go to a
//! state partition by a hash of those bytes. `arrow-row` promises its encoding only within a
//! version: a build on a newer arrow-rs whose encoding changed would find no stored key equal
//! to a new row's and route keys to other partitions, so a query resumed on it would give
//! wrong answers without an error. An operator therefore records, beside its state, a
//! fingerprint of the encoding (a hash of fixed sample rows of the common types, nulls,
//! NaN, -0.0 and unicode among them, in both sort orders), and refuses state whose recorded
//! fingerprint differs from this build's.
//!
//! ```text
//!   <checkpoint>/state/<operator>/_rowformat     "arrow-row <16 hex digits>\n"
//! ```
//! A checkpoint from before the file existed gets one at its next open (its encoding is
//! taken to be this build's, as it was before the check).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::TimestampMicrosecondType;
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array,
    Int64Array, PrimitiveArray, StringArray,
};
use arrow_row::{RowConverter, SortField};
use arrow_schema::SortOptions;
use ferrospark_common::{FerroError, Result};

use crate::partitioned::fnv1a;
use crate::state::state_error;

/// The file an operator's fingerprint is kept in.
fn path_of(checkpoint: &Path, operator_id: u64) -> PathBuf {
    checkpoint
        .join("state")
        .join(operator_id.to_string())
        .join("_rowformat")
}

/// Sample columns of the types state rows commonly hold: each with a NULL, its extremes and
/// the values Spark's semantics single out.
fn samples() -> Result<Vec<ArrayRef>> {
    let long = "ü".repeat(40);
    let decimal = Decimal128Array::from(vec![Some(-12_345), None, Some(0), Some(i128::MAX / 7)])
        .with_precision_and_scale(38, 2)?;
    let times: PrimitiveArray<TimestampMicrosecondType> =
        vec![Some(-1), Some(1_700_000_000_000_000), None, Some(i64::MIN)].into();
    Ok(vec![
        Arc::new(Int64Array::from(vec![
            Some(i64::MIN),
            Some(-1),
            None,
            Some(i64::MAX),
        ])),
        Arc::new(Int32Array::from(vec![
            Some(0),
            None,
            Some(-7),
            Some(i32::MAX),
        ])),
        Arc::new(Float64Array::from(vec![
            Some(f64::NAN),
            Some(-0.0),
            Some(1.5),
            None,
        ])),
        Arc::new(StringArray::from(vec![
            Some(""),
            Some("a"),
            None,
            Some(long.as_str()),
        ])),
        Arc::new(BinaryArray::from(vec![
            Some(&b"\x00\xff"[..]),
            None,
            Some(&b""[..]),
            Some(&[7u8; 33][..]),
        ])),
        Arc::new(BooleanArray::from(vec![
            Some(true),
            None,
            Some(false),
            Some(true),
        ])),
        Arc::new(Date32Array::from(vec![
            Some(-719_162),
            Some(0),
            None,
            Some(19_000),
        ])),
        Arc::new(times.with_timezone("UTC")),
        Arc::new(decimal),
    ])
}

/// This build's fingerprint of the `arrow-row` encoding.
pub(crate) fn fingerprint() -> Result<u64> {
    let columns = samples()?;
    let mut bytes = Vec::new();
    for options in [
        SortOptions::default(),
        SortOptions {
            descending: true,
            nulls_first: false,
        },
    ] {
        let fields = columns
            .iter()
            .map(|c| SortField::new_with_options(c.data_type().clone(), options))
            .collect();
        let rows = RowConverter::new(fields)?.convert_columns(&columns)?;
        for row in rows.iter() {
            bytes.extend_from_slice(&(row.as_ref().len() as u64).to_le_bytes());
            bytes.extend_from_slice(row.as_ref());
        }
    }
    Ok(fnv1a(&bytes))
}

/// The text of a fingerprint's file.
fn text_of(fingerprint: u64) -> String {
    format!("arrow-row {fingerprint:016x}\n")
}

/// Checks that operator `operator_id`'s state under `checkpoint` was encoded as this build
/// encodes rows, recording this build's fingerprint when none is recorded; a different
/// fingerprint is an error naming the file.
pub(crate) fn check_row_format(checkpoint: &Path, operator_id: u64) -> Result<()> {
    let path = path_of(checkpoint, operator_id);
    let ours = fingerprint()?;
    match std::fs::read_to_string(&path) {
        Ok(text) if text == text_of(ours) => Ok(()),
        Ok(text) => Err(state_error(
            &path,
            format!(
                "this state was encoded as `{}`, and this build of ferrospark encodes rows as \
                 `{}` (a different arrow-rs row format): resume the query with the \
                 ferrospark it was written with, or start it again from a new checkpoint",
                text.trim(),
                text_of(ours).trim()
            ),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = path.parent().unwrap_or(checkpoint);
            std::fs::create_dir_all(dir).map_err(|e| FerroError::io(dir, e))?;
            // A query's tasks (in several processes on Spark) may race to write it: each
            // writes the same bytes, through a temporary file of its own.
            ferrospark_common::atomic_file::write_atomic_shared(&path, text_of(ours).as_bytes())
        }
        Err(e) => Err(FerroError::io(&path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_is_recorded_then_checked() {
        let dir = tempfile::tempdir().expect("dir");
        check_row_format(dir.path(), 3).expect("first open records it");
        let path = dir.path().join("state/3/_rowformat");
        let text = std::fs::read_to_string(&path).expect("recorded");
        assert_eq!(text, text_of(fingerprint().expect("fingerprint")));
        check_row_format(dir.path(), 3).expect("the same build reads it");
        // The same every time it is made (no seed, no address in it).
        assert_eq!(
            fingerprint().expect("again"),
            fingerprint().expect("and again")
        );
    }

    #[test]
    fn state_of_another_row_format_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        check_row_format(dir.path(), 0).expect("recorded");
        let path = dir.path().join("state/0/_rowformat");
        std::fs::write(&path, "arrow-row 0123456789abcdef\n").expect("write");
        let err = check_row_format(dir.path(), 0).expect_err("refused");
        let text = err.to_string();
        assert!(text.contains("_rowformat"), "{text}");
        assert!(text.contains("0123456789abcdef"), "{text}");
        assert!(text.contains("new checkpoint"), "{text}");
    }
}
