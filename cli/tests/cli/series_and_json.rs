//! The `h5tile` tool on series folders (`cp`, `rm` and `pack` of a whole series, `ls` of
//! several files and folders, a pruning that was interrupted told from a write that did not
//! commit), `--json` on every command, success or failure, and the byte counts `check` and
//! `ls` give (good and failed bytes; the space a file uses beside its apparent size).

use super::*;
use h5tile::internals::testkit::{tile_files, write_tiles};
use h5tile::internals::tool::{checkpoint_path, prune, record_latest, tile_dir, SeriesOptions};
use h5tile::internals::{host_bytes, Dtype, Layout, LocalTile, Tile, WriteOptions};
use serde_json::{json, Value};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The file names of `paths`.
fn names(paths: &[PathBuf]) -> Vec<String> {
    paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// A line of `h5tile ls DIR` cut into its cells (two spaces or more apart).
fn cells(line: &str) -> Vec<String> {
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect()
}

/// What a series' commit leaves when the process is killed while it prunes `master`: `prune`
/// removes a pruned checkpoint's master first, then the files of its tile folder one by one,
/// then the folder; this one was killed after the master and the first tile file.
fn killed_while_pruning(master: &Path) {
    std::fs::remove_file(master).unwrap();
    std::fs::remove_file(&tile_files(master)[0]).unwrap();
}

#[test]
fn ls_and_check_tell_an_interrupted_pruning_from_a_write_that_did_not_commit() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let three = series_checkpoint(dir, 3, Layout::Vds, false);
    series_checkpoint(dir, 4, Layout::Subfiles, false);
    series_checkpoint(dir, 5, Layout::Vds, false);
    // Step 5 committed and its pruning (keep_last 2) was removing step 3 when it was killed;
    // then a write of step 6 was killed before its commit.
    killed_while_pruning(&three);
    let tiles3 = tile_dir(&three);
    let [tiles6, tmp6] = crashed_checkpoint(dir, 6);

    let (out, _) = run(&["ls", s(dir)], 0);
    let lines: Vec<Vec<String>> = out.lines().map(cells).collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(lines[0][..2], ["step 6", "incomplete"], "{out}");
    assert!(
        lines[0][4].contains("a write that did not commit left")
            && lines[0][4].contains(&names(&[tiles6.clone(), tmp6.clone()]).join(", ")),
        "{out}"
    );
    assert_eq!(lines[1][..2], ["step 5", "latest"], "{out}");
    let pruned = &lines[3];
    assert_eq!(
        pruned[..3],
        ["step 3", "pruning interrupted", "ckpt.000000000003.h5"],
        "{out}"
    );
    let why = &pruned[4];
    assert!(
        why.contains("older than step 5, the latest complete checkpoint")
            && why.contains(&names(std::slice::from_ref(&tiles3))[0])
            && why.ends_with("the next commit removes it"),
        "{out}"
    );
    assert!(!why.contains("did not commit"), "{out}");

    let doc = run_json(&["ls", s(dir)], 0);
    let kinds: Vec<(u64, Value)> = doc["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["step"].as_u64().unwrap(), c["incomplete_kind"].clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            (6, json!("not_committed")),
            (5, Value::Null),
            (4, Value::Null),
            (3, json!("pruning_interrupted"))
        ]
    );
    assert_eq!(doc["checkpoints"][3]["incomplete"].as_str(), Some(&why[..]));

    // `check` says the same, and is well: readers pass over both.
    let (out, _) = run(&["check", s(dir)], 0);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "{}: step 6 is incomplete (no master; a write that did not commit left",
            s(dir)
        )),
        "{out}"
    );
    assert_eq!(
        lines[1],
        format!(
            "{}: step 3: pruning interrupted ({why}): not checked",
            s(dir)
        )
    );
    let doc = run_json(&["check", s(dir)], 0);
    let incomplete = &doc["series"][0]["incomplete"];
    assert_eq!(
        (incomplete[0]["step"].clone(), incomplete[0]["kind"].clone()),
        (json!(6), json!("not_committed"))
    );
    assert_eq!(
        (incomplete[1]["step"].clone(), incomplete[1]["kind"].clone()),
        (json!(3), json!("pruning_interrupted"))
    );

    // The next commit, as a series commits (the checkpoint, its record, then the pruning),
    // removes what was left of step 3 (and the write of step 6 it is newer than).
    series_checkpoint(dir, 7, Layout::Vds, false);
    let keep_two = SeriesOptions {
        keep_last: 2,
        keep_every: 0,
    };
    prune(dir, 7, keep_two).unwrap();
    assert!(!tiles3.exists() && !tiles6.exists() && !tmp6.exists());
    let doc = run_json(&["ls", s(dir)], 0);
    let steps: Vec<(u64, bool)> = doc["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["step"].as_u64().unwrap(),
                c["complete"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(steps, [(7, true), (5, true)]);
}

/// A series folder `ser` in `parent`: steps 1 (subfiles), 2 (single file) and 3 (VDS, with
/// `/h` beside `/g`), a write of step 4 that did not commit, and a file of the user's.
fn three_step_series(parent: &Path) -> (PathBuf, [PathBuf; 2]) {
    let ser = parent.join("ser");
    std::fs::create_dir(&ser).unwrap();
    series_checkpoint(&ser, 1, Layout::Subfiles, false);
    series_checkpoint(&ser, 2, Layout::Single, false);
    series_checkpoint(&ser, 3, Layout::Vds, true);
    let leftovers = crashed_checkpoint(&ser, 4);
    std::fs::write(ser.join("notes.txt"), b"not a checkpoint").unwrap();
    (ser, leftovers)
}

#[test]
fn cp_of_a_series_copies_every_complete_checkpoint_and_the_record_verified() {
    let d = tempfile::tempdir().unwrap();
    let (ser, [tiles4, tmp4]) = three_step_series(d.path());
    let before = snapshot(&ser);
    let copy = d.path().join("copy");

    let (out, err) = run(&["cp", s(&ser), s(&copy)], 0);
    assert_eq!(err, "");
    assert_eq!(
        names_in(&copy),
        [
            "ckpt.000000000001.h5",
            "ckpt.000000000001.h5.tiles",
            "ckpt.000000000002.h5",
            "ckpt.000000000003.h5",
            "ckpt.000000000003.h5.tiles",
            "latest"
        ]
    );
    for step in 1..=3 {
        let master = checkpoint_path(&copy, step);
        assert_eq!(read_grid(&master, "/g"), expected_grid(), "step {step}");
        let original = checkpoint_path(&ser, step);
        if step != 2 {
            assert_eq!(
                names(&tile_files(&master)),
                names(&tile_files(&original)),
                "step {step}"
            );
        }
    }
    assert_eq!(read_grid(&checkpoint_path(&copy, 3), "/h"), expected_grid());
    assert_eq!(
        std::fs::read(copy.join("latest")).unwrap(),
        std::fs::read(ser.join("latest")).unwrap()
    );
    assert!(
        out.starts_with(&format!(
            "copied series '{}' to '{}': 3 complete checkpoints (steps 1, 2, 3)",
            s(&ser),
            s(&copy)
        )),
        "{out}"
    );
    assert!(out.contains("the record 'latest' (step 3)"), "{out}");
    for left in [&tiles4, &tmp4] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("not copied: '{}' (step 4", s(left)))),
            "{out}"
        );
    }
    assert!(
        out.contains(&format!(
            "not copied: '{}' (not part of the series)",
            s(&ser.join("notes.txt"))
        )),
        "{out}"
    );
    assert_eq!(snapshot(&ser), before, "the original is untouched");
    run(&["check", "--all", s(&copy)], 0);

    // An existing folder is copied into, under the series' name; once there, it is refused.
    run(&["cp", s(&ser), s(&copy)], 0);
    assert!(checkpoint_path(&copy.join("ser"), 3).exists());
    let copied = snapshot(&copy);
    let (out, err) = run(&["cp", s(&ser), s(&copy)], 2);
    assert_eq!(out, "");
    assert!(
        err.starts_with(&format!(
            "h5tile: cannot copy to '{}': ",
            s(&copy.join("ser"))
        )) && err.contains("exists (--force replaces"),
        "{err}"
    );
    assert_eq!(snapshot(&copy), copied);
    run(&["cp", "--force", s(&ser), s(&copy)], 0);
    assert_eq!(snapshot(&copy).len(), copied.len());
    // A name ending with '/' is a folder to be made, copied into as an existing one is.
    let slash = d.path().join("slash");
    run(&["cp", s(&ser), &format!("{}/", s(&slash))], 0);
    assert_eq!(names_in(&slash), ["ser"]);

    let again = d.path().join("again");
    let doc = run_json(&["cp", s(&ser), s(&again)], 0);
    assert_eq!(
        (doc["source"].as_str(), doc["destination"].as_str()),
        (Some(s(&ser)), Some(s(&again)))
    );
    let steps: Vec<u64> = doc["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["step"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, [1, 2, 3]);
    let three = &doc["checkpoints"][2];
    assert_eq!(three["destination"], s(&checkpoint_path(&again, 3)));
    assert_eq!(three["copied"].as_array().unwrap().len(), 8, "{three}");
    assert_eq!(doc["record"]["step"], 3);
    assert_eq!(doc["record"]["verified"], "bytes");
    let not_copied: Vec<(&str, Value)> = doc["not_copied"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["path"].as_str().unwrap(), n["step"].clone()))
        .collect();
    assert_eq!(
        not_copied,
        [
            (s(&tiles4), json!(4)),
            (s(&tmp4), json!(4)),
            (s(&ser.join("notes.txt")), Value::Null)
        ]
    );

    // A damaged checkpoint (the newest, copied last) fails the copy, which leaves nothing:
    // neither the checkpoints copied before it nor the folders made for it.
    let tile = flip_tile_byte(&checkpoint_path(&ser, 3), 0, 0);
    let (new, bad) = (d.path().join("new"), d.path().join("new/bad"));
    let (_, err) = run(&["cp", s(&ser), s(&bad)], 1);
    assert!(err.contains("damaged") && err.contains(s(&tile)), "{err}");
    assert!(!new.exists());
}

