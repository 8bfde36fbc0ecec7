//! The single-file layout's writer: rank 0 creates the new file under its temporary name with
//! every dataset's storage allocated and shares the offsets; each rank writes its tiles' rows
//! there; rank 0 then records each dataset's tiles and what they summed to.

use super::messages::{placed_record, Placed, PlacedIn};
use super::summing::summarized;
use super::{Commit, LayoutWriter};
use crate::layout::checksums::Summary;
use crate::layout::vds::TileBytes;
use crate::layout::{self, single};
use crate::platform::hdf5::File;
use crate::platform::tile_bytes::Durability;
use crate::status::Result;
use std::path::{Path, PathBuf};

/// An offset no dataset's storage has: a dataset with no elements has no storage.
const NO_STORAGE: u64 = u64::MAX;

pub struct SingleFile;

impl LayoutWriter for SingleFile {
    const IN_TILE_DIR: bool = false;

    fn write_tiles(&self, commit: &Commit, written: &mut Vec<PathBuf>) -> Result<Vec<Placed>> {
        let Commit { comm, ck, plan } = *commit;
        let tmp = layout::temporary_master(&ck.path, plan.generation);
        let created = comm.agree_on(|| {
            if !comm.is_root() {
                return Ok(Vec::new());
            }
            written.push(tmp.clone());
            let datasets: Vec<single::NewDataset> = ck
                .fields
                .iter()
                .map(|f| single::NewDataset {
                    name: &f.dataset,
                    dtype: f.dtype,
                    global: &f.global,
                })
                .collect();
            let offsets = single::create(&tmp, &datasets, ck.keep_from())?;
            Ok(offsets
                .into_iter()
                .map(|o| o.unwrap_or(NO_STORAGE))
                .collect())
        })?;
        let mut offsets = created;
        comm.broadcast_vec(&mut offsets);
        let durability = ck.tile_durability();
        comm.agree_on(|| {
            let mut placed = Vec::new();
            for (k, f, local) in ck.non_empty_tiles() {
                let field = &ck.fields[f];
                let (tile, buf) = (&local.tile, local.buf);
                let (global, elem) = (&field.global, field.dtype.size());
                let ((), summary) = summarized(field.dtype, local, || {
                    single::write_tile(&tmp, offsets[f], global, tile, elem, buf, durability)
                })?;
                let bytes = TileBytes {
                    data_offset: offsets[f],
                    file_size: 0,
                };
                placed.push(Placed {
                    k,
                    placed_in: PlacedIn::Master,
                    bytes,
                    summary,
                });
            }
            // One sync for every tile this rank wrote into the file.
            if durability == Durability::SyncLater && !placed.is_empty() {
                layout::sync_path(&tmp)?;
            }
            Ok(placed)
        })
    }

    fn master(&self, tmp: &Path, commit: &Commit, placed: &[Vec<Placed>]) -> Result<File> {
        let Commit { ck, plan, .. } = *commit;
        let file = single::open_new(tmp)?;
        for (f, field) in ck.fields.iter().enumerate() {
            let tiles: Vec<(crate::geometry::tile::Tile, Summary)> = plan
                .tiles_of(f)
                .map(|p| (p.tile.clone(), placed_record(placed, p).summary.clone()))
                .collect();
            single::record(&file, &field.dataset, field.dtype, &tiles)?;
        }
        Ok(file)
    }
}
