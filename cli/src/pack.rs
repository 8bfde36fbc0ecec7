//! `h5tile pack SRC DST`: SRC as one self-contained file, its virtual datasets made contiguous,
//! or chunked and compressed as their tiles are or as asked (read through h5tile's reader,
//! checksums checked, in slabs of bounded size), and every other object kept. DST is written under a temporary name in its folder and renamed at the end:
//! until then nothing at DST changes, and a failure leaves nothing behind. A SRC that is a
//! series folder stands for its latest complete checkpoint.

use crate::dataset_json::CompressionJson;
use crate::failure::Failure;
use crate::progress::{Progress, When};
use crate::series::is_series;
use crate::show;
use h5tile::internals::tool::{latest, Compression, PackCodec, PackOptions, PackPlan, PackReport};
use serde::Serialize;
use std::path::{Path, PathBuf};

pub const LONG_ABOUT: &str = "\
Write SRC as one self-contained HDF5 file DST, to archive or hand over. Every virtual dataset
(h5tile's tiles or subfiles, h5py's or Legate's sources) becomes a contiguous dataset of the
same type, shape, fill value and attributes; its elements are read through h5tile's reader,
which checks every checksum the master records, in slabs of at most 64 MiB, each written
before the next is read, so memory stays bounded whatever the dataset's size. The attributes
in which h5tile records a virtual dataset's tiles (names starting with h5tile_) are left out.

Compressed tiles stay compressed: where a virtual dataset's tiles are compressed, it becomes a
chunked dataset (chunks of about 1 MiB, as h5tile's writers make them) with their codec, level
and shuffle (the first compressed tile's, where they differ), its chunks compressed on
h5tile's threads (H5TILE_THREADS) and written as stored; h5py with hdf5plugin reads it.
--compression CODEC[:LEVEL] (none, zstd, lz4, deflate; 0 or no level: the codec's default)
chooses instead; --compression none makes it contiguous. --shuffle and --no-shuffle choose
whether bytes are shuffled before the codec (default: as in the tiles); +shuffle after the
codec, as ls shows a compression (zstd:3+shuffle), is --shuffle. These apply to the
datasets pack makes of virtual ones, of a type h5tile reads; other datasets are copied as they
are.

Everything else of SRC is kept: groups with their attributes, other datasets (contiguous,
chunked, compressed, compact) and named datatypes as they are (copied by HDF5; each named
datatype once, and what was of it in SRC, datasets and attributes, is of it in DST), soft
links as soft links, several hard links to one object as links to one object.
External links are kept as they are, naming the same file and object as in SRC (HDF5 then
looks for a relative file name from DST's folder): what they lead to is not copied into DST.
Attributes holding object or region references would point into SRC: they are left out, and
reported.

DST is written under a temporary name in its folder (.<name>.pack<pid>.tmp), synced and renamed
into place at the end, so DST is never a half file; on failure the temporary file is removed.
An existing DST is not replaced without --force; with --force, the tile files of a replaced
h5tile master are removed once DST is in place.

Output: the datasets packed (with their codec and compression ratio, their bytes divided by
their bytes on disk) and the objects copied. With --json, one document {\"source\",
\"destination\", \"bytes\", \"packed\": [{\"name\", \"dtype\", \"shape\", \"bytes\",
\"compression\", \"stored_bytes\", \"ratio\", \"slabs\", \"read_by\",
\"checksums_verified\"}], \"copied\": [{\"name\", \"kind\", \"bytes\"}], \"links\": [{\"name\",
\"kind\", \"target\"}], \"omitted\": [{\"name\", \"why\"}], \"removed\"}; \"compression\" is
{\"codec\", \"level\", \"shuffle\"}, or null for a contiguous dataset.

A SRC that is a series folder (numbered checkpoints ckpt.<step>.h5 and the record `latest`, as
h5tile's series write them) stands for its latest complete checkpoint (the one a restart
reads; DST, when a folder, takes that checkpoint's name); the output first says which step it
is, and the JSON document also holds \"series\" (the folder) and \"step\".

Exit status: 0 when DST is in place; 1 when packing failed (a tile file missing, damaged or not
matching its checksums, a failed write); 2 when SRC cannot be opened, DST is refused (it
exists, it is SRC, its folder does not exist), SRC is a series folder with no complete
checkpoint, or an option is wrong (an unknown codec or level, --shuffle with --compression
none).";

pub const EXAMPLES: &str = "\
Examples:
  h5tile pack ckpt/step100.h5 archive/step100.h5   # one file, no tile folder
  h5tile pack ckpt/step100.h5 archive/             # the same, under SRC's name
  h5tile pack --force out.h5 handover.h5
  h5tile pack --compression zstd:3 --shuffle out.h5 small.h5   # compress it now
  h5tile pack --compression none out.h5 plain.h5               # contiguous, uncompressed
  h5tile pack --json out.h5 packed.h5 | jq '.packed[] | {name, bytes}'
  h5tile pack run/series/ latest.h5        # the series' latest complete checkpoint";

#[derive(clap::Args)]
pub struct Args {
    /// The file to pack: a master, or any HDF5 file; or a series folder
    src: PathBuf,
    /// The packed file: a file name, or an existing folder to pack into under SRC's name
    dst: PathBuf,
    /// Replace DST if it exists
    #[arg(short, long)]
    force: bool,
    /// Compress the packed datasets so (none, zstd, lz4, deflate, with :LEVEL, then
    /// +shuffle to shuffle too) instead of as their tiles are
    #[arg(long, value_name = "CODEC[:LEVEL][+shuffle]")]
    compression: Option<String>,
    /// Shuffle bytes before the codec (default: as the tiles are)
    #[arg(long, overrides_with = "no_shuffle")]
    shuffle: bool,
    /// Do not shuffle bytes before the codec
    #[arg(long, overrides_with = "shuffle")]
    no_shuffle: bool,
    /// Largest slab of a virtual dataset read and written at once, in bytes (for tests)
    #[arg(long, hide = true, value_name = "BYTES",
          value_parser = clap::value_parser!(u64).range(1..))]
    slab_bytes: Option<u64>,
}

/// The options the command line asks for; why not, for a wrong codec or level.
fn options(args: &Args) -> Result<PackOptions, Failure> {
    let mut shuffle = match (args.shuffle, args.no_shuffle) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    let codec = match &args.compression {
        None => PackCodec::AsTiles,
        Some(text) => match Compression::parse(text, false) {
            // "zstd:3+shuffle", as `ls` shows it, is --compression zstd:3 --shuffle.
            Ok(Some(c)) if c.shuffle && shuffle == Some(false) => {
                return Err(Failure::usage(format!(
                    "--compression {text} with --no-shuffle: choose one"
                )))
            }
            Ok(Some(c)) => {
                shuffle = shuffle.or(c.shuffle.then_some(true));
                PackCodec::Given(c)
            }
            Ok(None) if shuffle == Some(true) => {
                return Err(Failure::usage(
                    "--shuffle with --compression none: a shuffle needs a codec",
                ))
            }
            Ok(None) => PackCodec::Uncompressed,
            Err(why) => return Err(Failure::usage(format!("--compression {why}"))),
        },
    };
    Ok(PackOptions {
        slab_bytes: args.slab_bytes,
        codec,
        shuffle,
    })
}

pub fn run(args: &Args, json: bool, when: When) -> Result<(), Failure> {
    let options = options(args)?;
    // A series stands for its latest complete checkpoint, the one a restart reads.
    let (src, step) = match is_series(&args.src) {
        true => {
            let (step, master) = latest(&args.src)?;
            (master, Some(step))
        }
        false => (args.src.clone(), None),
    };
    let plan = PackPlan::new(&src, &args.dst, args.force, options)?;
    let total = plan.total_bytes();
    let progress = Progress::bytes(total, "packing", when);
    let packed = plan.run(&|n| progress.add(n));
    progress.finish();
    let packed = packed?;
    let removed = packed.removed.iter().map(|p| show::path(p)).collect();
    let mut summary = Summary::of(&src, &packed.destination, total, packed.report, removed);
    if let Some(step) = step {
        summary.series = Some(show::path(&args.src));
        summary.step = Some(step);
    }
    match json {
        true => show::json(&summary),
        false => {
            print_text(&summary);
            Ok(())
        }
    }
}

#[derive(Serialize)]
struct Summary {
    source: String,
    destination: String,
    /// Bytes of every dataset of SRC.
    bytes: u64,
    packed: Vec<Packed>,
    copied: Vec<Copied>,
    links: Vec<KeptLink>,
    omitted: Vec<Omitted>,
    /// Tile files of the replaced DST (--force).
    removed: Vec<String>,
    /// The series folder SRC was, whose latest complete checkpoint was packed (of `step`).
    #[serde(skip_serializing_if = "Option::is_none")]
    series: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<u64>,
}

#[derive(Serialize)]
struct Packed {
    name: String,
    dtype: String,
    shape: Vec<u64>,
    bytes: u64,
    /// Null: contiguous, uncompressed.
    compression: Option<CompressionJson>,
    /// Bytes it takes in DST.
    stored_bytes: u64,
    /// The compression as text ("zstd:3+shuffle"), for the text output.
    #[serde(skip)]
    codec: Option<String>,
    /// `bytes` divided by `stored_bytes` (null when nothing is stored).
    ratio: Option<f64>,
    slabs: u64,
    /// "h5tile", or "hdf5" for a type h5tile does not read (its sources checked first).
    read_by: &'static str,
    /// Every tile carried checksums and all of them matched.
    checksums_verified: bool,
}

#[derive(Serialize)]
struct Copied {
    name: String,
    /// "group", "dataset", "named datatype" or "object".
    kind: &'static str,
    bytes: u64,
}

#[derive(Serialize)]
struct KeptLink {
    name: String,
    /// "hard", "soft" or "external".
    kind: &'static str,
    target: String,
}

#[derive(Serialize)]
struct Omitted {
    name: String,
    why: String,
}

impl Summary {
    fn of(src: &Path, dst: &Path, bytes: u64, r: PackReport, removed: Vec<String>) -> Summary {
        Summary {
            source: show::path(src),
            destination: show::path(dst),
            bytes,
            packed: r
                .packed
                .into_iter()
                .map(|p| Packed {
                    name: p.name,
                    dtype: p.dtype,
                    shape: p.shape,
                    bytes: p.bytes,
                    codec: p.compression.as_ref().map(show::compression),
                    compression: p.compression.as_ref().map(CompressionJson::of),
                    stored_bytes: p.stored_bytes,
                    ratio: (p.stored_bytes > 0).then(|| p.bytes as f64 / p.stored_bytes as f64),
                    slabs: p.slabs,
                    read_by: if p.by_h5tile { "h5tile" } else { "hdf5" },
                    checksums_verified: p.checksummed,
                })
                .collect(),
            copied: r
                .copied
                .into_iter()
                .map(|c| Copied {
                    name: c.name,
                    kind: c.kind,
                    bytes: c.bytes,
                })
                .collect(),
            links: r
                .links
                .into_iter()
                .map(|l| KeptLink {
                    name: l.name,
                    kind: l.kind,
                    target: l.target,
                })
                .collect(),
            omitted: r
                .omitted
                .into_iter()
                .map(|o| Omitted {
                    name: o.name,
                    why: o.why,
                })
                .collect(),
            removed,
            series: None,
            step: None,
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn print_text(s: &Summary) {
    let (packed, copied, links) = (s.packed.len(), s.copied.len(), s.links.len());
    let compressed = s.packed.iter().filter(|p| p.codec.is_some()).count();
    let made = match compressed {
        0 => "made contiguous".to_string(),
        n => format!("packed ({n} compressed)"),
    };
    let series = match (&s.series, s.step) {
        (Some(dir), Some(step)) => {
            format!("step {step} is the latest complete checkpoint of '{dir}': ")
        }
        _ => String::new(),
    };
    println!(
        "{series}packed '{}' into '{}' ({}): {packed} virtual dataset{} {made}, {copied} \
         object{} copied, {links} link{} kept",
        s.source,
        s.destination,
        show::bytes(s.bytes),
        plural(packed),
        plural(copied),
        plural(links)
    );
    let rows: Vec<Vec<String>> = s
        .packed
        .iter()
        .map(|p| {
            let read = match (p.read_by, p.checksums_verified) {
                ("h5tile", true) => "checksums verified",
                ("h5tile", false) => "not checksummed",
                _ => "read by HDF5, sources checked",
            };
            let stored = match (&p.codec, p.ratio) {
                (Some(codec), Some(ratio)) => format!(
                    "{codec} {} ({} on disk)",
                    show::ratio(ratio),
                    show::bytes(p.stored_bytes)
                ),
                (Some(codec), None) => codec.clone(),
                (None, _) => "contiguous".into(),
            };
            vec![
                p.name.clone(),
                p.dtype.clone(),
                show::shape(&p.shape),
                show::bytes(p.bytes),
                stored,
                format!("{} slab{}, {read}", p.slabs, plural(p.slabs as usize)),
            ]
        })
        .collect();
    for line in show::columns(&rows) {
        println!("    {line}");
    }
    for l in s.links.iter().filter(|l| l.kind == "external") {
        println!("external link kept: {} -> {}", l.name, l.target);
    }
    for o in &s.omitted {
        println!("left out: {}: {}", o.name, o.why);
    }
    for r in &s.removed {
        println!("removed '{r}' (a tile file of the replaced file)");
    }
}
