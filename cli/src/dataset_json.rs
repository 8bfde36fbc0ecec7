//! What `h5tile ls --json` writes of a dataset (for a FILE, and for each checkpoint of a
//! series), and of a compression (`pack --json` too): shared by `ls`, `series` and `pack`.

use crate::show;
use h5tile::internals::tool::{
    Codec, Compression, DatasetInfo, Scheme, StorageKind, Stored, TileInfo, VirtualInfo,
};
use serde::Serialize;

/// A dataset as `ls --json` writes it (for a FILE, and for each checkpoint of a DIR).
#[derive(Serialize)]
pub struct DatasetJson {
    name: String,
    dtype: String,
    shape: Vec<u64>,
    storage: &'static str,
    /// The chunk shape of chunked storage, else null.
    chunks: Option<Vec<u64>>,
    bytes: u64,
    #[serde(flatten)]
    stored: StoredJson,
    /// Its attributes but h5tile's own: {name: value}.
    attributes: serde_json::Map<String, serde_json::Value>,
    #[serde(rename = "virtual", skip_serializing_if = "Option::is_none")]
    virtual_info: Option<VirtualJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    single: Option<VirtualJson>,
}

/// How a dataset or a tile's source is stored on disk.
#[derive(Serialize)]
struct StoredJson {
    /// Null: not compressed, or not by a codec h5tile knows (see `filters`).
    compression: Option<CompressionJson>,
    /// HDF5's filter ids, in pipeline order.
    filters: Vec<u32>,
    /// A tiled dataset's tiles are not all filtered alike.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    mixed: bool,
    /// Bytes on disk; null where not known (a tile's file missing).
    stored_bytes: Option<u64>,
    /// Logical bytes ÷ stored bytes; null where nothing is stored or it is not known.
    ratio: Option<f64>,
}

/// A compression as `ls --json` and `pack --json` write it.
#[derive(Serialize)]
pub struct CompressionJson {
    codec: &'static str,
    /// Null for lz4, which has no levels.
    level: Option<i32>,
    shuffle: bool,
}

impl CompressionJson {
    pub fn of(c: &Compression) -> CompressionJson {
        CompressionJson {
            codec: c.codec.name(),
            level: (c.codec != Codec::Lz4).then_some(c.level),
            shuffle: c.shuffle,
        }
    }
}

impl StoredJson {
    fn of(stored: Option<&Stored>) -> StoredJson {
        StoredJson {
            compression: stored.and_then(|s| s.compression.as_ref().map(CompressionJson::of)),
            filters: stored.map_or_else(Vec::new, |s| s.filters.clone()),
            mixed: stored.is_some_and(|s| s.mixed),
            stored_bytes: stored.map(|s| s.stored_bytes),
            ratio: stored.and_then(Stored::ratio),
        }
    }
}

#[derive(Serialize)]
struct VirtualJson {
    layout: &'static str,
    /// Where H5TILE_LAYOUT_AUTO chose the layout: {"ranks", "nodes", "most_tiles_a_rank"};
    /// null where the writer named it.
    chosen_by_auto: Option<ChosenJson>,
    /// 16 hex digits, or null.
    generation: Option<String>,
    tiles: usize,
    files: usize,
    /// Every tile holding elements carries checksums.
    checksummed: bool,
    not_checksummed: usize,
    /// How the tiles are cut into checksummed blocks; null where none are recorded.
    checksum_blocks: Option<BlocksJson>,
    /// Every compressed tile holding elements records its stored chunks' checksums; null
    /// where no tile is compressed by one of h5tile's codecs.
    chunks_checksummed: Option<bool>,
    /// Compressed tiles holding elements whose stored chunks carry no checksums.
    chunks_not_checksummed: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    tile_list: Option<Vec<TileJson>>,
}

#[derive(Serialize)]
struct TileJson {
    /// The box it fills: null when it selects nothing.
    offset: Option<Vec<u64>>,
    shape: Option<Vec<u64>>,
    file: String,
    dataset: String,
    /// Where the box starts in the source dataset, when the source selection is one box.
    source_offset: Option<Vec<u64>>,
    /// The shape of the dataset whose rows hold the tile's bytes (a subfile's coalesced box,
    /// the single-file layout's dataset); null where they are one run from `data_offset`.
    within: Option<Vec<u64>>,
    /// The source file is where HDF5 looks for it.
    found: bool,
    path: String,
    /// Where an h5tile master records the tile's bytes start in its file, and that file's
    /// size; null where nothing is recorded.
    data_offset: Option<u64>,
    file_size: Option<u64>,
    checksummed: bool,
    /// "boxes" or "runs": how this tile's bytes are cut (a tile no wider than a box is in
    /// runs); null where it carries no checksums.
    checksum_blocks: Option<&'static str>,
    /// Null where the tile is not compressed by one of h5tile's codecs.
    chunks_checksummed: Option<bool>,
    #[serde(flatten)]
    stored: StoredJson,
    min: serde_json::Value,
    max: serde_json::Value,
    nan: Option<u64>,
}

