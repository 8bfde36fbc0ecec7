//! The `h5tile` tool run as users run it, on files h5tile wrote (VDS and subfiled layouts), on
//! a plain HDF5 file, and on virtual datasets h5tile did not write (relative and absolute
//! sources): what each command prints (text and JSON), its exit status, and what it does to
//! the files.

use h5tile::internals::hdf5::{self, Dataset, File, Handle, Plist, Space};
use h5tile::internals::testkit::{
    forget_chunk_checksums, grid_value, grid_values, read_f64, read_into, spawn_child, tile_files,
    whole_grid, write_tiles, GRID_TILES,
};
use h5tile::internals::tool::{Codec, Compression};
use h5tile::internals::{host_bytes, Dtype, Layout, LocalTile, ReadOptions, Tile, WriteOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The kit's 6x5 float64 grid (element (i, j) = 10 i + j) as `dataset` of `path`, in four
/// tiles.
fn write_grid(path: &Path, dataset: &str, layout: Layout, keep_others: bool) {
    let options = WriteOptions {
        layout,
        keep_others,
        ..WriteOptions::default()
    };
    h5tile::internals::testkit::write_grid(path, dataset, options, grid_value);
}

/// A fresh folder holding the grid as `/g` of its file `name`, in `layout`; the folder (which
/// lasts as long as it is kept) and the file's path.
fn grid_in_new_folder(name: &str, layout: Layout) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join(name);
    write_grid(&m, "/g", layout, false);
    (d, m)
}

/// A fresh folder holding the grid as `/g` of `a.h5` and of `b.h5`, in `layouts` (in that
/// order); the folder and the two paths.
fn grids_a_and_b(layouts: [Layout; 2]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (d, a) = grid_in_new_folder("a.h5", layouts[0]);
    let b = d.path().join("b.h5");
    write_grid(&b, "/g", layouts[1], false);
    (d, a, b)
}

fn read_grid(path: &Path, dataset: &str) -> Vec<f64> {
    read_f64(path, dataset, &whole_grid()).unwrap()
}

fn expected_grid() -> Vec<f64> {
    grid_values(&whole_grid())
}

/// Runs the tool.
fn h5tile(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_h5tile"));
    command.args(args);
    output_of(command)
}

