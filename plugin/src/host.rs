//! The few HDF5 functions the driver calls, found at run time in the libhdf5 already loaded
//! into the host process. Linking libhdf5 would make the loader bring a second copy beside the
//! host's (a site's 1.14 module, h5py's renamed copy, Legate's), so the plugin never links it.

use crate::abi::{herr_t, hid_t};
use crate::config::{Config, DriverInfo};
use crate::error::{DriverError, Kind, CLASS_NAME};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::sync::Mutex;

type ConfigStr = unsafe extern "C" fn(hid_t, *mut c_char, usize) -> isize;
type RegisterClass = unsafe extern "C" fn(*const c_char, *const c_char, *const c_char) -> hid_t;
type CreateMsg = unsafe extern "C" fn(hid_t, c_int, *const c_char) -> hid_t;
type Push = unsafe extern "C" fn(
    hid_t,
    *const c_char,
    *const c_char,
    c_uint,
    hid_t,
    hid_t,
    hid_t,
    *const c_char,
    ...
) -> herr_t;
type DriverInfoFn = unsafe extern "C" fn(hid_t) -> *const c_void;
type AutoFn = Option<unsafe extern "C" fn(hid_t, *mut c_void) -> herr_t>;
type GetAuto = unsafe extern "C" fn(hid_t, *mut AutoFn, *mut *mut c_void) -> herr_t;
type SetAuto = unsafe extern "C" fn(hid_t, AutoFn, *mut c_void) -> herr_t;
type GetStack = unsafe extern "C" fn() -> hid_t;
type SetStack = unsafe extern "C" fn(hid_t) -> herr_t;
/// `H5E_DEFAULT`: the current thread's error stack.
const H5E_DEFAULT: hid_t = 0;
type FileLocking = unsafe extern "C" fn(hid_t, *mut bool, *mut bool) -> herr_t;
type UnregisterClass = unsafe extern "C" fn(hid_t) -> herr_t;

/// How many libhdf5s one copy of the driver serves at once (a process may hold several: its
/// own, h5py's, libh5tile's); each gets a class of its own (`driver::CLASSES`), whose callbacks
/// call that library. One more slot serves a library that could not be told.
pub const MAX_HOSTS: usize = 4;
/// The slot of a host library not identified: its functions are looked up by name.
pub const UNKNOWN_HOST: usize = MAX_HOSTS;

/// The libhdf5 (a `dlopen` handle, as an address) each slot serves.
static HOSTS: Mutex<[usize; MAX_HOSTS]> = Mutex::new([0; MAX_HOSTS]);

thread_local! {
    /// The slot whose callback runs on this thread.
    static SERVING: std::cell::Cell<usize> = const { std::cell::Cell::new(UNKNOWN_HOST) };
}

/// Runs `body` (a callback of slot `slot`'s class) calling that slot's libhdf5.
pub fn serving<T>(slot: usize, body: impl FnOnce() -> T) -> T {
    let before = SERVING.with(|s| s.replace(slot));
    let out = body();
    SERVING.with(|s| s.set(before));
    out
}

/// The slot of the libhdf5 that holds `address` (a function of it), given one if it has none;
/// `UNKNOWN_HOST` when it is no libhdf5, or every slot is taken.
pub fn slot_of_library_at(address: *const c_void) -> usize {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if unsafe { libc::dladdr(address, &mut info) } == 0 || info.dli_fname.is_null() {
        return UNKNOWN_HOST;
    }
    let flags = libc::RTLD_LAZY | libc::RTLD_NOLOAD;
    let handle = unsafe { libc::dlopen(info.dli_fname, flags) };
    if handle.is_null() {
        return UNKNOWN_HOST;
    }
    let hdf5 = !unsafe { libc::dlsym(handle, c"H5FDregister".as_ptr()) }.is_null();
    // RTLD_NOLOAD took a reference to an object that stays loaded anyway.
    unsafe { libc::dlclose(handle) };
    if !hdf5 {
        return UNKNOWN_HOST;
    }
    let Ok(mut hosts) = HOSTS.lock() else {
        return UNKNOWN_HOST;
    };
    let handle = handle as usize;
    if let Some(slot) = hosts.iter().position(|&h| h == handle) {
        return slot;
    }
    match hosts.iter().position(|&h| h == 0) {
        Some(slot) => {
            hosts[slot] = handle;
            slot
        }
        None => UNKNOWN_HOST,
    }
}

