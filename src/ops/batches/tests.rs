//! Batched reads: chunks in order, buffers held, versions, checksums shared between chunks.

use super::*;
use crate::geometry::chunk_grid::ChunkGrid;
use crate::platform::device::{host_bytes, with_io_threads};
use std::ops::Range;

use crate::ops::write::WriteOptions;
use crate::testkit::{tile_files, write_whole};

/// A 3-D int32 dataset of `shape` whose element at (i, j, k) is `1000 i + 10 j + k`,
/// written as one tile.
fn write_cube(path: &Path, shape: [u64; 3]) {
    let n = shape.iter().product::<u64>() as usize;
    let data: Vec<i32> = (0..n)
        .map(|l| {
            let (i, j, k) = (
                l as u64 / (shape[1] * shape[2]),
                l as u64 / shape[2] % shape[1],
                l as u64 % shape[2],
            );
            (1000 * i + 10 * j + k) as i32
        })
        .collect();
    let (buf, options) = (host_bytes(&data), WriteOptions::default());
    write_whole(path, "/cube", Dtype::Int32, &shape, buf, options).unwrap();
}

/// A new folder holding the cube of `shape` (`write_cube`) as `cube.h5`, and its path; the
/// folder goes when the `TempDir` is dropped.
fn cube_file(shape: [u64; 3]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cube.h5");
    write_cube(&path, shape);
    (dir, path)
}

/// The batches of "/cube" in `path`, in chunks of `chunk`, read with `options`.
fn cube_batches(path: &Path, chunk: &[u64], options: ReadOptions) -> Result<Batches> {
    Batches::open(&Comm::solo(), path, "/cube", chunk, &options)
}

fn as_i32(bytes: &[u8]) -> Vec<i32> {
    bytes
        .chunks_exact(4)
        .map(|b| i32::from_ne_bytes(b.try_into().unwrap()))
        .collect()
}

#[test]
fn every_chunk_arrives_in_order_with_its_values() {
    let (_dir, path) = cube_file([3, 5, 4]);
    let mut it = cube_batches(&path, &[2, 2, 3], ReadOptions::default()).unwrap();
    assert_eq!(
        (it.dtype(), it.count(), it.max_chunk_bytes()),
        (Dtype::Int32, 12, 2 * 2 * 3 * 4)
    );
    let mut buf = vec![0u8; it.max_chunk_bytes()];
    let mut seen = Vec::new();
    while let Some(tile) = it.next(&mut buf).unwrap() {
        let values = as_i32(&buf[..tile.volume() as usize * 4]);
        let mut l = 0;
        for i in 0..tile.shape[0] {
            for j in 0..tile.shape[1] {
                for k in 0..tile.shape[2] {
                    let (gi, gj, gk) = (tile.offset[0] + i, tile.offset[1] + j, tile.offset[2] + k);
                    assert_eq!(values[l], (1000 * gi + 10 * gj + gk) as i32, "{tile}");
                    l += 1;
                }
            }
        }
        seen.push(tile);
    }
    let grid = ChunkGrid::new(&[3, 5, 4], &[2, 2, 3]).unwrap();
    assert_eq!(seen, (0..12).map(|i| grid.chunk(i)).collect::<Vec<_>>());
    assert_eq!(it.next(&mut buf).unwrap(), None, "done stays done");
}

