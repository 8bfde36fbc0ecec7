//! A master file made of the input, beside the tile files of a real 6x5 grid: read whole,
//! read as another type and read in batches, each ends in success or in a status other than
//! `H5TILE_ERR_PANIC` (a panic anywhere aborts the run: libFuzzer's panic hook).
//!
//! An input starting with HDF5's signature is the master as it is; any other is a list of
//! 3-byte patches (a 2-byte position, a byte XORed there) applied to the real master, which
//! reaches far more of HDF5's parsing than bytes from nothing. Patches inside the master's
//! global heap are skipped: HDF5 itself hangs or crashes on some of them (see the ignored
//! tests `hdf5_hangs_...` and `hdf5_crashes_...` in tests/fuzz_inputs.rs).
#![no_main]

use h5tile::internals::status::H5TILE_ERR_PANIC;
use h5tile::internals::testkit::{grid_value, read_into, whole_grid, write_grid};
use h5tile::internals::{Batches, Comm, Dtype, ReadOptions, WriteOptions};
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The folder holding the grid, its master's path and bytes (written once per run).
fn grid() -> &'static (tempfile::TempDir, PathBuf, Vec<u8>) {
    static GRID: OnceLock<(tempfile::TempDir, PathBuf, Vec<u8>)> = OnceLock::new();
    GRID.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let master = dir.path().join("m.h5");
        write_grid(&master, "/g", WriteOptions::default(), grid_value);
        let bytes = std::fs::read(&master).unwrap();
        (dir, master, bytes)
    })
}

fuzz_target!(|data: &[u8]| {
    let (_, master, real) = grid();
    let bytes = if data.starts_with(b"\x89HDF") {
        data.to_vec()
    } else {
        let heap = real
            .windows(4)
            .position(|w| w == b"GCOL")
            .unwrap_or(real.len());
        let mut b = real.clone();
        for p in data.chunks_exact(3) {
            let at = u16::from_le_bytes([p[0], p[1]]) as usize;
            if at < heap {
                b[at] ^= p[2];
            }
        }
        b
    };
    std::fs::write(master, &bytes).unwrap();
    let all = whole_grid();
    let options = ReadOptions::default();
    let mut f64s = vec![0f64; 30];
    let r = read_into(master, "/g", Dtype::Float64, &all, &mut f64s, options);
    assert!(
        !matches!(&r, Err(e) if e.status == H5TILE_ERR_PANIC),
        "{r:?}"
    );
    let mut f32s = vec![0f32; 30];
    let r = read_into(master, "/g", Dtype::Float32, &all, &mut f32s, options);
    assert!(
        !matches!(&r, Err(e) if e.status == H5TILE_ERR_PANIC),
        "{r:?}"
    );
    match Batches::open(&Comm::solo(), master, "/g", &[2, 2], &options) {
        Err(e) => assert!(e.status != H5TILE_ERR_PANIC, "{e:?}"),
        Ok(mut it) => {
            let mut buf = vec![0u8; it.max_chunk_bytes()];
            for _ in 0..it.count().min(64) {
                if let Err(e) = it.next(&mut buf) {
                    assert!(e.status != H5TILE_ERR_PANIC, "{e:?}");
                }
            }
        }
    }
});
