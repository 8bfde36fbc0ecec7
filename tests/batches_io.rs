//! Batched reading of a chunked, compressed dataset reads each storage chunk from disk once
//! when the requested chunks align with the storage chunks, and (thanks to the chunk cache)
//! not much more when they straddle them. Measured as bytes read by this process
//! (`rchar` in /proc/self/io) against one whole read of the same dataset. Its own test
//! binary, so no other test's I/O is counted.

use h5tile::internals::hdf5::{self, Dataset, File, Handle, Plist, Space};
use h5tile::internals::Batches;
use h5tile::internals::Comm;
use h5tile::internals::Dtype;
use h5tile::internals::Tile;
use h5tile::internals::{host_bytes_mut, read, ReadOptions};
use hdf5_sys::h5p::{H5Pset_chunk, H5Pset_deflate};
use std::path::Path;

const N: u64 = 1024;

fn bytes_read() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").expect("/proc/self/io");
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn write_chunked(path: &Path) {
    let values: Vec<i32> = (0..N * N)
        .map(|i| ((i * 2654435761) % 1000) as i32)
        .collect();
    let _l = hdf5::lock();
    let file = File::create(path).unwrap();
    let dcpl = Plist::dataset_create().unwrap();
    unsafe {
        assert!(H5Pset_chunk(dcpl.id(), 2, [128u64, 128].as_ptr()) >= 0);
        assert!(H5Pset_deflate(dcpl.id(), 1) >= 0);
    }
    let t = Dtype::Int32.hdf5_type().unwrap();
    let dset = Dataset::create(&file, "/z", &t, &Space::simple(&[N, N]).unwrap(), &dcpl).unwrap();
    unsafe { dset.write(&t, None, None, values.as_ptr().cast()) }.unwrap();
    drop(dset);
    file.close().unwrap();
}

fn batched_bytes(solo: &Comm, path: &Path, chunk: [u64; 2]) -> u64 {
    let start = bytes_read();
    let mut it = Batches::open(solo, path, "/z", &chunk, &ReadOptions::default()).unwrap();
    let mut buf = vec![0u8; it.max_chunk_bytes()];
    while it.next(&mut buf).unwrap().is_some() {}
    drop(it);
    bytes_read() - start
}

#[test]
fn storage_chunks_are_read_once_when_aligned_and_rarely_twice_when_not() {
    let solo = Comm::solo();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.h5");
    write_chunked(&path);

    let start = bytes_read();
    let mut whole = vec![0i32; (N * N) as usize];
    let all = Tile::new(vec![0, 0], vec![N, N]);
    {
        read(
            solo_ref(&solo),
            &path,
            "/z",
            Dtype::Int32,
            &all,
            host_bytes_mut(&mut whole),
            ReadOptions::default(),
        )
    }
    .unwrap();
    let whole_bytes = bytes_read() - start;

    let aligned = batched_bytes(&solo, &path, [256, 256]);
    let straddling = batched_bytes(&solo, &path, [200, 300]);
    eprintln!(
        "bytes read: whole {whole_bytes}, aligned batches {aligned} ({:.3}x), straddling batches {straddling} ({:.3}x)",
        aligned as f64 / whole_bytes as f64,
        straddling as f64 / whole_bytes as f64
    );
    assert!(
        (aligned as f64) < 1.05 * whole_bytes as f64,
        "aligned: {aligned} vs whole {whole_bytes}"
    );
    assert!(
        (straddling as f64) < 1.6 * whole_bytes as f64,
        "straddling: {straddling} vs whole {whole_bytes}"
    );
}

fn solo_ref(c: &Comm) -> &Comm {
    c
}
