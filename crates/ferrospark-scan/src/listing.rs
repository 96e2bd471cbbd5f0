//! Expands user paths into data files and hive-style `key=value` partition values, with
//! Spark's partition type inference.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Date32Array, Float64Array, Int32Array, Int64Array, StringArray};
use arrow_schema::{DataType, Field};
use ferrospark_common::{FerroError, Result};

use ferrospark_common::hive_paths::unescape_path_name as unescape;
/// Spark's marker for a NULL partition value.
pub use ferrospark_common::hive_paths::DEFAULT_PARTITION_NAME as HIVE_DEFAULT_PARTITION;

/// One data file and the raw partition values found in its directory path.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionedFile {
    /// The file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Raw values in [`Listing::partition_columns`] order; `None` is NULL.
    pub partition_values: Vec<Option<String>>,
}

/// The files of a scan and its partition columns with their inferred types.
#[derive(Debug, Clone)]
pub struct Listing {
    /// Data files, sorted by path.
    pub files: Vec<PartitionedFile>,
    /// Partition columns in directory order, typed.
    pub partition_fields: Vec<Field>,
}

impl Listing {
    /// The typed partition values of file `i` as one-element arrays.
    pub fn partition_scalars(&self, i: usize) -> Result<Vec<ArrayRef>> {
        let file = &self.files[i];
        self.partition_fields
            .iter()
            .zip(&file.partition_values)
            .map(|(f, v)| typed_value(v.as_deref(), f.data_type()))
            .collect()
    }
}

fn is_hidden(name: &str) -> bool {
    // Spark skips `_SUCCESS`, `_metadata`, `.crc` files and `_temporary` directories.
    name.starts_with('_') || name.starts_with('.')
}

/// A file found while walking: path, size, and `(key, value)` directory partitions.
type Found = (PathBuf, u64, Vec<(String, Option<String>)>);

fn walk(dir: &Path, parts: &mut Vec<(String, Option<String>)>, out: &mut Vec<Found>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| FerroError::io(dir, e))?
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| FerroError::io(dir, e))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_hidden(&name) {
            continue;
        }
        let path = entry.path();
        // The directory entry's own type saves a stat per directory; a link is followed.
        let kind = entry.file_type().map_err(|e| FerroError::io(&path, e))?;
        let is_dir = if kind.is_symlink() {
            std::fs::metadata(&path)
                .map_err(|e| FerroError::io(&path, e))?
                .is_dir()
        } else {
            kind.is_dir()
        };
        if is_dir {
            match name.split_once('=') {
                Some((k, v)) if !k.is_empty() => {
                    let value = (v != HIVE_DEFAULT_PARTITION).then(|| unescape(v));
                    parts.push((unescape(k), value));
                    walk(&path, parts, out)?;
                    parts.pop();
                }
                _ => walk(&path, parts, out)?,
            }
        } else if !name.ends_with(".crc") {
            let len = std::fs::metadata(&path)
                .map_err(|e| FerroError::io(&path, e))?
                .len();
            out.push((path, len, parts.clone()));
        }
    }
    Ok(())
}

/// Lists the data files under `paths` (files or directories).
///
/// A missing path is [`FerroError::PathNotFound`]; directories whose files disagree on the
/// partition columns are a [`FerroError::Schema`] error naming both layouts.
pub fn list_files(paths: &[PathBuf]) -> Result<Listing> {
    if paths.is_empty() {
        return Err(FerroError::Config("no path given to read".into()));
    }
    let mut found: Vec<Found> = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| FerroError::io(p, e))?;
        if meta.is_dir() {
            walk(p, &mut Vec::new(), &mut found)?;
        } else if meta.len() == 0 {
            // Inside a directory an empty file is skipped (as Spark does); named directly it
            // cannot be what the user meant to read.
            return Err(FerroError::parquet(
                p,
                "the file is empty (0 bytes), not a Parquet file",
            ));
        } else {
            found.push((p.clone(), meta.len(), Vec::new()));
        }
    }
    let names: Vec<String> = found
        .first()
        .map(|(_, _, parts)| parts.iter().map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    for (path, _, parts) in &found {
        let these: Vec<&String> = parts.iter().map(|(k, _)| k).collect();
        if these.len() != names.len() || these.iter().zip(&names).any(|(a, b)| *a != b) {
            return Err(FerroError::Schema(format!(
                "conflicting partition directory layouts: {} has partition columns [{}] but other files have [{}]",
                path.display(),
                these.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "),
                names.join(", ")
            )));
        }
    }
    let partition_fields = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let values = found
                .iter()
                .filter_map(|(_, _, parts)| parts[i].1.as_deref());
            Field::new(name, infer_type(values), true)
        })
        .collect();
    let files = found
        .into_iter()
        .map(|(path, size, parts)| PartitionedFile {
            path,
            size,
            partition_values: parts.into_iter().map(|(_, v)| v).collect(),
        })
        .collect();
    Ok(Listing {
        files,
        partition_fields,
    })
}

