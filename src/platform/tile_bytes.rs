//! Tile bytes written straight into a file HDF5 laid out, at offsets known beforehand (the
//! single-file layout's rows, a subfile's tile): one writer for every layout that does so, so
//! host and device bytes move the same way whatever the layout (host bytes in pieces over the
//! rank's I/O threads, device bytes through the h5tile_gds device paths), and the file is
//! made durable as the caller's protocol asks.

use super::device::{Buffer, DeviceFile};
use crate::status::{fail, Error, Result, H5TILE_ERR_INVALID_ARGUMENT};
use std::path::Path;

/// When the written bytes reach stable storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// The file is synced here, once every run is written.
    SyncNow,
    /// Someone syncs the file later (a subfile's first rank, once for its whole group): each
    /// piece's writeback starts at once, so that sync finds little left to do.
    SyncLater,
    /// Never synced (`H5TILE_NO_SYNC`): no writeback started, the page cache keeps the bytes.
    Never,
}

/// `len` bytes at `buf_at` of a tile's buffer, to be written at `file_at` of its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub file_at: u64,
    pub buf_at: u64,
    pub len: usize,
}

/// What lies in the file between the runs of one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gaps {
    /// Other writers' bytes (the single-file layout's rows of other ranks), never touched.
    Others,
    /// Nothing: the file's every allocation starts on a 4 KiB boundary (a compressed
    /// subfile), so the bytes from a run's end to the next boundary belong to no one. Short runs
    /// starting there are written together with zeros between them (`gaps_are_padding`).
    Padding,
}

/// Writes each of `runs` from `buf` into the existing file `path`, then makes the file as
/// durable as `durability` says. A host buffer too short for the runs is refused before the
/// file is touched.
pub fn write_runs(
    path: &Path,
    runs: &[Run],
    gaps: Gaps,
    buf: Buffer,
    durability: Durability,
) -> Result<()> {
    let route = buf.route();
    // Whether a sync is to come, here or later: `Route::write_config` prepares for it.
    let synced = durability != Durability::Never;
    match buf {
        Buffer::Host(bytes) => {
            let need = runs.iter().map(|r| r.buf_at as usize + r.len).max();
            if let Some(need) = need.filter(|&n| n > bytes.len()) {
                let why = format!("a buffer of {} bytes for a tile of {need}", bytes.len());
                return fail(H5TILE_ERR_INVALID_ARGUMENT, why);
            }
            let mode = h5tile_gds::OpenMode {
                write: true,
                ..Default::default()
            };
            let mut file = h5tile_gds::PosixFile::open(&path.to_string_lossy(), mode)
                .map_err(|e| Error::io("cannot open", path, &e))?;
            if gaps == Gaps::Padding {
                file.gaps_are_padding();
            }
            let config = route.write_config(synced);
            for run in runs {
                let at = run.buf_at as usize;
                file.write_raw(run.file_at, &bytes[at..at + run.len], &config)
                    .map_err(|e| Error::io("cannot write tile data to", path, &e))?;
            }
            // Short runs (a compressed tile's chunks) are held to go to the file together.
            file.write_held()
                .map_err(|e| Error::io("cannot write tile data to", path, &e))?;
        }
        Buffer::Device(ptr, _) => {
            let mut file = DeviceFile::open_to_write(path, &route, synced)?;
            for run in runs {
                file.write(run.file_at, ptr.offset(run.buf_at as usize), run.len)?;
            }
        }
    }
    match durability {
        Durability::SyncNow => sync_path(path),
        Durability::SyncLater | Durability::Never => Ok(()),
    }
}

/// Flushes a closed file's data (or a folder's entries) to stable storage.
pub fn sync_path(path: &Path) -> Result<()> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io("cannot sync", path, &e))
}

/// Syncs every file of `paths`, several at once: a file system commits the journal once for
/// the fsyncs that wait together, where one after the other each would wait for a commit of
/// its own (a checkpoint of 32 small fields is 32 tile files a rank). The first failure in
/// the order of `paths`, after every file was tried.
pub fn sync_paths(paths: &[std::path::PathBuf]) -> Result<()> {
    const AT_ONCE: usize = 8;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut outcomes: Vec<Option<Result<()>>> = vec![None; paths.len()];
    let slots = std::sync::Mutex::new(&mut outcomes);
    std::thread::scope(|scope| {
        for _ in 0..AT_ONCE.min(paths.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(path) = paths.get(i) else { break };
                let outcome = sync_path(path);
                slots.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(outcome);
            });
        }
    });
    outcomes.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::H5TILE_ERR_IO;

    fn run(file_at: u64, buf_at: u64, len: usize) -> Run {
        Run {
            file_at,
            buf_at,
            len,
        }
    }

    #[test]
    fn host_runs_land_at_their_offsets_and_nothing_else_changes() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        std::fs::write(&path, vec![b'.'; 32]).unwrap();
        let bytes: Vec<u8> = (b'a'..=b'z').collect();
        let runs = [run(2, 0, 3), run(10, 3, 4), run(30, 7, 4)];
        for durability in [
            Durability::SyncNow,
            Durability::SyncLater,
            Durability::Never,
        ] {
            write_runs(&path, &runs, Gaps::Others, Buffer::Host(&bytes), durability).unwrap();
            let mut want = vec![b'.'; 34];
            want[2..5].copy_from_slice(b"abc");
            want[10..14].copy_from_slice(b"defg");
            want[30..].copy_from_slice(b"hijk");
            assert_eq!(std::fs::read(&path).unwrap(), want, "{durability:?}");
        }
    }

    #[test]
    fn a_short_buffer_is_refused_before_the_file_is_touched() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        std::fs::write(&path, [0u8; 8]).unwrap();
        let runs = [run(0, 0, 4), run(4, 4, 4)];
        let e = write_runs(
            &path,
            &runs,
            Gaps::Others,
            Buffer::Host(&[1; 6]),
            Durability::Never,
        )
        .unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT);
        assert_eq!(e.message, "a buffer of 6 bytes for a tile of 8");
        assert_eq!(std::fs::read(&path).unwrap(), [0u8; 8]);
    }

    #[test]
    fn a_missing_file_is_an_io_error_naming_the_reason_then_the_path() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("missing");
        let e = write_runs(
            &path,
            &[run(0, 0, 1)],
            Gaps::Others,
            Buffer::Host(&[1]),
            Durability::SyncNow,
        )
        .unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_IO);
        assert!(e.message.starts_with("No such file"), "{}", e.message);
        assert!(e
            .message
            .ends_with(&format!("cannot open '{}'", path.display())));
        assert!(!path.exists());
    }
}
