//! `h5tile_write` and checkpoints: the collective commit of every rank's tiles of one or more
//! datasets, with attributes, as one new version of a file.
//!
//! Order of events, each step agreed by all ranks before the next so a failure anywhere is the
//! same failure everywhere and nothing on disk is touched until every check has passed:
//! 1. validate: local argument checks (`agree::validate`), then all ranks check they were
//!    given the same arguments (`agree::same_arguments`);
//! 2. plan: rank 0 gathers every tile, checks overlap and coverage per dataset, checks and
//!    prepares the path (`plan`);
//! 3. write: each layout's writer writes this rank's tiles where its layout keeps them, under
//!    new names invisible to readers of the old file (`tile_files`, `subfiles`, `single`);
//! 4. gather: rank 0 learns where each tile went and what it summed to (`messages::Placed`);
//! 5. commit: rank 0 completes the new master under its temporary name, with every dataset
//!    and attribute, and renames it over the old one (the commit point), then deletes the
//!    files no version needs any more. Readers and a crash see the old file or the new one,
//!    never some of the datasets.

mod agree;
#[cfg(test)]
mod compressed_tests;
mod messages;
mod plan;
mod single;
mod subfiles;
mod summing;
#[cfg(test)]
pub(crate) mod tests;
mod tile_files;
mod unchanged;

pub use crate::platform::codecs::{Codec, Compression};
pub use crate::platform::hdf5::AttributeValue;
pub use agree::validate_dataset_name;
pub use tile_files::{master_mapping, write_tile_file};
pub use unchanged::when_buffers_read;

use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::layout;
use crate::platform::comm::Comm;
use crate::platform::device::Buffer;
use crate::platform::hdf5::File;
use crate::platform::tile_bytes::Durability;
use crate::status::*;
use messages::{decode, encode, Placed};
use plan::Plan;
use std::path::{Path, PathBuf};

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
    /// Whether its tiles can be stored compressed: each tile a chunked dataset of its own
    /// (the single-file layout's ranks write their rows in place, in one shared dataset).
    pub fn compresses(self) -> bool {
        self != Layout::Single
    }

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
    /// `H5TILE_LAYOUT_AUTO`: the layout is chosen over the communicator as the write starts
    /// (`by_scale`), `layout` until then the VDS layout.
    pub by_scale: bool,
    /// Where `by_scale` chose `layout`, what it saw.
    pub chosen_on: Option<ChosenOn>,
    /// Fail with `H5TILE_ERR_EXISTS` instead of replacing an existing file.
    pub no_overwrite: bool,
    /// Tiles may leave gaps, which read back as zero.
    pub allow_partial: bool,
    /// Keep the file's other contents: replace or add only the datasets written.
    pub keep_others: bool,
    /// No `fsync` (`H5TILE_NO_SYNC`): the commit is still an atomic rename, but a power or
    /// node failure may lose the write.
    pub no_sync: bool,
    /// Subfiled layout: ranks per subfile, within one node (None: the whole node).
    pub ranks_per_file: Option<usize>,
    /// Subfiled layout: a group's tiles of a dataset that together fill one box are stored as
    /// one dataset of the subfile, mapped once (`H5TILE_COALESCE`, on by default).
    pub coalesce: bool,
    /// How tiles in device memory move.
    pub gds: crate::platform::device::Gds,
    /// Tiles stored compressed so (the VDS and subfiled layouts), or not (None).
    pub compression: Option<Compression>,
    /// `H5TILE_SNAPSHOT`: an asynchronous write copies this rank's tiles into staging memory
    /// before it returns (`ops::snapshot`); synchronous writes ignore it.
    pub snapshot: bool,
    /// The most staging memory this process's snapshots hold at once, in bytes (resolved from
    /// the options, the environment or the default where the write snapshots).
    pub staging_bytes: u64,
    /// The caller's buffers may change while the write reads them (an asynchronous write that
    /// did not snapshot): each host tile is summed again once written, and a tile that changed
    /// fails the write on every rank before its commit.
    pub buffers_may_change: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            layout: Layout::Vds,
            by_scale: false,
            chosen_on: None,
            no_overwrite: false,
            allow_partial: false,
            keep_others: false,
            no_sync: false,
            ranks_per_file: None,
            coalesce: true,
            gds: crate::platform::device::Gds::Auto,
            compression: None,
            snapshot: false,
            staging_bytes: 0,
            buffers_may_change: false,
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

