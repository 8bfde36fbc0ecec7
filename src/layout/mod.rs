//! Where a dataset's bytes live on disk and how a new version replaces the old one.
//!
//! The single-file layout (`single`) is one HDF5 file with a contiguous dataset.
//! The VDS layout (`vds`) keeps, beside the master file `dir/name`, a folder `dir/name.tiles/`
//! holding one file per non-empty tile, named `<dataset>.<generation>.r<rank>.t<k>.h5`.
//! The subfiled layout (`subfiles`) keeps there one file per group of ranks instead,
//! `<dataset>.<generation>.s<first rank>.h5`, holding one contiguous dataset per tile.
//! The master refers to them by paths relative to its own folder, so the pair can be moved.
//! Each write uses a fresh generation: new tiles never overwrite old ones, the new master (or
//! single file) is written under a temporary name and renamed over the old one (the commit point), and only
//! then are the previous generation's tiles deleted. A crash at any moment therefore leaves a
//! readable file, old or new. One commit may write several datasets (a checkpoint): their
//! tile files sit side by side, and in the subfiled layout one subfile per group holds the
//! tiles of all of them. Compressed tiles (`chunks`) are chunked datasets in the same files.
//! With `keep`, the new master starts as a copy of the old file, so it
//! keeps datasets of earlier commits, and only the files no dataset maps any more go.

pub mod blocks;
pub mod checksums;
pub mod chunks;
pub mod extremes;
pub mod in_flight;
pub mod index;
pub mod keep;
pub mod placement;
pub mod runs;
pub mod single;
mod stale;
pub mod subfiles;
pub mod vds;

use crate::status::{
    fail, Error, Result, H5TILE_ERR_EXISTS, H5TILE_ERR_IO, H5TILE_ERR_IS_DIRECTORY,
};
use std::path::{Path, PathBuf};

/// Where the tile writer syncs its files, the commit its masters and folders.
pub use crate::platform::tile_bytes::sync_path;
pub use stale::{referenced_files, remove_own_if_replaced, remove_stale, remove_tile_dir_if_idle};

/// A write's identity: 16 hex digits from the clock and the process id, chosen on rank 0.
pub fn new_generation() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos ^ ((std::process::id() as u64) << 40) ^ 0x9e37_79b9_7f4a_7c15
}

/// The folder beside the master file that holds its tile files: the master's name plus
/// ".tiles", with '%' written "~25" (and '~' "~7E", to keep names distinct), because HDF5 reads
/// '%' in virtual-dataset source names as a pattern, and HDF5 1.14 and 2.x disagree on how
/// many times an escaped "%%" is unescaped.
pub fn tile_dir(master: &Path) -> PathBuf {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let mut name = Vec::new();
    for &b in master.file_name().unwrap_or_default().as_bytes() {
        match b {
            b'%' => name.extend_from_slice(b"~25"),
            b'~' => name.extend_from_slice(b"~7E"),
            _ => name.push(b),
        }
    }
    name.extend_from_slice(b".tiles");
    master.with_file_name(std::ffi::OsString::from_vec(name))
}

/// The dataset path as a file-name component: parts joined by '+', with bytes outside
/// `[A-Za-z0-9_-]` written as `~XX`, so names never collide and hold neither '.' nor the
/// '%' that HDF5 reads as a pattern in virtual-dataset source names.
pub fn dataset_key(dataset: &str) -> String {
    let mut key = String::new();
    for (i, part) in dataset.trim_start_matches('/').split('/').enumerate() {
        if i > 0 {
            key.push('+');
        }
        for b in part.bytes() {
            if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
                key.push(b as char);
            } else {
                key.push_str(&format!("~{b:02X}"));
            }
        }
    }
    key
}

/// Name of the file holding tile `k` of `rank` for `dataset` in generation `generation`.
pub fn tile_file_name(dataset: &str, generation: u64, rank: usize, k: usize) -> String {
    format!("{}.{generation:016x}.r{rank}.t{k}.h5", dataset_key(dataset))
}

/// Name of the subfile written for `dataset` in generation `generation` by the group of ranks
/// whose first rank is `first`.
pub fn subfile_name(dataset: &str, generation: u64, first: usize) -> String {
    format!("{}.{generation:016x}.s{first}.h5", dataset_key(dataset))
}

