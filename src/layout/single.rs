//! The single-file layout: one self-contained HDF5 file holding a contiguous dataset, written
//! by all ranks in parallel without parallel HDF5. Rank 0 creates the file with the dataset's
//! storage allocated (and not filled: untouched bytes of a sparse file read as zero) and
//! shares the storage's byte offset; each rank then writes its tiles' rows straight into that
//! region with `pwrite`, from the caller's buffer.

use super::sync_path;
use crate::device::{DeviceFile, Route};
use crate::dtype::Dtype;
use crate::hdf5::{self, Dataset, File, Plist, Space};
use crate::status::{fail, Error, Result, H5TILE_ERR_HDF5};
use crate::tile::Tile;
use hdf5_sys::h5::HADDR_UNDEF;
use hdf5_sys::h5d::{H5D_alloc_time_t, H5D_fill_time_t, H5D_layout_t, H5Dget_offset};
use hdf5_sys::h5p::{H5Pset_alloc_time, H5Pset_fill_time, H5Pset_layout, H5P_CLS_DATASET_CREATE};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Creates `path` holding `dataset` of `global` shape with its contiguous storage allocated,
/// and returns the storage's byte offset in the file (None when the dataset has no elements).
pub fn create(path: &Path, dataset: &str, dtype: Dtype, global: &[u64]) -> Result<Option<u64>> {
    let _l = hdf5::lock();
    let file = File::create(path)?;
    let t = dtype.hdf5_type()?;
    let dcpl = Plist::create(*H5P_CLS_DATASET_CREATE)?;
    let what = || "cannot set up contiguous, pre-allocated storage".to_string();
    unsafe {
        hdf5::check(H5Pset_layout(dcpl.id(), H5D_layout_t::H5D_CONTIGUOUS), what)?;
        hdf5::check(
            H5Pset_alloc_time(dcpl.id(), H5D_alloc_time_t::H5D_ALLOC_TIME_EARLY),
            what,
        )?;
        hdf5::check(
            H5Pset_fill_time(dcpl.id(), H5D_fill_time_t::H5D_FILL_TIME_NEVER),
            what,
        )?;
    }
    let dset = Dataset::create(file.id(), dataset, &t, &Space::simple(global)?, &dcpl)?;
    let offset = unsafe { H5Dget_offset(dset.id()) };
    drop(dset);
    file.close()?;
    let elements = crate::tile::volume(global);
    match (offset, elements) {
        (_, 0) => Ok(None),
        (HADDR_UNDEF, _) => fail(
            H5TILE_ERR_HDF5,
            format!("HDF5 allocated no storage for '{dataset}'"),
        ),
        (o, _) => Ok(Some(o)),
    }
}

/// Writes `tile` (dense, row-major, `elem` bytes per element, at `buf`) into the contiguous
/// storage at byte `data_offset` of the file at `path`, one `pwrite` per contiguous run (from
/// device memory: one h5tile_gds device transfer per run).
///
/// # Safety
/// `buf` must hold `tile.volume()` elements of `elem` bytes.
pub unsafe fn write_tile(
    path: &Path,
    data_offset: u64,
    global: &[u64],
    tile: &Tile,
    elem: usize,
    buf: *const u8,
    route: &Route,
) -> Result<()> {
    if let Route::Device(ptr, _) = route {
        let mut io = DeviceFile::open(path, true, route)?;
        for (file_element, buf_element, run) in runs(global, tile) {
            let at = data_offset + file_element * elem as u64;
            let start = buf_element as usize * elem;
            io.write(at, ptr.offset(start), run as usize * elem)?;
        }
        drop(io);
        return sync_path(path);
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io("cannot open", path, &e))?;
    let len = (tile.volume() as usize) * elem;
    let bytes = std::slice::from_raw_parts(buf, len);
    for (file_element, buf_element, run) in runs(global, tile) {
        let at = data_offset + file_element * elem as u64;
        let start = buf_element as usize * elem;
        file.write_all_at(&bytes[start..start + run as usize * elem], at)
            .map_err(|e| Error::io("cannot write tile data to", path, &e))?;
    }
    drop(file);
    sync_path(path)
}

/// The contiguous runs of a tile inside a row-major global array: (first element's index in the
/// array, its index in the tile's buffer, run length in elements). Trailing axes the tile spans
/// whole are merged, so a slab of full rows is a single run.
pub fn runs(global: &[u64], tile: &Tile) -> Vec<(u64, u64, u64)> {
    let n = global.len();
    if tile.is_empty() {
        return Vec::new();
    }
    // Axes k.. form one run: every axis after k is spanned whole.
    let mut k = n - 1;
    while k > 0 && tile.shape[k] == global[k] {
        k -= 1;
    }
    let run: u64 = tile.shape[k..].iter().product();
    let gstride: Vec<u64> = (0..n).map(|d| global[d + 1..].iter().product()).collect();
    let outer: Vec<u64> = tile.shape[..k].to_vec();
    let count: u64 = outer.iter().product();
    let mut out = Vec::with_capacity(count as usize);
    let mut index = vec![0u64; k];
    for r in 0..count {
        let file_element: u64 = (0..n)
            .map(|d| (tile.offset[d] + if d < k { index[d] } else { 0 }) * gstride[d])
            .sum();
        out.push((file_element, r * run, run));
        for d in (0..k).rev() {
            index[d] += 1;
            if index[d] < outer[d] {
                break;
            }
            index[d] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_rows_are_one_run_and_blocks_are_one_run_per_row() {
        let g = [4u64, 6];
        assert_eq!(
            runs(&g, &Tile::new(vec![1, 0], vec![2, 6])),
            vec![(6, 0, 12)]
        );
        assert_eq!(
            runs(&g, &Tile::new(vec![1, 2], vec![2, 3])),
            vec![(8, 0, 3), (14, 3, 3)]
        );
        assert!(runs(&g, &Tile::new(vec![0, 0], vec![0, 6])).is_empty());
    }

    #[test]
    fn runs_of_a_3d_block_cover_exactly_its_elements() {
        let g = [3u64, 4, 5];
        let t = Tile::new(vec![1, 1, 0], vec![2, 2, 5]);
        let r = runs(&g, &t);
        assert_eq!(r, vec![(25, 0, 10), (45, 10, 10)]);
        let t = Tile::new(vec![0, 1, 2], vec![3, 3, 2]);
        let mut covered: Vec<u64> = runs(&g, &t)
            .iter()
            .flat_map(|&(f, _, n)| f..f + n)
            .collect();
        covered.sort();
        let mut want = Vec::new();
        for i in 0..3 {
            for j in 1..4 {
                for k in 2..4 {
                    want.push(i * 20 + j * 5 + k);
                }
            }
        }
        assert_eq!(covered, want);
    }
}
