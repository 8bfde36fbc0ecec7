//! What the tests of the `h5tile` tool share: running it as users do (its exit status, its
//! text, its one JSON document), the kit's grid written as a file or as a series' checkpoint,
//! and a folder's files with their bytes.

// Each test file uses the part of the kit it needs.
#![allow(dead_code)]

use h5tile::internals::testkit::{
    flip_bits, grid_value, grid_values, read_f64, spawn_child, whole_grid, write_tiles, GRID_TILES,
};
use h5tile::internals::tool::{checkpoint_path, record_latest, temporary_master, tile_dir};
use h5tile::internals::{host_bytes, Dtype, Layout, LocalTile, Tile, WriteOptions};
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

/// A fresh folder holding the grid as `/g` of its file `name`, in `layout`; the folder (which
/// lasts as long as it is kept) and the file's path.
pub fn grid_in_new_folder(name: &str, layout: Layout) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join(name);
    write_grid(&m, "/g", layout, false);
    (d, m)
}

/// A fresh folder holding the grid as `/g` of `a.h5` and of `b.h5`, in `layouts` (in that
/// order); the folder and the two paths.
pub fn grids_a_and_b(layouts: [Layout; 2]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (d, a) = grid_in_new_folder("a.h5", layouts[0]);
    let b = d.path().join("b.h5");
    write_grid(&b, "/g", layouts[1], false);
    (d, a, b)
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
    command.args(args);
    output_of(command)
}

/// Runs `command` (the tool, or a program running it) as `h5tile` does; its output. The child
/// never holds (and keeps locked) a file another test has open (`testkit::spawn_child`).
pub fn output_of(mut command: Command) -> Output {
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    spawn_child(&mut command).wait_with_output().unwrap()
}

/// The (stdout, stderr) of `o`, as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Runs the tool and expects exit status `code`; returns (stdout, stderr).
pub fn run(args: &[&str], code: i32) -> (String, String) {
    exited(&h5tile(args), code, format_args!("h5tile {args:?}"))
}

/// The (stdout, stderr) of `o`, which `what` made, once its exit status is checked to be `code`.
pub fn exited(o: &Output, code: i32, what: std::fmt::Arguments) -> (String, String) {
    let (out, err) = text(o);
    assert_eq!(
        o.status.code(),
        Some(code),
        "{what}\nstdout:\n{out}\nstderr:\n{err}"
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
    flip_bits(&path, offset + at, 0x10);
    path
}

/// Flips one bit of tile `k`'s data (its first element's lowest byte, plus `at`) in the file
/// holding it; returns that file and the tile's byte range there.
pub fn flip_bit(master: &Path, k: usize, at: u64) -> (PathBuf, u64, u64) {
    let doc = run_json(&["ls", "-D", s(master)], 0);
    let t = &doc["datasets"][0]["virtual"]["tile_list"][k];
    let path = PathBuf::from(t["path"].as_str().unwrap());
    let offset = t["data_offset"].as_u64().unwrap();
    let (h, w) = (GRID_TILES[k].2, GRID_TILES[k].3);
    // A tile of a coalesced box: its rows in the box's, from its first element to its last.
    let (first, end) = match t["within"].as_array() {
        None => (offset, offset + h * w * 8),
        Some(within) => {
            let cols = within[1].as_u64().unwrap();
            let at: Vec<u64> = t["source_offset"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            let element = |r: u64, c: u64| offset + (r * cols + c) * 8;
            (element(at[0], at[1]), element(at[0] + h - 1, at[1] + w))
        }
    };
    flip_bits(&path, first + at, 0x10);
    (path, first, end)
}

/// Writes `/m` of `master`, `ntiles` rows of 4 float64 (element k is k), a tile each, in
/// `layout`; returns its elements.
pub fn write_rows(master: &Path, ntiles: u64, layout: Layout) -> Vec<f64> {
    let data: Vec<f64> = (0..4 * ntiles).map(|k| k as f64).collect();
    let tiles = (0..ntiles)
        .map(|t| LocalTile {
            tile: Tile::new(vec![t, 0], vec![1, 4]),
            buf: host_bytes(&data[4 * t as usize..4 * t as usize + 4]),
        })
        .collect();
    let options = WriteOptions {
        layout,
        ..WriteOptions::default()
    };
    write_tiles(master, "/m", Dtype::Float64, &[ntiles, 4], tiles, options).unwrap();
    data
}

/// The names of the files in `dir` starting with a dot (temporary files).
pub fn hidden_files(dir: &Path) -> Vec<PathBuf> {
    snapshot(dir)
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect()
}