#[test]
fn rm_of_a_series_removes_it_and_dry_run_lists_it() {
    let d = tempfile::tempdir().unwrap();
    let ser = d.path().join("ser");
    std::fs::create_dir(&ser).unwrap();
    let one = series_checkpoint(&ser, 1, Layout::Vds, false);
    let two = series_checkpoint(&ser, 2, Layout::Subfiles, false);
    let three = series_checkpoint(&ser, 3, Layout::Single, false);
    let [tiles4, tmp4] = crashed_checkpoint(&ser, 4);
    killed_while_pruning(&one);
    // A record that a crash left under its temporary name.
    let record_tmp = ser.join(".latest.000000000000feed.tmp");
    std::fs::write(&record_tmp, b"3\nckpt.000000000003.h5\n").unwrap();
    let before = snapshot(&ser);

    let (out, _) = run(&["rm", "--dry-run", s(&ser)], 0);
    assert_eq!(snapshot(&ser), before, "a dry run removes nothing");
    let listed: Vec<&str> = out.lines().collect();
    let mut want: Vec<PathBuf> = tile_files(&one);
    want.push(tile_dir(&one));
    want.extend([
        tiles4.join("g.000000000000dead.r0.t0.h5"),
        tiles4.clone(),
        tmp4,
    ]);
    want.push(two.clone());
    want.extend(tile_files(&two));
    want.extend([tile_dir(&two), three.clone()]);
    want.extend([record_tmp, ser.join("latest"), ser.clone()]);
    let want: Vec<String> = want
        .iter()
        .map(|p| format!("would remove '{}'", s(p)))
        .collect();
    assert_eq!(
        listed, want,
        "leftovers, then oldest first, the record, the folder"
    );
    let doc = run_json(&["rm", "--dry-run", s(&ser)], 0);
    assert_eq!(doc["dir"], s(&ser));
    assert_eq!(doc["dry_run"], true);
    assert_eq!(doc["removed"].as_array().unwrap().len(), want.len());

    let (out, _) = run(&["rm", s(&ser)], 0);
    assert_eq!(
        out,
        want.join("\n").replace("would remove", "removed") + "\n"
    );
    assert!(!ser.exists());

    // A file of the user's in the folder stays, and so does the folder.
    std::fs::create_dir(&ser).unwrap();
    series_checkpoint(&ser, 1, Layout::Vds, false);
    let notes = ser.join("notes.txt");
    std::fs::write(&notes, b"mine").unwrap();
    let doc = run_json(&["rm", s(&ser)], 0);
    assert_eq!(doc["kept"], json!([s(&notes)]));
    assert_eq!(names_in(&ser), ["notes.txt"]);
}

