//! The files a master's virtual datasets take their elements from, seen from the master (in
//! its tile folder, elsewhere relative to it, at absolute paths), and pointing a copy of a
//! master at its own tile folder: what copying or removing a master with its tiles needs.

use crate::layout::tile_dir;
use crate::ops::describe::{describe, DatasetInfo};
use crate::platform::hdf5::{self, Dataset, File, Plist, Storage};
use crate::status::Result;
use std::path::{Path, PathBuf};

/// Where a source file lies, as its master names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// In the master's tile folder, at this path within it.
    TileFolder(PathBuf),
    /// Elsewhere, at this path relative to the master's folder.
    Relative(PathBuf),
    /// At an absolute path: a copy of the master would still read this file.
    Absolute,
    /// Named by a printf-style pattern HDF5 expands: not followed.
    Pattern,
}

/// One file that tiles of a master come from.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// The name the master gives it (the first, when several tiles name it differently).
    pub name: String,
    /// Where HDF5 finds it (where it would look first when it is nowhere), and whether it is
    /// there.
    pub path: PathBuf,
    pub found: bool,
    pub place: Place,
    /// The tiles it holds: (index in the datasets described, index of the tile).
    pub tiles: Vec<(usize, usize)>,
}

/// The files the virtual datasets `datasets` of the master at `master` take elements from,
/// each once, in the order of their first tile; the master itself (a source named ".") is
/// not one of them.
pub fn source_files(master: &Path, datasets: &[DatasetInfo]) -> Vec<SourceFile> {
    let folder = tile_dir(master)
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let mut files: Vec<SourceFile> = Vec::new();
    let mut by_path = std::collections::HashMap::new();
    for (d, info) in datasets.iter().enumerate() {
        let Some(vds) = &info.virtual_info else {
            continue;
        };
        for (i, tile) in vds.tiles.iter().enumerate() {
            if tile.file == "." {
                continue;
            }
            let at = *by_path.entry(tile.path.clone()).or_insert_with(|| {
                files.push(SourceFile {
                    name: tile.file.clone(),
                    path: tile.path.clone(),
                    found: tile.found,
                    place: place_of(&tile.file, tile.pattern, &folder),
                    tiles: Vec::new(),
                });
                files.len() - 1
            });
            files[at].tiles.push((d, i));
        }
    }
    files
}

/// The files in `master`'s tile folder that it refers to and that are there, if it is a
/// master (none otherwise, nor when it cannot be read): what replacing it leaves behind.
pub(crate) fn tile_files_of(master: &Path) -> Vec<PathBuf> {
    let Ok(datasets) = describe(master, None) else {
        return Vec::new();
    };
    source_files(master, &datasets)
        .into_iter()
        .filter(|s| s.found)
        .filter_map(|s| match s.place {
            Place::TileFolder(inside) => Some(tile_dir(master).join(inside)),
            _ => None,
        })
        .collect()
}

fn place_of(name: &str, pattern: bool, folder: &str) -> Place {
    let path = Path::new(name);
    if pattern {
        return Place::Pattern;
    }
    if path.is_absolute() {
        return Place::Absolute;
    }
    // Only a path that stays inside the folder is in it: `rm` and `cp` act on what is.
    let within = |inside: &Path| {
        inside
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
    };
    match path.strip_prefix(folder) {
        Ok(inside) if !inside.as_os_str().is_empty() && within(inside) => {
            Place::TileFolder(inside.to_path_buf())
        }
        _ => Place::Relative(path.to_path_buf()),
    }
}

/// Points every virtual dataset of the master at `master` (a copy, not yet in use) that takes
/// tiles from the tile folder named `from` at the tile folder named `to` instead (both beside
/// the master). Returns how many mappings changed.
pub fn point_at_tile_folder(master: &Path, from: &str, to: &str) -> Result<usize> {
    let _l = hdf5::lock();
    let file = File::open_write_with(master, &Plist::file_access_master()?)?;
    let prefix = format!("{from}/");
    let rename = |name: &str| {
        name.strip_prefix(&prefix)
            .map(|rest| format!("{to}/{rest}"))
    };
    let mut changed = 0;
    for name in file.dataset_paths()? {
        if Dataset::open(&file, &name)?.storage()? == Storage::Virtual {
            changed += file.rename_virtual_sources(&name, &rename)?;
            crate::layout::index::rename_sources(&file, &name, &rename)?;
        }
    }
    file.close()?;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_placed_from_their_names() {
        let folder = "a~25.h5.tiles";
        assert_eq!(
            place_of("a~25.h5.tiles/d.0000000000000001.s0.h5", false, folder),
            Place::TileFolder("d.0000000000000001.s0.h5".into())
        );
        assert_eq!(
            place_of("src/part0.h5", false, folder),
            Place::Relative("src/part0.h5".into())
        );
        assert_eq!(place_of("/abs/0.h5", false, folder), Place::Absolute);
        assert_eq!(place_of("f-%b.h5", true, folder), Place::Pattern);
        assert_eq!(
            place_of("a~25.h5.tiles", false, folder),
            Place::Relative("a~25.h5.tiles".into())
        );
        // A name that climbs out of the folder is not in it (rm must not follow it there).
        assert_eq!(
            place_of("a~25.h5.tiles/../other.h5", false, folder),
            Place::Relative("a~25.h5.tiles/../other.h5".into())
        );
    }
}
