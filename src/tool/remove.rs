//! Removing a master with the tile files and subfiles it refers to in its tile folder (only
//! those: other datasets' files stay), then the folder if that left it empty (`h5tile rm`).
//! The master goes first, so no reader finds it naming tiles that are gone.

use super::files::{FileError, FileResult};
use super::relocate::{source_files, Place};
use crate::layout::tile_dir;
use crate::ops::describe::describe;
use std::path::{Path, PathBuf};

/// What removing a master did (or, in a dry run, would do).
#[derive(Clone, Debug, Default)]
pub struct Removal {
    /// The master, its tile files, and the tile folder when it was left empty.
    pub removed: Vec<PathBuf>,
    /// Tile files the master names that were not there.
    pub missing: Vec<PathBuf>,
    /// Sources outside the tile folder, left in place: other files may share them.
    pub kept: Vec<PathBuf>,
    /// Why the first tile file that could not be removed stays, if one did (the others were
    /// removed all the same).
    pub failed: Option<String>,
}

/// Removes the master at `master` (any HDF5 file) and the files in its tile folder that it
/// refers to, then the folder if nothing else is left in it; with `dry_run`, only says what
/// would be removed. Fails, removing nothing, when `master` cannot be described or removed.
pub fn remove_master(master: &Path, dry_run: bool) -> FileResult<Removal> {
    let datasets = describe(master, None)?;
    let folder = tile_dir(master);
    let mut tiles = Vec::new();
    let mut removal = Removal {
        removed: vec![master.to_path_buf()],
        ..Removal::default()
    };
    for source in source_files(master, &datasets) {
        match (&source.place, source.found) {
            (Place::TileFolder(inside), true) => tiles.push(folder.join(inside)),
            (Place::TileFolder(inside), false) => removal.missing.push(folder.join(inside)),
            _ => removal.kept.push(source.path),
        }
    }
    if dry_run {
        let folder_goes = !tiles.is_empty() && only_these_in(&folder, &tiles);
        removal.removed.extend(tiles);
        if folder_goes {
            removal.removed.push(folder);
        }
        return Ok(removal);
    }
    std::fs::remove_file(master)
        .map_err(|e| FileError::io(format!("cannot remove '{}'", master.display()), &e))?;
    for tile in &tiles {
        match std::fs::remove_file(tile) {
            Ok(()) => removal.removed.push(tile.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                removal.missing.push(tile.clone())
            }
            Err(e) => {
                removal
                    .failed
                    .get_or_insert(format!("cannot remove '{}': {e}", tile.display()));
            }
        }
    }
    // A folder something else is still in stays.
    if !tiles.is_empty() && std::fs::remove_dir(&folder).is_ok() {
        removal.removed.push(folder);
    }
    Ok(removal)
}

/// Whether `folder` holds nothing but `files`.
fn only_these_in(folder: &Path, files: &[PathBuf]) -> bool {
    std::fs::read_dir(folder).is_ok_and(|entries| {
        entries
            .flatten()
            .all(|e| files.iter().any(|f| f.file_name() == Some(&e.file_name())))
    })
}
