//! Replacing one dataset of a file while keeping everything else in it (`H5TILE_KEEP_OTHERS`).
//!
//! The new master starts as a byte copy of the old file, so its groups, attributes, links of
//! every kind and other datasets stay exactly as they were (datasets that h5tile wrote keep
//! their tiles, whose names carry their dataset's key). The copy loses the old version of the
//! dataset, gets the new one, and replaces the old file by the same atomic rename as any write.

use crate::platform::hdf5::{File, ObjectKind, Plist};
use crate::status::*;
use std::path::Path;

/// Checks, before anything is written, that `dataset` can be replaced in the existing file
/// `path`: an HDF5 file in which every object on the dataset's path is a group and the
/// dataset itself is a dataset or absent.
pub fn check(path: &Path, dataset: &str) -> Result<()> {
    let file = File::open_read(path).map_err(|e| kept(path, e))?;
    replaceable(&file, path, dataset).map(|_| ())
}

/// Opens the new master `tmp`: empty, or, with `keep` = (old file, datasets) and the old file
/// there, a copy of it without `datasets`.
pub fn new_master(tmp: &Path, keep: Option<(&Path, &[&str])>) -> Result<File> {
    let fapl = Plist::file_access_master()?;
    let Some((old, datasets)) = keep.filter(|(old, _)| old.exists()) else {
        return File::create_with(tmp, &fapl);
    };
    std::fs::copy(old, tmp).map_err(|e| Error::io("cannot copy the file to keep,", old, &e))?;
    let file = File::open_write_with(tmp, &fapl).map_err(|e| kept(old, e))?;
    for dataset in datasets {
        // Checked again: the file may have changed since the write began.
        if replaceable(&file, old, dataset)? {
            file.unlink(dataset).map_err(|e| {
                e.context(&format!(
                    "cannot remove the old '{dataset}' from the copy of '{}'",
                    old.display()
                ))
            })?;
        }
    }
    Ok(file)
}

fn kept(path: &Path, e: Error) -> Error {
    e.context(&format!(
        "H5TILE_KEEP_OTHERS: cannot keep the contents of '{}'",
        path.display()
    ))
}

/// Whether `dataset` exists in `file` (named `path` in messages), after checking that every
/// object on its path is a group and that it is a dataset.
fn replaceable(file: &File, path: &Path, dataset: &str) -> Result<bool> {
    let parts: Vec<&str> = dataset.trim_start_matches('/').split('/').collect();
    let mut name = String::new();
    for (i, part) in parts.iter().enumerate() {
        name = format!("{name}/{part}");
        let kind = file.object_kind(&name).map_err(|e| {
            let what = format!("cannot open '{name}' in '{}'", path.display());
            Error::new(e.status, format!("{what}: {}", e.message))
        })?;
        let Some(kind) = kind else {
            return Ok(false);
        };
        let last = i + 1 == parts.len();
        match (last, kind) {
            (false, ObjectKind::Group) | (true, ObjectKind::Dataset) => {}
            (false, _) => {
                return fail(
                    H5TILE_ERR_INVALID_ARGUMENT,
                    format!(
                        "'{name}' in '{}' is not a group, so it cannot hold '{dataset}'",
                        path.display()
                    ),
                )
            }
            (true, _) => {
                return fail(
                    H5TILE_ERR_NOT_A_DATASET,
                    format!(
                        "'{dataset}' in '{}' is not a dataset; H5TILE_KEEP_OTHERS replaces \
                         datasets only",
                        path.display()
                    ),
                )
            }
        }
    }
    Ok(true)
}
