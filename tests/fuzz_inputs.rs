//! Bad input never crashes: a property-based pass (proptest) over dataset names and paths,
//! the master's `h5tile_tile_bytes` records, masters and tile files that are truncated,
//! overwritten, swapped or replaced, and the driver's configuration string. Every call ends
//! in `Ok` or in an error whose status is not `H5TILE_ERR_PANIC` (and is the expected one
//! where it is known); what is read successfully is what was written, except where no reader
//! can know better without checksums (each such case is named below).
//!
//! Cases that make HDF5 parse damaged files run in a child process (this test binary run again
//! for its ignored test `child_process_entry`, by `common::run_child_entry`), so a hang is
//! caught by a timeout and a crash by the exit signal, and neither takes the other tests down
//! with it.
//!
//! 64 cases per property by default; `PROPTEST_CASES=N` runs N of each (e.g.
//! `PROPTEST_CASES=5000 cargo test --release --test fuzz_inputs` for a long run). A failing
//! case is printed, shrunk, with the seed; `PROPTEST_RNG_SEED` replays one.

mod common;
use common::{cases, run_child_entry, tile_files, value, write_grid};
use h5tile::ffi::{
    h5tile_last_error, h5tile_read, h5tile_write, h5tile_write_options, H5TILE_FLOAT64,
    H5TILE_GDS_FROM_ENVIRONMENT, H5TILE_LAYOUT_SINGLE, H5TILE_LAYOUT_SUBFILES, H5TILE_LAYOUT_VDS,
};
use h5tile::internals::hdf5::{self, cstr, Attributes, Dataset, File, Handle};
use h5tile::internals::status::{h5tile_status, Error};
use h5tile::internals::status::{
    H5TILE_ERR_CORRUPT, H5TILE_ERR_CUDA, H5TILE_ERR_DTYPE, H5TILE_ERR_HDF5,
    H5TILE_ERR_INVALID_ARGUMENT, H5TILE_ERR_IO, H5TILE_ERR_IS_DIRECTORY, H5TILE_ERR_MISSING_TILE,
    H5TILE_ERR_NOT_A_DATASET, H5TILE_ERR_NOT_FOUND, H5TILE_ERR_PANIC, H5TILE_ERR_SHAPE, H5TILE_OK,
};
use h5tile::internals::testkit::{
    self, flip_bits, read_f64, read_into, whole_grid, write_whole, GRID, GRID_TILES,
};
use h5tile::internals::{host_bytes, Batches, Comm, Dtype, ReadOptions, Tile, WriteOptions};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::collections::BTreeSet;
use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A failure, checked to be a clean one: never `H5TILE_ERR_PANIC`, always a message.
fn clean(e: &Error) -> Result<(), TestCaseError> {
    prop_assert!(e.status != H5TILE_ERR_PANIC, "panic: {}", e.message);
    prop_assert!(!e.message.is_empty(), "{:?} without a message", e.status);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The dataset every file property starts from: 6x5 float64 in four tiles (2x2), element (i, j)
// = 10 i + j + 0.5 + `shift`.

/// Which tile holds element (i, j), and its index inside the tile.
fn tile_of(i: u64, j: u64) -> (usize, usize) {
    GRID_TILES
        .iter()
        .enumerate()
        .find_map(|(k, &(r, c, h, w))| {
            (i >= r && i < r + h && j >= c && j < c + w)
                .then(|| (k, ((i - r) * w + (j - c)) as usize))
        })
        .expect("the tiles cover the grid")
}

/// The elements of `want` (row-major), as (row, column).
fn elements(want: &Tile) -> impl Iterator<Item = (u64, u64)> + '_ {
    let (r, c) = (want.offset[0], want.offset[1]);
    (0..want.shape[0]).flat_map(move |i| (0..want.shape[1]).map(move |j| (r + i, c + j)))
}

/// Any box inside the 6x5 grid.
fn grid_box() -> impl Strategy<Value = Tile> {
    (0u64..6, 0u64..5)
        .prop_flat_map(|(r, c)| (Just(r), Just(c), 1..=6 - r, 1..=5 - c))
        .prop_map(|(r, c, h, w)| Tile::new(vec![r, c], vec![h, w]))
}

// ---------------------------------------------------------------------------------------------
// Dataset names and paths, through the C ABI (what a C program can pass: NUL-terminated bytes).

/// `h5tile_write` of a 6x5 float64 grid (one tile) as `dataset` of `path`, in `layout`.
fn c_write(path: &[u8], dataset: &[u8], layout: i32, values: &[f64]) -> Result<(), Error> {
    let path = CString::new(path).unwrap();
    let dataset = CString::new(dataset).unwrap();
    let opts = h5tile_write_options {
        size: std::mem::size_of::<h5tile_write_options>(),
        layout,
        flags: 0,
        gds: H5TILE_GDS_FROM_ENVIRONMENT,
        ranks_per_file: 0,
        compression: 0,
        compression_level: 0,
        staging_bytes: 0,
    };
    let zero = [0u64; 2];
    let status = unsafe {
        h5tile_write(
            mpi::ffi::RSMPI_COMM_NULL,
            path.as_ptr(),
            dataset.as_ptr(),
            H5TILE_FLOAT64,
            2,
            GRID.as_ptr(),
            zero.as_ptr(),
            GRID.as_ptr(),
            values.as_ptr().cast(),
            &opts,
        )
    };
    c_outcome(status)
}

/// `h5tile_read` of the whole 6x5 grid.
fn c_read(path: &[u8], dataset: &[u8]) -> Result<Vec<f64>, Error> {
    let path = CString::new(path).unwrap();
    let dataset = CString::new(dataset).unwrap();
    let mut out = vec![f64::NAN; 30];
    let zero = [0u64; 2];
    let status = unsafe {
        h5tile_read(
            mpi::ffi::RSMPI_COMM_NULL,
            path.as_ptr(),
            dataset.as_ptr(),
            H5TILE_FLOAT64,
            2,
            zero.as_ptr(),
            GRID.as_ptr(),
            out.as_mut_ptr().cast(),
            std::ptr::null(),
        )
    };
    c_outcome(status).map(|()| out)
}

fn c_outcome(status: h5tile_status) -> Result<(), Error> {
    if status == H5TILE_OK {
        return Ok(());
    }
    let message = unsafe { CStr::from_ptr(h5tile_last_error()) }
        .to_string_lossy()
        .into_owned();
    Err(Error::new(status, message))
}

/// One component of a file or dataset name: plain, with the characters h5tile escapes ('%',
/// '~') or joins with ('+', '.'), unicode, NUL-free non-UTF-8 bytes, long (> 255 bytes), or
/// one of the components paths treat specially.
fn component() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        4 => "[a-zA-Z0-9_%~+. #:=-]{1,12}".prop_map(String::into_bytes),
        1 => "\\PC{1,8}".prop_map(String::into_bytes),
        1 => prop::collection::vec(1u8..=255, 1..12)
            .prop_map(|b| b.into_iter().filter(|&c| c != b'/').collect::<Vec<u8>>())
            .prop_filter("empty", |b| !b.is_empty()),
        1 => (200usize..300, prop::sample::select(vec![b'a', b'%', b'~', 0xe9]))
            .prop_map(|(n, c)| vec![c; n]),
        1 => prop::sample::select(vec![&b""[..], b".", b"..", b"%%", b"~25", b"x.tiles"])
            .prop_map(<[u8]>::to_vec),
    ]
    .boxed()
}