#[test]
fn pack_of_a_series_packs_its_latest_complete_checkpoint() {
    let d = tempfile::tempdir().unwrap();
    let ser = d.path().join("ser");
    std::fs::create_dir(&ser).unwrap();
    series_checkpoint(&ser, 1, Layout::Vds, false);
    let two = series_checkpoint(&ser, 2, Layout::Subfiles, true);
    crashed_checkpoint(&ser, 3);
    let packed = d.path().join("packed.h5");

    let (out, _) = run(&["pack", s(&ser), s(&packed)], 0);
    assert!(
        out.starts_with(&format!(
            "step 2 is the latest complete checkpoint of '{}': packed '{}' into '{}'",
            s(&ser),
            s(&two),
            s(&packed)
        )),
        "{out}"
    );
    assert_eq!(read_grid(&packed, "/h"), expected_grid());
    assert!(!tile_dir(&packed).exists());
    let doc = run_json(&["pack", s(&ser), s(&d.path().join("p2.h5"))], 0);
    assert_eq!(
        (doc["series"].as_str(), doc["step"].as_u64()),
        (Some(s(&ser)), Some(2))
    );
    assert_eq!(doc["source"], s(&two));
    // Into a folder: under the checkpoint's name.
    let into = d.path().join("into");
    std::fs::create_dir(&into).unwrap();
    run(&["pack", s(&ser), s(&into)], 0);
    assert_eq!(names_in(&into), ["ckpt.000000000002.h5"]);

    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    crashed_checkpoint(&empty, 1);
    let (_, err) = run(&["pack", s(&empty), s(&d.path().join("none.h5"))], 2);
    assert_eq!(
        err,
        format!("h5tile: no complete checkpoint in '{}'\n", s(&empty))
    );
    assert!(!d.path().join("none.h5").exists());
}

