//! The few HDF5 functions the driver calls, found at run time in the libhdf5 already loaded
//! into the host process. Linking libhdf5 would make the loader bring a second copy beside the
//! host's (a site's 1.14 module, h5py's renamed copy, Legate's), so the plugin never links it.

use crate::abi::{herr_t, hid_t};
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
type UnregisterClass = unsafe extern "C" fn(hid_t) -> herr_t;

/// Address of `name` in the host's libhdf5: first through the global namespace, then in each
/// loaded object whose name mentions hdf5 (a library loaded with RTLD_LOCAL, as Python does).
pub fn symbol(name: &CStr) -> *mut c_void {
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

/// The configuration string given with `H5Pset_driver_by_name` or `HDF5_DRIVER_CONFIG`.
pub fn driver_config(fapl: hid_t) -> Option<String> {
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

/// The driver's own HDF5 error class and its messages, registered on first use.
struct ErrorClass {
    class: hid_t,
    major: hid_t,
    minor: hid_t,
}

static ERROR_CLASS: Mutex<Option<ErrorClass>> = Mutex::new(None);

fn error_class() -> Option<(hid_t, hid_t, hid_t)> {
    let mut guard = ERROR_CLASS.lock().ok()?;
    if guard.is_none() {
        let (register, create) = (symbol(c"H5Eregister_class"), symbol(c"H5Ecreate_msg"));
        if register.is_null() || create.is_null() {
            return None;
        }
        let register: RegisterClass = unsafe { std::mem::transmute(register) };
        let create: CreateMsg = unsafe { std::mem::transmute(create) };
        let version = CString::new(env!("CARGO_PKG_VERSION")).ok()?;
        let class = unsafe {
            register(
                c"h5tile_gds".as_ptr(),
                c"h5tile_gds VFD".as_ptr(),
                version.as_ptr(),
            )
        };
        if class < 0 {
            return None;
        }
        let major = unsafe { create(class, 0, c"h5tile_gds virtual file driver".as_ptr()) };
        let minor = unsafe { create(class, 1, c"driver error".as_ptr()) };
        *guard = Some(ErrorClass {
            class,
            major,
            minor,
        });
    }
    guard.as_ref().map(|e| (e.class, e.major, e.minor))
}

/// Pushes `message` onto the HDF5 error stack under the driver's error class, so the caller's
/// HDF5 error report says what went wrong in the driver.
pub fn push_error(func: &str, message: &str) {
    // Not logged as an error: HDF5 itself tries opens that may fail (a file not there yet)
    // and reports the failures that matter, with this message on its stack.
    crate::log::debug(message);
    let push = symbol(c"H5Epush2");
    let Some((class, major, minor)) = error_class() else {
        return;
    };
    if push.is_null() {
        return;
    }
    let push: Push = unsafe { std::mem::transmute(push) };
    let func = CString::new(func).unwrap_or_default();
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
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

/// Forgets the error class (HDF5 is shutting down; its ids die with it).
pub fn release_error_class() {
    if let Ok(mut guard) = ERROR_CLASS.lock() {
        if let Some(e) = guard.take() {
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
