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
use h5tile::internals::{
    host_bytes, host_bytes_mut, read, write, Batches, Comm, Dtype, LocalTile, ReadOptions, Tile,
    WriteArgs, WriteOptions,
};
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

const GLOBAL: [u64; 2] = [6, 5];
const BLOCKS: [(u64, u64, u64, u64); 4] = [(0, 0, 3, 2), (0, 2, 3, 3), (3, 0, 3, 2), (3, 2, 3, 3)];

fn solo() -> Comm {
    unsafe { Comm::from_raw(mpi::ffi::RSMPI_COMM_NULL) }.unwrap()
}

/// The folder holding the grid, its master's path and bytes (written once per run).
fn grid() -> &'static (tempfile::TempDir, PathBuf, Vec<u8>) {
    static GRID: OnceLock<(tempfile::TempDir, PathBuf, Vec<u8>)> = OnceLock::new();
    GRID.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let master = dir.path().join("m.h5");
        let data: Vec<Vec<f64>> = BLOCKS
            .iter()
            .map(|&(_, _, h, w)| (0..h * w).map(|k| k as f64).collect())
            .collect();
        let tiles = BLOCKS
            .iter()
            .zip(&data)
            .map(|(&(r, c, h, w), d)| LocalTile {
                tile: Tile::new(vec![r, c], vec![h, w]),
                buf: host_bytes(d),
            })
            .collect();
        let args = WriteArgs {
            path: &master,
            dataset: "/g",
            dtype: Dtype::Float64,
            global: &GLOBAL,
            tiles,
            options: WriteOptions::default(),
        };
        write(&solo(), &args).unwrap();
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
    let all = Tile::new(vec![0, 0], GLOBAL.to_vec());
    let options = ReadOptions::default();
    let mut f64s = vec![0f64; 30];
    let r = read(
        &solo(),
        master,
        "/g",
        Dtype::Float64,
        &all,
        host_bytes_mut(&mut f64s),
        options,
    );
    assert!(
        !matches!(&r, Err(e) if e.status == H5TILE_ERR_PANIC),
        "{r:?}"
    );
    let mut f32s = vec![0f32; 30];
    let r = read(
        &solo(),
        master,
        "/g",
        Dtype::Float32,
        &all,
        host_bytes_mut(&mut f32s),
        options,
    );
    assert!(
        !matches!(&r, Err(e) if e.status == H5TILE_ERR_PANIC),
        "{r:?}"
    );
    match Batches::open(&solo(), master, "/g", &[2, 2], None, false) {
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
