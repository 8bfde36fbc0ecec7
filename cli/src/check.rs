//! `h5tile check FILE...`: whether every virtual dataset's sources are there as its master
//! says (present, of the recorded size, holding the mapped dataset), then, unless `--fast`,
//! whether every checksummed tile's bytes match their checksums (the single-file layout's
//! too), read on several threads.

use crate::check_parts::check_sources_shared;
use crate::failure::{Failure, EXIT_PROBLEMS, EXIT_USAGE};
use crate::progress::{Progress, When};
use crate::show;
use h5tile::internals::tool::{
    checksummed_bytes, describe, verify_checksums, DatasetInfo, Problem, TileInfo, VirtualInfo,
    VirtualLayout,
};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

pub const LONG_ABOUT: &str = "\
Check every virtual dataset of each FILE: that each source file it maps is present; for tiles
h5tile wrote, that the file has the size the master records (and a subfile the stamp of the
write its name says); for every source (h5tile's, h5py's, Legate's), that the file opens with
HDF5, as other readers open it, and holds the mapped dataset with a shape that holds the
mapped box and a type HDF5 converts. For many source files the HDF5 opens are shared among
processes (up to --threads). Then, unless --fast, every tile with recorded checksums is read and each 1 MiB block compared
with its XXH3-64 checksum, on several threads; so are the tiles h5tile wrote into a
contiguous dataset in the single-file layout. A read of the dataset would fail (or, for
sources h5tile did not write, silently read fill values) on the same problems.

Output: one line per problem, naming the master, the dataset, the tile file or subfile, the box
of the dataset it holds, what is wrong and, for a checksum mismatch, the byte range in the
file (from the first byte to the last: in the single-file layout the rows between hold other
tiles); then one line per FILE saying whether it is well. With --json, one document {\"ok\",
\"files\": [{\"file\", \"error\", \"datasets\": [{\"name\", \"tiles\", \"files\",
\"checksummed_tiles\", \"verified_bytes\", \"problems\": [{\"file\", \"kind\", \"offset\",
\"shape\", \"problem\", \"bytes\"}]}]}]}.

Exit status: 0 when all is well; 1 when problems were found; 2 when a FILE cannot be opened
(the others are still checked).";

pub const EXAMPLES: &str = "\
Examples:
  h5tile check ckpt/step100.h5
  h5tile check --fast ckpt/*.h5            # sources present and of the right size only
  h5tile check --json out.h5 | jq '.files[].datasets[].problems'";

#[derive(clap::Args)]
pub struct Args {
    /// The HDF5 files (masters, or any HDF5 file)
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Do not read tile bytes to verify their checksums: check sources, sizes and stamps only
    #[arg(long)]
    fast: bool,
    /// Threads reading tiles to verify checksums, and processes opening source files with
    /// HDF5 (for datasets of many files) [default: the CPUs, at most 16]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
}

/// What was found of one dataset.
struct DatasetCheck {
    info: DatasetInfo,
    problems: Vec<Problem>,
    verified_bytes: u64,
}

/// What was found of one file: its datasets, or why it cannot be opened.
struct FileCheck {
    file: PathBuf,
    datasets: Result<Vec<DatasetCheck>, String>,
}

/// One checksummed tile to read: (file, dataset, tile) indices.
type Job = (usize, usize, usize);

pub fn run(args: &Args, json: bool, progress: When) -> Result<(), Failure> {
    let mut checks: Vec<FileCheck> = args
        .files
        .iter()
        .map(|file| FileCheck {
            file: file.clone(),
            datasets: describe(file, None)
                .map(|all| {
                    let processes = args.threads.map_or_else(default_threads, usize::from);
                    let check = |info| check_dataset(file, info, processes);
                    all.into_iter().map(check).collect()
                })
                .map_err(|e| e.message),
        })
        .collect();
    if !args.fast {
        verify_all(&mut checks, args.threads, progress);
    }
    if json {
        show::json(&report(&checks))?;
    } else {
        print_text(&checks, args.fast);
    }
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

fn check_dataset(file: &Path, info: DatasetInfo, processes: usize) -> DatasetCheck {
    let problems = check_sources_shared(file, &info, processes);
    DatasetCheck {
        info,
        problems,
        verified_bytes: 0,
    }
}

/// Reads every checksummed tile whose source was found well and compares its blocks with
/// their checksums, the tiles shared out among threads; adds what is wrong to each dataset.
fn verify_all(checks: &mut [FileCheck], threads: Option<u16>, when: When) {
    let mut jobs: Vec<Job> = Vec::new();
    for (f, check) in checks.iter().enumerate() {
        let Ok(datasets) = &check.datasets else {
            continue;
        };
        for (d, dataset) in datasets.iter().enumerate() {
            let (Some(vds), elem) = (dataset.info.tiled(), dataset.info.element_bytes) else {
                continue;
            };
            for (t, tile) in vds.tiles.iter().enumerate() {
                let already = dataset.problems.iter().any(|p| p.file == tile.path);
                if !already && checksummed_bytes(tile, elem) > 0 {
                    jobs.push((f, d, t));
                }
            }
        }
    }
    let tile = |&(f, d, t): &Job| -> (&DatasetInfo, &TileInfo) {
        let dataset = &checks[f].datasets.as_ref().expect("opened")[d];
        let vds = dataset.info.tiled().expect("tiled");
        (&dataset.info, &vds.tiles[t])
    };
    let total = jobs
        .iter()
        .map(|j| {
            let (info, t) = tile(j);
            checksummed_bytes(t, info.element_bytes)
        })
        .sum();
    let progress = Progress::bytes(total, "verifying checksums", when);
    let found: Vec<Mutex<Vec<Problem>>> = jobs.iter().map(|_| Mutex::new(Vec::new())).collect();
    let next = AtomicUsize::new(0);
    let threads = threads
        .map_or_else(default_threads, usize::from)
        .min(jobs.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let (info, t) = tile(job);
                let block = info.tiled().and_then(|v| v.checksum_block).unwrap_or(0);
                let problems =
                    verify_checksums(&t.path, t, info.element_bytes, block, &|n| progress.add(n));
                *found[i].lock().expect("no thread panics holding it") = problems;
            });
        }
    });
    progress.finish();
    for ((f, d, t), problems) in jobs.iter().zip(found) {
        let problems = problems.into_inner().expect("no thread panicked");
        let dataset = &mut checks[*f].datasets.as_mut().expect("opened")[*d];
        if problems.is_empty() {
            let vds = dataset.info.tiled().expect("tiled");
            let bytes = checksummed_bytes(&vds.tiles[*t], dataset.info.element_bytes);
            dataset.verified_bytes += bytes;
        }
        dataset.problems.extend(problems);
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get().min(16))
}

fn print_text(checks: &[FileCheck], fast: bool) {
    // The first file that cannot be opened is the failure's message (stderr): not shown twice.
    let first_unopened = checks.iter().position(|c| c.datasets.is_err());
    for (k, check) in checks.iter().enumerate() {
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
        let checksummed = tiled
            .iter()
            .any(|v| v.tiles.iter().any(|t| t.sums.is_some()));
        let sums = match (checksummed, fast) {
            (false, _) => "not checksummed".to_string(),
            (true, true) => "checksums not read (--fast)".to_string(),
            (true, false) => format!(
                "{} of tile data verified against checksums",
                show::bytes(verified)
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
}

#[derive(Serialize)]
struct FileJson {
    file: String,
    /// Why the file cannot be opened, else null.
    error: Option<String>,
    datasets: Vec<DatasetJson>,
}

#[derive(Serialize)]
struct DatasetJson {
    name: String,
    /// Tiles (mappings) and distinct source files: 0 for a dataset that is not virtual.
    tiles: usize,
    files: usize,
    checksummed_tiles: usize,
    verified_bytes: u64,
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
}

fn report(checks: &[FileCheck]) -> Report {
    let files: Vec<FileJson> = checks.iter().map(file_json).collect();
    let ok = files
        .iter()
        .all(|f| f.error.is_none() && f.datasets.iter().all(|d| d.problems.is_empty()));
    Report { ok, files }
}

fn file_json(check: &FileCheck) -> FileJson {
    let (error, datasets) = match &check.datasets {
        Err(why) => (Some(why.clone()), Vec::new()),
        Ok(datasets) => (None, datasets.iter().map(dataset_json).collect()),
    };
    FileJson {
        file: show::path(&check.file),
        error,
        datasets,
    }
}

fn dataset_json(d: &DatasetCheck) -> DatasetJson {
    let vds = d.info.tiled();
    DatasetJson {
        name: d.info.name.clone(),
        tiles: vds.map_or(0, |v| v.tiles.len()),
        files: vds.map_or(0, |v| v.files().len()),
        checksummed_tiles: vds.map_or(0, |v| v.tiles.iter().filter(|t| t.sums.is_some()).count()),
        verified_bytes: d.verified_bytes,
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
    }
}
