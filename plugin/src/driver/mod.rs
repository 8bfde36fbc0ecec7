//! The driver's callbacks and its class table. Every callback catches panics and reports
//! failures on the HDF5 error stack (never `exit`, never a panic across the boundary).

mod transfers;

use crate::abi::*;
use crate::config::{Config, Gds};
use crate::device::{self, DeviceIo};
use crate::error::DriverError;
use crate::posix::{OpenMode, PosixFile};
use crate::{host, locking, log};
use std::ffi::{c_char, c_int, c_ulong, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use transfers::{failed_transfer, read, read_vector, write, write_vector};

/// An open file: HDF5's public part first, as the ABI requires, then ours.
#[repr(C)]
struct GdsFile {
    public: H5FD_t,
    /// The descriptor's number, where `get_handle` points (a POSIX-compatible handle is the
    /// address of an `int` holding the descriptor, as sec2 gives it).
    fd: c_int,
    name: String,
    file: PosixFile,
    config: Config,
    device: DeviceIo,
}

type Outcome<T> = Result<T, DriverError>;

/// Runs the body of the callback `func` for host library slot `host`; an error or a panic is
/// pushed on the HDF5 error stack and `failed` is returned instead. Every callback runs in one.
fn guard<T>(host: usize, func: &str, failed: T, body: impl FnOnce() -> Outcome<T>) -> T {
    host::serving(host, || guarded(func, failed, body))
}

fn guarded<T>(func: &str, failed: T, body: impl FnOnce() -> Outcome<T>) -> T {
    let body = || {
        injected_panic(func);
        body()
    };
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => v,
        Ok(Err(error)) => {
            host::push_error(func, &error);
            failed
        }
        Err(panic) => {
            let what = (panic.downcast_ref::<&str>().copied())
                .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("unknown panic");
            let panicked =
                format!("internal error (please report): panic in the h5tile_gds driver: {what}");
            host::push_error(func, &DriverError::from(panicked));
            failed
        }
    }
}

#[cfg(test)]
thread_local! {
    /// The callback whose guard panics at its next entry on this thread (tests).
    static PANIC_IN: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
}

/// Panics where a test asked for a panic in `func` (`PANIC_IN`), once; nothing at all outside
/// the unit tests.
#[cfg(test)]
fn injected_panic(func: &str) {
    if PANIC_IN.with(|p| p.get()) == Some(func) {
        PANIC_IN.with(|p| p.set(None));
        panic!("injected panic in {func}");
    }
}

#[cfg(not(test))]
#[inline(always)]
fn injected_panic(_: &str) {}

/// The driver's file behind `f`; HDF5 never passes NULL, but a NULL is an error, not a crash.
unsafe fn file<'a>(f: *const H5FD_t) -> Outcome<&'a GdsFile> {
    (f as *const GdsFile)
        .as_ref()
        .ok_or_else(|| "file pointer is NULL".into())
}

unsafe fn file_mut<'a>(f: *mut H5FD_t) -> Outcome<&'a mut GdsFile> {
    (f as *mut GdsFile)
        .as_mut()
        .ok_or_else(|| "file pointer is NULL".into())
}

/// A C string argument; NULL is an error naming `what`.
unsafe fn name_arg(name: *const c_char, what: &str) -> Outcome<String> {
    if name.is_null() {
        return Err(format!("{what} is NULL").into());
    }
    Ok(CStr::from_ptr(name).to_string_lossy().into_owned())
}

/// `addr..addr+size` must be a defined range of addresses (no overflow), as sec2 checks; a
/// write must also end below the EOA. A read past the EOA is allowed, as sec2 allows it: a
/// reader opened for SWMR keeps the end of allocation it saw while the writer extends the file,
/// and HDF5 skips its own EOA check for such files (bytes past the end of the file read as
/// zeros, `posix`). For a write the check protects the file: HDF5 allocates before it writes,
/// so a write past the EOA is a caller's bug that would grow the file behind its allocator.
fn check_range(f: &GdsFile, addr: haddr_t, size: usize, write: bool) -> Outcome<()> {
    let end = addr
        .checked_add(size as u64)
        .filter(|&e| addr != HADDR_UNDEF && e <= MAXADDR);
    match end {
        None => Err(format!("address {addr} + size {size} overflows in '{}'", f.name).into()),
        Some(end) if write && end > f.file.eoa => Err(format!(
            "address {addr} + size {size} is past the end of allocated space {} of '{}'",
            f.file.eoa, f.name
        )
        .into()),
        _ => Ok(()),
    }
}

