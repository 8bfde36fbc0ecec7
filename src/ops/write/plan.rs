//! Step 2 of a commit: rank 0 learns every rank's tiles, checks each dataset's tiles for
//! overlap and coverage, checks and prepares the target; every rank learns the generation the
//! new files are named by.

use super::messages::{decode, encode, Planned};
use super::{Checkpoint, Layout};
use crate::geometry::coverage::{self, Coverage};
use crate::geometry::tile::Tile;
use crate::layout;
use crate::platform::comm::Comm;
use crate::status::*;

/// What every rank knows of the commit once it is planned.
pub struct Plan {
    /// The commit's identity, in the names of every file it creates.
    pub generation: u64,
    /// Every rank's tiles in the order of their `k` (rank 0 only).
    pub all: Option<Vec<Vec<Planned>>>,
    /// Held by rank 0 until the commit's cleanup is done, so that another process's cleanup
    /// leaves this write's files alone (`layout::in_flight`); the commit then takes it to
    /// release it and look once more (`layout::remove_own_if_replaced`).
    pub in_flight: std::sync::Mutex<Option<layout::in_flight::WriteLock>>,
}

impl Plan {
    /// The element size of tile `k` of `rank` (rank 0 only).
    pub fn elem_of(&self, ck: &Checkpoint, rank: usize, k: usize) -> usize {
        let all = self.all.as_ref().expect("rank 0 holds the plan");
        ck.fields[all[rank][k].field].dtype.size()
    }

    /// Every non-empty tile of field `f`, in rank order, then `k` (rank 0 only).
    pub fn tiles_of(&self, f: usize) -> impl Iterator<Item = &Planned> {
        self.all
            .iter()
            .flatten()
            .flatten()
            .filter(move |p| p.field == f && !p.tile.is_empty())
    }
}

/// This rank's tiles as `Planned` records.
pub fn planned_here(comm: &Comm, ck: &Checkpoint) -> Vec<Planned> {
    ck.local_tiles()
        .map(|(k, field, local)| Planned {
            rank: comm.rank(),
            k,
            field,
            tile: local.tile.clone(),
        })
        .collect()
}

/// Every field's number of dimensions, which `Planned` records leave out.
pub fn ndims(ck: &Checkpoint) -> Vec<usize> {
    ck.fields.iter().map(|f| f.global.len()).collect()
}

/// Step 2; see the module documentation.
pub fn plan(comm: &Comm, ck: &Checkpoint) -> Result<Plan> {
    let ndims = ndims(ck);
    let all: Option<Vec<Vec<Planned>>> = comm
        .gather_varcount_to_root(&encode(&planned_here(comm, ck)))
        .map(|per_rank| per_rank.iter().map(|w| decode(w, &ndims[..])).collect());
    let mut lock = None;
    let planned = comm.agree_on(|| match &all {
        None => Ok(0),
        Some(all) => {
            for f in 0..ck.fields.len() {
                check_union(ck, f, all)?;
            }
            let o = &ck.options;
            layout::prepare_target(&ck.path, o.no_overwrite)?;
            if o.keep_others && ck.path.exists() {
                for dataset in ck.datasets() {
                    layout::keep::check(&ck.path, dataset)?;
                }
            }
            let generation = layout::new_generation();
            // Before the tile folder is made (another write's cleanup removes an empty one
            // unless a write is in flight) and any rank creates a file of this generation.
            lock = Some(layout::in_flight::WriteLock::take(&ck.path, generation)?);
            let in_tile_dir = matches!(o.layout, Layout::Vds | Layout::Subfiles);
            if in_tile_dir && all.iter().flatten().any(|p| !p.tile.is_empty()) {
                layout::create_tile_dir(&layout::tile_dir(&ck.path))?;
            }
            Ok(generation)
        }
    });
    let mut generation = [planned?];
    comm.broadcast(&mut generation);
    Ok(Plan {
        generation: generation[0],
        all,
        in_flight: std::sync::Mutex::new(lock),
    })
}

/// The tiles of field `f` over all ranks must not overlap, and must cover its shape unless
/// `H5TILE_ALLOW_PARTIAL`. A tile is named by its index among its rank's tiles of the field.
fn check_union(ck: &Checkpoint, f: usize, all: &[Vec<Planned>]) -> Result<()> {
    let field = &ck.fields[f];
    let tiles: Vec<(usize, usize, &Tile)> = all
        .iter()
        .flat_map(|mine| {
            mine.iter()
                .filter(|p| p.field == f)
                .enumerate()
                .map(|(i, p)| (p.rank, i, &p.tile))
        })
        .collect();
    let boxes: Vec<Tile> = tiles.iter().map(|(_, _, t)| (*t).clone()).collect();
    let failed = match coverage::check(&field.global, &boxes) {
        Err(o) => {
            let (ra, ka, ta) = &tiles[o.a];
            let (rb, kb, tb) = &tiles[o.b];
            fail(
                H5TILE_ERR_SHAPE,
                format!(
                    "tile {ka} of rank {ra} {ta} and tile {kb} of rank {rb} {tb} overlap on {}",
                    o.common
                ),
            )
        }
        Ok(Coverage::Partial { covered, total }) if !ck.options.allow_partial => fail(
            H5TILE_ERR_SHAPE,
            format!(
                "tiles cover {covered} of the {total} elements of shape {:?}; pass \
                 H5TILE_ALLOW_PARTIAL to leave the rest as zeros",
                field.global
            ),
        ),
        Ok(_) => Ok(()),
    };
    failed.map_err(|e: Error| match ck.fields.len() {
        1 => e,
        _ => e.context(&format!("dataset '{}'", field.dataset)),
    })
}