/// The generation of a file named by `tile_file_name` or `subfile_name`, or None for any other
/// file.
pub fn generation_of(file_name: &str) -> Option<u64> {
    parse_name(file_name).map(|(generation, _)| generation)
}

/// The generation of a file named by `subfile_name`, or None for any other file.
pub fn subfile_generation(file_name: &str) -> Option<u64> {
    parse_name(file_name)
        .filter(|&(_, subfile)| subfile)
        .map(|(generation, _)| generation)
}

/// Whether `s` is `prefix` followed by decimal digits.
pub(crate) fn is_numbered(s: &str, prefix: &str) -> bool {
    s.strip_prefix(prefix)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// (generation, whether a subfile) of a name `tile_file_name` or `subfile_name` makes.
fn parse_name(file_name: &str) -> Option<(u64, bool)> {
    let stem = file_name.strip_suffix(".h5")?;
    let mut parts = stem.rsplit('.');
    let last = parts.next()?;
    let subfile = is_numbered(last, "s");
    let g = match subfile {
        true => parts.next()?,
        false if is_numbered(last, "t") && parts.next().is_some_and(|r| is_numbered(r, "r")) => {
            parts.next()?
        }
        false => return None,
    };
    // The dataset key holds no '.', so exactly one part is left.
    let key = parts.next()?;
    if key.is_empty() || parts.next().is_some() || g.len() != 16 {
        return None;
    }
    u64::from_str_radix(g, 16).ok().map(|g| (g, subfile))
}

/// Where the new master is written before it is renamed over `master`: a hidden file in the
/// same folder (rename is atomic only within one file system).
pub fn temporary_master(master: &Path, generation: u64) -> PathBuf {
    let name = master.file_name().unwrap_or_default().to_string_lossy();
    master.with_file_name(format!(".{name}.{generation:016x}.tmp"))
}

/// Checks `path` can receive a new dataset before anything is written: a file name (one ending
/// in '/', "/." or "/.." names a folder, and would fail only at the rename), not a directory,
/// not existing when overwriting is forbidden; then creates its missing parent directories.
pub fn prepare_target(path: &Path, no_overwrite: bool) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    if path.as_os_str().is_empty() {
        return fail(crate::status::H5TILE_ERR_INVALID_ARGUMENT, "path is empty");
    }
    let bytes = path.as_os_str().as_bytes();
    if let Some(tail) = ["/", "/.", "/.."]
        .iter()
        .find(|t| bytes.ends_with(t.as_bytes()))
    {
        return fail(
            H5TILE_ERR_IS_DIRECTORY,
            format!(
                "'{}' names a folder, not a file: it ends in '{tail}'",
                path.display()
            ),
        );
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            return fail(
                H5TILE_ERR_IS_DIRECTORY,
                format!("'{}' is a directory, not a file name", path.display()),
            )
        }
        Ok(_) if no_overwrite => {
            return fail(
                H5TILE_ERR_EXISTS,
                format!(
                    "'{}' exists and H5TILE_NO_OVERWRITE was given",
                    path.display()
                ),
            )
        }
        _ => {}
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if let Err(e) = std::fs::create_dir_all(parent) {
            // A file in the way gives EEXIST or ENOTDIR: name it, not the OS's words for it.
            let in_the_way = parent
                .ancestors()
                .find(|a| !a.as_os_str().is_empty() && a.exists() && !a.is_dir());
            return match in_the_way {
                // The OS's number stays: Python raises NotADirectoryError, as `open` would.
                Some(file) => Err(Error::new(
                    H5TILE_ERR_IO,
                    format!(
                        "cannot create folder '{}' for '{}': '{}' is a file, not a folder",
                        parent.display(),
                        path.display(),
                        file.display()
                    ),
                )
                .with_errno(libc::ENOTDIR)),
                None => Err(Error::io("cannot create folder", parent, &e)),
            };
        }
    }
    Ok(())
}