unsafe extern "C" fn open<const H: usize>(
    name: *const c_char,
    flags: u32,
    fapl: hid_t,
    maxaddr: haddr_t,
) -> *mut H5FD_t {
    guard(H, "h5tile_gds_open", std::ptr::null_mut(), || {
        let name = name_arg(name, "file name")?;
        if maxaddr == 0 || maxaddr == HADDR_UNDEF || maxaddr > MAXADDR {
            return Err(format!("bogus maximum address {maxaddr} opening '{name}'").into());
        }
        let (config, config_text) = host::driver_config(fapl)?;
        for warning in config.warnings() {
            log::warn(&format!("'{name}': {warning}"));
        }
        let mode = OpenMode {
            write: flags & H5F_ACC_RDWR != 0,
            create: flags & H5F_ACC_CREAT != 0,
            truncate: flags & H5F_ACC_TRUNC != 0,
            exclusive: flags & H5F_ACC_EXCL != 0,
        };
        if config.gds == Gds::On {
            // Before anything is created: a refused open leaves no file behind.
            device::cufile::driver().map_err(|why| device::refusal(&name, why))?;
        }
        // An existing file is registered with cuFile before it is opened (and maybe truncated),
        // a new one right after it is created, and removed again if that fails.
        let existed = std::path::Path::new(&name).exists();
        let mut device = DeviceIo::new(&name, mode.write);
        if config.gds == Gds::On && existed {
            device.require_gds()?;
        }
        let mut file = PosixFile::open_with(&name, mode, config.direct, config.bounce)
            .map_err(|e| DriverError::os("cannot open", &name, &e))?;
        file.ignore_disabled_locks = locking::ignore_disabled_locks(fapl);
        if config.gds == Gds::On && !existed {
            if let Err(e) = device.require_gds() {
                let _ = std::fs::remove_file(&name);
                return Err(e);
            }
        }
        let access = if mode.write {
            "read-write"
        } else {
            "read-only"
        };
        let direct = if config.direct {
            " (O_DIRECT for raw data)"
        } else {
            ""
        };
        let path = match device.uses_gds() {
            Some(gds) => device::path_name(gds),
            None => "posix",
        };
        log::info(&format!(
            "opened '{name}' ({access}) path={path}{direct} config='{config_text}'"
        ));
        let public: H5FD_t = std::mem::zeroed();
        Ok(Box::into_raw(Box::new(GdsFile {
            public,
            fd: file.raw_fd(),
            name,
            file,
            config,
            device,
        })) as *mut H5FD_t)
    })
}

unsafe extern "C" fn close<const H: usize>(f: *mut H5FD_t) -> herr_t {
    guard(H, "h5tile_gds_close", -1, || {
        file(f)?;
        let mut f = Box::from_raw(f as *mut GdsFile);
        f.file.write_held().map_err(|e| held_failed(&f.name, &e))?;
        let stats = f.file.stats;
        log::debug(&format!(
            "closed '{}' (raw data: {} O_DIRECT pieces, {} transfers split over workers)",
            f.name, stats.direct_pieces, stats.split_transfers
        ));
        drop(f);
        Ok(0)
    })
}

unsafe extern "C" fn cmp<const H: usize>(a: *const H5FD_t, b: *const H5FD_t) -> c_int {
    // HDF5 reads every value as an order, and two files that compare equal as one file: after
    // a panic they compare by address, equal only when they are the same open file, so that
    // two files are never taken for one (a file opened twice is at worst opened twice).
    let by_address = (a as usize).cmp(&(b as usize)) as c_int;
    guard(H, "h5tile_gds_cmp", by_address, || {
        // A NULL file sorts first (HDF5 never passes one).
        let key = |f| file(f).ok().map(|f| (f.file.device, f.file.inode));
        Ok(key(a).cmp(&key(b)) as c_int)
    })
}

unsafe extern "C" fn query<const H: usize>(_f: *const H5FD_t, flags: *mut c_ulong) -> herr_t {
    guard(H, "h5tile_gds_query", -1, || {
        if !flags.is_null() {
            *flags = features();
        }
        Ok(0)
    })
}