#[test]
fn ls_takes_several_files_and_folders() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a.h5"), d.path().join("b.h5"));
    write_grid(&a, "/g", Layout::Vds, false);
    write_grid(&b, "/g", Layout::Single, false);
    write_grid(&b, "/k", Layout::Single, true);
    let ser = d.path().join("ser");
    std::fs::create_dir(&ser).unwrap();
    series_checkpoint(&ser, 7, Layout::Vds, false);

    let (out, _) = run(&["ls", s(&a), s(&b), s(&ser)], 0);
    let blocks: Vec<&str> = out.split("\n\n").collect();
    assert_eq!(blocks.len(), 3, "{out}");
    for (block, path) in blocks.iter().zip([&a, &b, &ser]) {
        let mut lines = block.lines();
        assert_eq!(lines.next(), Some(&format!("{}:", s(path))[..]), "{out}");
        let alone = run(&["ls", s(path)], 0).0;
        assert_eq!(
            lines.collect::<Vec<_>>().join("\n"),
            alone.trim_end(),
            "{out}"
        );
    }
    let doc = run_json(&["ls", s(&a), s(&b), s(&ser)], 0);
    assert_eq!(doc["ok"], true);
    let listings = doc["listings"].as_array().unwrap();
    assert_eq!(listings[0], run_json(&["ls", s(&a)], 0));
    assert_eq!(listings[1]["datasets"].as_array().unwrap().len(), 2);
    assert_eq!(listings[2]["dir"], s(&ser));

    // A last argument that is no file nor series folder is a dataset of the files.
    let doc = run_json(&["ls", s(&a), s(&b), "/g"], 0);
    for listing in doc["listings"].as_array().unwrap() {
        assert_eq!(listing["datasets"].as_array().unwrap().len(), 1, "{doc}");
    }
    // One that cannot be opened: the others are listed, and the exit status is 2.
    let missing = d.path().join("missing.h5");
    let (out, err) = run(&["ls", s(&a), s(&missing), s(&b)], 2);
    assert!(out.contains(&format!("{}:\n/g ", s(&a))), "{out}");
    assert!(out.contains(&format!("{}:\n/g ", s(&b))), "{out}");
    assert_eq!(
        err,
        format!("h5tile: cannot open '{}': no such file\n", s(&missing))
    );
    let doc = run_json(&["ls", s(&a), s(&missing), s(&b)], 2);
    assert_eq!(doc["ok"], false);
    assert!(doc["listings"][1]["error"]
        .as_str()
        .unwrap()
        .contains("no such file"));
    assert_eq!(doc["failure"]["exit"], 2);
}

