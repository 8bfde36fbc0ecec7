//! `rm`: the master and exactly its files.

use super::*;

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
