//! `h5tile_write`: the collective write of every rank's tiles as one dataset.
//!
//! Order of events, each step agreed by all ranks before the next so a failure anywhere is the
//! same failure everywhere and nothing on disk is touched until every check has passed:
//! 1. local argument checks, then all ranks check they were given the same arguments;
//! 2. rank 0 gathers every tile, checks overlap and coverage, checks and prepares the path;
//! 3. VDS layout: each rank writes its own tile files (new names, invisible to readers of the
//!    old master); subfiled layout: the first rank of each group creates the group's subfile
//!    (a new name too) and every rank of the group writes its tiles into it; single layout:
//!    rank 0 creates the new file under a temporary name and every rank writes its tiles into
//!    it;
//! 4. rank 0 completes the new master under its temporary name and renames it over the old one
//!    (the commit point), then deletes the previous generation's tiles.

use crate::dtype::Dtype;
use crate::geometry::coverage::{self, Coverage};
use crate::geometry::tile::Tile;
use crate::layout::checksums::{self, Summary, Summing};
use crate::layout::{self, single, subfiles, vds};
use crate::ops::fnv::Fnv;
use crate::platform::comm::Comm;
use crate::platform::device::{watching_staged_writes, Buffer};
use crate::status::*;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Largest number of dimensions the C API accepts.
pub const MAX_NDIM: usize = 32;

/// How a written dataset is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One file per non-empty tile plus a master holding the virtual dataset.
    Vds,
    /// One self-contained file written by all ranks in parallel.
    Single,
    /// One file per group of ranks (by default per node) holding a dataset per tile, plus a
    /// master holding the virtual dataset.
    Subfiles,
}

impl Layout {
    /// The name the C API gives it.
    pub fn c_name(self) -> &'static str {
        match self {
            Layout::Vds => "H5TILE_LAYOUT_VDS",
            Layout::Single => "H5TILE_LAYOUT_SINGLE",
            Layout::Subfiles => "H5TILE_LAYOUT_SUBFILES",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    pub layout: Layout,
    /// Fail with `H5TILE_ERR_EXISTS` instead of replacing an existing file.
    pub no_overwrite: bool,
    /// Tiles may leave gaps, which read back as zero.
    pub allow_partial: bool,
    /// Keep the file's other contents: replace or add only this dataset.
    pub keep_others: bool,
    /// No `fsync` (`H5TILE_NO_SYNC`): the commit is still an atomic rename, but a power or
    /// node failure may lose the write.
    pub no_sync: bool,
    /// Subfiled layout: ranks per subfile, within one node (None: the whole node).
    pub ranks_per_file: Option<usize>,
    /// How tiles in device memory move.
    pub gds: crate::platform::device::Gds,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            layout: Layout::Vds,
            no_overwrite: false,
            allow_partial: false,
            keep_others: false,
            no_sync: false,
            ranks_per_file: None,
            gds: crate::platform::device::Gds::Auto,
        }
    }
}

/// One tile this rank contributes, with its dense row-major buffer (`tile.volume()` elements;
/// made at the C boundary, which also found how its bytes move).
#[derive(Clone, Debug)]
pub struct LocalTile<'a> {
    pub tile: Tile,
    pub buf: Buffer<'a>,
}

/// Everything one rank passes to a collective write.
#[derive(Clone, Debug)]
pub struct WriteArgs<'a> {
    pub path: &'a Path,
    pub dataset: &'a str,
    pub dtype: Dtype,
    pub global: &'a [u64],
    pub tiles: Vec<LocalTile<'a>>,
    pub options: WriteOptions,
}

/// Writes `args` collectively over `comm`; see the module documentation for the protocol.
pub fn write(comm: &Comm, args: &WriteArgs) -> Result<()> {
    comm.agree_on(|| check(args))?;
    write_checked(comm, args)
}

/// `write` after every rank's `check` has passed.
pub fn write_checked(comm: &Comm, args: &WriteArgs) -> Result<()> {
    agree_same_arguments(comm, args)?;
    let (generation, all_tiles) = plan(comm, args)?;
    match args.options.layout {
        Layout::Vds => write_in_tile_dir(comm, args, generation, all_tiles, |written| {
            write_tile_files(comm, args, generation, written)
        }),
        Layout::Subfiles => write_in_tile_dir(comm, args, generation, all_tiles, |written| {
            write_subfiles(comm, args, generation, written)
        }),
        Layout::Single => write_single(comm, args, generation),
    }
}

/// The checks one rank makes alone. A write started in the background makes them before it
/// returns, so that a bad call fails at once.
pub fn check(args: &WriteArgs) -> Result<()> {
    validate(args)
}

/// Marks, in what a rank reports about a tile, a tile written to a file of its own.
const OWN_FILE: u64 = u64::MAX;

/// Step 3 of the VDS layout: this rank's tile files. Returns, per non-empty tile, what rank 0
/// needs for the master: [`OWN_FILE`, data offset, file size].
fn write_tile_files(
    comm: &Comm,
    args: &WriteArgs,
    generation: u64,
    written: &mut Vec<PathBuf>,
) -> Result<Vec<u64>> {
    let dir = layout::tile_dir(args.path);
    let sync = !args.options.no_sync;
    comm.agree_on(|| {
        let mut placed = Vec::new();
        for (k, local) in non_empty(args) {
            let name = layout::tile_file_name(args.dataset, generation, comm.rank(), k);
            let path = dir.join(name);
            written.push(path.clone());
            let (b, summary) = summarized(args.dtype, local, || {
                vds::write_tile(&path, args.dtype, &local.tile, args.global, local.buf, sync)
            })?;
            placed.extend([OWN_FILE, b.data_offset, b.file_size]);
            summary.to_words(&mut placed);
        }
        Ok(placed)
    })
}

