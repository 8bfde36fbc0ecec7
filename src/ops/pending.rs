//! Writes that complete in the background (`h5tile_write_async`): the write runs on a thread
//! of its own, over its own duplicate of the communicator, while the caller computes; `wait`
//! completes one request, `fence` every request of this process.
//!
//! MPI lets a second thread make calls only at `MPI_THREAD_MULTIPLE`. Below that level, a
//! write over a communicator runs at once on the caller's thread and its request is born
//! complete; a write over `MPI_COMM_NULL` makes no MPI call and always runs in the background.
//! Writes to one path (or commits to one series) run one after the other, in the order they
//! were started, so that each finds the file the previous one left (with
//! `H5TILE_KEEP_OTHERS`, several fields of one checkpoint can be written in the background at
//! once).

use crate::ops::checkpoint::{self, SeriesStep};
use crate::ops::snapshot;
use crate::ops::write::{self, Checkpoint};
use crate::platform::comm::Comm;
use crate::platform::device::leaving_a_core;
use crate::status::*;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

enum State {
    Running(JoinHandle<Result<()>>),
    Done(Result<()>),
}

/// One write started by `start`, to `path` (a file, or a series' folder).
pub struct Request {
    path: PathBuf,
    state: Mutex<State>,
    /// Set once the write has ended, whoever completes it (`test` never waits for the lock a
    /// waiting `wait` or `fence` holds).
    ended: Arc<AtomicBool>,
}

/// Requests not yet completed by `wait` or `fence`, oldest first.
static OUTSTANDING: Mutex<Vec<Arc<Request>>> = Mutex::new(Vec::new());

impl Request {
    /// Waits for the write to end; its outcome, again on every call.
    fn complete(&self) -> Result<()> {
        let mut state = self.state.lock();
        if let State::Running(_) = &*state {
            let State::Running(thread) = std::mem::replace(&mut *state, State::Done(Ok(()))) else {
                unreachable!()
            };
            let outcome = thread
                .join()
                .unwrap_or_else(|_| fail(H5TILE_ERR_PANIC, "the background write panicked"));
            *state = State::Done(outcome);
        }
        match &*state {
            State::Done(outcome) => outcome.clone(),
            State::Running(_) => unreachable!(),
        }
    }
}