#[test]
fn json_is_one_document_on_success_and_on_failure_for_every_command() {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join("m.h5");
    write_grid(&m, "/g", Layout::Vds, false);
    let missing = d.path().join("missing.h5");
    let taken = d.path().join("taken.h5");
    std::fs::write(&taken, b"x").unwrap();
    let out_h5 = d.path().join("out.h5");
    let failing: &[(&[&str], i32, Option<&str>)] = &[
        (&["ls", s(&missing)], 2, Some("ls")),
        (&["check", s(&missing)], 2, None),
        (&["cp", s(&missing), s(&out_h5)], 2, Some("cp")),
        (&["cp", s(&m), s(&taken)], 2, Some("cp")),
        (&["pack", s(&missing), s(&out_h5)], 2, Some("pack")),
        (
            &["pack", s(&m), s(&out_h5), "--compression", "nope"],
            2,
            Some("pack"),
        ),
        (&["rm", s(&missing)], 2, Some("rm")),
        // Bad command lines.
        (&["cp", s(&m)], 2, Some("cp")),
        (&["ls"], 2, Some("ls")),
        (&["frobnicate"], 2, Some("")),
    ];
    for &(args, code, command) in failing {
        let mut all = args.to_vec();
        all.push("--json");
        let (out, err) = run(&all, code);
        let doc = document(&out);
        assert_eq!(doc["ok"], false, "{args:?}: {doc}");
        let failure = &doc["failure"];
        assert_eq!(failure["exit"], code, "{args:?}: {doc}");
        assert_eq!(failure["kind"], "usage", "{args:?}: {doc}");
        let message = failure["message"].as_str().unwrap();
        assert!(!message.is_empty(), "{args:?}: {doc}");
        // The line on stderr stays.
        assert!(
            err.starts_with("h5tile: ") || err.starts_with("error: "),
            "{args:?}: {err}"
        );
        match command {
            // check's own report, which says what failed of each file.
            None => assert_eq!(doc["files"][0]["error"], message, "{doc}"),
            Some("") => assert_eq!(doc["command"], Value::Null, "{doc}"),
            Some(name) => assert_eq!(doc["command"], name, "{args:?}: {doc}"),
        }
        if err.starts_with("h5tile: ") {
            assert_eq!(err, format!("h5tile: {message}\n"), "{args:?}");
        }
    }
    // A bad command line's message is clap's first paragraph, on one line.
    let doc = run_json(&["cp", s(&m)], 2);
    assert_eq!(
        doc["failure"]["message"],
        "the following required arguments were not provided: <DST>"
    );
    // The library's status, where a failure has one.
    let doc = run_json(&["ls", s(&missing)], 2);
    assert_eq!(doc["failure"]["status"], "H5TILE_ERR_NOT_FOUND");

    // Problems found: exit 1, in the report of the command that found them.
    flip_tile_byte(&m, 1, 0);
    let doc = run_json(&["check", s(&m)], 1);
    assert_eq!(doc["failure"]["kind"], "problems");
    assert_eq!(doc["failure"]["exit"], 1);
    assert!(doc["failure"]["message"]
        .as_str()
        .unwrap()
        .starts_with("check found 1 problem"));
    let doc = run_json(&["cp", s(&m), s(&out_h5)], 1);
    assert_eq!(
        (doc["ok"].clone(), doc["failure"]["kind"].clone()),
        (json!(false), json!("problems"))
    );
    assert!(doc["failure"]["message"]
        .as_str()
        .unwrap()
        .contains("damaged"));

    // Success: one document each.
    let (fine, copy) = (d.path().join("fine.h5"), d.path().join("copy.h5"));
    write_grid(&fine, "/g", Layout::Subfiles, false);
    assert_eq!(
        run_json(&["cp", s(&fine), s(&copy)], 0)["destination"],
        s(&copy)
    );
    let packed = d.path().join("packed.h5");
    assert_eq!(
        run_json(&["pack", s(&copy), s(&packed)], 0)["packed"][0]["name"],
        "/g"
    );
    assert_eq!(run_json(&["rm", s(&copy)], 0)["removed"][0], s(&copy));
    let doc = run_json(&["completions", "bash"], 0);
    assert_eq!(doc["shell"], "bash");
    assert!(
        doc["script"].as_str().unwrap().contains("complete"),
        "{doc}"
    );
}