/// Step 3 of the subfiled layout. Within each group the first rank creates the subfile with
/// every tile's storage allocated and hands out the offsets; every rank writes its tiles;
/// then the first rank syncs the file, once. Returns, per non-empty tile of this rank, what
/// rank 0 needs for the master: [group's first rank, data offset, file size].
fn write_subfiles(
    comm: &Comm,
    args: &WriteArgs,
    generation: u64,
    written: &mut Vec<PathBuf>,
) -> Result<Vec<u64>> {
    let sync = !args.options.no_sync;
    let (group, first) = comm.agree_on(|| comm.split_groups(args.options.ranks_per_file))?;
    let path =
        layout::tile_dir(args.path).join(layout::subfile_name(args.dataset, generation, first));
    // The group's tiles on its first rank: this rank's number, then each tile's index, offset
    // and shape.
    let ndim = args.global.len();
    let mut mine = vec![comm.rank() as u64];
    for (k, local) in non_empty(args) {
        mine.push(k as u64);
        mine.extend(local.tile.offset.iter().chain(&local.tile.shape));
    }
    let gathered = group.gather_varcount_to_root(&mine);
    // [rank, index, data offset, file size] for every tile of the group, on its first rank.
    let created = comm.agree_on(|| {
        let Some(per_rank) = gathered else {
            return Ok(Vec::new());
        };
        let tiles: Vec<(usize, usize, Tile)> = per_rank
            .iter()
            .flat_map(|v| {
                let rank = v[0] as usize;
                v[1..].chunks_exact(1 + 2 * ndim).map(move |c| {
                    let tile = Tile::new(c[1..=ndim].to_vec(), c[1 + ndim..].to_vec());
                    (rank, c[0] as usize, tile)
                })
            })
            .collect();
        if tiles.is_empty() {
            return Ok(Vec::new());
        }
        written.push(path.clone());
        let bytes = subfiles::create(&path, generation, args.dtype, args.global, &tiles)?;
        Ok(tiles
            .iter()
            .zip(bytes)
            .flat_map(|((rank, k, _), b)| [*rank as u64, *k as u64, b.data_offset, b.file_size])
            .collect())
    })?;
    let mut offsets = created;
    group.broadcast_vec(&mut offsets);
    let me = comm.rank() as u64;
    let mine: Vec<&[u64]> = offsets.chunks_exact(4).filter(|c| c[0] == me).collect();
    let placed = comm.agree_on(|| {
        let elem = args.dtype.size();
        let mut placed = Vec::new();
        for ((_, local), at) in non_empty(args).zip(&mine) {
            let len = local.tile.volume() as usize * elem;
            let ((), summary) = summarized(args.dtype, local, || {
                subfiles::write_tile(&path, at[2], len, local.buf, sync)
            })?;
            placed.extend([first as u64, at[2], at[3]]);
            summary.to_words(&mut placed);
        }
        Ok(placed)
    })?;
    // Every rank of the group has written: one sync covers them all.
    comm.agree_on(|| match group.is_root() && sync && !offsets.is_empty() {
        true => layout::sync_path(&path),
        false => Ok(()),
    })?;
    Ok(placed)
}

/// Runs `write`, which writes `local`'s bytes, and returns with its result the summary the
/// master records of them (`checksums::Summary`). A large tile in host memory is summed on a
/// thread of its own meanwhile: the write waits on the disk or copies into the page cache
/// under the file's lock, the sums use another core. Device memory is summed where the
/// compat path stages it (`summed_from_staging`).
fn summarized<T>(
    dtype: Dtype,
    local: &LocalTile,
    write: impl FnOnce() -> Result<T>,
) -> Result<(T, Summary)> {
    let len = local.tile.volume() as usize * dtype.size();
    let bytes = match local.buf {
        Buffer::Host(bytes) => &bytes[..len],
        Buffer::Device(ptr, _) => return summed_from_staging(dtype, ptr.addr, len, write),
    };
    if bytes.len() < 4 * checksums::BLOCK_BYTES as usize {
        let written = write()?;
        return Ok((written, Summary::of(dtype, bytes)));
    }
    std::thread::scope(|scope| {
        let summary = scope.spawn(|| Summary::of(dtype, bytes));
        let written = write();
        let summary = summary
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        Ok((written?, summary))
    })
}

/// Runs `write`, which writes the `len` bytes of device memory at `addr`, summing them in
/// the compat path's pinned buffers as they pass on their way to the file. cuFile moves them
/// with no host copy: then, as when the pieces seen are not the tile's bytes in order, the
/// summary says "not checksummed".
fn summed_from_staging<T>(
    dtype: Dtype,
    addr: u64,
    len: usize,
    write: impl FnOnce() -> Result<T>,
) -> Result<(T, Summary)> {
    /// The device address the next piece must come from, and the sums so far (None once a
    /// piece came from elsewhere).
    type Seen = (u64, Option<Summing>);
    let seen: Rc<RefCell<Seen>> = Rc::new(RefCell::new((addr, Some(Summing::new(dtype)))));
    let to = seen.clone();
    let watch = Box::new(move |at: u64, bytes: &[u8]| {
        let (next, summing) = &mut *to.borrow_mut();
        match (at == *next, summing.as_mut()) {
            (true, Some(s)) => s.add(bytes),
            _ => *summing = None,
        }
        *next = at + bytes.len() as u64;
    });
    let written = watching_staged_writes(watch, write)?;
    let (next, summing) = seen.take();
    let summary = match (next == addr + len as u64, summing) {
        (true, Some(summing)) => summing.finish(),
        _ => Summary::default(),
    };
    Ok((written, summary))
}

/// This rank's non-empty tiles with their index among all its tiles.
fn non_empty<'a, 'b>(args: &'b WriteArgs<'a>) -> impl Iterator<Item = (usize, &'b LocalTile<'a>)> {
    args.tiles
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.tile.is_empty())
}