/// Runs `command` (the tool, or a program running it) as `h5tile` does; its output. The child
/// never holds (and keeps locked) a file another test has open (`testkit::spawn_child`).
fn output_of(mut command: Command) -> Output {
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    spawn_child(&mut command).wait_with_output().unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Runs the tool and expects exit status `code`; returns (stdout, stderr).
fn run(args: &[&str], code: i32) -> (String, String) {
    exited(&h5tile(args), code, format_args!("h5tile {args:?}"))
}

/// The (stdout, stderr) of `o`, which `what` made, once its exit status is checked to be `code`.
fn exited(o: &Output, code: i32, what: std::fmt::Arguments) -> (String, String) {
    let (out, err) = text(o);
    assert_eq!(
        o.status.code(),
        Some(code),
        "{what}\nstdout:\n{out}\nstderr:\n{err}"
    );
    (out, err)
}

/// Runs the tool with `--json` and expects exit status `code`; returns the document.
fn run_json(args: &[&str], code: i32) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let (out, _) = run(&all, code);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: not JSON:\n{out}"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
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

#[test]
fn ls_describes_an_h5tile_vds_exactly() {
    let (_d, m) = grid_in_new_folder("grid.h5", Layout::Vds);

    let doc = run_json(&["ls", s(&m)], 0);
    assert_eq!(doc["file"], s(&m));
    let g = &doc["datasets"][0];
    assert_eq!(doc["datasets"].as_array().unwrap().len(), 1);
    assert_eq!(g["name"], "/g");
    assert_eq!(g["dtype"], "float64");
    assert_eq!(g["shape"], serde_json::json!([6, 5]));
    assert_eq!(g["storage"], "virtual");
    assert_eq!(g["bytes"], 240);
    let v = &g["virtual"];
    assert_eq!(v["layout"], "h5tile-vds");
    assert_eq!(v["tiles"], 4);
    assert_eq!(v["files"], 4);
    assert_eq!(v["checksummed"], true);
    assert_eq!(v["not_checksummed"], 0);
    assert!(
        v.get("tile_list").is_none(),
        "tiles listed with -l or -D only"
    );
    let generation = v["generation"].as_str().unwrap();
    assert_eq!(generation.len(), 16);
    let name = tile_files(&m)[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.contains(generation), "{name} is of write {generation}");

    let (out, _) = run(&["ls", s(&m)], 0);
    for part in [
        "/g",
        "float64",
        "(6, 5)",
        "virtual",
        "240 B",
        "h5tile VDS",
        "4 tiles in 4 files",
    ] {
        assert!(out.contains(part), "{part} in {out}");
    }
    assert!(out.contains(&format!("generation {generation}")), "{out}");
    assert!(out.contains(", checksummed"), "{out}");
}

#[test]
fn ls_long_and_decomposition_show_each_tile() {
    let (_d, m) = grid_in_new_folder("grid.h5", Layout::Vds);

    let doc = run_json(&["ls", "-l", "-D", s(&m), "/g"], 0);
    let tiles = doc["datasets"][0]["virtual"]["tile_list"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(tiles.len(), 4);
    for (t, &(r, c, h, w)) in tiles.iter().zip(&GRID_TILES) {
        assert_eq!(t["offset"], serde_json::json!([r, c]));
        assert_eq!(t["shape"], serde_json::json!([h, w]));
        assert_eq!(t["min"], grid_value(r, c));
        assert_eq!(t["max"], grid_value(r + h - 1, c + w - 1));
        assert_eq!(t["nan"], 0);
        assert_eq!(t["dataset"], "/tile");
        assert_eq!(t["found"], true);
        assert_eq!(t["checksummed"], true);
        assert!(t["file"].as_str().unwrap().starts_with("grid.h5.tiles/g."));
    }

    let (out, _) = run(&["ls", "-l", s(&m)], 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert!(
        lines[1].contains("tile 0") && lines[1].contains("[0:3, 0:2]"),
        "{out}"
    );
    assert!(
        lines[1].contains("min 0") && lines[1].contains("max 21"),
        "{out}"
    );
    assert!(
        lines[4].contains("min 32") && lines[4].contains("max 54"),
        "{out}"
    );
    assert!(lines[4].contains("nan 0"), "{out}");

    let (out, _) = run(&["ls", "-D", s(&m)], 0);
    let files = tile_files(&m);
    for (k, f) in files.iter().enumerate() {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let line = out
            .lines()
            .find(|l| l.contains(&name))
            .unwrap_or_else(|| panic!("{name} in {out}"));
        assert!(line.contains("/tile"), "{line}");
        assert!(line.contains(&format!("r0.t{k}.h5")), "{line}");
    }
    assert!(out.contains("[3:6, 2:5]  <- grid.h5.tiles/"), "{out}");
}

#[test]
fn ls_describes_subfiles_and_plain_files() {
    let (d, m) = grid_in_new_folder("sub.h5", Layout::Subfiles);
    let v = &run_json(&["ls", s(&m)], 0)["datasets"][0]["virtual"];
    assert_eq!(v["layout"], "h5tile-subfiles");
    assert_eq!(
        (v["tiles"].as_u64(), v["files"].as_u64()),
        (Some(4), Some(1))
    );
    assert_eq!(v["checksummed"], true);
    let (out, _) = run(&["ls", "-D", s(&m)], 0);
    assert!(
        out.contains("h5tile subfiles") && out.contains("4 tiles in 1 file,"),
        "{out}"
    );
    // The tiles fill the dataset: one box in the subfile, each tile a part of it.
    assert!(out.contains(".s0.h5 /box.f0[3:6, 2:5]"), "{out}");

    let plain = d.path().join("single.h5");
    write_grid(&plain, "/x/y", Layout::Single, false);
    let g = &run_json(&["ls", s(&plain)], 0)["datasets"][0];
    assert_eq!(g["name"], "/x/y");
    assert_eq!(g["storage"], "contiguous");
    assert_eq!(g["shape"], serde_json::json!([6, 5]));
    assert!(g.get("virtual").is_none());
    // The single-file layout's tiles, recorded on the dataset.
    assert_eq!(g["single"]["layout"], "h5tile-single");
    assert_eq!(
        (g["single"]["tiles"].as_u64(), g["single"]["files"].as_u64()),
        (Some(4), Some(0))
    );
    let (out, _) = run(&["ls", s(&plain)], 0);
    assert_eq!(
        out.trim(),
        "/x/y  float64  (6, 5)  contiguous  240 B  h5tile single-file, 4 tiles, checksummed"
    );
    let (out, _) = run(&["check", s(&plain)], 0);
    assert!(
        out.contains(
            "ok (1 single-file dataset, 4 tiles, 240 B of tile data verified against checksums)"
        ),
        "{out}"
    );
}

#[test]
fn check_names_a_flipped_bit_in_a_single_file_tile_by_the_rows_holding_it() {
    let (_d, m) = grid_in_new_folder("flat.h5", Layout::Single);
    let doc = run_json(&["ls", "-D", s(&m)], 0);
    let offset = doc["datasets"][0]["single"]["tile_list"][1]["data_offset"]
        .as_u64()
        .unwrap();
    // Tile 1 is [0:3, 2:5] of the 6 x 5 float64 grid: its rows are bytes 16..40, 56..80 and
    // 96..120 of the dataset. Flip a bit of its last row.
    let mut bytes = std::fs::read(&m).unwrap();
    bytes[(offset + 100) as usize] ^= 0x10;
    std::fs::write(&m, bytes).unwrap();
    let (out, err) = run(&["check", s(&m)], 1);
    let line = out
        .lines()
        .find(|l| l.contains("do not match"))
        .unwrap_or_else(|| panic!("{out}"));
    let (start, end) = (offset + 16, offset + 120);
    assert!(
        line.contains(&format!(
            "file '{}' tile [0:3, 2:5] bytes {start}..{end} ",
            s(&m)
        )),
        "{line}"
    );
    assert!(err.starts_with("h5tile: check found 1 problem"), "{err}");
    let doc = run_json(&["check", s(&m)], 1);
    let p = &doc["files"][0]["datasets"][0]["problems"][0];
    assert_eq!(p["bytes"], serde_json::json!([start, end]));
    assert_eq!(
        (p["kind"].as_str(), p["offset"].clone()),
        (Some("file"), serde_json::json!([0, 2]))
    );
    assert_eq!(doc["files"][0]["datasets"][0]["verified_bytes"], 240 - 72);
    let (out, _) = run(&["check", "--fast", s(&m)], 0);
    assert!(out.contains("checksums not read (--fast)"), "{out}");
}

#[test]
fn check_passes_clean_files_of_both_layouts() {
    let (_d, a, b) = grids_a_and_b([Layout::Vds, Layout::Subfiles]);
    let (out, _) = run(&["check", s(&a), s(&b)], 0);
    assert!(
        out.contains("a.h5: ok (1 virtual dataset, 4 tiles, 240 B of tile data verified"),
        "{out}"
    );
    assert!(out.contains("b.h5: ok"), "{out}");
    let doc = run_json(&["check", s(&a), s(&b)], 0);
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["files"][0]["datasets"][0]["verified_bytes"], 240);
    assert_eq!(doc["files"][1]["datasets"][0]["checksummed_tiles"], 4);
}

/// Every line of `err` is a progress line of `check` through 240 bytes, the last saying all
/// of them are done.
fn progress_lines(err: &str) -> bool {
    let lines: Vec<&str> = err.lines().collect();
    lines
        .iter()
        .all(|l| l.starts_with("verifying checksums: ") && l.ends_with(" of 240 B"))
        && lines.last() == Some(&"verifying checksums: 240 B of 240 B")
}

#[test]
fn progress_on_a_pipe_is_lines_with_always_and_nothing_otherwise() {
    let (_d, m) = grid_in_new_folder("a.h5", Layout::Vds);
    // auto, the default: no progress where stderr is not a terminal
    let (text, err) = run(&["check", s(&m)], 0);
    assert!(text.contains("a.h5: ok"), "{text}");
    assert_eq!(err, "", "auto on a pipe");
    let (json, err) = run(&["check", "--json", s(&m)], 0);
    assert_eq!(err, "", "auto with --json");
    // always: plain lines on stderr, stdout as it was, the JSON document too
    let (out, err) = run(&["check", "--progress", "always", s(&m)], 0);
    assert_eq!(out, text);
    assert!(progress_lines(&err), "always on a pipe:\n{err}");
    let (out, err) = run(&["check", "--json", "--progress=always", s(&m)], 0);
    assert_eq!(out, json);
    serde_json::from_str::<Value>(&out).unwrap();
    assert!(progress_lines(&err), "always with --json:\n{err}");
    // never, and auto said outright
    for when in ["never", "auto"] {
        let (out, err) = run(&["check", "--progress", when, s(&m)], 0);
        assert_eq!((out.as_str(), err.as_str()), (text.as_str(), ""), "{when}");
    }
    let (_, err) = run(&["check", "--progress", "sometimes", s(&m)], 2);
    assert!(err.contains("sometimes") && err.contains("always"), "{err}");
}

#[test]
fn progress_on_a_terminal_is_the_bar() {
    // A pseudo-terminal for the tool's stdout and stderr: util-linux `script`.
    if Command::new("script").arg("--version").output().is_err() {
        println!("skipped: no `script` (util-linux) to run h5tile in a pseudo-terminal");
        return;
    }
    let (_d, m) = grid_in_new_folder("a.h5", Layout::Vds);
    let in_terminal = |when: &str| {
        let line = format!(
            "'{}' check --progress {when} '{}'",
            env!("CARGO_BIN_EXE_h5tile"),
            s(&m)
        );
        let mut command = Command::new("script");
        command
            .args(["-qec", &line, "/dev/null"])
            .env("TERM", "xterm")
            .stdin(std::process::Stdio::null());
        let o = output_of(command);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{line}\n{out}\n{err}");
        out
    };
    // always: the bar from the start (not the lines written where there is no terminal)
    let out = in_terminal("always");
    assert!(
        out.contains("verifying checksums [") && out.contains("/240 B ("),
        "no bar:\n{out:?}"
    );
    assert!(!out.contains("verifying checksums:"), "{out:?}");
    assert!(out.contains("a.h5: ok"), "{out:?}");
    // auto: work shorter than a second shows none; never: none
    for when in ["auto", "never"] {
        let out = in_terminal(when);
        assert!(!out.contains("verifying checksums"), "{when}:\n{out:?}");
        assert!(out.contains("a.h5: ok"), "{when}:\n{out:?}");
    }
}

/// Flips one bit of tile `k`'s data (its first element's lowest byte, plus `at`) in the file
/// holding it; returns that file and the tile's byte range there.
fn flip_bit(master: &Path, k: usize, at: u64) -> (PathBuf, u64, u64) {
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
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[(first + at) as usize] ^= 0x10;
    std::fs::write(&path, bytes).unwrap();
    (path, first, end)
}

#[test]
fn check_names_a_flipped_bit_and_its_byte_range_and_fast_does_not_read_bytes() {
    for layout in [Layout::Vds, Layout::Subfiles] {
        let (_d, m) = grid_in_new_folder("grid.h5", layout);
        let (file, start, end) = flip_bit(&m, 1, 3);
        let (out, err) = run(&["check", s(&m)], 1);
        let line = out
            .lines()
            .find(|l| l.contains("do not match"))
            .unwrap_or_else(|| panic!("{layout:?}: {out}"));
        assert!(line.contains(s(&file)), "{line}");
        assert!(line.contains("holding [0:3, 2:5]"), "{line}");
        assert!(line.contains(&format!("bytes {start}..{end} ")), "{line}");
        assert!(err.starts_with("h5tile: check found 1 problem"), "{err}");
        let doc = run_json(&["check", s(&m)], 1);
        assert_eq!(doc["ok"], false);
        let p = &doc["files"][0]["datasets"][0]["problems"][0];
        assert_eq!(p["bytes"], serde_json::json!([start, end]));
        assert_eq!(p["file"], s(&file));
        assert_eq!(p["offset"], serde_json::json!([0, 2]));
        // --fast reads no tile bytes: the sizes are right, so all looks well.
        let (out, _) = run(&["check", "--fast", s(&m)], 0);
        assert!(out.contains("checksums not read (--fast)"), "{out}");
    }
}

/// `h5tile check MASTER`'s output, then `check --fast`'s, each expected to exit 1.
fn check_finding_problems(master: &Path) -> [String; 2] {
    [&[][..], &["--fast"][..]].map(|more| {
        let mut args = vec!["check", s(master)];
        args.extend_from_slice(more);
        run(&args, 1).0
    })
}

#[test]
fn check_and_fast_check_name_a_deleted_tile_file() {
    let (_d, m) = grid_in_new_folder("grid.h5", Layout::Vds);
    let gone = tile_files(&m)[2].clone();
    std::fs::remove_file(&gone).unwrap();
    for out in check_finding_problems(&m) {
        let line = out.lines().next().unwrap();
        assert!(
            line.contains(s(&gone)) && line.ends_with("does not exist"),
            "{line}"
        );
        assert!(
            line.starts_with(&format!("{}: /g: tile file", s(&m))),
            "{line}"
        );
        assert!(line.contains("holding [3:6, 0:2]"), "{line}");
    }
}

/// A tile file or subfile whose HDF5 signature is overwritten: h5tile's reads go to the
/// recorded bytes and would not notice, but HDF5, h5py and h5dump cannot open the file, so
/// `check` (with `--fast` too) opens every source with HDF5 and names the file and what failed.
#[test]
fn check_opens_every_source_with_hdf5_as_other_readers_do() {
    for layout in [Layout::Vds, Layout::Subfiles] {
        let (_d, m) = grid_in_new_folder("grid.h5", layout);
        let damaged = tile_files(&m)[0].clone();
        let mut bytes = std::fs::read(&damaged).unwrap();
        // At byte 0, or after a subfile's stamp (its user block).
        let signature = bytes
            .windows(8)
            .position(|w| w == b"\x89HDF\r\n\x1a\n")
            .unwrap();
        bytes[signature] ^= 0xff;
        std::fs::write(&damaged, bytes).unwrap();
        for out in check_finding_problems(&m) {
            let line = out.lines().next().unwrap();
            assert!(
                line.contains(&format!("'{}'", s(&damaged)))
                    && line.contains("cannot be opened with HDF5"),
                "{out}"
            );
        }
    }
}

/// Writes `/m` of `master`, `ntiles` rows of 4 float64 (element k is k), a tile each, in
/// `layout`; returns its elements.
fn write_rows(master: &Path, ntiles: u64, layout: Layout) -> Vec<f64> {
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

/// For a dataset of many source files, `check` shares the HDF5 opens among processes (the
/// hidden `check-part` command, one share each): the problems found are the same, in the same
/// order, as one process finds, and a share finds exactly the problems of its files.
#[test]
fn check_shares_many_sources_among_processes_with_the_same_findings() {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join("many.h5");
    let ntiles = 600u64;
    write_rows(&m, ntiles, Layout::Vds);
    let doc = run_json(&["ls", "-l", s(&m), "/m"], 0);
    let file_of = |t: usize| {
        let list = &doc["datasets"][0]["virtual"]["tile_list"];
        d.path().join(list[t]["file"].as_str().unwrap())
    };
    // Tile 3's file (the 4th opened: odd, the second of two shares) cannot be opened by HDF5;
    // tile 4's (the first share) is cut short; tile 10's is gone (reported by the first).
    let unopenable = file_of(3);
    let mut bytes = std::fs::read(&unopenable).unwrap();
    bytes[0] ^= 0xff;
    std::fs::write(&unopenable, bytes).unwrap();
    let short = file_of(4);
    let len = std::fs::metadata(&short).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&short)
        .unwrap();
    f.set_len(len - 8).unwrap();
    std::fs::remove_file(file_of(10)).unwrap();

    let (alone, _) = run(&["check", "--fast", "--threads", "1", s(&m)], 1);
    let (shared, _) = run(&["check", "--fast", "--threads", "4", s(&m)], 1);
    assert_eq!(shared, alone);
    let lines: Vec<&str> = alone.lines().collect();
    assert_eq!(lines.len(), 4, "{alone}");
    for (line, (file, what)) in lines.iter().zip([
        (&unopenable, "cannot be opened with HDF5"),
        (&short, "bytes long; the master records"),
        (&file_of(10), "does not exist"),
    ]) {
        assert!(line.contains(s(file)) && line.contains(what), "{alone}");
    }

    let (part, _) = run(&["check-part", s(&m), "/m", "1", "2", "600"], 0);
    let found: Vec<(usize, String)> = part
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(found.len(), 1, "{part}");
    assert_eq!(found[0].0, 3);
    assert!(
        found[0].1.starts_with("cannot be opened with HDF5"),
        "{part}"
    );
    // A master that no longer maps what the parent saw is refused, not misread.
    run(&["check-part", s(&m), "/m", "1", "2", "599"], 2);
}

/// `h5tile ls -l` piped into `head` ends quietly when `head` stops reading, as Unix tools do:
/// no panic about a broken pipe on stderr.
#[test]
fn ls_into_a_pipe_closed_early_ends_quietly() {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join("many.h5");
    write_rows(&m, 4000, Layout::Subfiles);
    let script = format!(
        "'{}' ls -l '{}' | head -n 1",
        env!("CARGO_BIN_EXE_h5tile"),
        s(&m)
    );
    let mut command = Command::new("sh");
    command.args(["-c", &script]);
    let (out, err) = exited(&output_of(command), 0, format_args!("{script}"));
    assert!(out.starts_with("/m "), "{out}");
    assert!(err.is_empty(), "{err}");
}

/// A read of more tile files than the process may open at once (here `pack` reading 600 tile
/// files whole under `ulimit -n 128`) runs as several plans, each holding a share of the files
/// open: it succeeds, where holding them all failed with "Too many open files".
#[test]
fn a_read_of_more_tile_files_than_may_be_open_at_once_succeeds() {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join("many.h5");
    let ntiles = 600u64;
    let data = write_rows(&m, ntiles, Layout::Vds);
    let packed = d.path().join("packed.h5");
    let script = format!(
        "ulimit -n 128 && exec '{}' pack '{}' '{}'",
        env!("CARGO_BIN_EXE_h5tile"),
        s(&m),
        s(&packed)
    );
    let mut command = Command::new("sh");
    command.args(["-c", &script]);
    exited(&output_of(command), 0, format_args!("{script}"));
    let mut got = vec![0f64; data.len()];
    let all = Tile::new(vec![0, 0], vec![ntiles, 4]);
    read_into(
        &packed,
        "/m",
        Dtype::Float64,
        &all,
        &mut got,
        ReadOptions::default(),
    )
    .unwrap();
    assert_eq!(got, data);
}

#[test]
fn check_names_a_truncated_subfile_by_its_size() {
    let (_d, m) = grid_in_new_folder("grid.h5", Layout::Subfiles);
    let sub = tile_files(&m)[0].clone();
    let len = std::fs::metadata(&sub).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&sub)
        .unwrap()
        .set_len(len - 8)
        .unwrap();
    let (out, _) = run(&["check", "--fast", s(&m)], 1);
    assert!(out.contains(&format!("subfile '{}'", s(&sub))), "{out}");
    assert!(
        out.contains(&format!(
            "is {} bytes long; the master records {len}",
            len - 8
        )),
        "{out}"
    );
}

#[test]
fn cp_copies_a_master_with_its_tiles_and_leaves_the_original_untouched() {
    for layout in [Layout::Vds, Layout::Subfiles] {
        let d = tempfile::tempdir().unwrap();
        let src_dir = d.path().join("run");
        let m = src_dir.join("grid.h5");
        write_grid(&m, "/g", layout, false);
        write_grid(&m, "/h", layout, true);
        let before = snapshot(&src_dir);
        let dst = d.path().join("archive/100%~copy.h5");
        std::fs::create_dir(d.path().join("archive")).unwrap();

        let doc = run_json(&["cp", s(&m), s(&dst)], 0);
        assert_eq!(doc["master_rewritten"], true);
        let copied = doc["copied"].as_array().unwrap();
        assert_eq!(copied.len(), if layout == Layout::Vds { 8 } else { 2 });
        assert!(copied.iter().all(|c| c["verified"] == "checksums"), "{doc}");
        assert_eq!(snapshot(&src_dir), before, "the original is untouched");

        // The copy has its own tile folder (a '%' of the name escaped), reads on its own, and
        // checks clean.
        let dir = d.path().join("archive/100~25~7Ecopy.h5.tiles");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), copied.len());
        let hidden: Vec<_> = snapshot(&d.path().join("archive"))
            .into_iter()
            .filter(|(p, _)| p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .collect();
        assert!(hidden.is_empty(), "no temporary file left");
        std::fs::rename(&src_dir, d.path().join("gone")).unwrap();
        assert_eq!(read_grid(&dst, "/g"), expected_grid());
        assert_eq!(read_grid(&dst, "/h"), expected_grid());
        run(&["check", s(&dst)], 0);
        let v = &run_json(&["ls", s(&dst), "/g"], 0)["datasets"][0]["virtual"];
        assert!(v["layout"].as_str().unwrap().starts_with("h5tile-"), "{v}");
    }
}