/// `next` reads the first chunk straight into the caller's buffer and, where the rank has a
/// core to spare, holds one buffer of its own from then on (none for a single chunk);
/// `next_view` holds two; mixed, still two. Without a core to spare nothing is read ahead:
/// `next` holds none, `next_view` one. The memory an iterator holds is the chunks it reads
/// ahead and lends.
#[test]
fn an_iterator_holds_one_buffer_for_next_two_for_views_none_for_one_chunk() {
    let (_dir, path) = cube_file([6, 5, 4]);
    let count = |threads: usize, chunk: &[u64], view: &dyn Fn(usize) -> bool| {
        with_io_threads(threads, || {
            let mut it = cube_batches(&path, chunk, ReadOptions::default()).unwrap();
            // On a 16-byte boundary, as `malloc` gives.
            let mut words = vec![0u64; it.max_chunk_bytes().div_ceil(8) + 1];
            let bytes = crate::platform::device::bytes_mut(&mut words);
            let at = (0..16)
                .step_by(8)
                .find(|&k| (bytes[k..].as_ptr() as usize).is_multiple_of(16));
            let buf = &mut bytes[at.unwrap()..];
            for k in 0.. {
                let got = match view(k) {
                    true => it.next_view().unwrap().map(|(t, b)| (t, as_i32(b))),
                    false => it
                        .next(buf)
                        .unwrap()
                        .map(|t| (t.clone(), as_i32(&buf[..t.volume() as usize * 4]))),
                };
                let Some((tile, values)) = got else { break };
                let expected: Vec<i32> = (0..tile.volume())
                    .map(|l| {
                        let (h, w) = (tile.shape[1] as u128, tile.shape[2] as u128);
                        let (i, j, k) = (l / (h * w), l / w % h, l % w);
                        let g = |a: usize, x: u128| tile.offset[a] as u128 + x;
                        (1000 * g(0, i) + 10 * g(1, j) + g(2, k)) as i32
                    })
                    .collect();
                assert_eq!(values, expected, "{tile}");
            }
            it.made
        })
    };
    for (threads, next, views, mixed) in [(2, 1, 2, 2), (1, 0, 1, 1)] {
        let spare = format!("{threads} I/O threads");
        assert_eq!(
            count(threads, &[6, 5, 4], &|_| false),
            0,
            "one chunk, {spare}"
        );
        assert_eq!(count(threads, &[1, 5, 4], &|_| false), next, "{spare}");
        assert_eq!(count(threads, &[1, 5, 4], &|_| true), views, "{spare}");
        assert_eq!(
            count(threads, &[1, 2, 3], &|k| k % 3 == 1),
            mixed,
            "{spare}"
        );
        assert_eq!(count(threads, &[6, 5, 4], &|_| true), 1, "{spare}");
    }
    // A buffer off a 16-byte boundary is filled by copying from the iterator's own.
    let mut it = cube_batches(&path, &[6, 5, 4], ReadOptions::default()).unwrap();
    let mut words = vec![0u64; 6 * 5 * 4 / 2 + 2];
    let bytes = crate::platform::device::bytes_mut(&mut words);
    let at = (0..16)
        .find(|&k| bytes[k..].as_ptr() as usize % 16 == 8)
        .unwrap();
    let tile = it.next(&mut bytes[at..at + 480]).unwrap().unwrap();
    assert_eq!(tile, Tile::new(vec![0, 0, 0], vec![6, 5, 4]));
    assert_eq!(as_i32(&bytes[at..at + 12]), vec![0, 1, 2]);
    assert_eq!(as_i32(&bytes[at + 476..at + 480]), vec![5043]);
    assert_eq!(it.made, 1);
}

#[test]
fn views_deliver_the_same_chunks_as_copies_also_mixed_with_them() {
    let (_dir, path) = cube_file([3, 5, 4]);
    let open = || cube_batches(&path, &[2, 2, 3], ReadOptions::default()).unwrap();
    let mut copies = open();
    let mut buf = vec![0u8; copies.max_chunk_bytes()];
    let mut expected = Vec::new();
    while let Some(tile) = copies.next(&mut buf).unwrap() {
        expected.push((tile.clone(), as_i32(&buf[..tile.volume() as usize * 4])));
    }
    for mixed in [false, true] {
        let mut it = open();
        let mut got = Vec::new();
        for k in 0.. {
            let chunk = if mixed && k % 3 == 2 {
                it.next(&mut buf)
                    .unwrap()
                    .map(|t| (t.clone(), as_i32(&buf[..t.volume() as usize * 4])))
            } else {
                it.next_view().unwrap().map(|(t, b)| (t, as_i32(b)))
            };
            match chunk {
                Some(c) => got.push(c),
                None => break,
            }
        }
        assert_eq!(got, expected, "mixed: {mixed}");
        assert!(it.next_view().unwrap().is_none(), "done stays done");
    }
}

