//! Compressed tiles, written in every layout that compresses and read back.

use super::*;
use crate::ops::read::ReadOptions;
use crate::platform::codecs::{Filter, Pipeline};
use crate::platform::device::host_bytes;
use crate::platform::hdf5::{Dataset, File};
use crate::testkit::{flip_bits, read_f64, read_into, tile_files, write_tiles};

const GLOBAL: [u64; 2] = [1000, 700];

/// Element (i, j): smooth enough to compress, every value telling where it came from.
fn value(i: u64, j: u64) -> f64 {
    (i * 1000 + j) as f64 * 0.25
}

/// Two tiles of row slabs (600 and 400 rows: several chunks, the last of each short).
/// `codec` at its default level after the byte shuffle.
fn shuffled(codec: Codec) -> Compression {
    Compression::new(codec, 0, true).unwrap()
}

/// `write_slabs` into `dir`, in `layout`, compressed as `compression` says: the file (named
/// by both).
fn write_compressed_slabs(dir: &Path, layout: Layout, compression: Compression) -> PathBuf {
    let name = compression.to_string().replace(' ', "_");
    let path = dir.join(format!("{layout:?}-{name}.h5"));
    let options = WriteOptions {
        layout,
        compression: Some(compression),
        ..WriteOptions::default()
    };
    write_slabs(&path, options).unwrap();
    path
}

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
    for file in tile_files(path) {
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
            let path = write_compressed_slabs(d.path(), layout, c);
            let all = Tile::new(vec![0, 0], GLOBAL.to_vec());
            assert!(
                read_f64(&path, "/v", &all).unwrap() == expected(&all),
                "{layout:?} {c}"
            );
            for want in [
                Tile::new(vec![590, 13], vec![20, 600]),
                Tile::new(vec![999, 699], vec![1, 1]),
                Tile::new(vec![0, 0], vec![1, 700]),
                // Whole rows from within the tiles: chunks decoded into the caller's buffer,
                // those at the box's edges through a copy.
                Tile::new(vec![150, 0], vec![700, 700]),
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
            let stored: u64 = tile_files(&path)
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

/// (file, dataset, address, size) of the first chunk of each tile dataset in the tile folder.
fn first_chunks(path: &Path) -> Vec<(std::path::PathBuf, String, u64, u64)> {
    let mut out = Vec::new();
    for file in tile_files(path) {
        let f = File::open_read(&file).unwrap();
        for name in f.dataset_paths().unwrap() {
            let d = Dataset::open(&f, &name).unwrap();
            let c = d.stored_chunk(&[0, 0]).unwrap().unwrap();
            out.push((file.clone(), name, c.addr, c.size));
        }
    }
    out
}

#[test]
fn a_changed_byte_in_a_compressed_chunk_is_corrupt_naming_the_file_the_tile_and_the_chunk() {
    let d = tempfile::tempdir().unwrap();
    for layout in [Layout::Vds, Layout::Subfiles] {
        for c in every_compression() {
            let path = write_compressed_slabs(d.path(), layout, c);
            // The second tile's first chunk (rows 600 to 786) changes.
            let (file, _, addr, size) = first_chunks(&path).pop().unwrap();
            flip_bits(&file, addr + size / 2, 0x10);
            let name = file.file_name().unwrap().to_string_lossy().to_string();
            for want in [
                Tile::new(vec![0, 0], GLOBAL.to_vec()),
                Tile::new(vec![650, 10], vec![2, 3]),
            ] {
                let e = read_f64(&path, "/v", &want).unwrap_err();
                assert_eq!(
                    e.status, H5TILE_ERR_CORRUPT,
                    "{layout:?} {c}: {}",
                    e.message
                );
                for part in [name.as_str(), "[600:1000, 0:700]", "chunk"] {
                    assert!(e.message.contains(part), "{layout:?} {c}: {}", e.message);
                }
                // Converted by HDF5: the blocks are checked all the same.
                let mut f32s = vec![0f32; want.volume() as usize];
                let narrowing = ReadOptions {
                    narrowing: true,
                    ..ReadOptions::default()
                };
                let e = read_into(&path, "/v", Dtype::Float32, &want, &mut f32s, narrowing)
                    .unwrap_err();
                assert_eq!(
                    e.status, H5TILE_ERR_CORRUPT,
                    "{layout:?} {c}: {}",
                    e.message
                );
            }
            // What the read does not touch is not checked: the first tile reads.
            let first = Tile::new(vec![0, 0], vec![600, 700]);
            assert!(read_f64(&path, "/v", &first).unwrap() == expected(&first));
            // Unchecked, a codec that detects damage still fails; none panics.
            let unchecked = ReadOptions {
                no_verify: true,
                ..ReadOptions::default()
            };
            let want = Tile::new(vec![600, 0], vec![10, 700]);
            let mut out = vec![0f64; want.volume() as usize];
            let got = read_into(&path, "/v", Dtype::Float64, &want, &mut out, unchecked);
            if c.codec == Codec::Zstd {
                let e = got.unwrap_err();
                assert_eq!(e.status, H5TILE_ERR_CORRUPT, "{}", e.message);
                assert!(e.message.contains("cannot be decoded"), "{}", e.message);
            }
        }
    }
}

/// A zstd chunk whose frame checksum (its last 4 bytes) changed decodes to the right bytes, so
/// its blocks' checksums pass; but HDF5 and h5py refuse the chunk. Every read is then
/// `H5TILE_ERR_CORRUPT` naming the chunk: one h5tile decodes finds the stored chunk changed,
/// one HDF5 decodes (converted) too, not HDF5's failure; and `h5tile check` reports it.
#[test]
fn a_changed_zstd_frame_checksum_is_corrupt_where_hdf5_would_decode_the_chunk() {
    use crate::ops::describe::describe;
    use crate::ops::verify::{checksum_jobs, verify_tiles};
    let d = tempfile::tempdir().unwrap();
    let path = write_compressed_slabs(
        d.path(),
        Layout::Vds,
        Compression::new(Codec::Zstd, 0, false).unwrap(),
    );
    let (file, _, addr, size) = first_chunks(&path).pop().unwrap();
    flip_bits(&file, addr + size - 1, 0x10);
    let want = Tile::new(vec![600, 0], vec![10, 700]);
    let e = read_f64(&path, "/v", &want).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_CORRUPT, "{}", e.message);
    let stored = format!("chunk 0 (the tile's bytes 0..{}): its {size} bytes stored at byte {addr} do not match their checksum", 187 * 700 * 8);
    assert!(e.message.contains(&stored), "{}", e.message);
    let mut f32s = vec![0f32; want.volume() as usize];
    let narrowing = ReadOptions {
        narrowing: true,
        ..ReadOptions::default()
    };
    let e = read_into(&path, "/v", Dtype::Float32, &want, &mut f32s, narrowing).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_CORRUPT, "{}", e.message);
    assert!(e.message.contains(&stored), "{}", e.message);
    let infos = describe(&path, None).unwrap();
    let all: Vec<_> = infos.iter().collect();
    let jobs = checksum_jobs(&all, |_, _| false);
    let found = verify_tiles(&all, &jobs, 2, &|_| {});
    assert!(found[0].is_empty(), "{:?}", found[0]);
    assert_eq!(found[1].len(), 1, "{:?}", found[1]);
    assert!(found[1][0].to_string().contains(&stored), "{}", found[1][0]);
}

