//! Writes in flight. After its commit a write removes the files of every other generation of
//! its master: those of replaced versions and of crashed writes. Processes that write one path
//! each on its own (several Python processes calling `to_file` without `comm=`) would then
//! remove each other's files while those writes still run, and a write could commit a master
//! whose tile files another process had just removed: `H5TILE_OK` and a file that cannot be
//! read. So each write holds, from its plan to the end of its cleanup, an exclusive `flock`
//! on a lock file beside the master, `.<name>.<generation>.lock`; the cleanup leaves alone
//! the files of any generation whose lock is held. A crashed write's lock is released by the
//! kernel, and the next cleanup removes its files and the lock file alike. Where the file
//! system has no `flock` (some parallel file systems mount without it), nothing is held and
//! the cleanup removes as before.

use crate::status::{Error, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The lock file of generation `generation` of `master`, beside it.
pub fn lock_path(master: &Path, generation: u64) -> PathBuf {
    let name = master.file_name().unwrap_or_default().to_string_lossy();
    master.with_file_name(format!(".{name}.{generation:016x}.lock"))
}

/// The generation of a lock file of `master` named `file_name`, if it is one.
pub fn lock_generation(master: &Path, file_name: &str) -> Option<u64> {
    let name = master.file_name().unwrap_or_default().to_string_lossy();
    let g = file_name
        .strip_prefix(&format!(".{name}."))?
        .strip_suffix(".lock")?;
    (g.len() == 16).then(|| u64::from_str_radix(g, 16).ok())?
}

/// The lock a write holds while it runs; dropping it (after the cleanup) removes the lock file
/// and releases the lock.
pub struct WriteLock {
    held: Option<(File, PathBuf)>,
}

fn flock(file: &File, op: i32) -> std::io::Result<()> {
    // SAFETY: flock on a descriptor this process owns.
    match unsafe { libc::flock(file.as_raw_fd(), op) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Whether `file` is still the file at `path` (a cleanup may have removed it before the lock
/// was taken, and then it protects nothing).
fn still_at(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl WriteLock {
    /// Takes the lock of generation `generation` of `master` (on rank 0, before any rank
    /// creates a file of that generation). A lock file that cannot be made fails the write, as
    /// any file it cannot create does (EIO, ENOSPC); where the file system has no locks
    /// (`flock` unsupported), the write goes on unprotected, as before.
    pub fn take(master: &Path, generation: u64) -> Result<WriteLock> {
        let path = lock_path(master, generation);
        // A cleanup that took the file for a crashed write's may remove it between our
        // open and our lock: then it is made again.
        for _ in 0..8 {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| Error::io("cannot create lock file", &path, &e))?;
            if flock(&file, libc::LOCK_EX).is_err() {
                let _ = std::fs::remove_file(&path);
                break;
            }
            if still_at(&file, &path) {
                return Ok(WriteLock {
                    held: Some((file, path)),
                });
            }
        }
        Ok(WriteLock { held: None })
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        if let Some((file, path)) = self.held.take() {
            // Removed while still held: no cleanup can take it for a crashed write's meanwhile.
            if still_at(&file, &path) {
                let _ = std::fs::remove_file(&path);
            }
            drop(file);
        }
    }
}

/// Whether generation `generation` of `master` is being written by a live process (its lock
/// is held). A lock file nobody holds is a crashed write's: it is removed, and false.
pub fn in_flight(master: &Path, generation: u64) -> bool {
    let path = lock_path(master, generation);
    // Read-only: `flock` needs no more, and another user's lock file is seen held too.
    let Ok(file) = File::open(&path) else {
        return false;
    };
    match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => true,
        Err(_) => false,
        Ok(()) => {
            if still_at(&file, &path) {
                let _ = std::fs::remove_file(&path);
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_names_parse_back_to_their_generation() {
        let master = Path::new("/d/x.h5");
        let p = lock_path(master, 0xab);
        assert_eq!(p, Path::new("/d/.x.h5.00000000000000ab.lock"));
        let name = p.file_name().unwrap().to_str().unwrap();
        assert_eq!(lock_generation(master, name), Some(0xab));
        assert_eq!(lock_generation(Path::new("/d/y.h5"), name), None);
        assert_eq!(lock_generation(master, ".x.h5.00ab.lock"), None);
    }

    /// A held lock says in flight, to this process too (flock locks belong to the open file);
    /// once dropped its file is gone; a lock file nobody holds is removed by the look.
    #[test]
    fn a_held_lock_is_in_flight_and_a_dropped_or_orphaned_one_is_not() {
        let d = tempfile::tempdir().unwrap();
        let master = d.path().join("m.h5");
        let lock = WriteLock::take(&master, 7).unwrap();
        assert!(lock_path(&master, 7).exists());
        assert!(in_flight(&master, 7));
        assert!(!in_flight(&master, 8));
        drop(lock);
        assert!(!lock_path(&master, 7).exists());
        assert!(!in_flight(&master, 7));
        std::fs::write(lock_path(&master, 9), b"").unwrap();
        assert!(!in_flight(&master, 9));
        assert!(
            !lock_path(&master, 9).exists(),
            "an orphaned lock file is removed"
        );
    }
}
