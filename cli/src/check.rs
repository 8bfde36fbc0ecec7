//! `h5tile check FILE...`: whether every virtual dataset's sources are there as its master
//! says (present, of the recorded size, and, unless `--fast`, opened with HDF5 and holding the
//! mapped dataset), then, unless `--fast`, whether every checksummed tile's bytes match their
//! checksums (the single-file layout's too), read on several threads. A series folder (DIR)
//! stands for its latest complete checkpoint (`--all`: every complete one).

use crate::check_parts::{check_sources_shared, depth};
use crate::failure::{Failure, FailureJson, EXIT_PROBLEMS, EXIT_USAGE};
use crate::progress::{Progress, When};
use crate::series::{is_series, latest_complete, why_incomplete, Incomplete};
use crate::show;
use h5tile::internals::tool::{
    checkpoints, checksum_jobs, checksummed_bytes, default_threads, describe, job_bytes, latest,
    verify_tiles, Checkpoint, DatasetInfo, Problem, VirtualInfo, VirtualLayout,
};
use serde::Serialize;
use std::path::{Path, PathBuf};

pub const LONG_ABOUT: &str = "\
Check every virtual dataset of each FILE: that each source file it maps is present; for tiles
h5tile wrote, that the file has the size the master records (and a subfile the stamp of the
write its name says), which is all h5tile's reads rely on; for every source (h5tile's, h5py's,
Legate's), that the file opens with HDF5, as other readers open it (they fail on a damaged
superblock or header that sizes do not show), and holds the mapped dataset with a shape that
holds the mapped box and a type HDF5 converts. For many source files the HDF5 opens are shared
among processes (up to --threads). Then every tile with recorded checksums is read and each
1 MiB block compared with its XXH3-64 checksum, on several threads; so are the tiles h5tile
wrote into a contiguous dataset in the single-file layout. A read of the dataset would fail
(or, for sources h5tile did not write, silently read fill values) on the same problems.

--fast reads the master and looks at each source's size and stamp: it opens with HDF5 only
the sources whose bytes the master does not record (h5py's, Legate's), and reads no tile
bytes: 0.7 s for 65,536 tile files on a 2-core VM, where opening each with HDF5 took 2.8 s.