/// Steps 3 and 4 of the layouts that keep their tiles in the tile folder: `write_part` writes
/// this rank's part (noting every file it creates in `written`) and returns, per non-empty
/// tile, [group's first rank or `OWN_FILE`, data offset, file size]; rank 0 then writes the
/// master mapping every tile and commits. A failure before the commit removes what was
/// written.
fn write_in_tile_dir(
    comm: &Comm,
    args: &WriteArgs,
    generation: u64,
    all_tiles: AllTiles,
    write_part: impl FnOnce(&mut Vec<PathBuf>) -> Result<Vec<u64>>,
) -> Result<()> {
    let dir = layout::tile_dir(args.path);
    let mut written: Vec<PathBuf> = Vec::new();
    let result = write_part(&mut written);
    let placed_by_rank = match &result {
        Ok(placed) => comm.gather_varcount_to_root(placed),
        Err(_) => None,
    };
    let finish = |tmp: &Path| {
        let dir_name = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let placed_by_rank = placed_by_rank.unwrap_or_default();
        let mut next = vec![0usize; placed_by_rank.len()];
        let mut sources: Vec<vds::Source> = Vec::new();
        let mut summaries: Vec<Summary> = Vec::new();
        for (rank, k, tile) in all_tiles
            .into_iter()
            .flatten()
            .filter(|(_, _, t)| !t.is_empty())
        {
            let p = &placed_by_rank[rank][next[rank]..];
            let (summary, used) = Summary::from_words(&p[3..], args.dtype.size());
            next[rank] += 3 + used;
            summaries.push(summary);
            let (file, dataset) = match p[0] {
                OWN_FILE => (
                    layout::tile_file_name(args.dataset, generation, rank, k),
                    vds::TILE_DATASET.to_string(),
                ),
                first => (
                    layout::subfile_name(args.dataset, generation, first as usize),
                    subfiles::tile_dataset(rank, k),
                ),
            };
            sources.push(vds::Source {
                tile,
                file: format!("{dir_name}/{file}"),
                dataset,
                bytes: vds::TileBytes {
                    data_offset: p[1],
                    file_size: p[2],
                },
            });
        }
        vds::write_master(
            tmp,
            args.dataset,
            args.dtype,
            args.global,
            &sources,
            &summaries,
            keep_from(args),
        )
    };
    let (result, committed) = match result {
        Ok(_) => commit_on_root(comm, args, generation, Some(&dir), finish),
        Err(e) => (Err(e), false),
    };
    if result.is_err() && !committed {
        for p in &written {
            let _ = std::fs::remove_file(p);
        }
        // Once every rank has removed its files, a tile folder left empty goes too.
        let _ = comm.agree(Ok(()));
        if comm.is_root() {
            let _ = std::fs::remove_dir(&dir);
        }
    }
    result
}

/// Steps 3 and 4 of the single-file layout.
fn write_single(comm: &Comm, args: &WriteArgs, generation: u64) -> Result<()> {
    let tmp = layout::temporary_master(args.path, generation);
    let created = comm.agree_on(|| match comm.is_root() {
        true => single::create(&tmp, args.dataset, args.dtype, args.global, keep_from(args))
            .map(|o| o.unwrap_or(0)),
        false => Ok(0),
    });
    let result = created.and_then(|offset| {
        let mut shared = [offset];
        comm.broadcast(&mut shared);
        // Per tile: its offset and shape, then its summary.
        comm.agree_on(|| {
            let mut words = Vec::new();
            for (_, local) in non_empty(args) {
                let elem = args.dtype.size();
                let (tile, buf, sync) = (&local.tile, local.buf, !args.options.no_sync);
                let ((), summary) = summarized(args.dtype, local, || {
                    single::write_tile(&tmp, shared[0], args.global, tile, elem, buf, sync)
                })?;
                words.extend(tile.offset.iter().chain(&tile.shape));
                summary.to_words(&mut words);
            }
            Ok(words)
        })
    });
    let by_rank = match &result {
        Ok(words) => comm.gather_varcount_to_root(words),
        Err(_) => None,
    };
    let record = |tmp: &Path| {
        let ndim = args.global.len();
        let mut tiles = Vec::new();
        for words in by_rank.iter().flatten() {
            let mut at = 0;
            while at < words.len() {
                let tile = Tile::new(
                    words[at..at + ndim].to_vec(),
                    words[at + ndim..at + 2 * ndim].to_vec(),
                );
                let (summary, used) =
                    Summary::from_words(&words[at + 2 * ndim..], args.dtype.size());
                tiles.push((tile, summary));
                at += 2 * ndim + used;
            }
        }
        single::record(tmp, args.dataset, args.dtype, &tiles)
    };
    let (result, _) = match result {
        Ok(_) => commit_on_root(comm, args, generation, None, record),
        Err(e) => (Err(e), false),
    };
    if result.is_err() && comm.is_root() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Arguments one rank can check alone.
fn validate(args: &WriteArgs) -> Result<()> {
    let ndim = args.global.len();
    if ndim == 0 || ndim > MAX_NDIM {
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!("ndim is {ndim}; it must be 1 to {MAX_NDIM}"),
        );
    }
    validate_dataset_name(args.dataset)?;
    for (k, local) in args.tiles.iter().enumerate() {
        if !local.tile.fits_in(args.global) {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "tile {k} {} lies outside the global shape {:?}",
                    local.tile, args.global
                ),
            );
        }
        let Some(need) = local.tile.bytes(args.dtype.size()) else {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!("tile {k} {} is too large to address", local.tile),
            );
        };
        if let Buffer::Host(buf) = local.buf {
            if buf.len() < need {
                return fail(
                    H5TILE_ERR_INVALID_ARGUMENT,
                    format!(
                        "buffer of tile {k} {} holds {} bytes, not {need}",
                        local.tile,
                        buf.len()
                    ),
                );
            }
        }
    }
    Ok(())
}

/// A dataset path: '/'-separated names, none empty, "." or "..".
pub fn validate_dataset_name(dataset: &str) -> Result<()> {
    let parts: Vec<&str> = dataset
        .strip_prefix('/')
        .unwrap_or(dataset)
        .split('/')
        .collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!("dataset name '{dataset}' is not a path like \"/data\" or \"/group/x\""),
        );
    }
    Ok(())
}

