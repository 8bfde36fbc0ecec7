//! Where a read takes a dataset's elements from, chosen once when the dataset is opened: a
//! virtual dataset whose mappings are plain boxes is read from its sources by h5tile
//! (`DirectReader`); any other dataset by HDF5, a virtual one after checking that the sources
//! the read needs are there. Device memory is filled straight from the file where the bytes'
//! places are known (h5tile's tiles, contiguous storage), through host memory otherwise.

use super::contiguous::ContiguousBytes;
use super::direct::DirectReader;
use super::mappings::{block_mappings, check_sources};
use super::tile_checks::TileChecks;
use super::{OpenDataset, Opened, ReadOptions};
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::layout::runs::tile_runs;
use crate::ops::tile_io::byte_reads::ReadCounts;
use crate::platform::device::{DeviceFile, DevicePtr, Route};
use crate::platform::hdf5::{self, Space, Storage};
use crate::status::Result;
use std::path::Path;

pub(crate) enum Source {
    /// h5tile reads the sources of a virtual dataset itself.
    Direct(Box<DirectReader>),
    /// HDF5 reads the dataset (any layout); for the single-file layout, with the recorded
    /// checksums of the blocks each read touches checked beside. Unchecked contiguous bytes
    /// are read on the I/O threads where HDF5 would copy them unchanged.
    Hdf5(
        OpenDataset,
        Option<Box<TileChecks>>,
        Option<Box<ContiguousBytes>>,
    ),
}

impl Source {
    /// The source for reading `dataset` of `path` (opened as `open`, of rank `ndim`) with
    /// `options`. `region` is the part the reads will touch, whose virtual sources are checked
    /// unless `options.fill_missing` (None: nothing to check).
    pub fn open(
        path: &Path,
        dataset: &str,
        open: Opened,
        ndim: usize,
        options: &ReadOptions,
        region: Option<&Tile>,
    ) -> Result<Source> {
        let fill_missing = options.fill_missing;
        let verify = !options.no_verify;
        let _l = hdf5::lock();
        let open = match open {
            Opened::Dataset(open) => open,
            Opened::Indexed(index, file) => {
                let direct = DirectReader::indexed(path, (&file, dataset), *index, verify)?;
                return Ok(Source::Direct(Box::new(direct)));
            }
        };
        if open.dataset.storage()? == Storage::Virtual {
            if let Some(mappings) = block_mappings(&open.dataset, ndim)? {
                let direct = DirectReader::new(path, dataset, &open.dataset, mappings, verify)?;
                return Ok(Source::Direct(Box::new(direct)));
            }
            if let (false, Some(region)) = (fill_missing, region) {
                check_sources(path, dataset, &open.dataset, region)?;
            }
        }
        let checks = match options.no_verify {
            true => None,
            false => TileChecks::read(path, dataset, &open.dataset).map(Box::new),
        };
        let bytes = match checks {
            None => ContiguousBytes::of(path, &open.dataset).map(Box::new),
            Some(_) => None,
        };
        Ok(Source::Hdf5(open, checks, bytes))
    }

    /// Reads `tile` as `dtype` into host memory `buf` (dense, row-major).
    pub fn read(
        &mut self,
        tile: &Tile,
        dtype: Dtype,
        buf: &mut [u8],
        fill_missing: bool,
    ) -> Result<()> {
        match self {
            Source::Direct(direct) => direct.read(tile, dtype, buf, fill_missing),
            Source::Hdf5(open, checks, bytes) => {
                if let Some(checks) = checks {
                    if checks.read_checked(tile, dtype, buf)? {
                        return Ok(());
                    }
                }
                if bytes.as_ref().is_some_and(|b| b.read(tile, dtype, buf)) {
                    return Ok(());
                }
                {
                    let _l = hdf5::lock();
                    let file_space = open.dataset.space()?;
                    file_space.select_block(&tile.offset, &tile.shape)?;
                    let mem_space = Space::simple(&tile.shape)?;
                    let mem_type = dtype.hdf5_type()?;
                    open.dataset
                        .read_into(&mem_type, &mem_space, &file_space, buf)?;
                }
                checks.as_mut().map_or(Ok(()), |c| c.check(tile))
            }
        }
    }

    /// What this source's reads of tile bytes have cost so far.
    pub fn counts(&self) -> ReadCounts {
        match self {
            Source::Direct(direct) => direct.counts(),
            Source::Hdf5(_, checks, _) => checks.as_ref().map(|c| c.counts()).unwrap_or_default(),
        }
    }

    /// Reads `tile` (stored as `dtype`) into device memory `dst` straight from the file, where
    /// the places of its bytes are known: h5tile's tile files, contiguous storage. Returns
    /// false, having read nothing, where they are not; the caller then goes through host memory.
    pub fn read_device(
        &mut self,
        path: &Path,
        tile: &Tile,
        dtype: Dtype,
        dst: DevicePtr,
        route: &Route,
        fill_missing: bool,
    ) -> Result<bool> {
        match self {
            Source::Direct(direct) => direct.read_device(tile, dtype, dst, route, fill_missing),
            Source::Hdf5(open, checks, _) => {
                let Storage::Contiguous(Some(offset)) = open.dataset.storage()? else {
                    return Ok(false);
                };
                // Checksummed bytes are checked in host memory: the caller stages them there.
                if checks.is_some() {
                    return Ok(false);
                }
                let dims = open.dataset.space()?.dims()?;
                let mut file = DeviceFile::open(path, route)?;
                for (s, d, len) in tile_runs(&dims, tile, dtype.size()) {
                    file.read(offset + s, dst.offset(d as usize), len)?;
                }
                Ok(true)
            }
        }
    }
}