/// A file name: a component without '/' (possibly empty).
fn file_name() -> BoxedStrategy<Vec<u8>> {
    component()
        .prop_map(|c| c.into_iter().filter(|&b| b != b'/').collect())
        .boxed()
}

/// A dataset name: components joined by '/', with or without a leading or trailing '/'.
fn dataset_name() -> BoxedStrategy<Vec<u8>> {
    (
        prop::bool::weighted(0.8),
        prop::collection::vec(component(), 1..4),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(lead, parts, trail)| {
            let mut name = if lead { b"/".to_vec() } else { Vec::new() };
            name.extend(parts.join(&b'/'));
            if trail {
                name.push(b'/');
            }
            name
        })
        .boxed()
}

/// Length of the dataset's key in tile file names (`layout::dataset_key`: bytes outside
/// `[A-Za-z0-9_-]` written `~XX`, parts joined by '+').
fn dataset_key_len(dataset: &str) -> usize {
    let parts: Vec<&str> = dataset.trim_start_matches('/').split('/').collect();
    let escaped: usize = parts
        .iter()
        .flat_map(|p| p.bytes())
        .map(
            |b| match b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
                true => 1,
                false => 3,
            },
        )
        .sum();
    escaped + parts.len() - 1
}

/// What a write of `dataset` to file `name` (in an existing folder) must return: its status
/// on failure, None on success. Names are checked in the order h5tile checks them.
fn expected_write(name: &[u8], dataset: &[u8], layout: i32) -> Option<h5tile_status> {
    let (Ok(name), Ok(dataset)) = (std::str::from_utf8(name), std::str::from_utf8(dataset)) else {
        return Some(H5TILE_ERR_INVALID_ARGUMENT);
    };
    let parts: Vec<&str> = dataset
        .strip_prefix('/')
        .unwrap_or(dataset)
        .split('/')
        .collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return Some(H5TILE_ERR_INVALID_ARGUMENT);
    }
    if ["", ".", ".."].contains(&name) {
        return Some(H5TILE_ERR_IS_DIRECTORY);
    }
    // File names longer than NAME_MAX (255) fail as the OS says: the master, its temporary
    // name (".<name>.<16 hex>.tmp"), its tile folder ('%' and '~' take 3 bytes) and tile files
    // ("<key>.<16 hex>.r0.t0.h5") or subfiles ("<key>.<16 hex>.s0.h5").
    let escaped = name.bytes().map(|b| if b"%~".contains(&b) { 3 } else { 1 });
    let tile_name = match layout {
        H5TILE_LAYOUT_VDS => Some(26),
        H5TILE_LAYOUT_SUBFILES => Some(23),
        _ => None,
    };
    let too_long = name.len() > 255
        || name.len() + 22 > 255
        || (tile_name.is_some() && escaped.sum::<usize>() + 6 > 255)
        || tile_name.is_some_and(|n| dataset_key_len(dataset) + n > 255);
    too_long.then_some(H5TILE_ERR_IO)
}

