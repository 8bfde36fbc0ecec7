//! Series folders: `ls` lists checkpoints newest first, `check` checks the latest complete
//! one, `check --all` every one.

use super::*;

/// What a write of `step` killed before its commit leaves in `dir` (`kit::crashed_checkpoint`):
/// the names of its tile folder and temporary master.
fn crashed_names(dir: &Path, step: u64) -> [String; 2] {
    crashed_checkpoint(dir, step).map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
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
    let [tiles4, tmp4] = crashed_names(dir, 4);
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
    let [tiles30, _] = crashed_names(dir, 30);

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
