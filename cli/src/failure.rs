//! How a command fails: a one-line message (`h5tile: <what failed>: <why>` on stderr) and the
//! exit status, which says what kind of failure it was; with `--json`, also one JSON document
//! on stdout saying the same.

use h5tile::internals::status::{self, Error};
use h5tile::internals::tool::FileError;
use serde::Serialize;

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
    /// The library's status, where the failure is one of its errors ("H5TILE_ERR_NOT_FOUND").
    pub status: Option<&'static str>,
    /// With --json, the command's own document, which carries this failure, is printed
    /// already: no other is.
    pub reported: bool,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            status: None,
            reported: false,
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

    /// This failure, its command's JSON document (which carries it) printed already.
    pub fn reported(self) -> Failure {
        Failure {
            reported: true,
            ..self
        }
    }

    /// The failure as JSON documents carry it.
    pub fn json(&self) -> FailureJson {
        FailureJson {
            exit: self.code,
            kind: match self.code {
                EXIT_PROBLEMS => "problems",
                _ => "usage",
            },
            status: self.status,
            message: self.message.clone(),
        }
    }
}

/// A failure in a JSON document: {"exit", "kind", "status", "message"}.
#[derive(Serialize)]
pub struct FailureJson {
    /// The exit status.
    exit: u8,
    /// "problems" (exit status 1) or "usage" (2).
    kind: &'static str,
    /// The library's status name, or null.
    status: Option<&'static str>,
    /// The line on stderr, without the leading "h5tile: ".
    message: String,
}

/// The document `--json` prints for a command that failed before it had any of its own:
/// {"ok": false, "command", "failure"}.
#[derive(Serialize)]
pub struct FailedJson {
    pub ok: bool,
    /// The command ("cp"), or null when the command line names none.
    pub command: Option<String>,
    pub failure: FailureJson,
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
        Failure {
            status: e.status.name().to_str().ok(),
            ..Failure::new(code, e.message)
        }
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
