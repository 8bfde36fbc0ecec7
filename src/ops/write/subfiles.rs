//! The subfiled layout's writer. Within each group of ranks the first rank creates the
//! group's one subfile, with the storage of every tile of every dataset allocated, and hands
//! out the offsets; every rank writes its tiles there; then the first rank syncs the file,
//! once. Rank 0's master maps each dataset to its tiles' datasets in the subfiles.

use super::messages::{decode, encode, Allocated, Placed, PlacedIn, Planned};
use super::plan::{ndims, planned_here, Plan};
use super::summing::summarized;
use super::tile_files::subfile_key;
use super::{Checkpoint, LayoutWriter};
use crate::layout::{self, subfiles};
use crate::platform::comm::Comm;
use crate::status::Result;
use std::path::PathBuf;

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
            let specs: Vec<subfiles::SubfileTile> = tiles
                .iter()
                .map(|p| subfiles::SubfileTile {
                    rank: p.rank,
                    k: p.k,
                    dtype: ck.fields[p.field].dtype,
                    global: &ck.fields[p.field].global,
                    tile: &p.tile,
                })
                .collect();
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
