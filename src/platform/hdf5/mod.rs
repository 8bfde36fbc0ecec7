//! The only place that talks to libhdf5: a process-wide lock (HDF5 is not thread-safe), the
//! library's one-time set-up, turning HDF5 failures into `H5TILE_ERR_HDF5` with the error
//! stack, and small RAII handle types (`handle`).

mod attributes;
#[cfg(any(test, feature = "internals"))]
mod copy;
mod filters;
pub mod gds;
mod handle;
mod properties;
#[cfg(any(test, feature = "internals"))]
mod relocate;
mod types;
pub mod work;

#[cfg(test)]
pub(crate) use attributes::read_text;
pub use attributes::AttributeValue;
#[cfg(any(test, feature = "internals"))]
pub use attributes::{ListedNumber, ListedValue};
#[cfg(any(test, feature = "internals"))]
pub use copy::{Link, LinkTarget, NamedTypes, ObjectKey};
pub use handle::{
    is_hdf5, Attribute, Dataset, File, Handle, ObjectKind, Plist, Space, Storage, Type,
};
pub use properties::Attributes;

use crate::status::{
    h5tile_status, Error, Result, H5TILE_ERR_CUDA, H5TILE_ERR_HDF5, H5TILE_ERR_IO,
};
use hdf5_sys::h5::herr_t;
use hdf5_sys::h5e::H5E_direction_t::H5E_WALK_DOWNWARD;
use hdf5_sys::h5e::{
    H5E_error2_t, H5Eclear2, H5Eget_class_name, H5Eget_msg, H5Eset_auto2, H5Ewalk2, H5E_DEFAULT,
};
use hdf5_sys::h5i::hid_t;
use parking_lot::{ReentrantMutex, ReentrantMutexGuard};
use std::ffi::{c_uint, c_void, CStr};
use std::sync::Once;

static LOCK: ReentrantMutex<()> = ReentrantMutex::new(());
static INIT: Once = Once::new();

/// Proof that the caller holds the process-wide HDF5 lock. Every HDF5 call in the crate happens
/// while one is alive; it is reentrant so nested helpers can take it again.
pub struct Lock {
    /// Held, never read: dropping it releases the lock.
    _guard: ReentrantMutexGuard<'static, ()>,
}

/// Takes the HDF5 lock, initialising the library on first use: automatic printing of the
/// error stack is switched off, since h5tile reports errors through its own messages, and the
/// compression filters h5tile writes are registered (`filters`).
pub fn lock() -> Lock {
    let guard = LOCK.lock();
    INIT.call_once(|| unsafe {
        hdf5_sys::h5::H5open();
        H5Eset_auto2(H5E_DEFAULT, None, std::ptr::null_mut());
        filters::register();
    });
    Lock { _guard: guard }
}

/// Turns a negative HDF5 return value into `H5TILE_ERR_HDF5` whose message is `what` followed
/// by the HDF5 error stack (innermost first), which is then cleared.
pub fn check<T: Copy + PartialOrd + Default>(ret: T, what: impl FnOnce() -> String) -> Result<T> {
    if ret < T::default() {
        Err(error(what()))
    } else {
        Ok(ret)
    }
}

/// An error for `what` carrying and clearing the current HDF5 error stack. Usually
/// `H5TILE_ERR_HDF5`; but where the cause lies below HDF5 the status says so and the message
/// leads with that cause, HDF5's stack following in brackets: an operating-system error
/// (from the h5tile_gds driver's code, or an errno in HDF5's own drivers' messages) is
/// `H5TILE_ERR_IO`; a refused `gds=on` or a failed device transfer is `H5TILE_ERR_CUDA`.
pub fn error(what: String) -> Error {
    let entries = take_error_entries();
    let stack = entries
        .iter()
        .map(StackEntry::line)
        .collect::<Vec<_>>()
        .join("; ");
    let full = if stack.is_empty() {
        what.clone()
    } else {
        format!("{what}: {stack}")
    };
    // The innermost cause comes last in the stack.
    match entries.iter().rev().find_map(|e| e.cause(&what)) {
        Some((status, cause, errno)) => {
            Error::new(status, format!("{cause} [{full}]")).with_errno(errno)
        }
        None => Error::new(H5TILE_ERR_HDF5, full),
    }
}

/// One entry of HDF5's error stack.
struct StackEntry {
    class: String,
    func: String,
    desc: String,
    minor: String,
}

impl StackEntry {
    fn line(&self) -> String {
        format!("{}: {} ({})", self.func, self.desc, self.minor)
    }

