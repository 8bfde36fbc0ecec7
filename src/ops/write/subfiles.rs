//! The subfiled layout's writer. Within each group of ranks the first rank creates the
//! group's one subfile, with the storage of every tile of every dataset allocated, and hands
//! out the offsets; every rank writes its tiles there; then the first rank syncs the file,
//! once. Rank 0's master maps each dataset to its tiles' datasets in the subfiles.

use super::messages::{
    decode, encode, Allocated, Encoded, Message, Placed, PlacedIn, Planned, Reserved,
};
use super::plan::{ndims, planned_here, Plan};
use super::summing::summarized;
use super::tile_files::subfile_key;
use super::{Checkpoint, Commit, Compression, LayoutWriter};
use crate::geometry::tile::Tile;
use crate::layout::checksums::Summary;
use crate::layout::chunks::{encode_tile, Chunks, CHUNK_BYTES};
use crate::layout::vds::{TileBytes, NO_OFFSET};
use crate::layout::{self, subfiles};
use crate::platform::comm::Comm;
use crate::platform::device::io_threads;
use crate::platform::spill::Spill;
use crate::status::Result;
use std::path::{Path, PathBuf};

pub struct Subfiles;

impl LayoutWriter for Subfiles {
    const IN_TILE_DIR: bool = true;

    fn write_tiles(&self, commit: &Commit, written: &mut Vec<PathBuf>) -> Result<Vec<Placed>> {
        let Commit { comm, ck, plan } = *commit;
        let sync = !ck.options.no_sync;
        let (group, first) = comm.agree_on(|| comm.split_groups(ck.options.ranks_per_file))?;
        let name = layout::subfile_name(subfile_key(ck), plan.generation, first);
        let path = layout::tile_dir(&ck.path).join(name);
        let mine: Vec<Planned> = planned_here(comm, ck)
            .into_iter()
            .filter(|p| !p.tile.is_empty())
            .collect();
        if let Some(compression) = ck.options.compression {
            let at = (path.as_path(), first, mine);
            return write_compressed(comm, &group, ck, plan, at, written, compression);
        }
        let gathered = group.gather_varcount_to_root(&encode(&mine));
        let ndims = ndims(ck);
        // Where every tile of the group goes, decided on its first rank.
        let allocated: Vec<Allocated> = decided_by_first(comm, &group, gathered, |per_rank| {
            let tiles: Vec<Planned> = per_rank
                .iter()
                .flat_map(|w| decode(w, &ndims[..]))
                .collect();
            if tiles.is_empty() {
                return Ok(Vec::new());
            }
            written.push(path.clone());
            let boxes = boxes_of(ck, tiles.iter().map(|p| (p.field, &p.tile)));
            let (specs, spec_of) = coalesced_specs_of(ck, &tiles, &boxes);
            let bytes = subfiles::create(&path, plan.generation, &specs)?;
            let allocated = tiles.iter().zip(spec_of).map(|(p, s)| Allocated {
                rank: p.rank,
                k: p.k,
                bytes: bytes[s],
                within: boxes[p.field].clone(),
            });
            Ok(allocated.collect())
        })?;
        let placed = comm.agree_on(|| {
            let mut placed = Vec::new();
            let here = allocated.iter().filter(|a| a.rank == comm.rank());
            for ((k, f, local), at) in ck.non_empty_tiles().zip(here) {
                debug_assert_eq!(k, at.k);
                let field = &ck.fields[f];
                let len = local.tile.volume() as usize * field.dtype.size();
                let ((), summary) = summarized(field.dtype, local, || match &at.within {
                    None => subfiles::write_tile(&path, at.bytes.data_offset, len, local.buf, sync),
                    Some(within) => {
                        let elem = field.dtype.size();
                        let into = (at.bytes.data_offset, within);
                        subfiles::write_tile_within(&path, into, &local.tile, elem, local.buf, sync)
                    }
                })?;
                placed.push(Placed {
                    k,
                    placed_in: PlacedIn::Subfile(first),
                    bytes: at.bytes,
                    summary,
                });
            }
            Ok(placed)
        })?;
        sync_once(comm, &group, &path, sync && !allocated.is_empty())?;
        Ok(placed)
    }
}

/// A compressed tile of this rank, encoded before its subfile exists (the chunks' sizes decide
/// where they go): where each chunk lies in the rank's spill, by chunk index, and the summary
/// of its uncompressed bytes.
struct EncodedTile {
    chunks: Vec<(u64, usize)>,
    summary: Summary,
}

impl EncodedTile {
    fn sizes(&self) -> Vec<u64> {
        self.chunks.iter().map(|&(_, len)| len as u64).collect()
    }
}