/// Everything one rank passes to a collective write of one dataset.
#[derive(Clone, Debug)]
pub struct WriteArgs<'a> {
    pub path: &'a Path,
    pub dataset: &'a str,
    pub dtype: Dtype,
    pub global: &'a [u64],
    pub tiles: Vec<LocalTile<'a>>,
    pub options: WriteOptions,
}

impl<'a> WriteArgs<'a> {
    /// The same write as a checkpoint of one field.
    pub fn checkpoint(&self) -> Checkpoint<'a> {
        Checkpoint {
            path: self.path.to_path_buf(),
            fields: vec![Field {
                dataset: self.dataset.to_string(),
                dtype: self.dtype,
                global: self.global.to_vec(),
                tiles: self.tiles.clone(),
            }],
            attributes: Vec::new(),
            options: self.options,
        }
    }
}

/// One dataset of a checkpoint: its name, element type, global shape and this rank's tiles
/// of it (any number, none included).
#[derive(Clone, Debug)]
pub struct Field<'a> {
    pub dataset: String,
    pub dtype: Dtype,
    pub global: Vec<u64>,
    pub tiles: Vec<LocalTile<'a>>,
}

/// An attribute a checkpoint stores on `object`: "/" (the file), a group or a dataset path.
/// Rank 0's values are stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Attribute {
    pub object: String,
    pub name: String,
    pub value: AttributeValue,
}

/// Everything one rank passes to a collective commit: datasets and attributes made visible
/// together, replacing the file at `path` (with `keep_others`, only what it names).
#[derive(Clone, Debug)]
pub struct Checkpoint<'a> {
    pub path: PathBuf,
    pub fields: Vec<Field<'a>>,
    pub attributes: Vec<Attribute>,
    pub options: WriteOptions,
}

impl<'a> Checkpoint<'a> {
    /// This rank's tiles over every field, numbered (`k`) in field order: (k, field, tile).
    fn local_tiles(&self) -> impl Iterator<Item = (usize, usize, &LocalTile<'a>)> {
        self.fields
            .iter()
            .enumerate()
            .flat_map(|(f, field)| field.tiles.iter().map(move |t| (f, t)))
            .enumerate()
            .map(|(k, (f, t))| (k, f, t))
    }

    /// The most tiles holding elements this rank has of one field.
    fn most_tiles_of_a_field(&self) -> usize {
        let count = |f: &Field| f.tiles.iter().filter(|t| !t.tile.is_empty()).count();
        self.fields.iter().map(count).max().unwrap_or(0)
    }

    /// `local_tiles` that hold elements.
    fn non_empty_tiles(&self) -> impl Iterator<Item = (usize, usize, &LocalTile<'a>)> {
        self.local_tiles().filter(|(_, _, t)| !t.tile.is_empty())
    }

    /// The same commit with its fields and attributes in name order, so that ranks that added
    /// them in different orders agree.
    fn sorted(&self) -> Checkpoint<'a> {
        let mut ck = self.clone();
        ck.fields.sort_by(|a, b| a.dataset.cmp(&b.dataset));
        ck.attributes
            .sort_by(|a, b| (&a.object, &a.name).cmp(&(&b.object, &b.name)));
        ck
    }

    /// The datasets it writes.
    fn datasets(&self) -> Vec<&str> {
        self.fields.iter().map(|f| f.dataset.as_str()).collect()
    }

    /// How durable the layouts' writers make tile bytes: synced after all of a rank's tiles
    /// are written (together: one journal commit for many), or never (`H5TILE_NO_SYNC`).
    fn tile_durability(&self) -> Durability {
        match self.options.no_sync {
            false => Durability::SyncLater,
            true => Durability::Never,
        }
    }

    /// The file whose other contents the new master keeps (`H5TILE_KEEP_OTHERS`).
    fn keep_from(&self) -> Option<&Path> {
        self.options.keep_others.then_some(self.path.as_path())
    }
}

/// Writes `args` collectively over `comm`: a checkpoint of one dataset.
pub fn write(comm: &Comm, args: &WriteArgs) -> Result<()> {
    commit(comm, &args.checkpoint())
}

/// Commits `ck` collectively over `comm`; see the module documentation for the protocol.
pub fn commit(comm: &Comm, ck: &Checkpoint) -> Result<()> {
    comm.agree_on(|| check(ck))?;
    commit_checked(comm, ck)
}

/// The checks one rank makes alone. A commit started in the background makes them before it
/// returns, so that a bad call fails at once.
pub fn check(ck: &Checkpoint) -> Result<()> {
    agree::validate(ck)
}