    /// The status, leading words and operating-system error number (0: none) this entry gives
    /// the error, if it names a cause below HDF5 (`what` failed because of it: HDF5's own
    /// drivers do not always name the file).
    fn cause(&self, what: &str) -> Option<(h5tile_status, String, i32)> {
        if self.class == h5tile_gds::ERROR_CLASS {
            use h5tile_gds::ErrorKind as Kind;
            return match Kind::from_minor_text(&self.minor)? {
                Kind::Os => Some((H5TILE_ERR_IO, self.desc.clone(), self.errno().unwrap_or(0))),
                Kind::GdsRefused | Kind::TransferFailed => {
                    Some((H5TILE_ERR_CUDA, self.desc.clone(), 0))
                }
                Kind::Driver => None,
            };
        }
        let errno = self.errno()?;
        let reason = std::io::Error::from_raw_os_error(errno).to_string();
        let reason = reason
            .split(" (os error")
            .next()
            .unwrap_or(&reason)
            .to_string();
        (errno > 0).then(|| {
            (
                H5TILE_ERR_IO,
                format!("{reason}: {what} ({})", self.desc),
                errno,
            )
        })
    }

    /// The error number in the description: HDF5's own drivers (sec2 …) and the h5tile_gds
    /// driver write "…, errno = N, error message = '…', …".
    fn errno(&self) -> Option<i32> {
        self.desc
            .split("errno = ")
            .nth(1)?
            .split(',')
            .next()?
            .trim()
            .parse()
            .ok()
    }
}

/// Reads and clears this thread's HDF5 error stack as one line: "func: description (minor)".
pub fn take_error_stack() -> String {
    take_error_entries()
        .iter()
        .map(StackEntry::line)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Reads and clears this thread's HDF5 error stack, outermost entry first.
fn take_error_entries() -> Vec<StackEntry> {
    let _l = lock();
    let mut raw: Vec<RawEntry> = Vec::new();
    unsafe {
        H5Ewalk2(
            H5E_DEFAULT,
            H5E_WALK_DOWNWARD,
            Some(collect_error),
            &mut raw as *mut Vec<RawEntry> as *mut c_void,
        );
        H5Eclear2(H5E_DEFAULT);
    }
    // Names are looked up after the walk: an API call inside it would clear the stack walked.
    raw.into_iter()
        .map(|e| StackEntry {
            class: message_text(|buf, len| unsafe { H5Eget_class_name(e.class, buf, len) }),
            minor: message_text(|buf, len| {
                let mut kind = hdf5_sys::h5e::H5E_type_t::H5E_MINOR;
                unsafe { H5Eget_msg(e.minor, &mut kind, buf, len) }
            }),
            func: e.func,
            desc: e.desc,
        })
        .collect()
}

/// What an entry holds while the stack is walked: its strings copied, its ids as they are.
struct RawEntry {
    class: hid_t,
    minor: hid_t,
    func: String,
    desc: String,
}

/// A name HDF5 writes into a buffer (`get(buf, len)` returns its length, or < 0).
fn message_text(get: impl FnOnce(*mut std::ffi::c_char, usize) -> isize) -> String {
    let mut buf = [0 as std::ffi::c_char; 256];
    if get(buf.as_mut_ptr(), buf.len()) <= 0 {
        take_nothing();
        return String::new();
    }
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// A failed lookup pushes on the stack: clear it, as there is nothing to report.
fn take_nothing() {
    unsafe { H5Eclear2(H5E_DEFAULT) };
}

unsafe extern "C" fn collect_error(
    _n: c_uint,
    err: *const H5E_error2_t,
    data: *mut c_void,
) -> herr_t {
    let entries = &mut *(data as *mut Vec<RawEntry>);
    let err = &*err;
    let text = |p: *const std::ffi::c_char| {
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    entries.push(RawEntry {
        class: err.cls_id,
        minor: err.min_num,
        func: text(err.func_name),
        desc: text(err.desc),
    });
    0
}

/// A Rust string as a C string for HDF5; interior NULs were rejected at the boundary.
pub fn cstr(s: &str) -> std::ffi::CString {
    std::ffi::CString::new(s).expect("strings reaching HDF5 have no interior NUL")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An operating-system error met below HDF5 keeps its error number, from HDF5's own
    /// drivers' words and from the h5tile_gds driver's alike.
    #[test]
    fn a_cause_below_hdf5_keeps_its_errno() {
        let entry = |class: &str, desc: &str, minor: &str| StackEntry {
            class: class.into(),
            func: "H5FD_sec2_open".into(),
            desc: desc.into(),
            minor: minor.into(),
        };
        let sec2 = entry(
            "HDF5",
            "unable to open file: name = 'a.h5', errno = 13, error message = 'Permission denied', flags = 0",
            "unable to open file",
        );
        let (status, cause, errno) = sec2.cause("cannot open 'a.h5'").unwrap();
        assert_eq!((status, errno), (H5TILE_ERR_IO, libc::EACCES));
        assert!(
            cause.starts_with("Permission denied: cannot open 'a.h5'"),
            "{cause}"
        );
        let gds = entry(
            h5tile_gds::ERROR_CLASS,
            "Disk quota exceeded: cannot write 'a.h5' (errno = 122, error message = 'Disk quota exceeded')",
            h5tile_gds::ErrorKind::Os.minor_text(),
        );
        assert_eq!(gds.cause("w").unwrap().2, libc::EDQUOT);
        let plain = entry("HDF5", "not an HDF5 file", "file signature not found");
        assert_eq!(plain.cause("w"), None);
    }
}