#[test]
fn a_buffer_too_small_fails_and_does_not_advance() {
    let (_dir, path) = cube_file([2, 2, 2]);
    let mut it = cube_batches(&path, &[1, 2, 2], ReadOptions::default()).unwrap();
    let mut small = vec![0u8; 15];
    let e = it.next(&mut small).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT);
    assert!(e.message.contains("15 bytes"), "{}", e.message);
    let mut buf = vec![0u8; 16];
    assert_eq!(it.next(&mut buf).unwrap().unwrap().offset, vec![0, 0, 0]);
    assert_eq!(as_i32(&buf), vec![0, 1, 10, 11]);
}

#[test]
fn elements_are_converted_to_the_requested_type() {
    let (_dir, path) = cube_file([1, 2, 3]);
    let mut it = cube_batches(
        &path,
        &[1, 2, 3],
        ReadOptions {
            dtype: Some(Dtype::Float64),
            ..Default::default()
        },
    )
    .unwrap();
    let mut buf = vec![0u8; 48];
    it.next(&mut buf).unwrap().unwrap();
    let got: Vec<f64> = buf
        .chunks_exact(8)
        .map(|b| f64::from_ne_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(got, vec![0.0, 1.0, 2.0, 10.0, 11.0, 12.0]);
    let e = cube_batches(
        &path,
        &[1, 1, 1],
        ReadOptions {
            dtype: Some(Dtype::Complex64),
            ..Default::default()
        },
    )
    .err()
    .unwrap();
    assert_eq!(e.status, H5TILE_ERR_DTYPE);
}

#[test]
fn an_open_iterator_reads_the_version_it_opened_after_a_rewrite() {
    let (_dir, path) = cube_file([4, 2, 2]);
    let mut it = cube_batches(&path, &[1, 2, 2], ReadOptions::default()).unwrap();
    let mut buf = [0u8; 16];
    assert!(it.next(&mut buf).unwrap().is_some());
    // A newer write replaces the dataset and removes the tile the iterator reads.
    let old_tiles = tile_files(&path);
    write_cube(&path, [2, 2, 2]);
    assert!(old_tiles.iter().all(|p| !p.exists()), "old tiles removed");
    let mut rows = Vec::new();
    while let Some(chunk) = it.next(&mut buf).unwrap() {
        rows.push((chunk.offset[0], as_i32(&buf)[0]));
    }
    assert_eq!(
        rows,
        [(1, 1000), (2, 2000), (3, 3000)],
        "the old 4x2x2 cube"
    );
}

#[test]
fn opening_checks_the_dataset_and_the_chunk_shape() {
    let (_dir, path) = cube_file([2, 2, 2]);
    let status = |dataset: &str, chunk: &[u64]| {
        let options = ReadOptions::default();
        let opened = Batches::open(&Comm::solo(), &path, dataset, chunk, &options);
        opened.err().map(|e| e.status)
    };
    assert_eq!(status("/cube", &[1, 1]), Some(H5TILE_ERR_INVALID_ARGUMENT));
    assert_eq!(
        status("/cube", &[1, 0, 1]),
        Some(H5TILE_ERR_INVALID_ARGUMENT)
    );
    assert_eq!(status("/nope", &[1, 1, 1]), Some(H5TILE_ERR_NOT_FOUND));
    assert_eq!(status("/", &[1, 1, 1]), Some(H5TILE_ERR_NOT_A_DATASET));
    let tiles = crate::layout::tile_dir(&path);
    for f in std::fs::read_dir(&tiles).unwrap().flatten() {
        std::fs::remove_file(f.path()).unwrap();
    }
    // Sources are opened chunk by chunk: the chunk that needs a lost tile fails, naming it.
    let mut it = cube_batches(&path, &[1, 1, 1], ReadOptions::default()).unwrap();
    let mut buf = [0u8; 4];
    let e = it.next(&mut buf).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_MISSING_TILE);
    assert!(e.message.contains(".tiles/cube."), "{}", e.message);
    let mut it = cube_batches(
        &path,
        &[1, 1, 1],
        ReadOptions {
            fill_missing: true,
            ..Default::default()
        },
    )
    .unwrap();
    buf = [7; 4];
    assert!(it.next(&mut buf).unwrap().is_some());
    assert_eq!(
        buf, [0; 4],
        "a lost tile reads as the fill value with fill_missing"
    );
}