Output: one line per problem, naming the master, the dataset, the tile file or subfile, the box
of the dataset it holds, what is wrong and, for a checksum mismatch, the byte range in the
file (from the first byte to the last: in the single-file layout the rows between hold other
tiles); then one line per FILE saying whether it is well, with the bytes of tile data verified
against their checksums and, where some are not, how many failed (blocks that do not match or
cannot be read, and the tiles whose file is missing or wrong, unread). With --json, one
document {\"ok\", \"files\": [{\"file\", \"error\", \"datasets\": [{\"name\", \"tiles\",
\"files\", \"checksummed_tiles\", \"verified_bytes\", \"failed_bytes\", \"problems\":
[{\"file\", \"kind\", \"offset\", \"shape\", \"problem\", \"bytes\", \"tile_bytes\"}]}]}],
\"failure\"} (\"tile_bytes\": the tile's own bytes that failed, or null for a problem of its
file; \"failure\": present when the exit status is not 0, as every command's).

A DIR that is a series folder (numbered checkpoints ckpt.<step>.h5 and the record `latest`, as
h5tile's series write them) stands for its latest complete checkpoint, checked as a FILE is,
with a line saying which step it is; with --all, for every complete checkpoint, newest first.
Steps whose write did not commit (only a tile folder or temporary masters left, or a master
that does not open as HDF5) are named as incomplete, and steps older than the latest complete
one with no master as a pruning interrupted (a commit's pruning removes a checkpoint's master
first; the next commit removes the rest); neither is checked: readers pass over them, so they
are no problem. With --json, the document also holds \"series\": [{\"dir\", \"latest\",
\"checked\", \"incomplete\": [{\"step\", \"why\", \"kind\" (\"not_committed\",
\"pruning_interrupted\" or \"not_hdf5\")}], \"error\"}], and each file of a series its
\"step\".

Exit status: 0 when all is well; 1 when problems were found; 2 when a FILE cannot be opened, or
a DIR holds no complete checkpoint (the others are still checked).";

pub const EXAMPLES: &str = "\
Examples:
  h5tile check ckpt/step100.h5
  h5tile check --fast ckpt/*.h5            # sources present and of the right size only
  h5tile check --json out.h5 | jq '.files[].datasets[].problems'
  h5tile check run/series/                 # its latest complete checkpoint
  h5tile check --all run/series/           # every complete checkpoint in it";

#[derive(clap::Args)]
pub struct Args {
    /// The HDF5 files (masters, or any HDF5 file), or series folders (DIR)
    #[arg(required = true, value_name = "FILE|DIR")]
    files: Vec<PathBuf>,
    /// Check h5tile's sources' presence, sizes and stamps only: no HDF5 open of them, no tile
    /// bytes read to verify their checksums
    #[arg(long)]
    fast: bool,
    /// Threads reading tiles to verify checksums, and processes opening source files with
    /// HDF5 (for datasets of many files) [default: the CPUs, at most 16]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// For a series folder (DIR): check every complete checkpoint, not only the latest
    #[arg(long)]
    all: bool,
}

/// What was found of one dataset.
struct DatasetCheck {
    info: DatasetInfo,
    problems: Vec<Problem>,
    /// Checksummed bytes read and found to match.
    verified_bytes: u64,
    /// Checksummed bytes that did not: in blocks that do not match or cannot be read, or in
    /// tiles whose source is missing or wrong (not read).
    failed_bytes: u64,
}

/// What was found of one file: its datasets, or why it cannot be opened.
struct FileCheck {
    file: PathBuf,
    datasets: Result<Vec<DatasetCheck>, String>,
    /// Its step, for a checkpoint of a series folder.
    step: Option<u64>,
}

/// What a series folder given as DIR came to.
struct SeriesCheck {
    dir: PathBuf,
    /// The index in the file checks of the first that is this folder's (its checkpoints, or
    /// the folder itself when it holds none to check): its lines are written before it.
    first: usize,
    /// The steps checked, newest first (the first is the latest complete checkpoint).
    checked: Vec<u64>,
    /// The steps that are not complete checkpoints.
    incomplete: Vec<Checkpoint>,
    /// The newest complete step the folder holds.
    latest: Option<u64>,
    /// Why nothing of it is checked (no complete checkpoint), else None.
    error: Option<String>,
}

/// A file to check: a FILE, or a checkpoint of a series folder (its step); or a folder with
/// none to check, and why.
struct Target {
    file: PathBuf,
    step: Option<u64>,
    nothing: Option<String>,
}

/// The files that `args.files` stand for: each FILE itself, and for each series folder its
/// latest complete checkpoint (with --all, every complete one), with what was found of the
/// folders.
fn files_to_check(args: &Args) -> (Vec<Target>, Vec<SeriesCheck>) {
    let mut files = Vec::new();
    let mut series = Vec::new();
    let target = |file: &Path, step, nothing| Target {
        file: file.to_path_buf(),
        step,
        nothing,
    };
    for arg in &args.files {
        if !is_series(arg) {
            files.push(target(arg, None, None));
            continue;
        }
        // Listed once for the steps to name as incomplete (and, with --all, to check); the
        // latest is the library's answer, or why there is none.
        let all = checkpoints(arg).unwrap_or_default();
        let (chosen, error): (Vec<(PathBuf, u64)>, _) = match latest(arg) {
            Err(e) => (Vec::new(), Some(e.message)),
            Ok(newest) if !args.all => (vec![(newest.1, newest.0)], None),
            Ok(_) => {
                let complete = all.iter().filter(|c| c.complete);
                (complete.map(|c| (c.master.clone(), c.step)).collect(), None)
            }
        };
        series.push(SeriesCheck {
            dir: arg.clone(),
            first: files.len(),
            latest: latest_complete(&all),
            checked: chosen.iter().map(|(_, step)| *step).collect(),
            incomplete: all.into_iter().filter(|c| !c.complete).collect(),
            error: error.clone(),
        });
        match chosen.is_empty() {
            // The folder stands among the files as an input that cannot be opened.
            true => files.push(target(arg, None, error)),
            false => files.extend(chosen.iter().map(|(f, step)| target(f, Some(*step), None))),
        }
    }
    (files, series)
}

pub fn run(args: &Args, json: bool, progress: When) -> Result<(), Failure> {
    let (files, series) = files_to_check(args);
    let mut checks: Vec<FileCheck> = files
        .into_iter()
        .map(|target| check_file(target, args.fast, args.threads))
        .collect();
    if !args.fast {
        verify_all(&mut checks, args.threads, progress);
    }
    let failure = outcome(&checks).err();
    if json {
        show::json(&report(&checks, &series, failure.as_ref()))?;
        return failure.map_or(Ok(()), |f| Err(f.reported()));
    }
    print_text(&checks, &series, args.fast);
    failure.map_or(Ok(()), Err)
}

/// What the checks came to: all well, problems found (exit status 1), or files that cannot
/// be opened (2).
fn outcome(checks: &[FileCheck]) -> Result<(), Failure> {
    let unopened = checks.iter().filter(|c| c.datasets.is_err()).count();
    let with_problems = checks
        .iter()
        .filter(|c| matches!(&c.datasets, Ok(d) if d.iter().any(|d| !d.problems.is_empty())))
        .count();
    let problems: usize = checks
        .iter()
        .filter_map(|c| c.datasets.as_ref().ok())
        .flatten()
        .map(|d| d.problems.len())
        .sum();
    let checked = checks.len() - unopened;
    match (unopened, problems) {
        (0, 0) => Ok(()),
        (0, n) => Err(Failure::new(
            EXIT_PROBLEMS,
            format!(
                "check found {n} problem{} in {with_problems} of {checked} file{}",
                if n == 1 { "" } else { "s" },
                if checked == 1 { "" } else { "s" }
            ),
        )),
        (u, n) => {
            let first = checks.iter().find_map(|c| c.datasets.as_ref().err());
            let first = first.expect("one file could not be opened");
            let others = match (u, n) {
                (1, 0) => String::new(),
                (1, n) => format!(" ({n} problems in the other files)"),
                (u, n) => format!(" (and {} more; {n} problems in the other files)", u - 1),
            };
            Err(Failure::new(EXIT_USAGE, format!("{first}{others}")))
        }
    }
}

/// What `check` finds of `target` before reading tile bytes: its datasets and their sources
/// (with `fast`, h5tile's own not opened with HDF5), the HDF5 opens shared among up to
/// `threads` processes.
fn check_file(target: Target, fast: bool, threads: Option<u16>) -> FileCheck {
    let file = target.file;
    let datasets = match target.nothing {
        Some(why) => Err(why),
        None => describe(&file, None)
            .map(|all| {
                let processes = threads.map_or_else(default_threads, usize::from);
                let check = |info| check_dataset(&file, info, fast, processes);
                all.into_iter().map(check).collect()
            })
            .map_err(|e| e.message),
    };
    FileCheck {
        file,
        datasets,
        step: target.step,
    }
}

fn check_dataset(file: &Path, info: DatasetInfo, fast: bool, processes: usize) -> DatasetCheck {
    let problems = check_sources_shared(file, &info, depth(fast), processes);
    DatasetCheck {
        info,
        problems,
        verified_bytes: 0,
        failed_bytes: 0,
    }
}

/// Reads every checksummed tile whose source was found well and compares its blocks with
/// their checksums, the tiles shared out among threads; adds what is wrong to each dataset.
fn verify_all(checks: &mut [FileCheck], threads: Option<u16>, when: When) {
    // Every dataset of the files opened, and where it is: (file, dataset) indices.
    let mut at: Vec<(usize, usize)> = Vec::new();
    for (f, check) in checks.iter().enumerate() {
        if let Ok(datasets) = &check.datasets {
            at.extend((0..datasets.len()).map(|d| (f, d)));
        }
    }
    let dataset = |&(f, d): &(usize, usize)| &checks[f].datasets.as_ref().expect("opened")[d];
    let infos: Vec<&DatasetInfo> = at.iter().map(|a| &dataset(a).info).collect();
    let jobs = checksum_jobs(&infos, |d, tile| {
        dataset(&at[d]).problems.iter().any(|p| p.file == tile.path)
    });
    let bytes: Vec<u64> = jobs.iter().map(|&job| job_bytes(&infos, job)).collect();
    let progress = Progress::bytes(bytes.iter().sum(), "verifying checksums", when);
    let threads = threads.map_or_else(default_threads, usize::from);
    let found = verify_tiles(&infos, &jobs, threads, &|n| progress.add(n));
    progress.finish();
    for ((&(d, _), problems), bytes) in jobs.iter().zip(found).zip(bytes) {
        let (f, d) = at[d];
        let dataset = &mut checks[f].datasets.as_mut().expect("opened")[d];
        // A tile with one bad block of many has the others verified.
        let failed: u64 = problems
            .iter()
            .map(|p| p.tile_bytes.map_or(bytes, |_| p.failed_bytes))
            .sum();
        dataset.verified_bytes += bytes - failed.min(bytes);
        dataset.problems.extend(problems);
    }
    // What was not verified of the checksummed bytes failed: read and bad, or not read (its
    // source missing or wrong).
    for (f, d) in at {
        let dataset = &mut checks[f].datasets.as_mut().expect("opened")[d];
        let elem = dataset.info.element_bytes;
        let checksummed: u64 = dataset.info.tiled().map_or(0, |v| {
            v.tiles.iter().map(|t| checksummed_bytes(t, elem)).sum()
        });
        dataset.failed_bytes = checksummed.saturating_sub(dataset.verified_bytes);
    }
}

/// The lines that say what a series folder came to, written before its first file's.
fn series_lines(s: &SeriesCheck) -> Vec<String> {
    let dir = s.dir.display();
    let mut lines: Vec<String> = s
        .incomplete
        .iter()
        .map(|c| {
            let why = why_incomplete(c, s.latest);
            match Incomplete::of(c, s.latest) {
                Incomplete::PruningInterrupted => format!(
                    "{dir}: step {}: pruning interrupted ({why}): not checked",
                    c.step
                ),
                _ => format!("{dir}: step {} is incomplete ({why}): not checked", c.step),
            }
        })
        .collect();
    match &s.checked[..] {
        [] => {}
        [one] => lines.push(format!(
            "{dir}: step {one} is the latest complete checkpoint"
        )),
        [newest, older @ ..] => {
            let older: Vec<String> = older.iter().map(u64::to_string).collect();
            lines.push(format!(
                "{dir}: {} complete checkpoints: steps {newest} (the latest), {}",
                s.checked.len(),
                older.join(", ")
            ));
        }
    }
    lines
}

fn print_text(checks: &[FileCheck], series: &[SeriesCheck], fast: bool) {
    // The first file that cannot be opened is the failure's message (stderr): not shown twice.
    let first_unopened = checks.iter().position(|c| c.datasets.is_err());
    for (k, check) in checks.iter().enumerate() {
        for s in series.iter().filter(|s| s.first == k) {
            for line in series_lines(s) {
                println!("{line}");
            }
        }
        let master = check.file.display();
        let datasets = match &check.datasets {
            Ok(datasets) => datasets,
            Err(_) if Some(k) == first_unopened => continue,
            Err(why) => {
                println!("{why}");
                continue;
            }
        };
        for d in datasets {
            for p in &d.problems {
                println!("{master}: {}: {p}", d.info.name);
            }
        }
        let tiled: Vec<&VirtualInfo> = datasets.iter().filter_map(|d| d.info.tiled()).collect();
        let problems: usize = datasets.iter().map(|d| d.problems.len()).sum();
        let tiles: usize = tiled.iter().map(|v| v.tiles.len()).sum();
        let verified: u64 = datasets.iter().map(|d| d.verified_bytes).sum();
        let failed: u64 = datasets.iter().map(|d| d.failed_bytes).sum();
        let checksummed = tiled
            .iter()
            .any(|v| v.tiles.iter().any(|t| t.sums.is_some()));
        let sums = match (checksummed, fast) {
            (false, _) => "not checksummed".to_string(),
            (true, true) => {
                "checksums not read, tile files not opened with HDF5 (--fast)".to_string()
            }
            (true, false) if failed == 0 => format!(
                "{} of tile data verified against checksums",
                show::bytes(verified)
            ),
            (true, false) => format!(
                "{} of tile data verified against checksums, {} failed",
                show::bytes(verified),
                show::bytes(failed)
            ),
        };
        let single = tiled
            .iter()
            .filter(|v| v.layout == VirtualLayout::Single)
            .count();
        let kinds: Vec<String> = [(tiled.len() - single, "virtual"), (single, "single-file")]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, kind)| format!("{n} {kind} dataset{}", if *n == 1 { "" } else { "s" }))
            .collect();
        let what = match kinds.is_empty() {
            true => "no virtual datasets".to_string(),
            false => format!(
                "{}, {tiles} tile{}, {sums}",
                kinds.join(", "),
                if tiles == 1 { "" } else { "s" },
            ),
        };
        match problems {
            0 => println!("{master}: ok ({what})"),
            n => println!(
                "{master}: {n} problem{} ({what})",
                if n == 1 { "" } else { "s" }
            ),
        }
    }
}

#[derive(Serialize)]
struct Report {
    ok: bool,
    files: Vec<FileJson>,
    /// The series folders given, when any was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    series: Vec<SeriesJson>,
    /// What the exit status says, when it is not 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<FailureJson>,
}

#[derive(Serialize)]
struct FileJson {
    file: String,
    /// Its step, for a checkpoint of a series folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<u64>,
    /// Why the file cannot be opened, else null.
    error: Option<String>,
    datasets: Vec<CheckedDatasetJson>,
}

#[derive(Serialize)]
struct SeriesJson {
    dir: String,
    /// The latest complete checkpoint's step, or null when there is none.
    latest: Option<u64>,
    /// The steps checked, newest first.
    checked: Vec<u64>,
    incomplete: Vec<IncompleteJson>,
    /// Why nothing of it was checked, else null.
    error: Option<String>,
}

#[derive(Serialize)]
struct IncompleteJson {
    step: u64,
    why: String,
    /// "not_committed", "pruning_interrupted" or "not_hdf5".
    kind: &'static str,
}

#[derive(Serialize)]
struct CheckedDatasetJson {
    name: String,
    /// Tiles (mappings) and distinct source files: 0 for a dataset that is not virtual.
    tiles: usize,
    files: usize,
    checksummed_tiles: usize,
    /// Checksummed bytes read and found to match.
    verified_bytes: u64,
    /// Checksummed bytes that did not match, could not be read, or were not read as their
    /// source is missing or wrong (0 with --fast, which reads none).
    failed_bytes: u64,
    problems: Vec<ProblemJson>,
}

#[derive(Serialize)]
struct ProblemJson {
    file: String,
    /// "tile file", "subfile" or "source file".
    kind: &'static str,
    offset: Option<Vec<u64>>,
    shape: Option<Vec<u64>>,
    problem: String,
    /// The bytes of the file that do not match their checksum: [start, end).
    bytes: Option<[u64; 2]>,
    /// The tile's own bytes that failed, [start, end); null for a problem of its file.
    tile_bytes: Option<[u64; 2]>,
}

fn report(checks: &[FileCheck], series: &[SeriesCheck], failure: Option<&Failure>) -> Report {
    let files: Vec<FileJson> = checks.iter().map(file_json).collect();
    let ok = files
        .iter()
        .all(|f| f.error.is_none() && f.datasets.iter().all(|d| d.problems.is_empty()));
    let series = series
        .iter()
        .map(|s| SeriesJson {
            dir: show::path(&s.dir),
            latest: s.checked.first().copied(),
            checked: s.checked.clone(),
            incomplete: s
                .incomplete
                .iter()
                .map(|c| IncompleteJson {
                    step: c.step,
                    why: why_incomplete(c, s.latest),
                    kind: Incomplete::of(c, s.latest).key(),
                })
                .collect(),
            error: s.error.clone(),
        })
        .collect();
    Report {
        ok,
        files,
        series,
        failure: failure.map(Failure::json),
    }
}

fn file_json(check: &FileCheck) -> FileJson {
    let (error, datasets) = match &check.datasets {
        Err(why) => (Some(why.clone()), Vec::new()),
        Ok(datasets) => (None, datasets.iter().map(dataset_json).collect()),
    };
    FileJson {
        file: show::path(&check.file),
        step: check.step,
        error,
        datasets,
    }
}

fn dataset_json(d: &DatasetCheck) -> CheckedDatasetJson {
    let vds = d.info.tiled();
    CheckedDatasetJson {
        name: d.info.name.clone(),
        tiles: vds.map_or(0, |v| v.tiles.len()),
        files: vds.map_or(0, |v| v.files().len()),
        checksummed_tiles: vds.map_or(0, |v| v.tiles.iter().filter(|t| t.sums.is_some()).count()),
        verified_bytes: d.verified_bytes,
        failed_bytes: d.failed_bytes,
        problems: d.problems.iter().map(problem_json).collect(),
    }
}

fn problem_json(p: &Problem) -> ProblemJson {
    ProblemJson {
        file: show::path(&p.file),
        kind: p.file_kind(),
        offset: p.region.as_ref().map(|r| r.offset.clone()),
        shape: p.region.as_ref().map(|r| r.shape.clone()),
        problem: p.what.clone(),
        bytes: p.bytes.map(|(a, b)| [a, b]),
        tile_bytes: p.tile_bytes.map(|(a, b)| [a, b]),
    }
}
