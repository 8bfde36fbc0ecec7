//! What the calling thread has asked of HDF5 and of the file system, counted so that tests see
//! how a cost grows with the tiles (files opened for one read, mappings decoded, what `ls`
//! opens) by counting work rather than timing it. Per thread: tests run side by side.

use std::cell::Cell;

/// Work counted on one thread since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// HDF5 files opened (`H5Fopen`).
    pub files_opened: u64,
    /// HDF5 datasets opened (`H5Dopen`).
    pub datasets_opened: u64,
    /// Virtual-dataset mappings decoded (`H5Pget_virtual_*`).
    pub mappings_decoded: u64,
    /// Tile files and subfiles opened to read their bytes without HDF5.
    pub tile_files_read: u64,
}

impl std::ops::Sub for Work {
    type Output = Work;
    fn sub(self, earlier: Work) -> Work {
        Work {
            files_opened: self.files_opened - earlier.files_opened,
            datasets_opened: self.datasets_opened - earlier.datasets_opened,
            mappings_decoded: self.mappings_decoded - earlier.mappings_decoded,
            tile_files_read: self.tile_files_read - earlier.tile_files_read,
        }
    }
}

thread_local! {
    static WORK: Cell<Work> = Cell::new(Work::default());
}

/// The work counted on this thread so far.
#[cfg(any(test, feature = "internals"))]
pub fn done() -> Work {
    WORK.with(Cell::get)
}

/// Counts `what` on this thread.
pub fn count(what: impl FnOnce(&mut Work)) {
    WORK.with(|w| {
        let mut work = w.get();
        what(&mut work);
        w.set(work);
    })
}
