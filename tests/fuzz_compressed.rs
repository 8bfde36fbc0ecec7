//! Damaged compressed tiles never give wrong values: a property-based pass (proptest) over
//! compressed datasets (zstd, LZ4, deflate, with and without the byte shuffle; the VDS and
//! subfiled layouts; float64 and int32; random shapes and tilings, some tiles of several
//! chunks) whose tile files are then damaged: bytes flipped or zeroed inside the stored chunks
//! of a tile (found through HDF5's chunk index), or a tile file cut short. Reads of the whole
//! dataset, of a random box, converted and in batches either give exactly the written values
//! or fail: `H5TILE_ERR_CORRUPT` naming the file, the tile and a damaged chunk for damaged
//! chunks, `H5TILE_ERR_MISSING_TILE` naming the file for a truncated one. A read that decodes
//! no damaged chunk (nor one sharing a checksum block with what it reads) succeeds. Unchecked
//! (`no_verify`), the elements of undamaged chunks are still exact, and a failure still names
//! the damage (a converted read, which HDF5 decodes, is then decoded by h5tile to find it).
//!
//! In process: only chunk bytes and file lengths are damaged, never HDF5's metadata, so HDF5
//! parses nothing damaged (`fuzz_inputs.rs` damages metadata, in a child process).
//!
//! 48 cases by default; `PROPTEST_CASES=N` runs N.

mod common;
use common::cases;
use h5tile::ffi::{
    h5tile_last_error, h5tile_write_options, h5tile_write_tiles, H5TILE_COMPRESS_DEFLATE,
    H5TILE_COMPRESS_LZ4, H5TILE_COMPRESS_ZSTD, H5TILE_FLOAT64, H5TILE_GDS_FROM_ENVIRONMENT,
    H5TILE_INT32, H5TILE_LAYOUT_SUBFILES, H5TILE_LAYOUT_VDS, H5TILE_NO_SYNC, H5TILE_SHUFFLE,
};
use h5tile::internals::hdf5::{self, Dataset, File, Handle};
use h5tile::internals::status::{
    Error, H5TILE_ERR_CORRUPT, H5TILE_ERR_HDF5, H5TILE_ERR_MISSING_TILE, H5TILE_ERR_PANIC,
    H5TILE_OK,
};
use h5tile::internals::testkit::{flip_bits, read_into};
use h5tile::internals::{Batches, Comm, Dtype, ReadOptions, Tile};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use std::collections::BTreeSet;
use std::ffi::{c_void, CStr, CString};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------------
// What is written: a 2-D array of `Kind`, cut into tiles at random rows and columns.

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    F64,
    I32,
}

impl Kind {
    fn dtype(self) -> Dtype {
        match self {
            Kind::F64 => Dtype::Float64,
            Kind::I32 => Dtype::Int32,
        }
    }

    fn elem(self) -> usize {
        match self {
            Kind::F64 => 8,
            Kind::I32 => 4,
        }
    }

    /// Element `k` (row-major in the whole array) as written, widened to f64 (exact for both).
    fn value(self, k: u64) -> f64 {
        match self {
            Kind::F64 => k as f64 * 0.25 - 100.0,
            Kind::I32 => ((k % 1009) as i64 - 500) as f64,
        }
    }

    /// The bytes of `values` (each from `value`) as stored.
    fn bytes(self, values: impl Iterator<Item = f64>) -> Vec<u8> {
        match self {
            Kind::F64 => values.flat_map(f64::to_ne_bytes).collect(),
            Kind::I32 => values.flat_map(|v| (v as i32).to_ne_bytes()).collect(),
        }
    }

    /// Elements read as this kind, widened to f64.
    fn decode(self, bytes: &[u8]) -> Vec<f64> {
        match self {
            Kind::F64 => bytes
                .chunks_exact(8)
                .map(|b| f64::from_ne_bytes(b.try_into().unwrap()))
                .collect(),
            Kind::I32 => bytes
                .chunks_exact(4)
                .map(|b| i32::from_ne_bytes(b.try_into().unwrap()) as f64)
                .collect(),
        }
    }

    /// The other type a converted read asks for, and the written value as it then reads.
    fn converted(self) -> (Dtype, fn(f64) -> f64) {
        match self {
            Kind::F64 => (Dtype::Float32, |v| v as f32 as f64),
            Kind::I32 => (Dtype::Float64, |v| v),
        }
    }
}