/// `rows` x 1024 float64 elements (element k = k) written as one tile of `dataset` of `path`
/// in `layout`: rows / 128 MiB.
fn write_big_tile(path: &Path, dataset: &str, rows: u64, layout: Layout) {
    let data: Vec<f64> = (0..rows * 1024).map(|k| k as f64).collect();
    let tiles = vec![LocalTile {
        tile: Tile::new(vec![0, 0], vec![rows, 1024]),
        buf: host_bytes(&data),
    }];
    let options = WriteOptions {
        layout,
        ..WriteOptions::default()
    };
    write_tiles(path, dataset, Dtype::Float64, &[rows, 1024], tiles, options).unwrap();
}

#[test]
fn check_counts_the_bytes_verified_good_and_those_that_failed() {
    const MIB: u64 = 1 << 20;
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join("big.h5");
    // Three 1 MiB blocks, the second of them damaged.
    write_big_tile(&m, "/big", 384, Layout::Vds);
    flip_tile_byte(&m, 0, MIB + 5);
    let (out, _) = run(&["check", s(&m)], 1);
    assert!(
        out.ends_with(&format!(
            "{}: 1 problem (1 virtual dataset, 1 tile, 2.00 MiB of tile data verified against \
             checksums, 1.00 MiB failed)\n",
            s(&m)
        )),
        "{out}"
    );
    let doc = run_json(&["check", s(&m)], 1);
    let dataset = &doc["files"][0]["datasets"][0];
    assert_eq!(
        (
            dataset["verified_bytes"].as_u64(),
            dataset["failed_bytes"].as_u64()
        ),
        (Some(2 * MIB), Some(MIB))
    );
    assert_eq!(dataset["problems"][0]["tile_bytes"], json!([MIB, 2 * MIB]));

    // A tile file that is gone: its bytes failed, unread.
    let grid = d.path().join("grid.h5");
    write_grid(&grid, "/g", Layout::Vds, false);
    std::fs::remove_file(&tile_files(&grid)[2]).unwrap();
    let (out, _) = run(&["check", s(&grid)], 1);
    assert!(
        out.contains("192 B of tile data verified against checksums, 48 B failed)"),
        "{out}"
    );
    // All well: no failed bytes said.
    let clean = d.path().join("clean.h5");
    write_grid(&clean, "/g", Layout::Vds, false);
    let (out, _) = run(&["check", s(&clean)], 0);
    assert!(
        out.ends_with("240 B of tile data verified against checksums)\n"),
        "{out}"
    );
    assert_eq!(
        run_json(&["check", s(&clean)], 0)["files"][0]["datasets"][0]["failed_bytes"],
        0
    );
}