/// Encoded chunks a rank keeps in memory before the rest goes to its spill file.
const SPILL_BUDGET: usize = 16 * CHUNK_BYTES as usize;
/// The most encoded bytes a rank reads back from its spill file at a time to write them.
const WRITE_WINDOW: u64 = 8 * CHUNK_BYTES;

/// The subfiled layout with compressed tiles: each rank encodes its tiles' chunks first (their
/// sizes decide where they go) and keeps them in a `Spill` (memory stays bounded: beyond a
/// budget they wait in an unnamed file in the tile folder), the group's first rank creates the
/// subfile with every chunk's place reserved, and each rank writes its own chunks there.
fn write_compressed(
    comm: &Comm,
    group: &Comm,
    ck: &Checkpoint,
    plan: &Plan,
    (path, first, mine): (&Path, usize, Vec<Planned>),
    written: &mut Vec<PathBuf>,
    compression: Compression,
) -> Result<Vec<Placed>> {
    let sync = !ck.options.no_sync;
    let folder = path.parent().unwrap_or(Path::new("."));
    let mut spill = Spill::new(folder, SPILL_BUDGET);
    let encoded: Vec<(usize, EncodedTile)> = comm.agree_on(|| {
        let mut out = Vec::new();
        for (k, f, local) in ck.non_empty_tiles() {
            let dtype = ck.fields[f].dtype;
            let chunks = Chunks::new(&local.tile.shape, dtype.size(), CHUNK_BYTES);
            let pipeline = compression.pipeline(dtype.size());
            let mut kept = vec![(0, 0); chunks.count() as usize];
            let summary = encode_tile(
                &chunks,
                &pipeline,
                dtype,
                local.buf,
                io_threads(),
                |i, b| {
                    kept[i as usize] = (spill.append(b)?, b.len());
                    Ok(())
                },
            )?;
            out.push((
                k,
                EncodedTile {
                    chunks: kept,
                    summary,
                },
            ));
        }
        Ok(out)
    })?;
    let sizes: Vec<Encoded> = encoded
        .iter()
        .map(|(k, e)| Encoded {
            rank: comm.rank(),
            k: *k,
            sizes: e.sizes(),
        })
        .collect();
    let gathered = group.gather_varcount_to_root(&encode(&mine));
    let gathered_sizes = group.gather_varcount_to_root(&encode(&sizes));
    let ndims = ndims(ck);
    // Where every chunk of the group goes, decided on its first rank.
    let gathered = gathered.zip(gathered_sizes);
    let reserved: Vec<Reserved> =
        decided_by_first(comm, group, gathered, |(per_rank, sizes_per_rank)| {
            let tiles: Vec<Planned> = per_rank
                .iter()
                .flat_map(|w| decode(w, &ndims[..]))
                .collect();
            let sizes: Vec<Encoded> = sizes_per_rank.iter().flat_map(|w| decode(w, ())).collect();
            if tiles.is_empty() {
                return Ok(Vec::new());
            }
            written.push(path.to_path_buf());
            let specs = specs_of(ck, &tiles);
            // Both lists hold the group's tiles in rank order, then `k`.
            let chunk_sizes: Vec<Vec<u64>> = sizes.iter().map(|e| e.sizes.clone()).collect();
            let placed = subfiles::create_compressed(
                path,
                plan.generation,
                &specs,
                &chunk_sizes,
                compression,
            )?;
            let reserved = tiles
                .iter()
                .zip(placed)
                .map(|(p, (file_size, addrs))| Reserved {
                    rank: p.rank,
                    k: p.k,
                    file_size,
                    addrs,
                });
            Ok(reserved.collect())
        })?;
    let placed = comm.agree_on(|| {
        let mut placed = Vec::new();
        let here = reserved.iter().filter(|r| r.rank == comm.rank());
        for ((k, tile), at) in encoded.iter().zip(here) {
            debug_assert_eq!(*k, at.k);
            write_kept_chunks(path, &spill, &tile.chunks, &at.addrs, sync)?;
            placed.push(Placed {
                k: *k,
                placed_in: PlacedIn::Subfile(first),
                bytes: TileBytes {
                    data_offset: NO_OFFSET,
                    file_size: at.file_size,
                },
                summary: tile.summary.clone(),
            });
        }
        Ok(placed)
    })?;
    sync_once(comm, group, path, sync && !reserved.is_empty())?;
    Ok(placed)
}