/// A float64 dataset of `BIG` whose element (i, j) is `1000 i + j`, in four tiles of
/// unequal widths (500 x 400 and 500 x 500; 2 blocks of checksums each, the blocks
/// ending mid-row), written in `layout`.
fn write_big(path: &Path, layout: crate::ops::write::Layout) {
    let tiles: Vec<Tile> = BIG_TILES
        .iter()
        .map(|&(r, c, h, w)| Tile::new(vec![r, c], vec![h, w]))
        .collect();
    write_big_values(path, &BIG, &tiles, layout);
}

/// Writes `/big` of `global` shape as `tiles`, each holding `big_values`.
fn write_big_values(
    path: &Path,
    global: &[u64],
    tiles: &[Tile],
    layout: crate::ops::write::Layout,
) {
    use crate::ops::write::LocalTile;
    let data: Vec<Vec<f64>> = tiles.iter().map(big_values).collect();
    let local = tiles
        .iter()
        .zip(&data)
        .map(|(t, d)| LocalTile {
            tile: t.clone(),
            buf: host_bytes(d),
        })
        .collect();
    let options = WriteOptions {
        layout,
        ..WriteOptions::default()
    };
    crate::testkit::write_tiles(path, "/big", Dtype::Float64, global, local, options).unwrap();
}

const BIG: [u64; 2] = [1000, 900];
const BIG_TILES: [(u64, u64, u64, u64); 4] = [
    (0, 0, 500, 400),
    (0, 400, 500, 500),
    (500, 0, 500, 400),
    (500, 400, 500, 500),
];

fn big_values(within: &Tile) -> Vec<f64> {
    let (h, w) = (within.shape[0], within.shape[1]);
    let (r, c) = (within.offset[0], within.offset[1]);
    (0..h * w)
        .map(|k| (1000 * (r + k / w) + c + k % w) as f64)
        .collect()
}

/// The checksum blocks (tile, block) of `BIG_TILES` that chunks `range` touch: for each
/// row of a chunk within a tile, the blocks from its first byte to its last.
fn blocks_touched(
    grid: &ChunkGrid,
    range: Range<u128>,
) -> std::collections::BTreeSet<(usize, u64)> {
    let block = crate::layout::checksums::BLOCK_BYTES;
    let mut touched = std::collections::BTreeSet::new();
    for index in range {
        let chunk = grid.chunk(index);
        for (t, &(r, c, h, w)) in BIG_TILES.iter().enumerate() {
            let tile = Tile::new(vec![r, c], vec![h, w]);
            let Some(common) = chunk.intersection(&tile) else {
                continue;
            };
            for i in common.offset[0]..common.offset[0] + common.shape[0] {
                let first = ((i - r) * w + common.offset[1] - c) * 8;
                let last = first + common.shape[1] * 8 - 1;
                touched.extend((first / block..=last / block).map(|k| (t, k)));
            }
        }
    }
    touched
}

/// Every chunk of the share, checked against the values, and what reading them cost.
fn read_share(
    path: &Path,
    chunk: &[u64],
    share: (usize, usize),
    options: ReadOptions,
) -> ReadCounts {
    let mut it = Batches::open_share(&Comm::solo(), share, path, "/big", chunk, &options).unwrap();
    let grid = ChunkGrid::new(&BIG, chunk).unwrap();
    let mut expected = grid.share(share.0, share.1);
    while let Some((tile, bytes)) = it.next_view().unwrap() {
        assert_eq!(tile, grid.chunk(expected.next().unwrap()));
        let got: Vec<f64> = bytes
            .chunks_exact(8)
            .map(|b| f64::from_ne_bytes(b.try_into().unwrap()))
            .collect();
        assert!(got == big_values(&tile), "chunk {tile} of {chunk:?}");
    }
    assert!(expected.next().is_none());
    it.finish()
}