/// One compressed dataset to write.
#[derive(Clone, Debug)]
struct Setup {
    kind: Kind,
    subfiles: bool,
    /// `H5TILE_COMPRESS_*`.
    codec: u32,
    shuffle: bool,
    shape: [u64; 2],
    /// Where the tiles' rows and columns start (the first is 0).
    row_cuts: Vec<u64>,
    col_cuts: Vec<u64>,
}

impl Setup {
    fn tiles(&self) -> Vec<Tile> {
        let spans = |cuts: &[u64], n: u64| -> Vec<(u64, u64)> {
            let mut ends = cuts[1..].to_vec();
            ends.push(n);
            cuts.iter().zip(ends).map(|(&a, b)| (a, b - a)).collect()
        };
        let mut out = Vec::new();
        for (r, h) in spans(&self.row_cuts, self.shape[0]) {
            for (c, w) in spans(&self.col_cuts, self.shape[1]) {
                out.push(Tile::new(vec![r, c], vec![h, w]));
            }
        }
        out
    }

    fn expected(&self, want: &Tile) -> Vec<f64> {
        elements(want)
            .map(|(i, j)| self.kind.value(i * self.shape[1] + j))
            .collect()
    }
}

/// Distinct sorted cut points in `1..n`, with 0 first: `parts` parts at most.
fn cuts(n: u64, parts: usize) -> impl Strategy<Value = Vec<u64>> {
    prop::collection::btree_set(1..n.max(2), 0..parts).prop_map(move |inner| {
        let mut v = vec![0];
        v.extend(inner.into_iter().filter(|&c| c < n));
        v
    })
}

fn setup() -> impl Strategy<Value = Setup> {
    // Mostly small arrays (one chunk a tile); a quarter of them some MiB, in row slabs of
    // several 1 MiB chunks, the last of each short.
    let shape = prop_oneof![
        3 => (1u64..=40, 1u64..=30).prop_map(|(r, c)| [r, c]),
        1 => (150u64..=400, 600u64..=1000).prop_map(|(r, c)| [r, c]),
    ];
    (
        prop::sample::select(vec![Kind::F64, Kind::I32]),
        any::<bool>(),
        prop::sample::select(vec![
            H5TILE_COMPRESS_ZSTD,
            H5TILE_COMPRESS_LZ4,
            H5TILE_COMPRESS_DEFLATE,
        ]),
        any::<bool>(),
        shape,
    )
        .prop_flat_map(|(kind, subfiles, codec, shuffle, shape)| {
            let col_parts = if shape[0] > 100 { 1 } else { 2 };
            (cuts(shape[0], 3), cuts(shape[1], col_parts)).prop_map(move |(row_cuts, col_cuts)| {
                Setup {
                    kind,
                    subfiles,
                    codec,
                    shuffle,
                    shape,
                    row_cuts,
                    col_cuts,
                }
            })
        })
}

/// The elements of `want` (row-major), as (row, column).
fn elements(want: &Tile) -> impl Iterator<Item = (u64, u64)> + '_ {
    let (r, c) = (want.offset[0], want.offset[1]);
    (0..want.shape[0]).flat_map(move |i| (0..want.shape[1]).map(move |j| (r + i, c + j)))
}

/// Writes `s` as `/g` of `master` through the C ABI (this process alone).
fn write(s: &Setup, master: &Path) -> Result<(), Error> {
    let tiles = s.tiles();
    let data: Vec<Vec<u8>> = tiles
        .iter()
        .map(|t| s.kind.bytes(s.expected(t).into_iter()))
        .collect();
    let offsets: Vec<u64> = tiles.iter().flat_map(|t| t.offset.clone()).collect();
    let shapes: Vec<u64> = tiles.iter().flat_map(|t| t.shape.clone()).collect();
    let bufs: Vec<*const c_void> = data.iter().map(|d| d.as_ptr().cast()).collect();
    let opts = h5tile_write_options {
        size: std::mem::size_of::<h5tile_write_options>(),
        layout: match s.subfiles {
            true => H5TILE_LAYOUT_SUBFILES,
            false => H5TILE_LAYOUT_VDS,
        },
        // Durability is not what is tested here.
        flags: H5TILE_NO_SYNC | if s.shuffle { H5TILE_SHUFFLE } else { 0 },
        gds: H5TILE_GDS_FROM_ENVIRONMENT,
        ranks_per_file: 0,
        compression: s.codec,
        compression_level: 0,
        staging_bytes: 0,
    };
    let path = CString::new(master.to_str().unwrap()).unwrap();
    let dataset = CString::new("/g").unwrap();
    let dtype = match s.kind {
        Kind::F64 => H5TILE_FLOAT64,
        Kind::I32 => H5TILE_INT32,
    };
    let status = unsafe {
        h5tile_write_tiles(
            mpi::ffi::RSMPI_COMM_NULL,
            path.as_ptr(),
            dataset.as_ptr(),
            dtype,
            2,
            s.shape.as_ptr(),
            tiles.len(),
            offsets.as_ptr(),
            shapes.as_ptr(),
            bufs.as_ptr(),
            &opts,
        )
    };
    if status == H5TILE_OK {
        return Ok(());
    }
    let message = unsafe { CStr::from_ptr(h5tile_last_error()) };
    Err(Error::new(status, message.to_string_lossy().into_owned()))
}

