//! A series: a folder of numbered checkpoints, one per step, each an ordinary h5tile file
//! (`ckpt.<step>.h5`, with its tile folder when its layout has one), and a record (`latest`)
//! of the newest one committed. A write commits by renaming its complete master into place,
//! so a crash leaves a step with no master, only its tile folder and temporary masters: such
//! a step is incomplete, and readers pass over it. The record is written after the commit and
//! is only a hint for people and scripts: the newest complete checkpoint is found from the
//! folder itself. Retention (`SeriesOptions`) removes old checkpoints after each commit,
//! never the one just committed.

use super::describe::{describe, DatasetInfo};
use super::verify::{check_sources_part, checksum_jobs, default_threads, verify_tiles, Depth};
use crate::layout::{generation_of, new_generation, sync_path, tile_dir};
use crate::platform::comm::Comm;
use crate::platform::hdf5;
use crate::status::{catch_panic, fail, Error, Result, H5TILE_ERR_CORRUPT, H5TILE_ERR_NOT_FOUND};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Retention: keep_last 0 keeps everything; otherwise the newest keep_last complete checkpoints
/// stay, plus every step that is a multiple of keep_every (when keep_every > 0), plus always the
/// latest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeriesOptions {
    /// How many of the newest complete checkpoints stay (0: all of them, nothing is removed).
    pub keep_last: u64,
    /// Every step that is a multiple of it stays as well (0: none does for this reason).
    pub keep_every: u64,
}

/// The record of the latest committed checkpoint: `dir/latest`.
pub const LATEST_RECORD: &str = "latest";

/// The name checkpoints start with: `ckpt.<step>.h5`.
const PREFIX: &str = "ckpt.";

/// The master file of the checkpoint of `step` in series `dir`:
/// `dir/ckpt.<step, zero-padded to 12 digits>.h5`, so that names sort as steps do.
pub fn checkpoint_path(dir: &Path, step: u64) -> PathBuf {
    dir.join(format!("{PREFIX}{step:012}.h5"))
}

/// The step of a checkpoint's file name (`ckpt.<digits>.h5`, any number of digits from one),
/// or None for any other name (a temporary master, a tile folder, a foreign file).
pub fn step_of(file_name: &str) -> Option<u64> {
    let digits = file_name.strip_prefix(PREFIX)?.strip_suffix(".h5")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// What a series folder holds of one checkpoint: its master and the leftovers of writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    pub step: u64,
    /// The master's path, whether or not it exists.
    pub master: PathBuf,
    /// The master exists at its final name.
    pub has_master: bool,
    /// It exists and opens as HDF5: the checkpoint committed.
    pub complete: bool,
    /// Its tile folder, when one exists.
    pub tile_dir: Option<PathBuf>,
    /// Temporary masters of writes that did not commit (a crash, or one under way).
    pub temporaries: Vec<PathBuf>,
}

impl Checkpoint {}

/// Every checkpoint series `dir` holds anything of (a master, a tile folder or a temporary
/// master), newest first, each master checked to open as HDF5. A missing `dir` is NOT_FOUND.
pub fn checkpoints(dir: &Path) -> Result<Vec<Checkpoint>> {
    let mut found = listing(dir)?;
    for c in &mut found {
        c.complete = c.has_master && opens_as_hdf5(&c.master);
    }
    Ok(found)
}

/// The step the record in `dir` names and its checkpoint's path, when the record is there and
/// well formed ("<step>\n<file name of that step>\n"); whether that checkpoint is complete is
/// not looked at.
pub fn recorded(dir: &Path) -> Option<(u64, PathBuf)> {
    let mut text = String::new();
    // A record is two short lines: a large file of that name is no record.
    std::fs::File::open(dir.join(LATEST_RECORD))
        .ok()?
        .take(4096)
        .read_to_string(&mut text)
        .ok()?;
    let mut lines = text.lines();
    let (step, name) = (lines.next()?, lines.next()?);
    let step: u64 = step.parse().ok()?;
    (step_of(name) == Some(step)).then(|| (step, dir.join(name)))
}