/// A master from before the stored chunks' checksums (here: those attributes removed) reads
/// as before, checking the decoded blocks: its bytes come back, a changed chunk is
/// `H5TILE_ERR_CORRUPT` naming the bytes and the chunk, and a changed zstd frame checksum,
/// which decodes to the right bytes, still reads where h5tile decodes it.
#[test]
fn compressed_tiles_without_chunk_checksums_read_checking_their_blocks() {
    let d = tempfile::tempdir().unwrap();
    for layout in [Layout::Vds, Layout::Subfiles] {
        for c in [shuffled(Codec::Zstd), shuffled(Codec::Lz4)] {
            let path = write_compressed_slabs(d.path(), layout, c);
            crate::testkit::forget_chunk_checksums(&path, "/v");
            let all = Tile::new(vec![0, 0], GLOBAL.to_vec());
            assert!(
                read_f64(&path, "/v", &all).unwrap() == expected(&all),
                "{layout:?} {c}"
            );
            let (file, _, addr, size) = first_chunks(&path).pop().unwrap();
            let at = match c.codec {
                // The frame checksum: the blocks' checksums pass.
                Codec::Zstd => addr + size - 1,
                _ => addr + size / 2,
            };
            flip_bits(&file, at, 0x10);
            let want = Tile::new(vec![650, 10], vec![2, 3]);
            let got = read_f64(&path, "/v", &want);
            match c.codec {
                Codec::Zstd => assert!(got.unwrap() == expected(&want), "{layout:?}"),
                _ => {
                    let e = got.unwrap_err();
                    assert_eq!(e.status, H5TILE_ERR_CORRUPT, "{layout:?}: {}", e.message);
                    // Decoded to other bytes, or not decodable at all.
                    let m = &e.message;
                    let blocks =
                        m.contains("(decoded from chunk 0 ") && m.contains("do not match their");
                    assert!(
                        blocks
                            || m.contains(
                                "chunk 0 (the tile's bytes 0..1047200): cannot be decoded"
                            ),
                        "{layout:?}: {m}"
                    );
                    assert!(!m.contains("stored at byte"), "{layout:?}: {m}");
                }
            }
        }
    }
}

