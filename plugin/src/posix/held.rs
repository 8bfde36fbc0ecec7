//! Small raw writes held to reach the file together, in large aligned pieces, with their
//! writeback started in batches, and blocks allocated ahead of large unsynced writes.

use super::{pwrite_full, PosixFile};
use crate::config::ALIGN;
use std::io;

/// Bytes of consecutive small raw writes not yet in the file: `bytes` belong at `at`.
#[derive(Default)]
pub(super) struct Held {
    pub(super) at: u64,
    pub(super) bytes: Vec<u8>,
    /// Whether their writeback is started once written (`writeback=on`).
    pub(super) writeback: bool,
}

/// Writes smaller than this start their writeback together (`PosixFile::batch_writeback`).
pub(super) const WRITEBACK_BATCH: u64 = 1 << 20;

/// Raw writes smaller than this that continue the previous one are held and go to the file
/// together, `HELD_PIECE` bytes at a time, ending on multiples of it. Linux copies into its page
/// cache several times slower in small pieces than in large aligned ones: two processes each
/// writing 256 MiB took 0.45-1.0 s in 1 MiB pieces and 0.07-0.2 s in 8 MiB pieces (6.18, ext4),
/// and a compressed tile's chunks are a few hundred KiB each.
pub(super) const HELD_BELOW: usize = 4 << 20;
const HELD_PIECE: u64 = 8 << 20;

/// Unsynced raw writes of at least this many bytes have their blocks allocated first
/// (`PosixFile::allocate_unsynced`).
const ALLOCATE_FROM: usize = 1 << 20;

/// Whether the file system behind `fd` allocates a range's blocks at once with `fallocate`
/// (ext4, XFS). Where it does, a large write into the page cache then finds its blocks
/// mapped instead of reserving each page's on the way (ext4's delayed allocation, taken
/// under the file's locks): two processes writing 512 MiB each into one file took 0.10-0.21 s
/// that way against 0.27-0.67 s, and into a file each 0.09-0.12 s against 0.13-0.16 s (Linux
/// 6.18, ext4). Elsewhere `fallocate` may be missing, or emulated by writing zeros.
pub(super) fn allocates_ahead(fd: i32) -> bool {
    const EXT4: i64 = 0xEF53;
    const XFS: i64 = 0x5846_5342;
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    unsafe { libc::fstatfs(fd, &mut st) == 0 && matches!(st.f_type as i64, EXT4 | XFS) }
}

/// Asks the kernel to start writing `len` bytes at `addr` to disk, without waiting. Only a
/// hint: a file system that cannot is no error (the caller's fsync still makes it durable).
pub(super) fn start_writeback(fd: i32, addr: u64, len: usize) {
    unsafe {
        libc::sync_file_range(
            fd,
            addr as libc::off64_t,
            len as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        );
    }
}

impl PosixFile {
    /// Tells the file that every allocation in it starts on a multiple of `ALIGN` (a compressed
    /// subfile's): the bytes from a raw write's end to the next such boundary then belong to
    /// nothing, and a small write starting at that boundary is held with the one before, the
    /// gap between them written as zeros. Aligned chunks are otherwise each a write of its own.
    pub fn gaps_are_padding(&mut self) {
        self.padded = true;
    }

    /// Whether a raw write at `addr` continues one that ended at `end`: right there, or at the
    /// next `ALIGN` boundary when gaps up to it are padding.
    pub(super) fn continues(&self, end: u64, addr: u64) -> bool {
        let align = ALIGN as u64;
        end == addr || (self.padded && addr > end && addr == end.next_multiple_of(align))
    }

    /// Gives the `len` bytes at `addr` their blocks before they are written, where the file
    /// system allocates ahead (`allocates_ahead`), the write is large and nothing syncs the
    /// file soon (`synced`: its writeback starts as it is written, which gained nothing from
    /// this). Only a hint: a failure (a full disk, say) is the write's to report.
    pub(super) fn allocate_unsynced(&self, addr: u64, len: usize, synced: bool) {
        if self.allocates && !synced && len >= ALLOCATE_FROM {
            let (at, len) = (addr as libc::off_t, len as libc::off_t);
            unsafe { libc::fallocate(self.raw_fd(), 0, at, len) };
        }
    }

    /// Keeps `buf`, bound for `addr` and continuing the raw write that ended at `from` (right
    /// there, or past padding: `continues`), with zeros for that padding, and writes what is
    /// held up to the last multiple of `HELD_PIECE` it now reaches.
    pub(super) fn hold(
        &mut self,
        from: u64,
        addr: u64,
        buf: &[u8],
        writeback: bool,
    ) -> io::Result<()> {
        let held_end = self.held.at + self.held.bytes.len() as u64;
        let continues = held_end == from && self.held.writeback == writeback;
        if !self.held.bytes.is_empty() && !continues {
            self.write_held()?;
        }
        if self.held.bytes.is_empty() {
            self.held.at = from;
            self.held.writeback = writeback;
            self.held.bytes.reserve(HELD_PIECE as usize + HELD_BELOW);
        }
        let padding = addr - (self.held.at + self.held.bytes.len() as u64);
        self.held
            .bytes
            .resize(self.held.bytes.len() + padding as usize, 0);
        self.held.bytes.extend_from_slice(buf);
        self.eof = self.eof.max(addr + buf.len() as u64);
        let at = self.held.at;
        let cut = (at + self.held.bytes.len() as u64) / HELD_PIECE * HELD_PIECE;
        if cut > at {
            let n = (cut - at) as usize;
            self.write_out(at, n)?;
            self.held.bytes.drain(..n);
            self.held.at = cut;
        }
        Ok(())
    }

    /// Writes every byte held (HDF5 closes and truncates a file, and reads or writes anything
    /// else in it, only after this).
    pub fn write_held(&mut self) -> io::Result<()> {
        let n = self.held.bytes.len();
        if n > 0 {
            self.write_out(self.held.at, n)?;
            self.held.bytes.clear();
        }
        Ok(())
    }

    /// Writes the first `n` bytes held, which belong at `at`.
    pub(super) fn write_out(&mut self, at: u64, n: usize) -> io::Result<()> {
        self.allocate_unsynced(at, n, self.held.writeback);
        pwrite_full(self.raw_fd(), at, &self.held.bytes[..n])?;
        if self.held.writeback {
            self.batch_writeback(at, at + n as u64);
        }
        Ok(())
    }

    /// Starts the writeback of small writes (compressed chunks, often a few hundred bytes) once
    /// together they span `WRITEBACK_BATCH`, and then only of whole pages: a page submitted on
    /// its own would go to disk again with the next small write into it, which may first have
    /// to wait for that writeback, and a syscall per chunk costs more than the chunk.
    pub(super) fn batch_writeback(&mut self, start: u64, end: u64) {
        let (lo, hi) = match self.unsubmitted {
            Some((lo, hi)) => (lo.min(start), hi.max(end)),
            None => (start, end),
        };
        if hi - lo < WRITEBACK_BATCH {
            self.unsubmitted = Some((lo, hi));
            return;
        }
        let page = ALIGN as u64;
        let (from, to) = (lo / page * page, hi / page * page);
        if to > from {
            start_writeback(self.raw_fd(), from, (to - from) as usize);
            self.stats.writebacks += 1;
        }
        self.unsubmitted = (hi > to).then_some((to, hi));
    }
}
