//! The commit's own tests: every layout, overwrite, crash leftovers, keep-others.

use super::*;
use crate::layout::{subfiles, vds};
use crate::ops::read::ReadOptions;
use crate::platform::device::{host_bytes, Buffer};
use crate::testkit::{read_f64, read_into, tile_names, write_tiles, write_whole};
use std::cell::Cell;

thread_local! {
    static FAIL_BEFORE_COMMIT: Cell<bool> = const { Cell::new(false) };
}

/// Makes the next write on this thread fail after its tiles and temporary master exist.
pub fn injected_failure() -> Result<()> {
    if FAIL_BEFORE_COMMIT.with(|f| f.replace(false)) {
        return fail(H5TILE_ERR_IO, "injected failure before commit");
    }
    Ok(())
}

/// Writes a 6x4 float64 array whose element (i, j) is `base + 10 i + j`, as row slabs of
/// `rows_per_tile` rows.
fn write_slabs(path: &Path, base: f64, rows_per_tile: u64) -> Result<()> {
    write_slabs_as(path, base, rows_per_tile, Layout::Vds)
}

fn write_slabs_as(path: &Path, base: f64, rows_per_tile: u64, layout: Layout) -> Result<()> {
    let options = WriteOptions {
        layout,
        ..WriteOptions::default()
    };
    write_slabs_with(path, base, rows_per_tile, options)
}

fn write_slabs_with(
    path: &Path,
    base: f64,
    rows_per_tile: u64,
    options: WriteOptions,
) -> Result<()> {
    let global = [6u64, 4];
    let data = expected(base);
    let tiles = (0..6)
        .step_by(rows_per_tile as usize)
        .map(|r0| {
            let rows = rows_per_tile.min(6 - r0);
            LocalTile {
                tile: Tile::new(vec![r0, 0], vec![rows, 4]),
                buf: host_bytes(&data[(r0 * 4) as usize..]),
            }
        })
        .collect();
    write_tiles(
        path,
        "/grid/values",
        Dtype::Float64,
        &global,
        tiles,
        options,
    )
}

/// Writes the slabs as `write_slabs_as` does and checks that they read back.
#[track_caller]
fn write_and_read_back(path: &Path, base: f64, rows_per_tile: u64, layout: Layout) {
    write_slabs_as(path, base, rows_per_tile, layout).unwrap();
    assert_eq!(read_all(path).unwrap(), expected(base));
}

fn read_all(path: &Path) -> Result<Vec<f64>> {
    read_f64(path, "/grid/values", &Tile::new(vec![0, 0], vec![6, 4]))
}

/// The slabs' elements, row-major: `base + 10 i + j`.
fn expected(base: f64) -> Vec<f64> {
    (0..24)
        .map(|k| base + (10 * (k / 4) + k % 4) as f64)
        .collect()
}

/// The master's per-tile records outgrow an object header (64 KiB) past about 4000 tiles:
/// they must go to dense attribute storage, not fail the write.
#[test]
fn a_master_records_thousands_of_tiles() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("many.h5");
    let n = 4200u64;
    let data: Vec<f64> = (0..n).map(|k| k as f64 * 0.5).collect();
    let tiles = (0..n as usize)
        .map(|k| LocalTile {
            tile: Tile::new(vec![0, k as u64], vec![1, 1]),
            buf: host_bytes(&data[k..k + 1]),
        })
        .collect();
    let options = WriteOptions {
        layout: Layout::Subfiles,
        no_sync: true,
        ..WriteOptions::default()
    };
    write_tiles(&path, "/d", Dtype::Float64, &[1, n], tiles, options).unwrap();
    let out = read_f64(&path, "/d", &Tile::new(vec![0, 0], vec![1, n])).unwrap();
    assert_eq!(out, data);
}

#[test]
fn tiles_round_trip_and_overwrite_leaves_no_stale_tile() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("new/dir/f.h5");
    write_and_read_back(&path, 0.0, 1, Layout::Vds);
    assert_eq!(tile_names(&path).len(), 6);
    write_and_read_back(&path, 1000.0, 4, Layout::Vds);
    assert_eq!(tile_names(&path).len(), 2, "{:?}", tile_names(&path));
}

