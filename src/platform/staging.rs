//! Staging memory for snapshot writes (`H5TILE_SNAPSHOT`): host memory the library owns, into
//! which a caller's tiles are copied so that the caller may change its buffers while the write
//! runs. One pool per process, bounded by a budget: the memory it holds (in use or kept for the
//! next snapshot) never exceeds the budget of the call asking for more. Buffers are kept and
//! reused rather than unmapped, so a solver checkpointing every few steps pays for the page
//! faults of its first snapshot only (first touch costs 3-5 times the copy itself).

use super::device::local_ranks;
use super::memory::PageBuffer;
use parking_lot::{Condvar, Mutex};
use std::sync::OnceLock;

/// The environment variable giving the budget when the options give none.
pub const BUDGET_VARIABLE: &str = "H5TILE_STAGING_BYTES";

/// Capacities are whole pages, so that buffers are reused across tiles of nearly equal size.
const PAGE: usize = 4096;

/// A pool of staging buffers; the process has one (`pool`), the tests their own.
pub struct Pool {
    state: Mutex<Held>,
    /// Signalled whenever a staged buffer comes back.
    returned: Condvar,
}

struct Held {
    /// Bytes of every buffer the pool made and has not unmapped, in use or not.
    bytes: usize,
    /// Bytes of the buffers in use.
    in_use: usize,
    /// Buffers not in use, kept for the next snapshot.
    free: Vec<PageBuffer>,
}

/// The process's pool.
pub fn pool() -> &'static Pool {
    static POOL: Pool = Pool::new();
    &POOL
}

