//! Host memory the library fills itself (reads, staged snapshots): buffers that start on a
//! page. The kernel copies file data into a buffer that starts on a page markedly faster than
//! into one that starts a few bytes past it, where `malloc` puts large blocks (a 1 GiB read
//! from the page cache took about 20% longer 16 bytes past a page, and 2-4x as long 8 bytes
//! past, here).

/// Zeroed bytes from their own anonymous mapping (page-aligned, its whole 2 MiB pages advised
/// to be huge), of a fixed capacity; `len` of them in use.
pub struct PageBuffer {
    start: *mut u8,
    capacity: usize,
    len: usize,
}

// SAFETY: the mapping is owned by the buffer alone, like a Vec's allocation.
unsafe impl Send for PageBuffer {}

impl PageBuffer {
    /// A buffer of `capacity` bytes (none in use); panics if the mapping fails, as an
    /// allocation failure would.
    pub fn new(capacity: usize) -> PageBuffer {
        PageBuffer::try_new(capacity).unwrap_or_else(|e| {
            panic!("cannot map {capacity} bytes for a read buffer: {e}");
        })
    }

    /// `new` that reports a mapping the system refuses (no memory left) instead of panicking.
    pub fn try_new(capacity: usize) -> std::io::Result<PageBuffer> {
        if capacity == 0 {
            return Ok(PageBuffer {
                start: std::ptr::NonNull::dangling().as_ptr(),
                capacity,
                len: 0,
            });
        }
        // SAFETY: a new private anonymous mapping, owned by this buffer until drop.
        let start = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                capacity,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if start == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        h5tile_gds::advise_huge_pages(start as *const u8, capacity);
        Ok(PageBuffer {
            start: start.cast(),
            capacity,
            len: 0,
        })
    }

    /// Bytes it can hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Puts the first `len` bytes in use (they hold what was there: zeros, or earlier data).
    pub fn set_len(&mut self, len: usize) {
        assert!(
            len <= self.capacity,
            "{len} bytes in a buffer of {}",
            self.capacity
        );
        self.len = len;
    }
}

impl std::ops::Deref for PageBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` <= capacity bytes of the mapping, initialised (zero-filled by mmap).
        unsafe { std::slice::from_raw_parts(self.start, self.len) }
    }
}

impl std::ops::DerefMut for PageBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and borrowed mutably through the buffer alone.
        unsafe { std::slice::from_raw_parts_mut(self.start, self.len) }
    }
}

impl Drop for PageBuffer {
    fn drop(&mut self) {
        if self.capacity > 0 {
            // SAFETY: the mapping made in `new`, unmapped once.
            unsafe { libc::munmap(self.start.cast(), self.capacity) };
        }
    }
}

/// Whether every page of `bytes` is in memory already, as in a buffer the process has written
/// before; not so for one fresh from `malloc`, whose pages its first stores fault in (and the
/// kernel zeroes). Streaming stores suit only the first: measured on an Intel Xeon VM, a
/// compressed 1 GiB read into a fresh buffer took 0.28 s with them and 0.19 s without, into a
/// buffer read into before 0.11 s with them and 0.14 s without. False where it cannot tell.
pub fn resident(bytes: &[u8]) -> bool {
    if bytes.is_empty() {
        return true;
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let start = bytes.as_ptr() as usize / page * page;
    let end = (bytes.as_ptr() as usize + bytes.len()).div_ceil(page) * page;
    let mut pages = vec![0u8; (end - start) / page];
    // SAFETY: the range covers the pages of a live slice; `pages` has a byte for each.
    let r = unsafe { libc::mincore(start as *mut libc::c_void, end - start, pages.as_mut_ptr()) };
    r == 0 && pages.iter().all(|p| p & 1 != 0)
}

/// Copies `src` into `dst` (of the same length); a large copy (32 MiB or more) in 8 MiB
/// pieces over `threads` workers, since one core's copy is bound by its own loads and stores
/// (and, into a fresh buffer, a page fault per 4 KiB), well under what memory moves: a batch's
/// chunk into the caller's buffer, a snapshot's tile into staging memory.
pub fn copy_in_pieces(dst: &mut [u8], src: &[u8], threads: usize) {
    const PIECE: usize = 8 << 20;
    let threads = match src.len() >= 4 * PIECE {
        true => threads,
        false => 1,
    };
    if threads <= 1 {
        dst.copy_from_slice(src);
        return;
    }
    let pieces = std::sync::Mutex::new(
        dst.chunks_mut(PIECE)
            .zip(src.chunks(PIECE))
            .collect::<Vec<_>>(),
    );
    let work = || loop {
        let piece = pieces.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let Some((to, from)) = piece else { return };
        to.copy_from_slice(from);
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(work);
        }
        work();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_in_pieces_copies_every_byte() {
        let src: Vec<u8> = (0..(70 << 20) + 13).map(|i| (i * 7 % 251) as u8).collect();
        for threads in [1, 2, 3, 8] {
            let mut dst = vec![0u8; src.len()];
            copy_in_pieces(&mut dst, &src, threads);
            assert!(dst == src, "{threads} threads");
        }
    }

    #[test]
    fn a_buffer_starts_on_a_page_holds_zeros_then_what_was_written_and_keeps_its_capacity() {
        let mut b = PageBuffer::new(3 << 20);
        b.set_len(3 << 20);
        assert_eq!(b.as_ptr() as usize % 4096, 0);
        assert!(b.iter().all(|&x| x == 0));
        b[..5].copy_from_slice(b"abcde");
        b.set_len(2);
        assert_eq!(&b[..], b"ab");
        b.set_len(5);
        assert_eq!(&b[..], b"abcde");
        let empty = PageBuffer::new(0);
        assert!(empty.is_empty());
    }

    #[test]
    fn pages_not_yet_written_are_not_resident_and_written_ones_are() {
        let mut b = PageBuffer::new(8 << 20);
        b.set_len(8 << 20);
        assert!(!resident(&b[4096..4 << 20]));
        b[..4 << 20].fill(7);
        assert!(resident(&b[4096..4 << 20]));
        assert!(resident(&b[..0]));
        let v = [1u8; 100];
        assert!(resident(&v[3..50]));
    }

    #[test]
    #[should_panic(expected = "in a buffer of")]
    fn more_than_the_capacity_is_refused() {
        PageBuffer::new(4096).set_len(4097);
    }
}
