//! Raw data through a second, O_DIRECT descriptor, staged through one aligned bounce buffer.

use super::{open_fd, pread_full, pwrite_full, PosixFile};
use crate::config::ALIGN;
use crate::plan;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// A zeroed buffer aligned for O_DIRECT.
pub(super) struct AlignedBuffer {
    ptr: *mut u8,
    pub(super) len: usize,
}

// The buffer is owned by one file, used by one thread at a time (HDF5 serialises calls).
unsafe impl Send for AlignedBuffer {}

impl AlignedBuffer {
    pub(super) fn new(len: usize) -> io::Result<AlignedBuffer> {
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

/// A second descriptor on `name` with O_DIRECT, for cuFile.
pub fn open_direct(name: &str, write: bool) -> io::Result<OwnedFd> {
    let path = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let access = if write { libc::O_RDWR } else { libc::O_RDONLY };
    open_fd(&path, access | libc::O_CLOEXEC | libc::O_DIRECT)
}

impl PosixFile {
    /// O_DIRECT read: aligned pieces read into the bounce buffer, the requested bytes copied out.
    pub(super) fn read_direct(&mut self, addr: u64, buf: &mut [u8]) -> io::Result<()> {
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
    pub(super) fn write_direct(&mut self, addr: u64, buf: &[u8]) -> io::Result<()> {
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
}