/// `h5tile check`'s checksum pass decodes compressed tiles and finds a changed chunk.
#[test]
fn verifying_checksums_decodes_compressed_tiles() {
    use crate::ops::describe::describe;
    use crate::ops::verify::Depth;
    use crate::ops::verify::{checksum_jobs, verify_tiles};
    use crate::tool::listing::check_sources;
    let d = tempfile::tempdir().unwrap();
    for layout in [Layout::Vds, Layout::Subfiles] {
        let path = write_compressed_slabs(d.path(), layout, shuffled(Codec::Lz4));
        let problems = || {
            let infos = describe(&path, None).unwrap();
            let all: Vec<_> = infos.iter().collect();
            assert!(check_sources(&infos[0], Depth::Hdf5).is_empty());
            let jobs = checksum_jobs(&all, |_, _| false);
            assert_eq!(jobs.len(), 2, "{layout:?}: both tiles are checked");
            verify_tiles(&all, &jobs, 2, &|_| {})
        };
        assert!(problems().iter().all(Vec::is_empty), "{layout:?}");
        let (file, _, addr, size) = first_chunks(&path).pop().unwrap();
        flip_bits(&file, addr + size / 3, 0x10);
        let found = problems();
        assert!(found[0].is_empty(), "{layout:?}: {:?}", found[0]);
        assert_eq!(found[1].len(), 1, "{layout:?}");
        let p = found[1][0].to_string();
        // The stored chunk, checked before it is decoded.
        let stored = format!("chunk 0 (the tile's bytes 0..1047200): its {size} bytes stored");
        assert!(
            p.contains(&stored) && p.contains("do not match their checksum"),
            "{p}"
        );
    }
}

/// An open batched read goes on reading the compressed version it opened after a rewrite
/// removed its tile files.
#[test]
fn an_open_iterator_reads_the_compressed_version_it_opened_after_a_rewrite() {
    use crate::ops::batches::Batches;
    use crate::platform::comm::Comm;
    let d = tempfile::tempdir().unwrap();
    for layout in [Layout::Vds, Layout::Subfiles] {
        let path = write_compressed_slabs(d.path(), layout, shuffled(Codec::Zstd));
        let chunk = [250u64, 700];
        let mut it =
            Batches::open(&Comm::solo(), &path, "/v", &chunk, &ReadOptions::default()).unwrap();
        let mut buf = vec![0u8; 250 * 700 * 8];
        assert!(it.next(&mut buf).unwrap().is_some());
        let old = tile_files(&path);
        let uncompressed = WriteOptions {
            layout,
            ..WriteOptions::default()
        };
        let one = [7.0f64];
        let tile = LocalTile {
            tile: Tile::new(vec![0, 0], vec![1, 1]),
            buf: host_bytes(&one),
        };
        write_tiles(
            &path,
            "/v",
            Dtype::Float64,
            &[1, 1],
            vec![tile],
            uncompressed,
        )
        .unwrap();
        assert!(
            old.iter().all(|p| !p.exists()),
            "{layout:?}: old tiles removed"
        );
        let mut rows = 250;
        while let Some(got) = it.next(&mut buf).unwrap() {
            let values: Vec<f64> = buf[..got.volume() as usize * 8]
                .chunks_exact(8)
                .map(|b| f64::from_ne_bytes(b.try_into().unwrap()))
                .collect();
            assert!(values == expected(&got), "{layout:?} {got}");
            rows += got.shape[0];
        }
        assert_eq!(rows, 1000, "{layout:?}");
    }
}
