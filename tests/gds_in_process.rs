//! The h5tile_gds driver registered in-process by the core (the plugin's code linked as a
//! Rust library) opens files without any plugin path, and a bad configuration fails the open.
//! Its own test binary: it registers a process-wide driver, and no other test shares the
//! process.

use h5tile::dtype::Dtype;
use h5tile::hdf5::gds::{driver, file_access};
use h5tile::hdf5::{cstr, Dataset, File, Plist, Space};
use hdf5_sys::h5f::{H5Fcreate, H5Fget_access_plist, H5F_ACC_TRUNC};
use hdf5_sys::h5p::{H5Pget_driver, H5P_DEFAULT};
use hdf5_sys::h5s::H5S_ALL;

#[test]
fn files_open_through_the_in_process_driver_without_a_plugin_path() {
    assert!(std::env::var_os("HDF5_PLUGIN_PATH").is_none());
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("gds.h5");
    let _l = h5tile::hdf5::lock();
    let fapl = file_access("threads=2,block=4KiB").unwrap();
    let id = unsafe {
        H5Fcreate(
            cstr(path.to_str().unwrap()).as_ptr(),
            H5F_ACC_TRUNC,
            H5P_DEFAULT,
            fapl.id(),
        )
    };
    let file = File::from_id(id, String::new).unwrap();
    let used = Plist::from_id(unsafe { H5Fget_access_plist(file.id()) }, String::new).unwrap();
    assert_eq!(unsafe { H5Pget_driver(used.id()) }, driver().unwrap());
    let t = Dtype::Int64.hdf5_type().unwrap();
    let values: Vec<i64> = (0..10_000).collect();
    let dcpl = Plist::create(*hdf5_sys::h5p::H5P_CLS_DATASET_CREATE).unwrap();
    let dset = Dataset::create(
        file.id(),
        "/v",
        &t,
        &Space::simple(&[10_000]).unwrap(),
        &dcpl,
    )
    .unwrap();
    unsafe { dset.write(&t, H5S_ALL, H5S_ALL, values.as_ptr().cast()) }.unwrap();
    drop(dset);
    file.close().unwrap();
    // Written through the driver, read back with HDF5's default one.
    let file = File::open_read(&path).unwrap();
    let dset = Dataset::open(file.id(), "/v").unwrap();
    let mut back = vec![0i64; 10_000];
    unsafe { dset.read(&t, H5S_ALL, H5S_ALL, back.as_mut_ptr().cast()) }.unwrap();
    assert_eq!(back, values);
    // The configuration is checked when a file opens: a bad one fails the open.
    let bad = file_access("speed=fast").unwrap();
    let other = cstr(d.path().join("bad.h5").to_str().unwrap());
    let id = unsafe { H5Fcreate(other.as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, bad.id()) };
    assert!(id < 0);
    assert!(h5tile::hdf5::take_error_stack().contains("unknown key 'speed'"));
    assert!(!d.path().join("bad.h5").exists());
}
