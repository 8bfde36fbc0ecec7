//! A file as HDF5's sec2 driver handles it: `pread`/`pwrite` looping over short transfers and
//! `EINTR`, zeros for reads past the end of the file, the end of address space (EOA) and of
//! file (EOF) tracked, the file extended or cut to the EOA on truncate, and `flock` locks.
//! Raw data may also go through a second, `O_DIRECT` descriptor (`direct=on`), staged through
//! one aligned bounce buffer, or be cut into `block`-sized pieces moved by `threads` workers.

use crate::config::{Config, ALIGN};
use crate::plan;
use crate::watch;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// Bytes of consecutive small raw writes not yet in the file: `bytes` belong at `at`.
#[derive(Default)]
struct Held {
    at: u64,
    bytes: Vec<u8>,
    /// Whether their writeback is started once written (`writeback=on`).
    writeback: bool,
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

/// A zeroed buffer aligned for O_DIRECT.
struct AlignedBuffer {
    ptr: *mut u8,
    len: usize,
}

// The buffer is owned by one file, used by one thread at a time (HDF5 serialises calls).
unsafe impl Send for AlignedBuffer {}

impl AlignedBuffer {
    fn new(len: usize) -> io::Result<AlignedBuffer> {
        let layout = std::alloc::Layout::from_size_align(len, ALIGN)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(io::Error::from(io::ErrorKind::OutOfMemory));
        }
        Ok(AlignedBuffer { ptr, len })
    }

    fn slice(&mut self, len: usize) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len.min(self.len)) }
    }
}

impl Drop for AlignedBuffer {
    fn drop(&mut self) {
        let layout =
            std::alloc::Layout::from_size_align(self.len, ALIGN).expect("checked at allocation");
        unsafe { std::alloc::dealloc(self.ptr, layout) };
    }
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

/// Runs `work(piece_start, piece_end)` over the `block`-sized pieces of `0..len` on up to
/// `threads` workers (in order on this thread when one would do); the first error wins.
/// Returns the number of workers used. Even on one thread a large transfer goes in pieces:
/// the kernel copies a 1 GiB pwrite into the page cache markedly slower than 64 MiB ones.
pub fn in_pieces(
    len: usize,
    block: usize,
    threads: usize,
    work: impl Fn(usize, usize) -> io::Result<()> + Sync,
) -> io::Result<usize> {
    let count = len.div_ceil(block.max(1));
    let workers = threads.min(count);
    if workers <= 1 {
        for i in 0..count {
            work(i * block, ((i + 1) * block).min(len))?;
        }
        return Ok(1);
    }
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        return Ok(());
                    }
                    work(i * block, ((i + 1) * block).min(len))?;
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err(io::Error::other("worker panicked")))
        })?;
        Ok(workers)
    })
}

/// Advises the kernel to back the whole 2 MiB pages inside `len` bytes at `start` with huge
/// pages (the kernel then copies file data into them markedly faster, with fewer TLB misses).
/// Only advice: where transparent huge pages are off, nothing changes.
pub fn advise_huge_pages(start: *const u8, len: usize) {
    const HUGE: usize = 2 << 20;
    let first = (start as usize).next_multiple_of(HUGE);
    let end = (start as usize + len) / HUGE * HUGE;
    if end > first {
        // madvise only changes how the pages are backed, never their contents.
        unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE) };
    }
}

/// A second descriptor on `name` with O_DIRECT, for cuFile.
pub fn open_direct(name: &str, write: bool) -> io::Result<OwnedFd> {
    let path = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let access = if write { libc::O_RDWR } else { libc::O_RDONLY };
    open_fd(&path, access | libc::O_CLOEXEC | libc::O_DIRECT)
}

/// Writes smaller than this start their writeback together (`PosixFile::batch_writeback`).
const WRITEBACK_BATCH: u64 = 1 << 20;

/// Raw writes smaller than this that continue the previous one are held and go to the file
/// together, `HELD_PIECE` bytes at a time, ending on multiples of it. Linux copies into its page
/// cache several times slower in small pieces than in large aligned ones: two processes each
/// writing 256 MiB took 0.45-1.0 s in 1 MiB pieces and 0.07-0.2 s in 8 MiB pieces (6.18, ext4),
/// and a compressed tile's chunks are a few hundred KiB each.
const HELD_BELOW: usize = 4 << 20;
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
fn allocates_ahead(fd: i32) -> bool {
    const EXT4: i64 = 0xEF53;
    const XFS: i64 = 0x5846_5342;
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    unsafe { libc::fstatfs(fd, &mut st) == 0 && matches!(st.f_type as i64, EXT4 | XFS) }
}

