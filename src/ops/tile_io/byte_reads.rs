//! Reads of tile bytes planned under the HDF5 lock and done without it: the plan says which
//! byte runs of which files go where in the caller's buffer; doing it takes no lock, so a
//! batched reader's read-ahead never blocks the process's other h5tile calls, and the runs
//! are shared among `io_threads()` workers, so a chunk made of many short rows reads as fast
//! as one long run.

pub(crate) use super::block_check::{BlockLabel, Check, Mismatch};
use crate::platform::aligned_read::{read_exact_at, read_exact_at_spilling, PIECE};
use crate::platform::device::io_threads;
use std::fs::File;
use std::io;
use std::path::PathBuf;

/// Bytes a worker moves at a time: large runs are cut into pieces this size, short runs
/// grouped up to it.
const JOB_BYTES: usize = 8 << 20;

/// Bytes of a checked block read at a time, each summed right after its read, while it is
/// still in the core's cache.
const SUMMED_PIECE: usize = 256 << 10;

/// One run of a plan: `len` bytes at `at` of file `file`.
#[derive(Debug)]
enum Run {
    /// Straight into the buffer at byte `dst`.
    Place {
        file: usize,
        at: u64,
        dst: usize,
        len: usize,
    },
    /// Rows of `row` bytes, consecutive in the file, to the buffer at bytes `dsts` (short rows
    /// read with one call through a scratch buffer, then copied to their places).
    Scatter {
        file: usize,
        at: u64,
        row: usize,
        dsts: Vec<usize>,
    },
    /// Checksummed bytes, `len` of them, lying in the file as `ranges` (one run, a box's rows,
    /// a tile's rows in the single-file layout), read whole and summed piece by piece while
    /// still in the cache as `check` says (one block, or a band of boxes), and their `parts`
    /// delivered: a range that lies within one part is read straight into its place, the
    /// others through scratch. No parts: only checked (HDF5 reads them). `Check::Before`:
    /// bytes of a block checked before (`checked_before`), read and delivered alike, not
    /// summed.
    Verified {
        file: usize,
        ranges: Vec<(u64, usize)>,
        len: usize,
        check: Check,
        parts: Vec<Part>,
    },
}

impl Run {
    fn len(&self) -> usize {
        match self {
            Run::Place { len, .. } | Run::Verified { len, .. } => *len,
            Run::Scatter { row, dsts, .. } => row * dsts.len(),
        }
    }
}

/// Part of a checksummed block delivered to the buffer: (offset in the block, buffer byte,
/// length).
pub(crate) type Part = (usize, usize, usize);

/// What reads have cost: blocks summed, and bytes read from files (a checked block counts
/// whole).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadCounts {
    pub blocks_summed: u64,
    pub bytes_read: u64,
}

impl std::ops::AddAssign for ReadCounts {
    fn add_assign(&mut self, other: ReadCounts) {
        self.blocks_summed += other.blocks_summed;
        self.bytes_read += other.bytes_read;
    }
}

/// Bytes between two parts of a block checked before below which they are read with one call
/// (through scratch), if the parts are no shorter than the gap (so that no more than twice
/// what the parts take is read): reading a page costs about what a call does.
const JOIN_GAP: usize = 4096;

/// The pieces of the file (in the block's order) holding bytes `start..end` of a block lying
/// at `ranges`.
fn cut(ranges: &[(u64, usize)], start: usize, end: usize) -> Vec<(u64, usize)> {
    let mut out = Vec::new();
    let mut o = 0;
    for &(at, n) in ranges {
        let (a, b) = (start.max(o), end.min(o + n));
        if a < b {
            out.push((at + (a - o) as u64, b - a));
        }
        o += n;
        if o >= end {
            break;
        }
    }
    out
}

/// A plan of byte reads into one buffer of `total` bytes.
pub(crate) struct ByteReads {
    /// Each file with what to say when it cannot be read.
    files: Vec<(File, PathBuf, String)>,
    /// Each file's number and size by path: tiles sharing a subfile share one open file.
    numbers: std::collections::HashMap<PathBuf, (usize, u64)>,
    runs: Vec<Run>,
    total: usize,
}

impl ByteReads {
    pub fn new(total: usize) -> ByteReads {
        ByteReads {
            files: Vec::new(),
            numbers: std::collections::HashMap::new(),
            runs: Vec::new(),
            total,
        }
    }

