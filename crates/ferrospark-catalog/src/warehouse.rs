//! The warehouse's files: where databases and managed tables live, locations users give, and
//! the staging directory of a write (Spark's commit protocol).
//!
//! ```text
//!  table location/_temporary/<job>/p=1/part-00000-<job>.c000.snappy.parquet   write (hidden)
//!        │ commit: journaled, each file renamed into place, the metastore changed in
//!        ▼         one transaction, then overwritten files deleted
//!  table location/p=1/part-00000-<job>.c000.snappy.parquet                    visible
//! ```
//! A writer killed before its commit leaves only the hidden staging directory, which readers
//! skip (names starting with `_` or `.`); one killed during its commit is finished or undone
//! by the next reader or writer of the table ([`crate::commit`]).

use std::path::{Component, Path, PathBuf};

use ferrospark_common::{FerroError, Result};

use crate::commit::MovedWrite;

/// The directory staging files of writes in progress, inside a table's location.
pub const STAGING_DIR: &str = "_temporary";

/// The warehouse root (`spark.sql.warehouse.dir`).
#[derive(Debug, Clone)]
pub struct Warehouse {
    root: PathBuf,
}

/// A location as the user wrote it (`/x`, `file:/x`, `file:///x`, `rel/x`) as an absolute,
/// lexically normal path.
pub fn resolve_location(text: &str) -> Result<PathBuf> {
    let t = text.trim();
    let path = if let Some(rest) = t.strip_prefix("file://") {
        rest.to_string()
    } else if let Some(rest) = t.strip_prefix("file:") {
        rest.to_string()
    } else if t.contains("://") {
        return Err(FerroError::Unsupported(format!(
            "location '{t}': only local paths (file:) are supported"
        )));
    } else {
        t.to_string()
    };
    if path.is_empty() {
        return Err(FerroError::Analysis(
            "[INVALID_EMPTY_LOCATION] The location name cannot be empty string, but `` was given."
                .into(),
        ));
    }
    let p = PathBuf::from(&path);
    let abs = if p.is_absolute() {
        p
    } else {
        std::env::current_dir()
            .map_err(|e| FerroError::io(Path::new("."), e))?
            .join(p)
    };
    Ok(normalize(&abs))
}

/// Removes `.` and resolves `..` without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Spark's display form of a local location: `file:/abs/path`.
pub fn location_uri(path: &str) -> String {
    format!("file:{path}")
}

impl Warehouse {
    /// The warehouse at `dir` (resolved against the current directory).
    pub fn new(dir: &str) -> Result<Self> {
        Ok(Self {
            root: resolve_location(dir)?,
        })
    }