/// Two processes writing one path alone: A commits, then B commits over it while A still holds
/// its lock, and B's lock is free again when A's cleanup runs. A's cleanup must keep the files
/// of B's master (which replaced A's) and remove its own, where it had removed B's: a master
/// naming tile files that no longer exist.
#[test]
fn a_cleanup_after_another_process_committed_over_it_keeps_that_commit_s_files() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("f.h5");
    write_slabs(&path, 0.0, 2).unwrap();
    let a_files = tile_names(&path);
    let a = layout::generation_of(&a_files[0]).unwrap();
    // A's commit, as it happened: its identity is what its cleanup compares.
    let tmp = layout::temporary_master(&path, a);
    std::fs::copy(&path, &tmp).unwrap();
    let mine = layout::commit(&tmp, &path, Some(&layout::tile_dir(&path)), false).unwrap();
    let a_lock = layout::in_flight::WriteLock::take(&path, a).unwrap();
    write_slabs(&path, 1000.0, 3).unwrap();
    let b_files = tile_names(&path);
    assert_eq!(b_files.len(), 3 + 2, "A's files kept while A is in flight");
    drop(a_lock);
    layout::remove_stale(&path, a, mine, false).unwrap();
    assert_eq!(read_all(&path).unwrap(), expected(1000.0));
    let left = tile_names(&path);
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(left.iter().all(|n| !a_files.contains(n)), "{left:?}");
}

/// A's cleanup ran while its master was still in place; B then committed over it, its own
/// cleanup sparing A's files (A's lock held). A, once its lock is released, looks again and
/// removes its own files: nothing is left beside B's commit.
#[test]
fn a_write_replaced_while_its_lock_was_held_removes_its_own_files_after_it() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("f.h5");
    write_slabs(&path, 0.0, 2).unwrap();
    let a = layout::generation_of(&tile_names(&path)[0]).unwrap();
    let tmp = layout::temporary_master(&path, a);
    std::fs::copy(&path, &tmp).unwrap();
    let mine = layout::commit(&tmp, &path, Some(&layout::tile_dir(&path)), false).unwrap();
    layout::remove_own_if_replaced(&path, a, mine);
    assert_eq!(
        tile_names(&path).len(),
        3,
        "still A's master: nothing removed"
    );
    let a_lock = layout::in_flight::WriteLock::take(&path, a).unwrap();
    write_slabs(&path, 1000.0, 3).unwrap();
    assert_eq!(tile_names(&path).len(), 3 + 2);
    drop(a_lock);
    layout::remove_own_if_replaced(&path, a, mine);
    assert_eq!(tile_names(&path).len(), 2, "{:?}", tile_names(&path));
    assert_eq!(read_all(&path).unwrap(), expected(1000.0));
}

#[test]
fn a_write_failing_before_commit_keeps_the_old_dataset_and_removes_its_own_files() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("f.h5");
    write_slabs(&path, 0.0, 2).unwrap();
    let before_tiles = tile_names(&path);
    let before_master = std::fs::read(&path).unwrap();
    FAIL_BEFORE_COMMIT.with(|f| f.set(true));
    let e = write_slabs(&path, 500.0, 3).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_IO);
    assert_eq!(std::fs::read(&path).unwrap(), before_master);
    assert_eq!(tile_names(&path), before_tiles);
    assert_eq!(read_all(&path).unwrap(), expected(0.0));
    let leftovers: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        2,
        "only the master and its tile folder: {leftovers:?}"
    );
}

#[test]
fn what_a_crash_leaves_does_not_disturb_readers_and_the_next_write_removes_it() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("f.h5");
    write_slabs(&path, 0.0, 3).unwrap();
    // A crash mid-write leaves tiles of a new generation and maybe a temporary master.
    let data = [9.0f64; 24];
    let orphan = layout::tile_dir(&path).join(layout::tile_file_name("/grid/values", 7, 0, 0));
    vds::write_tile(
        &orphan,
        Dtype::Float64,
        &Tile::new(vec![0, 0], vec![6, 4]),
        &[6, 4],
        host_bytes(&data),
        crate::platform::tile_bytes::Durability::SyncNow,
    )
    .unwrap();
    let tmp = layout::temporary_master(&path, 7);
    std::fs::write(&tmp, b"half-written master").unwrap();
    assert_eq!(read_all(&path).unwrap(), expected(0.0));
    write_and_read_back(&path, 2.0, 6, Layout::Vds);
    assert!(!orphan.exists() && !tmp.exists());
    assert_eq!(tile_names(&path).len(), 1);
}