/// Asks the kernel to start writing `len` bytes at `addr` to disk, without waiting. Only a
/// hint: a file system that cannot is no error (the caller's fsync still makes it durable).
fn start_writeback(fd: i32, addr: u64, len: usize) {
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

    /// Tells the file that every allocation in it starts on a multiple of `ALIGN` (a compressed
    /// subfile's): the bytes from a raw write's end to the next such boundary then belong to
    /// nothing, and a small write starting at that boundary is held with the one before, the
    /// gap between them written as zeros. Aligned chunks are otherwise each a write of its own.
    pub fn gaps_are_padding(&mut self) {
        self.padded = true;
    }

    /// Whether a raw write at `addr` continues one that ended at `end`: right there, or at the
    /// next `ALIGN` boundary when gaps up to it are padding.
    fn continues(&self, end: u64, addr: u64) -> bool {
        let align = ALIGN as u64;
        end == addr || (self.padded && addr > end && addr == end.next_multiple_of(align))
    }

    /// Gives the `len` bytes at `addr` their blocks before they are written, where the file
    /// system allocates ahead (`allocates_ahead`), the write is large and nothing syncs the
    /// file soon (`synced`: its writeback starts as it is written, which gained nothing from
    /// this). Only a hint: a failure (a full disk, say) is the write's to report.
    fn allocate_unsynced(&self, addr: u64, len: usize, synced: bool) {
        if self.allocates && !synced && len >= ALLOCATE_FROM {
            let (at, len) = (addr as libc::off_t, len as libc::off_t);
            unsafe { libc::fallocate(self.raw_fd(), 0, at, len) };
        }
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

    /// Keeps `buf`, bound for `addr` and continuing the raw write that ended at `from` (right
    /// there, or past padding: `continues`), with zeros for that padding, and writes what is
    /// held up to the last multiple of `HELD_PIECE` it now reaches.
    fn hold(&mut self, from: u64, addr: u64, buf: &[u8], writeback: bool) -> io::Result<()> {
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
    fn write_out(&mut self, at: u64, n: usize) -> io::Result<()> {
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
    fn batch_writeback(&mut self, start: u64, end: u64) {
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

    /// O_DIRECT read: aligned pieces read into the bounce buffer, the requested bytes copied out.
    fn read_direct(&mut self, addr: u64, buf: &mut [u8]) -> io::Result<()> {
        let (dfd, bounce) = self.direct.as_mut().expect("direct descriptor");
        let len = buf.len() as u64;
        let (start, end) = plan::aligned_span(addr, len, ALIGN as u64);
        for (p0, p1) in plan::pieces(start, end, bounce.len as u64) {
            let staged = bounce.slice((p1 - p0) as usize);
            let n = pread_full(dfd.as_raw_fd(), p0, staged)?;
            staged[n..].fill(0);
            if let Some((from, to, count)) = plan::overlap(p0, p1, addr, len) {
                buf[to..to + count].copy_from_slice(&staged[from..from + count]);
            }
            self.stats.direct_pieces += 1;
        }
        Ok(())
    }

    /// O_DIRECT write: each aligned piece staged in the bounce buffer, edge blocks the request
    /// covers only partly read first so their other bytes survive.
    fn write_direct(&mut self, addr: u64, buf: &[u8]) -> io::Result<()> {
        let (dfd, bounce) = self.direct.as_mut().expect("direct descriptor");
        let len = buf.len() as u64;
        let (start, end) = plan::aligned_span(addr, len, ALIGN as u64);
        for (p0, p1) in plan::pieces(start, end, bounce.len as u64) {
            let staged = bounce.slice((p1 - p0) as usize);
            let (from, to, count) =
                plan::overlap(p0, p1, addr, len).expect("pieces of the span overlap it");
            if count < staged.len() {
                let n = pread_full(dfd.as_raw_fd(), p0, staged)?;
                staged[n..].fill(0);
            }
            staged[from..from + count].copy_from_slice(&buf[to..to + count]);
            pwrite_full(dfd.as_raw_fd(), p0, staged)?;
            // The file now reaches the aligned end: truncate trims it back to the EOA.
            self.eof = self.eof.max(p1);
            self.stats.direct_pieces += 1;
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn create(path: &std::path::Path) -> PosixFile {
        let mode = OpenMode {
            write: true,
            create: true,
            truncate: true,
            exclusive: false,
        };
        PosixFile::open(path.to_str().unwrap(), mode).unwrap()
    }

    #[test]
    fn small_writes_start_their_writeback_in_batches_of_whole_pages() {
        let d = tempfile::tempdir().unwrap();
        let mut f = create(&d.path().join("f"));
        let config = Config {
            writeback: true,
            ..Config::default()
        };
        // 30000 chunks of 100 bytes, one after the other: about 2.9 MiB, each chunk's
        // writeback batched whether it was held or not.
        let chunk: Vec<u8> = (0..100u8).collect();
        for i in 0..30000u64 {
            f.raw_end = u64::MAX;
            f.write_raw(i * 100, &chunk, &config).unwrap();
        }
        // One writeback a MiB, not one a chunk.
        assert_eq!(f.stats.writebacks, 2);
        assert_eq!(f.unsubmitted.map(|(lo, _)| lo % ALIGN as u64), Some(0));
        let mut back = vec![0u8; 3_000_000];
        f.read_raw(0, &mut back, &config).unwrap();
        assert!(back.chunks(100).all(|c| c == &chunk[..]));
        // Held, the same chunks start one writeback when they are written together.
        for i in 0..30000u64 {
            f.write_raw(3_000_000 + i * 100, &chunk, &config).unwrap();
        }
        assert_eq!(f.stats.writebacks, 2);
        f.write_held().unwrap();
        assert_eq!(f.stats.writebacks, 3);
        // A large write starts one writeback a piece.
        let big = vec![7u8; 4 << 20];
        let config = Config {
            block: 1 << 20,
            ..config
        };
        f.write_raw(8 << 20, &big, &config).unwrap();
        assert_eq!(f.stats.writebacks, 3 + 4);
    }

    #[test]
    fn small_writes_in_a_row_reach_the_file_together_on_8_mib_boundaries() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let mut f = create(&path);
        let config = Config::default();
        let on_disk = || std::fs::metadata(&path).unwrap().len();
        // Chunks of 300 KB from byte 4096, as a compressed tile's: the first is written at
        // once (nothing before it to continue), the rest are held until their bytes reach
        // 8 MiB, then written up to there; the remainder stays held.
        let chunk = |i: u64| vec![(i % 251) as u8; 300_000];
        let at = |i: u64| 4096 + i * 300_000;
        f.write_raw(at(0), &chunk(0), &config).unwrap();
        assert_eq!(on_disk(), at(1));
        let mut i = 1;
        while at(i + 1) <= 8 << 20 {
            f.write_raw(at(i), &chunk(i), &config).unwrap();
            i += 1;
        }
        assert_eq!(on_disk(), at(1), "held below the first 8 MiB boundary");
        f.write_raw(at(i), &chunk(i), &config).unwrap();
        assert_eq!(
            on_disk(),
            8 << 20,
            "written up to the boundary, the rest held"
        );
        assert_eq!(f.eof, at(i + 1), "the EOF counts what is held");
        // A write elsewhere (metadata) writes what is held first; so does a read.
        f.write_at(0, b"head").unwrap();
        assert_eq!(on_disk(), at(i + 1));
        for j in i + 1..i + 4 {
            f.write_raw(at(j), &chunk(j), &config).unwrap();
        }
        let mut back = vec![0u8; (at(i + 4) - at(0)) as usize];
        f.read_raw(at(0), &mut back, &config).unwrap();
        for j in 0..i + 4 {
            let k = (at(j) - at(0)) as usize;
            assert!(back[k..k + 300_000] == chunk(j)[..], "chunk {j}");
        }
        // Dropping the file (HDF5's close writes them first, and says if it fails) writes
        // them too.
        for j in i + 4..i + 6 {
            f.write_raw(at(j), &chunk(j), &config).unwrap();
        }
        assert_eq!(on_disk(), at(i + 4));
        drop(f);
        assert_eq!(on_disk(), at(i + 6));
    }

    /// Chunks each starting on a 4 KiB boundary, as in a compressed subfile: held together
    /// across the padding between them only where the file was told the gaps are padding
    /// (elsewhere a gap may be someone else's bytes), the padding written as zeros.
    #[test]
    fn aligned_small_writes_are_held_across_padding_only_where_gaps_are_padding() {
        let d = tempfile::tempdir().unwrap();
        let config = Config::default();
        let chunk = |i: u64| vec![(i % 251) as u8 + 1; 300_000];
        let at = |i: u64| 4096 + i * 303_104; // 300 000 bytes rounded up to 4 KiB
        for padded in [false, true] {
            let path = d.path().join(format!("f{padded}"));
            std::fs::write(&path, vec![0xeeu8; 4096 * 1000]).unwrap();
            let mut f = PosixFile::open(
                path.to_str().unwrap(),
                OpenMode {
                    write: true,
                    ..Default::default()
                },
            )
            .unwrap();
            if padded {
                f.gaps_are_padding();
            }
            for i in 0..10 {
                f.write_raw(at(i), &chunk(i), &config).unwrap();
            }
            let written = |f: &PosixFile| f.held.bytes.is_empty();
            match padded {
                true => assert!(!written(&f), "held across the padding"),
                false => assert!(written(&f), "a gap that is not padding ends what is held"),
            }
            f.write_held().unwrap();
            drop(f);
            let back = std::fs::read(&path).unwrap();
            for i in 0..10 {
                let a = at(i) as usize;
                assert!(back[a..a + 300_000] == chunk(i)[..], "chunk {i}");
            }
            for i in 0..9 {
                let gap = &back[at(i) as usize + 300_000..at(i + 1) as usize];
                match padded {
                    true => assert!(gap.iter().all(|&b| b == 0), "padding {i} zeroed"),
                    false => assert!(gap.iter().all(|&b| b == 0xee), "gap {i} untouched"),
                }
            }
        }
    }

    /// The flags of the extents holding the `len` bytes at `start` of `fd`'s file (FIEMAP).
    fn extent_flags(fd: i32, start: u64, len: u64) -> Vec<u32> {
        const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
        #[repr(C)]
        #[derive(Clone, Copy, Default)]
        struct Extent {
            logical: u64,
            physical: u64,
            length: u64,
            reserved64: [u64; 2],
            flags: u32,
            reserved: [u32; 3],
        }
        #[repr(C)]
        #[derive(Default)]
        struct Fiemap {
            start: u64,
            length: u64,
            flags: u32,
            mapped: u32,
            count: u32,
            reserved: u32,
            extents: [Extent; 32],
        }
        let mut map = Fiemap {
            start,
            length: len,
            count: 32,
            ..Default::default()
        };
        let got = unsafe { libc::ioctl(fd, FS_IOC_FIEMAP, &mut map as *mut Fiemap) };
        assert_eq!(got, 0, "{}", io::Error::last_os_error());
        map.extents[..map.mapped as usize]
            .iter()
            .map(|e| e.flags)
            .collect()
    }

    /// On ext4 and XFS, a large unsynced write finds its blocks allocated (`fallocate`: its
    /// extents are unwritten, not delayed), a small one does not, and both read back.
    #[test]
    fn large_unsynced_writes_have_their_blocks_allocated_first_where_the_system_can() {
        const DELALLOC: u32 = 0x4;
        const UNWRITTEN: u32 = 0x800;
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let mut f = create(&path);
        if !f.allocates {
            eprintln!("skipped: {} is not on ext4 or XFS", d.path().display());
            return;
        }
        let config = Config::default();
        assert!(!config.writeback, "unsynced");
        let big: Vec<u8> = (0..4u32 << 20).map(|i| (i % 253) as u8).collect();
        f.write_raw(0, &big, &config).unwrap();
        let flags = extent_flags(f.raw_fd(), 0, big.len() as u64);
        assert!(!flags.is_empty());
        assert!(
            flags
                .iter()
                .all(|&x| x & UNWRITTEN != 0 && x & DELALLOC == 0),
            "{flags:x?}"
        );
        let small = vec![9u8; 64 << 10];
        let at = 64 << 20;
        f.write_raw(at, &small, &config).unwrap();
        let flags = extent_flags(f.raw_fd(), at, small.len() as u64);
        assert!(flags.iter().all(|&x| x & UNWRITTEN == 0), "{flags:x?}");
        let mut back = vec![0u8; big.len()];
        f.read_at(0, &mut back).unwrap();
        assert!(back == big);
        let mut back = vec![0u8; small.len()];
        f.read_at(at, &mut back).unwrap();
        assert!(back == small);
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            at + small.len() as u64
        );
    }

    #[test]
    fn writes_read_back_and_reads_past_the_end_are_zero() {
        let d = tempfile::tempdir().unwrap();
        let mut f = create(&d.path().join("f"));
        f.write_at(10, b"hello").unwrap();
        assert_eq!(f.eof, 15);
        let mut buf = [0xffu8; 20];
        f.read_at(8, &mut buf).unwrap();
        assert_eq!(&buf[..7], b"\0\0hello");
        assert!(buf[7..].iter().all(|&b| b == 0), "past EOF reads as zeros");
    }

    #[test]
    fn truncate_sets_the_file_size_to_the_eoa() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let mut f = create(&path);
        f.write_at(0, &[1u8; 100]).unwrap();
        f.eoa = 40;
        f.truncate_to_eoa().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 40);
        f.eoa = 4096;
        f.truncate_to_eoa().unwrap();
        assert_eq!(
            (std::fs::metadata(&path).unwrap().len(), f.eof),
            (4096, 4096)
        );
    }

    #[test]
    fn open_follows_the_hdf5_flags() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let name = path.to_str().unwrap();
        assert_eq!(
            PosixFile::open(name, OpenMode::default())
                .err()
                .unwrap()
                .kind(),
            io::ErrorKind::NotFound
        );
        drop(create(&path));
        let excl = OpenMode {
            write: true,
            create: true,
            exclusive: true,
            truncate: false,
        };
        assert_eq!(
            PosixFile::open(name, excl).err().unwrap().kind(),
            io::ErrorKind::AlreadyExists
        );
        let ro = PosixFile::open(name, OpenMode::default()).unwrap();
        assert!(
            unsafe { libc::write(ro.raw_fd(), b"x".as_ptr().cast(), 1) } < 0,
            "read-only"
        );
    }

    #[test]
    fn direct_and_parallel_raw_io_match_plain_io_byte_for_byte() {
        let d = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mode = OpenMode {
            write: true,
            create: true,
            truncate: true,
            exclusive: false,
        };
        let parallel = Config {
            block: 4096,
            threads: 4,
            ..Config::default()
        };
        let mut images = Vec::new();
        for (k, direct) in [false, true].into_iter().enumerate() {
            let path = d.path().join(format!("f{k}"));
            let mut f =
                PosixFile::open_with(path.to_str().unwrap(), mode, direct, 64 << 10).unwrap();
            // Unaligned pieces, overlapping rewrites, a hole, writes past the end.
            f.write_raw(10, &data[..70_000], &parallel).unwrap();
            // The route taken shows in the counts: O_DIRECT pieces, or transfers over workers.
            assert_eq!(
                (f.stats.direct_pieces > 0, f.stats.split_transfers > 0),
                (direct, !direct)
            );
            f.write_raw(5000, &data[100..9000], &parallel).unwrap();
            f.write_raw(250_001, &data[..33_333], &parallel).unwrap();
            f.eoa = 283_334;
            let mut back = vec![1u8; 283_400];
            f.read_raw(0, &mut back, &parallel).unwrap();
            f.truncate_to_eoa().unwrap();
            assert_eq!(std::fs::metadata(&path).unwrap().len(), 283_334);
            images.push(back);
        }
        assert_eq!(images[0], images[1]);
        let image = &images[0];
        assert_eq!(&image[5000..13_900], &data[100..9000]);
        assert_eq!(&image[10..5000], &data[..4990]);
        assert!(
            image[70_010..250_001].iter().all(|&b| b == 0),
            "the hole reads as zeros"
        );
        assert!(
            image[283_334..].iter().all(|&b| b == 0),
            "past the end reads as zeros"
        );
    }

    #[test]
    fn an_exclusive_lock_excludes_a_second_one() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let a = create(&path);
        let b = PosixFile::open(path.to_str().unwrap(), OpenMode::default()).unwrap();
        a.lock(true).unwrap();
        assert!(b.lock(false).is_err());
        a.unlock().unwrap();
        b.lock(false).unwrap();
    }
}