/// The slot of the library that called the function calling this (HDF5's plugin loader
/// calling `H5PLget_plugin_info`): the first frame on the stack outside this driver's object.
#[inline(never)]
pub fn slot_of_caller() -> usize {
    extern "C" {
        // glibc's; unwinds through frames without frame pointers using their unwind tables.
        fn backtrace(buffer: *mut *mut c_void, size: c_int) -> c_int;
    }
    let mut own: libc::Dl_info = unsafe { std::mem::zeroed() };
    let here = slot_of_caller as *const c_void;
    if unsafe { libc::dladdr(here, &mut own) } == 0 {
        return UNKNOWN_HOST;
    }
    let mut frames = [std::ptr::null_mut(); 16];
    let n = unsafe { backtrace(frames.as_mut_ptr(), frames.len() as c_int) }.max(0) as usize;
    for &frame in &frames[..n] {
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        if unsafe { libc::dladdr(frame, &mut info) } != 0 && info.dli_fbase != own.dli_fbase {
            return slot_of_library_at(frame);
        }
    }
    UNKNOWN_HOST
}

/// Address of `name` in the libhdf5 the running callback serves; for a library not told,
/// first through the global namespace, then in each loaded object whose name mentions hdf5
/// (a library loaded with RTLD_LOCAL, as Python does).
pub fn symbol(name: &CStr) -> *mut c_void {
    let slot = SERVING.with(|s| s.get());
    let host = HOSTS.lock().ok().and_then(|h| h.get(slot).copied());
    if let Some(handle) = host.filter(|&h| h != 0) {
        // Never another library's function: its ids mean nothing to this one.
        return unsafe { libc::dlsym(handle as *mut c_void, name.as_ptr()) };
    }
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if !p.is_null() {
        return p;
    }
    for object in loaded_hdf5_objects() {
        let Ok(path) = CString::new(object) else {
            continue;
        };
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        if handle.is_null() {
            continue;
        }
        let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
        // RTLD_NOLOAD took a reference to an object that stays loaded anyway.
        unsafe { libc::dlclose(handle) };
        if !p.is_null() {
            return p;
        }
    }
    std::ptr::null_mut()
}

fn loaded_hdf5_objects() -> Vec<String> {
    loaded_objects(|file| file.contains("hdf5") && !file.contains("h5tile"))
}

/// Paths of the shared objects loaded in this process whose file name passes `wanted`
/// (walking the loader's list: no file is opened, nothing is loaded).
pub fn loaded_objects(wanted: fn(&str) -> bool) -> Vec<String> {
    struct Walk {
        wanted: fn(&str) -> bool,
        names: Vec<String>,
    }
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        let walk = &mut *(data as *mut Walk);
        let name = (*info).dlpi_name;
        if !name.is_null() {
            let name = CStr::from_ptr(name).to_string_lossy();
            let file = name.rsplit('/').next().unwrap_or("");
            if (walk.wanted)(file) {
                walk.names.push(name.into_owned());
            }
        }
        0
    }
    let mut walk = Walk {
        wanted,
        names: Vec::new(),
    };
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut walk as *mut Walk as *mut c_void) };
    walk.names
}

/// How many objects the loader has loaded into this process so far (`dlpi_adds`: it only grows,
/// unloading included), read from the first object the loader lists.
pub fn loads_so_far() -> u64 {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _: usize,
        data: *mut c_void,
    ) -> c_int {
        *(data as *mut u64) = (*info).dlpi_adds;
        1 // stop at the first object
    }
    let mut adds = 0u64;
    unsafe { libc::dl_iterate_phdr(Some(first), &mut adds as *mut u64 as *mut c_void) };
    adds
}

