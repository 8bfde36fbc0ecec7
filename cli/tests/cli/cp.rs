//! `cp`: a master with its tiles, copied, verified, never borrowing from elsewhere.

use super::*;

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
