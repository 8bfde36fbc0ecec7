//! The cleanup after a commit: removing the files of replaced and crashed writes of a master,
//! and none that a master or a write in flight still needs.

use super::{generation_of, in_flight, tile_dir, Committed};
use crate::status::{Error, Result};
use std::path::Path;

/// After a commit: deletes tile files of every other generation (with `keep_referenced`,
/// only those the new master does not map: it kept other datasets, whose files may be of
/// any generation) and temporary masters left by crashed writes of this master, but none of
/// a generation another process is still writing (`in_flight`). Where another process's
/// commit has replaced `committed` since, the files that master maps are kept instead and
/// this write's own are stale too. Returns the first failure, having tried every file.
pub fn remove_stale(
    master: &Path,
    generation: u64,
    committed: Committed,
    keep_referenced: bool,
) -> Result<()> {
    let parent = master
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = tile_dir(master);
    // First every candidate, by generation: tile files, temporary masters, lock files.
    let tile_files = tile_files_of(master);
    let mut temporaries = Vec::new();
    let mut generations: std::collections::HashSet<u64> =
        tile_files.iter().map(|(_, _, g)| *g).collect();
    let name = master
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    if let Ok(entries) = std::fs::read_dir(parent) {
        let prefix = format!(".{name}.");
        for entry in entries.flatten() {
            let n = entry.file_name().to_string_lossy().into_owned();
            if let Some(g) = n.strip_prefix(&prefix).and_then(|r| r.strip_suffix(".tmp")) {
                if let Ok(g) = u64::from_str_radix(g, 16) {
                    generations.insert(g);
                    temporaries.push((entry.path(), g));
                }
            } else if let Some(g) = in_flight::lock_generation(master, &n) {
                generations.insert(g);
            }
        }
    }
    // Then which are being written (a crashed write's lock file is removed by the look).
    let live: std::collections::HashSet<u64> = generations
        .into_iter()
        .filter(|&g| g != generation && in_flight::in_flight(master, g))
        .collect();
    // Only then the master: a write that committed after this one renamed its master before
    // it released its lock, so once its lock is seen free, its master is seen too.
    let ours = committed.still_at(master);
    let referenced = match keep_referenced || !ours {
        false => None,
        true => match referenced_files(master) {
            Ok(names) => Some(names),
            Err(e) if ours => return Err(e),
            // Replaced by a master that cannot be read now: its writer's cleanup, or the
            // next write's, removes what is stale; nothing is removed on a guess.
            Err(_) => return Ok(()),
        },
    };
    let stale = |g: u64| !live.contains(&g) && (g != generation || !ours);
    let mut first_error = None;
    let mut remove = |p: &Path| {
        if let Err(e) = std::fs::remove_file(p) {
            if e.kind() != std::io::ErrorKind::NotFound && first_error.is_none() {
                first_error = Some(Error::io("cannot remove stale tile", p, &e));
            }
        }
    };
    for (path, name, g) in &tile_files {
        let needed = referenced.as_ref().is_some_and(|r| r.contains(name));
        if !needed && stale(*g) {
            remove(path);
        }
    }
    for (path, g) in &temporaries {
        if *g != generation && stale(*g) {
            remove(path);
        }
    }
    // An empty folder is no use to anyone; a non-empty one is left alone, and so is one a
    // write in flight may be about to fill (it made or found the folder before its files).
    if !live_writes(master, generation) {
        let _ = std::fs::remove_dir(&dir);
    }
    first_error.map_or(Ok(()), Err)
}

/// After this write's lock is released: where another process's commit has replaced this
/// write's master since its cleanup looked (that commit's cleanup spared this write's files,
/// its lock being held then), removes this write's files that the master on disk does not
/// map. What fails is left for the next write's cleanup: garbage, not data.
pub fn remove_own_if_replaced(master: &Path, generation: u64, committed: Committed) {
    if committed.still_at(master) {
        return;
    }
    let Ok(referenced) = referenced_files(master) else {
        return;
    };
    for (path, name, g) in tile_files_of(master) {
        if g == generation && !referenced.contains(&name) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The tile files in `master`'s folder: (path, name, generation).
fn tile_files_of(master: &Path) -> Vec<(std::path::PathBuf, String, u64)> {
    let Ok(entries) = std::fs::read_dir(tile_dir(master)) else {
        return Vec::new();
    };
    let named = entries.flatten().map(|entry| {
        (
            entry.path(),
            entry.file_name().to_string_lossy().into_owned(),
        )
    });
    named
        .filter_map(|(path, name)| generation_of(&name).map(|g| (path, name, g)))
        .collect()
}

/// Removes `master`'s tile folder (an aborted write's) if it is empty and no other write of
/// it, of a generation other than `generation`, is in flight: one may be about to fill it.
pub fn remove_tile_dir_if_idle(master: &Path, generation: u64) {
    if !live_writes(master, generation) {
        let _ = std::fs::remove_dir(tile_dir(master));
    }
}

/// Whether another process is writing `master` now: a lock file of another generation is held.
fn live_writes(master: &Path, generation: u64) -> bool {
    let parent = master
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Ok(entries) = std::fs::read_dir(parent) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let n = entry.file_name().to_string_lossy().into_owned();
        in_flight::lock_generation(master, &n)
            .is_some_and(|g| g != generation && in_flight::in_flight(master, g))
    })
}

/// The names of the files in `master`'s tile folder that its virtual datasets map.
pub fn referenced_files(master: &Path) -> Result<std::collections::HashSet<String>> {
    use crate::platform::hdf5::{Dataset, File, Storage};
    let _l = crate::platform::hdf5::lock();
    let file = File::open_read(master)?;
    let mut names = std::collections::HashSet::new();
    for path in file.dataset_paths()? {
        let dset = Dataset::open(&file, &path)?;
        if let Storage::Virtual = dset.storage()? {
            for m in dset.create_plist()?.virtual_mappings()? {
                let name = m.file.rsplit('/').next().unwrap_or_default();
                names.insert(name.to_string());
            }
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{commit, create_tile_dir, temporary_master, tile_file_name};

    #[test]
    fn remove_stale_keeps_only_the_committed_generation() {
        let d = tempfile::tempdir().unwrap();
        let m = d.path().join("f.h5");
        let dir = tile_dir(&m);
        create_tile_dir(&dir).unwrap();
        let keep = dir.join(tile_file_name("/d", 2, 0, 0));
        let old = dir.join(tile_file_name("/d", 1, 3, 0));
        let foreign = dir.join("README");
        for p in [&keep, &old, &foreign] {
            std::fs::write(p, b"x").unwrap();
        }
        let stale_tmp = temporary_master(&m, 1);
        std::fs::write(&stale_tmp, b"x").unwrap();
        std::fs::write(temporary_master(&m, 2), b"x").unwrap();
        let mine = commit(&temporary_master(&m, 2), &m, Some(&dir), false).unwrap();
        remove_stale(&m, 2, mine, false).unwrap();
        assert!(keep.exists() && foreign.exists());
        assert!(!old.exists() && !stale_tmp.exists());
    }
}