    /// Adds `file` (at `path`, of `len` bytes; `about` says whose elements it holds, for
    /// errors), returning its number for the runs.
    pub fn add_file(&mut self, file: File, path: PathBuf, len: u64, about: String) -> usize {
        self.numbers.insert(path.clone(), (self.files.len(), len));
        self.files.push((file, path, about));
        self.files.len() - 1
    }

    /// The number and size of the file at `path`, if the plan has it already.
    pub fn file_at(&self, path: &std::path::Path) -> Option<(usize, u64)> {
        self.numbers.get(path).copied()
    }

    /// `len` bytes at `at` of `file` to buffer byte `dst`; joined to the previous run when it
    /// continues it in the file and in the buffer.
    pub fn place(&mut self, file: usize, at: u64, dst: usize, len: usize) {
        debug_assert!(dst + len <= self.total);
        if let Some(Run::Place {
            file: f,
            at: a,
            dst: d,
            len: l,
        }) = self.runs.last_mut()
        {
            if *f == file && *a + *l as u64 == at && *d + *l == dst {
                *l += len;
                return;
            }
        }
        self.runs.push(Run::Place { file, at, dst, len });
    }

    /// Rows of `row` bytes consecutive in `file` from `at`, to buffer bytes `dsts`.
    pub fn scatter(&mut self, file: usize, at: u64, row: usize, dsts: Vec<usize>) {
        debug_assert!(dsts.iter().all(|&d| d + row <= self.total));
        self.runs.push(Run::Scatter {
            file,
            at,
            row,
            dsts,
        });
    }

    /// The bytes lying at `ranges` of `file` (one block, or a band of boxes), checked as
    /// `check` says, with `parts` of them (in their order) to the buffer.
    pub fn verified(
        &mut self,
        file: usize,
        ranges: Vec<(u64, usize)>,
        check: Check,
        parts: Vec<Part>,
    ) {
        let len = ranges.iter().map(|r| r.1).sum();
        debug_assert!(parts
            .iter()
            .all(|&(o, d, n)| o + n <= len && d + n <= self.total));
        debug_assert!(parts.windows(2).all(|w| w[0].0 + w[0].2 <= w[1].0));
        self.runs.push(Run::Verified {
            file,
            ranges,
            len,
            check,
            parts,
        });
    }

    /// `parts` (in the block's order) of a block lying at `ranges` of `file` that matched its
    /// checksum before (`CheckedBlocks`): only their bytes are read, not summed. A part far
    /// from the others goes straight to its place; parts closer than `JOIN_GAP` are read with
    /// one call, the bytes between them too, and copied to their places.
    pub fn checked_before(
        &mut self,
        file: usize,
        ranges: &[(u64, usize)],
        parts: &[Part],
        label: BlockLabel,
    ) {
        let mut i = 0;
        while i < parts.len() {
            let mut j = i + 1;
            while j < parts.len() && {
                let gap = parts[j].0 - (parts[j - 1].0 + parts[j - 1].2);
                gap < JOIN_GAP && gap <= parts[j].2.min(parts[j - 1].2)
            } {
                j += 1;
            }
            let (start, end) = (parts[i].0, parts[j - 1].0 + parts[j - 1].2);
            let span = cut(ranges, start, end);
            if j == i + 1 {
                let mut dst = parts[i].1;
                for (at, n) in span {
                    self.place(file, at, dst, n);
                    dst += n;
                }
            } else {
                let parts = parts[i..j].iter().map(|&(o, d, n)| (o - start, d, n));
                self.runs.push(Run::Verified {
                    file,
                    ranges: span,
                    len: end - start,
                    check: Check::Before(label),
                    parts: parts.collect(),
                });
            }
            i = j;
        }
    }