/// What each rank must pass alike, in users' words: (what it is, this rank's value).
fn arguments_alike(args: &WriteArgs) -> [(&'static str, String); 7] {
    let o = &args.options;
    let flags: Vec<&str> = [
        (o.no_overwrite, "H5TILE_NO_OVERWRITE"),
        (o.allow_partial, "H5TILE_ALLOW_PARTIAL"),
        (o.keep_others, "H5TILE_KEEP_OTHERS"),
        (o.no_sync, "H5TILE_NO_SYNC"),
    ]
    .iter()
    .filter_map(|&(set, name)| set.then_some(name))
    .collect();
    [
        ("path", format!("'{}'", args.path.display())),
        ("dataset", format!("'{}'", args.dataset)),
        ("element type", args.dtype.name().to_string()),
        ("global shape", format!("{:?}", args.global)),
        ("layout", o.layout.c_name().to_string()),
        (
            "write flags",
            match flags.is_empty() {
                true => "no flags".to_string(),
                false => flags.join("|"),
            },
        ),
        (
            "ranks per file",
            match o.ranks_per_file {
                Some(k) => format!("{k} ranks per file"),
                None => "the whole node per file".to_string(),
            },
        ),
    ]
}

/// Every rank must name the same file, dataset, element type, shape and options; compared
/// through a hash of each so the check costs one small allreduce whatever the number of
/// ranks. When they differ, the error (on every rank) names the first argument that differs,
/// rank 0's value and that of the first rank passing another.
fn agree_same_arguments(comm: &Comm, args: &WriteArgs) -> Result<()> {
    let fields = arguments_alike(args);
    let mut v: Vec<u64> = fields
        .iter()
        .enumerate()
        .flat_map(|(i, (_, value))| {
            let mut h = Fnv::default();
            // The path as its bytes: two names shown alike (not UTF-8) may still differ.
            match i {
                0 => h.bytes(args.path.as_os_str().as_encoded_bytes()),
                _ => h.bytes(value.as_bytes()),
            }
            [h.value(), !h.value()]
        })
        .collect();
    comm.all_min(&mut v);
    // Alike everywhere, min(h) and min(!h) are h and !h.
    let Some(i) = (0..fields.len()).find(|&i| v[2 * i] != !v[2 * i + 1]) else {
        return Ok(());
    };
    let (what, mine) = &fields[i];
    let mut first = mine.clone();
    comm.broadcast_text(0, &mut first);
    // Paths that differ only in bytes shown alike differ in no text: the last rank is named.
    let mut at = [match *mine != first {
        true => comm.rank() as u64,
        false => u64::MAX,
    }];
    comm.all_min(&mut at);
    let other_rank = at[0].min(comm.size() as u64 - 1) as usize;
    let mut other = mine.clone();
    comm.broadcast_text(other_rank, &mut other);
    fail(
        H5TILE_ERR_INVALID_ARGUMENT,
        format!(
            "ranks disagree on the {what}: rank 0 passes {first}, rank {other_rank} passes \
             {other} (every rank must pass the same path, dataset, element type, global shape \
             and options)"
        ),
    )
}

/// Every tile of every rank, as (rank, index on that rank, tile); known on rank 0 only.
type AllTiles = Option<Vec<(usize, usize, Tile)>>;

/// Step 2: on rank 0, checks the union of all tiles and prepares the target; returns the
/// generation every rank then writes under, and (on rank 0) all the tiles.
fn plan(comm: &Comm, args: &WriteArgs) -> Result<(u64, AllTiles)> {
    let ndim = args.global.len();
    let mine: Vec<u64> = args
        .tiles
        .iter()
        .flat_map(|t| t.tile.offset.iter().chain(&t.tile.shape).copied())
        .collect();
    let all_tiles = comm
        .gather_varcount_to_root(&mine)
        .map(|per_rank| tiles_by_rank(&per_rank, ndim));
    let planned = comm.agree_on(|| match &all_tiles {
        None => Ok(0),
        Some(tiles) => {
            check_union(args, tiles)?;
            layout::prepare_target(args.path, args.options.no_overwrite)?;
            if args.options.keep_others && args.path.exists() {
                layout::keep::check(args.path, args.dataset)?;
            }
            let in_tile_dir = matches!(args.options.layout, Layout::Vds | Layout::Subfiles);
            if in_tile_dir && tiles.iter().any(|(_, _, t)| !t.is_empty()) {
                layout::create_tile_dir(&layout::tile_dir(args.path))?;
            }
            Ok(layout::new_generation())
        }
    });
    let mut generation = [planned?];
    comm.broadcast(&mut generation);
    Ok((generation[0], all_tiles))
}

/// (rank, index on that rank, tile) for every gathered tile.
fn tiles_by_rank(per_rank: &[Vec<u64>], ndim: usize) -> Vec<(usize, usize, Tile)> {
    per_rank
        .iter()
        .enumerate()
        .flat_map(|(rank, flat)| {
            flat.chunks_exact(2 * ndim)
                .enumerate()
                .map(move |(k, c)| (rank, k, Tile::new(c[..ndim].to_vec(), c[ndim..].to_vec())))
        })
        .collect()
}

fn check_union(args: &WriteArgs, tiles: &[(usize, usize, Tile)]) -> Result<()> {
    let boxes: Vec<Tile> = tiles.iter().map(|(_, _, t)| t.clone()).collect();
    match coverage::check(args.global, &boxes) {
        Err(o) => {
            let (ra, ka, ta) = &tiles[o.a];
            let (rb, kb, tb) = &tiles[o.b];
            fail(
                H5TILE_ERR_SHAPE,
                format!("tile {ka} of rank {ra} {ta} and tile {kb} of rank {rb} {tb} overlap on {}", o.common),
            )
        }
        Ok(Coverage::Partial { covered, total }) if !args.options.allow_partial => fail(
            H5TILE_ERR_SHAPE,
            format!(
                "tiles cover {covered} of the {total} elements of shape {:?}; pass H5TILE_ALLOW_PARTIAL \
                 to leave the rest as zeros",
                args.global
            ),
        ),
        Ok(_) => Ok(()),
    }
}

/// Step 4: on rank 0, `finish` completes the new master at its temporary path, which is then
/// renamed over `path` (the commit point, after syncing the tile folder `tiles` and the
/// master's folder), after which stale files are removed. Returns the
/// agreed outcome and whether the commit happened (then no new file may be removed).
fn commit_on_root(
    comm: &Comm,
    args: &WriteArgs,
    generation: u64,
    tiles: Option<&Path>,
    finish: impl FnOnce(&Path) -> Result<()>,
) -> (Result<()>, bool) {
    let (path, only) = (args.path, keep_from(args).map(|_| args.dataset));
    let sync = !args.options.no_sync;
    let mut committed = false;
    let result = crate::status::catch_panic(|| {
        if !comm.is_root() {
            return Ok(());
        }
        let tmp = layout::temporary_master(path, generation);
        let switched = finish(&tmp)
            .and_then(|()| injected_failure())
            .and_then(|()| layout::commit(&tmp, path, tiles, sync));
        if let Err(e) = switched {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        committed = true;
        match sync {
            true => layout::sync_parent(path),
            false => Ok(()),
        }
        .and_then(|()| layout::remove_stale(path, generation, only))
        .map_err(|e| {
            Error::new(
                e.status,
                format!(
                    "{} (after the commit: the new dataset is in place)",
                    e.message
                ),
            )
        })
    });
    let mut flag = [committed as u64];
    comm.broadcast(&mut flag);
    (comm.agree(result), flag[0] == 1)
}

/// The file whose other contents the new master keeps (`H5TILE_KEEP_OTHERS`).
fn keep_from<'a>(args: &WriteArgs<'a>) -> Option<&'a Path> {
    args.options.keep_others.then_some(args.path)
}