/// What the group's first rank decides from what it gathered (`decide` runs where `gathered`
/// is Some: on that rank), handed to every rank of the group once every rank of `comm` has
/// agreed that it succeeded.
fn decided_by_first<G, M: for<'c> Message<Context<'c> = ()>>(
    comm: &Comm,
    group: &Comm,
    gathered: Option<G>,
    decide: impl FnOnce(G) -> Result<Vec<M>>,
) -> Result<Vec<M>> {
    let mut words = comm.agree_on(|| match gathered {
        Some(gathered) => Ok(encode(&decide(gathered)?)),
        None => Ok(Vec::new()),
    })?;
    group.broadcast_vec(&mut words);
    Ok(decode(&words, ()))
}

/// Every rank of the group has written its tiles to `path`: one sync by the group's first rank
/// (where `sync`) covers them all.
fn sync_once(comm: &Comm, group: &Comm, path: &Path, sync: bool) -> Result<()> {
    comm.agree_on(|| match group.is_root() && sync {
        true => layout::sync_path(path),
        false => Ok(()),
    })
}

/// Writes a tile's encoded chunks, kept in `spill` at `chunks` (by chunk index), to their
/// places `addrs` in the subfile `path`: in windows of consecutive kept bytes, each read back
/// once (or used where it lies in memory).
fn write_kept_chunks(
    path: &Path,
    spill: &Spill,
    chunks: &[(u64, usize)],
    addrs: &[u64],
    sync: bool,
) -> Result<()> {
    // Encoders finish out of order: the chunks in the order they were kept.
    let mut order: Vec<usize> = (0..chunks.len()).collect();
    order.sort_by_key(|&i| chunks[i].0);
    let mut scratch = Vec::new();
    let mut rest = &order[..];
    while let Some(&head) = rest.first() {
        let start = chunks[head].0;
        // Kept bytes are consecutive: a window is the chunks up to WRITE_WINDOW past its start.
        let n = rest
            .iter()
            .take_while(|&&i| i == head || chunks[i].0 + chunks[i].1 as u64 - start <= WRITE_WINDOW)
            .count();
        let (window, later) = rest.split_at(n);
        let last = chunks[window[n - 1]];
        let len = (last.0 + last.1 as u64 - start) as usize;
        let sizes: Vec<u64> = window.iter().map(|&i| chunks[i].1 as u64).collect();
        let places: Vec<u64> = window.iter().map(|&i| addrs[i]).collect();
        spill.with_bytes(start, len, &mut scratch, |stored| {
            subfiles::write_chunks(path, stored, &sizes, &places, sync)
        })?;
        rest = later;
    }
    Ok(())
}

/// The boxes of the fields whose tiles of one group are stored coalesced (`tiles`: each tile's
/// field and box), where the options ask for it (`subfiles::coalesced`). Compressed tiles are
/// never coalesced: each keeps its own chunks.
pub fn boxes_of<'a>(
    ck: &Checkpoint,
    tiles: impl Iterator<Item = (usize, &'a Tile)>,
) -> Vec<Option<Tile>> {
    match ck.options.coalesce && ck.options.compression.is_none() {
        true => subfiles::coalesced(tiles, ck.fields.len()),
        false => vec![None; ck.fields.len()],
    }
}

/// The datasets of a group's subfile: a box for each field in `boxes`, made once, and a dataset
/// for each other tile; with, for each of `tiles`, the index of its dataset.
fn coalesced_specs_of<'a>(
    ck: &'a Checkpoint,
    tiles: &'a [Planned],
    boxes: &'a [Option<Tile>],
) -> (Vec<subfiles::SubfileTile<'a>>, Vec<usize>) {
    let mut specs = specs_of(ck, tiles);
    let mut made: Vec<Option<usize>> = vec![None; boxes.len()];
    let mut kept = Vec::with_capacity(tiles.len());
    let mut spec_of = Vec::with_capacity(tiles.len());
    for (p, spec) in tiles.iter().zip(specs.drain(..)) {
        let Some(within) = &boxes[p.field] else {
            spec_of.push(kept.len());
            kept.push(spec);
            continue;
        };
        let at = *made[p.field].get_or_insert_with(|| {
            kept.push(subfiles::SubfileTile {
                dataset: subfiles::box_dataset(p.field),
                tile: within,
                ..spec
            });
            kept.len() - 1
        });
        spec_of.push(at);
    }
    (kept, spec_of)
}

/// The group's tiles as the subfile is made for them: whose, which field, where.
fn specs_of<'a>(ck: &'a Checkpoint, tiles: &'a [Planned]) -> Vec<subfiles::SubfileTile<'a>> {
    tiles
        .iter()
        .map(|p| subfiles::SubfileTile {
            dataset: subfiles::tile_dataset(p.rank, p.k),
            rank: p.rank,
            dtype: ck.fields[p.field].dtype,
            global: &ck.fields[p.field].global,
            tile: &p.tile,
        })
        .collect()
}
