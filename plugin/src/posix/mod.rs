//! A file as HDF5's sec2 driver handles it: `pread`/`pwrite` looping over short transfers and
//! `EINTR`, zeros for reads past the end of the file, the end of address space (EOA) and of
//! file (EOF) tracked, the file extended or cut to the EOA on truncate, and `flock` locks.
//! Raw data may also go through a second, `O_DIRECT` descriptor (`direct=on`), staged through
//! one aligned bounce buffer, or be cut into `block`-sized pieces moved by `threads` workers.
//!
//! `held` keeps small raw writes to reach the file together (and starts their writeback),
//! `direct` moves raw data through the O_DIRECT descriptor, `pieces` cuts large transfers
//! over worker threads.

mod direct;
mod held;
mod pieces;
#[cfg(test)]
mod tests;

pub use direct::open_direct;
pub use pieces::{advise_huge_pages, in_pieces};

use crate::config::Config;
use crate::watch;
use direct::AlignedBuffer;
use held::{allocates_ahead, start_writeback, Held, HELD_BELOW, WRITEBACK_BATCH};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::FileExt;

/// How a file is opened, from HDF5's `H5F_ACC_*` flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenMode {
    pub write: bool,
    pub create: bool,
    pub truncate: bool,
    pub exclusive: bool,
}

pub struct PosixFile {
    fd: OwnedFd,
    pub eoa: u64,
    pub eof: u64,
    pub device: u64,
    pub inode: u64,
    /// The O_DIRECT descriptor and its bounce buffer, with `direct=on`.
    direct: Option<(OwnedFd, AlignedBuffer)>,
    /// What the raw-data routes did, for the debug log and the tests.
    pub stats: RawStats,
    /// A file system without locks (`flock` failing with ENOSYS) is no error (see `locking`).
    pub ignore_disabled_locks: bool,
    /// Bytes written by small writes whose writeback has not been started yet (`batch_writeback`).
    unsubmitted: Option<(u64, u64)>,
    /// Small raw writes, each continuing the one before, held to reach the file together
    /// (`hold`).
    held: Held,
    /// Where the last raw write ended: a small write starting there is held.
    raw_end: u64,
    /// Every allocation in the file starts on a multiple of `ALIGN` (`gaps_are_padding`).
    padded: bool,
    /// The file system gives a range its blocks with `fallocate` (`allocates_ahead`).
    allocates: bool,
}

/// Counts of raw-data transfers by route.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawStats {
    /// Aligned pieces moved through the O_DIRECT descriptor.
    pub direct_pieces: u64,
    /// Transfers cut into `block` pieces and moved by more than one worker.
    pub split_transfers: u64,
    /// Writebacks started early (`writeback=on`): one a piece of a large write, one a batch of
    /// small ones.
    pub writebacks: u64,
}