/// What the driver supports (`query`).
fn features() -> c_ulong {
    // HDF5 copies small raw reads and writes through its sieve buffer with memcpy, which
    // device memory would not survive: no sieving in a process where CUDA is loaded.
    let sieve = match device::cuda::in_process() {
        true => 0,
        false => H5FD_FEAT_DATA_SIEVE,
    };
    H5FD_FEAT_AGGREGATE_METADATA
        | H5FD_FEAT_ACCUMULATE_METADATA
        | sieve
        | H5FD_FEAT_AGGREGATE_SMALLDATA
        | H5FD_FEAT_POSIX_COMPAT_HANDLE
        | H5FD_FEAT_SUPPORTS_SWMR_IO
        | H5FD_FEAT_DEFAULT_VFD_COMPATIBLE
}

unsafe extern "C" fn get_eoa<const H: usize>(f: *const H5FD_t, _type: H5FD_mem_t) -> haddr_t {
    guard(H, "h5tile_gds_get_eoa", HADDR_UNDEF, || {
        Ok(file(f)?.file.eoa)
    })
}

unsafe extern "C" fn set_eoa<const H: usize>(
    f: *mut H5FD_t,
    _type: H5FD_mem_t,
    addr: haddr_t,
) -> herr_t {
    guard(H, "h5tile_gds_set_eoa", -1, || {
        if addr == HADDR_UNDEF || addr > MAXADDR {
            return Err(format!("bogus end of allocated space {addr}").into());
        }
        file_mut(f)?.file.eoa = addr;
        Ok(0)
    })
}

unsafe extern "C" fn get_eof<const H: usize>(f: *const H5FD_t, _type: H5FD_mem_t) -> haddr_t {
    guard(H, "h5tile_gds_get_eof", HADDR_UNDEF, || {
        Ok(file(f)?.file.eof)
    })
}

unsafe extern "C" fn get_handle<const H: usize>(
    f: *mut H5FD_t,
    _fapl: hid_t,
    handle: *mut *mut c_void,
) -> herr_t {
    guard(H, "h5tile_gds_get_handle", -1, || {
        if handle.is_null() {
            return Err("file handle pointer is NULL".into());
        }
        // The address of the descriptor, as H5FD_FEAT_POSIX_COMPAT_HANDLE promises.
        *handle = &file(f)?.fd as *const c_int as *mut c_void;
        Ok(0)
    })
}

/// `H5Fflush`: the raw bytes held (`PosixFile::write_held`) reach the file, as every write
/// before the flush has.
unsafe extern "C" fn flush<const H: usize>(f: *mut H5FD_t, _dxpl: hid_t, _closing: bool) -> herr_t {
    guard(H, "h5tile_gds_flush", -1, || {
        let f = file_mut(f)?;
        f.file.write_held().map_err(|e| held_failed(&f.name, &e))?;
        Ok(0)
    })
}

/// The error of a failed write of held bytes, where HDF5 asked for something else.
fn held_failed(name: &str, e: &std::io::Error) -> DriverError {
    failed_transfer(DriverError::os(
        "cannot write the last raw data written to",
        name,
        e,
    ))
}

unsafe extern "C" fn truncate<const H: usize>(
    f: *mut H5FD_t,
    _dxpl: hid_t,
    _closing: bool,
) -> herr_t {
    guard(H, "h5tile_gds_truncate", -1, || {
        let f = file_mut(f)?;
        f.file.write_held().map_err(|e| held_failed(&f.name, &e))?;
        f.file.truncate_to_eoa().map_err(|e| {
            let what = format!("cannot set the size to {} of", f.file.eoa);
            DriverError::os(&what, &f.name, &e)
        })?;
        Ok(0)
    })
}

unsafe extern "C" fn lock<const H: usize>(f: *mut H5FD_t, rw: bool) -> herr_t {
    guard(H, "h5tile_gds_lock", -1, || {
        let f = file(f)?;
        f.file
            .lock(rw)
            .map_err(|e| DriverError::os("cannot lock", &f.name, &e))?;
        Ok(0)
    })
}

unsafe extern "C" fn unlock<const H: usize>(f: *mut H5FD_t) -> herr_t {
    guard(H, "h5tile_gds_unlock", -1, || {
        let f = file(f)?;
        f.file
            .unlock()
            .map_err(|e| DriverError::os("cannot unlock", &f.name, &e))?;
        Ok(0)
    })
}

