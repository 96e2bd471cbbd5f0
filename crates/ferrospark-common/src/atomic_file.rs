//! Files a crash leaves whole or absent: written under a temporary name, synced, renamed into
//! place, their directory synced.

use std::io::Write as _;
use std::path::Path;

use crate::{FerroError, Result};

/// Writes `bytes` to `path` so that a reader (or a process started after a crash) finds the
/// whole file or none: a hidden temporary file beside it, synced, then renamed over it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = std::fs::File::create(&tmp).map_err(|e| FerroError::io(&tmp, e))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| FerroError::io(&tmp, e))?;
    rename_into_place(&tmp, path)
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