// ---------------------------------------------------------------------------------------------
// Where the written tiles' chunks are.

/// One stored chunk of a tile: h5tile's number for it (row-major over the chunk grid, as its
/// messages name chunks), where HDF5 put it, and the tile's bytes it holds.
#[derive(Clone, Debug)]
struct StoredChunk {
    index: u64,
    addr: u64,
    size: u64,
    bytes: std::ops::Range<u64>,
}

#[derive(Clone, Debug)]
struct StoredTile {
    region: Tile,
    path: PathBuf,
    chunks: Vec<StoredChunk>,
}

/// The tiles of `/g` in `master` (their files, and the chunks HDF5's index lists), and the
/// checksum block size.
fn stored(master: &Path, elem: usize) -> (Vec<StoredTile>, u64) {
    let info = h5tile::internals::tool::describe(master, Some("/g")).unwrap();
    let vds = info[0].virtual_info.clone().expect("a virtual dataset");
    let block = vds
        .checksums
        .expect("compressed tiles are checksummed")
        .block();
    let tiles = vds
        .tiles
        .iter()
        .map(|t| {
            let region = t.region.clone().unwrap();
            let chunks = chunks_of(&t.path, &t.dataset, &region.shape, elem);
            let covered: u64 = chunks.iter().map(|c| c.bytes.end - c.bytes.start).sum();
            assert_eq!(covered, region.volume() as u64 * elem as u64, "{t:?}");
            StoredTile {
                region,
                path: t.path.clone(),
                chunks,
            }
        })
        .collect();
    (tiles, block)
}

/// The stored chunks of `dataset` (a tile of `shape`) in `file`.
fn chunks_of(file: &Path, dataset: &str, shape: &[u64], elem: usize) -> Vec<StoredChunk> {
    use hdf5_sys::{h5d, h5p, h5s};
    let _l = hdf5::lock();
    let f = File::open_read(file).unwrap();
    let d = Dataset::open(&f, dataset).unwrap();
    let mut dims = [0u64; 2];
    let mut out = Vec::new();
    unsafe {
        let dcpl = h5d::H5Dget_create_plist(d.id());
        assert_eq!(h5p::H5Pget_chunk(dcpl, 2, dims.as_mut_ptr()), 2, "chunked");
        h5p::H5Pclose(dcpl);
        let space = h5d::H5Dget_space(d.id());
        let mut n = 0;
        assert!(h5d::H5Dget_num_chunks(d.id(), space, &mut n) >= 0);
        for i in 0..n {
            let (mut at, mut mask, mut addr, mut size) = ([0u64; 2], 0, 0, 0);
            let got = h5d::H5Dget_chunk_info(
                d.id(),
                space,
                i,
                at.as_mut_ptr(),
                &mut mask,
                &mut addr,
                &mut size,
            );
            assert!(got >= 0 && mask == 0);
            // A chunk is a run of the tile's bytes: from its first element to its last.
            let last = [
                (at[0] + dims[0]).min(shape[0]) - 1,
                (at[1] + dims[1]).min(shape[1]) - 1,
            ];
            let linear = |p: [u64; 2]| (p[0] * shape[1] + p[1]) * elem as u64;
            let grid = shape[1].div_ceil(dims[1]);
            out.push(StoredChunk {
                index: at[0] / dims[0] * grid + at[1] / dims[1],
                addr,
                size,
                bytes: linear(at)..linear(last) + elem as u64,
            });
        }
        h5s::H5Sclose(space);
    }
    drop(d);
    f.close().unwrap();
    out.sort_by_key(|c| c.index);
    out
}