/// Called on the committing process after the checkpoint of `step` committed: writes dir/latest
/// atomically (temporary file in dir, then rename; with `sync`, fsync the file before and the
/// dir after the rename). Content: "<step>\n<checkpoint file name>\n". Never moves the record
/// backwards (if it names a newer complete step, leave it).
pub fn record_latest(dir: &Path, step: u64, sync: bool) -> Result<()> {
    // A newer record that names nothing complete is wrong, and is replaced.
    if let Some((_, master)) = recorded(dir).filter(|&(newer, _)| newer > step) {
        if opens_as_hdf5(&master) {
            return Ok(());
        }
    }
    let master = checkpoint_path(dir, step);
    let name = master.file_name().unwrap_or_default().to_string_lossy();
    let record = dir.join(LATEST_RECORD);
    let tmp = dir.join(format!(".{LATEST_RECORD}.{:016x}.tmp", new_generation()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(format!("{step}\n{name}\n").as_bytes())?;
            match sync {
                true => f.sync_all(),
                false => Ok(()),
            }
        })
        .map_err(|e| Error::io("cannot write the series record", &tmp, &e))
        .and_then(|()| {
            std::fs::rename(&tmp, &record).map_err(|e| {
                Error::io("cannot rename the series record into place at", &record, &e)
            })
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    match sync {
        true => sync_path(dir),
        false => Ok(()),
    }
}

/// Which of `complete` (any order) to remove after `latest` committed, by `opts`, in
/// increasing order. Pure function. Steps newer than `latest` are never named: a later
/// checkpoint may be being written, or the run restarted from an older one.
pub fn to_prune(complete: &[u64], latest: u64, opts: SeriesOptions) -> Vec<u64> {
    if opts.keep_last == 0 {
        return Vec::new();
    }
    let mut steps = complete.to_vec();
    steps.sort_unstable_by(|a, b| b.cmp(a));
    steps.dedup();
    let kept_every = |s: u64| opts.keep_every > 0 && s.is_multiple_of(opts.keep_every);
    let mut doomed: Vec<u64> = steps
        .into_iter()
        .enumerate()
        .filter(|&(newest, s)| (newest as u64) >= opts.keep_last && !kept_every(s) && s < latest)
        .map(|(_, s)| s)
        .collect();
    doomed.reverse();
    doomed
}

/// After `latest` committed: removes the checkpoints to_prune names — each master first (so a
/// crash midway leaves an incomplete checkpoint, which readers skip), then its tile folder and
/// temporaries — the leftovers of crashed writes of steps older than `latest` (tile folders
/// and temporaries with no master), and temporary records a crash left (`record_latest`'s,
/// called before, has been renamed or removed). Never touches steps newer than `latest` (a later
/// checkpoint may be being written), files it did not name, nor the record. Returns the first
/// failure after trying everything.
pub fn prune(dir: &Path, latest: u64, opts: SeriesOptions) -> Result<()> {
    let found = checkpoints(dir)?;
    let complete: Vec<u64> = found
        .iter()
        .filter(|c| c.complete)
        .map(|c| c.step)
        .collect();
    let doomed = to_prune(&complete, latest, opts);
    let mut first_error: Option<Error> = None;
    let mut note = |r: Result<()>| {
        if let (Err(e), None) = (r, &first_error) {
            first_error = Some(e);
        }
    };
    for c in found.iter().filter(|c| c.step < latest) {
        if c.complete && doomed.binary_search(&c.step).is_ok() {
            let gone = remove_file(&c.master, "cannot remove checkpoint");
            // A master that stays keeps its tiles: it is still a checkpoint.
            if gone.is_err() {
                note(gone);
                continue;
            }
        } else if c.has_master {
            continue;
        }
        if let Some(tiles) = &c.tile_dir {
            note(remove_tile_dir(tiles));
        }
        for tmp in &c.temporaries {
            note(remove_file(tmp, "cannot remove temporary master"));
        }
    }
    for tmp in record_temporaries(dir) {
        note(remove_file(&tmp, "cannot remove temporary record"));
    }
    // The lock files writes left behind (killed, or their removal failed), of any step, kept
    // ones too: `in_flight` removes one nobody holds, and leaves a write's that is running.
    for c in &found {
        for tmp in &c.temporaries {
            let file = tmp.file_name().unwrap_or_default().to_string_lossy();
            if let Some(g) = crate::layout::in_flight::lock_generation(&c.master, &file) {
                crate::layout::in_flight::in_flight(&c.master, g);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// The temporary records in `dir` (`.latest.<16 hex>.tmp`, as `record_latest` names them): a
/// crash between creating one and renaming it into place leaves it behind.
fn record_temporaries(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let is_record = |name: &str| {
        let generation = name
            .strip_prefix(&format!(".{LATEST_RECORD}."))
            .and_then(|rest| rest.strip_suffix(".tmp"));
        generation.is_some_and(|g| g.len() == 16 && g.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(is_record))
        .map(|e| e.path())
        .collect()
}

/// The newest complete checkpoint (step, path), or NOT_FOUND naming dir when there is none.
/// Reads no checksums. The record is only a hint: a newer complete checkpoint than the record
/// names wins (a crash between commit and record), and a record naming a missing or incomplete
/// checkpoint is ignored; the folder has to be listed for the first anyway, so the answer is
/// the newest complete checkpoint found there and the record is not read. A candidate whose
/// master is gone by the time it is opened was pruned by a newer commit: the folder is listed
/// again, as `latest_verified` does, rather than answering with an older checkpoint (a reader
/// polling the series would see the latest step go back).
pub fn latest(dir: &Path) -> Result<(u64, PathBuf)> {
    latest_with(dir, &mut || {})
}

/// `latest`, calling `after_listing` after each listing (tests prune there).
fn latest_with(dir: &Path, after_listing: &mut dyn FnMut()) -> Result<(u64, PathBuf)> {
    let list = || {
        let found = listing(dir)?;
        let masters = found.into_iter().filter(|c| c.has_master);
        Ok(masters.map(|c| (c.step, c.master)).collect())
    };
    // Newest first, stopping at the first that opens: one HDF5 look for a healthy series.
    let opens = |master: &Path| {
        Ok((!opens_as_hdf5(master)).then(|| "its master does not open as HDF5".to_string()))
    };
    let gone = |master: &Path| Ok(!master.exists());
    let (found, _) = newest_passing(list, after_listing, opens, gone)?;
    found.ok_or_else(|| none_complete(dir))
}

/// How many times `latest` and `latest_verified` list the folder again after a candidate was
/// pruned while it was being looked at (which means a newer checkpoint committed meanwhile).
const RELISTS: usize = 8;

/// Checkpoints a search for the latest skipped, newest first: (step, why).
pub type Skipped = Vec<(u64, String)>;

/// The first of the candidates `list` gives (step, master; newest first) that passes
/// (`fails` says None), and those skipped before it (still there: not pruned). A candidate
/// that fails and is `gone` was pruned by a newer commit: the folder is listed again (at most
/// `RELISTS` times) rather than falling back to an older checkpoint. None when no candidate
/// passes.
fn newest_passing(
    mut list: impl FnMut() -> Result<Vec<(u64, PathBuf)>>,
    after_listing: &mut dyn FnMut(),
    mut fails: impl FnMut(&Path) -> Result<Option<String>>,
    mut gone: impl FnMut(&Path) -> Result<bool>,
) -> Result<(Option<(u64, PathBuf)>, Skipped)> {
    let mut skipped = Skipped::new();
    for _ in 0..RELISTS {
        let candidates = list()?;
        after_listing();
        skipped.clear();
        let mut pruned = false;
        for (step, master) in candidates {
            let Some(why) = fails(&master)? else {
                return Ok((Some((step, master)), skipped));
            };
            if gone(&master)? {
                pruned = true;
                break;
            }
            skipped.push((step, why));
        }
        if !pruned {
            break;
        }
    }
    Ok((None, skipped))
}

/// As `latest`, collectively over `comm` (every rank gets the same answer and status): also
/// skips checkpoints whose sources or checksums fail the checks `h5tile check` makes (every
/// source present, of its recorded size and stamp, opening with HDF5 and holding the mapped
/// dataset; every checksummed tile's blocks matching). Rank 0 lists the folder; the candidates
/// are verified newest first, each split over the ranks (the source files, then the tiles, each
/// rank's tiles read on several threads), stopping at the first that passes. A candidate whose
/// master is gone when its check fails was pruned by a newer commit: the folder is listed
/// again rather than falling back to an older checkpoint.
#[cfg(any(test, feature = "internals"))]
pub fn latest_verified(comm: &Comm, dir: &Path) -> Result<(u64, PathBuf)> {
    latest_verified_with(comm, dir, &mut || {}).map(|(found, _)| found)
}

/// `latest_verified`, with the complete checkpoints it skipped as failing (newest first) and
/// why, the same on every rank.
pub fn latest_verified_skipping(comm: &Comm, dir: &Path) -> Result<((u64, PathBuf), Skipped)> {
    latest_verified_with(comm, dir, &mut || {})
}

/// `latest_verified_skipping`, calling `after_listing` after each listing (tests prune there).
fn latest_verified_with(
    comm: &Comm,
    dir: &Path,
    after_listing: &mut dyn FnMut(),
) -> Result<((u64, PathBuf), Skipped)> {
    // Threads per rank: the node's CPUs shared among its ranks.
    let (node, _) = comm.split_groups(None)?;
    let threads = (default_threads() / node.size().max(1)).max(1);
    let list = || {
        let names = complete_masters(comm, dir)?;
        let steps = names
            .lines()
            .filter_map(|n| Some((step_of(n)?, dir.join(n))));
        Ok(steps.collect())
    };
    let verified = |master: &Path| fails(comm, master, threads);
    let pruned = |master: &Path| gone(comm, master);
    let (found, skipped) = newest_passing(list, after_listing, verified, pruned)?;
    Ok((found.ok_or_else(|| none_complete(dir))?, skipped))
}

/// The names of the complete checkpoints' masters in `dir`, newest first, a line each: rank 0
/// lists the folder, so every rank weighs the same candidates.
fn complete_masters(comm: &Comm, dir: &Path) -> Result<String> {
    let mut names = String::new();
    let listed = match comm.is_root() {
        true => catch_panic(|| checkpoints(dir)).map(|found| {
            let complete = found.iter().filter(|c| c.complete);
            names = complete
                .filter_map(|c| c.master.file_name())
                .map(|n| format!("{}\n", n.to_string_lossy()))
                .collect();
        }),
        false => Ok(()),
    };
    comm.agree(listed)?;
    comm.broadcast_text(0, &mut names);
    Ok(names)
}

/// Whether `master` is no longer there, as rank 0 sees it; the same answer on every rank.
fn gone(comm: &Comm, master: &Path) -> Result<bool> {
    let mut missing = [u64::from(
        comm.is_root() && std::fs::symlink_metadata(master).is_err(),
    )];
    comm.broadcast(&mut missing);
    Ok(missing[0] == 1)
}

/// Why the checkpoint `master` fails the checks of `latest_verified` (None: it passes), this
/// rank doing its share of them; the same answer on every rank (an error only for a panic or
/// MPI).
fn fails(comm: &Comm, master: &Path, threads: usize) -> Result<Option<String>> {
    let (rank, ranks) = (comm.rank(), comm.size());
    // A master that cannot be described is no checkpoint to restart from.
    let datasets = describe(master, None);
    let sources = catch_panic(|| {
        Ok(match &datasets {
            Err(e) => Some(format!("its master cannot be read: {}", e.message)),
            Ok(all) => all
                .iter()
                .flat_map(|info| check_sources_part(info, Depth::Hdf5, rank, ranks))
                .map(|(_, problem)| problem.to_string())
                .next(),
        })
    });
    if let Some(why) = first_failure(comm, sources)? {
        return Ok(Some(why));
    }
    // Every source is there as recorded: the tiles' bytes are read, a share of them here.
    let all: Vec<&DatasetInfo> = datasets.iter().flatten().collect();
    let sums = catch_panic(|| {
        let jobs: Vec<_> = checksum_jobs(&all, |_, _| false)
            .into_iter()
            .skip(rank)
            .step_by(ranks.max(1))
            .collect();
        let problems = verify_tiles(&all, &jobs, threads, &|_| {});
        Ok(problems.into_iter().flatten().map(|p| p.to_string()).next())
    });
    first_failure(comm, sums)
}

/// The reason a check failed on the lowest rank it failed on (None: it passed on every rank),
/// on every rank; a failure of the check itself on any rank (a panic) fails all of them.
fn first_failure(comm: &Comm, local: Result<Option<String>>) -> Result<Option<String>> {
    let local = comm.agree(local)?;
    let failed = match local {
        Some(why) => Err(Error::new(H5TILE_ERR_CORRUPT, why)),
        None => Ok(()),
    };
    Ok(comm.agree(failed).err().map(|e| e.message))
}

fn none_complete(dir: &Path) -> Error {
    Error::new(
        H5TILE_ERR_NOT_FOUND,
        format!("no complete checkpoint in '{}'", dir.display()),
    )
}

/// Whether the file at `path` opens as HDF5 (a master that committed).
fn opens_as_hdf5(path: &Path) -> bool {
    let is = hdf5::is_hdf5(path);
    if is.is_err() {
        hdf5::take_error_stack();
    }
    is.unwrap_or(false)
}

/// What `dir` holds of each checkpoint, by name, newest first (for one step, the name
/// `checkpoint_path` gives first), completeness not yet looked at.
pub(crate) fn listing(dir: &Path) -> Result<Vec<Checkpoint>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return fail(
                H5TILE_ERR_NOT_FOUND,
                format!("no series folder '{}': no such folder", dir.display()),
            )
        }
        Err(e) => return Err(Error::io("cannot list series folder", dir, &e)),
    };
    let mut by_name: BTreeMap<String, Checkpoint> = BTreeMap::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("cannot list series folder", dir, &e))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let path = entry.path();
        if step_of(&name).is_some() {
            if path.is_file() {
                entry_of(&mut by_name, dir, &name).has_master = true;
            }
        } else if let Some(master) = tiles_of(&name).filter(|_| path.is_dir()) {
            entry_of(&mut by_name, dir, master).tile_dir = Some(path);
        } else if let Some(master) = temporary_of(&name) {
            entry_of(&mut by_name, dir, master).temporaries.push(path);
        }
    }
    let mut found: Vec<Checkpoint> = by_name.into_values().collect();
    for c in &mut found {
        c.temporaries.sort();
    }
    let canonical = |c: &Checkpoint| c.master == checkpoint_path(dir, c.step);
    found.sort_by(|a, b| (b.step, canonical(b), &a.master).cmp(&(a.step, canonical(a), &b.master)));
    Ok(found)
}

/// The entry of the checkpoint named `name` in `dir`, made when it is the first seen of it.
fn entry_of<'a>(
    by_name: &'a mut BTreeMap<String, Checkpoint>,
    dir: &Path,
    name: &str,
) -> &'a mut Checkpoint {
    by_name
        .entry(name.to_string())
        .or_insert_with(|| Checkpoint {
            step: step_of(name).unwrap_or_default(),
            master: dir.join(name),
            has_master: false,
            complete: false,
            tile_dir: None,
            temporaries: Vec::new(),
        })
}