/// Runs the tool in folder `cwd`; expects exit status `code`; returns (stdout, stderr).
fn run_in(cwd: &Path, args: &[&str], code: i32) -> (String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_h5tile"));
    command.args(args).current_dir(cwd);
    exited(
        &output_of(command),
        code,
        format_args!("h5tile {args:?} in {cwd:?}"),
    )
}

/// The README's `h5tile cp run/out.h5 archive/` with no `archive/` yet, then a tile lost from
/// the copy: the copy's tiles are looked up beside it only, never under the working folder
/// (which holds the original's, under the same relative names, as HDF5's last resort would
/// find them), so check, cp and pack of the damaged copy fail from any folder.
#[test]
fn a_copy_that_lost_a_tile_never_borrows_it_from_the_working_directory() {
    for layout in [Layout::Vds, Layout::Subfiles] {
        let d = tempfile::tempdir().unwrap();
        let run_dir = d.path().join("run");
        write_grid(&run_dir.join("ckpt.h5"), "/g", layout, false);
        let (out, _) = run_in(&run_dir, &["cp", "ckpt.h5", "miss/"], 0);
        assert!(out.contains("miss/ckpt.h5"), "{out}");
        run_in(&run_dir, &["check", "miss/ckpt.h5"], 0);
        let lost = tile_files(&run_dir.join("miss/ckpt.h5")).pop().unwrap();
        std::fs::remove_file(&lost).unwrap();
        let name = lost.file_name().unwrap().to_str().unwrap();
        for cwd in [run_dir.as_path(), Path::new("/")] {
            let master = match cwd == run_dir {
                true => PathBuf::from("miss/ckpt.h5"),
                false => run_dir.join("miss/ckpt.h5"),
            };
            let (out, _) = run_in(cwd, &["check", s(&master)], 1);
            assert!(
                out.contains(name) && out.contains("does not exist"),
                "{out}"
            );
        }
        let (out, _) = run_in(&run_dir, &["rm", "--dry-run", "miss/ckpt.h5"], 0);
        assert!(
            out.contains(&format!(
                "missing '{}'",
                s(&Path::new("miss/ckpt.h5.tiles").join(name))
            )) && !out.contains(&format!("would remove 'miss/ckpt.h5.tiles/{name}'")),
            "{out}"
        );
        let before = snapshot(d.path());
        let (_, err) = run_in(&run_dir, &["cp", "miss/ckpt.h5", "x/"], 1);
        assert!(err.contains(name), "{err}");
        let (_, err) = run_in(&run_dir, &["pack", "miss/ckpt.h5", "packed.h5"], 1);
        assert!(err.contains(name), "{err}");
        assert_eq!(
            snapshot(d.path()),
            before,
            "nothing was made of the damaged copy"
        );
    }
}

#[test]
fn cp_refuses_to_overwrite_without_force_and_replaces_with_it() {
    let (d, a, b) = grids_a_and_b([Layout::Vds, Layout::Vds]);
    let old_tiles = tile_files(&b);
    let before = snapshot(d.path());
    let (_, err) = run(&["cp", s(&a), s(&b)], 2);
    assert!(
        err.starts_with(&format!("h5tile: cannot copy to '{}'", s(&b))),
        "{err}"
    );
    assert!(err.contains("--force"), "{err}");
    assert_eq!(snapshot(d.path()), before, "nothing changed");

    run(&["cp", "--force", s(&a), s(&b)], 0);
    assert_eq!(read_grid(&b, "/g"), expected_grid());
    let new_tiles = tile_files(&b);
    assert_eq!(new_tiles.len(), 4);
    assert!(
        old_tiles.iter().all(|t| !t.exists()),
        "the replaced copy's tiles are gone"
    );
    let (_, err) = run(&["cp", s(&a), s(&a)], 2);
    assert!(err.contains("same file"), "{err}");
    // Into a folder: under the same name, no rewriting needed.
    let sub = d.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let doc = run_json(&["cp", s(&a), s(&sub)], 0);
    assert_eq!(doc["master_rewritten"], false);
    assert_eq!(read_grid(&sub.join("a.h5"), "/g"), expected_grid());
}