// ---------------------------------------------------------------------------------------------
// The damage.

/// Bytes changed inside one stored chunk of one tile.
#[derive(Clone, Debug)]
enum ChunkDamage {
    /// These bytes XORed (each nonzero) from this fraction of the chunk on, one every
    /// `stride` bytes.
    Flip(Index, Index, f64, usize, Vec<u8>),
    /// This many bytes zeroed from this fraction of the chunk on (clipped to it).
    Zero(Index, Index, f64, u64),
}

#[derive(Clone, Debug)]
enum Damage {
    Chunks(Vec<ChunkDamage>),
    /// A tile file (of the distinct files, in tile order) cut to this fraction of its length.
    Truncate(Index, f64),
}

fn damage() -> impl Strategy<Value = Damage> {
    let chunk = prop_oneof![
        3 => (any::<Index>(), any::<Index>(), 0.0..1.0f64, 1usize..40,
              prop::collection::vec(1u8..=255, 1..4))
            .prop_map(|(t, c, at, stride, masks)| ChunkDamage::Flip(t, c, at, stride, masks)),
        1 => (any::<Index>(), any::<Index>(), 0.0..1.0f64, 1u64..200)
            .prop_map(|(t, c, at, n)| ChunkDamage::Zero(t, c, at, n)),
    ];
    prop_oneof![
        3 => prop::collection::vec(chunk, 1..3).prop_map(Damage::Chunks),
        1 => (any::<Index>(), 0.0..1.0f64).prop_map(|(f, keep)| Damage::Truncate(f, keep)),
    ]
}

/// What was damaged: (tile, chunk number) pairs, or the one file cut short.
#[derive(Debug)]
enum Damaged {
    Chunks(BTreeSet<(usize, u64)>),
    File(PathBuf),
}

