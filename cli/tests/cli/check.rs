//! `check`: flipped bits, missing, truncated and unreadable sources, many sources shared among
//! processes, and its progress display.

use super::*;

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
    assert!(
        out.contains("checksums not read, tile files not opened with HDF5 (--fast)"),
        "{out}"
    );
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
        assert!(
            out.contains("checksums not read, tile files not opened with HDF5 (--fast)"),
            "{out}"
        );
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
/// `check` opens every source with HDF5 and names the file and what failed. `--fast` looks at
/// what h5tile's reads rely on (sizes and stamps), says it opened none, and finds all well.
#[test]
fn check_opens_every_source_with_hdf5_as_other_readers_do_and_fast_leaves_that_out() {
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
        let (out, _) = run(&["check", s(&m)], 1);
        let line = out.lines().next().unwrap();
        assert!(
            line.contains(&format!("'{}'", s(&damaged)))
                && line.contains("cannot be opened with HDF5"),
            "{out}"
        );
        let (out, _) = run(&["check", "--fast", s(&m)], 0);
        assert!(
            out.contains(": ok (") && out.contains("not opened with HDF5 (--fast)"),
            "{out}"
        );
    }
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

    let (alone, _) = run(&["check", "--threads", "1", s(&m)], 1);
    let (shared, _) = run(&["check", "--threads", "4", s(&m)], 1);
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
    // With --fast, h5tile's tile files are not opened: that share finds nothing.
    let (part, _) = run(&["check-part", s(&m), "/m", "1", "2", "600", "--fast"], 0);
    assert_eq!(part, "", "{part}");
    // A master that no longer maps what the parent saw is refused, not misread.
    run(&["check-part", s(&m), "/m", "1", "2", "599"], 2);
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

/// A tile wider than 8 KiB rows is checksummed in boxes (`ls` says so, per dataset and per
/// tile); a flipped bit fails its box alone, named by the block and its bytes, and the rest of
/// the tile counts as verified.
#[test]
fn check_names_the_box_of_a_wide_tile_holding_a_flipped_bit() {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join("wide.h5");
    let (rows, cols) = (256u64, 2048u64); // 4 MiB: 2 x 2 boxes of 128 rows of 8 KiB
    let data: Vec<f64> = (0..rows * cols).map(|k| k as f64).collect();
    let tiles = vec![LocalTile {
        tile: Tile::new(vec![0, 0], vec![rows, cols]),
        buf: host_bytes(&data),
    }];
    write_tiles(
        &m,
        "/w",
        Dtype::Float64,
        &[rows, cols],
        tiles,
        WriteOptions::default(),
    )
    .unwrap();
    let doc = run_json(&["ls", "-l", s(&m)], 0);
    let v = &doc["datasets"][0]["virtual"];
    let blocks = serde_json::json!({"kind": "boxes", "block_bytes": 1 << 20, "row_bytes": 8192});
    assert_eq!(v["checksum_blocks"], blocks);
    assert_eq!(v["tile_list"][0]["checksum_blocks"], "boxes");
    let (out, _) = run(&["ls", s(&m)], 0);
    assert!(
        out.contains("checksummed (1 MiB boxes, 8 KiB wide)"),
        "{out}"
    );
    // Row 200, column 1500: box 3 (rows 128..256, columns 1024..2048).
    let at = (200 * cols + 1500) * 8;
    flip_tile_byte(&m, 0, at);
    let (out, _) = run(&["check", s(&m)], 1);
    let box_bytes = 1u64 << 20;
    let first = (128 * cols + 1024) * 8;
    let end = (255 * cols + 2048) * 8;
    let says =
        format!("(block 3 of the tile, a box of {box_bytes} bytes in its bytes {first}..{end})");
    assert!(out.contains(&says), "{out}");
    let doc = run_json(&["check", s(&m)], 1);
    let dataset = &doc["files"][0]["datasets"][0];
    assert_eq!(dataset["failed_bytes"], box_bytes);
    assert_eq!(dataset["verified_bytes"], rows * cols * 8 - box_bytes);
    assert_eq!(
        dataset["problems"][0]["tile_bytes"],
        serde_json::json!([first, end])
    );
}
