//! A restart as short as the save: one collective call reads every field's tile of a
//! checkpoint and its attributes, all from one version of the file (`read::on_one_version`: a
//! write that replaces the file meanwhile makes the whole restart start over, so no field comes
//! from another version than the attributes).

use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::ops::checkpoint::read_attribute;
use crate::ops::read::{self, ReadOptions};
use crate::platform::comm::Comm;
use crate::platform::device::BufferMut;
use crate::status::*;
use std::path::Path;

/// One field's tile a rank reads: `tile` of `dataset`, as `dtype`, into `buf`.
pub struct FieldRead<'a> {
    pub dataset: String,
    pub dtype: Dtype,
    pub tile: Tile,
    pub buf: BufferMut<'a>,
}

/// One attribute every rank reads: `name` of `object` as `count` values of `dtype`.
pub struct AttributeRead {
    pub object: String,
    pub name: String,
    pub dtype: Dtype,
    pub count: usize,
}

/// Reads `fields` (this rank's tiles) and `attributes` of the file at `path`, collectively over
/// `comm`, all from one version of the file; returns each attribute's bytes, in order. A
/// failure on any rank fails every rank, naming the field or attribute.
pub fn read(
    comm: &Comm,
    path: &Path,
    fields: &mut [FieldRead],
    attributes: &[AttributeRead],
    options: ReadOptions,
) -> Result<Vec<Vec<u8>>> {
    read::on_one_version(comm, path, || {
        for f in fields.iter_mut() {
            read::read_rank(
                path,
                &f.dataset,
                f.dtype,
                &f.tile,
                f.buf.reborrow(),
                options,
            )
            .map_err(|e| e.context(&format!("field '{}'", f.dataset)))?;
        }
        // Each rank reads them itself (it opened the file for its fields already), so that
        // they come from the version its fields did.
        attributes
            .iter()
            .map(|a| {
                read_attribute(path, &a.object, &a.name, a.dtype, a.count)
                    .map_err(|e| e.context(&format!("attribute '{}' of '{}'", a.name, a.object)))
            })
            .collect()
    })
}
