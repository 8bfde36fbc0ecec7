//! The file-system steps the tool's `cp`, `rm` and `pack` share: where a copy goes, whether
//! two paths are one file, renaming and syncing, removing the tiles a replaced master leaves,
//! and how such a command fails (`FileError`).

use crate::layout::tile_dir;
use crate::status::Error;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why a command that writes or removes files did not do its work, of three kinds the tool
/// tells apart by its exit status.
#[derive(Debug)]
pub enum FileError {
    /// The input could not be described (missing, not HDF5, ...): the library's own error,
    /// classed by its status as every command's input is.
    Input(Error),
    /// A refusal an option would lift, or a destination that cannot be used: nothing was done.
    Refused(String),
    /// The work itself failed (a read, a write, a verification): what failed and why.
    Failed(String),
}

impl From<Error> for FileError {
    fn from(e: Error) -> FileError {
        FileError::Input(e)
    }
}

impl FileError {
    /// An operating-system error while doing `what` (which names the path).
    pub(crate) fn io(what: impl std::fmt::Display, e: &std::io::Error) -> FileError {
        FileError::Failed(format!("{what}: {e}"))
    }
}

pub(crate) type FileResult<T> = std::result::Result<T, FileError>;

/// Where SRC goes when given DST: into DST when it is a folder or ends with '/' (a folder
/// to be created, as in `h5tile cp run/out.h5 archive/`), under SRC's name; else DST.
pub fn destination(src: &Path, dst: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    match dst.is_dir() || dst.as_os_str().as_bytes().ends_with(b"/") {
        true => dst.join(src.file_name().unwrap_or_default()),
        false => dst.to_path_buf(),
    }
}

/// The folder `path` is in: its parent, or "." for a bare name.
pub(crate) fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Whether `a` and `b` are one file (both exist, same device and inode).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Makes folder `dir` and those missing above it, outermost first, adding each one made to
/// `made` (so that a copy that fails can remove them again).
pub fn make_folders(dir: &Path, made: &mut Vec<PathBuf>) -> FileResult<()> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        missing.push(d.to_path_buf());
        at = d.parent();
    }
    for d in missing.into_iter().rev() {
        std::fs::create_dir(&d)
            .map_err(|e| FileError::io(format!("cannot create folder '{}'", d.display()), &e))?;
        made.push(d);
    }
    Ok(())
}

/// Renames `from` to `to`, replacing it.
pub(crate) fn rename(from: &Path, to: &Path) -> FileResult<()> {
    std::fs::rename(from, to).map_err(|e| {
        FileError::io(
            format!("cannot rename '{}' to '{}'", from.display(), to.display()),
            &e,
        )
    })
}

/// Flushes a file or a folder's entries to disk.
pub(crate) fn sync(path: &Path) -> FileResult<()> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| FileError::io(format!("cannot sync '{}'", path.display()), &e))
}

/// The size of the file at `path`.
pub(crate) fn size_of(path: &Path) -> FileResult<u64> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| FileError::io(format!("cannot read '{}'", path.display()), &e))
}

/// Removes the tile files `old` of a master replaced at `master` but those in `reused`, then
/// its tile folder if that left it empty; they are nobody's now. Returns those removed; one
/// that cannot be removed stays, as the replacement is in place already.
pub(crate) fn remove_replaced_tiles(
    master: &Path,
    old: &[PathBuf],
    reused: &[&PathBuf],
) -> Vec<PathBuf> {
    let removed = old
        .iter()
        .filter(|o| !reused.contains(o))
        .filter(|o| std::fs::remove_file(o).is_ok())
        .cloned()
        .collect();
    if !old.is_empty() {
        let _ = std::fs::remove_dir(tile_dir(master));
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_goes_into_a_folder_under_its_own_name() {
        let dir = tempfile::tempdir().unwrap();
        let src = Path::new("run/out.h5");
        assert_eq!(destination(src, dir.path()), dir.path().join("out.h5"));
        // A name ending with '/' is a folder to be made.
        assert_eq!(
            destination(src, Path::new("archive/")),
            Path::new("archive/out.h5")
        );
        assert_eq!(
            destination(src, Path::new("archive/b.h5")),
            Path::new("archive/b.h5")
        );
    }

    #[test]
    fn a_bare_name_is_in_the_current_folder() {
        assert_eq!(folder_of(Path::new("out.h5")), Path::new("."));
        assert_eq!(folder_of(Path::new("run/out.h5")), Path::new("run"));
    }
}
