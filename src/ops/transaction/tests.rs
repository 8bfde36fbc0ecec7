//! The transaction's own tests: writers and a commit in one process (the C and Python tests
//! run them in several), and every way a commit refuses.

use super::*;
use crate::ops::write::LocalTile;
use crate::platform::device::host_bytes;
use crate::platform::hdf5::AttributeValue;
use crate::testkit::{flip_bits, read_f64, tile_names, write_whole};

const GLOBAL: [u64; 2] = [6, 4];

/// Element (i, j) of the test array: `base + 10 i + j`.
fn values(base: f64, tile: &Tile) -> Vec<f64> {
    let mut v = Vec::new();
    for i in tile.offset[0]..tile.offset[0] + tile.shape[0] {
        for j in tile.offset[1]..tile.offset[1] + tile.shape[1] {
            v.push(base + (10 * i + j) as f64);
        }
    }
    v
}

/// A transaction on `path` declaring "/u", a 6x4 float64 array.
fn begin(path: &Path, options: WriteOptions) -> Transaction {
    let mut tx = Transaction::begin(path, options).unwrap();
    tx.declare(Declared {
        dataset: "/u".into(),
        dtype: Dtype::Float64,
        global: GLOBAL.to_vec(),
    })
    .unwrap();
    tx
}

/// Writes rows `r0..r0+rows` of "/u" through `token`, as a writer would: its record.
fn write_rows(token: &[u8], base: f64, r0: u64, rows: u64) -> Vec<u8> {
    try_write_rows(token, base, r0, rows).unwrap().remove(0)
}

/// `write_rows`, its failure returned.
fn try_write_rows(token: &[u8], base: f64, r0: u64, rows: u64) -> Result<Vec<Vec<u8>>> {
    let tile = Tile::new(vec![r0, 0], vec![rows, 4]);
    let data = values(base, &tile);
    let local = LocalTile {
        tile,
        buf: host_bytes(&data),
    };
    writer::write_tiles(token, "/u", &[local])
}

/// An earlier version of the file at `path`: "/u" of base 5, written whole.
fn write_old(path: &Path) {
    let old = values(5.0, &whole());
    let buf = host_bytes(&old);
    write_whole(
        path,
        "/u",
        Dtype::Float64,
        &GLOBAL,
        buf,
        WriteOptions::default(),
    )
    .unwrap();
}

fn whole() -> Tile {
    Tile::new(vec![0, 0], GLOBAL.to_vec())
}

fn refs(records: &[Vec<u8>]) -> Vec<&[u8]> {
    records.iter().map(|r| r.as_slice()).collect()
}

#[test]
fn tiles_from_writers_threads_commit_once_and_read_back() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("x.h5");
    let mut tx = begin(&path, WriteOptions::default());
    tx.add_attribute(Attribute {
        object: "/".into(),
        name: "step".into(),
        value: AttributeValue::Text("seven".into()),
    })
    .unwrap();
    let token = tx.token().unwrap();
    let records: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|k| {
                let token = &token;
                s.spawn(move || write_rows(token, 1.0, 2 * k, 2))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(!path.exists(), "nothing is visible before the commit");
    tx.commit(&refs(&records)).unwrap();
    assert_eq!(
        read_f64(&path, "/u", &whole()).unwrap(),
        values(1.0, &whole())
    );
    assert_eq!(tile_names(&path).len(), 3);
    // A second commit changes nothing.
    let before = std::fs::metadata(&path).unwrap().modified().unwrap();
    tx.commit(&refs(&records)).unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        before
    );
    assert_eq!(tile_names(&path).len(), 3);
    // Checked: the writers' checksums are in the master, and a changed byte fails the read.
    let r = Record::from_bytes(&records[1], |_| Some(8)).unwrap();
    let file = writer::tile_path(&tx.token, 0, r.attempt);
    flip_bits(&file, r.bytes.data_offset + 3, 0x10);
    let e = read_f64(&path, "/u", &whole()).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_CORRUPT, "{}", e.message);
}

