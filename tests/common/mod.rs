//! What the property-based tests (fuzz_inputs.rs, fuzz_vds_prefix.rs) share.
#![allow(dead_code)]

use h5tile::internals::hdf5;
use h5tile::internals::{host_bytes, write, Comm, Dtype, LocalTile, Tile, WriteArgs, WriteOptions};
use proptest::prelude::ProptestConfig;
use std::path::{Path, PathBuf};

/// `default` cases per property, or `PROPTEST_CASES` for a longer run; nothing persisted.
pub fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// This process alone.
pub fn solo() -> Comm {
    unsafe { Comm::from_raw(mpi::ffi::RSMPI_COMM_NULL) }.unwrap()
}

/// Starts `command`, a child test process. HDF5's own driver opens files without O_CLOEXEC: a
/// child would keep the descriptors of files the other tests have open at this moment, with
/// their locks, for as long as it runs. Every descriptor past the standard ones is closed when
/// the child execs, and the child is started under the HDF5 lock, so no other test closes and
/// opens a file again (taking its lock anew) between the fork and the exec.
pub fn spawn_child(command: &mut std::process::Command) -> std::process::Child {
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(command, || {
            const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
            let all = libc::c_uint::MAX;
            if libc::syscall(libc::SYS_close_range, 3, all, CLOSE_RANGE_CLOEXEC) != 0 {
                for fd in 3..65536 {
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                }
            }
            Ok(())
        });
    }
    let _l = hdf5::lock();
    command.spawn().unwrap()
}

// The grid the properties read: element (i, j) = 10 i + j + 0.5 + `shift`.

pub const GLOBAL: [u64; 2] = [6, 5];
/// (row, column, height, width) of each tile; tile k is in file `...r0.t<k>.h5`.
pub const BLOCKS: [(u64, u64, u64, u64); 4] =
    [(0, 0, 3, 2), (0, 2, 3, 3), (3, 0, 3, 2), (3, 2, 3, 3)];

pub fn value(i: u64, j: u64, shift: f64) -> f64 {
    (10 * i + j) as f64 + 0.5 + shift
}

/// The 6x5 float64 grid of four tiles (`BLOCKS`) as `/g` at `path`, values raised by `shift`.
pub fn write_grid(path: &Path, shift: f64) {
    let data: Vec<Vec<f64>> = BLOCKS
        .iter()
        .map(|&(r, c, h, w)| {
            (0..h * w)
                .map(|k| value(r + k / w, c + k % w, shift))
                .collect()
        })
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
        path,
        dataset: "/g",
        dtype: Dtype::Float64,
        global: &GLOBAL,
        tiles,
        options: WriteOptions::default(),
    };
    write(&solo(), &args).unwrap();
}

/// The tile files of the master at `path`, in tile order.
pub fn tile_files(master: &Path) -> Vec<PathBuf> {
    let dir = master.with_file_name(format!(
        "{}.tiles",
        master.file_name().unwrap().to_str().unwrap()
    ));
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 4);
    files
}