/// A buffer of staging memory in use: its first `len` bytes hold a staged tile. It goes back to
/// its pool when dropped.
pub struct Staged(Option<PageBuffer>, &'static Pool);

impl Staged {
    pub fn bytes(&self) -> &[u8] {
        self.0.as_deref().unwrap_or_default()
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.0.as_deref_mut().unwrap_or_default()
    }

    /// The staging memory it holds, counted against the budget (a kept buffer reused may be
    /// larger than the tile).
    pub fn capacity(&self) -> usize {
        self.0.as_ref().map_or(0, |b| b.capacity())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(buf) = self.0.take() {
            let mut held = self.1.state.lock();
            held.in_use -= buf.capacity();
            held.free.push(buf);
            self.1.returned.notify_all();
        }
    }
}

/// The budget a write's options ask for: `option` when not 0, else `H5TILE_STAGING_BYTES`,
/// else the default (`default_budget`). An unreadable variable is an error naming it.
pub fn budget(option: u64) -> Result<usize, String> {
    if option != 0 {
        return Ok(usize::try_from(option).unwrap_or(usize::MAX));
    }
    match std::env::var(BUDGET_VARIABLE).as_deref().map(str::trim) {
        Err(_) | Ok("") => Ok(default_budget()),
        Ok(v) => parse_bytes(v).ok_or_else(|| {
            format!("{BUDGET_VARIABLE}={v}: expected a number of bytes (K, M, G suffixes allowed)")
        }),
    }
}

/// A number of bytes, with an optional binary suffix (K, M, G, T; "KiB" and "k" too).
fn parse_bytes(v: &str) -> Option<usize> {
    let v = v.trim();
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (number, suffix) = v.split_at(digits);
    let number: usize = number.parse().ok()?;
    let shift = match suffix.trim().to_ascii_uppercase().trim_end_matches("IB") {
        "" | "B" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return None,
    };
    number.checked_mul(1usize << shift)
}

/// The default budget: a quarter of the memory available when the process first snapshots,
/// shared among the node's ranks, and at least 64 MiB. A solver's field is usually a fraction
/// of its node's memory, so this holds a snapshot of it; where it does not, the part that does
/// not fit is written before the call returns.
pub fn default_budget() -> usize {
    static DEFAULT: OnceLock<usize> = OnceLock::new();
    *DEFAULT.get_or_init(|| {
        let available = mem_available().unwrap_or(4 << 30);
        (available / 4 / local_ranks()).max(64 << 20)
    })
}

/// `MemAvailable` of /proc/meminfo, in bytes.
fn mem_available() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

impl Pool {
    const fn new() -> Pool {
        Pool {
            state: Mutex::new(Held {
                bytes: 0,
                in_use: 0,
                free: Vec::new(),
            }),
            returned: Condvar::new(),
        }
    }

    /// A staging buffer of `len` bytes under `budget`, for a snapshot that already holds `mine`
    /// bytes of staging (the `capacity` of its buffers). Waits for other snapshots' buffers to
    /// come back where they hold the room; None where the buffer cannot fit beside `mine` even
    /// once every other snapshot has drained, or where the system has no memory for it (the
    /// caller then writes that tile from its own buffer before returning).
    pub fn stage(&'static self, len: usize, budget: usize, mine: usize) -> Option<Staged> {
        let capacity = len.div_ceil(PAGE) * PAGE;
        if capacity.saturating_add(mine) > budget {
            return None;
        }
        let mut pool = self.state.lock();
        // Wait while the buffers in use leave no room (budgets may differ from call to call:
        // a buffer kept from a larger one is reused only where it fits this one).
        while pool.in_use + capacity > budget {
            self.returned.wait(&mut pool);
        }
        let room = budget - pool.in_use;
        // The smallest buffer kept that holds it and fits the room.
        let kept = (pool.free.iter().enumerate())
            .filter(|(_, b)| (capacity..=room).contains(&b.capacity()))
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i);
        let mut buf = match kept {
            Some(i) => pool.free.swap_remove(i),
            None => {
                // Unmap kept buffers until a new one fits beside the rest.
                while pool.bytes + capacity > budget {
                    let Some(kept) = pool.free.pop() else { break };
                    pool.bytes -= kept.capacity();
                }
                let buf = PageBuffer::try_new(capacity).ok()?;
                pool.bytes += capacity;
                buf
            }
        };
        pool.in_use += buf.capacity();
        // Kept buffers beyond this call's budget go (a smaller budget than an earlier call's).
        while pool.bytes > budget {
            let Some(kept) = pool.free.pop() else { break };
            pool.bytes -= kept.capacity();
        }
        buf.set_len(len);
        Some(Staged(Some(buf), self))
    }

    /// Makes, ahead of the first snapshot, a kept buffer for each tile of `sizes` bytes that
    /// no kept buffer of its size holds yet, with every page faulted in: the snapshots that
    /// follow reuse them (`stage`), so the first costs what the next ones do. All of them
    /// must fit `budget` beside what the pool holds, else nothing is made
    /// (`H5TILE_ERR_INVALID_ARGUMENT`); a mapping the system refuses is `H5TILE_ERR_IO`.
    pub fn reserve(&self, sizes: &[usize], budget: usize) -> crate::status::Result<()> {
        use crate::status::{Error, H5TILE_ERR_INVALID_ARGUMENT, H5TILE_ERR_IO};
        let page_up = |n: &usize| n.div_ceil(PAGE).saturating_mul(PAGE);
        let mut capacities: Vec<usize> = sizes.iter().map(page_up).collect();
        capacities.retain(|&c| c > 0);
        let needed = {
            let mut pool = self.state.lock();
            // Kept buffers of a size asked for count already (a second call makes nothing).
            let mut kept: Vec<usize> = pool.free.iter().map(PageBuffer::capacity).collect();
            capacities.retain(|c| match kept.iter().position(|k| k == c) {
                Some(i) => {
                    kept.swap_remove(i);
                    false
                }
                None => true,
            });
            let needed = capacities.iter().fold(0usize, |a, &c| a.saturating_add(c));
            if pool.bytes.saturating_add(needed) > budget {
                return Err(Error::new(
                    H5TILE_ERR_INVALID_ARGUMENT,
                    format!(
                        "cannot reserve {needed} bytes of staging: with the {} bytes held, they \
                     exceed the budget of {budget} bytes (H5TILE_STAGING_BYTES, or the \
                     snapshots' staging_bytes)",
                        pool.bytes
                    ),
                ));
            }
            // Counted now, made outside the lock: faulting pages in takes a while.
            pool.bytes += needed;
            needed
        };
        let mut made = Vec::new();
        for &capacity in &capacities {
            match PageBuffer::try_new(capacity) {
                Ok(mut buf) => {
                    buf.set_len(capacity);
                    for page in buf.chunks_mut(PAGE) {
                        page[0] = 0;
                    }
                    made.push(buf);
                }
                Err(e) => {
                    self.state.lock().bytes -= needed;
                    let why = format!("cannot map {capacity} bytes of staging: {e}");
                    return Err(Error::new(H5TILE_ERR_IO, why));
                }
            }
        }
        let mut pool = self.state.lock();
        pool.free.extend(made);
        drop(pool);
        self.returned.notify_all();
        Ok(())
    }

    /// Bytes of staging memory the pool holds (in use or kept).
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.state.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the pool is the process's, so its counts cannot be shared between tests.
    #[test]
    fn staging_stays_within_its_budget_reuses_buffers_and_waits_for_room() {
        let mib = 1 << 20;
        let budget = 8 * mib;
        let pool: &'static Pool = Box::leak(Box::new(Pool::new()));
        // A buffer is made once, then reused.
        let a = pool.stage(3 * mib, budget, 0).unwrap();
        assert_eq!(a.bytes().len(), 3 * mib);
        let first = a.bytes().as_ptr();
        drop(a);
        let again = pool.stage(3 * mib - 100, budget, 0).unwrap();
        assert_eq!(again.bytes().as_ptr(), first, "the kept buffer is reused");
        assert_eq!(pool.held(), 3 * mib);
        // What cannot fit beside the snapshot's own buffers is refused at once ...
        assert!(pool.stage(6 * mib, budget, 3 * mib).is_none());
        assert!(pool.stage(budget + 1, budget, 0).is_none());
        // ... what fits once others drain waits for them.
        let waiting = std::thread::spawn(move || {
            let b = pool.stage(6 * mib, budget, 0).unwrap();
            (b.bytes().len(), pool.held())
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(
            !waiting.is_finished(),
            "6 MiB beside 3 MiB in use exceeds 8 MiB"
        );
        drop(again);
        let (len, held_then) = waiting.join().unwrap();
        assert_eq!(len, 6 * mib);
        assert!(held_then <= budget, "{held_then} bytes held");
        assert!(pool.held() <= budget);
    }

    #[test]
    fn reserved_buffers_are_resident_and_the_snapshots_reuse_them() {
        let mib = 1 << 20;
        let pool: &'static Pool = Box::leak(Box::new(Pool::new()));
        pool.reserve(&[3 * mib, mib + 1], 8 * mib).unwrap();
        assert_eq!(pool.held(), 4 * mib + PAGE);
        // Asked again: nothing more is made.
        pool.reserve(&[3 * mib], 8 * mib).unwrap();
        assert_eq!(pool.held(), 4 * mib + PAGE);
        // A snapshot of those sizes takes them, resident already, and maps nothing new.
        let (a, b) = (
            pool.stage(3 * mib, 8 * mib, 0).unwrap(),
            pool.stage(mib + 1, 8 * mib, 0).unwrap(),
        );
        assert_eq!((a.capacity(), b.capacity()), (3 * mib, mib + PAGE));
        assert!(crate::platform::memory::resident(a.bytes()));
        assert!(crate::platform::memory::resident(b.bytes()));
        assert_eq!(pool.held(), 4 * mib + PAGE);
        drop((a, b));
        // Beyond the budget: refused, and nothing made.
        let e = pool.reserve(&[5 * mib], 8 * mib).unwrap_err();
        assert!(e.message.contains("exceed the budget"), "{}", e.message);
        assert_eq!(pool.held(), 4 * mib + PAGE);
    }

    #[test]
    fn buffers_kept_under_a_larger_budget_never_let_a_smaller_one_be_exceeded() {
        let mib = 1 << 20;
        let pool: &'static Pool = Box::leak(Box::new(Pool::new()));
        let (a, b) = (
            pool.stage(4 * mib, 64 * mib, 0),
            pool.stage(4 * mib, 64 * mib, 0),
        );
        drop((a, b));
        assert_eq!(pool.held(), 8 * mib, "both kept");
        // Under 6 MiB: one kept buffer is reused, the other unmapped ...
        let first = pool.stage(4 * mib, 6 * mib, 0).unwrap();
        assert_eq!((first.capacity(), pool.held()), (4 * mib, 4 * mib));
        // ... and a second snapshot of 4 MiB waits for the first to drain.
        let second = std::thread::spawn(move || pool.stage(4 * mib, 6 * mib, 0).is_some());
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!second.is_finished(), "8 MiB in use under a budget of 6");
        drop(first);
        assert!(second.join().unwrap());
        assert!(pool.held() <= 6 * mib);
    }

    #[test]
    fn budgets_come_from_the_option_else_the_environment_else_the_default() {
        assert_eq!(budget(12345), Ok(12345));
        assert_eq!(parse_bytes("64M"), Some(64 << 20));
        assert_eq!(parse_bytes("2GiB"), Some(2 << 30));
        assert_eq!(parse_bytes("4096"), Some(4096));
        assert_eq!(parse_bytes("1k"), Some(1024));
        assert_eq!(parse_bytes("lots"), None);
        assert_eq!(parse_bytes("-5"), None);
        assert!(default_budget() >= 64 << 20);
    }
}
