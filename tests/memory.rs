//! Peak memory, each test measuring this process's (its own test binary, so no other test's
//! allocations share it; a lock keeps its tests from running at once):
//! - An open batched read holds about one chunk, whatever the dataset size: streaming a 512 MiB
//!   dataset (64 tile files) in 8 MiB chunks must not raise the peak by more than two chunks
//!   plus 64 MiB, and memory must stop growing once reading is under way (HDF5's own VDS
//!   reading keeps every source file it touched open, ~0.6 MiB each).
//! - A compressed write in the subfiled layout, which must learn every chunk's compressed size
//!   before the subfile can place them, keeps its encoded chunks in bounded memory (the rest
//!   waits in an unnamed file): 128 MiB of incompressible data in one tile must not raise the
//!   peak by more than 64 MiB.

use h5tile::internals::testkit::read_into;
use h5tile::internals::testkit::write_tiles;
use h5tile::internals::testkit::xorshift;
use h5tile::internals::tool::Compression;
use h5tile::internals::Comm;
use h5tile::internals::Dtype;
use h5tile::internals::Layout;
use h5tile::internals::Tile;
use h5tile::internals::{host_bytes, LocalTile, WriteOptions};
use h5tile::internals::{Batches, ReadOptions};
use std::sync::Mutex;

const MIB: u64 = 1 << 20;

/// One measurement at a time: the peak is the process's.
static MEASURING: Mutex<()> = Mutex::new(());

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn streaming_512_mib_in_8_mib_chunks_stays_within_two_chunks_plus_64_mib() {
    let _one = MEASURING.lock().unwrap_or_else(|p| p.into_inner());
    let solo = Comm::solo();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.h5");
    let (rows, cols, slab) = (8192u64, 8192u64, 128u64);
    // 64 slabs of 8 MiB, all written from one buffer, so writing needs no 512 MiB either.
    let slab_values: Vec<f64> = (0..slab * cols).map(|i| i as f64).collect();
    let tiles = (0..rows / slab)
        .map(|s| LocalTile {
            tile: Tile::new(vec![s * slab, 0], vec![slab, cols]),
            buf: host_bytes(&slab_values),
        })
        .collect();
    let (global, options) = ([rows, cols], WriteOptions::default());
    write_tiles(&path, "/big", Dtype::Float64, &global, tiles, options).unwrap();

    let chunk = [512u64, 2048];
    let chunk_bytes = chunk.iter().product::<u64>() * 8;
    assert_eq!(chunk_bytes, 8 * MIB);
    let mut buf = vec![0u8; chunk_bytes as usize];
    buf.fill(1); // touch it, so it is part of the baseline
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak-RSS counter");
    let before = status_kib("VmRSS:");
    let mut it = Batches::open(&solo, &path, "/big", &chunk, &ReadOptions::default()).unwrap();
    let (mut n, mut sum) = (0u64, 0f64);
    let total = it.count() as u64;
    let mut at_quarter = 0;
    while let Some(tile) = it.next(&mut buf).unwrap() {
        if n == total / 4 {
            at_quarter = status_kib("VmRSS:");
        }
        let values = buf[..tile.volume() as usize * 8].chunks_exact(8);
        sum += values
            .map(|b| f64::from_ne_bytes(b.try_into().unwrap()))
            .sum::<f64>();
        n += 1;
    }
    let at_end = status_kib("VmRSS:");
    drop(it);
    let grown = (status_kib("VmHWM:") - before) * 1024;
    let late_growth = at_end.saturating_sub(at_quarter) * 1024;
    assert_eq!(n, (rows / chunk[0]) * (cols / chunk[1]));
    let per_slab: f64 = (0..slab * cols).map(|i| i as f64).sum();
    assert_eq!(sum, per_slab * (rows / slab) as f64);
    eprintln!(
        "peak memory grew by {:.1} MiB streaming 512 MiB in 8 MiB chunks",
        grown as f64 / MIB as f64
    );
    assert!(
        grown < 2 * chunk_bytes + 64 * MIB,
        "peak grew by {} MiB",
        grown / MIB
    );
    assert!(
        late_growth < chunk_bytes / 2,
        "memory grew by {} KiB over the last 3/4 of the chunks",
        late_growth / 1024
    );
}

#[test]
fn a_compressed_subfiled_write_of_128_mib_keeps_its_chunks_within_64_mib() {
    let _one = MEASURING.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("compressed.h5");
    let (rows, cols) = (2048u64, 8192u64);
    // xorshift bits: zstd cannot shrink them, so the encoded chunks are as large as the data.
    let values: Vec<u64> = xorshift(0x9e37_79b9_7f4a_7c15)
        .take((rows * cols) as usize)
        .collect();
    let tiles = vec![LocalTile {
        tile: Tile::new(vec![0, 0], vec![rows, cols]),
        buf: host_bytes(&values),
    }];
    let options = WriteOptions {
        layout: Layout::Subfiles,
        compression: Compression::parse("zstd", false).unwrap(),
        no_sync: true,
        ..WriteOptions::default()
    };
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak-RSS counter");
    let before = status_kib("VmRSS:");
    write_tiles(&path, "/bits", Dtype::UInt64, &[rows, cols], tiles, options).unwrap();
    let grown = (status_kib("VmHWM:") - before) * 1024;
    eprintln!(
        "peak memory grew by {:.1} MiB writing 128 MiB compressed in the subfiled layout",
        grown as f64 / MIB as f64
    );
    // The bits came back: the chunks were written where the subfile placed them.
    let mut back = vec![0u64; values.len()];
    let whole = Tile::new(vec![0, 0], vec![rows, cols]);
    let read = read_into(
        &path,
        "/bits",
        Dtype::UInt64,
        &whole,
        &mut back,
        Default::default(),
    );
    read.unwrap();
    assert!(back == values, "the data read back differs");
    assert!(grown < 64 * MIB, "peak grew by {} MiB", grown / MIB);
}