#[test]
fn cp_of_a_damaged_master_fails_and_leaves_nothing() {
    let (d, m) = grid_in_new_folder("grid.h5", Layout::Vds);
    let (file, start, end) = flip_bit(&m, 3, 0);
    let dst = d.path().join("new/copy.h5");
    let (_, err) = run(&["cp", s(&m), s(&dst)], 1);
    assert!(
        err.starts_with(&format!(
            "h5tile: cannot copy '{}': the original is damaged: /g: tile file '{}'",
            s(&m),
            s(&file)
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("bytes {start}..{end} do not match")),
        "{err}"
    );
    assert!(
        !d.path().join("new").exists(),
        "no half copy: {:?}",
        snapshot(d.path())
            .into_iter()
            .map(|(p, _)| p)
            .collect::<Vec<_>>()
    );
}

/// A virtual dataset as h5py or Legate writes it: `/data`, the 6x5 grid from two row blocks,
/// files `names[k]` (relative to `dir`, or absolute) holding dataset `/d`.
fn write_foreign_vds(master: &Path, dir: &Path, names: [&str; 2]) {
    let _l = hdf5::lock();
    let t = Dtype::Float64.hdf5_type().unwrap();
    let dcpl = Plist::dataset_create().unwrap();
    for (k, name) in names.iter().enumerate() {
        let rows = 3 * k as u64;
        let values: Vec<f64> = (0..15).map(|i| grid_value(rows + i / 5, i % 5)).collect();
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let f = File::create(&path).unwrap();
        let space = Space::simple(&[3, 5]).unwrap();
        let d = Dataset::create(&f, "/d", &t, &space, &Plist::dataset_create().unwrap()).unwrap();
        d.write_buffer(&t, host_bytes(&values)).unwrap();
        drop(d);
        f.close().unwrap();
        let vspace = Space::simple(&[6, 5]).unwrap();
        vspace.select_block(&[rows, 0], &[3, 5]).unwrap();
        dcpl.add_virtual_mapping(&vspace, name, "/d", &space)
            .unwrap();
    }
    let f = File::create(master).unwrap();
    Dataset::create(&f, "/data", &t, &Space::simple(&[6, 5]).unwrap(), &dcpl).unwrap();
    f.close().unwrap();
}

#[test]
fn virtual_datasets_h5tile_did_not_write_are_listed_checked_and_copied_as_they_allow() {
    let d = tempfile::tempdir().unwrap();
    let rel = d.path().join("rel.h5");
    write_foreign_vds(&rel, d.path(), ["rel_src/p0.h5", "rel_src/p1.h5"]);
    let v = &run_json(&["ls", s(&rel)], 0)["datasets"][0]["virtual"];
    assert_eq!(v["layout"], "other");
    assert_eq!(
        (v["tiles"].as_u64(), v["files"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(
        (&v["checksummed"], &v["not_checksummed"]),
        (&Value::Bool(false), &serde_json::json!(2))
    );
    assert!(v["generation"].is_null());
    let (out, _) = run(&["check", s(&rel)], 0);
    assert!(out.contains("not checksummed"), "{out}");

    // Relative sources go with the copy, to the same place relative to it.
    let other = d.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let doc = run_json(&["cp", s(&rel), s(&other.join("r.h5"))], 0);
    assert_eq!(doc["copied"][0]["verified"], "bytes");
    assert!(other.join("rel_src/p1.h5").is_file());
    assert_eq!(read_grid(&other.join("r.h5"), "/data"), expected_grid());
    // Within their folder, the copy shares them.
    let doc = run_json(&["cp", s(&rel), s(&d.path().join("rel2.h5"))], 0);
    assert_eq!(doc["shared"].as_array().unwrap().len(), 2);

    // A source that does not fit its mapping is named.
    let bad = d.path().join("rel_src/p1.h5");
    std::fs::remove_file(&bad).unwrap();
    let f = File::create(&bad).unwrap();
    let t = Dtype::Float64.hdf5_type().unwrap();
    Dataset::create(
        &f,
        "/d",
        &t,
        &Space::simple(&[2, 5]).unwrap(),
        &Plist::dataset_create().unwrap(),
    )
    .unwrap();
    drop(f);
    let (out, _) = run(&["check", s(&rel)], 1);
    assert!(out.contains(&format!("source file '{}'", s(&bad))), "{out}");
    assert!(
        out.contains("shape [2, 5], which does not hold the mapped box of shape [3, 5]"),
        "{out}"
    );

    // Absolute sources (Legate's): cp refuses, or copies the master alone with --shallow.
    let abs = d.path().join("legate.h5");
    let src_dir = d.path().join("legate_vds");
    let names = [src_dir.join("0.h5"), src_dir.join("1.h5")];
    write_foreign_vds(&abs, d.path(), [s(&names[0]), s(&names[1])]);
    run(&["check", s(&abs)], 0);
    let (_, err) = run(&["cp", s(&abs), s(&other.join("l.h5"))], 2);
    assert!(
        err.contains("absolute") && err.contains("--shallow"),
        "{err}"
    );
    assert!(!other.join("l.h5").exists());
    let doc = run_json(&["cp", "--shallow", s(&abs), s(&other.join("l.h5"))], 0);
    assert_eq!(doc["copied"].as_array().unwrap().len(), 0);
    assert_eq!(read_grid(&other.join("l.h5"), "/data"), expected_grid());
    std::fs::remove_file(&names[1]).unwrap();
    let (out, _) = run(&["check", s(&abs)], 1);
    assert!(
        out.contains(&format!(
            "source file '{}' holding [3:6, 0:5] does not exist",
            s(&names[1])
        )),
        "{out}"
    );
}

#[test]
fn rm_removes_the_master_and_exactly_its_files() {
    let (d, m) = grid_in_new_folder("grid.h5", Layout::Vds);
    write_grid(&m, "/h", Layout::Subfiles, true);
    let neighbour = d.path().join("grid2.h5");
    write_grid(&neighbour, "/g", Layout::Vds, false);
    // A file the master does not refer to, in its tile folder: another dataset's tile.
    let foreign = h5tile::internals::tool::tile_dir(&m).join("k.0000000000000001.r0.t0.h5");
    std::fs::copy(&tile_files(&m)[0], &foreign).unwrap();
    let ours: Vec<PathBuf> = tile_files(&m)
        .into_iter()
        .filter(|p| *p != foreign)
        .collect();
    assert_eq!(ours.len(), 5);

    let doc = run_json(&["rm", "--dry-run", s(&m)], 0);
    assert_eq!(doc["removed"].as_array().unwrap().len(), 6, "{doc}");
    assert!(
        m.exists() && ours.iter().all(|p| p.exists()),
        "a dry run removes nothing"
    );

    let (out, _) = run(&["rm", s(&m)], 0);
    assert!(!m.exists());
    for p in &ours {
        assert!(!p.exists(), "{}", p.display());
        assert!(out.contains(&format!("removed '{}'", s(p))), "{out}");
    }
    assert!(
        foreign.exists(),
        "a file the master did not name stays, and so its folder"
    );
    assert_eq!(read_grid(&neighbour, "/g"), expected_grid());
    std::fs::remove_file(&foreign).unwrap();

    run(&["rm", s(&neighbour)], 0);
    assert!(
        !h5tile::internals::tool::tile_dir(&neighbour).exists(),
        "an emptied folder goes"
    );
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        1,
        "only grid.h5.tiles is left"
    );
}

#[test]
fn bad_inputs_exit_2_naming_the_path() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("missing.h5");
    let text_file = d.path().join("notes.h5");
    std::fs::write(&text_file, "not HDF5 at all").unwrap();
    for command in ["ls", "check", "rm"] {
        let (_, err) = run(&[command, s(&missing)], 2);
        assert_eq!(
            err,
            format!("h5tile: cannot open '{}': no such file\n", s(&missing)),
            "{command}"
        );
        let (out, err) = run(&[command, s(&text_file)], 2);
        assert!(
            err.starts_with(&format!(
                "h5tile: cannot open '{}': not an HDF5 file",
                s(&text_file)
            )),
            "{command}: {err}"
        );
        // Said once, on stderr.
        assert_eq!(err.lines().count(), 1, "{command}: {err}");
        assert!(!out.contains("not an HDF5 file"), "{command}: {out}");
        let (_, err) = run(&[command, s(d.path())], 2);
        assert!(err.contains("is a directory"), "{command}: {err}");
    }
    assert!(text_file.exists(), "rm removes no file that is not HDF5");
    let (_, err) = run(&["cp", s(&missing), s(&d.path().join("x.h5"))], 2);
    assert!(err.contains(s(&missing)), "{err}");
    let m = d.path().join("grid.h5");
    write_grid(&m, "/g", Layout::Vds, false);
    let (_, err) = run(&["ls", s(&m), "/nope"], 2);
    assert_eq!(err, format!("h5tile: no dataset '/nope' in '{}'\n", s(&m)));
    let doc = run_json(&["check", s(&m), s(&missing)], 2);
    assert_eq!(doc["ok"], false);
    assert!(doc["files"][1]["error"]
        .as_str()
        .unwrap()
        .contains("no such file"));
    assert_eq!(
        doc["files"][0]["datasets"][0]["problems"],
        serde_json::json!([])
    );
    run(&["frobnicate"], 2);
    run(&["ls"], 2);
}

#[test]
fn help_completions_and_version() {
    for command in ["ls", "check", "cp", "rm"] {
        let (out, _) = run(&[command, "--help"], 0);
        if command == "ls" || command == "check" {
            assert!(out.contains("series folder"), "{command}: {out}");
        }
        assert!(
            out.contains("Exit status") && out.contains("Example"),
            "{command}: {out}"
        );
        assert!(out.contains("--json"), "{command}: {out}");
        assert!(out.contains("--progress <WHEN>"), "{command}: {out}");
    }
    let (out, _) = run(&["completions", "bash"], 0);
    assert!(out.contains("h5tile") && out.contains("complete"), "{out}");
    let (out, _) = run(&["--version"], 0);
    assert!(out.starts_with("h5tile "), "{out}");
}

/// The bytes of element `flat` (its index in C order) of a test array of `dtype`: 0 or 1 for
/// bool, a pattern of every byte value otherwise (NaNs included: nothing converts them).
fn element_bytes(dtype: Dtype, flat: u64) -> Vec<u8> {
    match dtype {
        Dtype::Bool => vec![(flat % 3 == 1) as u8],
        _ => (0..dtype.size() as u64)
            .map(|b| ((flat * 37 + b * 11 + 5) % 251) as u8)
            .collect(),
    }
}

/// Writes `dataset` of `dtype` and shape `global` in the tiles `blocks` ((offset, shape) each),
/// element `flat` holding `element_bytes(dtype, flat)`; returns the whole array's bytes.
fn write_blocks(
    path: &Path,
    dataset: &str,
    dtype: Dtype,
    global: &[u64],
    blocks: &[(Vec<u64>, Vec<u64>)],
    layout: Layout,
) -> Vec<u8> {
    let flat_of = |offset: &[u64], shape: &[u64], k: u64| {
        let (mut rest, mut flat, mut stride) = (k, 0, 1);
        for d in (0..global.len()).rev() {
            flat += (offset[d] + rest % shape[d]) * stride;
            rest /= shape[d];
            stride *= global[d];
        }
        flat
    };
    let data: Vec<Vec<u8>> = blocks
        .iter()
        .map(|(o, s)| {
            let volume: u64 = s.iter().product();
            (0..volume)
                .flat_map(|k| element_bytes(dtype, flat_of(o, s, k)))
                .collect()
        })
        .collect();
    let tiles = blocks
        .iter()
        .zip(&data)
        .map(|((o, s), d)| LocalTile {
            tile: Tile::new(o.clone(), s.clone()),
            buf: host_bytes(d),
        })
        .collect();
    let options = WriteOptions {
        layout,
        keep_others: true,
        ..WriteOptions::default()
    };
    write_tiles(path, dataset, dtype, global, tiles, options).unwrap();
    let volume: u64 = global.iter().product();
    (0..volume).flat_map(|k| element_bytes(dtype, k)).collect()
}

/// The whole of `dataset` of `dtype` in `path` as bytes, read by h5tile.
fn read_bytes(path: &Path, dataset: &str, dtype: Dtype, global: &[u64]) -> Vec<u8> {
    let volume: u64 = global.iter().product();
    let mut out = vec![0u8; volume as usize * dtype.size()];
    let all = Tile::new(vec![0; global.len()], global.to_vec());
    read_into(path, dataset, dtype, &all, &mut out, ReadOptions::default()).unwrap();
    out
}

/// The text fields `a` and `b` of each object of the JSON array `list`.
fn text_pairs<'a>(list: &'a Value, a: &str, b: &str) -> Vec<(&'a str, &'a str)> {
    let text = |o: &'a Value, k: &str| o[k].as_str().unwrap();
    let objects = list.as_array().unwrap().iter();
    objects.map(|o| (text(o, a), text(o, b))).collect()
}

/// The names of the files in `dir` starting with a dot (temporary files).
fn hidden_files(dir: &Path) -> Vec<PathBuf> {
    snapshot(dir)
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect()
}

/// Raw HDF5 for what the library's wrappers do not make: groups, links, attributes on groups.
mod raw {
    use h5tile::internals::hdf5::cstr;
    use hdf5_sys::h5::hsize_t;
    use hdf5_sys::h5a::{H5Aclose, H5Acreate2, H5Aexists, H5Aopen, H5Aread, H5Awrite};
    use hdf5_sys::h5i::hid_t;
    use hdf5_sys::h5l::{H5L_info2_t, H5L_type_t, H5Lget_info2, H5Lget_val};
    use hdf5_sys::h5p::{H5P_CRT_ORDER_INDEXED, H5P_CRT_ORDER_TRACKED, H5P_DEFAULT};
    use hdf5_sys::h5s::{H5Sclose, H5Screate_simple};
    use hdf5_sys::h5t::H5T_NATIVE_UINT64;

    /// Writes attribute `name` of the object at `object` in file `file`: `values` as uint64.
    pub fn write_u64(file: hid_t, object: &str, name: &str, values: &[u64]) {
        unsafe {
            let o = hdf5_sys::h5o::H5Oopen(file, cstr(object).as_ptr(), H5P_DEFAULT);
            assert!(o >= 0, "open {object}");
            let dims = [values.len() as hsize_t];
            let space = H5Screate_simple(1, dims.as_ptr(), std::ptr::null());
            let t = *H5T_NATIVE_UINT64;
            let a = H5Acreate2(o, cstr(name).as_ptr(), t, space, H5P_DEFAULT, H5P_DEFAULT);
            assert!(a >= 0, "create attribute {name}");
            assert!(H5Awrite(a, t, values.as_ptr().cast()) >= 0);
            H5Aclose(a);
            H5Sclose(space);
            hdf5_sys::h5o::H5Oclose(o);
        }
    }

    /// Attribute `name` of the object at `object` as uint64 values (None: there is none).
    pub fn read_u64(file: hid_t, object: &str, name: &str, n: usize) -> Option<Vec<u64>> {
        unsafe {
            let o = hdf5_sys::h5o::H5Oopen(file, cstr(object).as_ptr(), H5P_DEFAULT);
            assert!(o >= 0, "open {object}");
            let c = cstr(name);
            let mut out = None;
            if H5Aexists(o, c.as_ptr()) > 0 {
                let a = H5Aopen(o, c.as_ptr(), H5P_DEFAULT);
                let mut values = vec![0u64; n];
                assert!(H5Aread(a, *H5T_NATIVE_UINT64, values.as_mut_ptr().cast()) >= 0);
                H5Aclose(a);
                out = Some(values);
            }
            hdf5_sys::h5o::H5Oclose(o);
            out
        }
    }

    /// Creates group `name`, tracking the creation order of its links.
    pub fn group_in_creation_order(file: hid_t, name: &str) {
        unsafe {
            let gcpl = hdf5_sys::h5p::H5Pcreate(*hdf5_sys::h5p::H5P_CLS_GROUP_CREATE);
            let order = H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED;
            hdf5_sys::h5p::H5Pset_link_creation_order(gcpl, order);
            let g = hdf5_sys::h5g::H5Gcreate2(
                file,
                cstr(name).as_ptr(),
                H5P_DEFAULT,
                gcpl,
                H5P_DEFAULT,
            );
            assert!(g >= 0, "create group {name}");
            hdf5_sys::h5g::H5Gclose(g);
            hdf5_sys::h5p::H5Pclose(gcpl);
        }
    }

    pub fn soft_link(file: hid_t, target: &str, name: &str) {
        let (t, n) = (cstr(target), cstr(name));
        let made = unsafe {
            hdf5_sys::h5l::H5Lcreate_soft(t.as_ptr(), file, n.as_ptr(), H5P_DEFAULT, H5P_DEFAULT)
        };
        assert!(made >= 0, "soft link {name}");
    }

    pub fn hard_link(file: hid_t, target: &str, name: &str) {
        let (t, n) = (cstr(target), cstr(name));
        let made = unsafe {
            hdf5_sys::h5l::H5Lcreate_hard(
                file,
                t.as_ptr(),
                file,
                n.as_ptr(),
                H5P_DEFAULT,
                H5P_DEFAULT,
            )
        };
        assert!(made >= 0, "hard link {name}");
    }

    pub fn external_link(file: hid_t, other: &str, object: &str, name: &str) {
        let (f, o, n) = (cstr(other), cstr(object), cstr(name));
        let made = unsafe {
            hdf5_sys::h5l::H5Lcreate_external(
                f.as_ptr(),
                o.as_ptr(),
                file,
                n.as_ptr(),
                H5P_DEFAULT,
                H5P_DEFAULT,
            )
        };
        assert!(made >= 0, "external link {name}");
    }

    /// The file `path` with the named datatype /T (float64) and what is of it: the datasets
    /// /Aearly (before /T in name order) and /d, with the attribute `a`, the root's attribute
    /// `g`, and the virtual dataset /v (all of /x in the file `source`, made here beside it)
    /// with the attribute `b`.
    pub fn named_type_file(path: &str, source: &str) {
        use hdf5_sys::h5d::{H5Dclose, H5Dcreate2, H5Dwrite};
        use hdf5_sys::h5f::{H5Fclose, H5Fcreate, H5F_ACC_TRUNC};
        use hdf5_sys::h5p::{H5Pclose, H5Pcreate, H5Pset_virtual, H5P_CLS_DATASET_CREATE};
        use hdf5_sys::h5s::{H5S_class_t, H5Screate, H5S_ALL};
        use hdf5_sys::h5t::{H5Tclose, H5Tcommit2, H5Tcopy, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE};
        const P: hid_t = H5P_DEFAULT;
        let values = [0.5f64, 1.5, 2.5, 3.5];
        unsafe {
            let (dims, double) = ([4 as hsize_t], *H5T_NATIVE_DOUBLE);
            let space = H5Screate_simple(1, dims.as_ptr(), std::ptr::null());
            let scalar = H5Screate(H5S_class_t::H5S_SCALAR);
            let write = |file: hid_t, name: &str, t: hid_t, dcpl: hid_t| {
                let d = H5Dcreate2(file, cstr(name).as_ptr(), t, space, P, dcpl, P);
                assert!(d >= 0, "create {name}");
                if dcpl == P {
                    assert!(H5Dwrite(d, double, H5S_ALL, H5S_ALL, P, values.as_ptr().cast()) >= 0);
                }
                H5Dclose(d);
            };
            let src = H5Fcreate(cstr(source).as_ptr(), H5F_ACC_TRUNC, P, P);
            write(src, "/x", *H5T_IEEE_F64LE, P);
            H5Fclose(src);

            let f = H5Fcreate(cstr(path).as_ptr(), H5F_ACC_TRUNC, P, P);
            let t = H5Tcopy(*H5T_IEEE_F64LE);
            assert!(H5Tcommit2(f, cstr("/T").as_ptr(), t, P, P, P) >= 0);
            write(f, "/Aearly", t, P);
            write(f, "/d", t, P);
            let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
            let (file, x) = (cstr(source), cstr("/x"));
            assert!(H5Pset_virtual(dcpl, space, file.as_ptr(), x.as_ptr(), space) >= 0);
            write(f, "/v", t, dcpl);
            H5Pclose(dcpl);
            for (object, name) in [("/d", "a"), ("/", "g"), ("/v", "b")] {
                let o = hdf5_sys::h5o::H5Oopen(f, cstr(object).as_ptr(), P);
                let a = H5Acreate2(o, cstr(name).as_ptr(), t, scalar, P, P);
                assert!(a >= 0, "create attribute {name} of {object}");
                assert!(H5Awrite(a, double, values.as_ptr().cast()) >= 0);
                H5Aclose(a);
                hdf5_sys::h5o::H5Oclose(o);
            }
            H5Tclose(t);
            H5Sclose(space);
            H5Sclose(scalar);
            H5Fclose(f);
        }
    }

    /// The named datatypes of the file `file` (their paths); for each of `uses` (a dataset,
    /// "/d", or an attribute, "/d@a"), the path of the named datatype its type is ("" for one
    /// that no link names), None for a type of its own; and how many refer to the first named
    /// datatype.
    pub fn named_types(file: hid_t, uses: &[&str]) -> (Vec<String>, Vec<Option<String>>, u32) {
        use hdf5_sys::h5::{herr_t, H5_index_t, H5_iter_order_t};
        use hdf5_sys::h5o::{H5O_info2_t, H5O_token_t, H5O_type_t, H5O_INFO_BASIC};
        type Found = Vec<(String, [u8; 16])>;
        extern "C" fn collect(
            _obj: hid_t,
            name: *const std::ffi::c_char,
            info: *const H5O_info2_t,
            data: *mut std::ffi::c_void,
        ) -> herr_t {
            let (info, found) = unsafe { (&*info, &mut *(data as *mut Found)) };
            if info.type_ == H5O_type_t::H5O_TYPE_NAMED_DATATYPE {
                let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
                found.push((format!("/{name}"), unsafe {
                    std::mem::transmute::<H5O_token_t, [u8; 16]>(info.token)
                }));
            }
            0
        }
        let info = |id: hid_t| unsafe {
            let mut info: H5O_info2_t = std::mem::zeroed();
            assert!(hdf5_sys::h5o::H5Oget_info3(id, &mut info, H5O_INFO_BASIC) >= 0);
            info
        };
        let mut named: Found = Vec::new();
        let visited = unsafe {
            hdf5_sys::h5o::H5Ovisit3(
                file,
                H5_index_t::H5_INDEX_NAME,
                H5_iter_order_t::H5_ITER_INC,
                Some(collect),
                &mut named as *mut Found as *mut std::ffi::c_void,
                H5O_INFO_BASIC,
            )
        };
        assert!(visited >= 0);
        let of = uses
            .iter()
            .map(|used| unsafe {
                let t = match used.split_once('@') {
                    Some((object, name)) => {
                        let (o, n) = (cstr(object), cstr(name));
                        let a = hdf5_sys::h5a::H5Aopen_by_name(
                            file,
                            o.as_ptr(),
                            n.as_ptr(),
                            H5P_DEFAULT,
                            H5P_DEFAULT,
                        );
                        assert!(a >= 0, "{used}");
                        let t = hdf5_sys::h5a::H5Aget_type(a);
                        H5Aclose(a);
                        t
                    }
                    None => {
                        let d = hdf5_sys::h5d::H5Dopen2(file, cstr(used).as_ptr(), H5P_DEFAULT);
                        assert!(d >= 0, "{used}");
                        let t = hdf5_sys::h5d::H5Dget_type(d);
                        hdf5_sys::h5d::H5Dclose(d);
                        t
                    }
                };
                let token: Option<[u8; 16]> = match hdf5_sys::h5t::H5Tcommitted(t) > 0 {
                    true => Some(std::mem::transmute::<H5O_token_t, [u8; 16]>(info(t).token)),
                    false => None,
                };
                hdf5_sys::h5t::H5Tclose(t);
                token.map(|token| {
                    let name = named.iter().find(|(_, k)| *k == token);
                    name.map_or(String::new(), |(n, _)| n.clone())
                })
            })
            .collect();
        let rc = named.first().map_or(0, |(n, _)| unsafe {
            let o = hdf5_sys::h5o::H5Oopen(file, cstr(n).as_ptr(), H5P_DEFAULT);
            let rc = info(o).rc;
            hdf5_sys::h5o::H5Oclose(o);
            rc
        });
        (named.into_iter().map(|(n, _)| n).collect(), of, rc)
    }

    /// The kind of link `name` ("hard", "soft", "external") and, for a soft link, its target.
    pub fn link(file: hid_t, name: &str) -> (&'static str, String) {
        let n = cstr(name);
        let mut info: H5L_info2_t = Default::default();
        assert!(unsafe { H5Lget_info2(file, n.as_ptr(), &mut info, H5P_DEFAULT) } >= 0);
        match info.type_ {
            H5L_type_t::H5L_TYPE_HARD => ("hard", String::new()),
            H5L_type_t::H5L_TYPE_SOFT => {
                let size = unsafe { *info.u.val_size() };
                let mut buf = vec![0u8; size];
                let got = unsafe {
                    H5Lget_val(file, n.as_ptr(), buf.as_mut_ptr().cast(), size, H5P_DEFAULT)
                };
                assert!(got >= 0);
                let text = std::ffi::CStr::from_bytes_until_nul(&buf).unwrap();
                ("soft", text.to_string_lossy().into_owned())
            }
            H5L_type_t::H5L_TYPE_EXTERNAL => ("external", String::new()),
            _ => ("other", String::new()),
        }
    }
}

/// Beside the datasets of `master`: a group in link creation order holding a chunked dataset
/// and a hard link to `/g`, attributes on the root, the group, that dataset and `/g`, a soft
/// link and an external link.
fn add_other_objects(master: &Path) {
    let _l = hdf5::lock();
    let f = File::open_write(master).unwrap();
    let id = f.id();
    raw::write_u64(id, "/", "run", &[42, 7]);
    raw::group_in_creation_order(id, "/grp");
    raw::write_u64(id, "/grp", "step", &[100]);
    let t = Dtype::Int32.hdf5_type().unwrap();
    let dcpl = Plist::dataset_create().unwrap();
    let chunk = [2u64, 5];
    assert!(unsafe { hdf5_sys::h5p::H5Pset_chunk(dcpl.id(), 2, chunk.as_ptr()) } >= 0);
    let plain = Dataset::create(
        &f,
        "/grp/zplain",
        &t,
        &Space::simple(&[6, 5]).unwrap(),
        &dcpl,
    )
    .unwrap();
    let values: Vec<i32> = (0..30).map(|k| 1000 - k).collect();
    plain.write_buffer(&t, host_bytes(&values)).unwrap();
    plain.write_u64_attribute("scale", &[1], &[3]).unwrap();
    drop(plain);
    raw::hard_link(id, "/g", "/grp/again");
    raw::soft_link(id, "/grp/zplain", "/grp/soft");
    raw::external_link(id, "elsewhere.h5", "/x", "/ext");
    let g = Dataset::open(&f, "/g").unwrap();
    g.write_u64_attribute("units", &[2], &[9, 8]).unwrap();
    drop(g);
    f.close().unwrap();
}

#[test]
fn pack_makes_virtual_datasets_contiguous_and_keeps_everything_else() {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join("run/grid.h5");
    std::fs::create_dir(d.path().join("run")).unwrap();
    write_grid(&m, "/g", Layout::Vds, false);
    write_grid(&m, "/h", Layout::Subfiles, true);
    add_other_objects(&m);
    let before = snapshot(&d.path().join("run"));
    let out_dir = d.path().join("archive");
    std::fs::create_dir(&out_dir).unwrap();

    let doc = run_json(&["pack", s(&m), s(&out_dir)], 0);
    let dst = out_dir.join("grid.h5");
    assert_eq!(doc["destination"], s(&dst));
    assert_eq!(snapshot(&d.path().join("run")), before, "SRC is untouched");
    assert_eq!(
        std::fs::read_dir(&out_dir).unwrap().count(),
        1,
        "one file, no tile folder, no temporary file"
    );
    let packed = doc["packed"].as_array().unwrap();
    let names: Vec<&str> = packed.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["/g", "/h"]);
    for p in packed {
        assert_eq!(p["bytes"], 240);
        assert_eq!(p["shape"], serde_json::json!([6, 5]));
        assert_eq!(p["read_by"], "h5tile");
        assert_eq!(p["checksums_verified"], true);
        assert_eq!(p["slabs"], 1);
    }
    let copied = text_pairs(&doc["copied"], "name", "kind");
    assert_eq!(copied, [("/grp", "group"), ("/grp/zplain", "dataset")]);
    let links: Vec<(&str, &str, &str)> = doc["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let f = |k: &str| l[k].as_str().unwrap();
            (f("name"), f("kind"), f("target"))
        })
        .collect();
    assert_eq!(
        links,
        [
            ("/ext", "external", "elsewhere.h5:/x"),
            ("/grp/again", "hard", "/g"),
            ("/grp/soft", "soft", "/grp/zplain"),
        ]
    );

    // The source's tiles gone, the packed file reads on its own.
    std::fs::rename(d.path().join("run"), d.path().join("gone")).unwrap();
    assert_eq!(read_grid(&dst, "/g"), expected_grid());
    assert_eq!(read_grid(&dst, "/h"), expected_grid());
    assert_eq!(read_grid(&dst, "/grp/again"), expected_grid());
    let listing = run_json(&["ls", s(&dst)], 0);
    let storage = text_pairs(&listing["datasets"], "name", "storage");
    // "/grp/again" is "/g" under another name: listed once.
    assert_eq!(
        storage,
        [
            ("/g", "contiguous"),
            ("/grp/zplain", "chunked"),
            ("/h", "contiguous")
        ]
    );
    run(&["check", s(&dst)], 0);
    let plain = read_bytes(&dst, "/grp/zplain", Dtype::Int32, &[6, 5]);
    let want: Vec<u8> = (0..30)
        .flat_map(|k: i32| (1000 - k).to_ne_bytes())
        .collect();
    assert_eq!(plain, want);

    let _l = hdf5::lock();
    let f = File::open_read(&dst).unwrap();
    let id = f.id();
    assert_eq!(raw::read_u64(id, "/", "run", 2), Some(vec![42, 7]));
    assert_eq!(raw::read_u64(id, "/grp", "step", 1), Some(vec![100]));
    assert_eq!(raw::read_u64(id, "/grp/zplain", "scale", 1), Some(vec![3]));
    assert_eq!(raw::read_u64(id, "/g", "units", 2), Some(vec![9, 8]));
    for own in ["h5tile_checksums", "h5tile_tile_bytes", "h5tile_tile_min"] {
        assert_eq!(raw::read_u64(id, "/g", own, 1), None, "{own} is left out");
    }
    assert_eq!(
        raw::link(id, "/grp/soft"),
        ("soft", "/grp/zplain".to_string())
    );
    assert_eq!(raw::link(id, "/ext").0, "external");
    assert_eq!(raw::link(id, "/grp/again").0, "hard");
}