    /// The warehouse at an absolute `root`, as given.
    pub fn at(root: PathBuf) -> Self {
        Self { root }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where database `name`'s tables go by default (`default` is the root itself).
    pub fn database_location(&self, name: &str) -> PathBuf {
        if name == "default" {
            self.root.clone()
        } else {
            self.root.join(format!("{name}.db"))
        }
    }
}

/// Where managed table `table` of a database located at `db_location` lives. The name was
/// validated (word characters only), and the directory must not be a link leading elsewhere.
pub fn managed_table_location(db_location: &str, table: &str) -> Result<PathBuf> {
    crate::names::validate(table, "table")?;
    let path = Path::new(db_location).join(table);
    refuse_link(&path)?;
    Ok(path)
}

fn refuse_link(path: &Path) -> Result<()> {
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if m.file_type().is_symlink() {
            return Err(FerroError::Analysis(format!(
                "managed table location {} is a symbolic link: a managed table's files must stay inside its database's directory; remove the link or use an EXTERNAL table with LOCATION",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Removes a managed table's directory: only `db_location/<table>`, never a link, never a
/// path outside the database's directory.
pub fn remove_managed(location: &str, db_location: &str, table: &str) -> Result<()> {
    let expected = normalize(&Path::new(db_location).join(table));
    let path = normalize(Path::new(location));
    if path != expected {
        // A managed table moved by hand (or a metastore edited by hand): leave its files.
        return Ok(());
    }
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::remove_file(&path).map_err(|e| FerroError::io(&path, e))
        }
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path).map_err(|e| FerroError::io(&path, e)),
        Ok(_) => Ok(()),
        Err(_) => Ok(()),
    }
}

/// A random 128-bit id in UUID form, unique per write job (file names, staging directory).
pub fn job_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut words = [0u64; 2];
    for w in &mut words {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        h.write_u32(std::process::id());
        *w = h.finish();
    }
    let b: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

/// A write in progress into one table location.
#[derive(Debug)]
pub struct StagedWrite {
    /// The table's directory.
    pub location: PathBuf,
    /// This job's staging directory.
    pub staging: PathBuf,
    /// The job's id.
    pub job: String,
}

impl StagedWrite {
    /// Starts a write into `location`, removing staging directories of writers that died.
    pub fn begin(location: &Path) -> Result<Self> {
        let job = job_id();
        let root = location.join(STAGING_DIR);
        let staging = root.join(&job);
        std::fs::create_dir_all(&staging).map_err(|e| FerroError::io(&staging, e))?;
        crate::commit::mark_writer(&staging)?;
        Ok(Self {
            location: location.to_path_buf(),
            staging,
            job,
        })
    }

    /// A data file's name for task `task` (`part-00000-<job>.c000.snappy.parquet`, with
    /// `-c000` for an unpartitioned table as Spark names them).
    pub fn file_name(&self, task: usize, partitioned: bool, ext: &str) -> String {
        let sep = if partitioned { '.' } else { '-' };
        format!("part-{task:05}-{}{sep}c000{ext}", self.job)
    }

    /// The directories the staged files will go to, relative to the location.
    pub fn dirs(&self) -> Result<Vec<String>> {
        crate::commit::staged_dirs(&self.staging)
    }

    /// Moves the staged files into place (journaled, see [`crate::commit`]); `replaced`
    /// (directories relative to the location, `""` for all of it) lose their files once
    /// [`MovedWrite::finish`] runs after the metastore transaction, so a reader never finds
    /// the table empty and a writer that dies before that transaction is undone whole.
    /// `creates_table`: the write makes its table (`CREATE TABLE ... AS SELECT`), whose
    /// creation is then its commit point.
    pub fn commit(self, replaced: &[String], creates_table: bool) -> Result<MovedWrite> {
        let mut old = Vec::new();
        let mut replaced: Vec<&String> = replaced.iter().collect();
        replaced.sort();
        replaced.dedup();
        for dir in replaced {
            let d = if dir.is_empty() {
                self.location.clone()
            } else {
                self.location.join(dir)
            };
            collect_visible(&d, &mut old)?;
        }
        old.sort();
        old.dedup();
        MovedWrite::move_in(&self.location, &self.staging, &self.job, old, creates_table)
    }

    /// Gives up: the staged files are removed, the table untouched.
    pub fn abort(self) {
        let _ = std::fs::remove_dir_all(&self.staging);
        let _ = std::fs::remove_dir(self.location.join(STAGING_DIR));
    }
}

/// Data files under `dir` a reader sees (hidden names skipped, links not followed).
fn collect_visible(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries {
        let e = e.map_err(|e| FerroError::io(dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('_') || name.starts_with('.') {
            continue;
        }
        let p = e.path();
        let ft = e.file_type().map_err(|e| FerroError::io(&p, e))?;
        if ft.is_dir() {
            collect_visible(&p, out)?;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_resolve_to_absolute_normal_paths() {
        assert_eq!(
            resolve_location("file:/a/b").expect("ok"),
            PathBuf::from("/a/b")
        );
        assert_eq!(
            resolve_location("file:///a/./b/../c").expect("ok"),
            PathBuf::from("/a/c")
        );
        assert!(resolve_location("s3://bucket/x").is_err());
        assert!(resolve_location("rel").expect("ok").is_absolute());
    }

    #[test]
    fn a_commit_replaces_old_files_and_an_abort_leaves_the_table_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = dir.path().join("t");
        std::fs::create_dir_all(t.join("p=1")).expect("mkdir");
        std::fs::write(t.join("p=1/old.parquet"), b"old").expect("write");
        std::fs::write(t.join("p=2.keep"), b"x").expect("write");
        let w = StagedWrite::begin(&t).expect("begin");
        std::fs::create_dir_all(w.staging.join("p=1")).expect("mkdir");
        std::fs::write(w.staging.join("p=1/new.parquet"), b"new").expect("write");
        let moved = w.commit(&["p=1".into()], false).expect("commit");
        assert_eq!(moved.dirs(), ["p=1"]);
        assert!(
            t.join("p=1/old.parquet").exists(),
            "kept until the metastore has the write"
        );
        moved.finish().expect("finish");
        assert!(!t.join("p=1/old.parquet").exists());
        assert_eq!(
            std::fs::read(t.join("p=1/new.parquet")).expect("read"),
            b"new"
        );
        assert!(
            t.join("p=2.keep").exists(),
            "files outside the replaced part stay"
        );
        assert!(!t.join(STAGING_DIR).exists());
        let w = StagedWrite::begin(&t).expect("begin");
        std::fs::write(w.staging.join("x.parquet"), b"x").expect("write");
        w.abort();
        assert!(!t.join("x.parquet").exists() && !t.join(STAGING_DIR).exists());
    }

    #[test]
    fn only_a_managed_tables_own_directory_is_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("db");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(db.join("t")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(outside.join("keep"), b"x").expect("write");
        let db_s = db.to_string_lossy().into_owned();
        // A location that is not `db/t` (a hand-edited metastore) is left alone.
        remove_managed(&outside.to_string_lossy(), &db_s, "t").expect("ok");
        assert!(outside.join("keep").exists());
        remove_managed(&db.join("t").to_string_lossy(), &db_s, "t").expect("ok");
        assert!(!db.join("t").exists());
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&outside, db.join("l")).expect("link");
            assert!(managed_table_location(&db_s, "l").is_err());
            remove_managed(&db.join("l").to_string_lossy(), &db_s, "l").expect("ok");
            assert!(
                outside.join("keep").exists(),
                "a link is removed, not what it points at"
            );
        }
        assert!(managed_table_location(&db_s, "..").is_err());
    }
}