unsafe extern "C" fn delete<const H: usize>(name: *const c_char, _fapl: hid_t) -> herr_t {
    guard(H, "h5tile_gds_delete", -1, || {
        let name = name_arg(name, "file name")?;
        std::fs::remove_file(&name).map_err(|e| DriverError::os("cannot delete", &name, &e))?;
        Ok(0)
    })
}

unsafe extern "C" fn ctl<const H: usize>(
    _f: *mut H5FD_t,
    op: u64,
    flags: u64,
    _input: *const c_void,
    _output: *mut *mut c_void,
) -> herr_t {
    guard(H, "h5tile_gds_ctl", -1, || {
        // No operation codes are understood; fail only when the caller asks to.
        if flags & H5FD_CTL_FAIL_IF_UNKNOWN_FLAG != 0 {
            return Err(format!("unknown operation code {op}").into());
        }
        Ok(0)
    })
}

unsafe extern "C" fn terminate<const H: usize>() -> herr_t {
    // HDF5 calls this while its error stack still works (the class is unregistered through
    // it): a failure is pushed as any other.
    guard(H, "h5tile_gds_terminate", -1, || {
        host::release_error_class();
        Ok(0)
    })
}

/// The `h5tile_gds` driver class, one per host library (slot `host::UNKNOWN_HOST` last): its
/// callbacks call the libhdf5 of their slot, which is how a process holding several libhdf5s
/// (h5py's and libh5tile's) has each served by its own.
pub static CLASSES: [H5FD_class_t; host::MAX_HOSTS + 1] = [
    class::<0>(),
    class::<1>(),
    class::<2>(),
    class::<3>(),
    class::<{ host::UNKNOWN_HOST }>(),
];

const fn class<const H: usize>() -> H5FD_class_t {
    H5FD_class_t {
        version: H5FD_CLASS_VERSION,
        value: H5TILE_GDS_VALUE,
        name: c"h5tile_gds".as_ptr(),
        maxaddr: MAXADDR,
        fc_degree: H5F_CLOSE_WEAK,
        terminate: Some(terminate::<H>),
        sb_size: None,
        sb_encode: None,
        sb_decode: None,
        fapl_size: std::mem::size_of::<crate::config::DriverInfo>(),
        fapl_get: None,
        fapl_copy: None,
        fapl_free: None,
        dxpl_size: 0,
        dxpl_copy: None,
        dxpl_free: None,
        open: Some(open::<H>),
        close: Some(close::<H>),
        cmp: Some(cmp::<H>),
        query: Some(query::<H>),
        get_type_map: None,
        alloc: None,
        free: None,
        get_eoa: Some(get_eoa::<H>),
        set_eoa: Some(set_eoa::<H>),
        get_eof: Some(get_eof::<H>),
        get_handle: Some(get_handle::<H>),
        read: Some(read::<H>),
        write: Some(write::<H>),
        read_vector: Some(read_vector::<H>),
        write_vector: Some(write_vector::<H>),
        read_selection: None,
        write_selection: None,
        flush: Some(flush::<H>),
        truncate: Some(truncate::<H>),
        lock: Some(lock::<H>),
        unlock: Some(unlock::<H>),
        del: Some(delete::<H>),
        ctl: Some(ctl::<H>),
        fl_map: H5FD_FLMAP_DICHOTOMY,
    }
}

#[cfg(test)]
mod tests {
    use super::transfers::vector_entry;
    use super::*;

