//! `h5tile rm FILE`: a master removed with the tile files and subfiles it refers to in its
//! tile folder (only those: other datasets' files stay), then the folder if that left it
//! empty. The master goes first, so no reader finds it naming tiles that are gone.
//! `h5tile rm SERIES`, of a series folder, is the `series_files` module's.

use crate::failure::{Failure, FailureJson};
use crate::series::is_series;
use crate::series_files;
use crate::show;
use h5tile::internals::tool::remove_master;
use serde::Serialize;
use std::path::PathBuf;

pub const LONG_ABOUT: &str = "\
Remove the master FILE, then the tile files and subfiles in its tile folder (<FILE>.tiles/)
that its virtual datasets refer to, then the tile folder if nothing else is left in it. Files
the master does not refer to stay (another master's tiles, a newer write's), and so do its
sources outside the tile folder (h5py's relative sources, Legate's absolute ones), which other
files may share: they are listed as kept. FILE must be an HDF5 file; any HDF5 file can be
removed this way (one with no virtual datasets is removed alone).

Output: one line per file removed (with --dry-run: that would be removed) or kept. With
--json, one document {\"file\", \"dry_run\", \"removed\", \"missing\", \"kept\", \"failure\"
(when a removal failed)}.

A FILE that is a series folder (numbered checkpoints ckpt.<step>.h5 and the record `latest`, as
h5tile's series write them) is removed whole: first what is left of steps that are not
complete checkpoints (a write that did not commit, a pruning interrupted: the files of their
tile folders named as h5tile names tiles, the folders, temporary masters), then every complete
checkpoint, oldest first, as a FILE is (with its tile folder's other files of h5tile's, and
its temporary masters), then temporary records, the record `latest`, and the folder if that
left it empty. Were it stopped midway, what is left is still a series whose newest
checkpoints read as before. Files that are not the series' stay, listed as kept (and so
does the folder). The first removal that fails stops it (exit status 1). With --json: {\"dir\",
\"dry_run\", \"removed\", \"missing\", \"kept\", \"failure\"}.

Exit status: 0 when everything listed was removed; 1 when a removal failed; 2 when FILE cannot
be opened as HDF5 (nothing is removed).";

pub const EXAMPLES: &str = "\
Examples:
  h5tile rm --dry-run ckpt/step100.h5
  h5tile rm ckpt/step100.h5
  h5tile rm --dry-run run/series/     # every file of the series, in the order removed";

#[derive(clap::Args)]
pub struct Args {
    /// The master (or any HDF5 file), or a series folder, to remove
    file: PathBuf,
    /// List what would be removed, and remove nothing
    #[arg(short = 'n', long)]
    dry_run: bool,
}

#[derive(Serialize)]
struct Report {
    file: String,
    dry_run: bool,
    /// The master, its tile files, and the tile folder when it was left empty.
    removed: Vec<String>,
    /// Tile files the master names that were not there.
    missing: Vec<String>,
    /// Sources outside the tile folder, left in place.
    kept: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<FailureJson>,
}

pub fn run(args: &Args, json: bool) -> Result<(), Failure> {
    if is_series(&args.file) {
        return series_files::rm(&args.file, args.dry_run, json);
    }
    let removal = remove_master(&args.file, args.dry_run)?;
    let failure = removal.failed.as_deref().map(Failure::problems);
    let paths = |all: &[PathBuf]| all.iter().map(|p| show::path(p)).collect();
    let report = Report {
        file: show::path(&args.file),
        dry_run: args.dry_run,
        removed: paths(&removal.removed),
        missing: paths(&removal.missing),
        kept: paths(&removal.kept),
        failure: failure.as_ref().map(Failure::json),
    };
    print(&report, json)?;
    failure.map_or(Ok(()), |f| match json {
        true => Err(f.reported()),
        false => Err(f),
    })
}

fn print(report: &Report, json: bool) -> Result<(), Failure> {
    if json {
        return show::json(report);
    }
    let verb = if report.dry_run {
        "would remove"
    } else {
        "removed"
    };
    for path in &report.removed {
        println!("{verb} '{path}'");
    }
    for path in &report.missing {
        println!("missing '{path}' (named by the master, not there)");
    }
    for path in &report.kept {
        println!("kept '{path}' (outside the tile folder)");
    }
    Ok(())
}
