//! Writing the subfiled layout: one HDF5 file per group of ranks (by default the ranks of one
//! node), holding one contiguous dataset per tile of the group. The group's first rank creates
//! the file with every dataset's storage allocated and hands out the byte offsets; each rank
//! then writes its own tiles' bytes there straight from its buffer, and the first rank syncs
//! the file once for the whole group. The master maps every tile to its dataset, as the VDS
//! layout maps tile files, and records where the bytes are (`vds::TileBytes`), so readers
//! fetch them directly.

use super::vds::{write_u64_attribute, TileBytes};
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::platform::device::{Buffer, DeviceFile, Route};
use crate::platform::hdf5::{self, Dataset, File, Plist, Space};
use crate::status::{fail, Error, Result, H5TILE_ERR_HDF5};
use std::path::Path;

/// Name, inside its subfile, of the dataset holding tile `k` of `rank`.
pub fn tile_dataset(rank: usize, k: usize) -> String {
    format!("/tile.r{rank}.t{k}")
}

/// Whether `name` is a dataset name `tile_dataset` makes.
pub fn is_tile_dataset(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("/tile.r") else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    rest.split_once(".t")
        .is_some_and(|(r, k)| digits(r) && digits(k))
}

/// Creates the subfile `path` with one contiguous dataset per tile of `tiles` (rank, index on
/// that rank, tile; none empty), its storage allocated and not filled, each with the tile's
/// place in its attributes as in a tile file. Returns each tile's `TileBytes`, in order.
pub fn create(
    path: &Path,
    dtype: Dtype,
    global: &[u64],
    tiles: &[(usize, usize, Tile)],
) -> Result<Vec<TileBytes>> {
    let offsets = (|| {
        let _l = hdf5::lock();
        let file = File::create(path)?;
        let t = dtype.hdf5_type()?;
        let dcpl = Plist::contiguous_allocated()?;
        let mut offsets = Vec::with_capacity(tiles.len());
        for (rank, k, tile) in tiles {
            let name = tile_dataset(*rank, *k);
            let dset = Dataset::create(&file, &name, &t, &Space::simple(&tile.shape)?, &dcpl)?;
            write_u64_attribute(&dset, "h5tile_offset", &tile.offset)?;
            write_u64_attribute(&dset, "h5tile_global_shape", global)?;
            let Some(offset) = dset.data_offset() else {
                return fail(
                    H5TILE_ERR_HDF5,
                    format!(
                        "HDF5 allocated no storage for tile {tile} in '{}'",
                        path.display()
                    ),
                );
            };
            offsets.push(offset);
        }
        file.close()?;
        Ok(offsets)
    })()?;
    // HDF5 sets the file's size to the end of its allocations when it closes it.
    let file_size = std::fs::metadata(path)
        .map_err(|e| Error::io("cannot stat", path, &e))?
        .len();
    Ok(offsets
        .into_iter()
        .map(|data_offset| TileBytes {
            data_offset,
            file_size,
        })
        .collect())
}

/// Writes one tile's `len` bytes from `buf` at `data_offset` of the subfile `path`: from host
/// memory in pieces over this rank's I/O threads, from device memory through the h5tile_gds
/// device path (cuFile or its bounded staging). Nothing is synced here: the group's first rank
/// syncs the whole file once every rank has written; when it will (`sync`), the writeback of
/// each piece starts at once, so that sync finds little left to do.
pub fn write_tile(
    path: &Path,
    data_offset: u64,
    len: usize,
    buf: Buffer,
    sync: bool,
) -> Result<()> {
    let route = buf.route();
    match buf {
        Buffer::Host(bytes) => {
            let Some(bytes) = bytes.get(..len) else {
                let why = format!("a buffer of {} bytes for a tile of {len}", bytes.len());
                return fail(crate::status::H5TILE_ERR_INVALID_ARGUMENT, why);
            };
            write_host(path, data_offset, bytes, &route, sync)
        }
        Buffer::Device(ptr, _) => {
            DeviceFile::open(path, true, &route)?.write(data_offset, ptr, len)
        }
    }
}

fn write_host(
    path: &Path,
    data_offset: u64,
    bytes: &[u8],
    route: &Route,
    sync: bool,
) -> Result<()> {
    let name = path.to_string_lossy();
    let mode = h5tile_gds::OpenMode {
        write: true,
        ..Default::default()
    };
    let mut file =
        h5tile_gds::PosixFile::open(&name, mode).map_err(|e| Error::io("cannot open", path, &e))?;
    let config = h5tile_gds::Config {
        writeback: sync,
        ..route.driver_config()
    };
    file.write_raw(data_offset, bytes, &config)
        .map_err(|e| Error::io("cannot write tile data to", path, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_dataset_names_are_recognised() {
        assert_eq!(tile_dataset(12, 3), "/tile.r12.t3");
        assert!(is_tile_dataset(&tile_dataset(0, 0)));
        for other in ["/tile", "/tile.r.t1", "/tile.r1.t", "/tile.r1x.t2", "/data"] {
            assert!(!is_tile_dataset(other), "{other}");
        }
    }
}