fn open_fd(path: &CString, flags: i32) -> io::Result<OwnedFd> {
    let fd = unsafe { libc::open(path.as_ptr(), flags, 0o666 as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `fd` as a `File` that does not close it when dropped, for `FileExt`'s positioned calls.
fn borrowed(fd: i32) -> std::mem::ManuallyDrop<std::fs::File> {
    // SAFETY: the caller's descriptor outlives the call; ManuallyDrop never closes it.
    std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// `pread` until `buf` is full or the file ends; returns the bytes read.
fn pread_full(fd: i32, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
    let file = borrowed(fd);
    let mut done = 0usize;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], addr + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// `pwrite` all of `buf` (a write of 0 bytes is `WriteZero`).
fn pwrite_full(fd: i32, addr: u64, buf: &[u8]) -> io::Result<()> {
    borrowed(fd).write_all_at(buf, addr)
}

/// `pwrite_full`, but where this thread's watch wants the host memory it writes
/// (`watch::host_watched`), in pieces of `watch::WATCHED_PIECE`, each shown to it right after
/// its copy into the page cache, while it is in the core's cache.
fn pwrite_watched(fd: i32, addr: u64, buf: &[u8]) -> io::Result<()> {
    if !watch::host_watched() {
        return pwrite_full(fd, addr, buf);
    }
    let mut at = addr;
    for piece in buf.chunks(watch::WATCHED_PIECE) {
        pwrite_full(fd, at, piece)?;
        watch::host_written(piece);
        at += piece.len() as u64;
    }
    Ok(())
}

impl PosixFile {
    pub fn open(name: &str, mode: OpenMode) -> io::Result<PosixFile> {
        PosixFile::open_with(name, mode, false, 0)
    }

    /// Opens `name`; with `direct`, also a second descriptor with O_DIRECT for raw data and a
    /// bounce buffer of `bounce` bytes.
    pub fn open_with(
        name: &str,
        mode: OpenMode,
        direct: bool,
        bounce: usize,
    ) -> io::Result<PosixFile> {
        let path = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let access = if mode.write {
            libc::O_RDWR
        } else {
            libc::O_RDONLY
        } | libc::O_CLOEXEC;
        let mut flags = access;
        if mode.truncate {
            flags |= libc::O_TRUNC;
        }
        if mode.create {
            flags |= libc::O_CREAT;
        }
        if mode.exclusive {
            flags |= libc::O_EXCL;
        }
        let fd = open_fd(&path, flags)?;
        let allocates = mode.write && allocates_ahead(fd.as_raw_fd());
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
            return Err(io::Error::last_os_error());
        }
        let direct = match direct {
            false => None,
            true => {
                let dfd = open_fd(&path, access | libc::O_DIRECT).map_err(|e| {
                    match e.raw_os_error() {
                        Some(libc::EINVAL) => io::Error::new(
                            e.kind(),
                            "the file system does not support O_DIRECT (direct=on)",
                        ),
                        _ => e,
                    }
                })?;
                Some((dfd, AlignedBuffer::new(bounce)?))
            }
        };
        Ok(PosixFile {
            fd,
            eoa: 0,
            eof: st.st_size as u64,
            device: st.st_dev,
            inode: st.st_ino,
            direct,
            stats: RawStats::default(),
            ignore_disabled_locks: false,
            unsubmitted: None,
            held: Held::default(),
            raw_end: u64::MAX,
            padded: false,
            allocates,
        })
    }

    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Fills `buf` from `addr`; bytes past the end of the file read as zero. Bytes held
    /// (`write_held`) are not seen.
    pub fn read_at(&self, addr: u64, buf: &mut [u8]) -> io::Result<()> {
        let n = pread_full(self.raw_fd(), addr, buf)?;
        buf[n..].fill(0);
        Ok(())
    }

    /// Writes all of `buf` at `addr`, extending the file as needed.
    pub fn write_at(&mut self, addr: u64, buf: &[u8]) -> io::Result<()> {
        self.write_held()?;
        pwrite_full(self.raw_fd(), addr, buf)?;
        self.eof = self.eof.max(addr + buf.len() as u64);
        Ok(())
    }

    /// Raw data: through the O_DIRECT descriptor with `direct=on`, else in `block`-sized
    /// pieces over `threads` workers.
    pub fn read_raw(&mut self, addr: u64, buf: &mut [u8], config: &Config) -> io::Result<()> {
        self.write_held()?;
        if self.direct.is_some() {
            return self.read_direct(addr, buf);
        }
        let fd = self.raw_fd();
        let base = buf.as_mut_ptr() as usize;
        let workers = in_pieces(buf.len(), config.block, config.threads, |a, b| {
            // Each worker fills its own disjoint part of `buf`.
            let part = unsafe { std::slice::from_raw_parts_mut((base + a) as *mut u8, b - a) };
            let n = pread_full(fd, addr + a as u64, part)?;
            part[n..].fill(0);
            Ok(())
        })?;
        self.stats.split_transfers += u64::from(workers > 1);
        Ok(())
    }

    pub fn write_raw(&mut self, addr: u64, buf: &[u8], config: &Config) -> io::Result<()> {
        if config.reserve {
            self.eof = self.eof.max(addr + buf.len() as u64);
            return Ok(());
        }
        if self.direct.is_some() {
            return self.write_direct(addr, buf);
        }
        let end = std::mem::replace(&mut self.raw_end, addr + buf.len() as u64);
        let follows = self.continues(end, addr);
        if follows && buf.len() < HELD_BELOW {
            return self.hold(end, addr, buf, config.writeback);
        }
        self.write_held()?;
        self.allocate_unsynced(addr, buf.len(), config.writeback);
        let fd = self.raw_fd();
        let small = buf.len() < WRITEBACK_BATCH as usize;
        let workers = in_pieces(buf.len(), config.block, config.threads, |a, b| {
            pwrite_watched(fd, addr + a as u64, &buf[a..b])?;
            if config.writeback && !small {
                start_writeback(fd, addr + a as u64, b - a);
            }
            Ok(())
        })?;
        if config.writeback && small {
            self.batch_writeback(addr, addr + buf.len() as u64);
        } else if config.writeback {
            self.stats.writebacks += buf.len().div_ceil(config.block.max(1)) as u64;
        }
        self.stats.split_transfers += u64::from(workers > 1);
        self.eof = self.eof.max(addr + buf.len() as u64);
        Ok(())
    }

    /// Makes the file exactly EOA bytes long (HDF5 calls this on flush and close).
    pub fn truncate_to_eoa(&mut self) -> io::Result<()> {
        self.write_held()?;
        if self.eoa != self.eof {
            if unsafe { libc::ftruncate(self.raw_fd(), self.eoa as libc::off_t) } < 0 {
                return Err(io::Error::last_os_error());
            }
            self.eof = self.eoa;
        }
        Ok(())
    }

    /// A non-blocking shared (read) or exclusive (write) lock. Where the file system has no
    /// locks, that is tolerated if `ignore_disabled_locks` says so (see `locking`).
    pub fn lock(&self, exclusive: bool) -> io::Result<()> {
        let op = if exclusive {
            libc::LOCK_EX
        } else {
            libc::LOCK_SH
        };
        self.flock(op | libc::LOCK_NB)
    }

    pub fn unlock(&self) -> io::Result<()> {
        self.flock(libc::LOCK_UN)
    }

    fn flock(&self, op: i32) -> io::Result<()> {
        if unsafe { libc::flock(self.raw_fd(), op) } < 0 {
            let e = io::Error::last_os_error();
            if !(self.ignore_disabled_locks && e.raw_os_error() == Some(libc::ENOSYS)) {
                return Err(e);
            }
        }
        Ok(())
    }
}

impl Drop for PosixFile {
    /// Bytes still held are written as a last resort: every caller writes them itself
    /// (`write_held`) where it can report a failure, so only a path already failing gets here.
    fn drop(&mut self) {
        let _ = self.write_held();
    }
}