/// Chunks narrower than a tile touch each block many times, row band after row band: a
/// rank sums each block once (the first chunk touching it), and later chunks read only
/// their own bytes of it. Many chunk shapes (clipped at the edges), tiles of one file
/// each, in subfiles and in a single file, every rank of 1 to 4.
#[test]
fn each_rank_sums_each_block_it_touches_once() {
    use crate::ops::write::Layout;
    let d = tempfile::tempdir().unwrap();
    let blocks_in_all = 8; // four tiles of 2 blocks
    let bytes_in_all = BIG.iter().product::<u64>() * 8;
    for layout in [Layout::Vds, Layout::Subfiles, Layout::Single] {
        let path = d.path().join(format!("{}.h5", layout.c_name()));
        write_big(&path, layout);
        let shapes: [&[u64]; 8] = [
            &[1000, 900],
            &[64, 100],
            &[100, 64],
            &[1, 900],
            &[333, 450],
            &[37, 13],
            &[500, 50],
            &[1000, 1],
        ];
        for chunk in shapes {
            let grid = ChunkGrid::new(&BIG, chunk).unwrap();
            for size in 1..=4 {
                let mut summed = 0;
                for rank in 0..size {
                    let counts = read_share(&path, chunk, (rank, size), ReadOptions::default());
                    let touched = blocks_touched(&grid, grid.share(rank, size));
                    assert_eq!(
                        counts.blocks_summed,
                        touched.len() as u64,
                        "{layout:?}, chunks {chunk:?}, rank {rank} of {size}"
                    );
                    summed += counts.blocks_summed;
                }
                if size == 1 {
                    assert_eq!(summed, blocks_in_all, "{layout:?} {chunk:?}");
                }
            }
        }
        // Chunks taking a fifth of each row (rows of 800 of 4000 bytes, so far apart
        // in the tile file that each goes straight to its place): every byte is read
        // at most twice (once as its block is summed, once for the chunk that takes it),
        // where summing each chunk's blocks read and summed every block 5 times.
        let counts = read_share(&path, &[50, 100], (0, 1), ReadOptions::default());
        assert_eq!(counts.blocks_summed, blocks_in_all, "{layout:?}");
        assert!(
            counts.bytes_read <= 2 * bytes_in_all,
            "{layout:?}: {} bytes read of {bytes_in_all}",
            counts.bytes_read
        );
        // Unchecked, nothing is summed.
        let options = ReadOptions {
            no_verify: true,
            ..Default::default()
        };
        let counts = read_share(&path, &[64, 100], (0, 1), options);
        assert_eq!(counts.blocks_summed, 0, "{layout:?}");
    }
}

/// Tiles wider than a box's row (8 KiB) are checksummed in boxes of 1024 x 128 float64:
/// chunks on the boxes' grid read and sum just their own bytes, every layout; chunks across
/// them sum each box once; a whole read reads each byte once.
#[test]
fn chunks_of_wide_tiles_read_their_own_boxes() {
    use crate::ops::write::Layout;
    let d = tempfile::tempdir().unwrap();
    let global = [512u64, 4096];
    let tiles = [
        Tile::new(vec![0, 0], vec![256, 4096]),
        Tile::new(vec![256, 0], vec![256, 4096]),
    ];
    let all = global.iter().product::<u64>() * 8;
    for layout in [Layout::Vds, Layout::Subfiles, Layout::Single] {
        let path = d.path().join(format!("wide-{}.h5", layout.c_name()));
        write_big_values(&path, &global, &tiles, layout);
        let read = |chunk: &[u64]| {
            let mut it = Batches::open_share(
                &Comm::solo(),
                (0, 1),
                &path,
                "/big",
                chunk,
                &Default::default(),
            )
            .unwrap();
            while let Some((tile, bytes)) = it.next_view().unwrap() {
                let got: Vec<f64> = (bytes.chunks_exact(8))
                    .map(|b| f64::from_ne_bytes(b.try_into().unwrap()))
                    .collect();
                assert!(got == big_values(&tile), "{layout:?}: chunk {tile}");
            }
            it.finish()
        };
        // 2 tiles of 2 x 4 boxes.
        for chunk in [&[128u64, 1024][..], &[512, 4096], &[256, 2048]] {
            let counts = read(chunk);
            assert_eq!(
                (counts.blocks_summed, counts.bytes_read),
                (16, all),
                "{layout:?} {chunk:?}"
            );
        }
        // Half a box wide and deep: each box summed once, read once whole and 3 quarters again.
        let counts = read(&[64, 512]);
        assert_eq!(counts.blocks_summed, 16, "{layout:?}");
        assert_eq!(counts.bytes_read, all + all * 3 / 4, "{layout:?}");
    }
}

