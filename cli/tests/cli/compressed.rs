//! Compressed tiles: `ls` shows codecs, ratios and chunk checksums; `pack` keeps or changes the
//! compression.

use super::*;

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
        line("/z").ends_with(", checksummed (1 MiB runs), stored chunks checksummed"),
        "{}",
        line("/z")
    );
    assert!(
        line("/plain").ends_with(", checksummed (1 MiB boxes, 8 KiB wide)"),
        "{}",
        line("/plain")
    );

    forget_chunk_checksums(&m, "/z");
    assert_eq!(chunks("/z"), (no.clone(), 2.into(), vec![no; 2]));
    assert!(
        line("/z").ends_with(", checksummed (1 MiB runs), stored chunks not checksummed"),
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