/// Unit tests make a write fail between its new master and the commit; elsewhere a no-op.
#[cfg(not(test))]
fn injected_failure() -> Result<()> {
    Ok(())
}

#[cfg(test)]
use tests::injected_failure;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ops::read::ReadOptions;
    use crate::platform::device::host_bytes;
    use crate::testkit::{read_f64, read_into, write_tiles, write_whole};
    use std::cell::Cell;

    thread_local! {
        static FAIL_BEFORE_COMMIT: Cell<bool> = const { Cell::new(false) };
    }

    /// Makes the next write on this thread fail after its tiles and temporary master exist.
    pub fn injected_failure() -> Result<()> {
        if FAIL_BEFORE_COMMIT.with(|f| f.replace(false)) {
            return fail(H5TILE_ERR_IO, "injected failure before commit");
        }
        Ok(())
    }

    /// Writes a 6x4 float64 array whose element (i, j) is `base + 10 i + j`, as row slabs of
    /// `rows_per_tile` rows.
    fn write_slabs(path: &Path, base: f64, rows_per_tile: u64) -> Result<()> {
        write_slabs_as(path, base, rows_per_tile, Layout::Vds)
    }

    fn write_slabs_as(path: &Path, base: f64, rows_per_tile: u64, layout: Layout) -> Result<()> {
        let global = [6u64, 4];
        let data: Vec<f64> = (0..24)
            .map(|k| base + (10 * (k / 4) + k % 4) as f64)
            .collect();
        let tiles = (0..6)
            .step_by(rows_per_tile as usize)
            .map(|r0| {
                let rows = rows_per_tile.min(6 - r0);
                LocalTile {
                    tile: Tile::new(vec![r0, 0], vec![rows, 4]),
                    buf: host_bytes(&data[(r0 * 4) as usize..]),
                }
            })
            .collect();
        let options = WriteOptions {
            layout,
            ..WriteOptions::default()
        };
        write_tiles(
            path,
            "/grid/values",
            Dtype::Float64,
            &global,
            tiles,
            options,
        )
    }

    fn read_all(path: &Path) -> Result<Vec<f64>> {
        read_f64(path, "/grid/values", &Tile::new(vec![0, 0], vec![6, 4]))
    }

    fn tile_files(path: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(layout::tile_dir(path))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    fn expected(base: f64) -> Vec<f64> {
        (0..24)
            .map(|k| base + (10 * (k / 4) + k % 4) as f64)
            .collect()
    }

    #[test]
    fn device_tiles_are_summed_from_the_compat_path_s_pieces_or_recorded_unchecksummed() {
        use h5tile_gds::staged_write;
        let bytes: Vec<u8> = (0..3 * checksums::BLOCK_BYTES as usize + 40)
            .map(|i| (i * 131 % 251) as u8)
            .collect();
        let (addr, len) = (0x7f00_0000_0000u64, bytes.len());
        let pieces = |cut: usize| {
            let mut at = addr;
            for piece in bytes.chunks(cut) {
                staged_write(at, piece);
                at += piece.len() as u64;
            }
        };
        let whole = Summary::of(Dtype::Float64, &bytes);
        // The compat path: pieces of any size, in order, from the tile's first byte.
        for cut in [3 << 20, 1 << 20, 999_999] {
            let write = || {
                pieces(cut);
                Ok(cut)
            };
            let (n, got) = summed_from_staging(Dtype::Float64, addr, len, write).unwrap();
            assert_eq!((n, &got), (cut, &whole), "pieces of {cut} bytes");
        }
        // cuFile: nothing staged, nothing summed.
        let (_, got) = summed_from_staging(Dtype::Float64, addr, len, || Ok(())).unwrap();
        assert_eq!(got, Summary::default());
        // Pieces that are not the tile's bytes in order are not trusted.
        let out_of_order = || {
            staged_write(addr + 8, &bytes[8..16]);
            staged_write(addr, &bytes[..8]);
            staged_write(addr + 16, &bytes[16..]);
            Ok(())
        };
        let (_, got) = summed_from_staging(Dtype::Float64, addr, len, out_of_order).unwrap();
        assert_eq!(got, Summary::default());
        let short = || {
            staged_write(addr, &bytes[..len - 8]);
            Ok(())
        };
        let (_, got) = summed_from_staging(Dtype::Float64, addr, len, short).unwrap();
        assert_eq!(got, Summary::default());
        // A failed write is the error, and leaves no watch behind.
        let failed = || -> Result<()> {
            staged_write(addr, &bytes);
            fail(H5TILE_ERR_IO, "disk full".to_string())
        };
        let e = summed_from_staging(Dtype::Float64, addr, len, failed).unwrap_err();
        assert_eq!((e.status, e.message.as_str()), (H5TILE_ERR_IO, "disk full"));
        staged_write(addr, &bytes); // no watch: nothing to panic in
    }

    /// The master's per-tile records outgrow an object header (64 KiB) past about 4000 tiles:
    /// they must go to dense attribute storage, not fail the write.
    #[test]
    fn a_master_records_thousands_of_tiles() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("many.h5");
        let n = 4200u64;
        let data: Vec<f64> = (0..n).map(|k| k as f64 * 0.5).collect();
        let tiles = (0..n as usize)
            .map(|k| LocalTile {
                tile: Tile::new(vec![0, k as u64], vec![1, 1]),
                buf: host_bytes(&data[k..k + 1]),
            })
            .collect();
        let options = WriteOptions {
            layout: Layout::Subfiles,
            no_sync: true,
            ..WriteOptions::default()
        };
        write_tiles(&path, "/d", Dtype::Float64, &[1, n], tiles, options).unwrap();
        let out = read_f64(&path, "/d", &Tile::new(vec![0, 0], vec![1, n])).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn tiles_round_trip_and_overwrite_leaves_no_stale_tile() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("new/dir/f.h5");
        write_slabs(&path, 0.0, 1).unwrap();
        assert_eq!(read_all(&path).unwrap(), expected(0.0));
        assert_eq!(tile_files(&path).len(), 6);
        write_slabs(&path, 1000.0, 4).unwrap();
        assert_eq!(read_all(&path).unwrap(), expected(1000.0));
        assert_eq!(tile_files(&path).len(), 2, "{:?}", tile_files(&path));
    }

    #[test]
    fn a_write_failing_before_commit_keeps_the_old_dataset_and_removes_its_own_files() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f.h5");
        write_slabs(&path, 0.0, 2).unwrap();
        let before_tiles = tile_files(&path);
        let before_master = std::fs::read(&path).unwrap();
        FAIL_BEFORE_COMMIT.with(|f| f.set(true));
        let e = write_slabs(&path, 500.0, 3).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_IO);
        assert_eq!(std::fs::read(&path).unwrap(), before_master);
        assert_eq!(tile_files(&path), before_tiles);
        assert_eq!(read_all(&path).unwrap(), expected(0.0));
        let leftovers: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(
            leftovers.len(),
            2,
            "only the master and its tile folder: {leftovers:?}"
        );
    }

    #[test]
    fn what_a_crash_leaves_does_not_disturb_readers_and_the_next_write_removes_it() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f.h5");
        write_slabs(&path, 0.0, 3).unwrap();
        // A crash mid-write leaves tiles of a new generation and maybe a temporary master.
        let data = [9.0f64; 24];
        let orphan = layout::tile_dir(&path).join(layout::tile_file_name("/grid/values", 7, 0, 0));
        vds::write_tile(
            &orphan,
            Dtype::Float64,
            &Tile::new(vec![0, 0], vec![6, 4]),
            &[6, 4],
            host_bytes(&data),
            true,
        )
        .unwrap();
        let tmp = layout::temporary_master(&path, 7);
        std::fs::write(&tmp, b"half-written master").unwrap();
        assert_eq!(read_all(&path).unwrap(), expected(0.0));
        write_slabs(&path, 2.0, 6).unwrap();
        assert_eq!(read_all(&path).unwrap(), expected(2.0));
        assert!(!orphan.exists() && !tmp.exists());
        assert_eq!(tile_files(&path).len(), 1);
    }

    #[test]
    fn bad_arguments_are_rejected_before_anything_is_written() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f.h5");
        let global = [4u64];
        let data = [0i32; 4];
        let try_write = |tiles: Vec<LocalTile>, options: WriteOptions, dataset: &str| {
            let written = write_tiles(&path, dataset, Dtype::Int32, &global, tiles, options);
            written.unwrap_err().status
        };
        let t = |o: u64, n: u64| LocalTile {
            tile: Tile::new(vec![o], vec![n]),
            buf: host_bytes(&data),
        };
        let opts = WriteOptions::default();
        assert_eq!(
            try_write(vec![t(2, 3)], opts, "/x"),
            H5TILE_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            try_write(vec![t(0, 3), t(2, 2)], opts, "/x"),
            H5TILE_ERR_SHAPE
        );
        assert_eq!(try_write(vec![t(0, 3)], opts, "/x"), H5TILE_ERR_SHAPE);
        assert_eq!(
            try_write(vec![t(0, 4)], opts, "/a//b"),
            H5TILE_ERR_INVALID_ARGUMENT
        );
        // A host buffer too short for its tile (at the C boundary: a NULL one).
        let short = LocalTile {
            tile: Tile::new(vec![0], vec![4]),
            buf: host_bytes(&data[..2]),
        };
        assert_eq!(
            try_write(vec![short], opts, "/x"),
            H5TILE_ERR_INVALID_ARGUMENT
        );
        assert!(
            std::fs::read_dir(d.path()).unwrap().next().is_none(),
            "nothing may be created"
        );
        let partial = WriteOptions {
            allow_partial: true,
            ..opts
        };
        write_tiles(&path, "/x", Dtype::Int32, &global, vec![t(1, 2)], partial).unwrap();
    }

    #[test]
    fn the_single_layout_round_trips_and_replaces_a_vds_without_leaving_tiles() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f.h5");
        write_slabs(&path, 0.0, 2).unwrap();
        assert_eq!(tile_files(&path).len(), 3);
        write_slabs_as(&path, 7.0, 1, Layout::Single).unwrap();
        assert_eq!(read_all(&path).unwrap(), expected(7.0));
        assert!(
            !layout::tile_dir(&path).exists(),
            "old tiles and their folder are gone"
        );
        let entries: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(entries, vec![std::ffi::OsString::from("f.h5")]);
        write_slabs_as(&path, 8.0, 4, Layout::Single).unwrap();
        assert_eq!(read_all(&path).unwrap(), expected(8.0));
    }

    #[test]
    fn the_subfiled_layout_writes_one_file_per_group_and_round_trips() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f.h5");
        write_slabs_as(&path, 0.0, 1, Layout::Subfiles).unwrap();
        assert_eq!(read_all(&path).unwrap(), expected(0.0));
        // This process alone is one group: six tiles, one subfile.
        let files = tile_files(&path);
        assert_eq!(files.len(), 1, "{files:?}");
        assert!(files[0].starts_with("grid+values.") && files[0].ends_with(".s0.h5"));
        let sub = layout::tile_dir(&path).join(&files[0]);
        let names: Vec<String> = {
            let _l = crate::platform::hdf5::lock();
            let f = crate::platform::hdf5::File::open_read(&sub).unwrap();
            (0..6)
                .map(|k| subfiles::tile_dataset(0, k))
                .filter(|n| f.object_kind(n).unwrap().is_some())
                .collect()
        };
        assert_eq!(names.len(), 6, "one dataset per tile: {names:?}");
        // Rewritten, in another layout and back: only the current generation's files stay.
        write_slabs_as(&path, 5.0, 4, Layout::Subfiles).unwrap();
        assert_eq!(read_all(&path).unwrap(), expected(5.0));
        assert_eq!(tile_files(&path).len(), 1);
        assert_ne!(tile_files(&path), files);
        write_slabs_as(&path, 6.0, 2, Layout::Vds).unwrap();
        assert_eq!(tile_files(&path).len(), 3);
        write_slabs_as(&path, 7.0, 3, Layout::Subfiles).unwrap();
        assert_eq!(read_all(&path).unwrap(), expected(7.0));
        assert_eq!(tile_files(&path).len(), 1);
        write_slabs_as(&path, 8.0, 3, Layout::Single).unwrap();
        assert!(!layout::tile_dir(&path).exists());
        assert_eq!(read_all(&path).unwrap(), expected(8.0));
    }

    #[test]
    fn a_subfile_of_another_write_in_place_of_the_named_one_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f.h5");
        write_slabs_as(&path, 0.0, 2, Layout::Subfiles).unwrap();
        let dir = layout::tile_dir(&path);
        let old = dir.join(&tile_files(&path)[0]);
        let kept = d.path().join("old-subfile.h5");
        std::fs::copy(&old, &kept).unwrap();
        write_slabs_as(&path, 1.0, 2, Layout::Subfiles).unwrap();
        let current = dir.join(&tile_files(&path)[0]);
        // Same tiles, same sizes: only the stamp tells the old subfile from the new one.
        assert_eq!(
            std::fs::metadata(&kept).unwrap().len(),
            std::fs::metadata(&current).unwrap().len()
        );
        std::fs::rename(&kept, &current).unwrap();
        let e = read_all(&path).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_MISSING_TILE, "{}", e.message);
        assert!(e.message.contains("another write"), "{}", e.message);
        assert!(e.message.starts_with("subfile '"), "{}", e.message);
        let name = current.file_name().unwrap().to_string_lossy().to_string();
        assert!(e.message.contains(&name), "{}", e.message);
        // Through HDF5 too (a read converting the type).
        let mut out = vec![0f32; 24];
        let all = Tile::new(vec![0, 0], vec![6, 4]);
        let narrowing = ReadOptions {
            narrowing: true,
            ..ReadOptions::default()
        };
        let e = read_into(
            &path,
            "/grid/values",
            Dtype::Float32,
            &all,
            &mut out,
            narrowing,
        )
        .unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_MISSING_TILE, "{}", e.message);
    }

    #[test]
    fn without_sync_every_layout_round_trips() {
        let d = tempfile::tempdir().unwrap();
        for layout in [Layout::Vds, Layout::Single, Layout::Subfiles] {
            let path = d.path().join(format!("{layout:?}.h5"));
            let data: Vec<f64> = expected(3.0);
            let options = WriteOptions {
                layout,
                no_sync: true,
                ..WriteOptions::default()
            };
            let buf = host_bytes(&data);
            write_whole(&path, "/grid/values", Dtype::Float64, &[6, 4], buf, options).unwrap();
            assert_eq!(read_all(&path).unwrap(), expected(3.0), "{layout:?}");
        }
    }

    #[test]
    fn gaps_of_a_partial_single_file_read_as_zero() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("s.h5");
        let global = [3u64, 5];
        let data = [1i32, 2, 3, 4];
        let tiles = vec![LocalTile {
            tile: Tile::new(vec![1, 2], vec![2, 2]),
            buf: host_bytes(&data),
        }];
        let options = WriteOptions {
            layout: Layout::Single,
            allow_partial: true,
            ..WriteOptions::default()
        };
        write_tiles(&path, "/g/x", Dtype::Int32, &global, tiles, options).unwrap();
        let mut out = [9i32; 15];
        let whole = Tile::new(vec![0, 0], vec![3, 5]);
        let options = ReadOptions::default();
        read_into(&path, "/g/x", Dtype::Int32, &whole, &mut out, options).unwrap();
        assert_eq!(out, [0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 3, 4, 0]);
    }

    /// Writes `rows` x 64 float64 (element k is base + k) as `dataset` of `path`, in two
    /// row slabs, keeping the file's other contents or not.
    fn write_field(
        path: &Path,
        dataset: &str,
        base: f64,
        rows: u64,
        layout: Layout,
        keep: bool,
    ) -> Result<()> {
        let global = [rows, 64];
        let data: Vec<f64> = (0..rows * 64).map(|k| base + k as f64).collect();
        let half = rows / 2;
        let tiles = [(0, half), (half, rows - half)]
            .into_iter()
            .map(|(r0, n)| LocalTile {
                tile: Tile::new(vec![r0, 0], vec![n, 64]),
                buf: host_bytes(&data[(r0 * 64) as usize..]),
            })
            .collect();
        let options = WriteOptions {
            layout,
            keep_others: keep,
            ..WriteOptions::default()
        };
        write_tiles(path, dataset, Dtype::Float64, &global, tiles, options)
    }

    /// The arguments of a write of float64 `tiles` of a `global` array.
    pub(crate) fn f64_args<'a>(
        path: &'a Path,
        dataset: &'a str,
        global: &'a [u64],
        tiles: Vec<LocalTile<'a>>,
        options: WriteOptions,
    ) -> WriteArgs<'a> {
        WriteArgs {
            path,
            dataset,
            dtype: Dtype::Float64,
            global,
            tiles,
            options,
        }
    }

    /// The first element of `dataset` and whether all `rows` x 64 follow from it.
    fn field_base(path: &Path, dataset: &str, rows: u64) -> Result<f64> {
        let out = read_f64(path, dataset, &Tile::new(vec![0, 0], vec![rows, 64]))?;
        assert!(
            out.iter().enumerate().all(|(k, &v)| v == out[0] + k as f64),
            "{dataset}"
        );
        Ok(out[0])
    }

    #[test]
    fn keep_others_replaces_or_adds_one_dataset_and_removes_only_its_old_tiles() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("ckpt.h5");
        write_field(&path, "/u", 0.0, 8, Layout::Vds, true).unwrap(); // no file yet: a plain write
        write_field(&path, "/g/v", 1000.0, 8, Layout::Vds, true).unwrap();
        write_field(&path, "/w", 2000.0, 8, Layout::Single, true).unwrap();
        let v_tiles: Vec<String> = tile_files(&path)
            .into_iter()
            .filter(|n| n.starts_with("g+v."))
            .collect();
        assert_eq!(v_tiles.len(), 2);
        write_field(&path, "/u", 3000.0, 8, Layout::Vds, true).unwrap();
        assert_eq!(field_base(&path, "/u", 8).unwrap(), 3000.0);
        assert_eq!(field_base(&path, "/g/v", 8).unwrap(), 1000.0);
        assert_eq!(field_base(&path, "/w", 8).unwrap(), 2000.0);
        let tiles = tile_files(&path);
        assert_eq!(
            tiles.len(),
            4,
            "two of /u's new generation, /g/v's two: {tiles:?}"
        );
        assert!(v_tiles.iter().all(|n| tiles.contains(n)), "{tiles:?}");
        // Without the flag the file holds the written dataset alone again.
        write_field(&path, "/x", 4000.0, 8, Layout::Vds, false).unwrap();
        assert_eq!(field_base(&path, "/x", 8).unwrap(), 4000.0);
        assert_eq!(
            field_base(&path, "/u", 8).unwrap_err().status,
            H5TILE_ERR_NOT_FOUND
        );
        assert!(tile_files(&path).iter().all(|n| n.starts_with("x.")));
    }

    #[test]
    fn keep_others_in_a_single_file_reuses_the_replaced_dataset_s_space() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("one.h5");
        write_field(&path, "/a", 0.0, 2048, Layout::Single, true).unwrap(); // 1 MiB
        write_field(&path, "/b", 1.0, 2048, Layout::Single, true).unwrap();
        let two = std::fs::metadata(&path).unwrap().len();
        for base in [2.0, 3.0, 4.0] {
            write_field(&path, "/a", base, 2048, Layout::Single, true).unwrap();
        }
        assert_eq!(field_base(&path, "/a", 2048).unwrap(), 4.0);
        assert_eq!(field_base(&path, "/b", 2048).unwrap(), 1.0);
        let after = std::fs::metadata(&path).unwrap().len();
        assert!(
            after < two + (256 << 10),
            "rewriting /a grew the file from {two} to {after} bytes"
        );
    }

    #[test]
    fn keep_others_refuses_what_it_cannot_keep_and_touches_nothing() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("ckpt.h5");
        write_field(&path, "/g/v", 0.0, 8, Layout::Vds, true).unwrap();
        let (master, tiles) = (std::fs::read(&path).unwrap(), tile_files(&path));
        let refused =
            |dataset: &str| write_field(&path, dataset, 9.0, 8, Layout::Vds, true).unwrap_err();
        let e = refused("/g");
        assert_eq!(e.status, H5TILE_ERR_NOT_A_DATASET, "{}", e.message);
        assert!(
            e.message.contains("replaces datasets only"),
            "{}",
            e.message
        );
        let e = refused("/g/v/x");
        assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT, "{}", e.message);
        assert!(
            e.message.contains("'/g/v'") && e.message.contains("not a group"),
            "{}",
            e.message
        );
        assert_eq!(std::fs::read(&path).unwrap(), master);
        assert_eq!(tile_files(&path), tiles);
        // Not an HDF5 file: its contents cannot be kept, and it stays as it was.
        let text = d.path().join("notes.h5");
        std::fs::write(&text, b"not HDF5").unwrap();
        let e = write_field(&text, "/u", 0.0, 8, Layout::Vds, true).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_HDF5, "{}", e.message);
        assert!(e.message.contains("H5TILE_KEEP_OTHERS"), "{}", e.message);
        assert_eq!(std::fs::read(&text).unwrap(), b"not HDF5");
        assert!(tile_files(&text).is_empty());
    }
}
