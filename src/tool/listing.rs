//! What `h5tile ls` and `check` show of files beyond what a verified restart needs: how a
//! dataset and its tiles are stored (`describe_stored`), names of storage kinds and layouts,
//! what is left unchecksummed, the space a series' checkpoints take, and the leftovers of
//! interrupted prunings. The types are `ops::describe`'s, `ops::series`'s and `ops::verify`'s.

use crate::layout::generation_of;
use crate::ops::describe::{
    describe_as, DatasetInfo, StorageKind, Stored, TileInfo, VirtualInfo, VirtualLayout,
};
use crate::ops::series::{checkpoints, listing, Checkpoint, LATEST_RECORD};
use crate::ops::verify::{check_sources_part, checked, checksummed_bytes, Depth, Problem, TileJob};
use crate::status::Result;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// `describe`, with how each virtual dataset and each of its tiles is stored on disk (their
/// filters and bytes there). Every tile file is opened for it: only the tools that show or
/// keep it (`ls`, `pack`) ask.
pub fn describe_stored(path: &Path, dataset: Option<&str>) -> Result<Vec<DatasetInfo>> {
    describe_as(path, dataset, true)
}

impl StorageKind {
    pub fn name(&self) -> &'static str {
        match self {
            StorageKind::Contiguous => "contiguous",
            StorageKind::Chunked(_) => "chunked",
            StorageKind::Compact => "compact",
            StorageKind::Virtual => "virtual",
            StorageKind::Other => "other",
        }
    }
}

impl VirtualLayout {
    /// As `h5tile ls` prints it.
    pub fn name(self) -> &'static str {
        match self {
            VirtualLayout::Vds => "h5tile VDS",
            VirtualLayout::Subfiles => "h5tile subfiles",
            VirtualLayout::Other => "other virtual",
            VirtualLayout::Single => "h5tile single-file",
        }
    }
    /// As `h5tile ls --json` writes it.
    pub fn key(self) -> &'static str {
        match self {
            VirtualLayout::Vds => "h5tile-vds",
            VirtualLayout::Subfiles => "h5tile-subfiles",
            VirtualLayout::Other => "other",
            VirtualLayout::Single => "h5tile-single",
        }
    }
}

impl Stored {
    /// The compression ratio: logical bytes ÷ stored bytes; None when nothing is stored.
    pub fn ratio(&self) -> Option<f64> {
        (self.stored_bytes > 0).then(|| self.logical_bytes as f64 / self.stored_bytes as f64)
    }
    /// Its elements pass through filters (a codec, a shuffle, a checksum) on their way to disk.
    pub fn filtered(&self) -> bool {
        !self.filters.is_empty()
    }
}

impl TileInfo {
    /// Whether its stored (compressed) chunks carry checksums; None where it is not stored
    /// through one of h5tile's codecs, or its file could not be opened.
    pub fn chunks_checksummed(&self) -> Option<bool> {
        self.stored.as_ref()?.compression.as_ref()?;
        Some(self.chunk_sums.is_some())
    }
}

impl VirtualInfo {
    /// The distinct source files (the master itself not counted).
    pub fn files(&self) -> Vec<&Path> {
        let mut seen = std::collections::BTreeSet::new();
        self.tiles
            .iter()
            .filter(|t| t.file != "." && !t.pattern)
            .map(|t| t.path.as_path())
            .filter(|p| seen.insert(*p))
            .collect()
    }
    /// How tile `tile` (of elements of `elem` bytes) is cut into checksummed blocks:
    /// "boxes" or "runs"; None where it carries no checksums.
    pub fn checksum_blocks(&self, tile: &TileInfo, elem: usize) -> Option<&'static str> {
        let (scheme, region) = (self.checksums?, tile.region.as_ref()?);
        tile.sums.as_ref()?;
        Some(match scheme.grid(&region.shape, elem).is_boxes() {
            true => "boxes",
            false => "runs",
        })
    }

    /// Tiles that select elements but carry no checksums.
    pub fn not_checksummed(&self) -> usize {
        self.tiles
            .iter()
            .filter(|t| t.region.is_some() && t.sums.is_none())
            .count()
    }
    /// Of the tiles that select elements and are compressed by one of h5tile's codecs: how
    /// many, and how many of those record no checksums of their stored chunks (a master
    /// written before h5tile recorded them: reads check the decoded blocks instead).
    pub fn chunks_not_checksummed(&self) -> (usize, usize) {
        self.tiles
            .iter()
            .filter(|t| t.region.is_some())
            .filter_map(TileInfo::chunks_checksummed)
            .fold((0, 0), |(n, not), c| (n + 1, not + usize::from(!c)))
    }
}