    /// The blocks this plan sums: once it has run without error, each matched.
    pub fn summed(&self) -> impl Iterator<Item = BlockLabel> + '_ {
        self.runs
            .iter()
            .flat_map(|run| match run {
                Run::Verified { check, .. } => check.summed(),
                _ => &[],
            })
            .copied()
    }

    /// What running this plan costs.
    pub fn counts(&self) -> ReadCounts {
        ReadCounts {
            blocks_summed: self.summed().count() as u64,
            bytes_read: self.runs.iter().map(|r| r.len() as u64).sum(),
        }
    }

    /// The (device, inode) of file `file` (`file_id`).
    pub fn file_id(&self, file: usize) -> io::Result<(u64, u64)> {
        file_id(&self.files[file].0)
    }

    /// Does a plan of checks alone (`verified` blocks without parts), on the calling thread,
    /// in order, giving `progress` each block's length once read. Unlike `execute` it goes on
    /// past blocks that do not match, and returns them all; a block that cannot be read ends
    /// it, returned with its label.
    pub fn survey(
        self,
        progress: &dyn Fn(u64),
    ) -> (Vec<Mismatch>, Option<(BlockLabel, io::Error)>) {
        let mut found = Vec::new();
        let mut scratch = Vec::new();
        for run in &self.runs {
            let Run::Verified { check, ranges, .. } = run else {
                debug_assert!(false, "a survey plans checks alone");
                continue;
            };
            let at = ranges.first().map_or(0, |r| r.0);
            match self.read(run, at, Vec::new(), &mut scratch) {
                Ok(()) => {}
                Err(e) => match e.get_ref().and_then(|e| e.downcast_ref::<Mismatch>()) {
                    Some(m) => {
                        found.push(Mismatch {
                            others: Vec::new(),
                            ..m.clone()
                        });
                        found.extend(m.others.iter().cloned());
                    }
                    None => return (found, Some((check.label(), e))),
                },
            }
            progress(run.len() as u64);
        }
        (found, None)
    }

    /// Does the reads into `buf` (of the `total` bytes given to `new`), over `io_threads()`
    /// workers when there is enough to share. A failure is reported as `failed(path, about,
    /// error)` of the first file that failed.
    pub fn execute<E>(
        self,
        buf: &mut [u8],
        failed: impl Fn(&PathBuf, &str, io::Error) -> E,
    ) -> Result<(), E> {
        let bytes: usize = self.runs.iter().map(Run::len).sum();
        let threads = if bytes >= 2 * JOB_BYTES {
            io_threads()
        } else {
            1
        };
        self.execute_on(threads, buf, failed)
    }

    /// `execute` on `threads` workers.
    fn execute_on<E>(
        self,
        threads: usize,
        buf: &mut [u8],
        failed: impl Fn(&PathBuf, &str, io::Error) -> E,
    ) -> Result<(), E> {
        let fail_on = |file: usize, e: io::Error| {
            let (_, path, about) = &self.files[file];
            failed(path, about, e)
        };
        let jobs = match self.jobs(buf) {
            Ok(jobs) => jobs,
            Err(e) => return Err(fail_on(0, e)),
        };
        let queue = std::sync::Mutex::new(jobs);
        let first_error = std::sync::Mutex::new(None);
        let work = || {
            let mut scratch = Vec::new();
            loop {
                let job = queue.lock().unwrap_or_else(|p| p.into_inner()).pop();
                let Some(job) = job else { return };
                for piece in job {
                    if let Err(e) = self.read(piece.run, piece.at, piece.dsts, &mut scratch) {
                        let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
                        slot.get_or_insert((piece.file, e));
                        queue.lock().unwrap_or_else(|p| p.into_inner()).clear();
                        return;
                    }
                }
            }
        };
        std::thread::scope(|scope| {
            for _ in 1..threads.max(1) {
                scope.spawn(work);
            }
            work();
        });
        match first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
            None => Ok(()),
            Some((file, e)) => Err(fail_on(file, e)),
        }
    }

    /// The runs cut into pieces of at most `JOB_BYTES`, each with its own part of `buf`, and
    /// grouped into jobs of about `JOB_BYTES`. The parts are cut out of `buf` in order, so no
    /// two pieces share a byte (an overlapping plan is an error, not a race).
    fn jobs<'b>(&'b self, buf: &'b mut [u8]) -> io::Result<Vec<Vec<Piece<'b>>>> {
        // Each piece: its file, run, place in the file and destination ranges (start, len).
        let mut pieces: Vec<(usize, &Run, u64, Ranges)> = Vec::new();
        for run in &self.runs {
            match run {
                Run::Place { file, at, dst, len } => {
                    let mut off = 0;
                    while off < *len {
                        let n = JOB_BYTES.min(len - off);
                        pieces.push((*file, run, at + off as u64, vec![(dst + off, n)]));
                        off += n;
                    }
                }
                Run::Scatter {
                    file,
                    at,
                    row,
                    dsts,
                } => {
                    let ranges = dsts.iter().map(|&d| (d, *row)).collect();
                    pieces.push((*file, run, *at, ranges));
                }
                Run::Verified {
                    file,
                    ranges: at,
                    parts,
                    ..
                } => {
                    let ranges = parts.iter().map(|&(_, d, n)| (d, n)).collect();
                    pieces.push((*file, run, at.first().map_or(0, |r| r.0), ranges));
                }
            }
        }
        let mut ranges: Vec<(usize, usize, usize, usize)> = pieces
            .iter()
            .enumerate()
            .flat_map(|(p, (_, _, _, rs))| {
                rs.iter().enumerate().map(move |(j, &(d, n))| (d, n, p, j))
            })
            .collect();
        ranges.sort_unstable();
        let mut parts: Vec<Vec<Option<&'b mut [u8]>>> = pieces
            .iter()
            .map(|(_, _, _, rs)| (0..rs.len()).map(|_| None).collect())
            .collect();
        let mut rest = buf;
        let mut consumed = 0usize;
        for (d, n, p, j) in ranges {
            let overlap = || io::Error::other(format!("overlapping reads planned at byte {d}"));
            let skip = d.checked_sub(consumed).ok_or_else(overlap)?;
            if rest.len() < skip + n {
                return Err(io::Error::other(format!(
                    "a read planned past the buffer, at {d}"
                )));
            }
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(skip);
            let (part, tail) = tail.split_at_mut(n);
            parts[p][j] = Some(part);
            rest = tail;
            consumed = d + n;
        }
        let mut jobs: Vec<Vec<Piece<'b>>> = vec![Vec::new()];
        let mut size = 0usize;
        for ((file, run, at, _), dsts) in pieces.into_iter().zip(parts) {
            let dsts: Vec<&'b mut [u8]> = dsts
                .into_iter()
                .map(|d| d.expect("every range cut"))
                .collect();
            // Bytes read: a checked block is read whole, whatever of it is delivered.
            let n: usize = match run {
                Run::Verified { len, .. } => *len,
                _ => dsts.iter().map(|d| d.len()).sum(),
            };
            if size > 0 && size + n > JOB_BYTES {
                jobs.push(Vec::new());
                size = 0;
            }
            jobs.last_mut().expect("one job at least").push(Piece {
                file,
                run,
                at,
                dsts,
            });
            size += n;
        }
        Ok(jobs)
    }

    /// Reads one piece: `run`'s bytes at `at` into `dsts` (one part for a placed run; one per
    /// row, read together through `scratch`, for a scattered one).
    fn read(
        &self,
        run: &Run,
        at: u64,
        dsts: Vec<&mut [u8]>,
        scratch: &mut Vec<u8>,
    ) -> io::Result<()> {
        match run {
            Run::Place { file, .. } => {
                let mut dsts = dsts;
                read_exact_at(&self.files[*file].0, dsts[0], at)
            }
            Run::Scatter { file, row, .. } => {
                scratch.resize(row * dsts.len(), 0);
                read_exact_at(&self.files[*file].0, scratch, at)?;
                for (j, out) in dsts.into_iter().enumerate() {
                    out.copy_from_slice(&scratch[j * row..(j + 1) * row]);
                }
                Ok(())
            }
            Run::Verified {
                file,
                ranges,
                len,
                check,
                parts,
            } => {
                let file = &self.files[*file].0;
                let mut dsts = dsts;
                let mut summed = check.start();
                // Block bytes (offset, length) read into scratch rather than into place.
                let mut staged: Vec<(usize, usize)> = Vec::new();
                let mut o = 0;
                for &(at, n) in ranges {
                    let p = parts.partition_point(|&(from, _, m)| from + m <= o);
                    let into = match parts.get(p) {
                        // A row of a chunk, say: the part's bytes after it are the next ranges'
                        // to fill, so its read may spill into them (one call, not two, where
                        // the buffer and the file disagree modulo 64).
                        Some(&(from, _, m)) if from <= o && o + n <= from + m && n <= PIECE => {
                            let rest = &mut dsts[p][o - from..m];
                            read_exact_at_spilling(file, rest, n, at)?;
                            if check.sums() {
                                summed.add(&rest[..n]);
                            }
                            o += n;
                            continue;
                        }
                        Some(&(from, _, m)) if from <= o && o + n <= from + m => {
                            &mut dsts[p][o - from..o - from + n]
                        }
                        _ => {
                            scratch.resize(*len, 0);
                            staged.push((o, n));
                            &mut scratch[o..o + n]
                        }
                    };
                    if check.sums() {
                        let mut done = 0;
                        for part in into.chunks_mut(SUMMED_PIECE) {
                            read_exact_at(file, part, at + done as u64)?;
                            summed.add(part);
                            done += part.len();
                        }
                    } else {
                        read_exact_at(file, into, at)?;
                    }
                    o += n;
                }
                // What of the parts went through scratch goes to its place: both lists are in
                // the block's order.
                let mut j = 0;
                for &(s, n) in &staged {
                    while j < parts.len() && parts[j].0 + parts[j].2 <= s {
                        j += 1;
                    }
                    let mut k = j;
                    while k < parts.len() && parts[k].0 < s + n {
                        let (from, _, m) = parts[k];
                        let (a, b) = (from.max(s), (from + m).min(s + n));
                        dsts[k][a - from..b - from].copy_from_slice(&scratch[a..b]);
                        k += 1;
                    }
                }
                summed.finish(ranges).map_err(io::Error::other)
            }
        }
    }
}

