//! A write's commit, made safe against the writer dying half-way: a journal of what the
//! commit moves and removes is kept in the staging directory, and the metastore's record of
//! the write decides, for a writer that died, whether its commit is finished or undone.
//!
//! ```text
//!   staged ─ journal written (moves, files to drop) ─▶ files moved in
//!          ─▶ metastore transaction (records the job)      ◀── the commit point
//!          ─▶ overwritten files dropped, staging removed
//!
//!   writer died, journal found:   job recorded  ─▶ roll forward (move the rest, drop)
//!                                 not recorded  ─▶ roll back (remove what was moved in)
//! ```
//! Files are dropped only after the metastore has the write, so rolling back never needs
//! them back: the table is as it was before the write, or as the write left it.

use std::path::{Path, PathBuf};

use ferrospark_common::{FerroError, Result};

use crate::warehouse::STAGING_DIR;

/// The journal's name inside a staging directory.
const JOURNAL: &str = "_JOURNAL";
/// The file naming the process that stages a write.
const WRITER: &str = "_WRITER";

/// What a commit moves and removes.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitJournal {
    /// The write's job id (the staging directory's name).
    pub job: String,
    /// Files moved from the staging directory, relative to it and to the table location.
    pub moved: Vec<PathBuf>,
    /// Files the write replaces, dropped once the metastore has the write.
    pub dropped: Vec<PathBuf>,
    /// Whether the write makes its table (`CREATE TABLE ... AS SELECT`): the table's
    /// existence, not a recorded job, is then its commit point.
    pub creates_table: bool,
}

impl CommitJournal {
    fn to_json(&self) -> String {
        let paths = |v: &[PathBuf]| -> Vec<String> {
            v.iter().map(|p| p.to_string_lossy().into_owned()).collect()
        };
        serde_json::json!({
            "job": self.job,
            "moved": paths(&self.moved),
            "dropped": paths(&self.dropped),
            "creates_table": self.creates_table,
        })
        .to_string()
    }

    fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| FerroError::io(path, e))?;
        let bad = || {
            FerroError::Metastore(format!(
                "commit journal {} is not one ferrospark wrote: remove its staging directory by hand",
                path.display()
            ))
        };
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|_| bad())?;
        let paths = |k: &str| -> Result<Vec<PathBuf>> {
            v[k].as_array()
                .ok_or_else(bad)?
                .iter()
                .map(|p| p.as_str().map(PathBuf::from).ok_or_else(bad))
                .collect()
        };
        Ok(Self {
            job: v["job"].as_str().ok_or_else(bad)?.to_string(),
            moved: paths("moved")?,
            dropped: paths("dropped")?,
            creates_table: v["creates_table"].as_bool().ok_or_else(bad)?,
        })
    }

    /// Writes the journal into `staging`, whole or not at all.
    fn write(&self, staging: &Path) -> Result<()> {
        ferrospark_common::atomic_file::write_atomic(
            &staging.join(JOURNAL),
            self.to_json().as_bytes(),
        )
    }
}

/// Records in `staging` which process stages the write (so a reader can tell a dead
/// writer's staging directory from a live one's).
pub(crate) fn mark_writer(staging: &Path) -> Result<()> {
    let p = staging.join(WRITER);
    std::fs::write(&p, std::process::id().to_string()).map_err(|e| FerroError::io(&p, e))
}

/// Whether the writer of `staging` is gone: its process no longer runs (Linux's `/proc`
/// says so; elsewhere a writer is taken to be alive, and nothing is recovered).
fn writer_is_dead(staging: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(staging.join(WRITER)) else {
        return false;
    };
    let Ok(pid) = text.trim().parse::<u32>() else {
        return false;
    };
    pid != std::process::id()
        && Path::new("/proc/self").exists()
        && !Path::new(&format!("/proc/{pid}")).exists()
}

/// A write whose files are moved in, waiting for its metastore transaction.
#[derive(Debug)]
pub struct MovedWrite {
    location: PathBuf,
    staging: PathBuf,
    journal: CommitJournal,
}

impl MovedWrite {
    /// Journals then moves the staged files of `staging` into `location`; `dropped` are
    /// the files they replace. A failure moving them undoes the moves.
    pub(crate) fn move_in(
        location: &Path,
        staging: &Path,
        job: &str,
        dropped: Vec<PathBuf>,
        creates_table: bool,
    ) -> Result<Self> {
        let mut moved = Vec::new();
        collect_staged(staging, staging, &mut moved)?;
        let journal = CommitJournal {
            job: job.to_string(),
            moved,
            dropped,
            creates_table,
        };
        journal.write(staging)?;
        let w = Self {
            location: location.to_path_buf(),
            staging: staging.to_path_buf(),
            journal,
        };
        if let Err(e) = w.move_remaining() {
            w.roll_back();
            return Err(e);
        }
        Ok(w)
    }