/// A byte count as the tool writes it in MiB ("8.01 MiB").
fn mib(n: u64) -> String {
    format!("{:.2} MiB", n as f64 / (1u64 << 20) as f64)
}

#[test]
fn ls_of_a_series_shows_the_space_used_beside_the_apparent_size() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    // 8 MiB in one tile: its tile file's data starts at 2 MiB, after a hole.
    let master = checkpoint_path(dir, 1);
    write_big_tile(&master, "/big", 1024, Layout::Vds);
    record_latest(dir, 1, false).unwrap();
    let files: Vec<PathBuf> = std::iter::once(master.clone())
        .chain(tile_files(&master))
        .collect();
    let apparent: u64 = files.iter().map(|f| f.metadata().unwrap().len()).sum();
    let used: u64 = files
        .iter()
        .map(|f| f.metadata().unwrap().blocks() * 512)
        .sum();
    assert!(used + (1 << 20) < apparent, "a hole: {used} of {apparent}");

    let doc = run_json(&["ls", s(dir)], 0);
    let c = &doc["checkpoints"][0];
    assert_eq!(
        (c["bytes"].as_u64(), c["used_bytes"].as_u64()),
        (Some(apparent), Some(used))
    );
    let (out, _) = run(&["ls", s(dir)], 0);
    let row = cells(out.lines().next().unwrap());
    assert_eq!(
        row[3],
        format!("{} on disk ({} apparent)", mib(used), mib(apparent)),
        "{out}"
    );
}

/// `cp` keeps a tile file's hole a hole: the copy takes the space the original takes, not its
/// apparent size, and reads back the same bytes (`cp` compares them).
#[test]
fn cp_keeps_the_holes_of_tile_files() {
    let d = tempfile::tempdir().unwrap();
    let master = d.path().join("big.h5");
    write_big_tile(&master, "/big", 1024, Layout::Vds);
    // The tile files' apparent size and the space they take (`cp` rewrites the master).
    let sizes = |m: &std::path::Path| -> (u64, u64) {
        let files = tile_files(m);
        let apparent = files.iter().map(|f| f.metadata().unwrap().len()).sum();
        let used = files
            .iter()
            .map(|f| f.metadata().unwrap().blocks() * 512)
            .sum();
        (apparent, used)
    };
    let (apparent, original) = sizes(&master);
    assert!(
        original + (1 << 20) < apparent,
        "a hole: {original} of {apparent}"
    );
    let copy = d.path().join("copy.h5");
    run(&["cp", s(&master), s(&copy)], 0);
    let (copy_apparent, copied) = sizes(&copy);
    assert_eq!(copy_apparent, apparent);
    // The file system may allocate a little differently, never the hole's 2 MiB.
    assert!(
        copied < original + (1 << 20),
        "{copied} bytes used by the copy, {original} by the original"
    );
}