/// Creates the tile folder, failing clearly if something else has its name.
pub fn create_tile_dir(dir: &Path) -> Result<()> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => fail(
            H5TILE_ERR_IO,
            format!(
                "cannot create tile folder '{}': a file of that name exists",
                dir.display()
            ),
        ),
        Err(e) => Err(Error::io("cannot create tile folder", dir, &e)),
    }
}

/// The master a commit put in place (device and inode): a later commit by another process
/// renames another file over it, so the cleanup can tell whether its master is still the one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Committed {
    dev: u64,
    ino: u64,
}

impl Committed {
    fn of(meta: &std::fs::Metadata) -> Committed {
        use std::os::unix::fs::MetadataExt;
        Committed {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }

    /// Whether `master` is still this commit's file.
    pub(super) fn still_at(self, master: &Path) -> bool {
        std::fs::metadata(master).is_ok_and(|m| Committed::of(&m) == self)
    }
}

/// The commit point. The new files (tiles, synced by their writers, and the temporary master)
/// and the folders that gained entries (`tiles`, the tile folder, and the master's, which may
/// have gained the tile folder) must be on disk before the rename, or a power failure could
/// leave a committed master naming files whose directory entries were lost: so the temporary
/// master, then those folders are synced, then it is renamed over `master`. Once this returns
/// Ok the new dataset is the one readers see; `sync_parent` then makes the rename durable.
/// Without `sync` (`H5TILE_NO_SYNC`) nothing is synced: the rename alone still makes the switch
/// atomic for readers and for a crashed process, not across a power failure.
/// Where what it syncs or renames is gone, another process took it: one writing the same path
/// alone, whose `remove_stale` took this write's temporary master for a crashed write's.
/// Returns the identity of the master it put in place, for `remove_stale`.
pub fn commit(tmp: &Path, master: &Path, tiles: Option<&Path>, sync: bool) -> Result<Committed> {
    let switch = || -> Result<Committed> {
        let committed = std::fs::metadata(tmp)
            .map(|m| Committed::of(&m))
            .map_err(|e| Error::io("cannot find new master", tmp, &e))?;
        if sync {
            sync_path(tmp)?;
            if let Some(dir) = tiles.filter(|d| d.is_dir()) {
                sync_path(dir)?;
                sync_parent(master)?;
            }
        }
        std::fs::rename(tmp, master)
            .map_err(|e| Error::io("cannot rename new master into place at", master, &e))?;
        Ok(committed)
    };
    switch().map_err(|e| match e.errno == libc::ENOENT {
        true => Error {
            message: format!(
                "another process wrote or removed '{}' while this write ran (several processes \
                 writing one path, each alone: without comm=, or with MPI_COMM_NULL?); nothing \
                 of this write was committed [{}]",
                master.display(),
                e.message
            ),
            ..e
        },
        false => e,
    })
}

/// Makes a rename in `master`'s folder durable.
pub fn sync_parent(master: &Path) -> Result<()> {
    let parent = master
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    sync_path(parent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dataset_keys_are_unique_and_dot_free() {
        assert_eq!(dataset_key("/data"), "data");
        assert_eq!(dataset_key("/group/x"), "group+x");
        assert_eq!(dataset_key("/a.b"), "a~2Eb");
        assert_ne!(dataset_key("/a/b"), dataset_key("/a+b"));
        assert_ne!(dataset_key("/a/b"), dataset_key("/a~2Bb"));
        for name in ["/x.y/z w", "/100%", "/a+b/c~d"] {
            let key = dataset_key(name);
            assert!(!key.contains('.') && !key.contains('%'), "{key}");
        }
    }

    #[test]
    fn tile_names_parse_back_to_their_generation() {
        let n = tile_file_name("/group/x.y", 0xabc, 17, 2);
        assert_eq!(n, "group+x~2Ey.0000000000000abc.r17.t2.h5");
        assert_eq!(generation_of(&n), Some(0xabc));
        let s = subfile_name("/group/x.y", 0xabc, 56);
        assert_eq!(s, "group+x~2Ey.0000000000000abc.s56.h5");
        assert_eq!(generation_of(&s), Some(0xabc));
        for other in [
            "x.0000000000000abc.s.h5",
            "x.0000000000000abc.r1.s2.h5",
            "a.b.0000000000000abc.s2.h5",
            "x.0000000000000abc.t1.h5",
        ] {
            assert_eq!(generation_of(other), None, "{other}");
        }
        for other in [
            "notes.txt",
            "data.h5",
            "x.0000000000000abc.r1.h5",
            "x.00000abc.r1.t0.h5",
            ".0000000000000abc.r1.t0.h5",
        ] {
            assert_eq!(generation_of(other), None, "{other}");
        }
    }

    #[test]
    fn tile_dir_and_temporary_master_sit_beside_the_master() {
        let m = Path::new("/run/out/field.h5");
        assert_eq!(tile_dir(m), Path::new("/run/out/field.h5.tiles"));
        assert_eq!(
            tile_dir(Path::new("a%b~.h5")),
            Path::new("a~25b~7E.h5.tiles")
        );
        assert_ne!(
            tile_dir(Path::new("a%b.h5")),
            tile_dir(Path::new("a~25b.h5"))
        );
        assert_eq!(
            temporary_master(m, 1),
            Path::new("/run/out/.field.h5.0000000000000001.tmp")
        );
    }

    #[test]
    fn prepare_target_checks_and_creates_parents() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(
            prepare_target(d.path(), false).unwrap_err().status,
            H5TILE_ERR_IS_DIRECTORY
        );
        let f = d.path().join("x.h5");
        std::fs::write(&f, b"old").unwrap();
        assert_eq!(
            prepare_target(&f, true).unwrap_err().status,
            H5TILE_ERR_EXISTS
        );
        assert_eq!(std::fs::read(&f).unwrap(), b"old");
        prepare_target(&f, false).unwrap();
        let deep = d.path().join("a/b/c.h5");
        prepare_target(&deep, true).unwrap();
        assert!(d.path().join("a/b").is_dir());
        // A file where a folder must be: named, with the OS's number for it.
        let under = f.join("sub/y.h5");
        let e = prepare_target(&under, false).unwrap_err();
        assert_eq!(
            (e.status, e.errno),
            (H5TILE_ERR_IO, libc::ENOTDIR),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("is a file, not a folder"),
            "{}",
            e.message
        );
    }

    /// A path ending in '/' (or "/.", "/..") names a folder: refused before anything is made,
    /// its parent folders included (it failed at the rename, after everything was written).
    #[test]
    fn prepare_target_refuses_a_path_naming_a_folder_first() {
        let d = tempfile::tempdir().unwrap();
        for tail in ["/", "//", "/.", "/.."] {
            let path = format!("{}/new/x.h5{tail}", d.path().display());
            let e = prepare_target(Path::new(&path), false).unwrap_err();
            assert_eq!(e.status, H5TILE_ERR_IS_DIRECTORY, "{path}");
            assert!(
                e.message
                    .starts_with(&format!("'{path}' names a folder, not a file")),
                "{}",
                e.message
            );
        }
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    /// A commit whose temporary master another process removed (its `remove_stale` took it
    /// for a crashed write's) says so, first, keeping the operating system's reason.
    #[test]
    fn a_commit_whose_new_master_is_gone_names_another_process() {
        let d = tempfile::tempdir().unwrap();
        let m = d.path().join("f.h5");
        for sync in [true, false] {
            let e = commit(&temporary_master(&m, 7), &m, None, sync).unwrap_err();
            assert_eq!((e.status, e.errno), (H5TILE_ERR_IO, libc::ENOENT));
            let m = m.display();
            assert!(
                e.message.starts_with(&format!(
                    "another process wrote or removed '{m}' while this write ran \
                     (several processes writing one path"
                )),
                "{}",
                e.message
            );
            assert!(
                e.message.contains("No such file or directory"),
                "{}",
                e.message
            );
        }
        // Its own temporary master in place, it commits.
        std::fs::write(temporary_master(&m, 8), b"new").unwrap();
        commit(&temporary_master(&m, 8), &m, None, true).unwrap();
        assert_eq!(std::fs::read(&m).unwrap(), b"new");
    }

    #[test]
    fn create_tile_dir_refuses_a_file_in_the_way() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.h5.tiles");
        std::fs::write(&p, b"").unwrap();
        assert_eq!(create_tile_dir(&p).unwrap_err().status, H5TILE_ERR_IO);
    }
}
