//! `cp SERIES DST` and `rm SERIES`: a series folder copied or removed whole. A copy takes every
//! complete checkpoint (each as `cp` copies a master, verified) and the record `latest`, and
//! says what it leaves (steps that are not complete checkpoints, files that are not the
//! series'). A removal takes the leftovers first, then the checkpoints oldest first, the record
//! and the folder last, so that one stopped midway leaves a series that still reads.

use crate::cp;
use crate::failure::{Failure, FailureJson};
use crate::progress::{Progress, When};
use crate::series::{latest_complete, why_incomplete, Incomplete};
use crate::show;
use h5tile::internals::tool::{
    checkpoints, make_folders, new_generation, recorded, remove_master, Checkpoint, CopyPlan,
    LATEST_RECORD,
};
use serde::Serialize;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Whether `name` is a temporary record, as the library's `record_latest` names them
/// (`.latest.<16 hex digits>.tmp`): a crash between writing one and its rename leaves it.
fn is_record_temporary(name: &str) -> bool {
    let generation = name
        .strip_prefix(&format!(".{LATEST_RECORD}."))
        .and_then(|rest| rest.strip_suffix(".tmp"));
    generation.is_some_and(|g| g.len() == 16 && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The entries of folder `dir`, sorted.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    all.sort();
    all
}

/// A file of a series folder that a copy leaves where it is, and why.
#[derive(Serialize)]
struct NotCopied {
    path: String,
    /// The step it belongs to, or null for a file that is not a checkpoint's.
    step: Option<u64>,
    why: String,
}

/// What of series `dir` (its checkpoints `found`) a copy does not take: the files of steps
/// that are not complete checkpoints, the temporary masters of complete ones, temporary
/// records, and files that are not the series'.
fn not_copied(dir: &Path, found: &[Checkpoint]) -> Vec<NotCopied> {
    let latest = latest_complete(found);
    let mut series_files: BTreeSet<PathBuf> = BTreeSet::from([dir.join(LATEST_RECORD)]);
    let mut left = Vec::new();
    for c in found {
        let files = c.has_master.then_some(&c.master).into_iter();
        let files = files.chain(&c.tile_dir).chain(&c.temporaries);
        for path in files {
            series_files.insert(path.clone());
            let why = match (c.complete, Incomplete::of(c, latest)) {
                (true, _) => format!(
                    "a temporary master of step {}: a write of it that did not commit",
                    c.step
                ),
                (false, Incomplete::PruningInterrupted) => format!(
                    "step {}: pruning interrupted: {}",
                    c.step,
                    why_incomplete(c, latest)
                ),
                (false, _) => format!(
                    "step {} is incomplete: {}",
                    c.step,
                    why_incomplete(c, latest)
                ),
            };
            // A complete checkpoint's master and tile folder are copied.
            let copied = c.complete && (path == &c.master || Some(path) == c.tile_dir.as_ref());
            if !copied {
                left.push(NotCopied {
                    path: show::path(path),
                    step: Some(c.step),
                    why,
                });
            }
        }
    }
    for path in entries(dir) {
        if series_files.contains(&path) {
            continue;
        }
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        left.push(NotCopied {
            path: show::path(&path),
            step: None,
            why: match is_record_temporary(&name) {
                true => "a temporary record: a crash left it".to_string(),
                false => "not part of the series".to_string(),
            },
        });
    }
    left
}

/// One checkpoint's copy, as `cp --json` writes a master's, with its step.
#[derive(Serialize)]
struct CheckpointCopy {
    step: u64,
    #[serde(flatten)]
    report: cp::Report,
}

/// The record `latest` copied.
#[derive(Serialize)]
struct RecordCopy {
    from: String,
    to: String,
    /// The step it names, or null when it names none (it is copied as it is).
    step: Option<u64>,
    bytes: u64,
    /// "bytes": checked byte for byte.
    verified: &'static str,
}

/// `cp SERIES DST --json`'s document.
#[derive(Serialize)]
struct SeriesCopy {
    source: String,
    destination: String,
    /// Oldest first, as they were copied.
    checkpoints: Vec<CheckpointCopy>,
    record: Option<RecordCopy>,
    not_copied: Vec<NotCopied>,
}

/// What a copy has made so far, removed again if it fails: the checkpoints that were not
/// there before, and the folders it made (the series' and those missing above it).
struct Undo {
    masters: Vec<PathBuf>,
    folders: Vec<PathBuf>,
}

impl Undo {
    fn run(self) {
        for master in self.masters.iter().rev() {
            let _ = remove_master(master, false);
        }
        for folder in self.folders.iter().rev() {
            let _ = std::fs::remove_dir(folder);
        }
    }

    /// Makes folder `dir` and those missing above it, noting each.
    fn make_folder(&mut self, dir: &Path) -> Result<(), Failure> {
        Ok(make_folders(dir, &mut self.folders)?)
    }
}

/// Where `cp SERIES DST` puts the series: into DST, under the series' name, when DST is a
/// folder or ends with '/' (a folder to be made), as `cp FILE DST` does; else DST itself.
fn copy_target(src: &Path, dst: &Path) -> Result<PathBuf, Failure> {
    use std::os::unix::ffi::OsStrExt;
    if !dst.is_dir() && !dst.as_os_str().as_bytes().ends_with(b"/") {
        return Ok(dst.to_path_buf());
    }
    // "." and "run/series/.." have a name only once resolved.
    let resolved = std::fs::canonicalize(src).unwrap_or_else(|_| src.to_path_buf());
    match resolved.file_name() {
        Some(name) => Ok(dst.join(name)),
        None => Err(Failure::usage(format!(
            "cannot copy '{}' into '{}': it has no name to copy under; give the new folder's",
            src.display(),
            dst.display()
        ))),
    }
}

/// `h5tile cp SERIES DST`.
pub fn cp(src: &Path, dst: &Path, force: bool, json: bool, when: When) -> Result<(), Failure> {
    let found = checkpoints(src)?;
    let target = copy_target(src, dst)?;
    let resolved = |p: &Path| std::fs::canonicalize(p).ok();
    let parent = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let inside = match (resolved(src), resolved(parent)) {
        (Some(s), Some(parent)) => parent
            .join(target.file_name().unwrap_or_default())
            .starts_with(s),
        _ => false,
    };
    if inside {
        return Err(Failure::usage(format!(
            "cannot copy '{}' to '{}': it is in the series",
            src.display(),
            target.display()
        )));
    }
    if target.exists() && (!force || !target.is_dir()) {
        let why = match target.is_dir() {
            true => "exists (--force replaces its checkpoints of the same steps)",
            false => "exists and is not a folder",
        };
        return Err(Failure::usage(format!(
            "cannot copy to '{}': '{}' {why}",
            target.display(),
            target.display()
        )));
    }
    let complete: Vec<&Checkpoint> = found.iter().rev().filter(|c| c.complete).collect();
    if complete.is_empty() {
        return Err(Failure::usage(format!(
            "no complete checkpoint in '{}': nothing to copy",
            src.display()
        )));
    }
    // Every copy planned before any is made: a refusal or a missing tile leaves nothing.
    let mut plans = Vec::new();
    for c in &complete {
        let name = c.master.file_name().unwrap_or_default();
        let to = target.join(name);
        let existed = to.exists();
        plans.push((c, CopyPlan::new(&c.master, &to, force, false)?, to, existed));
    }
    let record = src.join(LATEST_RECORD);
    let record_bytes = match record.is_file() {
        true => Some(
            std::fs::read(&record)
                .map_err(|e| Failure::io(format_args!("cannot read '{}'", record.display()), &e))?,
        ),
        false => None,
    };
    let total = plans
        .iter()
        .map(|(_, p, _, _)| p.total_bytes())
        .sum::<u64>()
        + 2 * record_bytes.as_ref().map_or(0, |b| b.len() as u64);
    let progress = Progress::bytes(total, "copying", when);
    let mut undo = Undo {
        masters: Vec::new(),
        folders: Vec::new(),
    };
    if let Err(e) = undo.make_folder(&target) {
        progress.finish();
        undo.run();
        return Err(e);
    }
    let mut copies = Vec::new();
    for (c, plan, to, existed) in plans {
        match plan.run(&|n| progress.add(n)) {
            Ok(done) => {
                if !existed {
                    undo.masters.push(to);
                }
                copies.push(CheckpointCopy {
                    step: c.step,
                    report: cp::Report::of(&c.master, &done),
                });
            }
            Err(e) => {
                progress.finish();
                undo.run();
                return Err(e.into());
            }
        }
    }
    let record = match record_bytes {
        None => None,
        Some(bytes) => match copy_record(&record, &bytes, &target, &|n| progress.add(n)) {
            Ok(copied) => Some(RecordCopy {
                from: show::path(&record),
                to: show::path(&copied),
                step: recorded(src).map(|(step, _)| step),
                bytes: bytes.len() as u64,
                verified: "bytes",
            }),
            Err(e) => {
                progress.finish();
                undo.run();
                return Err(e);
            }
        },
    };
    progress.finish();
    let report = SeriesCopy {
        source: show::path(src),
        destination: show::path(&target),
        checkpoints: copies,
        record,
        not_copied: not_copied(src, &found),
    };
    match json {
        true => show::json(&report),
        false => {
            print_copy(&report);
            Ok(())
        }
    }
}

/// Copies the record (`bytes`, read from `from`) into `target`: written under a temporary
/// name (as the library names them, so that a series' pruning clears one a crash left),
/// synced, read back and compared, then renamed into place; the folder synced. The copy's
/// path.
fn copy_record(
    from: &Path,
    bytes: &[u8],
    target: &Path,
    progress: &dyn Fn(u64),
) -> Result<PathBuf, Failure> {
    let to = target.join(LATEST_RECORD);
    let tmp = target.join(format!(".{LATEST_RECORD}.{:016x}.tmp", new_generation()));
    let failed = |what: &str, path: &Path, e: std::io::Error| {
        let _ = std::fs::remove_file(&tmp);
        Failure::io(format_args!("{what} '{}'", path.display()), &e)
    };
    std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .map_err(|e| failed("cannot write", &tmp, e))?;
    progress(bytes.len() as u64);
    let back = std::fs::read(&tmp).map_err(|e| failed("cannot read", &tmp, e))?;
    if back != bytes {
        let _ = std::fs::remove_file(&tmp);
        return Err(Failure::problems(format!(
            "copy '{}' of '{}' differs from it",
            tmp.display(),
            from.display()
        )));
    }
    progress(bytes.len() as u64);
    std::fs::rename(&tmp, &to).map_err(|e| failed("cannot rename into place", &to, e))?;
    std::fs::File::open(target)
        .and_then(|f| f.sync_all())
        .map_err(|e| Failure::io(format_args!("cannot sync '{}'", target.display()), &e))?;
    Ok(to)
}

fn print_copy(r: &SeriesCopy) {
    let steps: Vec<String> = r.checkpoints.iter().map(|c| c.step.to_string()).collect();
    let (mut files, mut bytes, mut by_sums) = (0, 0, 0);
    for c in &r.checkpoints {
        let (n, b) = c.report.copied();
        files += n;
        bytes += b;
        by_sums += c.report.by_checksums();
    }
    let masters = r.checkpoints.len();
    let record = match &r.record {
        Some(RecordCopy { step: Some(s), .. }) => {
            format!("the record '{LATEST_RECORD}' (step {s})")
        }
        Some(_) => format!("the record '{LATEST_RECORD}', as it is (it names no checkpoint)"),
        None => format!("no record '{LATEST_RECORD}' (the series has none)"),
    };
    println!(
        "copied series '{}' to '{}': {masters} complete checkpoint{} (steps {}) with their \
         {files} source file{} ({}): {by_sums} verified against checksums, {} byte for byte, \
         the masters byte for byte; and {record}",
        r.source,
        r.destination,
        if masters == 1 { "" } else { "s" },
        steps.join(", "),
        if files == 1 { "" } else { "s" },
        show::bytes(bytes),
        files - by_sums,
    );
    for c in &r.checkpoints {
        for removed in c.report.removed() {
            println!("removed '{removed}' (a tile file of the replaced copy)");
        }
    }
    for n in &r.not_copied {
        println!("not copied: '{}' ({})", n.path, n.why);
    }
}

/// `rm SERIES --json`'s document.
#[derive(Serialize)]
struct SeriesRemoval {
    dir: String,
    dry_run: bool,
    /// In the order removed: leftovers, checkpoints oldest first, the record, the folder.
    removed: Vec<String>,
    /// Tile files the masters name that were not there.
    missing: Vec<String>,
    /// What stays: the folder's files that are not the series', then sources outside tile
    /// folders.
    kept: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<FailureJson>,
}

/// A removal under way (or, in a dry run, planned).
struct Removing {
    dry_run: bool,
    removed: Vec<PathBuf>,
    missing: Vec<PathBuf>,
    /// Sources outside the tile folders, which other files may share.
    sources: Vec<PathBuf>,
}

impl Removing {
    /// Removes the file `path` (a dry run notes it); one already gone is no failure.
    fn file(&mut self, path: &Path) -> Result<(), String> {
        if self.removed.iter().any(|p| p == path) {
            return Ok(());
        }
        if !self.dry_run {
            match std::fs::remove_file(path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(format!("cannot remove '{}': {e}", path.display())),
                Ok(()) => {}
            }
        }
        self.removed.push(path.to_path_buf());
        Ok(())
    }

    /// Removes the folder `dir` if nothing else is left in it (a dry run: if all that is in it
    /// is noted as removed).
    fn folder_if_empty(&mut self, dir: &Path) {
        if self.removed.iter().any(|p| p == dir) || !dir.is_dir() {
            return;
        }
        let empty = match self.dry_run {
            true => entries(dir).iter().all(|e| self.removed.contains(e)),
            false => std::fs::remove_dir(dir).is_ok(),
        };
        if empty {
            self.removed.push(dir.to_path_buf());
        }
    }

    /// Removes step `c`: its master (through `remove_master` when it is a complete
    /// checkpoint: the master, then the tiles it names), its tile folder's files of h5tile's,
    /// the folder if that empties it, then its temporary masters.
    fn step(&mut self, c: &Checkpoint) -> Result<(), String> {
        if c.complete {
            let removal = remove_master(&c.master, self.dry_run).map_err(|e| {
                let why = Failure::from(e).message;
                format!(
                    "cannot remove step {} ('{}'): {why}",
                    c.step,
                    c.master.display()
                )
            })?;
            self.removed.extend(removal.removed);
            self.missing.extend(removal.missing);
            self.sources.extend(removal.kept);
            if let Some(why) = removal.failed {
                return Err(why);
            }
        } else if c.has_master {
            self.file(&c.master)?;
        }
        let own = c.own_files();
        let (tiles, temporaries): (Vec<&PathBuf>, Vec<&PathBuf>) = own
            .iter()
            .partition(|f| f.parent() == c.tile_dir.as_deref());
        for tile in tiles {
            self.file(tile)?;
        }
        if let Some(dir) = &c.tile_dir {
            self.folder_if_empty(dir);
        }
        for tmp in temporaries {
            self.file(tmp)?;
        }
        Ok(())
    }
}

/// `h5tile rm SERIES`: stops at the first removal that fails.
pub fn rm(dir: &Path, dry_run: bool, json: bool) -> Result<(), Failure> {
    let found = checkpoints(dir)?;
    let mut removing = Removing {
        dry_run,
        removed: Vec::new(),
        missing: Vec::new(),
        sources: Vec::new(),
    };
    let oldest_first: Vec<&Checkpoint> = found.iter().rev().collect();
    // The leftovers first (nothing reads them), then the checkpoints oldest first: stopped
    // midway, the newest checkpoints and the record still read as before.
    let leftovers = oldest_first.iter().filter(|c| !c.complete);
    let complete = oldest_first.iter().filter(|c| c.complete);
    let mut failed = leftovers
        .chain(complete)
        .try_for_each(|c| removing.step(c))
        .err();
    if failed.is_none() {
        let record_temporaries = entries(dir).into_iter().filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(is_record_temporary)
        });
        let record = Some(dir.join(LATEST_RECORD)).filter(|r| r.is_file());
        failed = record_temporaries
            .chain(record)
            .try_for_each(|f| removing.file(&f))
            .err();
    }
    if failed.is_none() {
        removing.folder_if_empty(dir);
    }
    // What is left in the folder once all is done (nothing, when the folder went).
    let stays: Vec<PathBuf> = match failed {
        Some(_) => Vec::new(),
        None => entries(dir)
            .into_iter()
            .filter(|e| !removing.removed.contains(e))
            .collect(),
    };
    let failure = failed.map(Failure::problems);
    let paths = |all: &[PathBuf]| all.iter().map(|p| show::path(p)).collect::<Vec<_>>();
    let report = SeriesRemoval {
        dir: show::path(dir),
        dry_run,
        removed: paths(&removing.removed),
        missing: paths(&removing.missing),
        kept: paths(&[&stays[..], &removing.sources[..]].concat()),
        failure: failure.as_ref().map(Failure::json),
    };
    if json {
        show::json(&report)?;
        return failure.map_or(Ok(()), |f| Err(f.reported()));
    }
    let verb = if dry_run { "would remove" } else { "removed" };
    for path in &report.removed {
        println!("{verb} '{path}'");
    }
    for path in &report.missing {
        println!("missing '{path}' (named by a master, not there)");
    }
    for path in &stays {
        println!("kept '{}' (not part of the series)", path.display());
    }
    for path in &removing.sources {
        println!("kept '{}' (outside the tile folder)", path.display());
    }
    failure.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::is_record_temporary;

    #[test]
    fn temporary_records_are_named_as_the_library_names_them() {
        assert!(is_record_temporary(".latest.000000000000feed.tmp"));
        for other in [
            ".latest.tmp",
            ".latest.feed.tmp",
            ".latest.000000000000feed.bak",
            "latest",
        ] {
            assert!(!is_record_temporary(other), "{other}");
        }
    }
}