    /// HDF5 never passes NULL where a file, name or list is due, but a NULL is an error return,
    /// not undefined behaviour.
    #[test]
    fn null_arguments_are_errors() {
        let c = &CLASSES[host::UNKNOWN_HOST];
        let null_file = std::ptr::null_mut::<H5FD_t>();
        unsafe {
            assert_eq!(c.del.unwrap()(std::ptr::null(), 0), -1);
            assert!(c.open.unwrap()(std::ptr::null(), 0, 0, MAXADDR).is_null());
            assert_eq!(c.close.unwrap()(null_file), -1);
            assert_eq!(c.get_eoa.unwrap()(null_file, 0), HADDR_UNDEF);
            assert_eq!(c.get_eof.unwrap()(null_file, 0), HADDR_UNDEF);
            assert_eq!(c.set_eoa.unwrap()(null_file, 0, 8), -1);
            let mut handle = std::ptr::null_mut();
            assert_eq!(c.get_handle.unwrap()(null_file, 0, &mut handle), -1);
            let mut byte = 0u8;
            let buf = (&mut byte as *mut u8).cast();
            assert_eq!(c.read.unwrap()(null_file, H5FD_MEM_DRAW, 0, 0, 1, buf), -1);
            assert_eq!(c.write.unwrap()(null_file, H5FD_MEM_DRAW, 0, 0, 1, buf), -1);
            assert_eq!(c.truncate.unwrap()(null_file, 0, false), -1);
            assert_eq!(c.flush.unwrap()(null_file, 0, false), -1);
            assert_eq!(c.lock.unwrap()(null_file, true), -1);
            assert_eq!(c.unlock.unwrap()(null_file), -1);
            use std::ptr::null_mut as n;
            assert_eq!(
                c.read_vector.unwrap()(null_file, 0, 2, n(), n(), n(), n()),
                -1
            );
            assert_eq!(
                c.write_vector.unwrap()(null_file, 0, 2, n(), n(), n(), n()),
                -1
            );
            assert_eq!(c.cmp.unwrap()(null_file, null_file), 0);
        }
    }

    /// A file opened through the driver: NULL buffers are errors for a transfer of some bytes
    /// and nothing for a transfer of none.
    #[test]
    fn null_buffers_are_errors_unless_nothing_moves() {
        let d = tempfile::tempdir().unwrap();
        let name = std::ffi::CString::new(d.path().join("f").to_str().unwrap()).unwrap();
        let c = &CLASSES[host::UNKNOWN_HOST];
        unsafe {
            let flags = H5F_ACC_RDWR | H5F_ACC_CREAT | H5F_ACC_TRUNC;
            let f = c.open.unwrap()(name.as_ptr(), flags, 0, MAXADDR);
            assert!(!f.is_null());
            assert_eq!(c.set_eoa.unwrap()(f, 0, 64), 0);
            let null = std::ptr::null_mut();
            assert_eq!(c.write.unwrap()(f, H5FD_MEM_DRAW, 0, 0, 8, null), -1);
            assert_eq!(c.read.unwrap()(f, H5FD_MEM_DRAW, 0, 0, 8, null), -1);
            assert_eq!(c.write.unwrap()(f, H5FD_MEM_DRAW, 0, 0, 0, null), 0);
            assert_eq!(c.read.unwrap()(f, H5FD_MEM_DRAW, 0, 0, 0, null), 0);
            assert_eq!(c.close.unwrap()(f), 0);
        }
    }

