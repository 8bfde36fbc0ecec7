//! Writing the subfiled layout: one HDF5 file per group of ranks (by default the ranks of one
//! node), holding one contiguous dataset per tile of the group. The group's first rank creates
//! the file with every dataset's storage allocated and hands out the byte offsets; each rank
//! then writes its own tiles' bytes there straight from its buffer, and the first rank syncs
//! the file once for the whole group. The master maps every tile to its dataset, as the VDS
//! layout maps tile files, and records where the bytes are (`vds::TileBytes`), so readers
//! fetch them directly.
//!
//! A subfile's first bytes (an HDF5 user block, which HDF5 leaves to the application) say which
//! write made it, so a reader can tell a subfile of another generation put in place of the one
//! the master names (a stale copy, a restore gone wrong) from the right one, with one short
//! read per subfile.

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

/// Size of the user block at the start of every subfile (HDF5's smallest).
const USER_BLOCK: u64 = 512;

/// What a subfile's user block starts with; the write's generation (little-endian) follows.
const STAMP: &[u8; 16] = b"h5tile subfile\n\0";

/// Creates the subfile `path` of write `generation` with one contiguous dataset per tile of
/// `tiles` (rank, index on that rank, tile; none empty), its storage allocated and not filled,
/// each with the tile's place in its attributes as in a tile file, and stamps it with the
/// generation. Returns each tile's `TileBytes`, in order.
pub fn create(
    path: &Path,
    generation: u64,
    dtype: Dtype,
    global: &[u64],
    tiles: &[(usize, usize, Tile)],
) -> Result<Vec<TileBytes>> {
    let offsets = (|| {
        let _l = hdf5::lock();
        let file = File::create_as(path, &Plist::file_with_user_block(USER_BLOCK)?)?;
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
    let mut stamp = STAMP.to_vec();
    stamp.extend(generation.to_le_bytes());
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| std::os::unix::fs::FileExt::write_all_at(&f, &stamp, 0))
        .map_err(|e| Error::io("cannot stamp subfile", path, &e))?;
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

/// Checks that `file`, named `name` by a master, is the subfile of the write the name says.
/// Files without a stamp (tile files, files h5tile did not write) pass. Returns why not.
pub fn check_stamp(file: &std::fs::File, name: &str) -> std::result::Result<(), String> {
    let Some(named) = super::generation_of(name.rsplit('/').next().unwrap_or(name)) else {
        return Ok(());
    };
    let mut head = [0u8; 24];
    if std::os::unix::fs::FileExt::read_exact_at(file, &mut head, 0).is_err()
        || &head[..16] != STAMP
    {
        return Ok(());
    }
    let stamped = u64::from_le_bytes(head[16..].try_into().expect("8 bytes"));
    match stamped == named {
        true => Ok(()),
        false => Err(format!(
            "is a subfile of another write (generation {stamped:016x}; the master names \
             generation {named:016x})"
        )),
    }
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