fn apply(damage: &Damage, tiles: &[StoredTile]) -> Damaged {
    match damage {
        Damage::Truncate(f, keep) => {
            let mut files: Vec<&Path> = Vec::new();
            for t in tiles {
                if !files.contains(&t.path.as_path()) {
                    files.push(&t.path);
                }
            }
            let file = f.get(&files);
            let len = std::fs::metadata(file).unwrap().len();
            let cut = ((len as f64 * keep) as u64).min(len - 1);
            std::fs::OpenOptions::new()
                .write(true)
                .open(file)
                .unwrap()
                .set_len(cut)
                .unwrap();
            Damaged::File(file.to_path_buf())
        }
        Damage::Chunks(list) => {
            let mut hit = BTreeSet::new();
            for d in list {
                let (ChunkDamage::Flip(t, c, at, ..) | ChunkDamage::Zero(t, c, at, _)) = d;
                let k = t.index(tiles.len());
                let (file, chunk) = (&tiles[k].path, c.get(&tiles[k].chunks));
                let len = chunk.size as usize;
                let from = (len as f64 * at) as usize;
                match d {
                    ChunkDamage::Flip(.., stride, masks) => {
                        for (n, &m) in masks.iter().enumerate() {
                            let p = (from + n * stride) % len;
                            flip_bits(file, chunk.addr + p as u64, m);
                        }
                    }
                    ChunkDamage::Zero(.., n) => {
                        let to = (from + *n as usize).min(len);
                        let f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
                        let zeros = vec![0u8; to - from];
                        f.write_all_at(&zeros, chunk.addr + from as u64).unwrap();
                    }
                }
                hit.insert((k, chunk.index));
            }
            Damaged::Chunks(hit)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// What a read may give.

/// The chunks of `tile` a read of `want` decodes: those holding its rows of the tile, or,
/// checked, every byte of the checksum blocks (of `block` bytes) those rows touch.
fn decoded(tile: &StoredTile, want: &Tile, block: Option<u64>, elem: u64) -> BTreeSet<u64> {
    let mut out = BTreeSet::new();
    let Some(common) = want.intersection(&tile.region) else {
        return out;
    };
    let width = tile.region.shape[1];
    let len = tile.region.volume() as u64 * elem;
    for i in 0..common.shape[0] {
        let r = common.offset[0] + i - tile.region.offset[0];
        let c = common.offset[1] - tile.region.offset[1];
        let start = (r * width + c) * elem;
        let mut unit = start..start + common.shape[1] * elem;
        if let Some(b) = block {
            unit = unit.start / b * b..(unit.end.div_ceil(b) * b).min(len);
        }
        out.extend(
            tile.chunks
                .iter()
                .filter(|ch| ch.bytes.start < unit.end && unit.start < ch.bytes.end)
                .map(|ch| ch.index),
        );
    }
    out
}

/// Whether a read of `want` (checked against `block`-byte checksums, or not) may meet the
/// damage: it decodes a damaged chunk, or opens the file cut short.
fn meets(
    damaged: &Damaged,
    tiles: &[StoredTile],
    want: &Tile,
    block: Option<u64>,
    elem: u64,
) -> bool {
    tiles.iter().enumerate().any(|(k, t)| match damaged {
        Damaged::File(f) => t.path == *f && want.intersection(&t.region).is_some(),
        Damaged::Chunks(hit) => decoded(t, want, block, elem)
            .iter()
            .any(|c| hit.contains(&(k, *c))),
    })
}

/// Whether element (i, j) is in a damaged chunk (its value unchecked may be anything).
fn in_damaged_chunk(damaged: &Damaged, tiles: &[StoredTile], i: u64, j: u64, elem: u64) -> bool {
    let Damaged::Chunks(hit) = damaged else {
        return false;
    };
    let point = Tile::new(vec![i, j], vec![1, 1]);
    tiles.iter().enumerate().any(|(k, t)| {
        decoded(t, &point, None, elem)
            .iter()
            .any(|c| hit.contains(&(k, *c)))
    })
}

/// The chunk numbers a message names: "chunk N" or "chunk N to chunk M".
fn named_chunks(message: &str) -> Vec<u64> {
    let number = |s: &str| -> Option<u64> {
        s.split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
    };
    if let Some((_, rest)) = message.split_once("decoded from chunk ") {
        if let (Some(a), Some((_, b))) = (number(rest), rest.split_once(" to chunk ")) {
            if let Some(b) = number(b) {
                return (a..=b).collect();
            }
        }
    }
    message
        .match_indices("chunk ")
        .filter_map(|(at, m)| number(&message[at + m.len()..]))
        .collect()
}

/// A failed read of `want`: clean, it met the damage, and it says where: `H5TILE_ERR_CORRUPT`
/// naming a damaged tile's file, its elements and a damaged chunk of it, or for the file cut
/// short `H5TILE_ERR_MISSING_TILE` naming that file.
fn check_failure(
    what: &str,
    want: &Tile,
    e: &Error,
    damaged: &Damaged,
    tiles: &[StoredTile],
) -> Result<(), TestCaseError> {
    prop_assert!(
        e.status != H5TILE_ERR_PANIC,
        "{} {}: panic: {}",
        what,
        want,
        e.message
    );
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    match damaged {
        Damaged::File(f) => {
            prop_assert_eq!(
                e.status,
                H5TILE_ERR_MISSING_TILE,
                "{} {}: {}",
                what,
                want,
                e.message
            );
            prop_assert!(
                e.message.contains(&name(f)),
                "{}: {} does not name {:?}",
                what,
                e.message,
                f
            );
        }
        Damaged::Chunks(hit) => {
            prop_assert_eq!(
                e.status,
                H5TILE_ERR_CORRUPT,
                "{} {}: {}",
                what,
                want,
                e.message
            );
            let chunks = named_chunks(&e.message);
            let named = hit.iter().any(|&(k, c)| {
                let t = &tiles[k];
                e.message.contains(&name(&t.path))
                    && e.message.contains(&t.region.to_string())
                    && chunks.contains(&c)
            });
            prop_assert!(
                named,
                "{} {}: {} names no damaged tile and chunk of {:?}",
                what,
                want,
                e.message,
                hit
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(48))]

    /// Compressed tiles with bytes flipped or zeroed inside their stored chunks, or a tile
    /// file cut short: every read gives the written values or fails naming the damage, and
    /// succeeds whenever it decodes nothing damaged; unchecked, undamaged chunks still read
    /// exactly.
    #[test]
    fn damaged_compressed_tiles_give_the_data_or_name_the_damage(
        s in setup(),
        damage in damage(),
        corner in (0.0..1.0f64, 0.0..1.0f64),
        extent in (0.0..1.0f64, 0.0..1.0f64),
        per_batch in (1u64..=3, 1u64..=3),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let master = dir.path().join("m.h5");
        let failed = |e: Error| TestCaseError::fail(format!("{:?} {}", e.status, e.message));
        write(&s, &master).map_err(failed)?;
        let elem = s.kind.elem() as u64;
        let (tiles, block) = stored(&master, s.kind.elem());
        prop_assert_eq!(tiles.len(), s.tiles().len());
        let damaged = apply(&damage, &tiles);

        let whole = Tile::new(vec![0, 0], s.shape.to_vec());
        let at = |f: f64, n: u64| ((n as f64 * f) as u64).min(n - 1);
        let (r, c) = (at(corner.0, s.shape[0]), at(corner.1, s.shape[1]));
        let (h, w) = (1 + at(extent.0, s.shape[0] - r), 1 + at(extent.1, s.shape[1] - c));
        let part = Tile::new(vec![r, c], vec![h, w]);

        let checked = ReadOptions::default();
        let unchecked = ReadOptions { no_verify: true, ..checked };
        for want in [&whole, &part] {
            // Checked: exact, or a failure naming the damage; exact when nothing damaged is
            // decoded.
            let mut buf = vec![0u8; want.volume() as usize * elem as usize];
            let got = read_into(&master, "/g", s.kind.dtype(), want, &mut buf, checked);
            match got {
                Ok(()) => prop_assert!(s.kind.decode(&buf) == s.expected(want), "read {}", want),
                Err(e) => {
                    check_failure("read", want, &e, &damaged, &tiles)?;
                    prop_assert!(meets(&damaged, &tiles, want, Some(block), elem),
                        "read {} decodes nothing damaged, yet: {}", want, e.message);
                }
            }
            // Unchecked: the elements of undamaged chunks exact.
            buf.fill(0);
            let got = read_into(&master, "/g", s.kind.dtype(), want, &mut buf, unchecked);
            match got {
                Ok(()) => {
                    let values = s.kind.decode(&buf);
                    let written = s.expected(want);
                    for ((v, x), (i, j)) in values.iter().zip(written).zip(elements(want)) {
                        if !in_damaged_chunk(&damaged, &tiles, i, j, elem) {
                            prop_assert_eq!(v.to_bits(), x.to_bits(), "unchecked {} ({}, {})",
                                want, i, j);
                        }
                    }
                }
                Err(e) => {
                    check_failure("unchecked read", want, &e, &damaged, &tiles)?;
                    prop_assert!(meets(&damaged, &tiles, want, None, elem),
                        "unchecked read {} decodes nothing damaged, yet: {}", want, e.message);
                }
            }
        }

        // Converted: checked first, then read through HDF5's filter pipeline (h5tile's filters
        // registered in this process); unchecked, HDF5 decodes the damaged chunks itself.
        let (other, as_read) = s.kind.converted();
        for verify in [true, false] {
            let options = ReadOptions { narrowing: true, no_verify: !verify, ..checked };
            let mut out = vec![0u8; whole.volume() as usize * other.size()];
            let got = read_into(&master, "/g", other, &whole, &mut out, options);
            match got {
                Ok(()) => {
                    let got: Vec<f64> = match other {
                        Dtype::Float32 => out.chunks_exact(4)
                            .map(|b| f32::from_ne_bytes(b.try_into().unwrap()) as f64)
                            .collect(),
                        _ => out.chunks_exact(8)
                            .map(|b| f64::from_ne_bytes(b.try_into().unwrap()))
                            .collect(),
                    };
                    let written = s.expected(&whole);
                    for ((v, x), (i, j)) in got.iter().zip(written).zip(elements(&whole)) {
                        if verify || !in_damaged_chunk(&damaged, &tiles, i, j, elem) {
                            prop_assert_eq!(v.to_bits(), as_read(x).to_bits(),
                                "converted (checked: {}) ({}, {})", verify, i, j);
                        }
                    }
                }
                Err(e) if verify || matches!(damaged, Damaged::File(_)) => {
                    check_failure("converted read", &whole, &e, &damaged, &tiles)?
                }
                // HDF5's own read of a chunk that does not decode: h5tile decodes the part
                // itself to name the damaged chunk, or failing that names the tile's file
                // before HDF5's error stack.
                Err(e) if e.status == H5TILE_ERR_CORRUPT => {
                    check_failure("unchecked converted read", &whole, &e, &damaged, &tiles)?
                }
                Err(e) => {
                    let Damaged::Chunks(hit) = &damaged else { unreachable!() };
                    let names_file = hit.iter().any(|&(k, _)| {
                        let file = tiles[k].path.file_name().unwrap().to_string_lossy();
                        e.message.contains(&*file)
                    });
                    prop_assert!(e.status == H5TILE_ERR_HDF5 && names_file,
                        "unchecked converted read: {:?} {}", e.status, e.message)
                }
            }
        }

        // Batched, in row-major batches of about a third, half or all of each extent.
        let batch = [s.shape[0].div_ceil(per_batch.0), s.shape[1].div_ceil(per_batch.1)];
        // Opening reads no tile: it succeeds whatever the damage.
        let mut it = Batches::open(&Comm::solo(), &master, "/g", &batch, &checked)
            .map_err(failed)?;
        let mut buf = vec![0u8; it.max_chunk_bytes()];
        let (rows, cols) = (s.shape[0].div_ceil(batch[0]), s.shape[1].div_ceil(batch[1]));
        prop_assert_eq!(it.count() as u64, rows * cols);
        for n in 0..rows * cols {
            let (r, c) = (n / cols * batch[0], n % cols * batch[1]);
            let want = Tile::new(vec![r, c],
                vec![batch[0].min(s.shape[0] - r), batch[1].min(s.shape[1] - c)]);
            let bytes = want.volume() as usize * elem as usize;
            match it.next(&mut buf) {
                Ok(Some(t)) => {
                    prop_assert_eq!(&t, &want);
                    prop_assert!(s.kind.decode(&buf[..bytes]) == s.expected(&want),
                        "batch {}", want);
                }
                Ok(None) => prop_assert!(false, "batch {} of {} missing", n, rows * cols),
                Err(e) => {
                    check_failure("batch", &want, &e, &damaged, &tiles)?;
                    prop_assert!(meets(&damaged, &tiles, &want, Some(block), elem),
                        "batch {} decodes nothing damaged, yet: {}", want, e.message);
                }
            }
        }
        prop_assert!(matches!(it.next(&mut buf), Ok(None)));
    }
}

/// The oracle's own footing: an undamaged compressed dataset reads back whole, its tiles are
/// chunked as the properties assume (several chunks for a tile of some MiB), and a flipped
/// byte in every chunk of one tile is caught.
#[test]
fn an_undamaged_compressed_dataset_reads_back_and_one_damaged_tile_is_caught() {
    let s = Setup {
        kind: Kind::F64,
        subfiles: false,
        codec: H5TILE_COMPRESS_ZSTD,
        shuffle: true,
        shape: [300, 1000],
        row_cuts: vec![0, 200],
        col_cuts: vec![0],
    };
    let dir = tempfile::tempdir().unwrap();
    let master = dir.path().join("m.h5");
    write(&s, &master).unwrap();
    let (tiles, block) = stored(&master, 8);
    assert_eq!(tiles.len(), 2);
    // 200 rows of 8000 bytes: chunks of 131 rows (1 MiB), two.
    assert_eq!(tiles[0].chunks.len(), 2, "{:?}", tiles[0].chunks);
    // Every read here: float64, with the default options (checksums checked).
    let read = |tile: &Tile, buf: &mut [u8]| {
        read_into(
            &master,
            "/g",
            Dtype::Float64,
            tile,
            buf,
            ReadOptions::default(),
        )
    };
    let whole = Tile::new(vec![0, 0], s.shape.to_vec());
    let mut buf = vec![0u8; 300 * 1000 * 8];
    read(&whole, &mut buf).unwrap();
    assert!(Kind::F64.decode(&buf) == s.expected(&whole));
    for c in &tiles[0].chunks {
        flip_bits(&tiles[0].path, c.addr + c.size / 2, 0x10);
    }
    let damaged = Damaged::Chunks([(0, 0), (0, 1)].into_iter().collect());
    let e = read(&whole, &mut buf).unwrap_err();
    check_failure("read", &whole, &e, &damaged, &tiles).unwrap();
    assert!(meets(&damaged, &tiles, &whole, Some(block), 8));
    // The other tile still reads.
    let second = Tile::new(vec![200, 0], vec![100, 1000]);
    assert!(!meets(&damaged, &tiles, &second, Some(block), 8));
    let mut part = vec![0u8; 100 * 1000 * 8];
    read(&second, &mut part).unwrap();
    assert!(Kind::F64.decode(&part) == s.expected(&second));
}
