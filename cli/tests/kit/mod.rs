//! What the tests of the `h5tile` tool share: running it as users do (its exit status, its
//! text, its one JSON document), the kit's grid written as a file or as a series' checkpoint,
//! and a folder's files with their bytes.

// Each test file uses the part of the kit it needs.
#![allow(dead_code)]

use h5tile::internals::testkit::{grid_value, grid_values, read_f64, spawn_child, whole_grid};
use h5tile::internals::tool::{checkpoint_path, record_latest, temporary_master, tile_dir};
use h5tile::internals::{Layout, WriteOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The kit's 6x5 float64 grid (element (i, j) = 10 i + j) as `dataset` of `path`, in four
/// tiles.
pub fn write_grid(path: &Path, dataset: &str, layout: Layout, keep_others: bool) {
    let options = WriteOptions {
        layout,
        keep_others,
        ..WriteOptions::default()
    };
    h5tile::internals::testkit::write_grid(path, dataset, options, grid_value);
}

pub fn read_grid(path: &Path, dataset: &str) -> Vec<f64> {
    read_f64(path, dataset, &whole_grid()).unwrap()
}

pub fn expected_grid() -> Vec<f64> {
    grid_values(&whole_grid())
}

/// Runs the tool.
pub fn h5tile(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_h5tile"));
    command
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // The child never holds (and keeps locked) a file another test has open.
    spawn_child(&mut command).wait_with_output().unwrap()
}

/// Runs the tool and expects exit status `code`; returns (stdout, stderr).
pub fn run(args: &[&str], code: i32) -> (String, String) {
    let o = h5tile(args);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert_eq!(
        o.status.code(),
        Some(code),
        "h5tile {args:?}\nstdout:\n{out}\nstderr:\n{err}"
    );
    (out, err)
}

/// `out` as one JSON document (serde_json refuses anything after it).
pub fn document(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: not one JSON document:\n{out}"))
}

/// Runs the tool with `--json` and expects exit status `code`; returns the document.
pub fn run_json(args: &[&str], code: i32) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    document(&run(&all, code).0)
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file under `dir` with its bytes.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The names in folder `dir`, sorted.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// The checkpoint of `step` in series folder `dir`: the grid as `/g` (and, with `more`, as
/// `/h` beside it), in `layout`; recorded as the latest.
pub fn series_checkpoint(dir: &Path, step: u64, layout: Layout, more: bool) -> PathBuf {
    let path = checkpoint_path(dir, step);
    write_grid(&path, "/g", layout, false);
    if more {
        write_grid(&path, "/h", layout, true);
    }
    record_latest(dir, step, false).unwrap();
    path
}

/// What a write of `step` killed before its commit leaves in `dir`: a tile folder holding a
/// tile file, and a temporary master; their paths.
pub fn crashed_checkpoint(dir: &Path, step: u64) -> [PathBuf; 2] {
    let master = checkpoint_path(dir, step);
    let tiles = tile_dir(&master);
    std::fs::create_dir(&tiles).unwrap();
    std::fs::write(tiles.join("g.000000000000dead.r0.t0.h5"), b"half a tile").unwrap();
    let tmp = temporary_master(&master, 0xdead);
    std::fs::write(&tmp, b"half a master").unwrap();
    [tiles, tmp]
}

/// Flips one bit of the byte `at` of tile `k`'s bytes (counted from where the master records
/// they start) of the first dataset of `master`, in the file holding them; that file.
pub fn flip_tile_byte(master: &Path, k: usize, at: u64) -> PathBuf {
    let doc = run_json(&["ls", "-D", s(master)], 0);
    let t = &doc["datasets"][0]["virtual"]["tile_list"][k];
    let path = PathBuf::from(t["path"].as_str().unwrap());
    let offset = t["data_offset"].as_u64().unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[(offset + at) as usize] ^= 0x10;
    std::fs::write(&path, bytes).unwrap();
    path
}
