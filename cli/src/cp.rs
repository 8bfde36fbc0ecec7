//! `h5tile cp SRC DST`: a master copied with the files it takes tiles from, so that the copy
//! reads on its own and can be moved like the original. Every file is written under a
//! temporary name and checked (against the recorded checksums, else byte for byte) before it
//! takes its name, the master last: until then nothing at DST changes, and a failure leaves
//! nothing behind. `h5tile cp SERIES DST`, of a series folder, is the `series_files` module's.

use crate::failure::Failure;
use crate::progress::{Progress, When};
use crate::series::is_series;
use crate::series_files;
use crate::show;
use h5tile::internals::tool::{CopyPlan, CopyReport, Verified};
use serde::Serialize;
use std::path::{Path, PathBuf};

pub const LONG_ABOUT: &str = "\
Copy the master SRC to DST together with the files its virtual datasets take tiles from, so
that DST reads on its own and can itself be moved or copied. Only the files SRC refers to are
copied: tile files and subfiles from SRC's tile folder go to DST's (<DST>.tiles/, the master's
datasets pointed at it when the name changes); other sources named by paths relative to SRC
go to the same paths relative to DST (missing folders are made). Sources at absolute paths
(Legate's) would still be read by the copy from where they are: cp refuses them, unless
--shallow, which copies the master alone, as it is.

Each file is written under a temporary name, synced and verified (tiles against the checksums
the master records, other files byte for byte), then renamed into place, the master last, so
DST is never a half copy; on failure nothing is left. An existing DST is not replaced without
--force; with --force, the tile files of the replaced DST that the copy does not reuse are
removed once the copy is in place.

Output: what was copied and how it was verified. With --json, one document {\"source\",
\"destination\", \"copied\": [{\"from\", \"to\", \"bytes\", \"verified\"}], \"shared\",
\"master_rewritten\", \"removed\"}.

A SRC that is a series folder (numbered checkpoints ckpt.<step>.h5 and the record `latest`, as
h5tile's series write them) is copied whole: into DST, under SRC's name, when DST is an
existing folder or ends with '/'; else as DST, a folder made for it. Every complete checkpoint is copied, oldest
first, as a FILE is (its tile files verified against their checksums, the rest byte for byte),
then the record `latest`, as it is (written under a temporary name, checked byte for byte, then
renamed into place). Every checkpoint's copy is planned before anything is written, so a
refusal or a missing tile leaves nothing; if a copy fails, the checkpoints already copied and
the folder made are removed again. Steps that are not complete checkpoints (a write that did
not commit, a pruning interrupted), temporary masters and files that are not the series' are
not copied, and the output names each. An existing destination folder is refused without
--force; with it, the checkpoints of the same names are replaced (others there stay). With
--json: {\"source\", \"destination\", \"checkpoints\": [{\"step\", and the document of a
FILE's copy}], \"record\": {\"from\", \"to\", \"step\", \"bytes\", \"verified\"} or null,
\"not_copied\": [{\"path\", \"step\", \"why\"}]}.

Exit status: 0 when the copy is in place and verified; 1 when copying or verifying failed (a
source missing or damaged included); 2 when SRC cannot be opened or the copy is refused (DST
exists, sources at absolute paths, a series with no complete checkpoint).";

pub const EXAMPLES: &str = "\
Examples:
  h5tile cp run/out.h5 archive/out.h5        # out.h5 and out.h5.tiles/ into archive/
  h5tile cp run/out.h5 archive/              # the same
  h5tile cp run/out.h5 run/out-step100.h5    # tiles go to run/out-step100.h5.tiles/
  h5tile cp --shallow legate.h5 /backup/     # the master alone
  h5tile cp run/series/ archive/             # the series' checkpoints into archive/series/";

#[derive(clap::Args)]
pub struct Args {
    /// The master (or any HDF5 file), or a series folder, to copy
    src: PathBuf,
    /// The copy: a file (or folder) name, or an existing folder to copy into under SRC's name
    dst: PathBuf,
    /// Replace DST and the files the copy puts beside it if they exist
    #[arg(short, long)]
    force: bool,
    /// Copy the master alone, as it is: it keeps naming its sources as before
    #[arg(long)]
    shallow: bool,
}

pub fn run(args: &Args, json: bool, when: When) -> Result<(), Failure> {
    if is_series(&args.src) {
        if args.shallow {
            return Err(Failure::usage(format!(
                "'{}' is a series folder: --shallow is for one master (a series' checkpoints \
                 are copied with their tiles)",
                args.src.display()
            )));
        }
        return series_files::cp(&args.src, &args.dst, args.force, json, when);
    }
    let plan = CopyPlan::new(&args.src, &args.dst, args.force, args.shallow)?;
    let progress = Progress::bytes(plan.total_bytes(), "copying", when);
    let done = plan.run(&|n| progress.add(n))?;
    progress.finish();
    let report = Report::of(&args.src, &done);
    match json {
        true => show::json(&report),
        false => {
            print_text(&report);
            Ok(())
        }
    }
}

/// What copying a master did, as `cp --json` writes it.
#[derive(Serialize)]
pub struct Report {
    source: String,
    destination: String,
    copied: Vec<Copied>,
    /// Sources the copy reads where the original does (relative ones, copied within their
    /// folder).
    shared: Vec<String>,
    /// The copy's datasets were pointed at its own tile folder.
    master_rewritten: bool,
    /// Tile files of the replaced DST (--force) that the copy did not reuse.
    removed: Vec<String>,
}

impl Report {
    /// The copy of `src` that `done` says.
    pub fn of(src: &Path, done: &CopyReport) -> Report {
        Report {
            source: show::path(src),
            destination: show::path(&done.destination),
            copied: done
                .copied
                .iter()
                .map(|c| Copied {
                    from: show::path(&c.from),
                    to: show::path(&c.to),
                    bytes: c.bytes,
                    verified: match c.verified {
                        Verified::Checksums => "checksums",
                        Verified::Bytes => "bytes",
                    },
                })
                .collect(),
            shared: done.shared.iter().map(|p| show::path(p)).collect(),
            master_rewritten: done.master_rewritten,
            removed: done.removed.iter().map(|p| show::path(p)).collect(),
        }
    }

    /// The source files copied (the master is not among them), and their bytes.
    pub fn copied(&self) -> (usize, u64) {
        let bytes = self.copied.iter().map(|c| c.bytes).sum();
        (self.copied.len(), bytes)
    }

    /// The source files copied that were verified against checksums.
    pub fn by_checksums(&self) -> usize {
        self.copied
            .iter()
            .filter(|c| c.verified == "checksums")
            .count()
    }

    /// Tile files of the replaced copy (--force) that were removed.
    pub fn removed(&self) -> &[String] {
        &self.removed
    }
}

#[derive(Serialize)]
struct Copied {
    from: String,
    to: String,
    bytes: u64,
    /// "checksums" or "bytes".
    verified: &'static str,
}

fn print_text(r: &Report) {
    let bytes: u64 = r.copied.iter().map(|c| c.bytes).sum();
    let by_sums = r
        .copied
        .iter()
        .filter(|c| c.verified == "checksums")
        .count();
    println!(
        "copied '{}' to '{}' with {} source file{} ({} of files, HDF5 metadata included): {} \
         verified against checksums, {} byte for byte",
        r.source,
        r.destination,
        r.copied.len(),
        if r.copied.len() == 1 { "" } else { "s" },
        show::bytes(bytes),
        by_sums,
        r.copied.len() - by_sums
    );
    for s in &r.shared {
        println!("shared with the original: '{s}'");
    }
    for s in &r.removed {
        println!("removed '{s}' (a tile file of the replaced copy)");
    }
}