/// Ranges of the buffer, as (first byte, length).
type Ranges = Vec<(usize, usize)>;

/// What one worker reads at a time: a run (or a piece of one) and its parts of the buffer.
struct Piece<'b> {
    file: usize,
    run: &'b Run,
    at: u64,
    dsts: Vec<&'b mut [u8]>,
}

/// The (device, inode) of `file`, which tells a file replaced under its name from the one
/// that was there.
pub(crate) fn file_id(file: &File) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let md = file.metadata()?;
    Ok((md.dev(), md.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_of(dir: &std::path::Path, name: &str, bytes: &[u8]) -> (File, PathBuf) {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        (File::open(&path).unwrap(), path)
    }

    /// The bytes of `ranges` (offset, length) of `data`, one range after another: a block
    /// gathered from ranges apart in a file, as its checksum covers it.
    fn gathered(data: &[u8], ranges: &[(u64, usize)]) -> Vec<u8> {
        ranges
            .iter()
            .flat_map(|&(at, n)| data[at as usize..at as usize + n].to_vec())
            .collect()
    }

    /// Many short rows, long runs cut into pieces and scattered rows all land where planned,
    /// whether one worker or several do them.
    #[test]
    fn planned_runs_land_where_planned() {
        [1, 3].into_iter().for_each(runs_land_where_planned_on);
    }

    fn runs_land_where_planned_on(threads: usize) {
        let d = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..(40u32 << 20) / 4)
            .flat_map(|i| i.to_le_bytes())
            .collect();
        let (f, p) = file_of(d.path(), "a", &data);
        let total = 36 << 20;
        let mut plan = ByteReads::new(total);
        let a = plan.add_file(f, p, 0, "a".into());
        // 16 MiB in 4096 rows of 4 KiB, every other row of the file, reversed in the buffer.
        for r in 0..4096usize {
            plan.place(a, (2 * r * 4096) as u64, (4095 - r) * 4096, 4096);
        }
        // One 18 MiB run, continued by a second (joined into one).
        plan.place(a, 1 << 20, 16 << 20, 9 << 20);
        plan.place(a, 10 << 20, 25 << 20, 9 << 20);
        // Short rows consecutive in the file, to scattered places.
        plan.scatter(a, 100, 10, vec![(34 << 20) + 50, 34 << 20]);
        let mut buf = vec![0u8; total];
        plan.execute_on(threads, &mut buf, |_, _, e| e).unwrap();
        for r in [0usize, 1, 2047, 4095] {
            let got = &buf[(4095 - r) * 4096..][..4096];
            assert_eq!(got, &data[2 * r * 4096..][..4096], "row {r}");
        }
        assert_eq!(&buf[16 << 20..34 << 20], &data[1 << 20..19 << 20]);
        assert_eq!(&buf[(34 << 20) + 50..][..10], &data[100..110]);
        assert_eq!(&buf[34 << 20..][..10], &data[110..120]);
    }

    /// A checked block gathered from ranges apart in the file: ranges within a part are read
    /// straight into place, the others through scratch, and every delivered byte is the
    /// block's; a changed byte in any range, delivered or not, is a `Mismatch` with its label.
    #[test]
    fn a_block_in_ranges_is_checked_whole_and_delivered_in_parts() {
        let d = tempfile::tempdir().unwrap();
        let mut data: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        let (f, p) = file_of(d.path(), "rows", &data);
        // The block: 4 rows of 100 bytes, 1000 bytes apart in the file.
        let ranges: Vec<(u64, usize)> = (0..4).map(|r| (50 + 1000 * r, 100)).collect();
        let block = gathered(&data, &ranges);
        let sum = crate::layout::checksums::block_sum(&block);
        let label = BlockLabel {
            tile: 7,
            block: 1,
            in_tile: (400, 800),
            bytes: 400,
        };
        // Parts: rows 0 and 1 whole as one (straight into place), half of row 2, none of row 3.
        let parts = vec![(0, 1000, 200), (250, 10, 30)];
        let mut plan = ByteReads::new(1200);
        let a = plan.add_file(f, p.clone(), 0, "rows".into());
        plan.verified(a, ranges.clone(), Check::One(sum, label), parts.clone());
        let mut buf = vec![0xEEu8; 1200];
        plan.execute_on(1, &mut buf, |_, _, e| e).unwrap();
        assert_eq!(&buf[1000..1200], &block[..200]);
        assert_eq!(&buf[10..40], &block[250..280]);
        assert!(buf[..10].iter().chain(&buf[40..1000]).all(|&b| b == 0xEE));
        // Damage row 3, which nothing is delivered from.
        data[3050 + 99] ^= 1;
        std::fs::write(&p, &data).unwrap();
        let mut plan = ByteReads::new(1200);
        let a = plan.add_file(File::open(&p).unwrap(), p.clone(), 0, "rows".into());
        plan.verified(a, ranges, Check::One(sum, label), parts);
        let e = plan.execute_on(1, &mut buf, |_, _, e| e).unwrap_err();
        let m = e
            .get_ref()
            .and_then(|e| e.downcast_ref::<Mismatch>())
            .unwrap();
        assert_eq!((m.at, m.end, m.label), (50, 3150, label));
    }

    /// Parts of a block checked before are read without the rest of it, unsummed: a part far
    /// from the others straight into place (split where the block's ranges are), parts close
    /// together with one call; a changed byte outside the parts goes unseen, as the block is
    /// not summed again.
    #[test]
    fn parts_of_a_block_checked_before_are_read_alone() {
        let d = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..20000u32).map(|i| (i * 13 % 251) as u8).collect();
        let (f, p) = file_of(d.path(), "rows", &data);
        // The block: 4 ranges of 3000 bytes, 4000 bytes apart in the file (12000 bytes).
        let ranges: Vec<(u64, usize)> = (0..4).map(|r| (100 + 4000 * r, 3000)).collect();
        let block = gathered(&data, &ranges);
        let label = BlockLabel {
            tile: 0,
            block: 0,
            in_tile: (0, 12000),
            bytes: 12000,
        };
        // Far apart: one across two ranges (2900..3100), one within the last; close
        // together (gaps shorter than the parts): 64 bytes 36 apart, three times; apart (the
        // gap longer than the part): 10 bytes 20 apart.
        let parts = vec![
            (2900, 0, 200),
            (6000, 200, 64),
            (6100, 264, 64),
            (6200, 328, 64),
            (8000, 392, 10),
            (8030, 402, 10),
            (11000, 412, 1000),
        ];
        let mut plan = ByteReads::new(1412);
        let a = plan.add_file(f, p, 0, "rows".into());
        plan.checked_before(a, &ranges, &parts, label);
        assert_eq!(plan.summed().count(), 0);
        // 200, 10, 10 and 1000 placed, the close parts read as one span of 264 bytes.
        assert_eq!(
            plan.counts(),
            ReadCounts {
                blocks_summed: 0,
                bytes_read: 200 + 264 + 10 + 10 + 1000
            }
        );
        let mut buf = vec![0u8; 1412];
        plan.execute_on(1, &mut buf, |_, _, e| e).unwrap();
        for &(o, d, n) in &parts {
            assert_eq!(&buf[d..d + n], &block[o..o + n], "part at {o}");
        }
    }

    /// Reading past the end of a file is an error naming the file, on one worker or several.
    #[test]
    fn a_short_file_names_itself() {
        [1, 3].into_iter().for_each(a_short_file_names_itself_on);
    }

    fn a_short_file_names_itself_on(threads: usize) {
        let d = tempfile::tempdir().unwrap();
        let (f, p) = file_of(d.path(), "short", &vec![7u8; 3 * JOB_BYTES + 5]);
        let mut plan = ByteReads::new(3 * JOB_BYTES + 8);
        let a = plan.add_file(f, p.clone(), 0, "tile 0".into());
        plan.place(a, 0, 0, 3 * JOB_BYTES + 8);
        let mut buf = vec![0u8; 3 * JOB_BYTES + 8];
        let e = plan
            .execute_on(threads, &mut buf, |path, about, e| {
                (path.clone(), about.to_string(), e.kind())
            })
            .unwrap_err();
        assert_eq!(e, (p, "tile 0".to_string(), io::ErrorKind::UnexpectedEof));
    }
}
