//! Files a crash leaves whole or absent: written under a temporary name, synced, renamed into
//! place, their directory synced.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::{FerroError, Result};

/// Writes `bytes` to `path` so that a reader (or a process started after a crash) finds the
/// whole file or none: a hidden temporary file beside it, synced, then renamed over it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_through(&temporary(path, ""), path, bytes)
}

/// [`write_atomic`] for a file several processes may write at once (each the same bytes):
/// each writes a temporary file of its own (named by its process and thread), so none
/// renames a file another is still writing.
pub fn write_atomic_shared(path: &Path, bytes: &[u8]) -> Result<()> {
    let thread = format!("{:?}", std::thread::current().id());
    let thread: String = thread.chars().filter(char::is_ascii_digit).collect();
    let tag = format!(".{}-{thread}", std::process::id());
    write_through(&temporary(path, &tag), path, bytes)
}

/// The hidden temporary file `path` is written through: `.<name><tag>.tmp` beside it.
fn temporary(path: &Path, tag: &str) -> PathBuf {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir.join(format!(".{name}{tag}.tmp"))
}

/// Writes `bytes` to `tmp`, synced, and renames it over `path`; a `tmp` that cannot be
/// written whole is removed.
fn write_through(tmp: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    let written = std::fs::File::create(tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_all()))
        .map_err(|e| FerroError::io(tmp, e));
    if let Err(e) = written {
        let _ = std::fs::remove_file(tmp);
        return Err(e);
    }
    rename_into_place(tmp, path)
}

/// Renames the finished (synced) file `tmp` over `path`, durably: the directory is synced,
/// so the rename itself survives a crash.
pub fn rename_into_place(tmp: &Path, path: &Path) -> Result<()> {
    std::fs::rename(tmp, path).map_err(|e| FerroError::io(path, e))?;
    if let Ok(d) = std::fs::File::open(path.parent().unwrap_or_else(|| Path::new("."))) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writers_of_one_shared_file_never_take_each_others_temporary_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("shared");
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..50 {
                        write_atomic_shared(&path, b"the same bytes\n").expect("written");
                        let got = std::fs::read(&path).expect("read");
                        assert_eq!(got, b"the same bytes\n");
                    }
                });
            }
        });
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from("shared")],
            "no temporary left"
        );
    }

    #[test]
    fn a_file_is_replaced_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        write_atomic(&p, b"one").expect("write");
        write_atomic(&p, b"two").expect("write");
        assert_eq!(std::fs::read(&p).expect("read"), b"two");
        assert_eq!(
            std::fs::read_dir(dir.path()).expect("dir").count(),
            1,
            "no temporary left"
        );
    }
}