#[test]
fn bad_arguments_are_rejected_before_anything_is_written() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("f.h5");
    let global = [4u64];
    let data = [0i32; 4];
    let try_write = |tiles: Vec<LocalTile>, options: WriteOptions, dataset: &str| {
        let written = write_tiles(&path, dataset, Dtype::Int32, &global, tiles, options);
        written.unwrap_err().status
    };
    let t = |o: u64, n: u64| LocalTile {
        tile: Tile::new(vec![o], vec![n]),
        buf: host_bytes(&data),
    };
    let opts = WriteOptions::default();
    assert_eq!(
        try_write(vec![t(2, 3)], opts, "/x"),
        H5TILE_ERR_INVALID_ARGUMENT
    );
    assert_eq!(
        try_write(vec![t(0, 3), t(2, 2)], opts, "/x"),
        H5TILE_ERR_SHAPE
    );
    assert_eq!(try_write(vec![t(0, 3)], opts, "/x"), H5TILE_ERR_SHAPE);
    assert_eq!(
        try_write(vec![t(0, 4)], opts, "/a//b"),
        H5TILE_ERR_INVALID_ARGUMENT
    );
    // A host buffer too short for its tile (at the C boundary: a NULL one).
    let short = LocalTile {
        tile: Tile::new(vec![0], vec![4]),
        buf: host_bytes(&data[..2]),
    };
    assert_eq!(
        try_write(vec![short], opts, "/x"),
        H5TILE_ERR_INVALID_ARGUMENT
    );
    assert!(
        std::fs::read_dir(d.path()).unwrap().next().is_none(),
        "nothing may be created"
    );
    let partial = WriteOptions {
        allow_partial: true,
        ..opts
    };
    write_tiles(&path, "/x", Dtype::Int32, &global, vec![t(1, 2)], partial).unwrap();
}

#[test]
fn the_single_layout_round_trips_and_replaces_a_vds_without_leaving_tiles() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("f.h5");
    write_slabs(&path, 0.0, 2).unwrap();
    assert_eq!(tile_names(&path).len(), 3);
    write_and_read_back(&path, 7.0, 1, Layout::Single);
    assert!(
        !layout::tile_dir(&path).exists(),
        "old tiles and their folder are gone"
    );
    let entries: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(entries, vec![std::ffi::OsString::from("f.h5")]);
    write_and_read_back(&path, 8.0, 4, Layout::Single);
}

#[test]
fn the_subfiled_layout_writes_one_file_per_group_and_round_trips() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("f.h5");
    // The datasets of the one subfile of `path`, and the master's mappings of the dataset.
    let stored = |path: &Path| {
        let files = tile_names(path);
        assert_eq!(files.len(), 1, "{files:?}");
        assert!(files[0].starts_with("grid+values.") && files[0].ends_with(".s0.h5"));
        let sub = layout::tile_dir(path).join(&files[0]);
        let _l = crate::platform::hdf5::lock();
        let f = crate::platform::hdf5::File::open_read(&sub).unwrap();
        let names: Vec<String> = (0..6)
            .map(|k| subfiles::tile_dataset(0, k))
            .chain([subfiles::box_dataset(0)])
            .filter(|n| f.object_kind(n).unwrap().is_some())
            .collect();
        let master = crate::platform::hdf5::File::open_read(path).unwrap();
        let dset = crate::platform::hdf5::Dataset::open(&master, "/grid/values").unwrap();
        let mappings = dset.create_plist().unwrap().virtual_mappings().unwrap();
        (names, mappings.len())
    };
    // This process alone is one group: six tiles, one subfile. They fill the dataset, so they
    // are one dataset there, mapped once; with coalescing off, a dataset and a mapping each.
    write_and_read_back(&path, 0.0, 1, Layout::Subfiles);
    let files = tile_names(&path);
    assert_eq!(stored(&path), (vec![subfiles::box_dataset(0)], 1));
    let apart = WriteOptions {
        layout: Layout::Subfiles,
        coalesce: false,
        ..WriteOptions::default()
    };
    write_slabs_with(&path, 1.0, 1, apart).unwrap();
    assert_eq!(read_all(&path).unwrap(), expected(1.0));
    let each: Vec<String> = (0..6).map(|k| subfiles::tile_dataset(0, k)).collect();
    assert_eq!(stored(&path), (each, 6));
    // Rewritten, in another layout and back: only the current generation's files stay.
    write_and_read_back(&path, 5.0, 4, Layout::Subfiles);
    assert_eq!(tile_names(&path).len(), 1);
    assert_ne!(tile_names(&path), files);
    write_slabs_as(&path, 6.0, 2, Layout::Vds).unwrap();
    assert_eq!(tile_names(&path).len(), 3);
    write_and_read_back(&path, 7.0, 3, Layout::Subfiles);
    assert_eq!(tile_names(&path).len(), 1);
    write_slabs_as(&path, 8.0, 3, Layout::Single).unwrap();
    assert!(!layout::tile_dir(&path).exists());
    assert_eq!(read_all(&path).unwrap(), expected(8.0));
}

