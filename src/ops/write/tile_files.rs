//! The VDS layout's writer: each rank writes each of its non-empty tiles to a file of its own
//! in the tile folder; rank 0's master maps every dataset to its tiles' files.

use super::messages::{placed_record, Placed, PlacedIn};
use super::plan::Plan;
use super::summing::summarized;
use super::{Checkpoint, Commit, Compression, Field, LayoutWriter, LocalTile};
use crate::geometry::tile::Tile;
use crate::layout;
use crate::layout::checksums::{self, Summary};
use crate::layout::vds::{self, TileBytes};
use crate::platform::hdf5::File;
use crate::platform::tile_bytes::{sync_paths, Durability};
use crate::status::Result;
use std::path::{Path, PathBuf};

pub struct TileFiles;

impl LayoutWriter for TileFiles {
    const IN_TILE_DIR: bool = true;

    fn write_tiles(&self, commit: &Commit, written: &mut Vec<PathBuf>) -> Result<Vec<Placed>> {
        let Commit { comm, ck, plan } = *commit;
        let dir = layout::tile_dir(&ck.path);
        let durability = ck.tile_durability();
        comm.agree_on(|| {
            let mut placed = Vec::new();
            let first = written.len();
            for (k, f, local) in ck.non_empty_tiles() {
                let field = &ck.fields[f];
                let name = layout::tile_file_name(&field.dataset, plan.generation, comm.rank(), k);
                let path = dir.join(name);
                written.push(path.clone());
                let (bytes, summary) =
                    write_tile_file(&path, field, local, ck.options.compression, durability)?;
                placed.push(Placed {
                    k,
                    placed_in: PlacedIn::OwnFile,
                    bytes,
                    summary,
                });
            }
            // The rank's tile files synced together: one journal commit for many.
            if durability == Durability::SyncLater {
                sync_paths(&written[first..])?;
            }
            Ok(placed)
        })
    }
}

/// Writes `local`, a tile of `field`, as the tile file `path` (compressed so, or not), and
/// returns where its bytes are and the summary the master records of them. The one way a tile
/// file is made: by a rank of a collective write, and by an independent writer of a
/// transaction (`ops::transaction`).
pub fn write_tile_file(
    path: &Path,
    field: &Field,
    local: &LocalTile,
    compression: Option<Compression>,
    durability: Durability,
) -> Result<(TileBytes, Summary)> {
    let (global, tile, dtype) = (&field.global, &local.tile, field.dtype);
    match compression {
        Some(c) => vds::write_compressed_tile(path, dtype, tile, global, local.buf, durability, c),
        None => summarized(dtype, local, || {
            vds::write_tile(path, dtype, tile, global, local.buf, durability)
        }),
    }
}

/// The master of the layouts that keep tiles in the tile folder: a virtual dataset per field
/// mapping each tile to the file `placed` names (its own, or its group's subfile).
pub fn master_of_sources(
    tmp: &Path,
    ck: &Checkpoint,
    plan: &Plan,
    placed: &[Vec<Placed>],
) -> Result<File> {
    let dir = layout::tile_dir(&ck.path);
    let dir_name = dir.file_name().unwrap_or_default().to_string_lossy();
    let mut mapped = Vec::new();
    for (f, field) in ck.fields.iter().enumerate() {
        let mut sources = Vec::new();
        let mut summaries: Vec<Summary> = Vec::new();
        let boxes = coalesced_boxes(ck, plan, placed, f);
        for p in plan.tiles_of(f) {
            let record = placed_record(placed, p);
            let (file, dataset, within) = match record.placed_in {
                PlacedIn::Subfile(first) => {
                    let within = boxes.get(&first).cloned().flatten();
                    let dataset = match within {
                        Some(_) => layout::subfiles::box_dataset(f),
                        None => layout::subfiles::tile_dataset(p.rank, p.k),
                    };
                    let name = layout::subfile_name(subfile_key(ck), plan.generation, first);
                    (name, dataset, within)
                }
                _ => (
                    layout::tile_file_name(&field.dataset, plan.generation, p.rank, p.k),
                    vds::TILE_DATASET.to_string(),
                    None,
                ),
            };
            sources.push(vds::Source {
                tile: p.tile.clone(),
                file: format!("{dir_name}/{file}"),
                dataset,
                bytes: record.bytes,
                within,
            });
            summaries.push(record.summary.clone());
        }
        mapped.push((sources, summaries));
    }
    master_mapping(tmp, ck, &mapped)
}

/// The new master at `tmp` of the layouts that keep tiles in the tile folder: field `f` of
/// `ck` a virtual dataset mapping `mapped[f]`'s sources, recording their summaries (and, with
/// `H5TILE_KEEP_OTHERS`, the old file's other contents). The one way such a master is made:
/// by a collective write and by a transaction's commit (`ops::transaction`).
pub fn master_mapping(
    tmp: &Path,
    ck: &Checkpoint,
    mapped: &[(Vec<vds::Source>, Vec<Summary>)],
) -> Result<File> {
    let datasets = ck.datasets();
    let file = layout::keep::new_master(tmp, ck.keep_from().map(|old| (old, &datasets[..])))?;
    let scheme = checksums::scheme_for(ck.options.compression.is_some());
    for (field, (sources, summaries)) in ck.fields.iter().zip(mapped) {
        vds::add_virtual_dataset(
            &file,
            &field.dataset,
            field.dtype,
            &field.global,
            sources,
            (
                summaries,
                scheme,
                ck.options.chosen_on.map(|c| c.recorded()),
            ),
        )?;
    }
    Ok(file)
}

/// The boxes field `f`'s tiles fill in each subfile (by the group's first rank) where they are
/// stored coalesced: decided from the same tiles as the group's first rank decided it
/// (`subfiles::boxes_of`).
fn coalesced_boxes(
    ck: &Checkpoint,
    plan: &Plan,
    placed: &[Vec<Placed>],
    f: usize,
) -> std::collections::HashMap<usize, Option<Tile>> {
    let mut groups: std::collections::HashMap<usize, Vec<&Tile>> = Default::default();
    for p in plan.tiles_of(f) {
        if let PlacedIn::Subfile(first) = placed_record(placed, p).placed_in {
            groups.entry(first).or_default().push(&p.tile);
        }
    }
    groups
        .into_iter()
        .map(|(first, tiles)| {
            let boxes = super::subfiles::boxes_of(ck, tiles.into_iter().map(|t| (f, t)));
            (first, boxes[f].clone())
        })
        .collect()
}

/// The dataset whose name a commit's subfiles carry: its first (the subfiles of a checkpoint
/// hold the tiles of every dataset, so the name only helps a person tell commits apart).
pub fn subfile_key<'a>(ck: &'a Checkpoint) -> &'a str {
    ck.fields
        .first()
        .map_or("checkpoint", |f| f.dataset.as_str())
}
