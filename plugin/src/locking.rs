//! Whether a file system without `flock` (which fails with `ENOSYS`) is tolerated, decided at
//! open as HDF5's sec2 driver decides it: `HDF5_USE_FILE_LOCKING` when set (read once, as HDF5
//! reads it), else the file-access property list's `H5Pset_file_locking(fapl, use,
//! ignore_when_disabled)`. Whether to lock at all is HDF5's choice: it calls `lock` only then.

use crate::abi::hid_t;
use crate::host;
use std::sync::OnceLock;

/// The choice for a file opened with file-access properties `fapl`.
pub fn ignore_disabled_locks(fapl: hid_t) -> bool {
    static ENVIRONMENT: OnceLock<Option<bool>> = OnceLock::new();
    let environment = *ENVIRONMENT
        .get_or_init(|| from_environment(std::env::var("HDF5_USE_FILE_LOCKING").ok().as_deref()));
    decide(
        environment,
        host::file_locking(fapl).map(|(_, ignore)| ignore),
    )
}

/// `HDF5_USE_FILE_LOCKING` as HDF5 reads it: `BEST_EFFORT` tolerates missing locks, `TRUE`,
/// `1`, `FALSE` and `0` do not (with the last two HDF5 never locks); anything else defers to
/// the property list.
fn from_environment(value: Option<&str>) -> Option<bool> {
    match value? {
        "BEST_EFFORT" => Some(true),
        "TRUE" | "1" | "FALSE" | "0" => Some(false),
        _ => None,
    }
}

/// The environment wins over the property list; neither means locks are required.
fn decide(environment: Option<bool>, property_list: Option<bool>) -> bool {
    environment.or(property_list).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_wins_over_the_property_list() {
        assert_eq!(from_environment(Some("BEST_EFFORT")), Some(true));
        assert_eq!(from_environment(Some("TRUE")), Some(false));
        assert_eq!(from_environment(Some("0")), Some(false));
        assert_eq!(from_environment(Some("best_effort")), None);
        assert_eq!(from_environment(None), None);
        assert!(decide(Some(true), Some(false)));
        assert!(!decide(Some(false), Some(true)));
        assert!(decide(None, Some(true)));
        assert!(!decide(None, None));
    }
}
