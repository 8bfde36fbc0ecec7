//! Pointing a virtual dataset at sources under other names: HDF5 cannot change a dataset's
//! mappings once it exists, so the dataset is made anew beside the old one (same type,
//! dataspace, fill value and attributes, the mappings in the same order with the new names)
//! and then takes the old one's name. A master copied under another name needs this, since its
//! tile folder's name follows the master's.

use super::{check, cstr, Attribute, Dataset, File, Handle, Plist, Space, Type};
use crate::status::Result;
use hdf5_sys::h5::{hsize_t, H5_index_t, H5_iter_order_t};
use hdf5_sys::h5a::{
    H5A_info_t, H5Acreate2, H5Aget_create_plist, H5Aget_space, H5Aget_type, H5Aiterate2, H5Aopen,
    H5Aread, H5Awrite,
};
use hdf5_sys::h5d::H5D_fill_value_t;
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::{
    H5Pfill_value_defined, H5Pget_attr_creation_order, H5Pget_fill_value,
    H5Pset_attr_creation_order, H5Pset_fill_value, H5P_CRT_ORDER_TRACKED, H5P_DEFAULT,
};
use std::ffi::{c_char, c_void, CStr};

impl File {
    /// Gives the mappings of virtual dataset `name` new source file names: each file name as
    /// HDF5 stores it (a '%' written "%%") becomes `rename(name)` where that returns one.
    /// Returns how many mappings changed; with none, the dataset is left as it was.
    pub fn rename_virtual_sources(
        &self,
        name: &str,
        rename: &dyn Fn(&str) -> Option<String>,
    ) -> Result<usize> {
        let _l = super::lock();
        let old = Dataset::open(self, name)?;
        let old_dcpl = old.create_plist()?;
        let mappings = old_dcpl.virtual_mappings()?;
        let renamed: Vec<Option<String>> = mappings.iter().map(|m| rename(&m.file)).collect();
        let changed = renamed.iter().filter(|r| r.is_some()).count();
        if changed == 0 {
            return Ok(0);
        }
        let dtype = old.dtype()?;
        let dcpl = Plist::dataset_create()?;
        copy_creation_properties(&old_dcpl, &dcpl, &dtype, name)?;
        for (m, new) in mappings.iter().zip(&renamed) {
            let file = new.as_deref().unwrap_or(&m.file);
            // A source selected whole is read back with the virtual dataset's extent, not its
            // own (which HDF5 learns when it opens the source): it is the mapped block's.
            let whole = match (m.source_space.selects_all(), m.virtual_space.single_block()) {
                (true, Some((_, shape))) => Some(Space::simple(&shape)?),
                _ => None,
            };
            let source_space = whole.as_ref().unwrap_or(&m.source_space);
            dcpl.add_virtual_mapping(&m.virtual_space, file, &m.dataset, source_space)?;
        }
        // Beside the old dataset, in its group, under a name no one uses.
        let (group, base) = name.rsplit_once('/').unwrap_or(("", name));
        let temporary = format!("{group}/.{base}.relocated.{}", std::process::id());
        let new = Dataset::create(self, &temporary, &dtype, &old.space()?, &dcpl)?;
        let tracked = creation_order_tracked(&old_dcpl);
        for attribute in attribute_names(old.id(), tracked, name)? {
            copy_attribute(old.id(), new.id(), &attribute, None).map_err(|e| {
                e.context(&format!("cannot copy attribute '{attribute}' of '{name}'"))
            })?;
        }
        drop((old, new));
        self.unlink(name)?;
        let (from, to) = (cstr(&temporary), cstr(name));
        check(
            unsafe {
                hdf5_sys::h5l::H5Lmove(
                    self.id(),
                    from.as_ptr(),
                    self.id(),
                    to.as_ptr(),
                    H5P_DEFAULT,
                    H5P_DEFAULT,
                )
            },
            || format!("cannot rename '{temporary}' to '{name}'"),
        )?;
        Ok(changed)
    }
}

/// Copies to `dcpl` what of `old` a virtual dataset keeps: a fill value set by its writer (in
/// the dataset's type `dtype`) and whether its attributes' creation order is tracked.
pub(super) fn copy_creation_properties(
    old: &Plist,
    dcpl: &Plist,
    dtype: &Type,
    name: &str,
) -> Result<()> {
    let what = || format!("cannot copy the creation properties of '{name}'");
    let mut fill = H5D_fill_value_t::H5D_FILL_VALUE_DEFAULT;
    check(unsafe { H5Pfill_value_defined(old.id(), &mut fill) }, what)?;
    if fill == H5D_fill_value_t::H5D_FILL_VALUE_USER_DEFINED {
        let mut element = vec![0u8; dtype.size()];
        let (t, e) = (dtype.id(), element.as_mut_ptr().cast::<c_void>());
        check(unsafe { H5Pget_fill_value(old.id(), t, e) }, what)?;
        check(unsafe { H5Pset_fill_value(dcpl.id(), t, e) }, what)?;
    }
    let mut order = 0;
    check(
        unsafe { H5Pget_attr_creation_order(old.id(), &mut order) },
        what,
    )?;
    if order != 0 {
        check(
            unsafe { H5Pset_attr_creation_order(dcpl.id(), order) },
            what,
        )?;
    }
    Ok(())
}

/// Whether the objects made with creation properties `cpl` track their attributes' creation
/// order.
pub(super) fn creation_order_tracked(cpl: &Plist) -> bool {
    let mut order = 0;
    let got = unsafe { H5Pget_attr_creation_order(cpl.id(), &mut order) };
    got >= 0 && order & H5P_CRT_ORDER_TRACKED != 0
}

