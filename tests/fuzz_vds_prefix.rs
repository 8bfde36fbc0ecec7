//! `HDF5_VDS_PREFIX` set to arbitrary values: h5tile looks up a virtual dataset's relative
//! sources as HDF5 does (each folder of the variable, then the master's folder; HDF5's last
//! resort, the working directory, is left out by h5tile and holds no tiles here), so whatever
//! the value, a read gives what HDF5's own read of the same virtual dataset gives, and never
//! panics. HDF5 reads the variable when it starts (and again
//! at each lookup), so each case runs in a child process started with the variable set: the
//! test never changes its own environment.
//!
//! 64 cases by default; `PROPTEST_CASES=N` runs N.

mod common;
use common::{cases, run_child_entry};
use h5tile::internals::hdf5::{self, Dataset, File};
use h5tile::internals::testkit::{read_into, whole_grid, GRID_TILES};
use h5tile::internals::{Dtype, ReadOptions};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn value(i: u64, j: u64) -> f64 {
    common::value(i, j, 0.0)
}

/// The 6x5 grid of four tiles at `master`; returns its tile files, in tile order.
fn write_grid(master: &Path) -> Vec<PathBuf> {
    common::write_grid(master, 0.0);
    common::tile_files(master)
}

/// Copies of the tiles `which` under `folder/m.h5.tiles/`, their values raised by `shift` (a
/// decoy that HDF5 finds first when `folder` is in `HDF5_VDS_PREFIX`).
fn decoys(folder: &Path, tiles: &[PathBuf], which: &[bool], shift: f64) {
    let dir = folder.join("m.h5.tiles");
    std::fs::create_dir_all(&dir).unwrap();
    for (k, tile) in tiles.iter().enumerate().filter(|(k, _)| which[*k]) {
        let mut bytes = std::fs::read(tile).unwrap();
        let (r, c, h, w) = GRID_TILES[k];
        let start = bytes.len() - (h * w) as usize * 8;
        for x in 0..(h * w) {
            let v = value(r + x / w, c + x % w) + shift;
            let at = start + x as usize * 8;
            bytes[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        }
        std::fs::write(dir.join(tile.file_name().unwrap()), bytes).unwrap();
    }
}

/// HDF5's own read of the whole virtual dataset (missing sources read as zero).
fn hdf5_read(master: &Path) -> Vec<f64> {
    let _l = hdf5::lock();
    let file = File::open_read(master).unwrap();
    let dset = Dataset::open(&file, "/g").unwrap();
    let t = Dtype::Float64.hdf5_type().unwrap();
    let mut out = vec![f64::NAN; 30];
    unsafe { dset.read(&t, None, None, out.as_mut_ptr().cast()) }.unwrap();
    out
}

/// One piece of the variable's value.
#[derive(Clone, Debug)]
enum Piece {
    /// Any text (which may hold ':' and so be several folders).
    Text(String),
    /// Any bytes but NUL (not UTF-8, mostly).
    Bytes(Vec<u8>),
    Origin,
    /// The folder holding decoys, absolute or as `${ORIGIN}/decoys`.
    Decoys,
    DecoysUnderOrigin,
    /// A folder name far longer than PATH_MAX.
    Long,
    Empty,
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        3 => "\\PC{0,20}".prop_map(Piece::Text),
        1 => "[a-z/.:$%{}~]{0,20}".prop_map(Piece::Text),
        1 => prop::collection::vec(1u8..=255, 0..20).prop_map(Piece::Bytes),
        1 => Just(Piece::Origin),
        2 => Just(Piece::Decoys),
        1 => Just(Piece::DecoysUnderOrigin),
        1 => Just(Piece::Long),
        1 => Just(Piece::Empty),
    ]
}

fn value_of(pieces: &[Piece], dir: &Path) -> OsString {
    let mut out: Vec<u8> = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        if i > 0 {
            out.push(b':');
        }
        match p {
            Piece::Text(t) => out.extend(t.as_bytes()),
            Piece::Bytes(b) => out.extend(b),
            Piece::Origin => out.extend(b"${ORIGIN}"),
            Piece::Decoys => out.extend(dir.join("decoys").as_os_str().as_bytes()),
            Piece::DecoysUnderOrigin => out.extend(b"${ORIGIN}/decoys"),
            Piece::Long => out.extend("x".repeat(5000).as_bytes()),
            Piece::Empty => {}
        }
    }
    OsString::from_vec(out)
}

const CHILD_ENV: &str = "H5TILE_FUZZ_PREFIX_CHILD";