/// `commit` after every rank's `check` has passed.
pub fn commit_checked(comm: &Comm, ck: &Checkpoint) -> Result<()> {
    let mut ck = ck.sorted();
    // What any rank asks of every rank, in one allreduce: the layout chosen by scale (so that
    // ranks that disagree on the layout make the same calls, and are then told they
    // disagree), and the most tiles a rank holds of one dataset (for that choice), as its
    // complement; and a second look at buffers that may change (`unchanged`).
    let mut asked = [
        !ck.options.by_scale as u64,
        !ck.options.buffers_may_change as u64,
        u64::MAX - ck.most_tiles_of_a_field() as u64,
    ];
    comm.all_min(&mut asked);
    let recheck = asked[1] == 0;
    if asked[0] == 0 {
        let nodes = comm.nodes()?;
        let most = (u64::MAX - asked[2]) as usize;
        if ck.options.by_scale {
            let (layout, per_file) = by_scale(nodes, most, ck.options.ranks_per_file);
            ck.options.layout = layout;
            ck.options.ranks_per_file = per_file;
            ck.options.chosen_on = Some(ChosenOn {
                ranks: comm.size(),
                nodes,
                most_tiles: most,
            });
        }
    }
    let ck = &ck;
    agree::same_arguments(comm, ck)?;
    let plan = plan::plan(comm, ck)?;
    match ck.options.layout {
        Layout::Vds => run(comm, ck, &plan, tile_files::TileFiles, recheck),
        Layout::Subfiles => run(comm, ck, &plan, subfiles::Subfiles, recheck),
        Layout::Single => run(comm, ck, &plan, single::SingleFile, recheck),
    }
}

/// `H5TILE_LAYOUT_AUTO`'s choice for ranks on `nodes` nodes holding at most `most_tiles`
/// tiles of one dataset each, with the ranks per subfile asked for (`per_file`): the layout
/// and the ranks per subfile it writes with.
/// - Across nodes, one subfile per node: files grow with nodes, not ranks or tiles.
/// - On one node with one tile a rank (of each dataset), one file per tile: a local file system
///   serialises buffered writers of one file, so each rank writes a file of its own.
/// - On one node with more, one subfile per rank: still a file of its own for each writer,
///   but never a file per tile (a reader such as h5py opens every file a master maps).
fn by_scale(nodes: usize, most_tiles: usize, per_file: Option<usize>) -> (Layout, Option<usize>) {
    match (nodes > 1, most_tiles > 1) {
        (true, _) => (Layout::Subfiles, per_file),
        (false, false) => (Layout::Vds, per_file),
        (false, true) => (Layout::Subfiles, per_file.or(Some(1))),
    }
}

/// Where `H5TILE_LAYOUT_AUTO` chose the layout: what it saw (the masters record it, and
/// `h5tile ls` tells it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChosenOn {
    pub ranks: usize,
    pub nodes: usize,
    /// The most tiles one rank held of one dataset.
    pub most_tiles: usize,
}

impl ChosenOn {
    /// As the masters record it (`layout::vds::CHOSEN_ON_ATTRIBUTE`).
    fn recorded(&self) -> [u64; 3] {
        [self.ranks, self.nodes, self.most_tiles].map(|n| n as u64)
    }
}

/// How one layout writes a commit's tiles and the master that finds them.
trait LayoutWriter {
    /// Whether the layout keeps tiles in the tile folder beside the master.
    const IN_TILE_DIR: bool;

    /// Step 3, on every rank, agreed: writes this rank's tiles, noting every file it creates
    /// in `written`, and returns what rank 0 records of each non-empty one.
    fn write_tiles(&self, commit: &Commit, written: &mut Vec<PathBuf>) -> Result<Vec<Placed>>;

    /// Step 5, on rank 0: the new master at `tmp` holding every dataset of `ck`, each tile
    /// recorded as `placed[rank]` says (attributes and the commit are the caller's). By
    /// default, that of the layouts keeping tiles in the tile folder: a virtual dataset each.
    fn master(&self, tmp: &Path, commit: &Commit, placed: &[Vec<Placed>]) -> Result<File> {
        tile_files::master_of_sources(tmp, commit.ck, commit.plan, placed)
    }
}

/// The commit a layout writes: over `comm`, of `ck`, as `plan` places its tiles.
#[derive(Clone, Copy)]
struct Commit<'a> {
    comm: &'a Comm,
    ck: &'a Checkpoint<'a>,
    plan: &'a Plan,
}