/// The driver's configuration for an open with file-access properties `fapl`: the value
/// h5tile passed in-process (`H5Pset_driver` with a [`DriverInfo`]), else the string given with
/// `H5Pset_driver_by_name` or `HDF5_DRIVER_CONFIG`, parsed. Also the text, for the log.
pub fn driver_config(fapl: hid_t) -> Result<(Config, String), DriverError> {
    let text = config_string(fapl);
    if text.is_none() && crate::registered_in_process() {
        if let Some(config) = driver_info(fapl) {
            return Ok((config, config.to_string()));
        }
    }
    let text = text.unwrap_or_default();
    match Config::parse(&text) {
        Ok(config) => Ok((config, text)),
        Err(e) => Err(format!("bad h5tile_gds configuration '{text}': {e}").into()),
    }
}

/// The [`DriverInfo`] set on `fapl`, if any. HDF5 reports "no driver information" as an error:
/// it is neither printed nor left on the caller's error stack.
fn driver_info(fapl: hid_t) -> Option<Config> {
    let get = symbol(c"H5Pget_driver_info");
    let (get_stack, set_stack) = (
        symbol(c"H5Eget_current_stack"),
        symbol(c"H5Eset_current_stack"),
    );
    let (get_auto, set_auto) = (symbol(c"H5Eget_auto2"), symbol(c"H5Eset_auto2"));
    if [get, get_stack, set_stack, get_auto, set_auto]
        .iter()
        .any(|p| p.is_null())
    {
        return None;
    }
    unsafe {
        let get: DriverInfoFn = std::mem::transmute(get);
        let get_stack: GetStack = std::mem::transmute(get_stack);
        let set_stack: SetStack = std::mem::transmute(set_stack);
        let get_auto: GetAuto = std::mem::transmute(get_auto);
        let set_auto: SetAuto = std::mem::transmute(set_auto);
        let saved = get_stack();
        let (mut func, mut data) = (None, std::ptr::null_mut());
        let printing = get_auto(H5E_DEFAULT, &mut func, &mut data) >= 0;
        if printing {
            set_auto(H5E_DEFAULT, None, std::ptr::null_mut());
        }
        let info = (get(fapl) as *const DriverInfo)
            .as_ref()
            .and_then(DriverInfo::config);
        if printing {
            set_auto(H5E_DEFAULT, func, data);
        }
        if saved >= 0 {
            set_stack(saved);
        }
        info
    }
}

