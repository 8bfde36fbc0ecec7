//! Large transfers cut into pieces over worker threads, and the memory advice they benefit from.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

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