impl DatasetJson {
    pub fn of(info: &DatasetInfo, per_tile: bool) -> DatasetJson {
        DatasetJson {
            name: info.name.clone(),
            dtype: info.dtype.clone(),
            shape: info.shape.clone(),
            storage: info.storage.name(),
            chunks: match &info.storage {
                StorageKind::Chunked(chunk) => Some(chunk.clone()),
                _ => None,
            },
            bytes: info.bytes(),
            stored: StoredJson::of(info.stored.as_ref()),
            attributes: show::attributes_json(&info.attributes),
            virtual_info: (info.virtual_info.as_ref())
                .map(|v| VirtualJson::of(v, info.element_bytes, per_tile)),
            single: (info.single.as_ref())
                .map(|v| VirtualJson::of(v, info.element_bytes, per_tile)),
        }
    }
}

#[derive(Serialize)]
struct BlocksJson {
    kind: &'static str,
    block_bytes: u64,
    row_bytes: Option<u64>,
}

impl BlocksJson {
    fn of(scheme: Scheme) -> BlocksJson {
        match scheme {
            Scheme::Runs { block } => BlocksJson {
                kind: "runs",
                block_bytes: block,
                row_bytes: None,
            },
            Scheme::Boxes { block, row } => BlocksJson {
                kind: "boxes",
                block_bytes: block,
                row_bytes: Some(row),
            },
        }
    }
}

#[derive(Serialize)]
struct ChosenJson {
    ranks: u64,
    nodes: u64,
    /// null in files written before December 2026.
    most_tiles_a_rank: Option<u64>,
}

impl VirtualJson {
    fn of(vds: &VirtualInfo, elem: usize, per_tile: bool) -> VirtualJson {
        let with_data = vds.tiles.iter().filter(|t| t.region.is_some()).count();
        let not_checksummed = vds.not_checksummed();
        let (compressed, chunks_not_checksummed) = vds.chunks_not_checksummed();
        VirtualJson {
            layout: vds.layout.key(),
            chosen_by_auto: vds
                .chosen_on
                .map(|(ranks, nodes, most_tiles_a_rank)| ChosenJson {
                    ranks,
                    nodes,
                    most_tiles_a_rank,
                }),
            generation: vds.generation.map(|g| format!("{g:016x}")),
            tiles: vds.tiles.len(),
            files: vds.files().len(),
            checksummed: with_data > 0 && not_checksummed == 0,
            not_checksummed,
            checksum_blocks: vds.checksums.map(BlocksJson::of),
            chunks_checksummed: (compressed > 0).then_some(chunks_not_checksummed == 0),
            chunks_not_checksummed,
            tile_list: per_tile.then(|| {
                let of = |t| TileJson::of(t, vds.checksum_blocks(t, elem));
                vds.tiles.iter().map(of).collect()
            }),
        }
    }
}

impl TileJson {
    fn of(t: &TileInfo, checksum_blocks: Option<&'static str>) -> TileJson {
        let extreme = |pick: fn(&h5tile::internals::tool::TileExtremes) -> serde_json::Value| {
            t.extremes.as_ref().map_or(serde_json::Value::Null, pick)
        };
        TileJson {
            offset: t.region.as_ref().map(|r| r.offset.clone()),
            shape: t.region.as_ref().map(|r| r.shape.clone()),
            file: t.file.clone(),
            dataset: t.dataset.clone(),
            source_offset: t.source_offset.clone(),
            within: t.within.clone(),
            found: t.found,
            path: show::path(&t.path),
            data_offset: t.data_offset,
            file_size: t.file_size,
            checksummed: t.sums.is_some(),
            checksum_blocks,
            chunks_checksummed: t.chunks_checksummed(),
            stored: StoredJson::of(t.stored.as_ref()),
            min: extreme(|e| show::scalar_json(e.min)),
            max: extreme(|e| show::scalar_json(e.max)),
            nan: t.extremes.map(|e| e.nan),
        }
    }
}