/// A commit that outlives the call that started it, with the series step it completes.
pub struct OwnedWrite(Checkpoint<'static>, Option<SeriesStep>);

impl OwnedWrite {
    /// # Safety
    /// The tile buffers stay the caller's: they must stay alive and untouched until the write
    /// completes (the contract of `h5tile_write_async`), however long the result lives.
    pub unsafe fn new(ck: Checkpoint<'_>, series: Option<SeriesStep>) -> OwnedWrite {
        let ck = std::mem::transmute::<Checkpoint<'_>, Checkpoint<'static>>(ck);
        OwnedWrite(ck, series)
    }

    pub fn path(&self) -> &Path {
        &self.0.path
    }
}

/// The communicator, the write, the earlier writes to the same path it must wait for, the
/// staged copies it reads (a snapshot; dropped after the write, and so after the tiles that
/// borrow them) and the caller waiting for its buffers, moved to the write's thread.
struct Job {
    comm: Comm,
    owned: OwnedWrite,
    earlier: Vec<Arc<Request>>,
    snapshot: Option<snapshot::Snapshot>,
    released: Arc<Latch>,
    /// Runs beside the caller, which goes on computing: one core is left to it.
    background: bool,
}

// Safety: the duplicate communicator is used by the write's thread alone, which MPI allows at
// MPI_THREAD_MULTIPLE (checked before the move); the tile buffers are the caller's, kept
// alive and untouched until the write completes (`OwnedWrite::new`); device memory is used
// under the context its buffer names, pushed by whichever thread uses it.
unsafe impl Send for Job {}

impl Job {
    fn run(self) -> Result<()> {
        let Job {
            comm,
            owned,
            earlier,
            snapshot,
            released,
            background,
        } = self;
        let opened = released.clone();
        let outcome = write::when_buffers_read(
            move || opened.open(),
            || {
                // Their outcome is theirs to report; this write only needs them finished.
                earlier.iter().for_each(|r| drop(r.complete()));
                let commit = || checkpoint::commit_checked(&comm, &owned.0, owned.1.as_ref());
                catch_panic(|| match background {
                    true => leaving_a_core(commit),
                    false => commit(),
                })
            },
        );
        // The tiles borrow the staged copies: the write goes first.
        drop(owned);
        drop(snapshot);
        released.open();
        outcome
    }
}

/// Opened once a write no longer reads its caller's buffers; the caller of a snapshot that
/// could not stage every tile waits for it.
#[derive(Default)]
struct Latch {
    open: Mutex<bool>,
    opened: parking_lot::Condvar,
}

impl Latch {
    fn open(&self) {
        *self.open.lock() = true;
        self.opened.notify_all();
    }

    fn wait(&self) {
        let mut open = self.open.lock();
        while !*open {
            self.opened.wait(&mut open);
        }
    }
}

/// Says, once a process at warn (the default level), that asynchronous writes over a
/// communicator run synchronously here, and why: the caller may count on overlap it does not
/// get.
fn said_synchronous() {
    static SAID: AtomicBool = AtomicBool::new(false);
    if SAID.swap(true, Ordering::Relaxed) {
        return;
    }
    crate::platform::device::log::warn(&format!(
        "asynchronous writes and commits over a communicator run synchronously in this \
         process: MPI provides {}, not MPI_THREAD_MULTIPLE, so each completes before its call \
         returns (initialise MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) to write \
         in the background; said once a process)",
        crate::platform::comm::thread_level()
    ));
}

/// Starts writing `owned` over `comm` (already this write's own duplicate), once every rank's
/// `write::check` has passed: in the background where MPI allows it, else at once. The
/// request is outstanding until `wait` or `fence`.
pub fn start(comm: Comm, mut owned: OwnedWrite) -> Arc<Request> {
    // A series' commits run in turn too: each one's record and pruning touch the whole folder
    // (a step pruned while an older one still drained lost that step's files).
    let target = owned
        .1
        .as_ref()
        .map_or(owned.path(), |series| series.dir.as_path());
    let path = std::path::absolute(target).unwrap_or_else(|_| target.to_path_buf());
    let earlier: Vec<Arc<Request>> = OUTSTANDING
        .lock()
        .iter()
        .filter(|r| r.path == path)
        .cloned()
        .collect();
    let background = comm.threads_allowed();
    if !background {
        said_synchronous();
    }
    // Safety: the snapshot moves into the job with the write, and is dropped after it.
    let snapshot =
        (background && owned.0.options.snapshot).then(|| unsafe { snapshot::take(&mut owned.0) });
    owned.0.options.buffers_may_change = background && snapshot.is_none();
    let caller_waits = snapshot.as_ref().is_some_and(|s| !s.whole);
    let released = Arc::new(Latch::default());
    let ended = Arc::new(AtomicBool::new(false));
    let job = Job {
        comm,
        owned,
        earlier,
        snapshot,
        released: released.clone(),
        background,
    };
    let state = if background {
        // The job stays reachable here in case no thread can be made: the other ranks will be
        // in this write's collectives, so it must run, on this thread if need be.
        let job = Arc::new(Mutex::new(Some(job)));
        let (theirs, ends) = (job.clone(), ended.clone());
        let spawned = std::thread::Builder::new()
            .name("h5tile-write".into())
            .spawn(move || {
                let job = theirs.lock().take();
                let outcome = job.map_or(Ok(()), Job::run);
                ends.store(true, Ordering::Release);
                outcome
            });
        match spawned {
            Ok(thread) => State::Running(thread),
            Err(_) => State::Done(job.lock().take().map_or(Ok(()), |mut job| {
                job.background = false;
                job.run()
            })),
        }
    } else {
        State::Done(job.run())
    };
    if let State::Done(_) = state {
        ended.store(true, Ordering::Release);
    }
    let request = Arc::new(Request {
        path,
        state: Mutex::new(state),
        ended,
    });
    OUTSTANDING.lock().push(request.clone());
    // A snapshot staged in part: the rest is written from the caller's buffers before it
    // may change them.
    if caller_waits {
        released.wait();
    }
    request
}

/// Completes `request` and forgets it; the write's outcome. It stays outstanding until it has
/// completed, so that a `fence` meanwhile (from C, while Python's thread waits) waits for it.
pub fn wait(request: Arc<Request>) -> Result<()> {
    let outcome = request.complete();
    OUTSTANDING.lock().retain(|r| !Arc::ptr_eq(r, &request));
    outcome
}

/// Whether `request` has completed, without waiting for it (`h5tile_test`).
pub fn test(request: &Request) -> bool {
    request.ended.load(Ordering::Acquire)
}

/// Completes every outstanding request of this process, then agrees over `comm`: the first
/// failure of any rank is every rank's outcome. A request still held by the caller keeps its
/// own outcome for `wait`.
pub fn fence(comm: &Comm) -> Result<()> {
    let all = std::mem::take(&mut *OUTSTANDING.lock());
    let mut first = Ok(());
    for request in &all {
        let outcome = request.complete();
        if first.is_ok() {
            first = outcome;
        }
    }
    comm.agree(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::tile::Tile;
    use crate::ops::write::{LocalTile, WriteOptions};
    use crate::platform::device::host_bytes;
    use crate::testkit::read_f64;
    use std::path::Path;

    /// Starts writing `data` (8 float64) as "/x" of `path`, in two tiles of 4.
    fn start_write(path: &Path, data: &[f64], options: WriteOptions) -> Arc<Request> {
        start_write_as(path, "/x", data, options)
    }

    fn start_write_as(
        path: &Path,
        dataset: &str,
        data: &[f64],
        options: WriteOptions,
    ) -> Arc<Request> {
        let global = [8u64];
        let tiles = (0..2)
            .map(|k| LocalTile {
                tile: Tile::new(vec![4 * k], vec![4]),
                buf: host_bytes(&data[4 * k as usize..]),
            })
            .collect();
        let args = crate::ops::write::tests::f64_args(path, dataset, &global, tiles, options);
        let ck = args.checkpoint();
        crate::ops::write::check(&ck).unwrap();
        start(Comm::solo(), unsafe { OwnedWrite::new(ck, None) })
    }

    /// Starts writing `data` as "/x" of `path` in `tiles` equal tiles, snapshotting under
    /// `budget` bytes of staging.
    fn start_snapshot(
        path: &Path,
        data: &[f64],
        tiles: usize,
        budget: u64,
        options: WriteOptions,
    ) -> Arc<Request> {
        let n = data.len() / tiles;
        let global = [data.len() as u64];
        let tiles = (0..tiles)
            .map(|k| LocalTile {
                tile: Tile::new(vec![(k * n) as u64], vec![n as u64]),
                buf: host_bytes(&data[k * n..][..n]),
            })
            .collect();
        let options = WriteOptions {
            snapshot: true,
            staging_bytes: budget,
            ..options
        };
        let args = crate::ops::write::tests::f64_args(path, "/x", &global, tiles, options);
        let ck = args.checkpoint();
        crate::ops::write::check(&ck).unwrap();
        start(Comm::solo(), unsafe { OwnedWrite::new(ck, None) })
    }

    #[test]
    fn a_snapshot_holds_the_buffers_as_they_were_at_the_call() {
        use crate::ops::write::{Codec, Compression, Layout};
        let d = tempfile::tempdir().unwrap();
        let n = 4 << 20; // two tiles of 16 MiB
        let tile_bytes = (n / 2 * 8) as u64;
        let zstd = Compression::new(Codec::Zstd, 1, false).unwrap();
        let cases = [
            ("vds", Layout::Vds, None, 1 << 30),
            ("subfiles", Layout::Subfiles, None, 1 << 30),
            ("single", Layout::Single, None, 1 << 30),
            ("compressed", Layout::Vds, Some(zstd), 1 << 30),
            // One tile staged, the other written from the caller's buffer before returning.
            ("budget of one tile", Layout::Vds, None, tile_bytes),
            ("budget of none", Layout::Subfiles, None, 4096),
        ];
        for (what, layout, compression, budget) in cases {
            let path = d.path().join(format!("{}.h5", what.replace(' ', "_")));
            let at_call: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
            let mut data = at_call.clone();
            let options = WriteOptions {
                layout,
                compression,
                ..WriteOptions::default()
            };
            let request = start_snapshot(&path, &data, 2, budget, options);
            // The solver's next step, at once, while the write runs.
            data.iter_mut().for_each(|v| *v = -*v - 1.0);
            assert_eq!(wait(request), Ok(()), "{what}");
            let back = read_f64(&path, "/x", &Tile::new(vec![0], vec![n as u64])).unwrap();
            assert!(
                back == at_call,
                "{what}: the file holds the buffers at the call"
            );
        }
    }

    #[test]
    fn a_series_commits_started_at_once_run_in_turn_and_each_commits() {
        use crate::ops::series::{self, SeriesOptions};
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("run");
        let options = SeriesOptions {
            keep_last: 2,
            keep_every: 0,
        };
        let data: Vec<Vec<f64>> = (1..=5)
            .map(|step| {
                (0..1 << 16)
                    .map(|i| (step * 1_000_000 + i) as f64)
                    .collect()
            })
            .collect();
        let global = [1u64 << 16];
        let requests: Vec<_> = (1..=5u64)
            .map(|step| {
                let path = series::checkpoint_path(&dir, step);
                let tiles = vec![LocalTile {
                    tile: Tile::new(vec![0], vec![1 << 16]),
                    buf: host_bytes(&data[step as usize - 1]),
                }];
                let opts = WriteOptions::default();
                let args = crate::ops::write::tests::f64_args(&path, "/u", &global, tiles, opts);
                let ck = args.checkpoint();
                let step = SeriesStep {
                    dir: dir.clone(),
                    step,
                    options,
                };
                start(Comm::solo(), unsafe { OwnedWrite::new(ck, Some(step)) })
            })
            .collect();
        // Each step's pruning ran after the commit before it, never during one.
        for (step, request) in (1..=5).zip(requests) {
            assert_eq!(wait(request), Ok(()), "step {step}");
        }
        let (latest, path) = series::latest(&dir).unwrap();
        assert_eq!(latest, 5);
        let all = Tile::new(vec![0], vec![1 << 16]);
        assert!(read_f64(&path, "/u", &all).unwrap() == data[4]);
        let kept = series::checkpoint_path(&dir, 4);
        assert!(read_f64(&kept, "/u", &all).unwrap() == data[3]);
        assert!(!series::checkpoint_path(&dir, 3).exists(), "pruned");
    }

    #[test]
    fn test_says_whether_a_write_completed_without_waiting_for_it() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("t.h5");
        let data: Vec<f64> = (0..8).map(f64::from).collect();
        let request = start_write_as(&path, "/t", &data, WriteOptions::default());
        // Polling is what a solver does between steps; the write completes on its own.
        while !test(&request) {
            std::thread::yield_now();
        }
        assert!(test(&request), "still complete when asked again");
        assert_eq!(wait(request), Ok(()));
        assert_eq!(read_back_as(&path, "/t").unwrap(), data);
        // While another thread waits for it (Python's waiter does), polling still answers.
        let request = start_write_as(&path, "/t", &data, WriteOptions::default());
        let waiter = std::thread::spawn({
            let request = request.clone();
            move || wait(request)
        });
        while !test(&request) {
            std::thread::yield_now();
        }
        assert_eq!(waiter.join().unwrap(), Ok(()));
    }

    fn read_back(path: &Path) -> Result<Vec<f64>> {
        read_back_as(path, "/x")
    }

    fn read_back_as(path: &Path, dataset: &str) -> Result<Vec<f64>> {
        read_f64(path, dataset, &Tile::new(vec![0], vec![8]))
    }

    // One test: `fence` completes every request of the process, so tests of it cannot share
    // the process's outstanding list with each other.
    #[test]
    fn wait_and_fence_complete_background_writes_and_report_their_failures() {
        let d = tempfile::tempdir().unwrap();
        let data: Vec<Vec<f64>> = (0..3)
            .map(|f| (0..8).map(|i| (100 * f + i) as f64).collect())
            .collect();
        let paths: Vec<_> = (0..3).map(|f| d.path().join(format!("f{f}.h5"))).collect();

        // Three writes in flight; one handle kept, two left to the fence.
        let kept = start_write(&paths[0], &data[0], WriteOptions::default());
        for f in 1..3 {
            drop(start_write(&paths[f], &data[f], WriteOptions::default()));
        }
        assert_eq!(fence(&Comm::solo()), Ok(()));
        for f in 0..3 {
            assert_eq!(read_back(&paths[f]).unwrap(), data[f], "file {f}");
        }
        assert_eq!(
            wait(kept),
            Ok(()),
            "a request the fence completed keeps its outcome"
        );

        // A failure found only by the write itself (the file exists) comes back from wait,
        // with the old file untouched ...
        let refused = WriteOptions {
            no_overwrite: true,
            ..WriteOptions::default()
        };
        let e = wait(start_write(&paths[0], &data[1], refused)).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_EXISTS, "{}", e.message);
        assert_eq!(read_back(&paths[0]).unwrap(), data[0]);
        assert_eq!(
            fence(&Comm::solo()),
            Ok(()),
            "a waited request is no longer outstanding"
        );

        // ... and from the fence, once, where no one waits for it; the write that succeeded
        // beside it is complete.
        let ok = d.path().join("ok.h5");
        drop(start_write(&paths[1], &data[2], refused));
        drop(start_write(&ok, &data[2], WriteOptions::default()));
        assert_eq!(fence(&Comm::solo()).unwrap_err().status, H5TILE_ERR_EXISTS);
        assert_eq!(read_back(&ok).unwrap(), data[2]);
        assert_eq!(read_back(&paths[1]).unwrap(), data[1]);
        assert_eq!(fence(&Comm::solo()), Ok(()));

        // Fields of one checkpoint written in the background at once: the writes to one path
        // run in turn, each keeping what the previous one wrote.
        let ckpt = d.path().join("ckpt.h5");
        let keep = WriteOptions {
            keep_others: true,
            ..WriteOptions::default()
        };
        let fields = ["/u", "/v", "/w", "/g/x"];
        for (f, name) in fields.iter().enumerate() {
            drop(start_write_as(&ckpt, name, &data[f % 3], keep));
        }
        assert_eq!(fence(&Comm::solo()), Ok(()));
        for (f, name) in fields.iter().enumerate() {
            assert_eq!(read_back_as(&ckpt, name).unwrap(), data[f % 3], "{name}");
        }
    }
}
