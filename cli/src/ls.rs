//! `h5tile ls FILE [DATASET]`: every dataset of a file (or the one named) with its element
//! type, shape and storage; for a virtual one, whose layout it is, the write that made it, its
//! tiles and files, and whether it is checksummed; the file's attributes and each dataset's.
//! `-l` and `-D` add a line per tile.
//! `h5tile ls DIR`, for a series folder, is the `series` module's: a line per checkpoint.
//! Several files and folders are listed one after the other, each under its name.

use crate::dataset_json::DatasetJson;
use crate::failure::{Failure, FailureJson};
use crate::series;
use crate::show;
use h5tile::internals::status;
use h5tile::internals::tool::{
    describe_stored, root_attributes, DatasetInfo, ListedValue, StorageKind, Stored, TileInfo,
    VirtualInfo, VirtualLayout,
};
use serde::Serialize;
use std::path::{Path, PathBuf};

pub const LONG_ABOUT: &str = "\
List every dataset of FILE, or only DATASET: its path, element type, shape, storage
(contiguous, chunked, compact or virtual) and size in bytes. For a virtual dataset also: its
layout (h5tile VDS, h5tile subfiles, or other virtual, such as h5py's and Legate's; where
the default, H5TILE_LAYOUT_AUTO, chose it, how many ranks on how many nodes it saw), the
write that made it (its generation, from h5tile's tile names), its number of tiles (mappings)
and of distinct source files, and whether its tiles are checksummed (else how many are not)
and how: \"1 MiB boxes, 8 KiB wide\" (a tile whose rows are wider than 8 KiB is checksummed in
boxes of 8 KiB of 128 rows, so that a read of a narrower chunk checks about its own bytes; a
narrower tile in runs of 1 MiB of its bytes) or \"1 MiB runs\" (files written before boxes,
and compressed tiles);
where its tiles are compressed, whether their stored chunks are checksummed too (a master
written before h5tile recorded them is checked through its decoded blocks instead).
For a contiguous dataset h5tile wrote in the single-file layout, the same of the tiles written
into it (\"h5tile single-file\"; their bytes are in the file itself).

A compressed (or otherwise filtered) dataset also shows its codec and its compression ratio
(its bytes divided by its bytes on disk): \"zstd:1+shuffle 3.10x (77.4 KiB on disk)\"; for a
virtual dataset, those of its tiles' datasets together; with -l or -D, each tile's. Nothing is
shown for a dataset stored as it is.

Nothing is read but metadata: the file's and, for a virtual dataset h5tile wrote, what its
master records (its tiles' files are not opened, except to learn how compressed tiles are
stored); for other virtual datasets, its tiles' files' (their filters and sizes on disk). The tiles' smallest and largest values and NaN counts shown by -l
are those h5tile recorded in the master when it wrote them (\"-\" where nothing was recorded).

Attributes are shown too: the file's own (its root group's: a checkpoint's step and time, say)
and each dataset's, in name order, but not h5tile's own records (names starting \"h5tile_\")
nor the bookkeeping of dimensions (DIMENSION_LIST, REFERENCE_LIST, CLASS, NAME,
_ARRAY_DIMENSIONS, _Netcdf4*, _NCProperties, _nc3_strict). A value is shown as: text in double
quotes (control characters escaped, cut after 80 characters with \"…\"); a number, or a
one-dimensional array of at most 8 as [1, 2, 3] (floats as the shortest text that reads back as
them: 0.25, 1.0, 1e-30); else its type and extents (\"int64[1000]\", \"float64[3, 4]\",
\"compound\", \"reference\"); \"<unreadable: why>\" for one that cannot be read. A dataset of
more than 4,096 tiles has its attributes not listed (one entry \"(attributes)\" says so): HDF5
reads every attribute of an object to list them, h5tile's records of each tile included.

Output: where the file has attributes, a first line such as
  /: step = 50, time = 0.25
then one line per dataset, each followed (where it has attributes) by an indented line such as
    @ scale = 2.5, units = \"K\"
(attributes longer than 160 characters together take a line each, \"/: ...\" or \"    @ ...\");
with -l or -D one more line per tile, indented. With --json, one document {\"file\",
\"attributes\", \"datasets\": [{\"name\", \"dtype\", \"shape\", \"storage\", \"chunks\",
\"bytes\", \"compression\", \"filters\", \"stored_bytes\", \"ratio\", \"attributes\", \"virtual\": {\"layout\",
\"chosen_by_auto\" ({\"ranks\", \"nodes\", \"most_tiles_a_rank\"} or null), \"generation\", \"tiles\", \"files\", \"checksummed\", \"not_checksummed\",
\"checksum_blocks\" ({\"kind\": \"boxes\" or \"runs\", \"block_bytes\", \"row_bytes\" (null for runs)} or
null), \"chunks_checksummed\", \"chunks_not_checksummed\", \"tile_list\"},
\"single\": {the same, layout \"h5tile-single\"}}]} (\"virtual\" and \"single\" only where they
apply); \"compression\" is {\"codec\", \"level\", \"shuffle\"} or null (not compressed),
\"filters\" HDF5's filter ids, \"stored_bytes\" and \"ratio\" null where not known (a tile file
missing); \"tile_list\", present with -l or -D, holds per tile {\"offset\", \"shape\", \"file\",
\"dataset\", \"source_offset\", \"within\", \"found\", \"path\", \"data_offset\", \"file_size\",
\"checksummed\", \"checksum_blocks\" (\"boxes\", \"runs\" or null), \"chunks_checksummed\", \"compression\", \"filters\", \"stored_bytes\", \"ratio\",
\"min\", \"max\", \"nan\"}; \"chunks_checksummed\" is null where nothing is compressed;
\"attributes\" (the file's, and each dataset's) is {name: value}, a value a number (null for NaN
and infinities), a bool, a string (whole), an array of those, or the text shown for any other
(\"int64[1000]\").

With DIR, a series folder (numbered checkpoints ckpt.<step>.h5 and the record `latest`, as
h5tile's series write them; or an empty folder): one line per checkpoint, newest first: its
step, \"latest\" on the newest complete one (the one a restart reads) or \"incomplete\" on a step
whose write did not commit (only its tile folder or temporary masters are left, or its master
does not open as HDF5), or \"pruning interrupted\" on a step with no master older than the
latest complete one (a commit's pruning removes a checkpoint's master first, and stopped before
the rest: the next commit removes it), its file, the space its files use on disk (the
master, its tile folder and any temporary masters; their apparent size beside it where that
differs: a large tile's data is aligned after a hole) and its datasets with their types and
shapes; then a line when the record names another step than the latest complete one. With
--json, one document {\"dir\", \"latest\", \"record\", \"checkpoints\": [{\"step\", \"file\",
\"latest\", \"complete\", \"incomplete\", \"incomplete_kind\" (\"not_committed\",
\"pruning_interrupted\", \"not_hdf5\" or null), \"bytes\" (apparent), \"used_bytes\" (on
disk), \"tile_dir\", \"temporaries\", \"error\", \"datasets\": [as for a FILE]}]}. DATASET, -l
and -D are for a FILE: give a checkpoint's file.

Several FILEs and DIRs are listed in turn, each under a line \"<path>:\" and apart by an empty
line; with --json, one document {\"ok\", \"listings\": [the document of each, or {\"file\",
\"error\"} for one that cannot be opened], \"failure\"}. The last of several arguments is
DATASET (of each FILE) when no file or folder of that name exists.

Exit status: 0 on success, 2 when FILE, DATASET or DIR cannot be opened (the others are still
listed).";

pub const EXAMPLES: &str = "\
Examples:
  h5tile ls ckpt/step100.h5
  h5tile ls -l ckpt/step100.h5 /temperature      # min, max and NaNs of every tile
  h5tile ls -D ckpt/step100.h5                   # which tile file holds which box
  h5tile ls --json ckpt/step100.h5 | jq '.datasets[].shape'
  h5tile ls ckpt/step100.h5 ckpt/step200.h5 /temperature   # one dataset of each
  h5tile ls run/series/                          # its checkpoints, the latest marked";

#[derive(clap::Args)]
pub struct Args {
    /// The HDF5 files, or series folders (DIR); then, optionally, DATASET: only this dataset
    /// (its path in the files, e.g. /temperature)
    #[arg(required = true, value_name = "FILE|DIR")]
    files: Vec<PathBuf>,
    /// One more line per tile: its box, smallest and largest value, and NaN count (and its
    /// codec and ratio, when compressed)
    #[arg(short = 'l', long = "long")]
    long: bool,
    /// One more line per tile: the box it covers and the file and dataset holding it
    #[arg(short = 'D', long = "decomposition")]
    decomposition: bool,
}

impl Args {
    /// The files and folders to list, and the dataset: the last of several arguments when no
    /// file or folder of that name exists.
    fn targets(&self) -> (&[PathBuf], Option<&str>) {
        match self.files.split_last() {
            Some((last, files))
                if !files.is_empty() && std::fs::symlink_metadata(last).is_err() =>
            {
                (files, last.to_str())
            }
            _ => (&self.files, None),
        }
    }
}

/// One FILE's or DIR's listing: its lines of text and its JSON document.
struct Listed {
    lines: Vec<String>,
    json: ListingJson,
}

/// The JSON document of a FILE, of a DIR, or of one that cannot be opened (among several).
#[derive(Serialize)]
#[serde(untagged)]
enum ListingJson {
    File(Listing),
    Series(series::Listing),
    Error { file: String, error: String },
}

/// `ls` of several FILEs and DIRs with --json.
#[derive(Serialize)]
struct Several {
    ok: bool,
    listings: Vec<ListingJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<FailureJson>,
}

pub fn run(args: &Args, json: bool) -> Result<(), Failure> {
    let (files, dataset) = args.targets();
    let several = files.len() > 1;
    let mut listed: Vec<Result<Listed, Failure>> = files
        .iter()
        .map(|file| list(file, dataset, args, several))
        .collect();
    if !several {
        let one = listed.pop().expect("one FILE or DIR")?;
        return match json {
            true => show::json(&one.json),
            false => {
                one.lines.iter().for_each(|line| println!("{line}"));
                Ok(())
            }
        };
    }
    // The first that cannot be opened is the failure's message (stderr): not shown twice.
    let first = listed.iter().position(Result::is_err);
    let failure = first.map(|k| {
        let failed = listed.iter().filter(|l| l.is_err()).count();
        let first = listed[k].as_ref().err().expect("failed");
        let more = match failed {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        Failure {
            message: format!("{}{more}", first.message),
            status: first.status,
            ..Failure::new(first.code, "")
        }
    });
    if json {
        let listings = files
            .iter()
            .zip(listed)
            .map(|(file, l)| match l {
                Ok(l) => l.json,
                Err(f) => ListingJson::Error {
                    file: show::path(file),
                    error: f.message,
                },
            })
            .collect();
        show::json(&Several {
            ok: failure.is_none(),
            listings,
            failure: failure.as_ref().map(Failure::json),
        })?;
        return failure.map_or(Ok(()), |f| Err(f.reported()));
    }
    let blocks = files
        .iter()
        .zip(&listed)
        .enumerate()
        .filter(|&(k, _)| Some(k) != first);
    for (n, (_, (file, l))) in blocks.enumerate() {
        if n > 0 {
            println!();
        }
        println!("{}:", file.display());
        match l {
            Ok(l) => l.lines.iter().for_each(|line| println!("{line}")),
            Err(f) => println!("{}", f.message),
        }
    }
    failure.map_or(Ok(()), Err)
}

/// The listing of `file` (a FILE or a DIR), or only of `dataset` of a FILE; `several` when
/// it is one of several arguments (and DATASET may be a file's name mistyped).
fn list(file: &Path, dataset: Option<&str>, args: &Args, several: bool) -> Result<Listed, Failure> {
    if series::is_series(file) {
        if dataset.is_some() || args.long || args.decomposition {
            return Err(Failure::usage(format!(
                "'{}' is a series folder: DATASET, -l and -D are for one checkpoint's file",
                file.display()
            )));
        }
        let (lines, listing) = series::ls(file)?;
        return Ok(Listed {
            lines,
            json: ListingJson::Series(listing),
        });
    }
    let datasets = describe_stored(file, dataset).map_err(|e| {
        let no_dataset = matches!(
            e.status,
            status::H5TILE_ERR_NOT_FOUND | status::H5TILE_ERR_NOT_A_DATASET
        );
        let mut failure = Failure::from(e);
        // "ls a.h5 b.h5c": no dataset 'b.h5c', and no such file either.
        if let Some(name) = dataset.filter(|_| several && no_dataset && file.exists()) {
            failure.message.push_str(&format!(
                " (nor is there a file or folder '{name}' to list)"
            ));
        }
        failure
    })?;
    let root = root_attributes(file).map_err(Failure::from)?;
    let per_tile = args.long || args.decomposition;
    let json = ListingJson::File(Listing {
        file: show::path(file),
        attributes: show::attributes_json(&root),
        datasets: datasets
            .iter()
            .map(|d| DatasetJson::of(d, per_tile))
            .collect(),
    });
    Ok(Listed {
        lines: text(file, &root, &datasets, args),
        json,
    })
}

/// `ls FILE`'s lines: the file's attributes (`root`), a line per dataset followed by its
/// attributes, and with -l or -D one per tile.
fn text(
    file: &Path,
    root: &[(String, ListedValue)],
    datasets: &[DatasetInfo],
    args: &Args,
) -> Vec<String> {
    let mut lines = attribute_lines("/:", root);
    let per_tile = args.long || args.decomposition;
    if datasets.is_empty() {
        lines.push(format!("{}: no datasets", file.display()));
    }
    // A column for the filters where any dataset has some.
    let filtered = datasets
        .iter()
        .any(|d| d.stored.as_ref().is_some_and(Stored::filtered));
    let rows: Vec<Vec<String>> = datasets.iter().map(|d| summary_row(d, filtered)).collect();
    for (line, info) in show::columns(&rows).into_iter().zip(datasets) {
        lines.push(line);
        lines.extend(attribute_lines("    @", &info.attributes));
        let Some(vds) = info.tiled().filter(|_| per_tile) else {
            continue;
        };
        let filtered = vds
            .tiles
            .iter()
            .any(|t| t.stored.as_ref().is_some_and(Stored::filtered));
        let tiles: Vec<Vec<String>> = vds
            .tiles
            .iter()
            .enumerate()
            .map(|(i, t)| tile_row(i, t, args, filtered))
            .collect();
        for line in show::columns(&tiles) {
            lines.push(format!("    {line}"));
        }
    }
    lines
}

/// The longest line of attributes `ls` writes; longer, each has a line of its own.
const ATTRIBUTE_LINE: usize = 160;

/// `attributes` after `head`, "name = value" apart by commas ("/: step = 50, time = 0.25"), or
/// where that line is longer than `ATTRIBUTE_LINE`, one line each after `head`; no lines for
/// none.
fn attribute_lines(head: &str, attributes: &[(String, ListedValue)]) -> Vec<String> {
    let parts: Vec<String> = attributes
        .iter()
        .map(|(name, value)| format!("{name} = {value}"))
        .collect();
    if parts.is_empty() {
        return Vec::new();
    }
    let line = format!("{head} {}", parts.join(", "));
    match line.chars().count() <= ATTRIBUTE_LINE {
        true => vec![line],
        false => parts.iter().map(|p| format!("{head} {p}")).collect(),
    }
}

/// How `stored` is shown in a column of filters: "-" where it is not known.
fn stored_cell(stored: Option<&Stored>) -> String {
    stored.map_or("-".into(), show::stored)
}

/// The cells of a dataset's line; with `filtered`, one for its filters and ratio.
fn summary_row(info: &DatasetInfo, filtered: bool) -> Vec<String> {
    let storage = match &info.storage {
        StorageKind::Chunked(chunk) => format!("chunked {}", show::shape(chunk)),
        other => other.name().to_string(),
    };
    let mut row = vec![
        info.name.clone(),
        info.dtype.clone(),
        show::shape(&info.shape),
        storage,
        show::bytes(info.bytes()),
    ];
    if filtered {
        row.push(stored_cell(info.stored.as_ref()));
    }
    if let Some(vds) = info.tiled() {
        row.push(virtual_summary(vds));
    }
    row
}

/// "h5tile VDS, generation 0123456789abcdef, 4 tiles in 4 files, checksummed (1 MiB boxes,
/// 8 KiB wide)" ("h5tile single-file, 4 tiles, checksummed (...)").
fn virtual_summary(vds: &VirtualInfo) -> String {
    let mut parts = vec![match vds.chosen_on {
        Some((ranks, nodes, most)) => format!(
            "{} (chosen by H5TILE_LAYOUT_AUTO: {ranks} rank{} on {nodes} node{}{})",
            vds.layout.name(),
            plural(ranks as usize),
            plural(nodes as usize),
            match most {
                Some(n) => format!(", at most {n} tile{} a rank", plural(n as usize)),
                None => String::new(),
            }
        ),
        None => vds.layout.name().to_string(),
    }];
    if let Some(g) = vds.generation {
        parts.push(format!("generation {g:016x}"));
    }
    let (tiles, files) = (vds.tiles.len(), vds.files().len());
    parts.push(match vds.layout {
        VirtualLayout::Single => format!("{tiles} tile{}", plural(tiles)),
        _ => format!(
            "{tiles} tile{} in {files} file{}",
            plural(tiles),
            plural(files)
        ),
    });
    let with_data = vds.tiles.iter().filter(|t| t.region.is_some()).count();
    parts.push(match vds.not_checksummed() {
        0 if with_data > 0 => match vds.checksums {
            Some(scheme) => format!("checksummed ({})", scheme.describe()),
            None => "checksummed".to_string(),
        },
        n if n == with_data => "not checksummed".to_string(),
        n => format!("{n} of {with_data} tiles not checksummed"),
    });
    parts.extend(match vds.chunks_not_checksummed() {
        (0, _) => None,
        (_, 0) => Some("stored chunks checksummed".to_string()),
        (n, not) if not == n => Some("stored chunks not checksummed".to_string()),
        (n, not) => Some(format!(
            "stored chunks of {not} of {n} compressed tiles not checksummed"
        )),
    });
    parts.join(", ")
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The cells of a tile's line: its box; with `filtered` its filters and ratio; with -l its
/// extremes; with -D where it comes from.
fn tile_row(i: usize, tile: &TileInfo, args: &Args, filtered: bool) -> Vec<String> {
    let region = tile
        .region
        .as_ref()
        .map_or("(nothing)".to_string(), ToString::to_string);
    let mut row = vec![format!("tile {i}"), region];
    if filtered {
        row.push(stored_cell(tile.stored.as_ref()));
    }
    if args.long {
        let e = tile.extremes;
        row.push(format!(
            "min {}",
            e.map_or("-".into(), |e| e.min.to_string())
        ));
        row.push(format!(
            "max {}",
            e.map_or("-".into(), |e| e.max.to_string())
        ));
        row.push(format!(
            "nan {}",
            e.map_or("-".into(), |e| e.nan.to_string())
        ));
    }
    if args.decomposition {
        let mut from = format!("<- {} {}", tile.file, tile.dataset);
        if let (Some(offset), Some(region)) = (&tile.source_offset, &tile.region) {
            let source = h5tile::internals::Tile::new(offset.clone(), region.shape.clone());
            from.push_str(&source.to_string());
        }
        if !tile.found && !tile.pattern {
            from.push_str(" (missing)");
        }
        row.push(from);
    }
    row
}

#[derive(Serialize)]
struct Listing {
    file: String,
    /// The file's own (its root group's) attributes but h5tile's: {name: value}.
    attributes: serde_json::Map<String, serde_json::Value>,
    datasets: Vec<DatasetJson>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use h5tile::internals::tool::ListedNumber;

    #[test]
    fn attributes_take_a_line_each_when_together_they_are_too_long() {
        let int = |v| ListedValue::Numbers {
            values: vec![ListedNumber::Int(v)],
            array: false,
        };
        let short = [("a".to_string(), int(1)), ("b".to_string(), int(2))];
        assert_eq!(attribute_lines("/:", &short), ["/: a = 1, b = 2"]);
        assert!(attribute_lines("    @", &[]).is_empty());
        let text = ListedValue::Texts {
            values: vec!["x".repeat(75)],
            array: false,
        };
        let long = [("a".to_string(), text.clone()), ("b".to_string(), text)];
        let lines = attribute_lines("    @", &long);
        assert_eq!(lines.len(), 2);
        assert!(lines[1].starts_with("    @ b = \"xx"), "{lines:?}");
    }
}