#[test]
fn pack_keeps_every_element_type_of_both_layouts_byte_for_byte() {
    let blocks: Vec<(Vec<u64>, Vec<u64>)> = GRID_TILES
        .iter()
        .map(|&(r, c, h, w)| (vec![r, c], vec![h, w]))
        .collect();
    let d = tempfile::tempdir().unwrap();
    let dtypes = [
        Dtype::Bool,
        Dtype::UInt8,
        Dtype::Int16,
        Dtype::Float16,
        Dtype::Float32,
        Dtype::Int64,
        Dtype::Complex64,
        Dtype::Complex128,
    ];
    for layout in [Layout::Vds, Layout::Subfiles] {
        let m = d.path().join(format!("{layout:?}.h5"));
        let mut expected = Vec::new();
        for dtype in dtypes {
            let name = format!("/{}", dtype.name());
            expected.push(write_blocks(&m, &name, dtype, &[6, 5], &blocks, layout));
        }
        let dst = d.path().join(format!("{layout:?}-packed.h5"));
        let doc = run_json(&["pack", s(&m), s(&dst)], 0);
        assert_eq!(doc["packed"].as_array().unwrap().len(), dtypes.len());
        for (dtype, want) in dtypes.iter().zip(&expected) {
            let name = format!("/{}", dtype.name());
            assert_eq!(
                &read_bytes(&dst, &name, *dtype, &[6, 5]),
                want,
                "{layout:?} {name}"
            );
            let g = &run_json(&["ls", s(&dst), &name], 0)["datasets"][0];
            assert_eq!(g["storage"], "contiguous", "{layout:?} {name}");
            assert_eq!(g["dtype"], dtype.name(), "{layout:?} {name}");
        }
    }
}

