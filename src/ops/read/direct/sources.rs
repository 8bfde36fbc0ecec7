//! Sources opened through HDF5 (the tiles it reads and converts, a few kept open), and the
//! dataset's fill value.

use super::super::mappings::{locate_source, missing_tile};
use super::{DirectReader, OPEN_SOURCES};
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::layout::subfiles::check_stamp;
use crate::platform::hdf5::{Dataset, File};
use crate::status::Result;

impl DirectReader {
    /// Index in `open` of mapping `i`'s source, opening it (and closing the least recently
    /// used one) if needed.
    pub(super) fn source(&mut self, i: usize) -> Result<usize> {
        if let Some(pos) = self.open.iter().position(|(j, _, _)| *j == i) {
            let entry = self.open.remove(pos);
            self.open.insert(0, entry);
            return Ok(0);
        }
        let m = &self.mappings[i];
        let path = locate_source(&self.master, &m.file, &m.region, &self.dataset)?;
        let missing =
            |why: String| missing_tile(&path, &m.region, &self.dataset, &self.master, &why);
        if let Ok(plain) = std::fs::File::open(&path) {
            check_stamp(&plain, &m.file).map_err(missing)?;
        }
        let file = File::open_read(&path)
            .map_err(|e| missing(format!("cannot be read ({})", e.message)))?;
        let dset = Dataset::open(&file, &m.dataset)
            .map_err(|e| missing(format!("cannot be read ({})", e.message)))?;
        let dims = dset.space()?.dims()?;
        let end_fits = m
            .source_offset
            .iter()
            .zip(&m.region.shape)
            .zip(&dims)
            .all(|((o, s), d)| o + s <= *d);
        // An h5tile tile maps its whole source (or its coalesced box): a file holding a larger
        // dataset is not it.
        let whole = self.tile_bytes.is_none()
            || match &m.within {
                None => dims == m.region.shape && m.source_offset.iter().all(|&o| o == 0),
                Some(within) => dims == within.shape,
            };
        if dims.len() != m.region.ndim() || !end_fits || !whole {
            let needs = match whole {
                true => "too small for its mapping".to_string(),
                false => format!(
                    "not the {} of shape {:?} the master names",
                    if m.within.is_some() { "box" } else { "tile" },
                    m.source_shape()
                ),
            };
            return Err(missing(format!(
                "holds a dataset of shape {dims:?}, {needs}"
            )));
        }
        self.open.truncate(OPEN_SOURCES - 1);
        self.open.insert(0, (i, file, dset));
        Ok(0)
    }

    /// Fills `buf` with the dataset's fill value in `dtype` (zero unless the file sets one).
    pub(super) fn prefill(&mut self, want: &Tile, dtype: Dtype, buf: &mut [u8]) -> Result<()> {
        let size = dtype.size();
        let element = self.fill_element(dtype)?;
        let n = (want.volume() as usize * size).min(buf.len());
        let bytes = &mut buf[..n];
        if element.iter().all(|&b| b == 0) {
            bytes.fill(0);
        } else {
            bytes
                .chunks_exact_mut(size)
                .for_each(|e| e.copy_from_slice(&element));
        }
        Ok(())
    }

    /// The dataset's fill value as one element of `dtype`.
    pub(super) fn fill_element(&mut self, dtype: Dtype) -> Result<Vec<u8>> {
        let size = dtype.size();
        if !self.fill.iter().any(|(d, _)| *d == dtype) {
            let mem_type = dtype.hdf5_type()?;
            let element = (self.dcpl.as_ref())
                .and_then(|dcpl| dcpl.fill_value(&mem_type))
                .unwrap_or(vec![0u8; size]);
            self.fill.push((dtype, element));
        }
        let element = &self
            .fill
            .iter()
            .find(|(d, _)| *d == dtype)
            .expect("just added")
            .1;
        Ok(element.clone())
    }
}
