//! `check`'s look at a dataset's sources, shared among processes: a process opens one HDF5
//! file at a time (HDF5 serialises its calls), so for many source files `check` starts copies
//! of itself (the hidden `check-part` command), each opening its share of the files, while it
//! opens its own share, then gathers their problems in the order of the master's mappings.

use crate::failure::{Failure, EXIT_USAGE};
use h5tile::internals::tool::{
    check_sources, check_sources_part, describe, sources_to_open, DatasetInfo, Depth, Problem,
};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Below this many source files per process, another process costs more than it saves.
const FILES_PER_PROCESS: usize = 256;

/// The hidden `check-part` command's arguments: which share of which dataset's files.
#[derive(clap::Args)]
pub struct PartArgs {
    file: PathBuf,
    dataset: String,
    part: usize,
    parts: usize,
    /// The mappings the parent saw: a master replaced since then is not checked here.
    tiles: usize,
    /// Open only the sources whose bytes the master does not record (`check --fast`)
    #[arg(long)]
    fast: bool,
}

/// How far `check` looks at sources: `--fast` leaves out the HDF5 opens of h5tile's own.
pub fn depth(fast: bool) -> Depth {
    match fast {
        true => Depth::Recorded,
        false => Depth::Hdf5,
    }
}

/// `check-part`: prints each problem of its share as a JSON line `[tile index, what]`.
pub fn run_part(args: &PartArgs) -> Result<(), Failure> {
    let usage = |message: String| Failure::new(EXIT_USAGE, message);
    let info = describe(&args.file, Some(&args.dataset))
        .map_err(|e| usage(e.message))?
        .pop()
        .ok_or_else(|| usage(format!("no dataset '{}'", args.dataset)))?;
    if args.part >= args.parts {
        return Err(usage(format!(
            "part {} of {} does not exist",
            args.part, args.parts
        )));
    }
    let tiles = info.virtual_info.as_ref().map_or(0, |v| v.tiles.len());
    if tiles != args.tiles {
        return Err(usage(format!(
            "'{}' {} maps {tiles} tiles, not {} (replaced meanwhile)",
            args.file.display(),
            args.dataset,
            args.tiles
        )));
    }
    for (t, problem) in check_sources_part(&info, depth(args.fast), args.part, args.parts) {
        println!("{}", serde_json::json!([t, problem.what]));
    }
    Ok(())
}

/// `check_sources(info, depth)` (`info` a dataset of `file`), on up to `processes` processes.
pub fn check_sources_shared(
    file: &Path,
    info: &DatasetInfo,
    depth: Depth,
    processes: usize,
) -> Vec<Problem> {
    let parts = processes
        .min(sources_to_open(info, depth) / FILES_PER_PROCESS)
        .min(processes_memory_holds())
        .max(1);
    let (Some(vds), Ok(exe), true) = (&info.virtual_info, std::env::current_exe(), parts > 1)
    else {
        return check_sources(info, depth);
    };
    let children: Vec<_> = (1..parts)
        .map(|part| {
            Command::new(&exe)
                .arg("check-part")
                .arg(file)
                .arg(&info.name)
                .args([part, parts, vds.tiles.len()].map(|n| n.to_string()))
                .args((depth == Depth::Recorded).then_some("--fast"))
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .ok()
        })
        .collect();
    let (mut problems, shares) = std::thread::scope(|s| {
        let readers: Vec<_> = children
            .into_iter()
            .map(|child| s.spawn(move || child.and_then(share_of)))
            .collect();
        let own = check_sources_part(info, depth, 0, parts);
        let shares: Vec<_> = readers
            .into_iter()
            .map(|r| r.join().ok().flatten())
            .collect();
        (own, shares)
    });
    // A part whose process failed (or whose output does not fit) is checked here instead.
    let fits = |share: &Vec<(usize, String)>| share.iter().all(|(t, _)| *t < vds.tiles.len());
    for (k, share) in shares.into_iter().enumerate() {
        match share.filter(fits) {
            Some(share) => problems.extend(
                share
                    .into_iter()
                    .map(|(t, what)| (t, Problem::new(&vds.tiles[t], what))),
            ),
            None => problems.extend(check_sources_part(info, depth, k + 1, parts)),
        }
    }
    problems.sort_by_key(|(t, _)| *t);
    problems.into_iter().map(|(_, p)| p).collect()
}

/// What a `check-part` process found, once it exited well: (tile index, what) per problem.
fn share_of(mut child: std::process::Child) -> Option<Vec<(usize, String)>> {
    let mut out = String::new();
    let read = child.stdout.take()?.read_to_string(&mut out);
    let status = child.wait().ok()?;
    if read.is_err() || !status.success() {
        return None;
    }
    out.lines()
        .map(|line| serde_json::from_str::<(usize, String)>(line).ok())
        .collect()
}

/// How many processes as large as this one (each holds the master's mappings: about 16 KiB a
/// tile) half of the memory available holds; unlimited where /proc does not say.
fn processes_memory_holds() -> usize {
    let kib = |text: &str, key: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(key))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    match (kib(&status, "VmRSS:"), kib(&meminfo, "MemAvailable:")) {
        (Some(rss), Some(available)) if rss > 0 => (available / 2 / rss) as usize,
        _ => usize::MAX,
    }
}
