//! What the property-based tests (fuzz_*.rs) share beyond the crate's test kit
//! (`h5tile::internals::testkit`): how many cases a property runs, the grid they read (the
//! kit's 6x5 grid with values of their own), and the child process that runs one case where a
//! hang or a crash must be caught (`run_child_entry`).
#![allow(dead_code)]

use h5tile::internals::testkit::{self, grid_value, spawn_child};
use h5tile::internals::WriteOptions;
use proptest::prelude::ProptestConfig;
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// `default` cases per property, or `PROPTEST_CASES` for a longer run; nothing persisted.
pub fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// The grid the properties read: element (i, j) = 10 i + j + 0.5 + `shift`, in the kit's four
// tiles (`testkit::GRID_TILES`); tile k is in file `...r0.t<k>.h5`.

pub fn value(i: u64, j: u64, shift: f64) -> f64 {
    grid_value(i, j) + 0.5 + shift
}

/// The 6x5 float64 grid of four tiles as `/g` at `path`, values raised by `shift`.
pub fn write_grid(path: &Path, shift: f64) {
    let options = WriteOptions::default();
    testkit::write_grid(path, "/g", options, |i, j| value(i, j, shift));
}

/// The tile files of the grid's master at `path`, in tile order.
pub fn tile_files(master: &Path) -> Vec<PathBuf> {
    let files = testkit::tile_files(master);
    assert_eq!(files.len(), 4);
    files
}

/// The test where a child process enters, in each test binary that starts children. It is
/// `#[ignore]`d, so that a normal run passes over it (it has nothing to test there), and
/// `run_child_entry` runs it alone.
pub const CHILD_ENTRY: &str = "child_process_entry";

/// What a child process said: how it ended, its standard output and its standard error.
pub struct ChildOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Runs this test binary again for its test `CHILD_ENTRY` alone, with the variables `env` set,
/// and returns what the child said, however it ended: a crash is the caller's to judge. A child
/// still running after `limit` is killed: Err, a hang. Err too where the binary ran no test
/// (the entry renamed, or no longer ignored): a child that did nothing must not pass.
///
/// The entry prints its answers on stderr: libtest prints on stdout, and running one test on one
/// thread it prints `test <name> ... ` first, on the line the test's first answer would start.
pub fn run_child_entry(env: &[(&str, &OsStr)], limit: Duration) -> Result<ChildOutput, String> {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([CHILD_ENTRY, "--exact", "--ignored", "--nocapture"])
        .arg("--test-threads=1")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn_child(&mut command);
    // Each pipe read on a thread, so that a full one never blocks the child.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        let mut pipe = pipe.unwrap();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).unwrap();
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    // Polled: the standard library has no wait with a time limit.
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            return Err(format!("HANG: no answer after {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    // libtest's own line, printed before the test runs.
    if !stdout.lines().any(|l| l == "running 1 test") {
        return Err(format!(
            "the child ran no test {CHILD_ENTRY} ({status}); it said:\n{stdout}{stderr}"
        ));
    }
    Ok(ChildOutput {
        status,
        stdout,
        stderr,
    })
}