/// The configuration string given with `H5Pset_driver_by_name` or `HDF5_DRIVER_CONFIG`.
fn config_string(fapl: hid_t) -> Option<String> {
    let f = symbol(c"H5Pget_driver_config_str");
    if f.is_null() {
        return None;
    }
    let get: ConfigStr = unsafe { std::mem::transmute(f) };
    let n = unsafe { get(fapl, std::ptr::null_mut(), 0) };
    if n <= 0 {
        return None;
    }
    let mut buf = vec![0u8; n as usize + 1];
    let n = unsafe { get(fapl, buf.as_mut_ptr() as *mut c_char, buf.len()) };
    if n <= 0 {
        return None;
    }
    buf.truncate(n as usize);
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// The file-locking choice of `fapl` (`H5Pset_file_locking`): (use locks, ignore a file system
/// without them). None where the host's HDF5 cannot say.
pub fn file_locking(fapl: hid_t) -> Option<(bool, bool)> {
    let f = symbol(c"H5Pget_file_locking");
    if f.is_null() {
        return None;
    }
    let get: FileLocking = unsafe { std::mem::transmute(f) };
    let (mut use_locks, mut ignore) = (false, false);
    (unsafe { get(fapl, &mut use_locks, &mut ignore) } >= 0).then_some((use_locks, ignore))
}

/// The driver's own HDF5 error class, its major code and one minor code per kind of failure,
/// registered on first use.
struct ErrorClass {
    class: hid_t,
    major: hid_t,
    minors: [hid_t; Kind::ALL.len()],
}

/// Each host library's error class (ids are the library's own).
static ERROR_CLASSES: Mutex<[Option<ErrorClass>; MAX_HOSTS + 1]> =
    Mutex::new([None, None, None, None, None]);

fn error_codes(kind: Kind) -> Option<(hid_t, hid_t, hid_t)> {
    let slot = SERVING.with(|s| s.get());
    let mut classes = ERROR_CLASSES.lock().ok()?;
    let guard = classes.get_mut(slot)?;
    if guard.is_none() {
        let (register, create) = (symbol(c"H5Eregister_class"), symbol(c"H5Ecreate_msg"));
        if register.is_null() || create.is_null() {
            return None;
        }
        let register: RegisterClass = unsafe { std::mem::transmute(register) };
        let create: CreateMsg = unsafe { std::mem::transmute(create) };
        let version = CString::new(env!("CARGO_PKG_VERSION")).ok()?;
        let name = CString::new(CLASS_NAME).ok()?;
        let class =
            unsafe { register(name.as_ptr(), c"h5tile_gds VFD".as_ptr(), version.as_ptr()) };
        if class < 0 {
            return None;
        }
        let major = unsafe { create(class, 0, c"h5tile_gds virtual file driver".as_ptr()) };
        let minors = Kind::ALL.map(|k| {
            let text = CString::new(k.minor_text()).expect("no NUL in minor texts");
            unsafe { create(class, 1, text.as_ptr()) }
        });
        *guard = Some(ErrorClass {
            class,
            major,
            minors,
        });
    }
    let e = guard.as_ref()?;
    let i = Kind::ALL.iter().position(|&k| k == kind)?;
    Some((e.class, e.major, e.minors[i]))
}

/// Pushes `error` onto the HDF5 error stack under the driver's error class, with the minor code
/// of its kind, so the caller's HDF5 error report says what went wrong in the driver and a
/// program can tell the kinds apart.
pub fn push_error(func: &str, error: &DriverError) {
    #[cfg(test)]
    PUSHED.with(|p| {
        p.borrow_mut()
            .push((func.to_string(), error.message.clone()))
    });
    // Not logged as an error: HDF5 itself tries opens that may fail (a file not there yet)
    // and reports the failures that matter, with this message on its stack.
    crate::log::debug(&error.message);
    let push = symbol(c"H5Epush2");
    let Some((class, major, minor)) = error_codes(error.kind) else {
        return;
    };
    if push.is_null() {
        return;
    }
    let push: Push = unsafe { std::mem::transmute(push) };
    let func = CString::new(func).unwrap_or_default();
    let message = CString::new(error.message.replace('\0', " ")).unwrap_or_default();
    unsafe {
        push(
            0,
            c"h5tile_gds".as_ptr(),
            func.as_ptr(),
            0,
            class,
            major,
            minor,
            c"%s".as_ptr(),
            message.as_ptr(),
        );
    }
}

#[cfg(test)]
thread_local! {
    /// What `push_error` was given on this thread, (function, message): the unit tests load
    /// no libhdf5 whose error stack would keep it.
    pub static PUSHED: std::cell::RefCell<Vec<(String, String)>> = const {
        std::cell::RefCell::new(Vec::new())
    };
}

/// Forgets the running callback's library's error class (that HDF5 is shutting down; its ids
/// die with it).
pub fn release_error_class() {
    let slot = SERVING.with(|s| s.get());
    if let Ok(mut classes) = ERROR_CLASSES.lock() {
        if let Some(e) = classes.get_mut(slot).and_then(Option::take) {
            let f = symbol(c"H5Eunregister_class");
            if !f.is_null() {
                let unregister: UnregisterClass = unsafe { std::mem::transmute(f) };
                unsafe { unregister(e.class) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_load_count_grows_when_a_library_is_loaded_and_only_then() {
        // zlib is on every machine HDF5 builds on, and nothing in this test binary links it.
        let zlib = c"libz.so.1";
        let flags = libc::RTLD_NOW | libc::RTLD_LOCAL;
        let loaded = |extra| unsafe { libc::dlopen(zlib.as_ptr(), flags | extra) };
        assert!(
            loaded(libc::RTLD_NOLOAD).is_null(),
            "libz is already loaded"
        );
        let before = loads_so_far();
        assert_eq!(loads_so_far(), before);
        let handle = loaded(0);
        assert!(!handle.is_null());
        assert!(loads_so_far() > before);
        assert_eq!(loaded_objects(|file| file.starts_with("libz.so")).len(), 1);
        unsafe { libc::dlclose(handle) };
    }
}