/// One directory of a catalog table's partition and the raw values of its partition columns.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PartitionDir {
    /// The directory.
    pub path: PathBuf,
    /// Raw values in [`PartitionDirs::fields`] order; `None` is NULL.
    pub values: Vec<Option<String>>,
}

/// The partitions a catalog table reads (Spark's `CatalogFileIndex`): the metastore says
/// which directories hold the table and what their values are, so nothing is walked or
/// inferred beyond them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PartitionDirs {
    /// The partition columns with the catalog's types.
    pub fields: Vec<Field>,
    /// The directories, in the metastore's partition order.
    pub dirs: Vec<PartitionDir>,
}

/// Lists the data files of `parts`' directories, each file given its directory's values.
///
/// A directory that does not exist reads as empty (Spark lists a registered partition whose
/// directory is gone as no files). Many directories are walked on `threads` threads.
pub fn list_partition_dirs(parts: &PartitionDirs, threads: usize) -> Result<Listing> {
    let walk_one = |d: &PartitionDir| -> Result<Vec<PartitionedFile>> {
        let mut found = Vec::new();
        match std::fs::metadata(&d.path) {
            Ok(m) if m.is_dir() => walk(&d.path, &mut Vec::new(), &mut found)?,
            Ok(m) => found.push((d.path.clone(), m.len(), Vec::new())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(FerroError::io(&d.path, e)),
        }
        Ok(found
            .into_iter()
            .map(|(path, size, _)| PartitionedFile {
                path,
                size,
                partition_values: d.values.clone(),
            })
            .collect())
    };
    let walk_all = |dirs: &[PartitionDir]| -> Result<Vec<PartitionedFile>> {
        let mut out = Vec::new();
        for d in dirs {
            out.extend(walk_one(d)?);
        }
        Ok(out)
    };
    // A thread pays for itself once there are a few dozen directories to read.
    let files = if parts.dirs.len() < 64 || threads <= 1 {
        walk_all(&parts.dirs)?
    } else {
        let chunk = parts.dirs.len().div_ceil(threads);
        ferrospark_common::workers::try_run_each(
            parts.dirs.chunks(chunk).collect(),
            "a partition listing thread",
            walk_all,
        )?
        .into_iter()
        .flatten()
        .collect()
    };
    Ok(Listing {
        files,
        partition_fields: parts.fields.clone(),
    })
}

/// Days since 1970-01-01 for a strict `yyyy-mm-dd` string (Spark's partition DATE form).
fn parse_date(v: &str) -> Option<i32> {
    if v.len() != 10 {
        return None;
    }
    let d = chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d").ok()?;
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?;
    i32::try_from((d - epoch).num_days()).ok()
}

/// Spark's partition type inference: INT, BIGINT, DOUBLE, DATE, else STRING.
fn infer_type<'a>(values: impl Iterator<Item = &'a str> + Clone) -> DataType {
    let all = |f: &dyn Fn(&str) -> bool| values.clone().all(f);
    if values.clone().next().is_none() {
        return DataType::Utf8;
    }
    if all(&|v| v.parse::<i32>().is_ok()) {
        DataType::Int32
    } else if all(&|v| v.parse::<i64>().is_ok()) {
        DataType::Int64
    } else if all(&|v| {
        v.parse::<f64>().is_ok()
            && !v.eq_ignore_ascii_case("nan")
            && !v.to_ascii_lowercase().contains("inf")
    }) {
        DataType::Float64
    } else if all(&|v| parse_date(v).is_some()) {
        DataType::Date32
    } else {
        DataType::Utf8
    }
}

