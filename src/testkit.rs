//! The fixtures the tests share, in one place: the library's unit tests use them as
//! `crate::testkit`, the integration tests (`tests/`), the command-line tool's tests and the
//! fuzz targets as `h5tile::internals::testkit` (with the feature `internals`). Everything
//! here works on this process alone (`Comm::solo`). The writes and reads return h5tile's
//! result, since tests expect failures of them too; the grid and the listings panic where
//! they cannot be made: that is a broken test, not a finding.

use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::ops::read::{read, ReadOptions};
use crate::ops::write::{write, Layout, LocalTile, WriteArgs, WriteOptions};
use crate::platform::comm::Comm;
use crate::platform::device::{host_bytes, host_bytes_mut, Buffer};
use crate::status::Result;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

/// The grid's shape: 6 rows of 5 float64.
pub const GRID: [u64; 2] = [6, 5];

/// (row, column, height, width) of the grid's four tiles, 2x2 of unequal sizes, in the order
/// they are written: tile k is in the k-th tile file (in name order).
pub const GRID_TILES: [(u64, u64, u64, u64); 4] =
    [(0, 0, 3, 2), (0, 2, 3, 3), (3, 0, 3, 2), (3, 2, 3, 3)];

/// The grid's element (i, j): 10 i + j, so that a value read back tells where it came from.
pub fn grid_value(i: u64, j: u64) -> f64 {
    (10 * i + j) as f64
}

/// The `grid_value`s of the box `within` of the grid, in row-major order.
pub fn grid_values(within: &Tile) -> Vec<f64> {
    let (h, w) = (within.shape[0], within.shape[1]);
    let (r, c) = (within.offset[0], within.offset[1]);
    (0..h * w)
        .map(|k| grid_value(r + k / w, c + k % w))
        .collect()
}

/// The whole grid as a box.
pub fn whole_grid() -> Tile {
    Tile::new(vec![0, 0], GRID.to_vec())
}

/// Writes the 6x5 float64 grid as `dataset` of `path` in its four tiles (`GRID_TILES`),
/// element (i, j) being `value(i, j)`.
pub fn write_grid(
    path: &Path,
    dataset: &str,
    options: WriteOptions,
    value: impl Fn(u64, u64) -> f64,
) {
    let data: Vec<Vec<f64>> = GRID_TILES
        .iter()
        .map(|&(r, c, h, w)| (0..h * w).map(|k| value(r + k / w, c + k % w)).collect())
        .collect();
    let tiles = GRID_TILES
        .iter()
        .zip(&data)
        .map(|(&(r, c, h, w), d)| LocalTile {
            tile: Tile::new(vec![r, c], vec![h, w]),
            buf: host_bytes(d),
        })
        .collect();
    write_tiles(path, dataset, Dtype::Float64, &GRID, tiles, options).unwrap();
}

/// Writes the grid as `/g` of `path` in `layout`, the other options their defaults, element
/// (i, j) being `grid_value(i, j)`: the dataset the reading tests start from.
pub fn write_grid_in(path: &Path, layout: Layout) {
    let options = WriteOptions {
        layout,
        ..WriteOptions::default()
    };
    write_grid(path, "/g", options, grid_value);
}

/// Writes `tiles` (elements of `dtype`) of `dataset`, an array of `shape`.
pub fn write_tiles(
    path: &Path,
    dataset: &str,
    dtype: Dtype,
    shape: &[u64],
    tiles: Vec<LocalTile>,
    options: WriteOptions,
) -> Result<()> {
    let args = WriteArgs {
        path,
        dataset,
        dtype,
        global: shape,
        tiles,
        options,
    };
    write(&Comm::solo(), &args)
}

/// Writes `buf` (elements of `dtype`) as the whole of `dataset`, an array of `shape`, in one
/// tile.
pub fn write_whole(
    path: &Path,
    dataset: &str,
    dtype: Dtype,
    shape: &[u64],
    buf: Buffer,
    options: WriteOptions,
) -> Result<()> {
    let tiles = vec![LocalTile {
        tile: Tile::new(vec![0; shape.len()], shape.to_vec()),
        buf,
    }];
    write_tiles(path, dataset, dtype, shape, tiles, options)
}

/// Reads the box `tile` of `dataset` in `path` as `dtype` into `out`.
pub fn read_into<T: Copy>(
    path: &Path,
    dataset: &str,
    dtype: Dtype,
    tile: &Tile,
    out: &mut [T],
    options: ReadOptions,
) -> Result<()> {
    let buf = host_bytes_mut(out);
    read(&Comm::solo(), path, dataset, dtype, tile, buf, options)
}

/// The box `tile` of `dataset` in `path`, read as float64 with the default options. The
/// values start as NaN, so an element a read claims but does not deliver shows.
pub fn read_f64(path: &Path, dataset: &str, tile: &Tile) -> Result<Vec<f64>> {
    let mut out = vec![f64::NAN; tile.volume() as usize];
    let options = ReadOptions::default();
    read_into(path, dataset, Dtype::Float64, tile, &mut out, options)?;
    Ok(out)
}

/// The files in the tile folder of `master`, sorted by name; none where it has no folder.
pub fn tile_files(master: &Path) -> Vec<PathBuf> {
    let dir = crate::layout::tile_dir(master);
    let entries = match std::fs::read_dir(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        entries => entries.unwrap(),
    };
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// The names of `tile_files(master)`, in the same order.
pub fn tile_names(master: &Path) -> Vec<String> {
    tile_files(master)
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// XORs byte `at` of `file` with `mask` in place, the rest of the file as it was: damage that
/// only a checksum (or a parser) can see.
pub fn flip_bits(file: &Path, at: u64, mask: u8) {
    use std::os::unix::fs::FileExt;
    // A mask of 0 would leave the file as it was, and the test after it pass for nothing.
    assert_ne!(mask, 0, "flip_bits: a mask of 0 changes nothing");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(file)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ mask], at).unwrap();
}

/// The successive states of the xorshift64 generator from `start` (not 0): varied data, the
/// same on every run, that the tests shape into bytes as they need.
pub fn xorshift(start: u64) -> impl Iterator<Item = u64> {
    let mut x = start;
    std::iter::repeat_with(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    })
}

/// Starts `command`, a child process of a test. HDF5 opens files without O_CLOEXEC: a child
/// would keep the descriptors of files the other tests have open at this moment, with their
/// locks, for as long as it runs. Every descriptor past the standard ones is closed when the
/// child execs, and the child is started under the HDF5 lock, so no other test closes and
/// opens a file again (taking its lock anew) between the fork and the exec.
pub fn spawn_child(command: &mut Command) -> Child {
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
    let _l = crate::platform::hdf5::lock();
    command.spawn().unwrap()
}

/// Makes the master `path` as h5tile wrote it before it recorded the checksums of compressed
/// tiles' stored chunks: the two attributes of `dataset` that hold them are removed.
pub fn forget_chunk_checksums(path: &Path, dataset: &str) {
    use crate::layout::checksums::{CHUNK_CHECKSUMS_ATTRIBUTE, CHUNK_FIRST_ATTRIBUTE};
    let _l = crate::platform::hdf5::lock();
    let f = crate::platform::hdf5::File::open_write(path).unwrap();
    for name in [CHUNK_FIRST_ATTRIBUTE, CHUNK_CHECKSUMS_ATTRIBUTE] {
        f.delete_attribute(dataset, name).unwrap();
    }
}