/// Every path under `dir`, relative to it.
fn listing(dir: &Path) -> BTreeSet<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            out.insert(path.strip_prefix(root).unwrap().to_path_buf());
            if path.is_dir() {
                walk(root, &path, out);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

proptest! {
    #![proptest_config(cases(64))]

    /// Any file name and dataset name through `h5tile_write`/`h5tile_read`: the write
    /// succeeds exactly when the names are UTF-8, the dataset a path of proper names and every
    /// file name derived from them fits NAME_MAX, and the data then reads back; otherwise it
    /// fails with the status the first bad name calls for, and leaves the folder, including
    /// the dataset already at that path, as it was.
    #[test]
    fn names_and_paths_round_trip_or_fail_cleanly_leaving_nothing(
        name in file_name(),
        dataset in dataset_name(),
        layout in prop::sample::select(vec![
            H5TILE_LAYOUT_VDS, H5TILE_LAYOUT_SINGLE, H5TILE_LAYOUT_SUBFILES,
        ]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut path = dir.path().as_os_str().as_bytes().to_vec();
        path.push(b'/');
        path.extend(&name);
        let old: Vec<f64> = (0..30).map(|k| k as f64).collect();
        let new: Vec<f64> = (0..30).map(|k| -(k as f64)).collect();
        // A dataset already there, when the name can hold one.
        let had_old = expected_write(&name, b"/old", layout).is_none();
        if had_old {
            c_write(&path, b"/old", layout, &old).unwrap();
        }
        let before = listing(dir.path());
        let expected = expected_write(&name, &dataset, layout);
        match (c_write(&path, &dataset, layout, &new), expected) {
            (Ok(()), None) => {
                let back = c_read(&path, &dataset);
                prop_assert_eq!(back.as_ref().map_err(|e| e.status), Ok(&new));
                if dataset.as_slice() != b"/old" && dataset.as_slice() != b"old" {
                    // A write replaces the whole file: the old dataset is gone.
                    let gone = c_read(&path, b"/old").unwrap_err();
                    prop_assert_eq!(gone.status, H5TILE_ERR_NOT_FOUND, "{}", gone.message);
                }
            }
            (Err(e), Some(status)) => {
                clean(&e)?;
                prop_assert_eq!(e.status, status, "{}", e.message);
                prop_assert_eq!(listing(dir.path()), before, "a failed write left files");
                if had_old {
                    prop_assert_eq!(c_read(&path, b"/old").map_err(|e| e.status), Ok(old));
                }
            }
            (got, want) => {
                if let Err(e) = &got {
                    clean(e)?;
                }
                prop_assert!(false, "write gave {:?}, expected {:?}", got, want);
            }
        }
    }

    /// Through the crate's insides a path may hold any bytes but NUL (an `OsStr`): h5tile
    /// hands HDF5 a lossy UTF-8 form of it, so a non-UTF-8 path cannot be written in the VDS
    /// layout (its tile folder is not where HDF5 looks) and, in the single layout, is written
    /// but cannot be opened again. Either way: a clean `H5TILE_ERR_IO` or `H5TILE_ERR_HDF5`
    /// (the C ABI refuses such paths as `H5TILE_ERR_INVALID_ARGUMENT` before that), and a
    /// failed write leaves nothing.
    #[test]
    fn non_utf8_paths_through_the_internals_fail_cleanly(
        name in prop::collection::vec(1u8..=255, 1..40)
            .prop_map(|b| b.into_iter().filter(|&c| c != b'/').collect::<Vec<u8>>())
            .prop_filter("not UTF-8", |b| std::str::from_utf8(b).is_err()),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(std::ffi::OsStr::from_bytes(&name));
        let values: Vec<f64> = (0..30).map(|k| k as f64).collect();
        let written = write_whole(&path, "/d", Dtype::Float64, &GRID, host_bytes(&values),
            WriteOptions::default());
        match written {
            Ok(()) => prop_assert!(false, "a VDS at a non-UTF-8 path was written"),
            Err(e) => {
                clean(&e)?;
                prop_assert_eq!(e.status, H5TILE_ERR_IO, "{}", e.message);
                prop_assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
            }
        }
        let e = read_f64(&path, "/d", &whole_grid()).unwrap_err();
        clean(&e)?;
        prop_assert_eq!(e.status, H5TILE_ERR_NOT_FOUND, "{}", e.message);
    }
}

// ---------------------------------------------------------------------------------------------
// The master's `h5tile_tile_bytes` records: `[data_offset, file_size]` per tile, trusted when
// the file's size is the recorded one.

/// Replaces the master's `h5tile_tile_bytes` by `values` shaped `dims`.
fn set_tile_bytes(master: &Path, dims: &[u64], values: &[u64]) {
    let _l = hdf5::lock();
    let file = File::open_write(master).unwrap();
    let dset = Dataset::open(&file, "/g").unwrap();
    let name = cstr("h5tile_tile_bytes");
    assert!(unsafe { hdf5_sys::h5a::H5Adelete(dset.id(), name.as_ptr()) } >= 0);
    dset.write_u64_attribute("h5tile_tile_bytes", dims, values)
        .unwrap();
    drop(dset);
    file.close().unwrap();
}

/// The true `[data_offset, file_size]` of each tile.
fn true_tile_bytes(master: &Path) -> Vec<(u64, u64)> {
    let _l = hdf5::lock();
    let file = File::open_read(master).unwrap();
    let dset = Dataset::open(&file, "/g").unwrap();
    let (dims, values) = dset.u64_attribute("h5tile_tile_bytes").unwrap();
    assert_eq!(dims, [4, 2]);
    let records: Vec<(u64, u64)> = values.chunks(2).map(|v| (v[0], v[1])).collect();
    for (f, r) in tile_files(master).iter().zip(&records) {
        assert_eq!(std::fs::metadata(f).unwrap().len(), r.1);
    }
    records
}

/// One tile's record, as a choice relative to the true one.
#[derive(Clone, Debug)]
enum Record {
    True,
    /// `u64::MAX`: no offset recorded (HDF5 reads the tile).
    NoOffset,
    /// The true size with `offset` in or just past the file.
    OffsetNear(u64),
    /// The true size with a huge offset (at least 2^63; not within a tile's bytes of 2^64).
    OffsetHuge(u64),
    /// The true offset with another size.
    Size(u64),
    Any(u64, u64),
}

fn record() -> impl Strategy<Value = Record> {
    prop_oneof![
        2 => Just(Record::True),
        1 => Just(Record::NoOffset),
        3 => (0u64..2200).prop_map(Record::OffsetNear),
        1 => ((1u64 << 63)..u64::MAX - (1 << 20)).prop_map(Record::OffsetHuge),
        1 => any::<u64>().prop_map(Record::Size),
        1 => (any::<u64>(), any::<u64>()).prop_map(|(o, s)| Record::Any(o, s)),
    ]
}

/// The attribute's shape: the right one ([4, 2]) most often, else one h5tile must ignore.
fn record_dims() -> impl Strategy<Value = Vec<u64>> {
    prop_oneof![
        6 => Just(vec![4, 2]),
        1 => prop::sample::select(vec![vec![3, 2], vec![5, 2], vec![4, 3], vec![2, 4],
            vec![8], vec![4, 2, 1], vec![0, 2], vec![1, 1]]),
    ]
}

/// What a read of `want` gives under the records `used` (`None`: ignored) when the true ones
/// are `truth` (`Err(())` would be `H5TILE_ERR_MISSING_TILE`; since records whose tile would
/// not lie within its file are dropped, none is expected), else per element whether it must be
/// the written value (false: the bytes at a wrong recorded offset, which no reader can tell
/// from data without checksums).
fn expected_with_records(
    want: &Tile,
    used: Option<&[(u64, u64)]>,
    truth: &[(u64, u64)],
) -> Result<Vec<bool>, ()> {
    let mut exact = Vec::new();
    for k in 0..4 {
        let (r, c, _, w) = GRID_TILES[k];
        let indices: Vec<u64> = elements(want)
            .filter(|&(i, j)| tile_of(i, j).0 == k)
            .map(|(i, j)| (i - r) * w + (j - c))
            .collect();
        if indices.is_empty() {
            continue;
        }
        let Some((offset, size)) = used.map(|u| u[k]) else {
            continue;
        };
        let (_, _, h, w) = GRID_TILES[k];
        let tile_end = offset as u128 + (h * w * 8) as u128;
        if offset == u64::MAX || size != truth[k].1 || tile_end > size as u128 {
            // Read through HDF5: no record, a changed file, or a tile that would not lie
            // within its file (such a record is dropped).
            continue;
        }
        if offset != truth[k].0 {
            exact.push(k);
        }
    }
    Ok(elements(want)
        .map(|(i, j)| !exact.contains(&tile_of(i, j).0))
        .collect())
}

fn check_with_records(
    what: &str,
    want: &Tile,
    got: Result<Vec<f64>, Error>,
    expected: Result<Vec<bool>, ()>,
) -> Result<(), TestCaseError> {
    match (got, expected) {
        (Ok(values), Ok(exact)) => {
            for ((v, (i, j)), must) in values.iter().zip(elements(want)).zip(exact) {
                if must {
                    prop_assert_eq!(*v, value(i, j, 0.0), "{} {}: ({}, {})", what, want, i, j);
                }
            }
        }
        (Err(e), Err(())) => {
            clean(&e)?;
            prop_assert_eq!(e.status, H5TILE_ERR_MISSING_TILE, "{}", e.message);
        }
        // Bytes from a wrong recorded offset fail their checksums.
        (Err(e), Ok(exact)) if e.status == H5TILE_ERR_CORRUPT && exact.contains(&false) => {
            clean(&e)?;
        }
        (got, want_) => {
            if let Err(e) = &got {
                clean(e)?;
            }
            prop_assert!(
                false,
                "{} {}: got {:?}, expected {:?}",
                what,
                want,
                got,
                want_
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(64))]

    /// Arbitrary `h5tile_tile_bytes` records: offsets in the file, past its end or huge, other
    /// sizes, no offset, an attribute of the wrong shape. A read (and a batched read) of any
    /// box gives the written data where the record is true or not used (a size other than
    /// the file's, no offset, a wrong shape: HDF5 reads the tile), `H5TILE_ERR_MISSING_TILE`
    /// where a used record points past the file's end, and where it points elsewhere inside
    /// the file, those bytes: a record of the right size cannot be told from the truth without
    /// opening the tile with HDF5 (what the record is there to avoid) or a checksum. Reads
    /// converting the type always go through HDF5 and are always right.
    ///
    /// Offsets within a tile's bytes of 2^64 are left out: `a_tile_offset_near_u64_max_...`.
    #[test]
    fn tile_byte_records_give_the_data_or_a_clean_error(
        records in prop::collection::vec(record(), 8),
        dims in record_dims(),
        want in grid_box(),
        chunk in (1u64..=6, 1u64..=5),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let master = dir.path().join("m.h5");
        write_grid(&master, 0.0);
        let truth = true_tile_bytes(&master);
        let mut used: Vec<(u64, u64)> = Vec::new();
        for (k, r) in records.iter().take(4).enumerate() {
            let (o, s) = truth[k];
            used.push(match *r {
                Record::True => (o, s),
                Record::NoOffset => (u64::MAX, s),
                Record::OffsetNear(x) | Record::OffsetHuge(x) => (x, s),
                Record::Size(x) => (o, x),
                Record::Any(x, y) => (x, y),
            });
        }
        // The attribute holds as many values as its shape; extra ones from the unused records.
        let n: u64 = dims.iter().product();
        let mut values: Vec<u64> = used.iter().flat_map(|&(o, s)| [o, s]).collect();
        values.resize(n as usize, 12345);
        set_tile_bytes(&master, &dims, &values);
        let active = (dims == [4, 2]).then_some(used.as_slice());

        // The model is the reader's own, checksums aside (`mpi_checksums` tests those).
        let unchecked = ReadOptions { no_verify: true, ..ReadOptions::default() };
        let mut out = vec![f64::NAN; want.volume() as usize];
        let got = read_into(&master, "/g", Dtype::Float64, &want, &mut out, unchecked)
            .map(|()| out);
        check_with_records("read", &want, got, expected_with_records(&want, active, &truth))?;

        // Converted: through HDF5, whatever the records.
        let mut out = vec![f32::NAN; want.volume() as usize];
        let narrowing = ReadOptions { narrowing: true, ..unchecked };
        read_into(&master, "/g", Dtype::Float32, &want, &mut out, narrowing)
            .map_err(|e| TestCaseError::fail(e.message))?;
        let written: Vec<f32> = elements(&want).map(|(i, j)| value(i, j, 0.0) as f32).collect();
        prop_assert_eq!(out, written);

        // Batched, in chunks of any shape.
        let mut it = Batches::open(&Comm::solo(), &master, "/g", &[chunk.0, chunk.1], &unchecked)
            .map_err(|e| TestCaseError::fail(format!("{:?} {}", e.status, e.message)))?;
        let mut buf = vec![0u8; it.max_chunk_bytes()];
        for _ in 0..it.count() {
            let Some(bytes) = it.next_bytes() else { break };
            let got = it.next(&mut buf);
            let got = got.map(|t| {
                let t = t.expect("a chunk is left");
                let v: Vec<f64> = buf[..bytes].chunks(8)
                    .map(|b| f64::from_ne_bytes(b.try_into().unwrap())).collect();
                (t, v)
            });
            match got {
                Ok((t, v)) => check_with_records("chunk", &t, Ok(v),
                    expected_with_records(&t, active, &truth))?,
                Err(e) => {
                    clean(&e)?;
                    // Bytes from a wrong recorded offset fail their checksums.
                    prop_assert!(matches!(e.status, H5TILE_ERR_MISSING_TILE | H5TILE_ERR_CORRUPT),
                        "{}", e.message);
                }
            }
        }
        prop_assert!(matches!(it.next(&mut buf), Ok(None)));
    }
}

/// A recorded offset within a tile's bytes of 2^64 (of the true size) once wrapped around when
/// the element's place was added (`bytes.data_offset + s * elem`), returning bytes from the
/// start of the tile file (its HDF5 signature) as success. A record whose tile would not lie
/// within its file is now dropped, and HDF5 reads the tile: the written value comes back.
#[test]
fn a_tile_offset_near_u64_max_reads_the_tile_through_hdf5() {
    let dir = tempfile::tempdir().unwrap();
    let master = dir.path().join("m.h5");
    write_grid(&master, 0.0);
    let mut values: Vec<u64> = true_tile_bytes(&master)
        .iter()
        .flat_map(|&(o, s)| [o, s])
        .collect();
    values[0] = u64::MAX - 7; // tile 0's offset; its size stays the true one
    set_tile_bytes(&master, &[4, 2], &values);
    // Element (0, 1) is tile 0's second: offset + 8 wraps to 0.
    let out = read_f64(&master, "/g", &Tile::new(vec![0, 1], vec![1, 1])).unwrap();
    assert_eq!(out[0], value(0, 1, 0.0), "read {:e}", out[0]);
}

// ---------------------------------------------------------------------------------------------
// Damaged masters and tile files, read in a child process.

/// What is done to one file of a freshly written grid.
#[derive(Clone, Debug)]
enum Damage {
    /// Cut to this fraction of its length.
    Truncate(f64),
    /// Bytes overwritten at this fraction of the metadata: for a tile file, the bytes before
    /// its raw data; for a master, those before its global heap (see `hdf5_hangs_...`).
    Metadata(f64, Vec<u8>),
    /// Bytes overwritten inside a tile's raw data (for a master: as `Metadata`).
    RawData(f64, Vec<u8>),
    /// Replaced by bytes that are not HDF5, of this length or (true) of the file's own length.
    NotHdf5(Vec<u8>, bool),
    Empty,
    Directory,
    Removed,
    /// Replaced by the same file of the previous write of the same path (its tiles are gone).
    OtherGeneration,
    /// Replaced by the same file of another dataset (see `Other`).
    OtherDataset(Other),
}

/// Another dataset whose file replaces one: a tile of the replaced tile's shape (3x2 or 3x3)
/// and this type, values 1000 + k (for a master: a grid of one such tile, 4x3 unless said).
#[derive(Clone, Copy, Debug)]
enum Other {
    /// Float64 of the same shape: a tile of another write, of the same size.
    SameShape,
    /// The same number of float64 in another shape (2x3 or 1x9; 6x1 or 9x1): the same bytes.
    Transposed,
    Column,
    /// 2x2 float64: smaller than the mapping.
    Smaller,
    /// Int64 of the same shape (the same size), float32 (a smaller file).
    Int64,
    Float32,
}

fn damage() -> impl Strategy<Value = Damage> {
    let bytes = prop::collection::vec(any::<u8>(), 1..16);
    prop_oneof![
        2 => (0.0..1.0f64).prop_map(Damage::Truncate),
        3 => (0.0..1.0f64, bytes.clone()).prop_map(|(at, b)| Damage::Metadata(at, b)),
        1 => (0.0..1.0f64, bytes).prop_map(|(at, b)| Damage::RawData(at, b)),
        1 => (prop::collection::vec(any::<u8>(), 0..5000), prop::bool::ANY)
            .prop_map(|(b, same)| Damage::NotHdf5(b, same)),
        1 => Just(Damage::Empty),
        1 => Just(Damage::Directory),
        1 => Just(Damage::Removed),
        1 => Just(Damage::OtherGeneration),
        2 => prop::sample::select(vec![Other::SameShape, Other::Transposed, Other::Column,
            Other::Smaller, Other::Int64, Other::Float32]).prop_map(Damage::OtherDataset),
    ]
}

/// The shape of the "other" dataset of `kind` replacing tile `tile` (None: the master).
fn other_shape(kind: Other, tile: Option<usize>) -> (u64, u64) {
    let (h, w) = match tile {
        Some(k) => (GRID_TILES[k].2, GRID_TILES[k].3),
        None => (4, 3),
    };
    match kind {
        Other::Transposed if h != w => (w, h),
        Other::Transposed => (1, h * w),
        Other::Column => (h * w, 1),
        Other::Smaller => (2, 2),
        _ => (h, w),
    }
}

/// Writes the "other" dataset of `kind` at `path` in place of tile `tile` (None: the master)
/// and returns its tile file and its values.
fn write_other(path: &Path, kind: Other, tile: Option<usize>) -> (PathBuf, Vec<f64>) {
    let (h, w) = other_shape(kind, tile);
    let shape = vec![h, w];
    let n = (shape[0] * shape[1]) as usize;
    let f: Vec<f64> = (0..n).map(|k| 1000.0 + k as f64).collect();
    let i: Vec<i64> = (0..n as i64).map(|k| 1000 + k).collect();
    let s: Vec<f32> = (0..n).map(|k| 1000.0 + k as f32).collect();
    let (dtype, buf) = match kind {
        Other::Int64 => (Dtype::Int64, host_bytes(&i)),
        Other::Float32 => (Dtype::Float32, host_bytes(&s)),
        _ => (Dtype::Float64, host_bytes(&f)),
    };
    write_whole(path, "/g", dtype, &shape, buf, WriteOptions::default()).unwrap();
    let tile = testkit::tile_files(path).remove(0);
    (tile, f)
}

/// Bytes that no HDF5 reader takes for a file: no signature where HDF5 looks for one (offset
/// 0, 512, 1024, 2048, ...).
fn not_hdf5(mut bytes: Vec<u8>) -> Vec<u8> {
    const SIGNATURE: &[u8] = b"\x89HDF\r\n\x1a\n";
    let mut at = 0;
    while at + SIGNATURE.len() <= bytes.len() {
        if &bytes[at..at + SIGNATURE.len()] == SIGNATURE {
            bytes[at] = 0;
        }
        at = if at == 0 { 512 } else { at * 2 };
    }
    bytes
}

/// Where the raw data of the tile file `bytes` starts (HDF5 puts it last).
fn raw_data_start(len: usize, k: usize) -> usize {
    let (_, _, h, w) = GRID_TILES[k];
    len - (h * w) as usize * 8
}

/// Where the master's global heap (the virtual dataset's mappings) starts.
fn global_heap_start(bytes: &[u8]) -> usize {
    bytes
        .windows(4)
        .position(|w| w == b"GCOL")
        .expect("a master keeps its mappings in a global heap")
}

/// Damages `file` (tile `tile`, or the master when None) of the grid at `master`, which has
/// been written twice (the previous master kept at `previous`). Returns, for a replacement by
/// another dataset's tile, the values of that tile as they are read, native and converted.
fn apply(
    damage: &Damage,
    master: &Path,
    tile: Option<usize>,
    previous: &Path,
    scratch: &Path,
) -> Option<(Vec<f64>, Vec<f64>)> {
    let file = match tile {
        Some(k) => tile_files(master)[k].clone(),
        None => master.to_path_buf(),
    };
    let bytes = std::fs::read(&file).unwrap();
    let overwrite = |at: f64, with: &[u8], from: usize, to: usize| {
        let mut b = bytes.clone();
        let end = to.saturating_sub(with.len()).max(from);
        let pos = from + ((end - from) as f64 * at) as usize;
        for (i, x) in with.iter().enumerate() {
            if pos + i < to {
                b[pos + i] = *x;
            }
        }
        std::fs::write(&file, b).unwrap();
    };
    let metadata_end = match tile {
        Some(k) => raw_data_start(bytes.len(), k),
        None => global_heap_start(&bytes),
    };
    match damage {
        Damage::Truncate(f) => {
            std::fs::write(&file, &bytes[..(bytes.len() as f64 * f) as usize]).unwrap()
        }
        Damage::Metadata(at, with) => overwrite(*at, with, 0, metadata_end),
        Damage::RawData(at, with) if tile.is_some() => {
            overwrite(*at, with, metadata_end, bytes.len())
        }
        Damage::RawData(at, with) => overwrite(*at, with, 0, metadata_end),
        Damage::NotHdf5(b, same) => {
            let mut b = b.clone();
            if *same {
                b.resize(bytes.len(), 0x5a);
            } else if b.len() == bytes.len() {
                b.push(0);
            }
            std::fs::write(&file, not_hdf5(b)).unwrap()
        }
        Damage::Empty => std::fs::write(&file, b"").unwrap(),
        Damage::Directory => {
            std::fs::remove_file(&file).unwrap();
            std::fs::create_dir(&file).unwrap();
        }
        Damage::Removed => std::fs::remove_file(&file).unwrap(),
        Damage::OtherGeneration => match tile {
            // The same tile of a write of other values: the same size and layout.
            Some(k) => {
                write_grid(&scratch.join("other.h5"), 2000.0);
                let other = &tile_files(&scratch.join("other.h5"))[k];
                std::fs::copy(other, &file).unwrap();
                let (r, c, h, w) = GRID_TILES[k];
                let v: Vec<f64> = (0..h * w)
                    .map(|x| value(r + x / w, c + x % w, 2000.0))
                    .collect();
                return Some((v.clone(), v));
            }
            None => {
                std::fs::copy(previous, &file).unwrap();
            }
        },
        Damage::OtherDataset(kind) => {
            // Written at the same file name in another folder: a master's relative tile names
            // then name files that are not here.
            let other_master = scratch.join("m.h5");
            let (other_tile, values) = write_other(&other_master, *kind, tile);
            match tile {
                Some(_) => std::fs::copy(&other_tile, &file).unwrap(),
                None => std::fs::copy(&other_master, &file).unwrap(),
            };
            let same_size = std::fs::metadata(&other_tile).unwrap().len() == bytes.len() as u64;
            let native = match kind {
                // Read from the recorded offset as float64: the int64's bits.
                Other::Int64 => values
                    .iter()
                    .map(|&v| f64::from_bits(v as i64 as u64))
                    .collect(),
                _ => values.clone(),
            };
            return match (kind, same_size) {
                (Other::Smaller, _) => None,
                (_, true) => Some((native, values)),
                (_, false) => Some((values.clone(), values)),
            };
        }
    }
    None
}

/// How one tile answers a read, as far as h5tile can know.
#[derive(Clone, Debug, PartialEq)]
enum Answer {
    /// The written values.
    Written,
    /// These values (another file's, row-major over the tile), or `H5TILE_ERR_CORRUPT`.
    Values(Vec<f64>),
    /// Any values, or `H5TILE_ERR_CORRUPT`: bytes changed inside the raw data.
    Any,
    /// `H5TILE_ERR_MISSING_TILE`.
    Missing,
    /// The written values, or `H5TILE_ERR_MISSING_TILE`, or (HDF5 metadata without checksums)
    /// other values: what HDF5 makes of a tile file with damaged metadata.
    Hdf5Parses,
}

/// How the damaged tile answers a native (float64) and a converted (float32) read: the native
/// read copies the recorded bytes when the file has the recorded size (it never parses the
/// file), otherwise HDF5 opens the file; the converted read always goes through HDF5.
fn tile_answers(damage: &Damage, other: &Option<(Vec<f64>, Vec<f64>)>) -> (Answer, Answer) {
    use Answer::*;
    match damage {
        Damage::Truncate(_) | Damage::Empty | Damage::Directory | Damage::Removed => {
            (Missing, Missing)
        }
        Damage::Metadata(..) => (Written, Hdf5Parses),
        Damage::RawData(..) => (Any, Any),
        Damage::NotHdf5(_, true) => (Any, Missing),
        Damage::NotHdf5(_, false) => (Missing, Missing),
        Damage::OtherGeneration => {
            let (n, c) = other.clone().unwrap();
            (Values(n), Values(c))
        }
        Damage::OtherDataset(kind) => match (kind, other) {
            (Other::Smaller, _) => (Missing, Missing),
            // The same bytes in another shape: copied as recorded; HDF5 sees the shape.
            (Other::Transposed | Other::Column, Some((n, _))) => (Values(n.clone()), Missing),
            (_, Some((n, c))) => (Values(n.clone()), Values(c.clone())),
            (_, None) => unreachable!(),
        },
    }
}

/// One read the child makes, and its outcome.
#[derive(Debug)]
struct Outcome {
    what: String,
    /// The box read (the grid's coordinates).
    want: Tile,
    converted: bool,
    result: Result<Vec<f64>, (u32, String)>,
}

const CHILD_ENV: &str = "H5TILE_FUZZ_CHILD";

/// Not a test: where the child process enters (`common::run_child_entry`). With
/// `H5TILE_FUZZ_CHILD=<master>;<boxes>` set, reads the grid at `<master>` (each box as float64,
/// the whole grid as float32, all of it in 2x2 batches) and prints one line per read, on
/// stderr (`run_child_entry` says why).
#[test]
#[ignore = "not a test: the child process's entry, run by run_child"]
fn child_process_entry() {
    let spec = std::env::var(CHILD_ENV)
        .unwrap_or_else(|_| panic!("run by run_child alone, with {CHILD_ENV} set"));
    let (master, boxes) = spec.split_once(';').unwrap();
    let master = Path::new(master);
    let print = |what: &str, want: &Tile, result: Result<Vec<f64>, Error>| {
        let body = match result {
            Ok(v) => format!(
                "OK {}",
                v.iter()
                    .map(|x| format!("{:x}", x.to_bits()))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Err(e) => format!("ERR {} {}", e.status as u32, e.message.replace('\n', " ")),
        };
        eprintln!("FUZZ {what} {} {body}", tile_text(want));
    };
    for b in boxes.split('/').filter(|b| !b.is_empty()) {
        let want = parse_tile(b);
        print("read", &want, read_f64(master, "/g", &want));
    }
    let all = whole_grid();
    let mut out = vec![0f32; 30];
    let narrowing = ReadOptions {
        narrowing: true,
        ..ReadOptions::default()
    };
    let r = read_into(master, "/g", Dtype::Float32, &all, &mut out, narrowing);
    print(
        "read32",
        &all,
        r.map(|()| out.iter().map(|&x| x as f64).collect()),
    );
    match Batches::open(
        &Comm::solo(),
        master,
        "/g",
        &[2, 2],
        &ReadOptions {
            dtype: Some(Dtype::Float64),
            ..Default::default()
        },
    ) {
        Err(e) => print("open", &all, Err(e)),
        Ok(mut it) => {
            let mut buf = vec![0u8; it.max_chunk_bytes()];
            for _ in 0..it.count() {
                let Some(n) = it.next_bytes() else { break };
                match it.next(&mut buf) {
                    Ok(Some(t)) => {
                        let v = buf[..n]
                            .chunks(8)
                            .map(|b| f64::from_ne_bytes(b.try_into().unwrap()))
                            .collect();
                        print("chunk", &t, Ok(v));
                    }
                    Ok(None) => panic!("a chunk was counted but not given"),
                    // The chunk's place, for the oracle, is the one the iterator was at.
                    Err(e) => print("chunk?", &all, Err(e)),
                }
            }
        }
    }
    eprintln!("FUZZ done");
}

fn tile_text(t: &Tile) -> String {
    format!(
        "{},{},{},{}",
        t.offset[0], t.offset[1], t.shape[0], t.shape[1]
    )
}

fn parse_tile(s: &str) -> Tile {
    let v: Vec<u64> = s.split(',').map(|x| x.parse().unwrap()).collect();
    Tile::new(vec![v[0], v[1]], vec![v[2], v[3]])
}

/// Runs the child on `master` with `boxes`; a child that runs past `limit` is killed and
/// reported as a hang, one that dies of a signal as a crash.
fn run_child(master: &Path, boxes: &[Tile], limit: Duration) -> Result<Vec<Outcome>, String> {
    let spec = format!(
        "{};{}",
        master.display(),
        boxes.iter().map(tile_text).collect::<Vec<_>>().join("/")
    );
    let child = run_child_entry(&[(CHILD_ENV, OsStr::new(&spec))], limit)?;
    let out = child.stderr;
    if !out.lines().any(|l| l == "FUZZ done") {
        return Err(format!(
            "CRASH: the child ended with {}; it said:\n{out}",
            child.status
        ));
    }
    Ok(out
        .lines()
        .filter_map(|l| l.strip_prefix("FUZZ "))
        .filter(|l| *l != "done")
        .map(|l| {
            let mut parts = l.splitn(4, ' ');
            let what = parts.next().unwrap().to_string();
            let want = parse_tile(parts.next().unwrap());
            let kind = parts.next().unwrap();
            let rest = parts.next().unwrap_or("");
            let result = match kind {
                "OK" => Ok(rest
                    .split(',')
                    .filter(|x| !x.is_empty())
                    .map(|x| f64::from_bits(u64::from_str_radix(x, 16).unwrap()))
                    .collect()),
                _ => {
                    let (code, message) = rest.split_once(' ').unwrap_or((rest, ""));
                    Err((code.parse().unwrap(), message.to_string()))
                }
            };
            Outcome {
                converted: what == "read32",
                what,
                want,
                result,
            }
        })
        .collect())
}

/// Checks one outcome of a read of the grid whose tile `tile` answers `answer` (every other
/// tile its written values).
fn check_tile_outcome(o: &Outcome, tile: usize, answer: &Answer) -> Result<(), TestCaseError> {
    let touches = elements(&o.want).any(|(i, j)| tile_of(i, j).0 == tile);
    let missing = H5TILE_ERR_MISSING_TILE as u32;
    match &o.result {
        Err((code, message)) => {
            prop_assert!(*code != H5TILE_ERR_PANIC as u32, "panic: {}", message);
            // Changed bytes where the tile's data were written fail their checksums.
            let corrupt = *code == H5TILE_ERR_CORRUPT as u32;
            let missing = match corrupt {
                true => *code,
                false => missing,
            };
            prop_assert!(
                touches
                    && (matches!(answer, Answer::Missing | Answer::Hdf5Parses)
                        || corrupt && matches!(answer, Answer::Any | Answer::Values(_))),
                "{} {}: unexpected error {} {}",
                o.what,
                o.want,
                code,
                message
            );
            prop_assert_eq!(*code, missing, "{}", message);
            let name = tile_name(tile);
            prop_assert!(
                message.contains(&name),
                "{} does not name {}",
                message,
                name
            );
        }
        Ok(values) => {
            prop_assert!(
                !touches || *answer != Answer::Missing,
                "{} {}: read as success, expected H5TILE_ERR_MISSING_TILE",
                o.what,
                o.want
            );
            let as_read = |v: f64| if o.converted { v as f32 as f64 } else { v };
            for (got, (i, j)) in values.iter().zip(elements(&o.want)) {
                let (k, x) = tile_of(i, j);
                let want = match answer {
                    _ if k != tile => Some(value(i, j, 0.0)),
                    Answer::Written => Some(value(i, j, 0.0)),
                    Answer::Values(v) => Some(v[x]),
                    _ => None,
                };
                if let Some(want) = want {
                    prop_assert_eq!(
                        got.to_bits(),
                        as_read(want).to_bits(),
                        "{} {}: ({}, {}) is {}, expected {}",
                        o.what,
                        o.want,
                        i,
                        j,
                        got,
                        want
                    );
                }
            }
        }
    }
    Ok(())
}

/// The part of tile `k`'s file name that messages quote.
fn tile_name(k: usize) -> String {
    format!(".r0.t{k}.h5")
}

/// Checks one outcome of a read of the grid whose master was damaged: the written values, or
/// one of the failures a damaged master can give, `exact` when it is known.
fn check_master_outcome(
    o: &Outcome,
    exact: Option<h5tile_status>,
    damage: &Damage,
) -> Result<(), TestCaseError> {
    match &o.result {
        Err((code, message)) => {
            prop_assert!(*code != H5TILE_ERR_PANIC as u32, "panic: {}", message);
            let allowed: &[h5tile_status] = match exact {
                Some(s) => &[s][..],
                None => &[
                    H5TILE_ERR_HDF5,
                    H5TILE_ERR_NOT_FOUND,
                    H5TILE_ERR_NOT_A_DATASET,
                    H5TILE_ERR_SHAPE,
                    H5TILE_ERR_DTYPE,
                    H5TILE_ERR_MISSING_TILE,
                ][..],
            };
            prop_assert!(
                allowed.iter().any(|s| *s as u32 == *code),
                "{} {}: status {} ({}), expected one of {:?}",
                o.what,
                o.want,
                code,
                message,
                allowed
            );
        }
        Ok(values) => {
            prop_assert!(
                matches!(damage, Damage::Metadata(..) | Damage::RawData(..)),
                "{} {}: read as success",
                o.what,
                o.want
            );
            let as_read = |v: f64| if o.converted { v as f32 as f64 } else { v };
            for (got, (i, j)) in values.iter().zip(elements(&o.want)) {
                // A master whose extent grew by damage reads its unmapped elements as zero.
                let want = if i < 6 && j < 5 {
                    value(i, j, 0.0)
                } else {
                    0.0
                };
                prop_assert_eq!(
                    got.to_bits(),
                    as_read(want).to_bits(),
                    "{} {}: ({}, {}) is {}",
                    o.what,
                    o.want,
                    i,
                    j,
                    got
                );
            }
        }
    }
    Ok(())
}

/// The status every read of a master damaged so must give, when it is known.
fn master_status(damage: &Damage, want: &Tile) -> Option<h5tile_status> {
    match damage {
        Damage::Truncate(_) | Damage::NotHdf5(..) | Damage::Empty => Some(H5TILE_ERR_HDF5),
        Damage::Directory => Some(H5TILE_ERR_IS_DIRECTORY),
        Damage::Removed => Some(H5TILE_ERR_NOT_FOUND),
        // Its tiles were removed by the write that replaced it.
        Damage::OtherGeneration => Some(H5TILE_ERR_MISSING_TILE),
        // Another dataset: its extent differs, and its tiles are not here.
        Damage::OtherDataset(kind) => {
            let (h, w) = other_shape(*kind, None);
            let fits = want.offset[0] + want.shape[0] <= h && want.offset[1] + want.shape[1] <= w;
            Some(if fits {
                H5TILE_ERR_MISSING_TILE
            } else {
                H5TILE_ERR_SHAPE
            })
        }
        Damage::Metadata(..) | Damage::RawData(..) => None,
    }
}

proptest! {
    #![proptest_config(cases(64))]

    /// A master or one tile file truncated, overwritten, replaced by bytes that are not HDF5,
    /// by an empty file or a folder, removed, or swapped with the same file of another write
    /// or of another dataset: reads of boxes of the grid, a converting read and a batched read
    /// (in a child process, so a hang or a crash is seen) each give the data or a clean error
    /// (the exact status where it is known), never a hang or a crash. A damaged tile fails
    /// with `H5TILE_ERR_MISSING_TILE` naming it, and never disturbs the tiles around it.
    ///
    /// What cannot be told without checksums (a later issue adds them), so is accepted:
    /// bytes changed inside a tile's raw data; a tile file replaced by one of exactly the
    /// recorded size (another write's tile, the same bytes in another shape or type, bytes
    /// that are not HDF5): its bytes at the recorded offset are copied without opening it;
    /// damaged tile metadata read through HDF5 (HDF5's original file format, which h5tile
    /// writes, keeps no metadata checksums). A master's global heap (its mappings) is not
    /// damaged here: HDF5 hangs or crashes on some such bytes (`hdf5_hangs_...`).
    #[test]
    fn damaged_files_give_the_data_or_a_clean_error_never_a_hang(
        damage in damage(),
        target in prop::option::weighted(0.75, 0usize..4),
        boxes in prop::collection::vec(grid_box(), 1..4),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let master = dir.path().join("m.h5");
        write_grid(&master, 1.0);
        let previous = scratch.path().join("previous.h5");
        std::fs::copy(&master, &previous).unwrap();
        write_grid(&master, 0.0);
        let other = apply(&damage, &master, target, &previous, scratch.path());
        let outcomes = run_child(&master, &boxes, Duration::from_secs(60))
            .map_err(|e| TestCaseError::fail(format!("{e}\ndamage {damage:?} to {target:?}")))?;
        // Every box answered, in order, and the converted read: no answer lost on the way.
        let reads: Vec<&Tile> =
            outcomes.iter().filter(|o| o.what == "read").map(|o| &o.want).collect();
        prop_assert_eq!(reads, boxes.iter().collect::<Vec<_>>(), "{:?}", outcomes);
        prop_assert_eq!(outcomes.iter().filter(|o| o.what == "read32").count(), 1);
        for o in &outcomes {
            match target {
                Some(k) => {
                    let (native, converted) = tile_answers(&damage, &other);
                    let answer = if o.converted { converted } else { native };
                    // A failed chunk's place is not printed; it must be a chunk of the tile.
                    if o.what == "chunk?" {
                        let Err((code, _)) = &o.result else { unreachable!() };
                        if *code == H5TILE_ERR_CORRUPT as u32 {
                            prop_assert!(matches!(answer, Answer::Any | Answer::Values(_)),
                                "{:?}", o);
                            continue;
                        }
                        prop_assert!(matches!(answer, Answer::Missing | Answer::Hdf5Parses),
                            "{:?}", o);
                        prop_assert_eq!(*code, H5TILE_ERR_MISSING_TILE as u32);
                        continue;
                    }
                    prop_assert!(o.what != "open", "{:?}", o);
                    check_tile_outcome(o, k, &answer)?;
                }
                None => {
                    // A failed chunk of another dataset's grid: its tiles are not here.
                    let exact = match (&damage, o.what.as_str()) {
                        (Damage::OtherDataset(_), "chunk?") => Some(H5TILE_ERR_MISSING_TILE),
                        _ => master_status(&damage, &o.want),
                    };
                    check_master_outcome(o, exact, &damage)?;
                }
            }
        }
    }
}

/// HDF5 (2.2.0 here; h5py's 2.0.0 too) loops forever in `H5HG__cache_heap_deserialize` when
/// the size of the first object of a master's global heap (where a virtual dataset keeps its
/// mappings) is off by one: `H5Dopen2`, called by every read, never returns. h5tile cannot
/// notice before HDF5 parses the heap (the heap has no checksum in any HDF5 format version);
/// a checksum h5tile keeps of the master could. Run in a child process, so the hang is seen.
#[test]
#[ignore = "bug (HDF5): a one-byte change of a master's global heap makes H5Dopen2 loop forever"]
fn hdf5_hangs_on_a_master_whose_global_heap_object_size_changed() {
    let outcome = whole_grid_read_with_heap_byte_flipped(24, 1); // object 1's size, low byte
    assert!(outcome.result.is_err(), "{outcome:?}");
}

/// HDF5 (2.2.0 here; h5py's 2.0.0 too) dies of SIGSEGV in `H5D_close`, cleaning up after
/// `H5D__virtual_load_layout` refused the mappings, when the version byte of a master's
/// encoded mappings (the first byte of its global heap's first object) is 0x80: any read of
/// the master crashes the process. As above, h5tile cannot notice before HDF5 parses it.
#[test]
#[ignore = "bug (HDF5): a master whose VDS mapping version byte is 0x80 crashes H5Dopen2 (SIGSEGV)"]
fn hdf5_crashes_on_a_master_whose_mapping_version_changed() {
    let outcome = whole_grid_read_with_heap_byte_flipped(40, 0x80);
    assert_eq!(
        outcome.result.as_ref().unwrap_err().0,
        H5TILE_ERR_HDF5 as u32
    );
}

/// The child's read of the whole grid from a master whose global heap has its byte `at` (from
/// the heap's start) XORed with `mask`.
fn whole_grid_read_with_heap_byte_flipped(at: usize, mask: u8) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let master = dir.path().join("m.h5");
    write_grid(&master, 0.0);
    let heap = global_heap_start(&std::fs::read(&master).unwrap());
    flip_bits(&master, (heap + at) as u64, mask);
    let outcomes = run_child(&master, &[whole_grid()], Duration::from_secs(20)).unwrap();
    outcomes.into_iter().next().unwrap()
}

/// A tile file replaced by another dataset's tile larger than the mapping (4x3 for a 3x2
/// tile; the file's size differs from the record, so h5tile opens it with HDF5) is read: h5tile
/// returns its top-left 3x2 box as success. HDF5 itself refuses this virtual dataset ("src and
/// dest dataspaces have different number of elements selected"), since the mapping selects
/// the whole source, and `BlockMapping`'s comment says such a source "must then match the
/// region, which `DirectReader` checks" — `DirectReader::source` checks only that it fits.
/// Expected: `H5TILE_ERR_MISSING_TILE`, as for a smaller one.
#[test]
fn a_tile_file_larger_than_its_mapping_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let master = dir.path().join("m.h5");
    write_grid(&master, 0.0);
    let other = dir.path().join("o.h5");
    let values: Vec<f64> = (0..12).map(|k| 1000.0 + k as f64).collect();
    let (buf, options) = (host_bytes(&values), WriteOptions::default());
    write_whole(&other, "/g", Dtype::Float64, &[4, 3], buf, options).unwrap();
    let larger = testkit::tile_files(&other).remove(0);
    std::fs::copy(larger, &tile_files(&master)[0]).unwrap();
    let got = read_f64(&master, "/g", &Tile::new(vec![0, 0], vec![3, 2]));
    let e = got.expect_err("read as success");
    assert_eq!(e.status, H5TILE_ERR_MISSING_TILE, "{}", e.message);
}

// ---------------------------------------------------------------------------------------------
// The driver's configuration string, as HDF5 hands it to the driver (`H5Pset_driver_by_name`,
// what `HDF5_DRIVER_CONFIG` does).

proptest! {
    #![proptest_config(cases(64))]

    /// Any configuration text: creating a file through the driver succeeds exactly when the
    /// text parses, and otherwise fails with the parser's message on HDF5's error stack and
    /// no file made.
    #[test]
    fn the_driver_opens_files_exactly_when_its_configuration_parses(
        text in prop_oneof![
            "[a-z=, 0-9MiBK]{0,30}",
            "(gds=(on|off|auto)|block=[0-9]{1,8}(KiB|MiB)?|threads=[0-9]{1,3}|direct=(on|off)),{0,3}",
            "\\PC{0,20}",
        ],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.h5");
        let parsed = h5tile_gds::Config::parse(&text);
        // gds=on needs cuFile: refused here when it cannot be used.
        let gds_on = matches!(&parsed, Ok(c) if c.gds == h5tile_gds::Gds::On);
        prop_assume!(!gds_on || h5tile_gds::cufile_usable().is_err());
        let _l = hdf5::lock();
        let fapl = match hdf5::gds::file_access(&text) {
            Ok(fapl) => fapl,
            Err(e) => {
                clean(&e)?;
                prop_assert!(false, "{:?}: {}", e.status, e.message);
                unreachable!()
            }
        };
        let c_path = cstr(path.to_str().unwrap());
        let id = unsafe {
            hdf5_sys::h5f::H5Fcreate(c_path.as_ptr(), hdf5_sys::h5f::H5F_ACC_TRUNC,
                hdf5_sys::h5p::H5P_DEFAULT, fapl.id())
        };
        match (parsed, gds_on) {
            (Ok(_), false) => {
                prop_assert!(id >= 0, "{}", hdf5::take_error_stack());
                File::from_id(id, String::new).unwrap().close().unwrap();
                prop_assert!(path.exists());
            }
            (Ok(_), true) => {
                prop_assert!(id < 0);
                let e = hdf5::error("cannot create".into());
                prop_assert_eq!(e.status, H5TILE_ERR_CUDA, "{}", e.message);
                prop_assert!(!path.exists());
            }
            (Err(why), _) => {
                prop_assert!(id < 0);
                let stack = hdf5::take_error_stack();
                prop_assert!(stack.contains(&why), "{:?} lacks {:?}", stack, why);
                prop_assert!(!path.exists());
            }
        }
    }
}
