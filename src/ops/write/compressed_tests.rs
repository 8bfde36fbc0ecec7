//! Compressed tiles, written in every layout that compresses and read back.

use super::*;
use crate::ops::read::ReadOptions;
use crate::platform::codecs::{Filter, Pipeline};
use crate::platform::device::host_bytes;
use crate::platform::hdf5::{Dataset, File};
use crate::testkit::{read_f64, read_into, write_tiles};

const GLOBAL: [u64; 2] = [1000, 700];

/// Element (i, j): smooth enough to compress, every value telling where it came from.
fn value(i: u64, j: u64) -> f64 {
    (i * 1000 + j) as f64 * 0.25
}

/// Two tiles of row slabs (600 and 400 rows: several chunks, the last of each short).
fn write_slabs(path: &Path, options: WriteOptions) -> Result<()> {
    let slabs = [(0u64, 600u64), (600, 400)];
    let data: Vec<Vec<f64>> = slabs
        .iter()
        .map(|&(r, h)| (0..h * 700).map(|k| value(r + k / 700, k % 700)).collect())
        .collect();
    let tiles = slabs
        .iter()
        .zip(&data)
        .map(|(&(r, h), d)| LocalTile {
            tile: Tile::new(vec![r, 0], vec![h, 700]),
            buf: host_bytes(d),
        })
        .collect();
    write_tiles(path, "/v", Dtype::Float64, &GLOBAL, tiles, options)
}

fn expected(want: &Tile) -> Vec<f64> {
    let w = want.shape[1];
    (0..want.volume() as u64)
        .map(|k| value(want.offset[0] + k / w, want.offset[1] + k % w))
        .collect()
}

fn every_compression() -> Vec<Compression> {
    let mut all = Vec::new();
    for codec in [Codec::Zstd, Codec::Lz4, Codec::Deflate] {
        for shuffle in [false, true] {
            all.push(Compression::new(codec, 0, shuffle).unwrap());
        }
    }
    all
}

/// The filters of every tile dataset in the tile folder of `path`.
fn tile_filters(path: &Path) -> Vec<Vec<Filter>> {
    let mut out = Vec::new();
    for file in crate::testkit::tile_files(path) {
        let f = File::open_read(&file).unwrap();
        for name in f.dataset_paths().unwrap() {
            let d = Dataset::open(&f, &name).unwrap();
            out.push(d.create_plist().unwrap().filters().unwrap());
        }
    }
    out
}

#[test]
fn compressed_tiles_round_trip_in_the_layouts_that_compress() {
    let d = tempfile::tempdir().unwrap();
    let raw_bytes = GLOBAL[0] * GLOBAL[1] * 8;
    for layout in [Layout::Vds, Layout::Subfiles] {
        for c in every_compression() {
            let path = d
                .path()
                .join(format!("{layout:?}-{}.h5", c.to_string().replace(' ', "_")));
            let options = WriteOptions {
                layout,
                compression: Some(c),
                ..WriteOptions::default()
            };
            write_slabs(&path, options).unwrap();
            let all = Tile::new(vec![0, 0], GLOBAL.to_vec());
            assert!(
                read_f64(&path, "/v", &all).unwrap() == expected(&all),
                "{layout:?} {c}"
            );
            for want in [
                Tile::new(vec![590, 13], vec![20, 600]),
                Tile::new(vec![999, 699], vec![1, 1]),
                Tile::new(vec![0, 0], vec![1, 700]),
            ] {
                assert_eq!(
                    read_f64(&path, "/v", &want).unwrap(),
                    expected(&want),
                    "{c} {want}"
                );
            }
            // Another element type: HDF5 converts what the filters give it.
            let want = Tile::new(vec![100, 100], vec![3, 4]);
            let mut f32s = vec![0f32; 12];
            let narrowing = ReadOptions {
                narrowing: true,
                ..ReadOptions::default()
            };
            read_into(&path, "/v", Dtype::Float32, &want, &mut f32s, narrowing).unwrap();
            let as_f32: Vec<f32> = expected(&want).iter().map(|&v| v as f32).collect();
            assert_eq!(f32s, as_f32);
            let pipeline = c.pipeline(8);
            let filters = tile_filters(&path);
            assert_eq!(filters.len(), 2);
            for f in &filters {
                assert_eq!(Pipeline::from_filters(f), Some(pipeline), "{layout:?} {c}");
                assert_eq!(f, &pipeline.filters());
            }
            let stored: u64 = crate::testkit::tile_files(&path)
                .iter()
                .map(|f| std::fs::metadata(f).unwrap().len())
                .sum();
            assert!(
                stored < raw_bytes * 3 / 4,
                "{layout:?} {c}: {stored} of {raw_bytes} bytes"
            );
        }
    }
}

#[test]
fn the_single_file_layout_refuses_compression_naming_the_layouts_that_compress() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("single.h5");
    let options = WriteOptions {
        layout: Layout::Single,
        compression: Some(Compression::new(Codec::Zstd, 0, false).unwrap()),
        ..WriteOptions::default()
    };
    let e = write_slabs(&path, options).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT);
    for name in [
        "H5TILE_LAYOUT_SINGLE",
        "H5TILE_LAYOUT_VDS",
        "H5TILE_LAYOUT_SUBFILES",
    ] {
        assert!(e.message.contains(name), "{}", e.message);
    }
    assert!(!path.exists());
}