#[test]
fn a_retried_tile_keeps_one_attempt_and_a_late_one_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("x.h5");
    let mut tx = begin(&path, WriteOptions::default());
    let token = tx.token().unwrap();
    let mut records: Vec<Vec<u8>> = (0..3).map(|k| write_rows(&token, 0.0, 2 * k, 2)).collect();
    records.push(write_rows(&token, 0.0, 2, 2));
    // A writer that died before its record reached the commit (its task ran again).
    let _lost = write_rows(&token, 0.0, 4, 2);
    assert_eq!(tile_names(&path).len(), 5);
    tx.commit(&refs(&records)).unwrap();
    assert_eq!(
        tile_names(&path).len(),
        3,
        "one attempt of the retried tile is kept"
    );
    assert_eq!(
        read_f64(&path, "/u", &whole()).unwrap(),
        values(0.0, &whole())
    );
    // A speculative copy finishing after the commit is told so and removes its file; a
    // second commit changes nothing.
    let e = try_write_rows(&token, 99.0, 0, 2).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_NOT_FOUND, "{}", e.message);
    assert!(e.message.contains("ended before"), "{}", e.message);
    assert_eq!(tile_names(&path).len(), 3);
    tx.commit(&[]).unwrap();
    assert_eq!(tile_names(&path).len(), 3);
    assert_eq!(
        read_f64(&path, "/u", &whole()).unwrap(),
        values(0.0, &whole())
    );
}

/// Every refusal leaves the old file as it was and the transaction open: the right records
/// then commit.
#[test]
fn a_refused_commit_leaves_the_old_file_and_the_transaction_open() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("x.h5");
    write_old(&path);
    let old = std::fs::read(&path).unwrap();
    let mut tx = begin(&path, WriteOptions::default());
    let token = tx.token().unwrap();
    let good: Vec<Vec<u8>> = (0..3).map(|k| write_rows(&token, 1.0, 2 * k, 2)).collect();

    // A record of another transaction.
    let mut other = begin(&d.path().join("y.h5"), WriteOptions::default());
    let foreign = write_rows(&other.token().unwrap(), 0.0, 0, 2);
    let mut with_foreign = good.clone();
    with_foreign[0] = foreign;
    // A hole, an overlap.
    let hole = good[..2].to_vec();
    let mut overlap = good.clone();
    overlap.push(write_rows(&token, 1.0, 1, 2));
    // A damaged record.
    let mut damaged = good.clone();
    let n = damaged[1].len();
    damaged[1][n / 2] ^= 4;
    let cases: [(&str, Vec<Vec<u8>>, h5tile_status, &str); 4] = [
        (
            "foreign",
            with_foreign,
            H5TILE_ERR_INVALID_ARGUMENT,
            "record 0 is of transaction",
        ),
        (
            "hole",
            hole,
            H5TILE_ERR_SHAPE,
            "dataset '/u': the records' tiles cover 16 of the 24",
        ),
        (
            "overlap",
            overlap,
            H5TILE_ERR_SHAPE,
            "dataset '/u': the tile of record",
        ),
        (
            "damaged",
            damaged,
            H5TILE_ERR_INVALID_ARGUMENT,
            "record 1: the tile record is not",
        ),
    ];
    for (what, records, status, starts) in cases {
        let e = tx.commit(&refs(&records)).unwrap_err();
        assert_eq!(e.status, status, "{what}: {}", e.message);
        assert!(e.message.starts_with(starts), "{what}: {}", e.message);
        assert_eq!(std::fs::read(&path).unwrap(), old, "{what}");
    }

    // A tile file gone, or replaced by another of the same name.
    let victim = writer::tile_path(
        &tx.token,
        0,
        Record::from_bytes(&good[2], |_| Some(8)).unwrap().attempt,
    );
    let saved = std::fs::read(&victim).unwrap();
    // Held by another name, so the replacement below cannot get its inode number back.
    let held = d.path().join("held");
    std::fs::hard_link(&victim, &held).unwrap();
    std::fs::remove_file(&victim).unwrap();
    let e = tx.commit(&refs(&good)).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_MISSING_TILE, "{}", e.message);
    assert!(e.message.starts_with("tile file '"), "{}", e.message);
    assert!(
        e.message
            .ends_with("of record 2 (dataset '/u' [4:6, 0:4]) is missing"),
        "{}",
        e.message
    );
    std::fs::write(&victim, &saved).unwrap();
    let e = tx.commit(&refs(&good)).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_CORRUPT, "{}", e.message);
    assert!(
        e.message.contains("is not the file its writer made"),
        "{}",
        e.message
    );
    assert_eq!(std::fs::read(&path).unwrap(), old);
    std::fs::remove_file(&held).unwrap();
    // A good attempt of that tile beside the bad one: the good one is kept.
    let mut retried = good.clone();
    retried.push(write_rows(&token, 1.0, 4, 2));
    tx.commit(&refs(&retried)).unwrap();
    assert_eq!(
        read_f64(&path, "/u", &whole()).unwrap(),
        values(1.0, &whole())
    );
    other.abort().unwrap();
}