fn typed_value(v: Option<&str>, dt: &DataType) -> Result<ArrayRef> {
    let bad = || FerroError::Internal(format!("partition value {v:?} does not parse as {dt}"));
    Ok(match dt {
        DataType::Int32 => Arc::new(Int32Array::from(vec![v
            .map(|s| s.parse().map_err(|_| bad()))
            .transpose()?])),
        DataType::Int64 => Arc::new(Int64Array::from(vec![v
            .map(|s| s.parse().map_err(|_| bad()))
            .transpose()?])),
        DataType::Float64 => Arc::new(Float64Array::from(vec![v
            .map(|s| s.parse().map_err(|_| bad()))
            .transpose()?])),
        DataType::Date32 => Arc::new(Date32Array::from(vec![v
            .map(|s| parse_date(s).ok_or_else(bad))
            .transpose()?])),
        DataType::Utf8 => Arc::new(StringArray::from(vec![v])),
        // A catalog's partition column of another type: its text cast as Spark casts a
        // partition value.
        other => {
            let text: ArrayRef = Arc::new(StringArray::from(vec![v]));
            let out = arrow_cast::cast(&text, other)?;
            if v.is_some() && out.is_null(0) {
                return Err(bad());
            }
            out
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_convert_to_epoch_days() {
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_date("1995-01-01"), Some(9131));
        assert_eq!(parse_date("2000-02-29"), Some(11016));
        assert_eq!(parse_date("2001-02-29"), None);
        assert_eq!(parse_date("1969-12-31"), Some(-1));
        assert_eq!(parse_date("2020-13-01"), None);
    }

    #[test]
    fn partition_types_are_inferred_like_spark() {
        assert_eq!(infer_type(["1", "20"].into_iter()), DataType::Int32);
        assert_eq!(infer_type(["1", "5000000000"].into_iter()), DataType::Int64);
        assert_eq!(infer_type(["1", "2.5"].into_iter()), DataType::Float64);
        assert_eq!(infer_type(["2020-01-01"].into_iter()), DataType::Date32);
        assert_eq!(infer_type(["a", "1"].into_iter()), DataType::Utf8);
    }

    #[test]
    fn escaped_values_are_decoded() {
        assert_eq!(unescape("a%3Db"), "a=b");
        assert_eq!(unescape("100%"), "100%");
        assert_eq!(unescape("x%2"), "x%2");
    }

    #[test]
    fn hive_directories_become_partitions() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (k, v) in [("1", "a"), ("2", "b"), ("2", HIVE_DEFAULT_PARTITION)] {
            let d = dir
                .path()
                .join(format!("year={k}"))
                .join(format!("tag={v}"));
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::write(d.join("part-0.parquet"), b"x").expect("write");
            std::fs::write(d.join("_SUCCESS"), b"").expect("write");
        }
        let l = list_files(&[dir.path().to_path_buf()]).expect("lists");
        assert_eq!(l.files.len(), 3);
        assert_eq!(l.partition_fields[0].data_type(), &DataType::Int32);
        assert_eq!(l.partition_fields[1].data_type(), &DataType::Utf8);
        assert_eq!(
            l.files[2].partition_values,
            vec![Some("2".into()), Some("b".into())]
        );
        assert_eq!(l.files[1].partition_values[1], None);
    }

    #[test]
    fn missing_paths_are_reported() {
        match list_files(&[PathBuf::from("/definitely/not/here")]) {
            Err(FerroError::PathNotFound(p)) => assert!(p.ends_with("here")),
            other => panic!("{other:?}"),
        }
    }
}
