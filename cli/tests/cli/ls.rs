//! `ls` of files h5tile wrote, of plain files and into a closed pipe.

use super::*;

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
        "/x/y  float64  (6, 5)  contiguous  240 B  h5tile single-file, 4 tiles, checksummed \
         (1 MiB boxes, 8 KiB wide)"
    );
    let (out, _) = run(&["check", s(&plain)], 0);
    assert!(
        out.contains(
            "ok (1 single-file dataset, 4 tiles, 240 B of tile data verified against checksums)"
        ),
        "{out}"
    );
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

/// `ls` shows the attributes users stored on the file (a checkpoint's step and time) and on
/// each dataset, in text and JSON, and none of h5tile's own.
#[test]
fn ls_shows_the_attributes_of_the_file_and_of_each_dataset() {
    use h5tile::internals::AttributeValue;
    let (_d, m) = grid_in_new_folder("ckpt.h5", Layout::Vds);
    {
        let _l = hdf5::lock();
        let file = File::open_write(&m).unwrap();
        let numbers = |dtype, bytes| AttributeValue::Numbers { dtype, bytes };
        let set = |object: &str, name: &str, value: AttributeValue| {
            file.set_attribute(object, name, &value).unwrap()
        };
        set(
            "/",
            "step",
            numbers(Dtype::Int64, 50i64.to_ne_bytes().to_vec()),
        );
        set(
            "/",
            "time",
            numbers(Dtype::Float64, 0.25f64.to_ne_bytes().to_vec()),
        );
        set("/", "h5tile_note", AttributeValue::Text("internal".into()));
        set("/g", "units", AttributeValue::Text("K".into()));
        let sizes: Vec<u8> = [2u32, 3].iter().flat_map(|v| v.to_ne_bytes()).collect();
        set("/g", "h5tile_extra", numbers(Dtype::UInt32, sizes));
    }

    let (out, _) = run(&["ls", s(&m)], 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "/: step = 50, time = 0.25", "{out}");
    assert!(lines[1].starts_with("/g "), "{out}");
    assert_eq!(lines[2], "    @ units = \"K\"", "{out}");
    assert_eq!(lines.len(), 3, "{out}");
    assert!(!out.contains("h5tile_"), "{out}");
    // The tiles' lines follow the dataset's attributes.
    let (out, _) = run(&["ls", "-l", s(&m), "/g"], 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 7, "{out}");
    assert_eq!(lines[2], "    @ units = \"K\"", "{out}");
    assert!(lines[3].contains("tile 0"), "{out}");

    let doc = run_json(&["ls", s(&m)], 0);
    assert_eq!(
        doc["attributes"],
        serde_json::json!({"step": 50, "time": 0.25})
    );
    assert!(doc["attributes"]["step"].is_i64());
    assert!(doc["attributes"]["time"].is_f64());
    let g = &doc["datasets"][0];
    assert_eq!(g["attributes"], serde_json::json!({"units": "K"}));
    assert!(!doc.to_string().contains("h5tile_"), "{doc}");
}