/// Steps 3 to 5 with `writer`. A failure before the commit removes what was written.
/// With `recheck` (some rank's buffers may change), every rank agrees on `unchanged::check`.
fn run<W: LayoutWriter>(
    comm: &Comm,
    ck: &Checkpoint,
    plan: &Plan,
    writer: W,
    recheck: bool,
) -> Result<()> {
    let dir = layout::tile_dir(&ck.path);
    let mut written: Vec<PathBuf> = Vec::new();
    let commit = Commit { comm, ck, plan };
    let before = unchanged::before(ck);
    let result = writer.write_tiles(&commit, &mut written);
    // Agreed already: every rank takes the same branch into the check's agreement.
    let result = match result {
        Ok(placed) if recheck => comm
            .agree_on(|| unchanged::check(ck, &before, &placed))
            .map(|()| placed),
        other => other,
    };
    unchanged::buffers_read();
    let placed_by_rank = match &result {
        Ok(placed) => comm.gather_varcount_to_root(&encode(placed)),
        Err(_) => None,
    };
    let finish = |tmp: &Path| {
        let placed: Vec<Vec<Placed>> = placed_by_rank
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(rank, words)| {
                let elem_of = |k| plan.elem_of(ck, rank, k);
                decode::<Placed>(words, &elem_of)
            })
            .collect();
        let file = writer.master(tmp, &commit, &placed)?;
        for a in &ck.attributes {
            file.set_attribute(&a.object, &a.name, &a.value)?;
        }
        file.close()
    };
    let tiles = W::IN_TILE_DIR.then_some(dir.as_path());
    let (result, committed) = match result {
        Ok(_) => commit_on_root(comm, ck, plan, tiles, finish),
        Err(e) => (Err(e), false),
    };
    if result.is_err() && !committed {
        for p in &written {
            let _ = std::fs::remove_file(p);
        }
        // Once every rank has removed its files, a tile folder left empty goes too.
        let _ = comm.agree(Ok(()));
        if comm.is_root() && tiles.is_some() {
            let _ = std::fs::remove_dir(&dir);
        }
    }
    result
}

/// Step 5: on rank 0, `publish`; every rank learns the agreed outcome and whether the commit
/// happened (then no new file may be removed).
fn commit_on_root(
    comm: &Comm,
    ck: &Checkpoint,
    plan: &Plan,
    tiles: Option<&Path>,
    finish: impl FnOnce(&Path) -> Result<()>,
) -> (Result<()>, bool) {
    let mut committed = false;
    let result = crate::status::catch_panic(|| {
        if !comm.is_root() {
            return Ok(());
        }
        let mut lock = plan.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        publish(
            ck,
            plan.generation,
            &mut lock,
            tiles,
            &mut committed,
            finish,
        )
    });
    let mut flag = [committed as u64];
    comm.broadcast(&mut flag);
    (comm.agree(result), flag[0] == 1)
}

/// The commit point, on the one process that commits (rank 0 of a collective write, the
/// coordinator of a transaction): `finish` completes the new master at its temporary path,
/// which is renamed over `ck.path` (after syncing the tile folder `tiles` and the master's
/// folder), after which files no version needs are removed and the write's lock `in_flight`
/// (of generation `generation`) is released. `committed` is set the moment the new master is
/// in place (then no new file may be removed, even if the cleanup after it fails or panics);
/// until then the lock stays held.
pub(crate) fn publish(
    ck: &Checkpoint,
    generation: u64,
    in_flight: &mut Option<layout::in_flight::WriteLock>,
    tiles: Option<&Path>,
    committed: &mut bool,
    finish: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    let path = ck.path.as_path();
    let sync = !ck.options.no_sync;
    let tmp = layout::temporary_master(path, generation);
    let switched = finish(&tmp)
        .and_then(|()| injected_failure())
        .and_then(|()| layout::commit(&tmp, path, tiles, sync));
    let mine = match switched {
        Ok(mine) => mine,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    *committed = true;
    let cleaned = match sync {
        true => layout::sync_parent(path),
        false => Ok(()),
    }
    .and_then(|()| layout::remove_stale(path, generation, mine, ck.options.keep_others));
    // Released, then a last look: a commit over this one whose cleanup ran while this write's
    // lock was held spared its files.
    drop(in_flight.take());
    layout::remove_own_if_replaced(path, generation, mine);
    cleaned.map_err(|e| {
        Error::new(
            e.status,
            format!(
                "{} (after the commit: the new dataset is in place)",
                e.message
            ),
        )
    })
}

/// Unit tests make a write fail between its new master and the commit; elsewhere a no-op.
#[cfg(not(test))]
fn injected_failure() -> Result<()> {
    Ok(())
}

#[cfg(test)]
use tests::injected_failure;