#[test]
fn a_subfile_of_another_write_in_place_of_the_named_one_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("f.h5");
    write_slabs_as(&path, 0.0, 2, Layout::Subfiles).unwrap();
    let dir = layout::tile_dir(&path);
    let old = dir.join(&tile_names(&path)[0]);
    let kept = d.path().join("old-subfile.h5");
    std::fs::copy(&old, &kept).unwrap();
    write_slabs_as(&path, 1.0, 2, Layout::Subfiles).unwrap();
    let current = dir.join(&tile_names(&path)[0]);
    // Same tiles, same sizes: only the stamp tells the old subfile from the new one.
    assert_eq!(
        std::fs::metadata(&kept).unwrap().len(),
        std::fs::metadata(&current).unwrap().len()
    );
    std::fs::rename(&kept, &current).unwrap();
    let e = read_all(&path).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_MISSING_TILE, "{}", e.message);
    assert!(e.message.contains("another write"), "{}", e.message);
    assert!(e.message.starts_with("subfile '"), "{}", e.message);
    let name = current.file_name().unwrap().to_string_lossy().to_string();
    assert!(e.message.contains(&name), "{}", e.message);
    // Through HDF5 too (a read converting the type).
    let mut out = vec![0f32; 24];
    let all = Tile::new(vec![0, 0], vec![6, 4]);
    let narrowing = ReadOptions {
        narrowing: true,
        ..ReadOptions::default()
    };
    let e = read_into(
        &path,
        "/grid/values",
        Dtype::Float32,
        &all,
        &mut out,
        narrowing,
    )
    .unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_MISSING_TILE, "{}", e.message);
}

#[test]
fn without_sync_every_layout_round_trips() {
    let d = tempfile::tempdir().unwrap();
    for layout in [Layout::Vds, Layout::Single, Layout::Subfiles] {
        let path = d.path().join(format!("{layout:?}.h5"));
        let data: Vec<f64> = expected(3.0);
        let options = WriteOptions {
            layout,
            no_sync: true,
            ..WriteOptions::default()
        };
        let buf = host_bytes(&data);
        write_whole(&path, "/grid/values", Dtype::Float64, &[6, 4], buf, options).unwrap();
        assert_eq!(read_all(&path).unwrap(), expected(3.0), "{layout:?}");
    }
}

#[test]
fn gaps_of_a_partial_single_file_read_as_zero() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("s.h5");
    let global = [3u64, 5];
    let data = [1i32, 2, 3, 4];
    let tiles = vec![LocalTile {
        tile: Tile::new(vec![1, 2], vec![2, 2]),
        buf: host_bytes(&data),
    }];
    let options = WriteOptions {
        layout: Layout::Single,
        allow_partial: true,
        ..WriteOptions::default()
    };
    write_tiles(&path, "/g/x", Dtype::Int32, &global, tiles, options).unwrap();
    let mut out = [9i32; 15];
    let whole = Tile::new(vec![0, 0], vec![3, 5]);
    let options = ReadOptions::default();
    read_into(&path, "/g/x", Dtype::Int32, &whole, &mut out, options).unwrap();
    assert_eq!(out, [0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 3, 4, 0]);
}

