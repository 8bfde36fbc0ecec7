//! Virtual datasets h5tile did not write: listed, checked and copied as they allow.

use super::*;

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
    // --fast too: the master records nothing of such a source, so it is opened with HDF5.
    for fast in [&[][..], &["--fast"][..]] {
        let (out, _) = run(&[&["check"][..], fast, &[s(&rel)]].concat(), 1);
        assert!(out.contains(&format!("source file '{}'", s(&bad))), "{out}");
        assert!(
            out.contains("shape [2, 5], which does not hold the mapped box of shape [3, 5]"),
            "{out}"
        );
    }

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
