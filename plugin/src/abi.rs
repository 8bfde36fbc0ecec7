//! The HDF5 virtual-file-driver ABI, written out here because the plugin must not link
//! libhdf5 (see `host`). The layouts are those of `H5FDdevelop.h`/`H5FDpublic.h`, identical in
//! HDF5 1.14 and 2.x (`H5FD_CLASS_VERSION` 1).

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void};

pub type hid_t = i64;
pub type herr_t = c_int;
pub type haddr_t = u64;
pub type hsize_t = u64;
/// `H5FD_mem_t` (an enum in C: int-sized).
pub type H5FD_mem_t = c_int;

pub const HADDR_UNDEF: haddr_t = u64::MAX;
/// Largest address a POSIX `off_t` reaches, as sec2 declares it.
pub const MAXADDR: haddr_t = (1u64 << 63) - 1;

pub const H5FD_CLASS_VERSION: c_uint = 1;
/// Values 256–511 are for drivers not registered with The HDF Group (GDS is 512).
pub const H5TILE_GDS_VALUE: c_int = 373;
/// `H5PL_TYPE_VFD`.
pub const H5PL_TYPE_VFD: c_int = 2;
/// `H5F_CLOSE_WEAK`.
pub const H5F_CLOSE_WEAK: c_int = 1;

pub const H5F_ACC_RDWR: c_uint = 0x0001;
pub const H5F_ACC_TRUNC: c_uint = 0x0002;
pub const H5F_ACC_EXCL: c_uint = 0x0004;
pub const H5F_ACC_CREAT: c_uint = 0x0010;

pub const H5FD_MEM_NOLIST: H5FD_mem_t = -1;
pub const H5FD_MEM_DRAW: H5FD_mem_t = 3;
pub const H5FD_MEM_NTYPES: usize = 7;
/// Metadata and raw data in separate free-list pools, as sec2 does.
pub const H5FD_FLMAP_DICHOTOMY: [H5FD_mem_t; H5FD_MEM_NTYPES] = [1, 1, 1, 3, 3, 1, 1];

pub const H5FD_FEAT_AGGREGATE_METADATA: c_ulong = 0x0001;
pub const H5FD_FEAT_ACCUMULATE_METADATA: c_ulong = 0x0002 | 0x0004;
pub const H5FD_FEAT_DATA_SIEVE: c_ulong = 0x0008;
pub const H5FD_FEAT_AGGREGATE_SMALLDATA: c_ulong = 0x0010;
pub const H5FD_FEAT_POSIX_COMPAT_HANDLE: c_ulong = 0x0080;
pub const H5FD_FEAT_SUPPORTS_SWMR_IO: c_ulong = 0x1000;
pub const H5FD_FEAT_DEFAULT_VFD_COMPATIBLE: c_ulong = 0x8000;

pub const H5FD_CTL_FAIL_IF_UNKNOWN_FLAG: u64 = 0x0001;

/// The public part every driver's file struct starts with (`struct H5FD_t`); HDF5 fills it.
#[repr(C)]
pub struct H5FD_t {
    pub driver_id: hid_t,
    pub cls: *const H5FD_class_t,
    pub fileno: c_ulong,
    pub access_flags: c_uint,
    pub feature_flags: c_ulong,
    pub maxaddr: haddr_t,
    pub base_addr: haddr_t,
    pub threshold: hsize_t,
    pub alignment: hsize_t,
    pub paged_aggr: bool,
}

type Open = unsafe extern "C" fn(*const c_char, c_uint, hid_t, haddr_t) -> *mut H5FD_t;
type ReadVector = unsafe extern "C" fn(
    *mut H5FD_t,
    hid_t,
    u32,
    *mut H5FD_mem_t,
    *mut haddr_t,
    *mut usize,
    *mut *mut c_void,
) -> herr_t;
type WriteVector = unsafe extern "C" fn(
    *mut H5FD_t,
    hid_t,
    u32,
    *mut H5FD_mem_t,
    *mut haddr_t,
    *mut usize,
    *mut *const c_void,
) -> herr_t;
type Selection = unsafe extern "C" fn(
    *mut H5FD_t,
    H5FD_mem_t,
    hid_t,
    usize,
    *mut hid_t,
    *mut hid_t,
    *mut haddr_t,
    *mut usize,
    *mut c_void,
) -> herr_t;