    /// The job id the metastore transaction records.
    pub fn job(&self) -> &str {
        &self.journal.job
    }

    /// The directories written, relative to the location (`""` for the location itself).
    pub fn dirs(&self) -> Vec<String> {
        dirs_of(&self.journal.moved)
    }

    fn move_remaining(&self) -> Result<()> {
        for rel in &self.journal.moved {
            let from = self.staging.join(rel);
            if !from.exists() {
                continue;
            }
            let to = self.location.join(rel);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|e| FerroError::io(parent, e))?;
            }
            std::fs::rename(&from, &to).map_err(|e| FerroError::io(&to, e))?;
        }
        Ok(())
    }

    /// After the metastore transaction: the replaced files dropped, the staging directory
    /// removed, `_SUCCESS` written.
    pub fn finish(self) -> Result<()> {
        self.move_remaining()?;
        for f in &self.journal.dropped {
            match std::fs::remove_file(f) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(FerroError::io(f, e))
                }
                _ => {}
            }
        }
        // A directory the dropped files leave empty goes (an overwritten partition whose
        // new rows went elsewhere); other empty directories (a partition added empty) stay.
        for f in &self.journal.dropped {
            let mut dir = f.parent();
            while let Some(d) = dir.filter(|d| d.starts_with(&self.location) && *d != self.location)
            {
                if std::fs::remove_dir(d).is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
        self.remove_staging();
        std::fs::write(self.location.join("_SUCCESS"), b"")
            .map_err(|e| FerroError::io(&self.location, e))
    }

    /// Undoes the moves (the metastore transaction did not happen): the files moved in are
    /// removed, with directories the write made and left empty; replaced files were never
    /// touched.
    pub fn roll_back(self) {
        for rel in &self.journal.moved {
            let _ = std::fs::remove_file(self.location.join(rel));
            let mut dir = rel.parent();
            while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
                // Only an empty directory goes: a partition that held files before stays.
                if std::fs::remove_dir(self.location.join(d)).is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
        self.remove_staging();
    }

    fn remove_staging(&self) {
        let _ = std::fs::remove_dir_all(&self.staging);
        let _ = std::fs::remove_dir(self.location.join(STAGING_DIR));
    }
}

/// The directories (relative, `""` for the root) holding `files`, each once, in order.
fn dirs_of(files: &[PathBuf]) -> Vec<String> {
    let mut dirs: Vec<String> = Vec::new();
    for rel in files {
        let d = rel
            .parent()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

/// The directories of `staging` holding staged data files (the commit's own `_WRITER` and
/// `_JOURNAL` left out), relative to it.
pub(crate) fn staged_dirs(staging: &Path) -> Result<Vec<String>> {
    let mut files = Vec::new();
    collect_staged(staging, staging, &mut files)?;
    Ok(dirs_of(&files))
}

fn collect_staged(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).map_err(|e| FerroError::io(dir, e))? {
        let e = e.map_err(|e| FerroError::io(dir, e))?;
        let p = e.path();
        if e.file_type().map_err(|e| FerroError::io(&p, e))?.is_dir() {
            collect_staged(root, &p, out)?;
        } else if let Ok(rel) = p.strip_prefix(root) {
            let name = e.file_name().to_string_lossy().into_owned();
            // The commit's own files, and hidden ones (a journal being written), are no data.
            let own = name == WRITER || name.starts_with(JOURNAL) || name.starts_with('.');
            if dir != root || !own {
                out.push(rel.to_path_buf());
            }
        }
    }
    out.sort();
    Ok(())
}

/// A write into `location` whose writer died.
#[derive(Debug)]
pub enum InterruptedWrite {
    /// It died while staging: nothing of it is visible; its staging directory remains.
    Staging(PathBuf),
    /// It died during its commit.
    Committing(MovedWrite),
}

impl InterruptedWrite {
    /// The job id.
    pub fn job(&self) -> String {
        match self {
            InterruptedWrite::Staging(p) => p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            InterruptedWrite::Committing(w) => w.journal.job.clone(),
        }
    }

    /// Whether it was making its table.
    pub fn creates_table(&self) -> bool {
        matches!(self, InterruptedWrite::Committing(w) if w.journal.creates_table)
    }

    /// Finishes it when `committed` (the metastore has its job), else undoes it.
    pub fn recover(self, committed: bool) -> Result<()> {
        match self {
            InterruptedWrite::Staging(p) => {
                let _ = std::fs::remove_dir_all(&p);
                Ok(())
            }
            InterruptedWrite::Committing(w) if committed => w.finish(),
            InterruptedWrite::Committing(w) => {
                w.roll_back();
                Ok(())
            }
        }
    }
}

/// The writes into `location` whose writers died, oldest job first.
pub fn interrupted_writes(location: &Path) -> Result<Vec<InterruptedWrite>> {
    let root = location.join(STAGING_DIR);
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let staging = e.path();
        if !staging.is_dir() || !writer_is_dead(&staging) {
            continue;
        }
        let journal = staging.join(JOURNAL);
        out.push(if journal.exists() {
            InterruptedWrite::Committing(MovedWrite {
                location: location.to_path_buf(),
                journal: CommitJournal::read(&journal)?,
                staging,
            })
        } else {
            InterruptedWrite::Staging(staging)
        });
    }
    out.sort_by_key(|w| w.job());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dead(staging: &Path) {
        // No process has this id (Linux's pid_max is below it).
        std::fs::write(staging.join(WRITER), "4194305").expect("write");
    }

    #[test]
    fn a_journal_round_trips() {
        let dir = tempfile::tempdir().expect("tempdir");
        let j = CommitJournal {
            job: "j1".into(),
            moved: vec!["p=1/a.parquet".into(), "b.parquet".into()],
            dropped: vec!["/t/old.parquet".into()],
            creates_table: true,
        };
        j.write(dir.path()).expect("write");
        assert_eq!(
            CommitJournal::read(&dir.path().join(JOURNAL)).expect("read"),
            j
        );
        std::fs::write(dir.path().join(JOURNAL), "{\"job\": 3").expect("write");
        assert!(CommitJournal::read(&dir.path().join(JOURNAL)).is_err());
    }

    fn table_with_half_moved_write(t: &Path) -> PathBuf {
        std::fs::create_dir_all(t.join("p=1")).expect("mkdir");
        std::fs::write(t.join("p=1/old.parquet"), b"old").expect("write");
        let staging = t.join(STAGING_DIR).join("job-1");
        std::fs::create_dir_all(staging.join("p=1")).expect("mkdir");
        std::fs::create_dir_all(staging.join("p=2")).expect("mkdir");
        std::fs::write(staging.join("p=1/new.parquet"), b"new").expect("write");
        std::fs::write(staging.join("p=2/new.parquet"), b"new").expect("write");
        dead(&staging);
        let journal = CommitJournal {
            job: "job-1".into(),
            moved: vec!["p=1/new.parquet".into(), "p=2/new.parquet".into()],
            dropped: vec![t.join("p=1/old.parquet")],
            creates_table: false,
        };
        journal.write(&staging).expect("journal");
        // The writer died after moving the first file.
        std::fs::rename(staging.join("p=1/new.parquet"), t.join("p=1/new.parquet")).expect("mv");
        staging
    }

    #[test]
    fn a_write_the_metastore_never_recorded_is_undone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = dir.path().join("t");
        table_with_half_moved_write(&t);
        let found = interrupted_writes(&t).expect("lists");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].job(), "job-1");
        for w in found {
            w.recover(false).expect("recovers");
        }
        assert!(!t.join("p=1/new.parquet").exists());
        assert!(t.join("p=1/old.parquet").exists());
        assert!(!t.join("p=2").exists());
        assert!(!t.join(STAGING_DIR).exists());
    }

    #[test]
    fn a_write_the_metastore_recorded_is_finished() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = dir.path().join("t");
        table_with_half_moved_write(&t);
        for w in interrupted_writes(&t).expect("lists") {
            w.recover(true).expect("recovers");
        }
        assert!(t.join("p=1/new.parquet").exists() && t.join("p=2/new.parquet").exists());
        assert!(!t.join("p=1/old.parquet").exists());
        assert!(!t.join(STAGING_DIR).exists());
    }

    #[test]
    fn a_live_writers_staging_is_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let staging = dir.path().join(STAGING_DIR).join("job-live");
        std::fs::create_dir_all(&staging).expect("mkdir");
        mark_writer(&staging).expect("mark");
        assert!(interrupted_writes(dir.path()).expect("lists").is_empty());
        dead(&staging);
        let found = interrupted_writes(dir.path()).expect("lists");
        assert!(matches!(found.as_slice(), [InterruptedWrite::Staging(_)]));
    }
}
