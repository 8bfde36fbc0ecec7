//! The summary the master records of each tile (block checksums, extremes), taken while its
//! bytes are written: beside the write for host memory, from the compat path's pieces for
//! device memory.

use super::LocalTile;
use crate::dtype::Dtype;
use crate::layout::checksums::{self, Summary, Summing};
use crate::platform::device::{watching_staged_writes, Buffer};
use crate::status::Result;
use std::cell::RefCell;
use std::rc::Rc;

/// Runs `write`, which writes `local`'s bytes, and returns with its result the summary the
/// master records of them (`checksums::Summary`). A large tile in host memory is summed on a
/// thread of its own meanwhile: the write waits on the disk or copies into the page cache
/// under the file's lock, the sums use another core. Device memory is summed where the
/// compat path stages it (`summed_from_staging`).
pub fn summarized<T>(
    dtype: Dtype,
    local: &LocalTile,
    write: impl FnOnce() -> Result<T>,
) -> Result<(T, Summary)> {
    let len = local.tile.volume() as usize * dtype.size();
    let bytes = match local.buf {
        Buffer::Host(bytes) => &bytes[..len],
        Buffer::Device(ptr, _) => return summed_from_staging(dtype, ptr.addr, len, write),
    };
    if bytes.len() < 4 * checksums::BLOCK_BYTES as usize {
        let written = write()?;
        return Ok((written, Summary::of(dtype, bytes)));
    }
    std::thread::scope(|scope| {
        let summary = scope.spawn(|| Summary::of(dtype, bytes));
        let written = write();
        let summary = summary
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        Ok((written?, summary))
    })
}

/// Runs `write`, which writes the `len` bytes of device memory at `addr`, summing them in
/// the compat path's pinned buffers as they pass on their way to the file. cuFile moves them
/// with no host copy: then, as when the pieces seen are not the tile's bytes in order, the
/// summary says "not checksummed".
pub fn summed_from_staging<T>(
    dtype: Dtype,
    addr: u64,
    len: usize,
    write: impl FnOnce() -> Result<T>,
) -> Result<(T, Summary)> {
    /// The device address the next piece must come from, and the sums so far (None once a
    /// piece came from elsewhere).
    type Seen = (u64, Option<Summing>);
    let seen: Rc<RefCell<Seen>> = Rc::new(RefCell::new((addr, Some(Summing::new(dtype)))));
    let to = seen.clone();
    let watch = Box::new(move |at: u64, bytes: &[u8]| {
        let (next, summing) = &mut *to.borrow_mut();
        match (at == *next, summing.as_mut()) {
            (true, Some(s)) => s.add(bytes),
            _ => *summing = None,
        }
        *next = at + bytes.len() as u64;
    });
    let written = watching_staged_writes(watch, write)?;
    let (next, summing) = seen.take();
    let summary = match (next == addr + len as u64, summing) {
        (true, Some(summing)) => summing.finish(),
        _ => Summary::default(),
    };
    Ok((written, summary))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::*;

    #[test]
    fn device_tiles_are_summed_from_the_compat_path_s_pieces_or_recorded_unchecksummed() {
        use h5tile_gds::staged_write;
        let bytes: Vec<u8> = (0..3 * checksums::BLOCK_BYTES as usize + 40)
            .map(|i| (i * 131 % 251) as u8)
            .collect();
        let (addr, len) = (0x7f00_0000_0000u64, bytes.len());
        let pieces = |cut: usize| {
            let mut at = addr;
            for piece in bytes.chunks(cut) {
                staged_write(at, piece);
                at += piece.len() as u64;
            }
        };
        let whole = Summary::of(Dtype::Float64, &bytes);
        // The compat path: pieces of any size, in order, from the tile's first byte.
        for cut in [3 << 20, 1 << 20, 999_999] {
            let write = || {
                pieces(cut);
                Ok(cut)
            };
            let (n, got) = summed_from_staging(Dtype::Float64, addr, len, write).unwrap();
            assert_eq!((n, &got), (cut, &whole), "pieces of {cut} bytes");
        }
        // cuFile: nothing staged, nothing summed.
        let (_, got) = summed_from_staging(Dtype::Float64, addr, len, || Ok(())).unwrap();
        assert_eq!(got, Summary::default());
        // Pieces that are not the tile's bytes in order are not trusted.
        let out_of_order = || {
            staged_write(addr + 8, &bytes[8..16]);
            staged_write(addr, &bytes[..8]);
            staged_write(addr + 16, &bytes[16..]);
            Ok(())
        };
        let (_, got) = summed_from_staging(Dtype::Float64, addr, len, out_of_order).unwrap();
        assert_eq!(got, Summary::default());
        let short = || {
            staged_write(addr, &bytes[..len - 8]);
            Ok(())
        };
        let (_, got) = summed_from_staging(Dtype::Float64, addr, len, short).unwrap();
        assert_eq!(got, Summary::default());
        // A failed write is the error, and leaves no watch behind.
        let failed = || -> Result<()> {
            staged_write(addr, &bytes);
            fail(H5TILE_ERR_IO, "disk full".to_string())
        };
        let e = summed_from_staging(Dtype::Float64, addr, len, failed).unwrap_err();
        assert_eq!((e.status, e.message.as_str()), (H5TILE_ERR_IO, "disk full"));
        staged_write(addr, &bytes); // no watch: nothing to panic in
    }
}
