//! `h5tile rm FILE`: a master removed with the tile files and subfiles it refers to in its
//! tile folder (only those: other datasets' files stay), then the folder if that left it
//! empty. The master goes first, so no reader finds it naming tiles that are gone.

use crate::failure::Failure;
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
--json, one document {\"file\", \"dry_run\", \"removed\", \"missing\", \"kept\"}.

Exit status: 0 when everything listed was removed; 1 when a removal failed; 2 when FILE cannot
be opened as HDF5 (nothing is removed).";

pub const EXAMPLES: &str = "\
Examples:
  h5tile rm --dry-run ckpt/step100.h5
  h5tile rm ckpt/step100.h5";

#[derive(clap::Args)]
pub struct Args {
    /// The master (or any HDF5 file) to remove
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
}

pub fn run(args: &Args, json: bool) -> Result<(), Failure> {
    let removal = remove_master(&args.file, args.dry_run)?;
    let paths = |all: &[PathBuf]| all.iter().map(|p| show::path(p)).collect();
    let report = Report {
        file: show::path(&args.file),
        dry_run: args.dry_run,
        removed: paths(&removal.removed),
        missing: paths(&removal.missing),
        kept: paths(&removal.kept),
    };
    print(&report, json)?;
    removal
        .failed
        .map_or(Ok(()), |why| Err(Failure::problems(why)))
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