/// `H5FD_class_t`: the driver's table of callbacks.
#[repr(C)]
pub struct H5FD_class_t {
    pub version: c_uint,
    pub value: c_int,
    pub name: *const c_char,
    pub maxaddr: haddr_t,
    pub fc_degree: c_int,
    pub terminate: Option<unsafe extern "C" fn() -> herr_t>,
    pub sb_size: Option<unsafe extern "C" fn(*mut H5FD_t) -> hsize_t>,
    pub sb_encode: Option<unsafe extern "C" fn(*mut H5FD_t, *mut c_char, *mut u8) -> herr_t>,
    pub sb_decode: Option<unsafe extern "C" fn(*mut H5FD_t, *const c_char, *const u8) -> herr_t>,
    pub fapl_size: usize,
    pub fapl_get: Option<unsafe extern "C" fn(*mut H5FD_t) -> *mut c_void>,
    pub fapl_copy: Option<unsafe extern "C" fn(*const c_void) -> *mut c_void>,
    pub fapl_free: Option<unsafe extern "C" fn(*mut c_void) -> herr_t>,
    pub dxpl_size: usize,
    pub dxpl_copy: Option<unsafe extern "C" fn(*const c_void) -> *mut c_void>,
    pub dxpl_free: Option<unsafe extern "C" fn(*mut c_void) -> herr_t>,
    pub open: Option<Open>,
    pub close: Option<unsafe extern "C" fn(*mut H5FD_t) -> herr_t>,
    pub cmp: Option<unsafe extern "C" fn(*const H5FD_t, *const H5FD_t) -> c_int>,
    pub query: Option<unsafe extern "C" fn(*const H5FD_t, *mut c_ulong) -> herr_t>,
    pub get_type_map: Option<unsafe extern "C" fn(*const H5FD_t, *mut H5FD_mem_t) -> herr_t>,
    pub alloc: Option<unsafe extern "C" fn(*mut H5FD_t, H5FD_mem_t, hid_t, hsize_t) -> haddr_t>,
    pub free:
        Option<unsafe extern "C" fn(*mut H5FD_t, H5FD_mem_t, hid_t, haddr_t, hsize_t) -> herr_t>,
    pub get_eoa: Option<unsafe extern "C" fn(*const H5FD_t, H5FD_mem_t) -> haddr_t>,
    pub set_eoa: Option<unsafe extern "C" fn(*mut H5FD_t, H5FD_mem_t, haddr_t) -> herr_t>,
    pub get_eof: Option<unsafe extern "C" fn(*const H5FD_t, H5FD_mem_t) -> haddr_t>,
    pub get_handle: Option<unsafe extern "C" fn(*mut H5FD_t, hid_t, *mut *mut c_void) -> herr_t>,
    pub read: Option<
        unsafe extern "C" fn(*mut H5FD_t, H5FD_mem_t, hid_t, haddr_t, usize, *mut c_void) -> herr_t,
    >,
    pub write: Option<
        unsafe extern "C" fn(
            *mut H5FD_t,
            H5FD_mem_t,
            hid_t,
            haddr_t,
            usize,
            *const c_void,
        ) -> herr_t,
    >,
    pub read_vector: Option<ReadVector>,
    pub write_vector: Option<WriteVector>,
    pub read_selection: Option<Selection>,
    pub write_selection: Option<Selection>,
    pub flush: Option<unsafe extern "C" fn(*mut H5FD_t, hid_t, bool) -> herr_t>,
    pub truncate: Option<unsafe extern "C" fn(*mut H5FD_t, hid_t, bool) -> herr_t>,
    pub lock: Option<unsafe extern "C" fn(*mut H5FD_t, bool) -> herr_t>,
    pub unlock: Option<unsafe extern "C" fn(*mut H5FD_t) -> herr_t>,
    pub del: Option<unsafe extern "C" fn(*const c_char, hid_t) -> herr_t>,
    pub ctl: Option<
        unsafe extern "C" fn(*mut H5FD_t, u64, u64, *const c_void, *mut *mut c_void) -> herr_t,
    >,
    pub fl_map: [H5FD_mem_t; H5FD_MEM_NTYPES],
}

// The class table is immutable and only read by HDF5.
unsafe impl Sync for H5FD_class_t {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_c_headers_on_x86_64() {
        // offsetof(H5FD_class_t, fl_map) and sizeof(H5FD_t) as gcc computes them for HDF5 2.2.0
        // and 1.14.5 (checked against the headers with a C program).
        assert_eq!(std::mem::size_of::<H5FD_t>(), 80);
        assert_eq!(std::mem::offset_of!(H5FD_class_t, open), 120);
        assert_eq!(std::mem::offset_of!(H5FD_class_t, fl_map), 304);
        assert_eq!(std::mem::size_of::<H5FD_class_t>(), 336);
    }
}