    /// A read past the EOA succeeds, as sec2's does (a SWMR reader's EOA is stale while the
    /// writer extends the file), zeros past the end of the file; a write past it and a range
    /// that overflows fail.
    #[test]
    fn reads_pass_the_eoa_as_sec2_allows_and_writes_do_not() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        let c = &CLASSES[host::UNKNOWN_HOST];
        let data = [5u8; 100];
        let mut back = [9u8; 200];
        // SAFETY: the driver's callbacks on a file it opened here and closes before the block
        // ends; every buffer is a live array at least as long as the size passed with it.
        unsafe {
            let flags = H5F_ACC_RDWR | H5F_ACC_CREAT | H5F_ACC_TRUNC;
            let f = c.open.unwrap()(name.as_ptr(), flags, 0, MAXADDR);
            assert!(!f.is_null());
            assert_eq!(c.set_eoa.unwrap()(f, 0, 100), 0);
            let w = data.as_ptr().cast_mut().cast();
            assert_eq!(c.write.unwrap()(f, 1, 0, 0, 100, w), 0);
            assert_eq!(
                c.write.unwrap()(f, 1, 0, 50, 100, w),
                -1,
                "a write past the EOA"
            );
            assert_eq!(c.flush.unwrap()(f, 0, false), 0);
            let r = back.as_mut_ptr().cast();
            assert_eq!(
                c.read.unwrap()(f, 1, 0, 0, 200, r),
                0,
                "a read past the EOA"
            );
            assert_eq!(&back[..100], &data[..]);
            assert!(
                back[100..].iter().all(|&b| b == 0),
                "zeros past the end of the file"
            );
            assert_eq!(
                c.read.unwrap()(f, 1, 0, u64::MAX - 10, 100, r),
                -1,
                "overflow"
            );
            assert_eq!(c.close.unwrap()(f), 0);
        }
    }

    /// Small raw writes in a row are held (`PosixFile::write_held`); each of HDF5's flush, a
    /// metadata read, truncate and close writes them first.
    #[test]
    fn held_raw_writes_reach_the_file_at_flush_read_truncate_and_close() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        let c = &CLASSES[host::UNKNOWN_HOST];
        let on_disk = || std::fs::metadata(&path).unwrap().len();
        let chunk = [7u8; 1000];
        let buf = chunk.as_ptr().cast_mut().cast();
        unsafe {
            let flags = H5F_ACC_RDWR | H5F_ACC_CREAT | H5F_ACC_TRUNC;
            let f = c.open.unwrap()(name.as_ptr(), flags, 0, MAXADDR);
            assert!(!f.is_null());
            assert_eq!(c.set_eoa.unwrap()(f, 0, 1 << 20), 0);
            let mut at = 0;
            let two_more = |at: &mut u64| {
                for _ in 0..2 {
                    assert_eq!(c.write.unwrap()(f, H5FD_MEM_DRAW, 0, *at, 1000, buf), 0);
                    *at += 1000;
                }
            };
            two_more(&mut at);
            assert_eq!(on_disk(), 1000, "the first is written, the second held");
            assert_eq!(c.flush.unwrap()(f, 0, false), 0);
            assert_eq!(on_disk(), 2000);
            two_more(&mut at);
            let mut byte = 0u8;
            let one = (&mut byte as *mut u8).cast();
            // Type 1 is H5FD_MEM_SUPER: metadata.
            assert_eq!(c.read.unwrap()(f, 1, 0, 0, 1, one), 0);
            assert_eq!(on_disk(), 4000);
            two_more(&mut at);
            assert_eq!(c.set_eoa.unwrap()(f, 0, 6000), 0);
            assert_eq!(c.truncate.unwrap()(f, 0, false), 0);
            assert_eq!(on_disk(), 6000);
            assert_eq!(c.set_eoa.unwrap()(f, 0, 1 << 20), 0);
            two_more(&mut at);
            assert_eq!(on_disk(), 6000, "both continue the write before: held");
            assert_eq!(c.close.unwrap()(f), 0);
            assert_eq!(on_disk(), 8000);
        }
        assert!(std::fs::read(&path).unwrap().iter().all(|&b| b == 7));
    }

    #[test]
    fn vector_entries_repeat_the_last_one_after_the_stop_value() {
        assert_eq!(vector_entry(&[5usize, 7, 0, 9], 0, 0), 5);
        assert_eq!(vector_entry(&[5usize, 7, 0, 9], 1, 0), 7);
        assert_eq!(vector_entry(&[5usize, 7, 0, 9], 3, 0), 7);
        assert_eq!(
            vector_entry(&[3, H5FD_MEM_NOLIST, 1], 2, H5FD_MEM_NOLIST),
            3
        );
        assert_eq!(vector_entry(&[4usize, 4, 4], 2, 0), 4);
    }

    /// The callbacks the class table names (`Some(f::<H>)`), read from this file.
    fn class_callbacks() -> std::collections::BTreeSet<String> {
        let source = include_str!("mod.rs");
        let table = &source[source.find("const fn class<").unwrap()..];
        let table = &table[..table.find("\n}\n").unwrap()];
        let names = table.split("Some(").skip(1);
        names
            .map(|rest| rest.split("::<").next().unwrap().to_string())
            .collect()
    }

    /// A panic in any callback stays in the driver: each one, made to panic at the entry of its
    /// guard, pushes "internal error (please report): panic …" and returns its failed value
    /// (`cmp`, which has none, orders the two files by address: never equal). A callback in the
    /// class without a guard (or without an entry here) fails this test.
    #[test]
    fn every_callback_turns_a_panic_into_its_failed_value() {
        let c = &CLASSES[host::UNKNOWN_HOST];
        let d = tempfile::tempdir().unwrap();
        let open = |name: &str| {
            let name = std::ffi::CString::new(d.path().join(name).to_str().unwrap()).unwrap();
            let flags = H5F_ACC_RDWR | H5F_ACC_CREAT | H5F_ACC_TRUNC;
            let f = unsafe { c.open.unwrap()(name.as_ptr(), flags, 0, MAXADDR) };
            assert!(!f.is_null());
            f
        };
        // Two real files for `cmp`; every other call gets NULLs or nothing to do, so that one
        // not guarded returns (rather than crashes) and is told apart by what it pushes.
        let (a, b) = (open("a"), open("b"));
        let by_address = (a as usize).cmp(&(b as usize)) as c_int;
        use std::ptr::{null, null_mut as n};
        let f = n::<H5FD_t>();
        let (mut handle, buf) = (n::<c_void>(), n::<c_void>());
        type Call<'a> = Box<dyn FnMut() -> bool + 'a>;
        let calls: Vec<(&str, Call)> = unsafe {
            vec![
                ("terminate", Box::new(|| c.terminate.unwrap()() == -1)),
                (
                    "open",
                    Box::new(|| c.open.unwrap()(null(), 0, 0, MAXADDR).is_null()),
                ),
                ("close", Box::new(|| c.close.unwrap()(f) == -1)),
                ("cmp", Box::new(|| c.cmp.unwrap()(a, b) == by_address)),
                ("query", Box::new(|| c.query.unwrap()(f, n()) == -1)),
                (
                    "get_eoa",
                    Box::new(|| c.get_eoa.unwrap()(f, 0) == HADDR_UNDEF),
                ),
                ("set_eoa", Box::new(|| c.set_eoa.unwrap()(f, 0, 8) == -1)),
                (
                    "get_eof",
                    Box::new(|| c.get_eof.unwrap()(f, 0) == HADDR_UNDEF),
                ),
                (
                    "get_handle",
                    Box::new(|| c.get_handle.unwrap()(f, 0, &mut handle) == -1),
                ),
                (
                    "read",
                    Box::new(|| c.read.unwrap()(f, H5FD_MEM_DRAW, 0, 0, 0, buf) == -1),
                ),
                (
                    "write",
                    Box::new(|| c.write.unwrap()(f, H5FD_MEM_DRAW, 0, 0, 0, buf) == -1),
                ),
                (
                    "read_vector",
                    Box::new(|| c.read_vector.unwrap()(f, 0, 0, n(), n(), n(), n()) == -1),
                ),
                (
                    "write_vector",
                    Box::new(|| c.write_vector.unwrap()(f, 0, 0, n(), n(), n(), n()) == -1),
                ),
                ("flush", Box::new(|| c.flush.unwrap()(f, 0, false) == -1)),
                (
                    "truncate",
                    Box::new(|| c.truncate.unwrap()(f, 0, false) == -1),
                ),
                ("lock", Box::new(|| c.lock.unwrap()(f, true) == -1)),
                ("unlock", Box::new(|| c.unlock.unwrap()(f) == -1)),
                ("delete", Box::new(|| c.del.unwrap()(null(), 0) == -1)),
                (
                    "ctl",
                    Box::new(|| c.ctl.unwrap()(f, 0, 0, null(), n()) == -1),
                ),
            ]
        };
        let named: std::collections::BTreeSet<String> =
            calls.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(
            named,
            class_callbacks(),
            "every callback of the class is called here"
        );
        for (callback, mut call) in calls {
            let func: &'static str = format!("h5tile_gds_{callback}").leak();
            host::PUSHED.with(|p| p.borrow_mut().clear());
            PANIC_IN.with(|p| p.set(Some(func)));
            let failed = call();
            let never_entered = PANIC_IN.with(|p| p.take()).is_some();
            assert!(
                !never_entered,
                "{callback} does not run in its guard, guard(H, \"{func}\", …)"
            );
            assert!(
                failed,
                "{callback} does not return its failed value after a panic"
            );
            let want = format!(
                "internal error (please report): panic in the h5tile_gds driver: injected panic in {func}"
            );
            let pushed = host::PUSHED.with(|p| p.borrow().clone());
            assert_eq!(pushed, [(func.to_string(), want)], "{callback}");
        }
        unsafe {
            assert_eq!(c.close.unwrap()(a), 0);
            assert_eq!(c.close.unwrap()(b), 0);
        }
    }
}