/// Not a test: where the child process enters (`common::run_child_entry`). With
/// `H5TILE_FUZZ_PREFIX_CHILD=<master>` set, prints h5tile's read of the whole grid and HDF5's,
/// on stderr (`run_child_entry` says why).
#[test]
#[ignore = "not a test: the child process's entry, run by run_child"]
fn child_process_entry() {
    let master = std::env::var_os(CHILD_ENV)
        .unwrap_or_else(|| panic!("run by run_child alone, with {CHILD_ENV} set"));
    let master = Path::new(&master);
    let mut out = vec![f64::NAN; 30];
    // Decoy tiles hold other values than written: checked, they would be H5TILE_ERR_CORRUPT;
    // what is compared here is which files are read.
    let unchecked = ReadOptions {
        no_verify: true,
        ..ReadOptions::default()
    };
    let got = read_into(
        master,
        "/g",
        Dtype::Float64,
        &whole_grid(),
        &mut out,
        unchecked,
    );
    match got {
        Ok(()) => eprintln!("FUZZ h5tile {out:?}"),
        Err(e) => eprintln!(
            "FUZZ h5tile error {:?} {}",
            e.status,
            e.message.replace('\n', " ")
        ),
    }
    eprintln!("FUZZ hdf5 {:?}", hdf5_read(master));
}

/// Runs the child on the grid at `master` with `HDF5_VDS_PREFIX=prefix`: h5tile's line, HDF5's.
fn run_child(master: &Path, prefix: &OsString) -> (String, String) {
    let env = [
        (CHILD_ENV, master.as_os_str()),
        ("HDF5_VDS_PREFIX", prefix.as_os_str()),
    ];
    let out = run_child_entry(&env, Duration::from_secs(60)).unwrap();
    let text = out.stderr;
    assert!(out.status.success(), "child: {}: {text}", out.status);
    let line = |who: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("FUZZ {who} ")))
            .unwrap_or_else(|| panic!("no answer from {who}: {text}"))
            .to_string()
    };
    (line("h5tile"), line("hdf5"))
}

/// Reads the grid with `HDF5_VDS_PREFIX` made of `pieces`, decoys of the tiles `which`, and
/// compares with HDF5's own read, both in a child process.
fn check(pieces: &[Piece], which: &[bool]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let master = dir.path().join("m.h5");
    let tiles = write_grid(&master);
    decoys(&dir.path().join("decoys"), &tiles, which, 1000.0);
    let prefix = value_of(pieces, dir.path());
    let (h5tile, hdf5) = run_child(&master, &prefix);
    prop_assert!(!h5tile.contains("H5TILE_ERR_PANIC"), "{}", h5tile);
    prop_assert_eq!(h5tile, hdf5, "HDF5_VDS_PREFIX={:?}", prefix);
    Ok(())
}

proptest! {
    #![proptest_config(cases(64))]

    /// Any `HDF5_VDS_PREFIX` (junk, ':'-separated lists, empty pieces, names longer than
    /// PATH_MAX, `${ORIGIN}` alone or at its start, a folder holding decoys of some tiles under
    /// the same relative names): h5tile reads exactly what HDF5 reads: the decoys where HDF5
    /// finds them first, the master's own tiles elsewhere.
    #[test]
    fn any_vds_prefix_reads_what_hdf5_reads(
        pieces in prop::collection::vec(piece(), 1..5)
            // Cases where h5tile and HDF5 2.2.0 differ are left out: see the tests below.
            .prop_filter("a value HDF5 reads otherwise", |p| {
                let not_utf8 = p.iter()
                    .any(|x| matches!(x, Piece::Bytes(b) if std::str::from_utf8(b).is_err()));
                let origin = p.iter()
                    .any(|x| matches!(x, Piece::Origin | Piece::DecoysUnderOrigin));
                !not_utf8 && (!origin || p.len() == 1)
            }),
        which in prop::collection::vec(prop::bool::ANY, 4),
    ) {
        check(&pieces, &which)?;
    }
}

/// `HDF5_VDS_PREFIX` is read as UTF-8 (`std::env::var` in `mappings::resolve_source`): a value
/// holding any other byte is ignored as a whole, so h5tile reads the master's own tiles where
/// HDF5, which takes the bytes as they are, reads those of the folders the value names.
#[test]
fn a_non_utf8_vds_prefix_is_used_as_hdf5_uses_it() {
    let pieces = [Piece::Bytes(b"\xff".to_vec()), Piece::Decoys];
    check(&pieces, &[true; 4]).unwrap();
}

/// h5tile reads `${ORIGIN}` as the master's folder in every ':'-separated folder of
/// `HDF5_VDS_PREFIX`; HDF5 2.2.0 takes the folders literally (`H5F_prefix_open_file`) and
/// replaces `${ORIGIN}` only at the start of the whole value, tried after all of them
/// (`H5D__build_file_prefix`). With `x:${ORIGIN}/decoys`, h5tile reads the decoys, HDF5 the
/// master's own tiles.
#[test]
fn origin_in_a_vds_prefix_list_is_read_as_hdf5_reads_it() {
    let pieces = [Piece::Text("x".into()), Piece::DecoysUnderOrigin];
    check(&pieces, &[true; 4]).unwrap();
}