impl Checkpoint {
    /// Bytes on disk: the master, the files of its tile folder and the temporary masters.
    pub fn bytes(&self) -> u64 {
        let size = |p: &Path| std::fs::symlink_metadata(p).map_or(0, |m| m.len());
        let mut total = size(&self.master) + self.temporaries.iter().map(|p| size(p)).sum::<u64>();
        if let Some(Ok(entries)) = self.tile_dir.as_ref().map(std::fs::read_dir) {
            total += entries.flatten().map(|e| size(&e.path())).sum::<u64>();
        }
        total
    }
    /// The space the files of `bytes` take on disk (their blocks, as `du` counts them): less
    /// than `bytes` where a file has holes (a large tile's data aligned after its header).
    pub fn used_bytes(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        let used = |p: &Path| std::fs::symlink_metadata(p).map_or(0, |m| m.blocks() * 512);
        let mut total = used(&self.master) + self.temporaries.iter().map(|p| used(p)).sum::<u64>();
        if let Some(Ok(entries)) = self.tile_dir.as_ref().map(std::fs::read_dir) {
            total += entries.flatten().map(|e| used(&e.path())).sum::<u64>();
        }
        total
    }
    /// Whether this step is what an interrupted pruning leaves, `latest` being the newest
    /// complete step: it has no master and is older than `latest`. After each commit `prune`
    /// removes every such step (a pruned checkpoint loses its master first, then its tile
    /// folder and temporaries; a write that did not commit never had one), so one is left only
    /// where that pruning stopped (killed, or failed) before the rest; the next commit's
    /// pruning removes it. A step newer than `latest` with no master is a write that did not
    /// commit (or one under way), which `prune` never touches.
    pub fn pruning_interrupted(&self, latest: Option<u64>) -> bool {
        !self.has_master && latest.is_some_and(|latest| self.step < latest)
    }
    /// This step's files that `prune` removes with (or without) its master: the files of its
    /// tile folder named as h5tile names tile files and subfiles (others' files there are not
    /// ours), sorted, then its temporary masters.
    pub fn own_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = self
            .tile_dir
            .as_ref()
            .and_then(|d| std::fs::read_dir(d).ok())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| generation_of(n).is_some())
            })
            .map(|e| e.path())
            .collect();
        files.sort();
        files.extend(self.temporaries.iter().cloned());
        files
    }
}

/// The steps of complete checkpoints in dir, newest first: a master file exists at its final
/// name (the commit is the rename of a complete master, so a crash leaves only temporaries and
/// tile folders) and it opens as HDF5. A missing dir gives NOT_FOUND with the path.
pub fn complete_steps(dir: &Path) -> Result<Vec<u64>> {
    let mut steps: Vec<u64> = checkpoints(dir)?
        .into_iter()
        .filter(|c| c.complete)
        .map(|c| c.step)
        .collect();
    steps.dedup();
    Ok(steps)
}

/// Whether `dir` holds anything of a series: the record, or a checkpoint's master, tile folder
/// or temporary master.
pub fn looks_like_series(dir: &Path) -> bool {
    dir.join(LATEST_RECORD).is_file() || listing(dir).is_ok_and(|found| !found.is_empty())
}

/// Checks that every source of virtual dataset `info` is there: present; where the master
/// records the tile's bytes, of the recorded size (and, for a subfile, stamped by the write its
/// name says), which is all h5tile's reads rely on; and, at `Depth::Hdf5` (always for sources
/// whose bytes are not recorded), as other readers (HDF5, h5py) need, opened with HDF5,
/// holding the mapped dataset with a shape that holds the mapped box and a type HDF5 converts
/// to the dataset's. Sources named by patterns are left to HDF5. Problems come in the order of
/// the master's mappings.
pub fn check_sources(info: &DatasetInfo, depth: Depth) -> Vec<Problem> {
    check_sources_part(info, depth, 0, 1)
        .into_iter()
        .map(|(_, p)| p)
        .collect()
}

/// The number of distinct source files `check_sources` opens with HDF5 for `info` at `depth`.
pub fn sources_to_open(info: &DatasetInfo, depth: Depth) -> usize {
    let Some(vds) = &info.virtual_info else {
        return 0;
    };
    let opened = vds
        .tiles
        .iter()
        .filter(|t| checked(t) && t.found && depth.opens(t));
    opened.map(|t| &t.path).collect::<HashSet<_>>().len()
}

/// The bytes `job` (of `checksum_jobs(datasets, ..)`) reads.
pub fn job_bytes(datasets: &[&DatasetInfo], (d, t): TileJob) -> u64 {
    let info = datasets[d];
    info.tiled()
        .map_or(0, |v| checksummed_bytes(&v.tiles[t], info.element_bytes))
}
