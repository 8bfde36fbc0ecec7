//! `h5tile cp SRC DST`: a master copied with the files it takes tiles from, so that the copy
//! reads on its own and can be moved like the original. Every file is written under a
//! temporary name and checked (against the recorded checksums, else byte for byte) before it
//! takes its name, the master last: until then nothing at DST changes, and a failure leaves
//! nothing behind.

use crate::failure::Failure;
use crate::progress::{Progress, When};
use crate::show;
use h5tile::internals::tool::{CopyPlan, Verified};
use serde::Serialize;
use std::path::PathBuf;

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

Exit status: 0 when the copy is in place and verified; 1 when copying or verifying failed (a
source missing or damaged included); 2 when SRC cannot be opened or the copy is refused (DST
exists, sources at absolute paths).";

pub const EXAMPLES: &str = "\
Examples:
  h5tile cp run/out.h5 archive/out.h5        # out.h5 and out.h5.tiles/ into archive/
  h5tile cp run/out.h5 archive/              # the same
  h5tile cp run/out.h5 run/out-step100.h5    # tiles go to run/out-step100.h5.tiles/
  h5tile cp --shallow legate.h5 /backup/     # the master alone";

#[derive(clap::Args)]
pub struct Args {
    /// The master (or any HDF5 file) to copy
    src: PathBuf,
    /// The copy: a file name, or an existing folder to copy into under SRC's name
    dst: PathBuf,
    /// Replace DST and the files the copy puts beside it if they exist
    #[arg(short, long)]
    force: bool,
    /// Copy the master alone, as it is: it keeps naming its sources as before
    #[arg(long)]
    shallow: bool,
}

pub fn run(args: &Args, json: bool, when: When) -> Result<(), Failure> {
    let plan = CopyPlan::new(&args.src, &args.dst, args.force, args.shallow)?;
    let progress = Progress::bytes(plan.total_bytes(), "copying", when);
    let done = plan.run(&|n| progress.add(n))?;
    progress.finish();
    let report = Report {
        source: show::path(&args.src),
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
    };
    match json {
        true => show::json(&report),
        false => {
            print_text(&report);
            Ok(())
        }
    }
}

#[derive(Serialize)]
struct Report {
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
