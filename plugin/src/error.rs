//! What a failed callback reports. Each failure has a kind, pushed on HDF5's error stack as one
//! of the driver's own minor error codes, so that a caller (h5tile, or any HDF5 program walking
//! the stack) tells a refused `gds=on`, a failed device transfer and an operating-system error
//! apart by code rather than by wording.

use std::fmt;

/// The kinds of failure, one HDF5 minor error code each (registered under the class
/// `h5tile_gds`, see `host`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `gds=on` was asked for and cuFile cannot be used for this file.
    GdsRefused,
    /// Moving device memory failed (cuFile or the compat path).
    TransferFailed,
    /// The operating system refused (open, read, write, truncate, lock, delete).
    Os,
    /// Anything else: a bad configuration, a bogus argument from HDF5, an internal error.
    Driver,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::GdsRefused,
        Kind::TransferFailed,
        Kind::Os,
        Kind::Driver,
    ];

    /// The minor code's registered text (what `H5Eget_msg` returns for it).
    pub fn minor_text(self) -> &'static str {
        match self {
            Kind::GdsRefused => "gds=on refused: cuFile cannot be used",
            Kind::TransferFailed => "device memory transfer failed",
            Kind::Os => "operating-system error",
            Kind::Driver => "driver error",
        }
    }

    /// The kind whose minor code has this registered text.
    pub fn from_minor_text(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.minor_text() == text)
    }
}

/// The name of the driver's HDF5 error class (`H5Eget_class_name` of its errors).
pub const CLASS_NAME: &str = "h5tile_gds";

/// A failure of one callback: its kind and a message that leads with the cause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverError {
    pub kind: Kind,
    pub message: String,
}

impl DriverError {
    pub fn new(kind: Kind, message: impl Into<String>) -> DriverError {
        DriverError {
            kind,
            message: message.into(),
        }
    }

    /// An operating-system error while doing `what` (e.g. "cannot write 8 bytes at 0 of") on
    /// `path`: the OS reason first, then what failed and where, then the errno in the form
    /// HDF5's sec2 driver uses (`errno = N, error message = '...'`), from which h5py raises
    /// `FileNotFoundError`, `FileExistsError` and the like.
    pub fn os(what: &str, path: &str, e: &std::io::Error) -> DriverError {
        let reason = reason(e);
        let errno = e.raw_os_error().unwrap_or(0);
        DriverError::new(
            Kind::Os,
            format!("{reason}: {what} '{path}' (errno = {errno}, error message = '{reason}')"),
        )
    }
}

/// The OS's text for `e` without Rust's "(os error N)" suffix.
fn reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Plain messages are driver errors of the kind `Driver`.
impl From<String> for DriverError {
    fn from(message: String) -> DriverError {
        DriverError::new(Kind::Driver, message)
    }
}

impl From<&str> for DriverError {
    fn from(message: &str) -> DriverError {
        DriverError::new(Kind::Driver, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_lead_with_the_reason_and_carry_the_errno_as_sec2_does() {
        let e = DriverError::os(
            "cannot open",
            "/x/y.h5",
            &std::io::Error::from_raw_os_error(libc::ENOENT),
        );
        assert_eq!(e.kind, Kind::Os);
        assert_eq!(
            e.message,
            "No such file or directory: cannot open '/x/y.h5' \
             (errno = 2, error message = 'No such file or directory')"
        );
    }

    #[test]
    fn every_kind_has_its_own_minor_text() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_minor_text(k.minor_text()), Some(k));
        }
        assert_eq!(Kind::from_minor_text("something else"), None);
    }
}
