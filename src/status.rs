//! Status codes and the error type every fallible function returns.
//!
//! The numbers are part of the C ABI: they never change and a retired number is never reused.

use std::fmt;

/// Outcome of every h5tile call. `H5TILE_OK` is success; every other value names what went
/// wrong, and `h5tile_last_error()` gives the message.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum h5tile_status {
    /// Success.
    H5TILE_OK = 0,
    /// NULL pointer, ndim out of range, a tile outside the global shape, a bad chunk shape,
    /// a buffer too small, or ranks disagreeing on path/dataset/dtype/shape.
    H5TILE_ERR_INVALID_ARGUMENT = 1,
    /// `path` names a directory.
    H5TILE_ERR_IS_DIRECTORY = 2,
    /// The file or the dataset does not exist.
    H5TILE_ERR_NOT_FOUND = 3,
    /// `dataset` names a group or another object that is not a dataset.
    H5TILE_ERR_NOT_A_DATASET = 4,
    /// Element type unsupported, or not convertible to the one asked for.
    H5TILE_ERR_DTYPE = 5,
    /// Tiles overlap or leave gaps, or a tile does not fit the dataset in the file.
    H5TILE_ERR_SHAPE = 6,
    /// `H5TILE_NO_OVERWRITE` was given and the target exists.
    H5TILE_ERR_EXISTS = 7,
    /// An operating-system error; the message carries the errno text and the path.
    H5TILE_ERR_IO = 8,
    /// The HDF5 library failed; the message carries the HDF5 error stack.
    H5TILE_ERR_HDF5 = 9,
    /// An MPI error, or a communicator given while MPI is not initialized.
    H5TILE_ERR_MPI = 10,
    /// The device-memory path failed.
    H5TILE_ERR_CUDA = 11,
    /// A tile file of a virtual dataset is missing or unreadable.
    H5TILE_ERR_MISSING_TILE = 12,
    /// An internal bug was caught at the C boundary.
    H5TILE_ERR_PANIC = 99,
}

pub use h5tile_status::*;

impl h5tile_status {
    /// The status with this number, if there is one (used when agreeing on errors over MPI).
    pub fn from_code(code: u32) -> Option<h5tile_status> {
        const ALL: [h5tile_status; 14] = [
            H5TILE_OK,
            H5TILE_ERR_INVALID_ARGUMENT,
            H5TILE_ERR_IS_DIRECTORY,
            H5TILE_ERR_NOT_FOUND,
            H5TILE_ERR_NOT_A_DATASET,
            H5TILE_ERR_DTYPE,
            H5TILE_ERR_SHAPE,
            H5TILE_ERR_EXISTS,
            H5TILE_ERR_IO,
            H5TILE_ERR_HDF5,
            H5TILE_ERR_MPI,
            H5TILE_ERR_CUDA,
            H5TILE_ERR_MISSING_TILE,
            H5TILE_ERR_PANIC,
        ];
        ALL.into_iter().find(|s| *s as u32 == code)
    }
}

/// A failure: the status the C caller sees and the message `h5tile_last_error()` returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub status: h5tile_status,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(status: h5tile_status, message: impl Into<String>) -> Error {
        Error {
            status,
            message: message.into(),
        }
    }

    /// An operating-system error while doing `what` to `path`: the OS reason first, then what
    /// failed and where ("No space left on device (os error 28): cannot sync '/p/x.h5'").
    pub fn io(what: &str, path: &std::path::Path, err: &std::io::Error) -> Error {
        Error::new(H5TILE_ERR_IO, format!("{err}: {what} '{}'", path.display()))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.status, self.message)
    }
}

impl std::error::Error for Error {}

/// Shorthand for `Err(Error::new(status, message))`.
pub fn fail<T>(status: h5tile_status, message: impl Into<String>) -> Result<T> {
    Err(Error::new(status, message))
}

/// Runs `f`, turning a panic into `H5TILE_ERR_PANIC`, so a bug on one rank becomes an error
/// every rank agrees on instead of a rank missing from the next collective.
pub fn catch_panic<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        fail(
            H5TILE_ERR_PANIC,
            format!("internal error (please report): {what}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_numbers() {
        assert_eq!(H5TILE_OK as u32, 0);
        assert_eq!(H5TILE_ERR_INVALID_ARGUMENT as u32, 1);
        assert_eq!(H5TILE_ERR_MISSING_TILE as u32, 12);
        assert_eq!(H5TILE_ERR_PANIC as u32, 99);
    }

    #[test]
    fn from_code_round_trips_and_rejects_unknown() {
        for code in (0..=12).chain([99]) {
            assert_eq!(h5tile_status::from_code(code).unwrap() as u32, code);
        }
        assert_eq!(h5tile_status::from_code(13), None);
        assert_eq!(h5tile_status::from_code(98), None);
    }

    #[test]
    fn panics_become_panic_errors() {
        assert_eq!(
            catch_panic(|| -> Result<()> { panic!("bug {}", 7) })
                .unwrap_err()
                .status,
            H5TILE_ERR_PANIC
        );
        assert!(catch_panic(|| -> Result<()> { panic!("bug {}", 7) })
            .unwrap_err()
            .message
            .contains("bug 7"));
        assert_eq!(catch_panic(|| Ok(3)), Ok(3));
    }

    #[test]
    fn io_error_names_path_and_errno_text() {
        let e = Error::io(
            "cannot create",
            std::path::Path::new("/x/y"),
            &std::io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert_eq!(e.status, H5TILE_ERR_IO);
        assert!(e.message.contains("/x/y"), "{}", e.message);
        assert!(e.message.starts_with("No space left"), "{}", e.message);
    }
}
