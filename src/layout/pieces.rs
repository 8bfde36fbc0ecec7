//! Large reads split into pieces over a few threads. One thread copying from the page cache
//! into a fresh buffer (taking a page fault per 4 KiB) reaches about half of what the memory
//! system gives two; a rank alone on a node should use the node's cores.

use crate::platform::device::io_threads;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Bytes per piece of a parallel read.
const PIECE: usize = 8 << 20;

/// Fills all of `buf` from `file` at byte `at`, in `PIECE`-sized pieces over up to
/// `io_threads()` threads; a short file is an `UnexpectedEof` error.
pub fn read_exact_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<()> {
    if buf.len() <= PIECE {
        return file.read_exact_at(buf, at);
    }
    read_exact_at_over(file, buf, at, io_threads())
}

fn read_exact_at_over(file: &File, buf: &mut [u8], at: u64, threads: usize) -> io::Result<()> {
    let base = buf.as_mut_ptr() as usize;
    crate::platform::device::in_pieces(buf.len(), PIECE, threads, |a, b| {
        // Each piece is a disjoint part of `buf`, which outlives the workers.
        let part = unsafe { std::slice::from_raw_parts_mut((base + a) as *mut u8, b - a) };
        file.read_exact_at(part, at + a as u64)
    })
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parallel_read_returns_the_bytes_of_a_plain_one_and_a_short_file_is_an_error() {
        let dir = std::env::temp_dir().join(format!("h5tile-pieces-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bytes.bin");
        let data: Vec<u8> = (0..(3 * PIECE + 12345))
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        std::fs::write(&path, &data).unwrap();
        let file = File::open(&path).unwrap();
        let at = 777;
        for threads in [1, 3] {
            let mut got = vec![0u8; data.len() - at];
            read_exact_at_over(&file, &mut got, at as u64, threads).unwrap();
            assert!(
                got == data[at..],
                "read on {threads} threads differs from the file"
            );
            let mut past = vec![0u8; data.len()];
            let err = read_exact_at_over(&file, &mut past, at as u64, threads).unwrap_err();
            assert_eq!(
                err.kind(),
                io::ErrorKind::UnexpectedEof,
                "{threads} threads"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
