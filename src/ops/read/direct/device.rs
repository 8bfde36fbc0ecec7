//! Reads into device memory straight from the tile files' recorded bytes (h5tile_gds).

use super::super::mappings::{locate_source, missing_tile};
use super::DirectReader;
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::layout::subfiles::check_stamp;
use crate::layout::vds::NO_OFFSET;
use crate::platform::device::{DeviceFile, DevicePtr, Route};
use crate::platform::hdf5;
use crate::status::{Error, Result, H5TILE_ERR_CUDA};
use std::path::PathBuf;

impl DirectReader {
    /// Reads `want` (stored as `dtype`) into device memory `dst` straight from the tile files'
    /// recorded bytes, through the h5tile_gds device paths. Returns false, having read nothing,
    /// where it cannot: the master records no tile bytes, a tile file has changed, or elements
    /// to fill would need a fill value other than zero, or the tiles' checksums are to be
    /// checked. Then the caller stages.
    pub fn read_device(
        &mut self,
        want: &Tile,
        dtype: Dtype,
        dst: DevicePtr,
        route: &Route,
        fill_missing: bool,
    ) -> Result<bool> {
        let _l = hdf5::lock();
        let Some(tile_bytes) = self.tile_bytes.clone() else {
            return Ok(false);
        };
        // Checksummed bytes are checked in host memory: the caller stages them there.
        let checked =
            |i: usize| self.checks(i) && want.intersection(&self.mappings[i].region).is_some();
        if (0..self.mappings.len()).any(checked) {
            return Ok(false);
        }
        if !matches!(&self.stored, Some((d, _)) if *d == dtype) {
            return Ok(false);
        }
        // Every part's file first: nothing is read unless all of it can be read this way.
        let mut plan: Vec<(usize, Tile, PathBuf)> = Vec::new();
        let mut missing = false;
        for (i, m) in self.mappings.iter().enumerate() {
            let Some(common) = want.intersection(&m.region) else {
                continue;
            };
            if tile_bytes[i].data_offset == NO_OFFSET {
                return Ok(false);
            }
            let path = locate_source(&self.master, &m.file, &m.region, &self.dataset);
            let size = path
                .as_ref()
                .ok()
                .and_then(|p| std::fs::metadata(p).ok())
                .map(|md| md.len());
            if let Ok(p) = &path {
                let stale = std::fs::File::open(p)
                    .ok()
                    .and_then(|f| check_stamp(&f, &m.file).err());
                match stale {
                    Some(_) if fill_missing => {
                        missing = true;
                        continue;
                    }
                    Some(why) => {
                        return Err(missing_tile(
                            p,
                            &m.region,
                            &self.dataset,
                            &self.master,
                            &why,
                        ))
                    }
                    None => {}
                }
            }
            match (path, size) {
                (Ok(p), Some(size)) if size == tile_bytes[i].file_size => plan.push((i, common, p)),
                (Ok(_), Some(_)) => return Ok(false),
                _ if fill_missing => missing = true,
                (Ok(p), None) => {
                    return Err(missing_tile(
                        &p,
                        &m.region,
                        &self.dataset,
                        &self.master,
                        "does not exist",
                    ))
                }
                (Err(e), _) => return Err(e),
            }
        }
        let covered: u128 = plan.iter().map(|(_, c, _)| c.volume()).sum();
        let elem = dtype.size();
        if missing || covered < want.volume() {
            if self.fill_element(dtype)?.iter().any(|&b| b != 0) {
                return Ok(false);
            }
            dst.zero(want.volume() as usize * elem).map_err(|e| {
                Error::new(H5TILE_ERR_CUDA, format!("cannot zero device memory: {e}"))
            })?;
        }
        for (i, common, path) in plan {
            let mut file = DeviceFile::open(&path, route)?;
            let place = self.mappings[i].place(tile_bytes[i].data_offset, elem);
            for (s, d, len) in self.mappings[i].runs(&common, want, elem) {
                let mut d = d as usize;
                for (at, n) in place.ranges(s, s + len as u64) {
                    file.read(at, dst.offset(d), n)?;
                    d += n;
                }
            }
        }
        Ok(true)
    }
}
