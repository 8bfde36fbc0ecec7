//! `pread` into memory whatever its alignment, at the kernel's full copying speed. The kernel
//! copies file data into a buffer at half its speed or less where the buffer's address and the
//! file offset differ modulo 64 (AMD EPYC VM: 5.8 GB/s at a difference of 16, 3.1 at 8, 11.7 at
//! 0), and a large `malloc` — a C, Fortran or numpy array — starts 16 bytes past a page, while
//! h5tile's tile bytes start on one. So a read whose two addresses differ is done a piece at a
//! time: read 0 to 63 bytes further into the piece, where both agree, then moved back while
//! the piece is still in the core's cache, and its last bytes read in place (10.0 GB/s at a
//! difference of 16, 9.9 at 8).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Bytes read and moved back at a time: small enough to stay in the core's cache.
pub(crate) const PIECE: usize = 256 << 10;

/// Below this, the move costs more than the misaligned copy.
const SMALL: usize = 16 << 10;

/// Reads `buf.len()` bytes of `file` at `at` into `buf`, as `read_exact_at`.
pub fn read_exact_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<()> {
    let shift = (at.wrapping_sub(buf.as_ptr() as u64) % 64) as usize;
    if shift == 0 || buf.len() < SMALL {
        return file.read_exact_at(buf, at);
    }
    let mut done = 0;
    for piece in buf.chunks_mut(PIECE) {
        let len = piece.len();
        let from = at + done as u64;
        if len <= shift {
            file.read_exact_at(piece, from)?;
        } else {
            // piece[shift..] and the file at `from` agree modulo 64.
            file.read_exact_at(&mut piece[shift..], from)?;
            piece.copy_within(shift.., 0);
            file.read_exact_at(&mut piece[len - shift..], from + (len - shift) as u64)?;
        }
        done += len;
    }
    Ok(())
}

/// Reads `len` bytes of `file` at `at` into `buf[..len]`, where the `buf[len..]` after them
/// (at least 63 bytes) may be overwritten: bytes the caller reads next (a chunk's next row,
/// contiguous in the buffer). A read whose two addresses differ modulo 64 then goes where they
/// agree, up to 63 bytes further into `buf`, and is moved back while it is in the core's cache:
/// one call, where `read_exact_at` needs a second for the piece's last bytes. Returns whether
/// bytes past `len` were overwritten.
pub fn read_exact_at_spilling(
    file: &File,
    buf: &mut [u8],
    len: usize,
    at: u64,
) -> io::Result<bool> {
    let shift = (at.wrapping_sub(buf.as_ptr() as u64) % 64) as usize;
    if shift == 0 || !(SMALL..=PIECE).contains(&len) || buf.len() < len + shift {
        read_exact_at(file, &mut buf[..len], at)?;
        return Ok(false);
    }
    file.read_exact_at(&mut buf[shift..shift + len], at)?;
    buf.copy_within(shift..shift + len, 0);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every difference modulo 64, pieces whole and cut, and a read past the end of the file.
    #[test]
    fn reads_land_where_a_plain_read_puts_them_at_every_alignment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bytes");
        let bytes: Vec<u8> = (0..3 * PIECE as u64 + 1000)
            .map(|k| (k * 7 + k / 251) as u8)
            .collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = File::open(&path).unwrap();
        let mut buf = vec![0u8; 2 * PIECE + 200];
        for (at, len) in [
            (0, 2 * PIECE + 100),
            (13, PIECE + 5),
            (4096, SMALL),
            (64, 100),
        ] {
            for offset in 0..64 {
                let dst = &mut buf[offset..offset + len];
                dst.fill(0);
                read_exact_at(&file, dst, at as u64).unwrap();
                assert!(
                    dst == &bytes[at..at + len],
                    "at {at}, {len} bytes, buffer +{offset}"
                );
            }
        }
        let past = read_exact_at(&file, &mut buf[5..5 + PIECE], 2 * PIECE as u64 + 2000);
        assert_eq!(past.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    }

    /// Rows read one after another into one buffer, each allowed to spill into the next row's
    /// place (the last one not): every alignment, rows short, long and too long to spill.
    #[test]
    fn spilling_reads_land_as_plain_reads_and_touch_only_what_follows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bytes");
        let bytes: Vec<u8> = (0..4 * PIECE as u64)
            .map(|k| (k * 13 + k / 97) as u8)
            .collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = File::open(&path).unwrap();
        for row in [100, SMALL, 32 << 10, PIECE, PIECE + 64] {
            let rows = 3;
            let mut buf = vec![0u8; rows * row + 200];
            for offset in 0..64 {
                buf.fill(0xEE);
                let end = offset + rows * row;
                let mut spilled = false;
                for r in 0..rows {
                    let at = (r * (row + 4096) + 7) as u64;
                    let start = offset + r * row;
                    // The last row's place ends the buffer the caller owns.
                    let room = if r + 1 < rows {
                        &mut buf[start..end]
                    } else {
                        &mut buf[start..start + row]
                    };
                    spilled |= read_exact_at_spilling(&file, room, row, at).unwrap();
                    assert!(
                        buf[start..start + row] == bytes[at as usize..at as usize + row],
                        "row {r} of {row} bytes, buffer +{offset}"
                    );
                }
                assert!(
                    buf[..offset].iter().all(|&b| b == 0xEE),
                    "before, +{offset}"
                );
                assert!(buf[end..].iter().all(|&b| b == 0xEE), "after, +{offset}");
                let shift = (7u64.wrapping_sub(buf.as_ptr() as u64 + offset as u64) % 64) as usize;
                let can = shift != 0 && (SMALL..=PIECE).contains(&row);
                assert_eq!(spilled, can, "{row} bytes, buffer +{offset}");
            }
        }
    }
}
