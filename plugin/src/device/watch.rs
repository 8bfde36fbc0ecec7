//! What the compat path shows of the device memory it writes: each piece passes through a
//! pinned host buffer on its way to the file, so a caller can sum it there (h5tile's per-tile
//! checksums) without a copy of its own. cuFile moves device memory straight to the file and
//! shows nothing. The watch is per thread: the compat pipeline runs on the thread that asked
//! for the write, the one HDF5 calls the driver on.

use std::cell::RefCell;

/// Shown each piece written: its device address and its bytes (valid for the call only).
pub type Watch = Box<dyn FnMut(u64, &[u8])>;

thread_local! {
    static WATCH: RefCell<Option<Watch>> = const { RefCell::new(None) };
}

/// Runs `work` with `watch` shown, in the order they are written, the pieces of device memory
/// this thread writes to files through the compat path's staging buffers, from the host copy
/// itself. What watched before is watched again afterwards, also if `work` panics.
pub fn watching_staged_writes<R>(watch: Watch, work: impl FnOnce() -> R) -> R {
    struct Restore(Option<Watch>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            WATCH.with(|w| *w.borrow_mut() = previous);
        }
    }
    let _restore = Restore(WATCH.with(|w| w.borrow_mut().replace(watch)));
    work()
}

/// Shows the watch of this thread, if any, `bytes` just written from device address `addr`.
pub fn staged_write(addr: u64, bytes: &[u8]) {
    WATCH.with(|w| {
        if let Some(watch) = w.borrow_mut().as_mut() {
            watch(addr, bytes);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    type Seen = Rc<RefCell<Vec<(u64, Vec<u8>)>>>;

    fn recorder() -> (Seen, Watch) {
        let seen: Seen = Rc::default();
        let to = seen.clone();
        (
            seen,
            Box::new(move |a, b| to.borrow_mut().push((a, b.to_vec()))),
        )
    }

    #[test]
    fn a_watch_sees_the_pieces_written_within_its_work_only() {
        staged_write(1, b"before"); // no watch: nothing happens
        let (seen, watch) = recorder();
        let (inner, inner_watch) = recorder();
        let got = watching_staged_writes(watch, || {
            staged_write(100, b"ab");
            watching_staged_writes(inner_watch, || staged_write(7, b"x"));
            staged_write(102, b"cd");
            42
        });
        staged_write(2, b"after");
        assert_eq!(got, 42);
        assert_eq!(*inner.borrow(), [(7, b"x".to_vec())]);
        assert_eq!(
            *seen.borrow(),
            [(100, b"ab".to_vec()), (102, b"cd".to_vec())]
        );
    }

    #[test]
    fn another_thread_is_not_watched_and_a_panic_ends_the_watch() {
        let (seen, watch) = recorder();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            watching_staged_writes(watch, || {
                std::thread::spawn(|| staged_write(5, b"elsewhere"))
                    .join()
                    .unwrap();
                staged_write(9, b"here");
                panic!("the write failed");
            })
        }));
        assert!(caught.is_err());
        staged_write(10, b"after the panic");
        assert_eq!(*seen.borrow(), [(9, b"here".to_vec())]);
    }
}