/// Writes `rows` x 64 float64 (element k is base + k) as `dataset` of `path`, in two
/// row slabs, keeping the file's other contents or not.
fn write_field(
    path: &Path,
    dataset: &str,
    base: f64,
    rows: u64,
    layout: Layout,
    keep: bool,
) -> Result<()> {
    let global = [rows, 64];
    let data: Vec<f64> = (0..rows * 64).map(|k| base + k as f64).collect();
    let half = rows / 2;
    let tiles = [(0, half), (half, rows - half)]
        .into_iter()
        .map(|(r0, n)| LocalTile {
            tile: Tile::new(vec![r0, 0], vec![n, 64]),
            buf: host_bytes(&data[(r0 * 64) as usize..]),
        })
        .collect();
    let options = WriteOptions {
        layout,
        keep_others: keep,
        ..WriteOptions::default()
    };
    write_tiles(path, dataset, Dtype::Float64, &global, tiles, options)
}

/// The arguments of a write of float64 `tiles` of a `global` array.
pub(crate) fn f64_args<'a>(
    path: &'a Path,
    dataset: &'a str,
    global: &'a [u64],
    tiles: Vec<LocalTile<'a>>,
    options: WriteOptions,
) -> WriteArgs<'a> {
    WriteArgs {
        path,
        dataset,
        dtype: Dtype::Float64,
        global,
        tiles,
        options,
    }
}

/// The first element of `dataset` and whether all `rows` x 64 follow from it.
fn field_base(path: &Path, dataset: &str, rows: u64) -> Result<f64> {
    let out = read_f64(path, dataset, &Tile::new(vec![0, 0], vec![rows, 64]))?;
    assert!(
        out.iter().enumerate().all(|(k, &v)| v == out[0] + k as f64),
        "{dataset}"
    );
    Ok(out[0])
}

#[test]
fn keep_others_replaces_or_adds_one_dataset_and_removes_only_its_old_tiles() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("ckpt.h5");
    write_field(&path, "/u", 0.0, 8, Layout::Vds, true).unwrap(); // no file yet: a plain write
    write_field(&path, "/g/v", 1000.0, 8, Layout::Vds, true).unwrap();
    write_field(&path, "/w", 2000.0, 8, Layout::Single, true).unwrap();
    let v_tiles: Vec<String> = tile_names(&path)
        .into_iter()
        .filter(|n| n.starts_with("g+v."))
        .collect();
    assert_eq!(v_tiles.len(), 2);
    write_field(&path, "/u", 3000.0, 8, Layout::Vds, true).unwrap();
    assert_eq!(field_base(&path, "/u", 8).unwrap(), 3000.0);
    assert_eq!(field_base(&path, "/g/v", 8).unwrap(), 1000.0);
    assert_eq!(field_base(&path, "/w", 8).unwrap(), 2000.0);
    let tiles = tile_names(&path);
    assert_eq!(
        tiles.len(),
        4,
        "two of /u's new generation, /g/v's two: {tiles:?}"
    );
    assert!(v_tiles.iter().all(|n| tiles.contains(n)), "{tiles:?}");
    // Without the flag the file holds the written dataset alone again.
    write_field(&path, "/x", 4000.0, 8, Layout::Vds, false).unwrap();
    assert_eq!(field_base(&path, "/x", 8).unwrap(), 4000.0);
    assert_eq!(
        field_base(&path, "/u", 8).unwrap_err().status,
        H5TILE_ERR_NOT_FOUND
    );
    assert!(tile_names(&path).iter().all(|n| n.starts_with("x.")));
}

#[test]
fn keep_others_in_a_single_file_reuses_the_replaced_dataset_s_space() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("one.h5");
    write_field(&path, "/a", 0.0, 2048, Layout::Single, true).unwrap(); // 1 MiB
    write_field(&path, "/b", 1.0, 2048, Layout::Single, true).unwrap();
    let two = std::fs::metadata(&path).unwrap().len();
    for base in [2.0, 3.0, 4.0] {
        write_field(&path, "/a", base, 2048, Layout::Single, true).unwrap();
    }
    assert_eq!(field_base(&path, "/a", 2048).unwrap(), 4.0);
    assert_eq!(field_base(&path, "/b", 2048).unwrap(), 1.0);
    let after = std::fs::metadata(&path).unwrap().len();
    assert!(
        after < two + (256 << 10),
        "rewriting /a grew the file from {two} to {after} bytes"
    );
}

