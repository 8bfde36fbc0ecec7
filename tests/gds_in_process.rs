//! The h5tile_gds driver registered in-process by the core (the plugin's code linked as a
//! Rust library) opens files without any plugin path, and a bad configuration fails the open.
//! Its own test binary: it registers a process-wide driver, and no other test shares the
//! process.

use h5tile::internals::hdf5::gds::{driver, file_access};
use h5tile::internals::hdf5::{cstr, Dataset, File, Handle, Plist, Space};
use h5tile::internals::Dtype;
use hdf5_sys::h5f::{
    H5Fcreate, H5Fget_access_plist, H5Fget_vfd_handle, H5Fopen, H5F_ACC_RDONLY, H5F_ACC_TRUNC,
};
use hdf5_sys::h5p::{H5Pget_driver, H5P_DEFAULT};

#[test]
fn files_open_through_the_in_process_driver_without_a_plugin_path() {
    assert!(std::env::var_os("HDF5_PLUGIN_PATH").is_none());
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("gds.h5");
    let _l = h5tile::internals::hdf5::lock();
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
    let dcpl = Plist::dataset_create().unwrap();
    let dset = Dataset::create(&file, "/v", &t, &Space::simple(&[10_000]).unwrap(), &dcpl).unwrap();
    unsafe { dset.write(&t, None, None, values.as_ptr().cast()) }.unwrap();
    drop(dset);
    file.close().unwrap();
    // Written through the driver, read back with HDF5's default one.
    let file = File::open_read(&path).unwrap();
    let dset = Dataset::open(&file, "/v").unwrap();
    let mut back = vec![0i64; 10_000];
    unsafe { dset.read(&t, None, None, back.as_mut_ptr().cast()) }.unwrap();
    assert_eq!(back, values);
    // The configuration is checked when a file opens: a bad one fails the open.
    let bad = file_access("speed=fast").unwrap();
    let other = cstr(d.path().join("bad.h5").to_str().unwrap());
    let id = unsafe { H5Fcreate(other.as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, bad.id()) };
    assert!(id < 0);
    assert!(h5tile::internals::hdf5::take_error_stack().contains("unknown key 'speed'"));
    assert!(!d.path().join("bad.h5").exists());
}

/// `H5Fget_vfd_handle` through the driver gives what its POSIX-compatible feature promises:
/// the address of the open descriptor, which `fstat`s to the file's inode.
#[test]
fn the_vfd_handle_is_the_files_descriptor() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("handle.h5");
    let _l = h5tile::internals::hdf5::lock();
    let fapl = file_access("").unwrap();
    let c_path = cstr(path.to_str().unwrap());
    let id = unsafe { H5Fcreate(c_path.as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id()) };
    let file = File::from_id(id, String::new).unwrap();
    let mut handle: *mut std::ffi::c_void = std::ptr::null_mut();
    let got = unsafe { H5Fget_vfd_handle(file.id(), fapl.id(), &mut handle) };
    assert!(got >= 0 && !handle.is_null());
    let fd = unsafe { *(handle as *const std::ffi::c_int) };
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::fstat(fd, &mut st) },
        0,
        "fd {fd} is not open"
    );
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!((st.st_dev, st.st_ino), (meta.dev(), meta.ino()));
    file.close().unwrap();
}

/// Failures under the in-process driver are classified by the driver's own HDF5 error codes:
/// an operating-system error is `H5TILE_ERR_IO` leading with the OS reason and the path, a
/// refused `gds=on` is `H5TILE_ERR_CUDA` leading with the refusal; HDF5's stack follows.
#[test]
fn driver_failures_are_classified_by_their_error_code() {
    use h5tile::internals::hdf5::gds::driver_access;
    use h5tile::internals::status::{H5TILE_ERR_CUDA, H5TILE_ERR_IO};
    use h5tile_gds::{Config, Gds};
    let d = tempfile::tempdir().unwrap();
    let _l = h5tile::internals::hdf5::lock();
    // A file that is not there, opened read-only through the driver.
    let missing = d.path().join("missing.h5");
    let fapl = driver_access(Config::default()).unwrap();
    let c_path = cstr(missing.to_str().unwrap());
    let id = unsafe { H5Fopen(c_path.as_ptr(), H5F_ACC_RDONLY, fapl.id()) };
    assert!(id < 0);
    let e = h5tile::internals::hdf5::error("cannot open".into());
    assert_eq!(e.status, H5TILE_ERR_IO, "{}", e.message);
    let lead = format!(
        "No such file or directory: cannot open '{}'",
        missing.display()
    );
    assert!(e.message.starts_with(&lead), "{}", e.message);
    assert!(e.message.contains("[cannot open: H5Fopen"), "{}", e.message);
    // gds=on where cuFile cannot be used (no GPU here): the open is refused, nothing is made.
    if h5tile_gds::cufile_usable().is_ok() {
        eprintln!("SKIPPED the gds=on refusal: cuFile can be used on this machine");
        return;
    }
    let on = Config {
        gds: Gds::On,
        ..Config::default()
    };
    let fapl = driver_access(on).unwrap();
    let refused = d.path().join("refused.h5");
    let c_path = cstr(refused.to_str().unwrap());
    let id = unsafe { H5Fcreate(c_path.as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id()) };
    assert!(id < 0);
    let e = h5tile::internals::hdf5::error("cannot create".into());
    assert_eq!(e.status, H5TILE_ERR_CUDA, "{}", e.message);
    assert!(
        e.message.starts_with("gds=on, but cuFile cannot be used: "),
        "{}",
        e.message
    );
    assert!(!refused.exists());
}