#[test]
fn abort_and_drop_remove_what_the_writers_wrote() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("x.h5");
    write_old(&path);
    let before = tile_names(&path);
    let mut tx = begin(&path, WriteOptions::default());
    let token = tx.token().unwrap();
    write_rows(&token, 1.0, 0, 2);
    tx.abort().unwrap();
    assert_eq!(tile_names(&path), before);
    assert_eq!(
        read_f64(&path, "/u", &whole()).unwrap(),
        values(5.0, &whole())
    );
    let e = tx.commit(&[]).unwrap_err();
    assert!(e.message.contains("it was aborted"), "{}", e.message);
    // A writer still running at the abort (the folder stays: the old file's) removes its
    // file itself.
    let e = try_write_rows(&token, 0.0, 0, 1).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_NOT_FOUND, "{}", e.message);
    assert_eq!(tile_names(&path), before);
    // A writer after the abort is told the tile folder is gone where it was the path's own.
    let fresh = d.path().join("new.h5");
    let mut tx = begin(&fresh, WriteOptions::default());
    let token = tx.token().unwrap();
    drop(tx);
    assert!(!layout::tile_dir(&fresh).exists());
    let e = try_write_rows(&token, 0.0, 0, 1).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_NOT_FOUND, "{}", e.message);
}

#[test]
fn begin_and_write_refuse_what_cannot_be_written() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("x.h5");
    let single = WriteOptions {
        layout: Layout::Single,
        ..WriteOptions::default()
    };
    let e = Transaction::begin(&path, single).err().unwrap();
    assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT);
    assert!(
        e.message
            .starts_with("H5TILE_LAYOUT_SINGLE needs the ranks"),
        "{}",
        e.message
    );
    let mut tx = begin(&path, WriteOptions::default());
    let token = tx.token().unwrap();
    let e = tx
        .declare(Declared {
            dataset: "/v".into(),
            dtype: Dtype::Int8,
            global: vec![3],
        })
        .unwrap_err();
    assert!(
        e.message.contains("the transaction's token was taken"),
        "{}",
        e.message
    );
    let tile = Tile::new(vec![5, 0], vec![2, 4]);
    let data = [0f64; 8];
    let local = LocalTile {
        tile,
        buf: host_bytes(&data),
    };
    let e = writer::write_tiles(&token, "/u", std::slice::from_ref(&local)).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT);
    assert!(
        e.message.contains("lies outside the global shape"),
        "{}",
        e.message
    );
    let e = writer::write_tiles(&token, "/w", &[local]).unwrap_err();
    assert_eq!(
        e.message,
        "dataset '/w' is not one of the transaction's: '/u'"
    );
}

/// A commit made from the token elsewhere (`resume`) is seen by the coordinator: its own
/// commit then changes nothing, and dropping it removes nothing.
#[test]
fn a_commit_from_the_token_is_seen_by_the_coordinator() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("x.h5");
    let mut tx = begin(&path, WriteOptions::default());
    let token = tx.token().unwrap();
    let records: Vec<Vec<u8>> = (0..3).map(|k| write_rows(&token, 2.0, 2 * k, 2)).collect();
    let mut elsewhere = Transaction::resume(&token).unwrap();
    elsewhere.commit(&refs(&records)).unwrap();
    drop(elsewhere);
    assert_eq!(
        read_f64(&path, "/u", &whole()).unwrap(),
        values(2.0, &whole())
    );
    let late = write_rows(&token, 9.0, 0, 2);
    tx.commit(&[&late]).unwrap();
    assert_eq!(tile_names(&path).len(), 3, "the late attempt's file went");
    drop(tx);
    assert_eq!(tile_names(&path).len(), 3);
    assert_eq!(
        read_f64(&path, "/u", &whole()).unwrap(),
        values(2.0, &whole())
    );
    // The coordinator dropped uncommitted after a commit elsewhere keeps the files too.
    let mut tx = begin(&path, WriteOptions::default());
    let token = tx.token().unwrap();
    let records: Vec<Vec<u8>> = (0..3).map(|k| write_rows(&token, 3.0, 2 * k, 2)).collect();
    Transaction::resume(&token)
        .unwrap()
        .commit(&refs(&records))
        .unwrap();
    let e = tx.abort().unwrap_err();
    assert!(
        e.message.contains("another process committed it"),
        "{}",
        e.message
    );
    drop(tx);
    assert_eq!(
        read_f64(&path, "/u", &whole()).unwrap(),
        values(3.0, &whole())
    );
}