#[test]
fn keep_others_refuses_what_it_cannot_keep_and_touches_nothing() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("ckpt.h5");
    write_field(&path, "/g/v", 0.0, 8, Layout::Vds, true).unwrap();
    let (master, tiles) = (std::fs::read(&path).unwrap(), tile_names(&path));
    let refused =
        |dataset: &str| write_field(&path, dataset, 9.0, 8, Layout::Vds, true).unwrap_err();
    let e = refused("/g");
    assert_eq!(e.status, H5TILE_ERR_NOT_A_DATASET, "{}", e.message);
    assert!(
        e.message.contains("replaces datasets only"),
        "{}",
        e.message
    );
    let e = refused("/g/v/x");
    assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT, "{}", e.message);
    assert!(
        e.message.contains("'/g/v'") && e.message.contains("not a group"),
        "{}",
        e.message
    );
    assert_eq!(std::fs::read(&path).unwrap(), master);
    assert_eq!(tile_names(&path), tiles);
    // Not an HDF5 file: its contents cannot be kept, and it stays as it was.
    let text = d.path().join("notes.h5");
    std::fs::write(&text, b"not HDF5").unwrap();
    let e = write_field(&text, "/u", 0.0, 8, Layout::Vds, true).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_HDF5, "{}", e.message);
    assert!(e.message.contains("H5TILE_KEEP_OTHERS"), "{}", e.message);
    assert_eq!(std::fs::read(&text).unwrap(), b"not HDF5");
    assert!(tile_names(&text).is_empty());
}

/// The fields of a small solver checkpoint, `base` added to every value: "/u" (float64 6x4 in
/// two row slabs), "/g/p" (int32 10 in two halves, one of them empty on purpose) and "/t"
/// (float32 3).
struct Fields {
    u: Vec<f64>,
    p: Vec<i32>,
    t: Vec<f32>,
}

impl Fields {
    fn new(base: i32) -> Fields {
        Fields {
            u: (0..24).map(|k| (base + k) as f64).collect(),
            p: (0..10).map(|k| base * 2 + k).collect(),
            t: (0..3).map(|k| (base + k) as f32 / 2.0).collect(),
        }
    }

    fn checkpoint<'a>(&'a self, path: &Path, options: WriteOptions) -> Checkpoint<'a> {
        let tile = |offset: Vec<u64>, shape: Vec<u64>, buf| LocalTile {
            tile: Tile::new(offset, shape),
            buf,
        };
        let fields = vec![
            // Not in name order: ranks may add fields in any order.
            Field {
                dataset: "/u".into(),
                dtype: Dtype::Float64,
                global: vec![6, 4],
                tiles: vec![
                    tile(vec![3, 0], vec![3, 4], host_bytes(&self.u[12..])),
                    tile(vec![0, 0], vec![3, 4], host_bytes(&self.u[..12])),
                ],
            },
            Field {
                dataset: "/g/p".into(),
                dtype: Dtype::Int32,
                global: vec![10],
                tiles: vec![
                    tile(vec![0], vec![10], host_bytes(&self.p)),
                    tile(vec![10], vec![0], host_bytes::<i32>(&[])),
                ],
            },
            Field {
                dataset: "/t".into(),
                dtype: Dtype::Float32,
                global: vec![3],
                tiles: vec![tile(vec![0], vec![3], host_bytes(&self.t))],
            },
        ];
        let attributes = vec![
            attribute("/", "step", Dtype::Int64, &[100i64]),
            attribute("/", "time", Dtype::Float64, &[0.25f64, 0.5]),
            Attribute {
                object: "/g".into(),
                name: "about".into(),
                value: AttributeValue::Text("pressure, Pa".into()),
            },
            Attribute {
                object: "/u".into(),
                name: "units".into(),
                value: AttributeValue::Text("m/s".into()),
            },
        ];
        Checkpoint {
            path: path.to_path_buf(),
            fields,
            attributes,
            options,
        }
    }

    /// Reads every field of `path` back and compares.
    fn assert_in(&self, path: &Path) {
        assert_eq!(
            read_f64(path, "/u", &Tile::new(vec![0, 0], vec![6, 4])).unwrap(),
            self.u
        );
        let mut p = vec![0i32; 10];
        let all = Tile::new(vec![0], vec![10]);
        read_into(
            path,
            "/g/p",
            Dtype::Int32,
            &all,
            &mut p,
            ReadOptions::default(),
        )
        .unwrap();
        assert_eq!(p, self.p);
        let mut t = vec![0f32; 3];
        let all = Tile::new(vec![0], vec![3]);
        read_into(
            path,
            "/t",
            Dtype::Float32,
            &all,
            &mut t,
            ReadOptions::default(),
        )
        .unwrap();
        assert_eq!(t, self.t);
    }
}