/// A damaged block fails every chunk that takes bytes of it, however many chunks touched
/// it before (a block that did not match is never taken as checked), naming the file, the
/// tile and the bytes; the chunks beside it still come whole.
#[test]
fn every_chunk_touching_a_damaged_block_fails_naming_it() {
    use crate::ops::write::Layout;
    let d = tempfile::tempdir().unwrap();
    for layout in [Layout::Vds, Layout::Subfiles, Layout::Single] {
        let path = d.path().join(format!("{}.h5", layout.c_name()));
        write_big(&path, layout);
        // Element (900, 100) lies in the second block of tile [500:1000, 0:400] (tile
        // number 2; its first block holds 327.68 of its rows of 3200 bytes).
        let (file, at) = {
            let value = (1000.0f64 * 900.0 + 100.0).to_ne_bytes();
            let files = match layout {
                Layout::Single => vec![path.clone()],
                _ => tile_files(&path),
            };
            files
                .into_iter()
                .find_map(|f| {
                    let bytes = std::fs::read(&f).unwrap();
                    let at = bytes.windows(8).position(|w| w == value)?;
                    Some((f, at as u64))
                })
                .expect("the element's bytes")
        };
        let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, &[0x77], at).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        for chunk in [[100u64, 100], [37, 13], [1, 900], [1000, 900]] {
            let grid = ChunkGrid::new(&BIG, &chunk).unwrap();
            let mut it =
                Batches::open(&Comm::solo(), &path, "/big", &chunk, &Default::default()).unwrap();
            let (mut failed, mut whole) = (0, 0);
            for index in 0..grid.len() {
                let damaged = blocks_touched(&grid, index..index + 1).contains(&(2, 1));
                match it.next_view() {
                    Ok(Some((tile, bytes))) => {
                        assert!(!damaged, "{layout:?}: {tile} came whole");
                        let got: Vec<f64> = bytes
                            .chunks_exact(8)
                            .map(|b| f64::from_ne_bytes(b.try_into().unwrap()))
                            .collect();
                        assert!(got == big_values(&tile), "chunk {tile}");
                        whole += 1;
                    }
                    Ok(None) => panic!("chunk {index} missing"),
                    Err(e) => {
                        assert!(
                            damaged,
                            "{layout:?}: chunk {}: {}",
                            grid.chunk(index),
                            e.message
                        );
                        assert_eq!(e.status, H5TILE_ERR_CORRUPT, "{}", e.message);
                        assert!(e.message.contains("[500:1000, 0:400]"), "{}", e.message);
                        assert!(e.message.contains(&name), "{}", e.message);
                        assert!(e.message.contains("checksum"), "{}", e.message);
                        failed += 1;
                    }
                }
            }
            assert!(it.next_view().unwrap().is_none());
            let expect_failed = (0..grid.len())
                .filter(|&i| blocks_touched(&grid, i..i + 1).contains(&(2, 1)))
                .count();
            assert_eq!(failed, expect_failed, "{layout:?} {chunk:?}");
            assert!(whole > 0 || grid.len() == 1, "{layout:?} {chunk:?}");
        }
    }
}

#[test]
fn freeing_mid_way_stops_the_reader_without_hanging() {
    let (_dir, path) = cube_file([8, 8, 8]);
    for consumed in 0..3 {
        let mut it = cube_batches(&path, &[1, 8, 8], ReadOptions::default()).unwrap();
        let mut buf = vec![0u8; it.max_chunk_bytes()];
        for _ in 0..consumed {
            it.next(&mut buf).unwrap().unwrap();
        }
        drop(it);
    }
    // The file is closed again: it can be replaced at once.
    write_cube(&path, [8, 8, 8]);
}
