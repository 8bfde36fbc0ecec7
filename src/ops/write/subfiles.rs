//! The subfiled layout's writer. Within each group of ranks the first rank creates the
//! group's one subfile, with the storage of every tile of every dataset allocated, and hands
//! out the offsets; every rank writes its tiles there; then the first rank syncs the file,
//! once. Rank 0's master maps each dataset to its tiles' datasets in the subfiles.

use super::messages::{decode, encode, Allocated, Encoded, Placed, PlacedIn, Planned, Reserved};
use super::plan::{ndims, planned_here, Plan};
use super::summing::summarized;
use super::tile_files::subfile_key;
use super::{Checkpoint, Compression, LayoutWriter};
use crate::layout::checksums::Summary;
use crate::layout::chunks::{encode_tile, Chunks, CHUNK_BYTES};
use crate::layout::vds::{TileBytes, NO_OFFSET};
use crate::layout::{self, subfiles};
use crate::platform::comm::Comm;
use crate::platform::device::io_threads;
use crate::status::Result;
use std::path::{Path, PathBuf};

pub struct Subfiles;

impl LayoutWriter for Subfiles {
    const IN_TILE_DIR: bool = true;

    fn write_tiles(
        &self,
        comm: &Comm,
        ck: &Checkpoint,
        plan: &Plan,
        written: &mut Vec<PathBuf>,
    ) -> Result<Vec<Placed>> {
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
        let created = comm.agree_on(|| {
            let Some(per_rank) = gathered else {
                return Ok(Vec::new());
            };
            let tiles: Vec<Planned> = per_rank
                .iter()
                .flat_map(|w| decode(w, &ndims[..]))
                .collect();
            if tiles.is_empty() {
                return Ok(Vec::new());
            }
            written.push(path.clone());
            let specs = specs_of(ck, &tiles);
            let bytes = subfiles::create(&path, plan.generation, &specs)?;
            let allocated: Vec<Allocated> = tiles
                .iter()
                .zip(bytes)
                .map(|(p, bytes)| Allocated {
                    rank: p.rank,
                    k: p.k,
                    bytes,
                })
                .collect();
            Ok(encode(&allocated))
        })?;
        let mut words = created;
        group.broadcast_vec(&mut words);
        let allocated: Vec<Allocated> = decode(&words, ());
        let placed = comm.agree_on(|| {
            let mut placed = Vec::new();
            let here = allocated.iter().filter(|a| a.rank == comm.rank());
            for ((k, f, local), at) in ck.non_empty_tiles().zip(here) {
                debug_assert_eq!(k, at.k);
                let field = &ck.fields[f];
                let len = local.tile.volume() as usize * field.dtype.size();
                let ((), summary) = summarized(field.dtype, local, || {
                    subfiles::write_tile(&path, at.bytes.data_offset, len, local.buf, sync)
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
        // Every rank of the group has written: one sync covers them all.
        comm.agree_on(|| match group.is_root() && sync && !allocated.is_empty() {
            true => layout::sync_path(&path),
            false => Ok(()),
        })?;
        Ok(placed)
    }
}

/// A compressed tile of this rank, encoded in memory before its subfile exists: its stored
/// chunks one after the other, their sizes, and the summary of its uncompressed bytes.
struct EncodedTile {
    stored: Vec<u8>,
    sizes: Vec<u64>,
    summary: Summary,
}

/// The subfiled layout with compressed tiles: each rank encodes its tiles' chunks first (their
/// sizes decide where they go), the group's first rank creates the subfile with every chunk's
/// place reserved, and each rank writes its own chunks there.
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
    let encoded: Vec<(usize, EncodedTile)> = comm.agree_on(|| {
        let mut out = Vec::new();
        for (k, f, local) in ck.non_empty_tiles() {
            let dtype = ck.fields[f].dtype;
            let chunks = Chunks::new(&local.tile.shape, dtype.size(), CHUNK_BYTES);
            let pipeline = compression.pipeline(dtype.size());
            let mut parts: Vec<Vec<u8>> = vec![Vec::new(); chunks.count() as usize];
            let summary = encode_tile(
                &chunks,
                &pipeline,
                dtype,
                local.buf,
                io_threads(),
                |i, b| {
                    parts[i as usize] = b.to_vec();
                    Ok(())
                },
            )?;
            let sizes = parts.iter().map(|p| p.len() as u64).collect();
            let mut stored = Vec::with_capacity(parts.iter().map(Vec::len).sum());
            for part in parts {
                stored.extend_from_slice(&part);
            }
            out.push((
                k,
                EncodedTile {
                    stored,
                    sizes,
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
            sizes: e.sizes.clone(),
        })
        .collect();
    let gathered = group.gather_varcount_to_root(&encode(&mine));
    let gathered_sizes = group.gather_varcount_to_root(&encode(&sizes));
    let ndims = ndims(ck);
    // Where every chunk of the group goes, decided on its first rank.
    let created = comm.agree_on(|| {
        let (Some(per_rank), Some(sizes_per_rank)) = (gathered, gathered_sizes) else {
            return Ok(Vec::new());
        };
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
        let placed =
            subfiles::create_compressed(path, plan.generation, &specs, &chunk_sizes, compression)?;
        let reserved: Vec<Reserved> = tiles
            .iter()
            .zip(placed)
            .map(|(p, (file_size, addrs))| Reserved {
                rank: p.rank,
                k: p.k,
                file_size,
                addrs,
            })
            .collect();
        Ok(encode(&reserved))
    })?;
    let mut words = created;
    group.broadcast_vec(&mut words);
    let reserved: Vec<Reserved> = decode(&words, ());
    let placed = comm.agree_on(|| {
        let mut placed = Vec::new();
        let here = reserved.iter().filter(|r| r.rank == comm.rank());
        for ((k, tile), at) in encoded.iter().zip(here) {
            debug_assert_eq!(*k, at.k);
            subfiles::write_chunks(path, &tile.stored, &tile.sizes, &at.addrs, sync)?;
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
    // Every rank of the group has written: one sync covers them all.
    comm.agree_on(|| match group.is_root() && sync && !reserved.is_empty() {
        true => layout::sync_path(path),
        false => Ok(()),
    })?;
    Ok(placed)
}

/// The group's tiles as the subfile is made for them: whose, which field, where.
fn specs_of<'a>(ck: &'a Checkpoint, tiles: &'a [Planned]) -> Vec<subfiles::SubfileTile<'a>> {
    tiles
        .iter()
        .map(|p| subfiles::SubfileTile {
            rank: p.rank,
            k: p.k,
            dtype: ck.fields[p.field].dtype,
            global: &ck.fields[p.field].global,
            tile: &p.tile,
        })
        .collect()
}