fn attribute<T: Copy>(object: &str, name: &str, dtype: Dtype, values: &[T]) -> Attribute {
    let Buffer::Host(bytes) = host_bytes(values) else {
        unreachable!()
    };
    Attribute {
        object: object.into(),
        name: name.into(),
        value: AttributeValue::Numbers {
            dtype,
            bytes: bytes.to_vec(),
        },
    }
}

fn solo_commit(ck: &Checkpoint) -> Result<()> {
    commit(&Comm::solo(), ck)
}

#[test]
fn a_checkpoint_commits_many_fields_and_attributes_in_every_layout() {
    let d = tempfile::tempdir().unwrap();
    for layout in [Layout::Vds, Layout::Subfiles, Layout::Single] {
        let path = d.path().join(format!("{layout:?}.h5"));
        let fields = Fields::new(7);
        let options = WriteOptions {
            layout,
            ..WriteOptions::default()
        };
        solo_commit(&fields.checkpoint(&path, options)).unwrap();
        fields.assert_in(&path);
        let file = crate::platform::hdf5::File::open_read(&path).unwrap();
        let step = file.attribute_values("/", "step", Dtype::Int64, 1).unwrap();
        assert_eq!(step, 100i64.to_ne_bytes());
        // Read as another type, HDF5 converting.
        let time = file
            .attribute_values("/", "time", Dtype::Float32, 2)
            .unwrap();
        let time: Vec<f32> = time
            .chunks(4)
            .map(|b| f32::from_ne_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(time, [0.25, 0.5]);
        let text = |object, name| crate::platform::hdf5::read_text(&file, object, name).unwrap();
        assert_eq!(text("/g", "about"), "pressure, Pa");
        assert_eq!(text("/u", "units"), "m/s");
        // Attributes asked for in another shape or type, or not there: (object, name, type,
        // count) and the status.
        let refused = [
            ("/", "step", Dtype::Int64, 2, H5TILE_ERR_SHAPE),
            ("/u", "units", Dtype::Int8, 3, H5TILE_ERR_DTYPE),
            ("/", "nothing", Dtype::Int8, 1, H5TILE_ERR_NOT_FOUND),
            ("/nowhere", "step", Dtype::Int8, 1, H5TILE_ERR_NOT_FOUND),
        ];
        for (object, name, dtype, n, status) in refused {
            let e = file.attribute_values(object, name, dtype, n).unwrap_err();
            assert_eq!(e.status, status, "{object} {name}");
        }
        drop(file);
        let files = tile_names(&path);
        match layout {
            // One file per non-empty tile of every field.
            Layout::Vds => assert_eq!(files.len(), 4, "{files:?}"),
            // One subfile for the group, whatever the number of fields.
            Layout::Subfiles => assert_eq!(files.len(), 1, "{files:?}"),
            Layout::Single => assert!(files.is_empty(), "{files:?}"),
        }
        // Committed again: the new version replaces every field, and the old files go.
        let again = Fields::new(50);
        solo_commit(&again.checkpoint(&path, options)).unwrap();
        again.assert_in(&path);
        assert_eq!(tile_names(&path).len(), files.len(), "{layout:?}");
        assert!(files.iter().all(|f| !tile_names(&path).contains(f)));
    }
}

#[test]
fn a_checkpoint_failing_before_its_commit_leaves_every_old_field() {
    let d = tempfile::tempdir().unwrap();
    for layout in [Layout::Vds, Layout::Subfiles, Layout::Single] {
        let path = d.path().join(format!("{layout:?}.h5"));
        let options = WriteOptions {
            layout,
            ..WriteOptions::default()
        };
        let old = Fields::new(1);
        solo_commit(&old.checkpoint(&path, options)).unwrap();
        let (master, files) = (std::fs::read(&path).unwrap(), tile_names(&path));
        FAIL_BEFORE_COMMIT.with(|f| f.set(true));
        let new = Fields::new(2);
        let e = solo_commit(&new.checkpoint(&path, options)).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_IO);
        assert_eq!(std::fs::read(&path).unwrap(), master, "{layout:?}");
        assert_eq!(tile_names(&path), files, "{layout:?}");
        old.assert_in(&path);
    }
    let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
    assert_eq!(names.len(), 5, "three masters, two tile folders: {names:?}");
}

