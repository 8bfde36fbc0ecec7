//! The attributes a listing shows of a file and of its datasets: the users', not h5tile's
//! own records of tiles nor HDF5's and netCDF's bookkeeping of dimensions.

use crate::platform::hdf5::{self, File, ListedValue};
use crate::status::Result;
use std::path::Path;

/// Attributes of h5tile's own (where tiles are, checksums, extremes, how a layout was chosen).
const OWN_PREFIX: &str = "h5tile_";

/// Bookkeeping of dimension scales (HDF5's), of dimensions (netCDF-4's, Zarr's) and netCDF's
/// own records: what tools that write them show as dimensions, not attributes.
const BOOKKEEPING: [&str; 7] = [
    "DIMENSION_LIST",
    "REFERENCE_LIST",
    "CLASS",
    "NAME",
    "_ARRAY_DIMENSIONS",
    "_NCProperties",
    "_nc3_strict",
];

/// Whether a listing shows the attribute `name`.
fn shown(name: &str) -> bool {
    !(name.starts_with(OWN_PREFIX) || name.starts_with("_Netcdf4") || BOOKKEEPING.contains(&name))
}

/// The attributes of `object` ("/" or a group or dataset path) of `file` a listing shows, in
/// name order, each with its value. Where they cannot be listed at all, one entry named
/// "(attributes)" says why: a listing of the rest goes on.
pub(super) fn listed_attributes(file: &File, object: &str) -> Vec<(String, ListedValue)> {
    match file.listed_attributes(object, &shown) {
        Ok(listed) => listed,
        Err(e) => vec![("(attributes)".into(), ListedValue::Unreadable(e.message))],
    }
}

/// Above this many tiles a dataset's attributes are not listed: HDF5 reads every attribute of
/// an object to list them, h5tile's records of each tile included (at 65,536 tiles that took
/// `h5tile ls` from 62 to 319 MiB).
const LISTED_UP_TO_TILES: usize = 4096;

/// `listed_attributes` of the dataset `name`, described as `info`; for one of more than
/// `LISTED_UP_TO_TILES` tiles, one entry saying why they are not listed.
pub(super) fn of_dataset(
    file: &File,
    name: &str,
    info: &super::DatasetInfo,
) -> Vec<(String, ListedValue)> {
    match info.tiled().map(|v| v.tiles.len()) {
        Some(n) if n > LISTED_UP_TO_TILES => vec![(
            "(attributes)".into(),
            ListedValue::Unreadable(format!(
                "not listed for a dataset of {n} tiles (more than {LISTED_UP_TO_TILES}): HDF5 \
                 would read h5tile's records of every tile; h5py's attrs lists them"
            )),
        )],
        _ => listed_attributes(file, name),
    }
}

/// The attributes of the file at `path` itself (of its root group) a listing shows, in name
/// order: a checkpoint's step and time, say.
pub fn root_attributes(path: &Path) -> Result<Vec<(String, ListedValue)>> {
    let _l = hdf5::lock();
    let file = super::open_file(path)?;
    Ok(listed_attributes(&file, "/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;
    use crate::platform::hdf5::{AttributeValue, ListedNumber};

    #[test]
    fn bookkeeping_is_left_out() {
        for name in [
            "h5tile_tile_bytes",
            "DIMENSION_LIST",
            "_Netcdf4Dimid",
            "CLASS",
        ] {
            assert!(!shown(name), "{name}");
        }
        for name in ["step", "units", "_FillValue", "h5tile"] {
            assert!(shown(name), "{name}");
        }
    }

    #[test]
    fn the_root_and_a_dataset_list_their_attributes() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("a.h5");
        crate::testkit::write_grid(&path, "/g", Default::default(), crate::testkit::grid_value);
        {
            let _l = hdf5::lock();
            let file = File::open_write(&path).unwrap();
            let numbers = |dtype: Dtype, bytes: Vec<u8>| AttributeValue::Numbers { dtype, bytes };
            file.set_attribute(
                "/",
                "step",
                &numbers(Dtype::Int64, 50i64.to_ne_bytes().to_vec()),
            )
            .unwrap();
            file.set_attribute("/", "h5tile_x", &numbers(Dtype::UInt8, vec![1]))
                .unwrap();
            file.set_attribute("/g", "units", &AttributeValue::Text("K".into()))
                .unwrap();
        }
        let root = root_attributes(&path).unwrap();
        let step = ListedValue::Numbers {
            values: vec![ListedNumber::Int(50)],
            array: false,
        };
        assert_eq!(root, [("step".to_string(), step)]);
        let info = super::super::describe(&path, None).unwrap();
        let units = ListedValue::Texts {
            values: vec!["K".into()],
            array: false,
        };
        assert_eq!(info[0].attributes, [("units".to_string(), units)]);
    }
}
