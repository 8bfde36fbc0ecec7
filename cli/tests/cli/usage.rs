//! Bad inputs, help, completions and version; reads of more tile files than may be open.

use super::*;

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