#[test]
fn keeping_others_never_removes_a_subfile_another_dataset_still_maps() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("ckpt.h5");
    let options = WriteOptions {
        layout: Layout::Subfiles,
        keep_others: true,
        ..WriteOptions::default()
    };
    let first = Fields::new(1);
    solo_commit(&first.checkpoint(&path, options)).unwrap();
    let shared = tile_names(&path);
    assert_eq!(shared.len(), 1);
    // "/u" alone, rewritten: the shared subfile still holds "/g/p" and "/t".
    let u: Vec<f64> = (0..24).map(|k| -k as f64).collect();
    let tiles = vec![LocalTile {
        tile: Tile::new(vec![0, 0], vec![6, 4]),
        buf: host_bytes(&u),
    }];
    write_tiles(&path, "/u", Dtype::Float64, &[6, 4], tiles, options).unwrap();
    let expected = Fields {
        u,
        ..Fields::new(1)
    };
    expected.assert_in(&path);
    assert!(shared.iter().all(|f| tile_names(&path).contains(f)));
    assert_eq!(tile_names(&path).len(), 2);
    // The whole checkpoint again: nothing maps the first subfile any more.
    let last = Fields::new(3);
    solo_commit(&last.checkpoint(&path, options)).unwrap();
    last.assert_in(&path);
    assert_eq!(tile_names(&path).len(), 1);
    assert!(shared.iter().all(|f| !tile_names(&path).contains(f)));
    // Attributes kept from before are replaced, not duplicated.
    let file = crate::platform::hdf5::File::open_read(&path).unwrap();
    assert_eq!(
        crate::platform::hdf5::read_text(&file, "/u", "units").unwrap(),
        "m/s"
    );
}

#[test]
fn a_checkpoint_with_bad_fields_or_attributes_is_refused_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("ckpt.h5");
    let fields = Fields::new(0);
    let good = fields.checkpoint(&path, WriteOptions::default());
    let refused = |change: &dyn Fn(&mut Checkpoint), want: &str| {
        let mut ck = good.clone();
        change(&mut ck);
        let e = solo_commit(&ck).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT, "{}", e.message);
        assert!(e.message.contains(want), "{} lacks {want}", e.message);
    };
    refused(
        &|ck| ck.fields[1].dataset = "/u".into(),
        "dataset '/u' is given twice",
    );
    refused(
        &|ck| ck.fields[1].dataset = "/u/p".into(),
        "dataset '/u' cannot hold dataset '/u/p'",
    );
    refused(
        &|ck| ck.attributes[0].object = "/u/x".into(),
        "inside dataset '/u'",
    );
    refused(
        &|ck| ck.attributes.push(ck.attributes[0].clone()),
        "attribute 'step' of '/' is given twice",
    );
    // The master's index and records are h5tile's: a user's attribute of the same name would
    // replace them.
    refused(
        &|ck| {
            ck.attributes
                .push(attribute::<u8>("/u", "h5tile_sources", Dtype::UInt8, &[0]))
        },
        "attribute 'h5tile_sources' of '/u': names starting 'h5tile_'",
    );
    refused(
        &|ck| {
            ck.attributes
                .push(attribute::<i8>("/", "none", Dtype::Int8, &[]))
        },
        "holds no int8 values",
    );
    refused(
        &|ck| ck.fields[0].tiles[0].tile = Tile::new(vec![4, 0], vec![3, 4]),
        "dataset '/u': tile 0",
    );
    assert!(std::fs::read_dir(d.path()).unwrap().next().is_none());
    solo_commit(&good).unwrap();
    fields.assert_in(&path);
}