/// The checkpoint's name whose tile folder is named `name` (`layout::tile_dir`).
fn tiles_of(name: &str) -> Option<&str> {
    let master = name.strip_suffix(".tiles")?;
    step_of(master)?;
    // Checkpoint names hold neither '%' nor '~', which tile folder names escape.
    (tile_dir(Path::new(master)).as_os_str() == name).then_some(master)
}

/// The checkpoint's name whose temporary master is named `name`: `.<name>.<16 hex>.tmp`, as
/// `layout::temporary_master` makes it; or whose write's lock file it is (`.lock`, as
/// `layout::in_flight` names it): a crashed write leaves both, and they go together.
fn temporary_of(name: &str) -> Option<&str> {
    let name = name.strip_prefix('.')?;
    let inner = (name.strip_suffix(".tmp")).or_else(|| name.strip_suffix(".lock"))?;
    let (master, generation) = inner.rsplit_once('.')?;
    let hex = generation.len() == 16 && generation.bytes().all(|b| b.is_ascii_hexdigit());
    (hex && step_of(master).is_some()).then_some(master)
}

/// Removes the file at `path`; one already gone is no failure.
fn remove_file(path: &Path, what: &str) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(what, path, &e)),
        _ => Ok(()),
    }
}

/// Removes the tile files and subfiles in the tile folder `dir` (files named as h5tile names
/// them: others are not ours to remove), then the folder when that left it empty.
fn remove_tile_dir(dir: &Path) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("cannot list tile folder", dir, &e)),
    };
    let mut first_error = None;
    for entry in entries.flatten() {
        let ours = entry
            .file_name()
            .to_str()
            .is_some_and(|n| generation_of(n).is_some());
        if ours {
            if let Err(e) = remove_file(&entry.path(), "cannot remove tile file") {
                first_error.get_or_insert(e);
            }
        }
    }
    match (first_error, std::fs::remove_dir(dir)) {
        (Some(e), _) => Err(e),
        // A folder holding files of others stays.
        (None, Err(e)) if e.raw_os_error() == Some(libc::ENOTEMPTY) => Ok(()),
        (None, Err(e)) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::io("cannot remove tile folder", dir, &e))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    // What the tool sees of a series, tested here beside what it stands on.
    use crate::layout::temporary_master;
    use crate::ops::write::{Layout, WriteOptions};
    use crate::status::H5TILE_ERR_IO;
    use crate::testkit::{flip_bits, tile_files, write_grid};
    use crate::tool::listing::{complete_steps, looks_like_series};

    /// Writes the kit's grid as `/g` of the checkpoint of `step` in `dir`, in `layout`; its path.
    fn checkpoint(dir: &Path, step: u64, layout: Layout) -> PathBuf {
        let path = checkpoint_path(dir, step);
        let options = WriteOptions {
            layout,
            ..WriteOptions::default()
        };
        write_grid(&path, "/g", options, |i, j| {
            (step * 100 + 10 * i + j) as f64
        });
        path
    }

    /// What a write of `step` killed before its commit leaves: its tile folder with a tile
    /// file, and a temporary master.
    fn crashed_write(dir: &Path, step: u64) -> (PathBuf, PathBuf) {
        let master = checkpoint_path(dir, step);
        let tiles = tile_dir(&master);
        std::fs::create_dir(&tiles).unwrap();
        let name = crate::layout::tile_file_name("/g", 0xdead, 0, 0);
        std::fs::write(tiles.join(name), b"half a tile").unwrap();
        let tmp = temporary_master(&master, 0xdead);
        std::fs::write(&tmp, b"half a master").unwrap();
        (tiles, tmp)
    }

    fn write_record(dir: &Path, step: u64) {
        let name = format!("ckpt.{step:012}.h5");
        std::fs::write(dir.join(LATEST_RECORD), format!("{step}\n{name}\n")).unwrap();
    }

    /// Flips a bit of the first element of tile `k` of `/g` in `master`, in the file that
    /// holds it.
    fn flip_tile_byte(master: &Path, k: usize) {
        let info = describe(master, Some("/g")).unwrap().pop().unwrap();
        let tile = &info.tiled().unwrap().tiles[k];
        let (at, _) = tile.placement(info.element_bytes).unwrap().file_range(0, 1);
        flip_bits(&tile.path, at, 0x10);
    }

    #[test]
    fn checkpoint_names_round_trip() {
        let dir = Path::new("/run/series");
        assert_eq!(
            checkpoint_path(dir, 42),
            Path::new("/run/series/ckpt.000000000042.h5")
        );
        for step in [0, 1, 42, 999_999_999_999, 1_000_000_000_000, u64::MAX] {
            let path = checkpoint_path(dir, step);
            let name = path.file_name().unwrap().to_str().unwrap();
            assert_eq!(step_of(name), Some(step), "{name}");
        }
        // Names sort as steps do, up to 12 digits.
        assert!(checkpoint_path(dir, 9) < checkpoint_path(dir, 10));
        assert_eq!(step_of("ckpt.7.h5"), Some(7));
        assert_eq!(step_of("ckpt.0012.h5"), Some(12));
        for other in [
            "ckpt..h5",
            "ckpt.h5",
            "ckpt.12.h5.tiles",
            ".ckpt.000000000012.h5.000000000000dead.tmp",
            "ckpt.-1.h5",
            "ckpt.+1.h5",
            "ckpt.1a.h5",
            "ckpt.12.h5.bak",
            "xckpt.12.h5",
            "ckpt.99999999999999999999.h5",
            LATEST_RECORD,
        ] {
            assert_eq!(step_of(other), None, "{other}");
        }
        // The leftovers' names lead back to their checkpoint.
        let master = checkpoint_path(dir, 12);
        let tiles = tile_dir(&master);
        let tmp = temporary_master(&master, 0xabc);
        let (t, m) = (tiles.file_name().unwrap(), tmp.file_name().unwrap());
        assert_eq!(tiles_of(t.to_str().unwrap()), Some("ckpt.000000000012.h5"));
        assert_eq!(
            temporary_of(m.to_str().unwrap()),
            Some("ckpt.000000000012.h5")
        );
        assert_eq!(temporary_of(".ckpt.12.h5.abc.tmp"), None);
        assert_eq!(tiles_of("notes.tiles"), None);
    }

    #[test]
    fn to_prune_keeps_the_newest_every_kth_and_the_latest() {
        let keep = |keep_last, keep_every| SeriesOptions {
            keep_last,
            keep_every,
        };
        let steps: Vec<u64> = (1..=10).collect();
        let cases: &[(&[u64], u64, SeriesOptions, &[u64])] = &[
            // keep_last only
            (&steps, 10, keep(3, 0), &[1, 2, 3, 4, 5, 6, 7]),
            (&steps, 10, keep(1, 0), &[1, 2, 3, 4, 5, 6, 7, 8, 9]),
            (&steps, 10, keep(20, 0), &[]),
            // keep_every as well
            (&steps, 10, keep(2, 4), &[1, 2, 3, 5, 6, 7]),
            (&steps, 10, keep(1, 5), &[1, 2, 3, 4, 6, 7, 8, 9]),
            // keep_last 0 keeps everything, whatever keep_every says
            (&steps, 10, keep(0, 0), &[]),
            (&steps, 10, keep(0, 3), &[]),
            // any order, duplicates
            (&[5, 1, 3, 5, 2, 4], 5, keep(2, 0), &[1, 2, 3]),
            // the latest stays though newer steps (a restart from an older one) fill
            // keep_last; those newer steps are never named
            (&[10, 12, 14], 10, keep(1, 0), &[]),
            (&[8, 9, 10, 12, 14], 10, keep(2, 0), &[8, 9]),
            // a latest that is not in the list removes nothing newer than itself
            (&[1, 2, 3], 2, keep(1, 0), &[1]),
        ];
        for (complete, latest, opts, want) in cases {
            assert_eq!(
                to_prune(complete, *latest, *opts),
                *want,
                "{complete:?} latest {latest} {opts:?}"
            );
        }
    }

    #[test]
    fn record_latest_writes_the_record_and_never_moves_it_back() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        assert_eq!(recorded(dir), None);
        checkpoint(dir, 3, Layout::Single);
        record_latest(dir, 3, true).unwrap();
        let text = std::fs::read_to_string(dir.join(LATEST_RECORD)).unwrap();
        assert_eq!(text, "3\nckpt.000000000003.h5\n");
        assert_eq!(recorded(dir), Some((3, checkpoint_path(dir, 3))));
        // An older step does not replace a newer complete one.
        record_latest(dir, 2, false).unwrap();
        assert_eq!(recorded(dir).unwrap().0, 3);
        // A newer step does.
        record_latest(dir, 5, false).unwrap();
        assert_eq!(recorded(dir).unwrap().0, 5);
        // Step 5 never committed: the older, complete step 4 replaces the record naming it.
        record_latest(dir, 4, false).unwrap();
        assert_eq!(recorded(dir).unwrap().0, 4);
        // No temporary is left behind.
        let names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        // A record that does not hold together is no record.
        std::fs::write(dir.join(LATEST_RECORD), "4\nckpt.000000000005.h5\n").unwrap();
        assert_eq!(recorded(dir), None);
        // A folder that is not there is an error naming it.
        let gone = dir.join("gone");
        let e = record_latest(&gone, 1, false).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_IO);
        assert!(e.message.contains("gone"), "{}", e.message);
    }

    #[test]
    fn latest_skips_incomplete_checkpoints_and_takes_the_record_as_a_hint() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        checkpoint(dir, 1, Layout::Vds);
        let two = checkpoint(dir, 2, Layout::Subfiles);
        // Step 3: a write killed before its commit (a tile folder, no master).
        crashed_write(dir, 3);
        // Step 4: a master that is not HDF5.
        std::fs::write(checkpoint_path(dir, 4), b"not HDF5").unwrap();
        assert_eq!(latest(dir).unwrap(), (2, two.clone()));
        assert_eq!(complete_steps(dir).unwrap(), [2, 1]);
        // A record naming an older step: the newer complete one wins.
        write_record(dir, 1);
        assert_eq!(latest(dir).unwrap(), (2, two.clone()));
        // A record naming a step that is not there, or not complete, is ignored.
        for nowhere in [9, 3, 4] {
            write_record(dir, nowhere);
            assert_eq!(latest(dir).unwrap(), (2, two.clone()), "record {nowhere}");
        }
        // The newest complete step, under a name of fewer digits, is found too.
        let five = dir.join("ckpt.5.h5");
        std::fs::copy(&two, &five).unwrap();
        assert_eq!(latest(dir).unwrap(), (5, five));
        let all = checkpoints(dir).unwrap();
        let steps: Vec<(u64, bool)> = all.iter().map(|c| (c.step, c.complete)).collect();
        assert_eq!(
            steps,
            [(5, true), (4, false), (3, false), (2, true), (1, true)]
        );
        let three = &all[2];
        assert!(!three.has_master && three.tile_dir.is_some());
        assert_eq!(three.temporaries.len(), 1);
        assert!(three.bytes() > 0);
    }

    #[test]
    fn latest_is_not_found_in_an_empty_or_missing_folder() {
        let d = tempfile::tempdir().unwrap();
        let e = latest(d.path()).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_NOT_FOUND);
        assert!(
            e.message.contains(&*d.path().to_string_lossy()),
            "{}",
            e.message
        );
        // Leftovers and foreign files are no checkpoint.
        crashed_write(d.path(), 1);
        std::fs::write(d.path().join("notes.h5"), b"x").unwrap();
        assert_eq!(complete_steps(d.path()).unwrap(), Vec::<u64>::new());
        assert_eq!(latest(d.path()).unwrap_err().status, H5TILE_ERR_NOT_FOUND);
        let missing = d.path().join("missing");
        for e in [
            latest(&missing).unwrap_err(),
            complete_steps(&missing).unwrap_err(),
            latest_verified(&Comm::solo(), &missing).unwrap_err(),
        ] {
            assert_eq!(e.status, H5TILE_ERR_NOT_FOUND);
            assert!(
                e.message.contains(&*missing.to_string_lossy()),
                "{}",
                e.message
            );
        }
        let e = latest_verified(&Comm::solo(), d.path()).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_NOT_FOUND);
        assert!(!looks_like_series(&missing));
    }

    #[test]
    fn prune_removes_old_checkpoints_and_crash_leftovers_only() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let one = checkpoint(dir, 1, Layout::Single);
        let two = checkpoint(dir, 2, Layout::Subfiles);
        let four = checkpoint(dir, 4, Layout::Vds);
        let five = checkpoint(dir, 5, Layout::Vds);
        let eight = checkpoint(dir, 8, Layout::Vds);
        // A temporary beside step 2's master (a rewrite that crashed): it goes with step 2.
        let two_tmp = temporary_master(&two, 0xbeef);
        std::fs::write(&two_tmp, b"x").unwrap();
        let two_tiles = tile_files(&two);
        assert_eq!(two_tiles.len(), 1, "one subfile");
        // A file of someone else's in step 2's tile folder: not ours, it stays (so does the
        // folder).
        let foreign_tile = tile_dir(&two).join("README");
        std::fs::write(&foreign_tile, b"x").unwrap();
        // Crashed writes of an older step (3) and of newer ones (6, 7).
        let (tiles3, tmp3) = crashed_write(dir, 3);
        let (tiles6, tmp6) = crashed_write(dir, 6);
        let (tiles7, tmp7) = crashed_write(dir, 7);
        // A record a crash left under its temporary name goes; names like it that are not
        // record_latest's stay.
        let record_tmp = dir.join(format!(".{LATEST_RECORD}.{:016x}.tmp", 0xfeedu64));
        std::fs::write(&record_tmp, b"5\nckpt.000000000005.h5\n").unwrap();
        let foreign = [
            "notes.txt",
            "ckpt.000000000001.h5.bak",
            ".hidden",
            ".latest.tmp",
            ".latest.feed.tmp",
            ".latest.000000000000feed.bak",
        ]
        .map(|n| dir.join(n));
        for f in &foreign {
            std::fs::write(f, b"x").unwrap();
        }
        write_record(dir, 5);
        let record = std::fs::read(dir.join(LATEST_RECORD)).unwrap();

        // Newest 2 (8, 5), every 4th (4, 8) and the latest (5) stay: 1 and 2 go.
        let opts = SeriesOptions {
            keep_last: 2,
            keep_every: 4,
        };
        prune(dir, 5, opts).unwrap();
        assert!(!one.exists());
        assert!(!two.exists() && !two_tmp.exists());
        for t in &two_tiles {
            assert!(!t.exists(), "{}", t.display());
        }
        assert!(foreign_tile.exists());
        assert!(!tiles3.exists() && !tmp3.exists());
        assert!(!record_tmp.exists());
        for kept in [&four, &five, &eight, &tiles6, &tmp6, &tiles7, &tmp7] {
            assert!(kept.exists(), "{}", kept.display());
        }
        for kept in [&four, &five, &eight] {
            assert_eq!(tile_files(kept).len(), 4, "{}", kept.display());
        }
        for f in &foreign {
            assert!(f.exists(), "{}", f.display());
        }
        assert_eq!(std::fs::read(dir.join(LATEST_RECORD)).unwrap(), record);
        assert_eq!(complete_steps(dir).unwrap(), [8, 5, 4]);
        assert_eq!(latest(dir).unwrap().0, 8);

        // Keeping everything still clears older crash leftovers, and nothing else.
        let (tiles0, tmp0) = crashed_write(dir, 0);
        prune(dir, 5, SeriesOptions::default()).unwrap();
        assert!(!tiles0.exists() && !tmp0.exists());
        assert_eq!(complete_steps(dir).unwrap(), [8, 5, 4]);
        assert!(tiles6.exists() && tmp7.exists());
        assert_eq!(
            prune(&dir.join("missing"), 5, opts).unwrap_err().status,
            H5TILE_ERR_NOT_FOUND
        );
    }

    #[test]
    fn an_interrupted_pruning_is_told_apart_and_the_next_prune_removes_it() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let three = checkpoint(dir, 3, Layout::Vds);
        checkpoint(dir, 4, Layout::Vds);
        checkpoint(dir, 5, Layout::Vds);
        // The pruning after step 5 killed once step 3's master and a tile file were gone
        // (`prune` removes the master first); then a write of step 6 killed before its commit.
        std::fs::remove_file(&three).unwrap();
        std::fs::remove_file(&tile_files(&three)[0]).unwrap();
        let (tiles6, tmp6) = crashed_write(dir, 6);
        let found = checkpoints(dir).unwrap();
        let latest = found.iter().find(|c| c.complete).map(|c| c.step);
        let kinds: Vec<(u64, bool)> = found
            .iter()
            .filter(|c| !c.complete)
            .map(|c| (c.step, c.pruning_interrupted(latest)))
            .collect();
        assert_eq!(kinds, [(6, false), (3, true)]);
        let left = &found[3];
        assert_eq!(left.own_files(), tile_files(&three));
        assert_eq!(
            found[0].own_files(),
            [
                tiles6.join(crate::layout::tile_file_name("/g", 0xdead, 0, 0)),
                tmp6
            ]
        );
        assert!(left.used_bytes() > 0 && found[0].used_bytes() > 0);
        // The same pruning again leaves the write of step 6, newer than the latest.
        prune(dir, 5, SeriesOptions::default()).unwrap();
        assert!(!tile_dir(&three).exists() && tiles6.exists());
    }

    #[test]
    fn latest_lists_again_when_its_candidate_is_pruned_under_it() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        checkpoint(dir, 3, Layout::Vds);
        let four = checkpoint(dir, 4, Layout::Subfiles);
        // Another job commits step 5 right after the listing and prunes 4 (keep_last 1); step
        // 3 stays (keep_every 3). Step 4 no longer opens: the answer is step 5, not step 3,
        // which a reader that had seen step 4 would take for the latest going back.
        let mut round = 0;
        let found = latest_with(dir, &mut || {
            round += 1;
            if round == 1 {
                checkpoint(dir, 5, Layout::Vds);
                std::fs::remove_file(&four).unwrap();
            }
        })
        .unwrap();
        assert_eq!(found, (5, checkpoint_path(dir, 5)));
        assert_eq!(round, 2, "the folder is listed once more");
        // A master that is there but does not open is passed over, with no second listing.
        std::fs::write(checkpoint_path(dir, 5), b"not HDF5").unwrap();
        let mut rounds = 0;
        let found = latest_with(dir, &mut || rounds += 1).unwrap();
        assert_eq!((found.0, rounds), (3, 1));
    }

    #[test]
    fn latest_verified_lists_again_when_its_candidate_is_pruned_under_it() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let solo = Comm::solo();
        checkpoint(dir, 3, Layout::Vds);
        let four = checkpoint(dir, 4, Layout::Vds);
        let five = checkpoint(dir, 5, Layout::Subfiles);
        // Another job commits steps 6 and 7 while step 5 is being verified, and prunes 4 and 5
        // (keep_last 2); step 3 stays (keep_every 3). Step 5's check fails as its master is
        // gone: the answer is step 7, not the older step 3 nor NOT_FOUND.
        let mut round = 0;
        let (found, _) = latest_verified_with(&solo, dir, &mut || {
            round += 1;
            if round == 1 {
                checkpoint(dir, 6, Layout::Vds);
                checkpoint(dir, 7, Layout::Single);
                for gone in [&four, &five] {
                    std::fs::remove_file(gone).unwrap();
                }
            }
        })
        .unwrap();
        assert_eq!(found, (7, checkpoint_path(dir, 7)));
        assert_eq!(round, 2, "the folder is listed once more");
        // A candidate that fails and is still there is skipped, with no second listing.
        let mut rounds = 0;
        flip_tile_byte(&checkpoint_path(dir, 7), 0);
        let (found, _) = latest_verified_with(&solo, dir, &mut || rounds += 1).unwrap();
        assert_eq!((found.0, rounds), (6, 1));
    }

    #[test]
    fn latest_verified_skips_checkpoints_whose_tiles_fail() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let solo = Comm::solo();
        let one = checkpoint(dir, 1, Layout::Vds);
        let two = checkpoint(dir, 2, Layout::Single);
        let three = checkpoint(dir, 3, Layout::Subfiles);
        let four = checkpoint(dir, 4, Layout::Vds);
        crashed_write(dir, 5);
        assert_eq!(latest_verified(&solo, dir).unwrap(), (4, four.clone()));
        // Step 4 loses a tile file; step 3 has a flipped byte in a subfile's tile; step 2 one
        // in its own file's tile.
        std::fs::remove_file(&tile_files(&four)[1]).unwrap();
        flip_tile_byte(&three, 2);
        flip_tile_byte(&two, 3);
        let (found, skipped) = latest_verified_skipping(&solo, dir).unwrap();
        assert_eq!(found, (1, one.clone()));
        // Each skipped step says why: its missing tile file, its bad bytes.
        let steps: Vec<u64> = skipped.iter().map(|(s, _)| *s).collect();
        assert_eq!(steps, [4, 3, 2]);
        assert!(skipped[0].1.contains("does not exist"), "{}", skipped[0].1);
        for (step, why) in &skipped[1..] {
            assert!(why.contains("checksum"), "step {step}: {why}");
        }
        // Without checksums, they all look complete.
        assert_eq!(latest(dir).unwrap(), (4, four));
        flip_tile_byte(&one, 0);
        let e = latest_verified(&solo, dir).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_NOT_FOUND);
        assert!(e.message.contains(&*dir.to_string_lossy()), "{}", e.message);
    }
}