#[test]
fn pack_stitches_slabs_smaller_than_a_row_or_a_plane() {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join("cube.h5");
    let global = [4u64, 6, 5];
    let blocks: Vec<(Vec<u64>, Vec<u64>)> = vec![
        (vec![0, 0, 0], vec![4, 3, 2]),
        (vec![0, 0, 2], vec![4, 3, 3]),
        (vec![0, 3, 0], vec![4, 3, 5]),
    ];
    let want = write_blocks(&m, "/c", Dtype::Float64, &global, &blocks, Layout::Vds);
    write_grid(&m, "/g", Layout::Subfiles, true);
    // (bound, slabs of /c, slabs of /g): a plane of /c is 240 B, a row 40 B, a row of /g 40 B.
    for (bound, c, g) in [(16, 72, 18), (100, 12, 3), (500, 2, 1), (1, 120, 30)] {
        let dst = d.path().join(format!("cube-{bound}.h5"));
        let bound = bound.to_string();
        let doc = run_json(&["pack", "--slab-bytes", &bound, s(&m), s(&dst)], 0);
        let slabs: Vec<u64> = doc["packed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["slabs"].as_u64().unwrap())
            .collect();
        assert_eq!(slabs, [c, g], "bound {bound}");
        assert_eq!(read_bytes(&dst, "/c", Dtype::Float64, &global), want);
        assert_eq!(read_grid(&dst, "/g"), expected_grid());
    }
}

#[test]
fn pack_of_a_damaged_or_incomplete_file_fails_and_leaves_nothing() {
    for layout in [Layout::Vds, Layout::Subfiles] {
        let (d, m) = grid_in_new_folder("grid.h5", layout);
        let (file, start, end) = flip_bit(&m, 1, 3);
        let dst = d.path().join("packed.h5");
        let (out, err) = run(&["pack", "--slab-bytes", "80", s(&m), s(&dst)], 1);
        assert!(out.is_empty(), "{out}");
        assert!(
            err.starts_with(&format!(
                "h5tile: cannot pack '{}' into '{}': ",
                s(&m),
                s(&dst)
            )),
            "{err}"
        );
        assert!(
            err.contains(&format!("'{}'", s(&file))),
            "{layout:?}: {err}"
        );
        assert!(err.contains(&format!("bytes {start}..{end}")), "{err}");
        assert!(!dst.exists(), "no DST");
        assert!(hidden_files(d.path()).is_empty(), "no temporary file");
    }
    // A tile file missing: found before anything is written.
    let (d, m) = grid_in_new_folder("grid.h5", Layout::Vds);
    let gone = tile_files(&m)[2].clone();
    std::fs::remove_file(&gone).unwrap();
    let dst = d.path().join("packed.h5");
    let (_, err) = run(&["pack", s(&m), s(&dst)], 1);
    assert!(
        err.contains(&format!("tile file '{}'", s(&gone))) && err.contains("does not exist"),
        "{err}"
    );
    assert!(!dst.exists() && hidden_files(d.path()).is_empty());
}

#[test]
fn pack_keeps_a_named_datatype_once_and_all_that_was_of_it_of_it() {
    let d = tempfile::tempdir().unwrap();
    let (src, dst) = (d.path().join("named.h5"), d.path().join("packed.h5"));
    let source = d.path().join("x.h5");
    let uses = ["/Aearly", "/d", "/d@a", "/@g", "/v", "/v@b"];
    let all_of_t = (
        vec!["/T".to_string()],
        vec![Some("/T".to_string()); uses.len()],
        1 + uses.len() as u32,
    );
    {
        let _l = hdf5::lock();
        raw::named_type_file(s(&src), s(&source));
        let f = File::open_read(&src).unwrap();
        assert_eq!(raw::named_types(f.id(), &uses), all_of_t, "the source");
    }
    let doc = run_json(&["pack", s(&src), s(&dst)], 0);
    let packed: Vec<&str> = doc["packed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(packed, ["/v"]);
    let copied = text_pairs(&doc["copied"], "name", "kind");
    assert_eq!(
        copied,
        [
            ("/Aearly", "dataset"),
            ("/T", "named datatype"),
            ("/d", "dataset")
        ]
    );
    let _l = hdf5::lock();
    let f = File::open_read(&dst).unwrap();
    // /T once (and no other object: the temporary group the copies were made in is gone),
    // and every dataset and attribute of it.
    assert_eq!(raw::named_types(f.id(), &uses), all_of_t, "the packed file");
    let listing: Vec<String> = f.links("/").unwrap().into_iter().map(|l| l.path).collect();
    assert_eq!(listing, ["/Aearly", "/T", "/d", "/v"]);
    drop(f);
    for name in ["/Aearly", "/d", "/v"] {
        let got = read_bytes(&dst, name, Dtype::Float64, &[4]);
        let want: Vec<u8> = [0.5f64, 1.5, 2.5, 3.5]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn pack_refuses_an_existing_dst_without_force_and_replaces_it_with_it() {
    let (d, a, b) = grids_a_and_b([Layout::Vds, Layout::Vds]);
    let old_tiles = tile_files(&b);
    let before = snapshot(d.path());
    let (_, err) = run(&["pack", s(&a), s(&b)], 2);
    assert_eq!(
        err,
        format!(
            "h5tile: cannot pack to '{}': it exists (--force replaces it)\n",
            s(&b)
        )
    );
    assert_eq!(snapshot(d.path()), before, "nothing changed");
    let (_, err) = run(&["pack", "--force", s(&a), s(&a)], 2);
    assert!(err.contains("itself"), "{err}");
    let (_, err) = run(&["pack", s(&a), s(&d.path().join("no/such/dir/x.h5"))], 2);
    assert!(err.contains("does not exist"), "{err}");
    let missing = d.path().join("missing.h5");
    let (_, err) = run(&["pack", s(&missing), s(&d.path().join("x.h5"))], 2);
    assert_eq!(
        err,
        format!("h5tile: cannot open '{}': no such file\n", s(&missing))
    );

    let (out, _) = run(&["pack", "--force", s(&a), s(&b)], 0);
    assert!(
        out.starts_with(&format!(
            "packed '{}' into '{}' (240 B): 1 virtual",
            s(&a),
            s(&b)
        )),
        "{out}"
    );
    assert!(out.contains("checksums verified"), "{out}");
    assert_eq!(read_grid(&b, "/g"), expected_grid());
    assert!(
        old_tiles.iter().all(|t| !t.exists()),
        "the replaced master's tiles are gone"
    );
    assert!(!h5tile::internals::tool::tile_dir(&b).exists());
    assert_eq!(read_grid(&a, "/g"), expected_grid(), "SRC reads as before");
}

/// The shape of the smooth field `write_smooth` writes: 2.4 MB of float64, three chunks of
/// 262, 262 and 76 rows as one dataset, one or two per tile.
const SMOOTH: [u64; 2] = [600, 500];

/// A smooth float64 field of shape `SMOOTH` as `dataset` of `path`, in two tiles (the rows
/// 0..300 and 300..600), stored with `compression`; its values.
fn write_smooth(
    path: &Path,
    dataset: &str,
    layout: Layout,
    compression: Option<Compression>,
) -> Vec<f64> {
    let [rows, cols] = SMOOTH;
    let values: Vec<f64> = (0..rows * cols)
        .map(|k| (k / 7) as f64 * 0.5 - 1000.0)
        .collect();
    let half = (rows / 2 * cols) as usize;
    let tiles = [(0, &values[..half]), (rows / 2, &values[half..])]
        .into_iter()
        .map(|(r, part)| LocalTile {
            tile: Tile::new(vec![r, 0], vec![rows / 2, cols]),
            buf: host_bytes(part),
        })
        .collect();
    let options = WriteOptions {
        layout,
        keep_others: true,
        compression,
        ..WriteOptions::default()
    };
    write_tiles(path, dataset, Dtype::Float64, &SMOOTH, tiles, options).unwrap();
    values
}

fn smooth_values(path: &Path, dataset: &str) -> Vec<f64> {
    read_f64(path, dataset, &Tile::new(vec![0, 0], SMOOTH.to_vec())).unwrap()
}

fn zstd_1_shuffled() -> Option<Compression> {
    Some(Compression::new(Codec::Zstd, 1, true).unwrap())
}

fn lz4() -> Option<Compression> {
    Some(Compression::new(Codec::Lz4, 0, false).unwrap())
}

/// `ls --json`'s dataset `name` of `path`, with -l.
fn listed(path: &Path, name: &str) -> Value {
    run_json(&["ls", "-l", s(path), name], 0)["datasets"][0].clone()
}

/// `c.h5` in a new folder with the smooth field three times: `/z` (zstd:1 + shuffle, VDS), `/l`
/// (lz4, subfiled) and `/plain` (uncompressed, VDS); the folder, the file and the values.
fn smooth_in_three_codecs() -> (tempfile::TempDir, PathBuf, Vec<f64>) {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join("c.h5");
    let values = write_smooth(&m, "/z", Layout::Vds, zstd_1_shuffled());
    write_smooth(&m, "/l", Layout::Subfiles, lz4());
    write_smooth(&m, "/plain", Layout::Vds, None);
    (d, m, values)
}

/// A listed dataset's or tile's stored bytes and ratio, checked to agree with its bytes.
fn stored_and_ratio(entry: &Value, bytes: u64) -> (u64, f64) {
    let stored = entry["stored_bytes"].as_u64().unwrap();
    let ratio = entry["ratio"].as_f64().unwrap();
    assert!(
        (ratio - bytes as f64 / stored as f64).abs() < 1e-9,
        "{entry}"
    );
    (stored, ratio)
}

#[test]
fn ls_shows_the_codec_and_ratio_of_compressed_tiles_and_none_for_plain_ones() {
    let (_d, m, _) = smooth_in_three_codecs();
    let bytes = SMOOTH[0] * SMOOTH[1] * 8;

    for (name, codec, level, shuffle, filters) in [
        (
            "/z",
            "zstd",
            Value::from(1),
            true,
            serde_json::json!([2, 32015]),
        ),
        ("/l", "lz4", Value::Null, false, serde_json::json!([32004])),
    ] {
        let g = listed(&m, name);
        let c = &g["compression"];
        assert_eq!(
            (&c["codec"], &c["level"], &c["shuffle"]),
            (&codec.into(), &level, &shuffle.into()),
            "{g}"
        );
        assert_eq!(g["filters"], filters, "{name}");
        let (stored, ratio) = stored_and_ratio(&g, bytes);
        assert!(ratio > 2.0, "{name}: a smooth field compresses: {g}");
        let tiles = g["virtual"]["tile_list"].as_array().unwrap();
        assert_eq!(tiles.len(), 2);
        let mut sum = 0;
        for t in tiles {
            assert_eq!(t["compression"], g["compression"], "{name}: {t}");
            assert_eq!(t["filters"], filters, "{name}");
            sum += stored_and_ratio(t, bytes / 2).0;
        }
        assert_eq!(sum, stored, "{name}: the tiles' stored bytes together");
    }
    let plain = listed(&m, "/plain");
    assert_eq!(plain["compression"], Value::Null);
    assert_eq!(plain["filters"], serde_json::json!([]));
    assert_eq!(stored_and_ratio(&plain, bytes), (bytes, 1.0));

    let (out, _) = run(&["ls", s(&m)], 0);
    let line = |name: &str| {
        let start = format!("{name} ");
        out.lines()
            .find(|l| l.starts_with(&start))
            .unwrap_or_else(|| panic!("{name}: {out}"))
            .to_string()
    };
    let z = line("/z");
    assert!(
        z.contains("zstd:1+shuffle ") && z.contains("x (") && z.contains("on disk)"),
        "{out}"
    );
    assert!(line("/l").contains("lz4 "), "{out}");
    assert!(!line("/l").contains("shuffle"), "{out}");
    assert!(!line("/plain").contains("on disk"), "{out}");
    // Per tile with -l and -D.
    for flag in ["-l", "-D"] {
        let (out, _) = run(&["ls", flag, s(&m), "/z"], 0);
        let tiles: Vec<&str> = out
            .lines()
            .filter(|l| l.trim_start().starts_with("tile "))
            .collect();
        assert_eq!(tiles.len(), 2, "{out}");
        assert!(
            tiles
                .iter()
                .all(|l| l.contains("zstd:1+shuffle") && l.contains("on disk")),
            "{out}"
        );
    }
    // Uncompressed, nothing more than before.
    let (out, _) = run(&["ls", s(&m), "/plain"], 0);
    assert!(!out.contains("on disk") && !out.contains("zstd"), "{out}");
}

/// `ls` says whether compressed tiles record their stored chunks' checksums, per dataset and
/// per tile; a master from before they were recorded says it has none, and still checks.
#[test]
fn ls_says_whether_the_stored_chunks_of_compressed_tiles_are_checksummed() {
    let (_d, m, _) = smooth_in_three_codecs();
    let chunks = |name: &str| {
        let v = listed(&m, name)["virtual"].clone();
        let tiles: Vec<Value> = v["tile_list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["chunks_checksummed"].clone())
            .collect();
        (
            v["chunks_checksummed"].clone(),
            v["chunks_not_checksummed"].clone(),
            tiles,
        )
    };
    let (yes, no, null) = (Value::Bool(true), Value::Bool(false), Value::Null);
    for name in ["/z", "/l"] {
        assert_eq!(
            chunks(name),
            (yes.clone(), 0.into(), vec![yes.clone(); 2]),
            "{name}"
        );
    }
    assert_eq!(chunks("/plain"), (null.clone(), 0.into(), vec![null; 2]));
    let line = |name: &str| {
        let (out, _) = run(&["ls", s(&m), name], 0);
        out.lines().next().unwrap().to_string()
    };
    assert!(
        line("/z").ends_with(", checksummed, stored chunks checksummed"),
        "{}",
        line("/z")
    );
    assert!(
        line("/plain").ends_with(", checksummed"),
        "{}",
        line("/plain")
    );

    forget_chunk_checksums(&m, "/z");
    assert_eq!(chunks("/z"), (no.clone(), 2.into(), vec![no; 2]));
    assert!(
        line("/z").ends_with(", checksummed, stored chunks not checksummed"),
        "{}",
        line("/z")
    );
    assert_eq!(
        chunks("/l"),
        (yes.clone(), 0.into(), vec![yes; 2]),
        "the other dataset's"
    );
    let doc = run_json(&["check", s(&m)], 0);
    assert_eq!(doc["ok"], true, "{doc}");
}

#[test]
fn pack_keeps_the_tiles_compression_or_takes_another() {
    let (d, m, values) = smooth_in_three_codecs();
    let bytes = SMOOTH[0] * SMOOTH[1] * 8;

    // As the tiles are, in slabs under a chunk's 1 048 000 bytes: a chunk each (the chunks
    // are 262 rows), or 250 rows where contiguous; three either way.
    let dst = d.path().join("kept.h5");
    let doc = run_json(&["pack", "--slab-bytes", "1000000", s(&m), s(&dst)], 0);
    let packed: Vec<(&str, &Value)> = doc["packed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p))
        .collect();
    let want = [
        (
            "/l",
            serde_json::json!({"codec": "lz4", "level": null, "shuffle": false}),
        ),
        ("/plain", Value::Null),
        (
            "/z",
            serde_json::json!({"codec": "zstd", "level": 1, "shuffle": true}),
        ),
    ];
    assert_eq!(packed.len(), want.len());
    for ((name, p), (want_name, compression)) in packed.iter().zip(&want) {
        assert_eq!(name, want_name);
        assert_eq!(&p["compression"], compression, "{name}");
        assert_eq!(p["slabs"], 3, "{name}");
        let (_, ratio) = stored_and_ratio(p, bytes);
        assert_eq!(ratio > 2.0, !compression.is_null(), "{name}: {p}");
        assert_eq!(smooth_values(&dst, name), values, "{name}");
        let g = listed(&dst, name);
        assert_eq!(g["compression"], *compression, "{name}");
        match compression.is_null() {
            true => assert_eq!(g["storage"], "contiguous"),
            false => {
                assert_eq!(g["storage"], "chunked");
                assert_eq!(
                    g["chunks"],
                    serde_json::json!([262, 500]),
                    "{name}: as a tile's"
                );
                assert_eq!(g["stored_bytes"], p["stored_bytes"], "{name}");
            }
        }
    }
    assert_eq!(listed(&dst, "/z")["filters"], serde_json::json!([2, 32015]));
    run(&["check", s(&dst)], 0);
    let (out, _) = run(&["pack", s(&m), s(&d.path().join("text.h5"))], 0);
    assert!(
        out.contains("3 virtual datasets packed (2 compressed)"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.contains("/z") && l.contains("zstd:1+shuffle") && l.contains("on disk")),
        "{out}"
    );

    // Another codec, with and without shuffle; none.
    for (args, name, compression) in [
        (
            &["--compression", "deflate:4", "--shuffle"][..],
            "/plain",
            serde_json::json!({"codec": "deflate", "level": 4, "shuffle": true}),
        ),
        (
            &["--compression", "lz4", "--no-shuffle"][..],
            "/z",
            serde_json::json!({"codec": "lz4", "level": null, "shuffle": false}),
        ),
        (
            &["--compression", "zstd"][..],
            "/z",
            serde_json::json!({"codec": "zstd", "level": 3, "shuffle": true}),
        ),
        (
            &["--no-shuffle"][..],
            "/z",
            serde_json::json!({"codec": "zstd", "level": 1, "shuffle": false}),
        ),
        // As `ls` shows a compression.
        (
            &["--compression", "lz4+shuffle"][..],
            "/plain",
            serde_json::json!({"codec": "lz4", "level": null, "shuffle": true}),
        ),
        (&["--compression", "none"][..], "/z", Value::Null),
    ] {
        let dst = d.path().join("other.h5");
        let mut all = vec!["pack", "--force"];
        all.extend_from_slice(args);
        all.extend_from_slice(&[s(&m), s(&dst)]);
        let doc = run_json(&all, 0);
        let p = doc["packed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap();
        assert_eq!(p["compression"], compression, "{args:?}");
        let g = listed(&dst, name);
        assert_eq!(g["compression"], compression, "{args:?}");
        let storage = if compression.is_null() {
            "contiguous"
        } else {
            "chunked"
        };
        assert_eq!(g["storage"], storage, "{args:?}");
        assert_eq!(smooth_values(&dst, name), values, "{args:?}");
    }
}

#[test]
fn pack_refuses_an_unknown_codec_and_a_shuffle_without_one_leaving_nothing() {
    let (d, m) = grid_in_new_folder("grid.h5", Layout::Vds);
    let dst = d.path().join("packed.h5");
    for (args, says) in [
        (&["--compression", "bogus"][..], "unknown codec 'bogus'"),
        (&["--compression", "zstd:99"][..], "level 99"),
        (
            &["--compression", "none", "--shuffle"][..],
            "--shuffle with --compression none",
        ),
        (
            &["--compression", "zstd+shuffle", "--no-shuffle"][..],
            "--compression zstd+shuffle with --no-shuffle",
        ),
        (
            &["--compression", "zstd+bitshuffle"][..],
            "only 'shuffle' may follow '+'",
        ),
        (
            &["--compression", "none+shuffle"][..],
            "a shuffle needs a codec",
        ),
    ] {
        let mut all = vec!["pack"];
        all.extend_from_slice(args);
        all.extend_from_slice(&[s(&m), s(&dst)]);
        let (_, err) = run(&all, 2);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            !dst.exists() && hidden_files(d.path()).is_empty(),
            "{args:?}"
        );
    }
}

#[test]
fn pack_help_reads_like_a_manual_page() {
    let (out, _) = run(&["pack", "--help"], 0);
    for part in [
        "Exit status",
        "Example",
        "--json",
        "--force",
        "External links are kept",
        "contiguous",
        "--compression",
        "--no-shuffle",
        "Compressed tiles stay compressed",
    ] {
        assert!(out.contains(part), "{part}: {out}");
    }
    assert!(!out.contains("slab-bytes"), "a test-only option is hidden");
    let (out, _) = run(&["--help"], 0);
    assert!(out.contains("pack"), "{out}");
}

/// The checkpoint of `step` in series folder `dir`: the grid as `/g` (and, with `more`, as
/// `/h` beside it), in `layout`; recorded as the latest.
fn series_checkpoint(dir: &Path, step: u64, layout: Layout, more: bool) -> PathBuf {
    use h5tile::internals::tool::{checkpoint_path, record_latest};
    let path = checkpoint_path(dir, step);
    write_grid(&path, "/g", layout, false);
    if more {
        write_grid(&path, "/h", layout, true);
    }
    record_latest(dir, step, false).unwrap();
    path
}

/// What a write of `step` killed before its commit leaves in `dir`: a tile folder holding a
/// tile file, and a temporary master; their names.
fn crashed_checkpoint(dir: &Path, step: u64) -> [String; 2] {
    use h5tile::internals::tool::{checkpoint_path, temporary_master, tile_dir};
    let master = checkpoint_path(dir, step);
    let tiles = tile_dir(&master);
    std::fs::create_dir(&tiles).unwrap();
    std::fs::write(tiles.join("g.000000000000dead.r0.t0.h5"), b"half a tile").unwrap();
    let tmp = temporary_master(&master, 0xdead);
    std::fs::write(&tmp, b"half a master").unwrap();
    [tiles, tmp].map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
}

/// Bytes of the files under `path` (a file, or a folder and what is in it).
fn bytes_under(path: &Path) -> u64 {
    match path.is_dir() {
        true => snapshot(path).iter().map(|(_, b)| b.len() as u64).sum(),
        false => std::fs::metadata(path).map_or(0, |m| m.len()),
    }
}

#[test]
fn ls_of_a_series_lists_its_checkpoints_newest_first() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let one = series_checkpoint(dir, 1, Layout::Subfiles, false);
    let two = series_checkpoint(dir, 2, Layout::Single, false);
    let three = series_checkpoint(dir, 3, Layout::Vds, true);
    let [tiles4, tmp4] = crashed_checkpoint(dir, 4);
    std::fs::write(dir.join("notes.txt"), b"not a checkpoint").unwrap();

    let (out, _) = run(&["ls", s(dir)], 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    let cells = |line: &str| -> Vec<String> {
        line.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    let four = cells(lines[0]);
    assert_eq!(four[..3], ["step 4", "incomplete", "ckpt.000000000004.h5"]);
    assert!(
        four[4].contains(&tiles4) && four[4].contains(&tmp4),
        "{out}"
    );
    let latest = cells(lines[1]);
    assert_eq!(latest[..3], ["step 3", "latest", "ckpt.000000000003.h5"]);
    assert_eq!(latest[4], "/g float64 (6, 5), /h float64 (6, 5)", "{out}");
    for (line, step) in [(lines[2], 2), (lines[3], 1)] {
        let c = cells(line);
        assert_eq!(c[0], format!("step {step}"), "{out}");
        assert_eq!(c[1], format!("ckpt.00000000000{step}.h5"), "no mark: {out}");
        assert_eq!(c[3], "/g float64 (6, 5)", "{out}");
    }
    assert!(
        !out.contains("record"),
        "the record names the latest: {out}"
    );

    let doc = run_json(&["ls", s(dir)], 0);
    assert_eq!(doc["dir"], s(dir));
    assert_eq!(
        (doc["latest"].as_u64(), doc["record"].as_u64()),
        (Some(3), Some(3))
    );
    let list = doc["checkpoints"].as_array().unwrap();
    let steps: Vec<(u64, bool, bool)> = list
        .iter()
        .map(|c| {
            let flag = |k: &str| c[k].as_bool().unwrap();
            (
                c["step"].as_u64().unwrap(),
                flag("complete"),
                flag("latest"),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            (4, false, false),
            (3, true, true),
            (2, true, false),
            (1, true, false)
        ]
    );
    assert!(list[0]["incomplete"]
        .as_str()
        .unwrap()
        .contains("no master"));
    assert_eq!(list[0]["datasets"], serde_json::json!([]));
    assert_eq!(list[1]["incomplete"], Value::Null);
    let names: Vec<&str> = list[1]["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["/g", "/h"]);
    assert_eq!(list[1]["datasets"][1]["shape"], serde_json::json!([6, 5]));
    assert_eq!(list[1]["datasets"][1]["virtual"]["layout"], "h5tile-vds");
    // The size on disk: the master and its tile folder (the single file has none).
    let tile_folder = |m: &Path| h5tile::internals::tool::tile_dir(m);
    for (c, master) in list[1..].iter().zip([&three, &two, &one]) {
        let want = bytes_under(master) + bytes_under(&tile_folder(master));
        assert_eq!(c["bytes"].as_u64(), Some(want), "{}", master.display());
        assert_eq!(c["file"], s(master));
    }
    assert_eq!(list[2]["tile_dir"], Value::Null);
    assert_eq!(list[0]["temporaries"].as_array().unwrap().len(), 1);

    // A record that lags behind (a crash between commit and record) is said.
    std::fs::write(dir.join("latest"), "1\nckpt.000000000001.h5\n").unwrap();
    let (out, _) = run(&["ls", s(dir)], 0);
    assert!(
        out.ends_with(&format!(
            "{}: the record 'latest' names step 1, not the latest complete checkpoint\n",
            s(dir)
        )),
        "{out}"
    );
    assert_eq!(run_json(&["ls", s(dir)], 0)["record"], 1);
    // A file's options are refused for a folder.
    for more in [&["-l"][..], &["-D"], &["/g"]] {
        let mut args = vec!["ls", s(dir)];
        args.extend_from_slice(more);
        let (_, err) = run(&args, 2);
        assert!(err.contains("is a series folder"), "{more:?}: {err}");
    }
    // An empty folder is a series with no checkpoints yet.
    let empty = tempfile::tempdir().unwrap();
    let (out, _) = run(&["ls", s(empty.path())], 0);
    assert_eq!(out, format!("{}: no checkpoints\n", s(empty.path())));
}

#[test]
fn check_of_a_series_checks_its_latest_complete_checkpoint() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    series_checkpoint(dir, 10, Layout::Vds, false);
    let twenty = series_checkpoint(dir, 20, Layout::Subfiles, false);
    let [tiles30, _] = crashed_checkpoint(dir, 30);

    let (out, err) = run(&["check", s(dir)], 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].starts_with(&format!("{}: step 30 is incomplete (no master", s(dir)))
            && lines[0].contains(&tiles30)
            && lines[0].ends_with(": not checked"),
        "{out}"
    );
    assert_eq!(
        lines[1],
        format!("{}: step 20 is the latest complete checkpoint", s(dir))
    );
    assert!(
        lines[2].starts_with(&format!("{}: ok (", s(&twenty))),
        "{out}"
    );
    assert_eq!(err, "");
    let doc = run_json(&["check", s(dir)], 0);
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["files"].as_array().unwrap().len(), 1);
    assert_eq!(doc["files"][0]["step"], 20);
    let series = &doc["series"][0];
    assert_eq!(
        (series["latest"].as_u64(), series["error"].clone()),
        (Some(20), Value::Null)
    );
    assert_eq!(series["checked"], serde_json::json!([20]));
    assert_eq!(series["incomplete"][0]["step"], 30);

    // A flipped bit in the latest checkpoint's tile: exit 1, naming the tile file.
    let (file, _, _) = flip_bit(&twenty, 1, 3);
    let (out, err) = run(&["check", s(dir)], 1);
    assert!(
        out.lines()
            .any(|l| l.contains(s(&file)) && l.contains("do not match")),
        "{out}"
    );
    assert!(
        err.starts_with("h5tile: check found 1 problem in 1 of 1 file"),
        "{err}"
    );

    // No complete checkpoint: exit 2 naming the folder; leftovers are still said.
    let empty = tempfile::tempdir().unwrap();
    let (out, err) = run(&["check", s(empty.path())], 2);
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!("h5tile: no complete checkpoint in '{}'\n", s(empty.path()))
    );
    crashed_checkpoint(empty.path(), 1);
    let (out, err) = run(&["check", s(empty.path())], 2);
    assert!(out.contains("step 1 is incomplete"), "{out}");
    assert!(err.contains("no complete checkpoint"), "{err}");
    let doc = run_json(&["check", s(empty.path())], 2);
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["series"][0]["latest"], Value::Null);
    assert!(doc["series"][0]["error"]
        .as_str()
        .unwrap()
        .contains("no complete checkpoint"));
}

#[test]
fn check_all_of_a_series_finds_damage_in_an_older_checkpoint() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let one = series_checkpoint(dir, 1, Layout::Vds, false);
    let two = series_checkpoint(dir, 2, Layout::Single, false);
    let three = series_checkpoint(dir, 3, Layout::Vds, false);
    let (file, _, _) = flip_bit(&one, 2, 0);

    // The latest is well: plain `check DIR` does not look further.
    let (out, _) = run(&["check", s(dir)], 0);
    assert!(out.contains(&format!("{}: ok", s(&three))), "{out}");
    assert!(!out.contains(s(&one)), "{out}");

    let (out, err) = run(&["check", "--all", s(dir)], 1);
    assert!(
        out.starts_with(&format!(
            "{}: 3 complete checkpoints: steps 3 (the latest), 2, 1\n",
            s(dir)
        )),
        "{out}"
    );
    for ok in [&three, &two] {
        assert!(out.contains(&format!("{}: ok", s(ok))), "{out}");
    }
    assert!(
        out.lines()
            .any(|l| l.starts_with(&format!("{}: /g: tile file '{}'", s(&one), s(&file)))),
        "{out}"
    );
    assert!(out.contains(&format!("{}: 1 problem", s(&one))), "{out}");
    assert!(
        err.starts_with("h5tile: check found 1 problem in 1 of 3 files"),
        "{err}"
    );
    let doc = run_json(&["check", "--all", s(dir)], 1);
    assert_eq!(doc["series"][0]["checked"], serde_json::json!([3, 2, 1]));
    let steps: Vec<u64> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["step"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, [3, 2, 1]);
    // A FILE beside a DIR is checked as before, and --all changes nothing for it.
    let (out, _) = run(&["check", "--all", s(&three), s(dir)], 1);
    assert_eq!(
        out.matches(&format!("{}: ok", s(&three))).count(),
        2,
        "{out}"
    );
}
