//! How a command fails: a one-line message (`h5tile: <what failed>: <why>` on stderr) and the
//! exit status, which says what kind of failure it was.

use h5tile::internals::status::{self, Error};
use h5tile::internals::tool::FileError;

/// Exit status when a command found problems (`check`) or could not finish its work.
pub const EXIT_PROBLEMS: u8 = 1;
/// Exit status for a bad command line, an input that cannot be opened, or a refusal that an
/// option would lift (`--force`, `--shallow`).
pub const EXIT_USAGE: u8 = 2;

/// A failed command.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    /// What failed and why, without the leading "h5tile: ".
    pub message: String,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// A usage error or refusal (exit status 2).
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new(EXIT_USAGE, message)
    }

    /// A failure of the work itself (exit status 1).
    pub fn problems(message: impl Into<String>) -> Failure {
        Failure::new(EXIT_PROBLEMS, message)
    }

    /// An operating-system error while doing `what` (which names the path).
    pub fn io(what: impl std::fmt::Display, e: &std::io::Error) -> Failure {
        Failure::problems(format!("{what}: {e}"))
    }
}

/// A library error: an input that cannot be opened or read as HDF5 (missing, a folder, not
/// HDF5, no such dataset) is a usage error; anything else a failure of the work.
impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        let opening = matches!(
            e.status,
            status::H5TILE_ERR_NOT_FOUND
                | status::H5TILE_ERR_IS_DIRECTORY
                | status::H5TILE_ERR_NOT_A_DATASET
                | status::H5TILE_ERR_HDF5
        );
        let code = if opening { EXIT_USAGE } else { EXIT_PROBLEMS };
        Failure::new(code, e.message)
    }
}

/// A failure of `cp`, `rm` or `pack`: an input that cannot be described is classed as above, a
/// refusal is a usage error, anything else a failure of the work.
impl From<FileError> for Failure {
    fn from(e: FileError) -> Failure {
        match e {
            FileError::Input(e) => e.into(),
            FileError::Refused(message) => Failure::usage(message),
            FileError::Failed(message) => Failure::problems(message),
        }
    }
}