/// The names of the attributes of the object `loc` (called `name` in messages), in creation
/// order where it is tracked.
pub(super) fn attribute_names(loc: hid_t, tracked: bool, name: &str) -> Result<Vec<String>> {
    unsafe extern "C" fn collect(
        _loc: hid_t,
        attribute: *const c_char,
        _info: *const H5A_info_t,
        data: *mut c_void,
    ) -> hdf5_sys::h5::herr_t {
        let names = &mut *(data as *mut Vec<String>);
        names.push(CStr::from_ptr(attribute).to_string_lossy().into_owned());
        0
    }
    let index = match tracked {
        true => H5_index_t::H5_INDEX_CRT_ORDER,
        false => H5_index_t::H5_INDEX_NAME,
    };
    let mut names: Vec<String> = Vec::new();
    let mut at: hsize_t = 0;
    check(
        unsafe {
            H5Aiterate2(
                loc,
                index,
                H5_iter_order_t::H5_ITER_INC,
                &mut at,
                Some(collect),
                &mut names as *mut Vec<String> as *mut c_void,
            )
        },
        || format!("cannot list the attributes of '{name}'"),
    )?;
    Ok(names)
}

/// Copies attribute `name` of the object `from` to the object `to`: its type (or `as_type`,
/// the copy in `to`'s file of the named datatype it is of), dataspace, value and name encoding
/// as stored.
pub(super) fn copy_attribute(
    from: hid_t,
    to: hid_t,
    name: &str,
    as_type: Option<&Type>,
) -> Result<()> {
    let what = || format!("cannot copy attribute '{name}'");
    let c = cstr(name);
    let attr = Attribute::from_id(unsafe { H5Aopen(from, c.as_ptr(), H5P_DEFAULT) }, what)?;
    let acpl = Plist::from_id(unsafe { H5Aget_create_plist(attr.id()) }, what)?;
    let dtype = Type::from_id(unsafe { H5Aget_type(attr.id()) }, what)?;
    let space = Space::from_id(unsafe { H5Aget_space(attr.id()) }, what)?;
    let count = check(
        unsafe { hdf5_sys::h5s::H5Sget_simple_extent_npoints(space.id()) },
        what,
    )? as usize;
    let mut value = vec![0u8; count * dtype.size()];
    let buf = value.as_mut_ptr().cast::<c_void>();
    check(unsafe { H5Aread(attr.id(), dtype.id(), buf) }, what)?;
    let copy = Attribute::from_id(
        unsafe {
            H5Acreate2(
                to,
                c.as_ptr(),
                as_type.unwrap_or(&dtype).id(),
                space.id(),
                acpl.id(),
                H5P_DEFAULT,
            )
        },
        what,
    );
    let written = copy
        .and_then(|copy| check(unsafe { H5Awrite(copy.id(), dtype.id(), buf) }, what).map(|_| ()));
    // Variable-length parts were allocated by HDF5 when read (nothing to free otherwise).
    if unsafe { hdf5_sys::h5t::H5Treclaim(dtype.id(), space.id(), H5P_DEFAULT, buf) } < 0 {
        super::take_error_stack();
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::hdf5::Attributes;

    #[test]
    fn sources_are_renamed_and_everything_else_kept() {
        // The raw HDF5 call below must not run beside other tests' calls.
        let _l = super::super::lock();
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("m.h5");
        let file = File::create_with(&path, &Plist::file_access_master().unwrap()).unwrap();
        let t = crate::dtype::Dtype::Int32.hdf5_type().unwrap();
        let dcpl = Plist::dataset_create().unwrap();
        for (k, (file_name, offset)) in [("a/x.h5", 0u64), ("b/y.h5", 2)].iter().enumerate() {
            let vspace = Space::simple(&[4]).unwrap();
            vspace.select_block(&[*offset], &[2]).unwrap();
            let source = format!("/d{k}");
            dcpl.add_virtual_mapping(&vspace, file_name, &source, &Space::simple(&[2]).unwrap())
                .unwrap();
        }
        let fill = 7i32.to_ne_bytes();
        let what = || String::new();
        check(
            unsafe { H5Pset_fill_value(dcpl.id(), t.id(), fill.as_ptr().cast()) },
            what,
        )
        .unwrap();
        let dset =
            Dataset::create(&file, "/g/v", &t, &Space::simple(&[4]).unwrap(), &dcpl).unwrap();
        dset.write_u64_attribute("n", &[2], &[5, 6]).unwrap();
        drop(dset);
        // The mappings as stored, not as still in memory.
        file.close().unwrap();
        let file = File::open_write_with(&path, &Plist::file_access_master().unwrap()).unwrap();
        let rename = |f: &str| f.strip_prefix("a/").map(|rest| format!("c/{rest}"));
        assert_eq!(file.rename_virtual_sources("/g/v", &rename).unwrap(), 1);
        assert_eq!(file.dataset_paths().unwrap(), ["/g/v"]);
        let dset = Dataset::open(&file, "/g/v").unwrap();
        let mappings = dset.create_plist().unwrap().virtual_mappings().unwrap();
        let files: Vec<&str> = mappings.iter().map(|m| m.file.as_str()).collect();
        assert_eq!(files, ["c/x.h5", "b/y.h5"]);
        assert_eq!(mappings[1].dataset, "/d1");
        assert_eq!(dset.u64_attribute("n"), Some((vec![2], vec![5, 6])));
        assert_eq!(
            dset.create_plist().unwrap().fill_value(&t),
            Some(fill.to_vec())
        );
        assert_eq!(file.rename_virtual_sources("/g/v", &|_| None).unwrap(), 0);
    }
}
