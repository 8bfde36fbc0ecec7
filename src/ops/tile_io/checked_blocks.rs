//! Checked blocks: a tile h5tile checksummed is checked in blocks (`layout::blocks`: boxes of
//! a wide tile, else runs of 1 MiB of its bytes), each compared with its recorded checksum.
//! This is the one planner of those checks: which blocks a read touches, which parts of them
//! go where, and which blocks a reader already checked (so that each is summed once). Direct
//! reads, the single-file layout's checks and `h5tile check` all plan through it; `ByteReads`
//! does the reading, and a block that does not match is its `Mismatch`.

use super::byte_reads::{BlockLabel, ByteReads, Check, Mismatch, Part, ReadCounts};
use crate::layout::blocks::{Band, BlockGrid};
use crate::layout::placement::Placement;
use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;

/// A checksummed tile as one plan reads it.
pub(crate) struct SummedTile<'a> {
    /// The plan's number for the file holding the tile, and the caller's for the tile (the
    /// `BlockLabel`s name it so).
    pub file: usize,
    pub tile: usize,
    /// Where the tile's bytes lie in the file.
    pub place: &'a Placement,
    /// Its blocks, and one checksum per block.
    pub grid: &'a BlockGrid,
    pub sums: &'a [u64],
}

impl SummedTile<'_> {
    /// Plans the blocks that `runs` touch: (byte in the tile, byte in the buffer, length), in
    /// the tile's order, as `layout::runs::box_runs` gives them. Each touched block is read
    /// whole and checked, unless `checked` has it. With `deliver` the runs' bytes go to their
    /// places in the buffer (parts continuing each other joined, so a block wholly wanted in
    /// order is read straight into place); of a block checked before only those bytes are
    /// read, and nothing without `deliver`.
    pub fn plan_runs(
        &self,
        plan: &mut ByteReads,
        checked: &CheckedBlocks,
        runs: impl IntoIterator<Item = (u64, u64, usize)>,
        deliver: bool,
    ) {
        let runs: Vec<(u64, u64, usize)> = runs.into_iter().collect();
        // Each touched block's parts, gathered over all the runs: a row of a wide tile
        // crosses several boxes, and a box is read once. A band of boxes one run covers
        // whole, none checked before (a whole tile's read), is taken at once.
        let mut blocks: BTreeMap<u64, Vec<Part>> = BTreeMap::new();
        let mut whole: Vec<(Band, usize)> = Vec::new();
        for &(s, d, n) in &runs {
            let (mut at, end, mut dst) = (s, s + n as u64, d as usize);
            while at < end {
                let (k, from, left) = self.grid.locate(at);
                // (Only where a box begins: the band's first box, at its first byte.)
                let band = (from == 0).then(|| self.grid.band(k)).flatten();
                if let Some(band) = band.filter(|b| {
                    b.start == at
                        && b.end <= end
                        && (b.first..b.first + b.count).all(|j| !checked.contains(self.tile, j))
                }) {
                    whole.push((band, dst));
                    dst += (band.end - band.start) as usize;
                    at = band.end;
                    continue;
                }
                let n = left.min(end - at) as usize;
                let parts = blocks.entry(k).or_default();
                let from = from as usize;
                match parts.last_mut() {
                    Some(p) if p.0 + p.2 == from && p.1 + p.2 == dst => p.2 += n,
                    _ if !deliver => {}
                    _ => parts.push((from, dst, n)),
                }
                at += n as u64;
                dst += n;
            }
        }
        for (band, dst) in whole {
            let part = vec![(0, dst, (band.end - band.start) as usize)];
            let parts = if deliver { part } else { Vec::new() };
            self.plan_band(plan, &band, band.first..band.first + band.count, parts);
        }
        // Boxes side by side in a band, touched and not checked yet (a chunk several boxes
        // wide), are read together: their rows are one read each, not one per box.
        let mut from = 0;
        let mut keys = blocks.keys().copied().peekable();
        let mut groups = Vec::new();
        while let Some(k) = keys.next() {
            let Some(band) = self
                .grid
                .band(k)
                .filter(|_| !checked.contains(self.tile, k))
            else {
                continue;
            };
            let mut end = k + 1;
            while keys.peek() == Some(&end)
                && end < band.first + band.count
                && !checked.contains(self.tile, end)
            {
                keys.next();
                end += 1;
            }
            if end > k + 1 {
                groups.push((band, k..end));
            }
        }
        for (band, boxes) in groups {
            boxes.clone().for_each(|j| drop(blocks.remove(&j)));
            // The runs' bytes within these boxes, in their order (runs are in the tile's).
            while from < runs.len() && runs[from].0 + runs[from].2 as u64 <= band.start {
                from += 1;
            }
            let within = runs[from..].iter().take_while(|r| r.0 < band.end);
            let parts = match deliver {
                true => self.band_parts(&band, &boxes, within),
                false => Vec::new(),
            };
            self.plan_band(plan, &band, boxes, parts);
        }
        for (k, parts) in blocks {
            self.plan_block(plan, checked, k, parts, deliver);
        }
    }

    /// Where the bytes of `runs` (byte in the tile, byte in the buffer, length) that lie in
    /// boxes `boxes` of `band` go: parts of those boxes' rows one after another.
    fn band_parts<'r>(
        &self,
        band: &Band,
        boxes: &std::ops::Range<u64>,
        runs: impl Iterator<Item = &'r (u64, u64, usize)>,
    ) -> Vec<Part> {
        let (lo, hi) = self.columns(band, boxes);
        let width = hi - lo;
        let mut parts: Vec<Part> = Vec::new();
        for &(s, d, n) in runs {
            let (first, end) = (s.max(band.start), (s + n as u64).min(band.end));
            let mut row = first.saturating_sub(band.start) / band.line;
            while first < end && band.start + row * band.line < end {
                let line = band.start + row * band.line;
                let (a, b) = ((line + lo).max(first), (line + hi).min(end));
                if a < b {
                    let o = (row * width + a - line - lo) as usize;
                    let (dst, n) = (d as usize + (a - s) as usize, (b - a) as usize);
                    match parts.last_mut() {
                        Some(p) if p.0 + p.2 == o && p.1 + p.2 == dst => p.2 += n,
                        _ => parts.push((o, dst, n)),
                    }
                }
                row += 1;
            }
        }
        parts
    }

    /// The bytes of each row of `band` that boxes `boxes` hold: from, to.
    fn columns(&self, band: &Band, boxes: &std::ops::Range<u64>) -> (u64, u64) {
        let lo = (boxes.start - band.first) * band.col;
        (lo, ((boxes.end - band.first) * band.col).min(band.line))
    }

    /// Plans reading boxes `boxes` of `band` together (their part of each of its rows), each
    /// box checked, `parts` of them delivered.
    fn plan_band(
        &self,
        plan: &mut ByteReads,
        band: &Band,
        boxes: std::ops::Range<u64>,
        parts: Vec<Part>,
    ) {
        let (lo, hi) = self.columns(band, &boxes);
        let mut ranges: Vec<(u64, usize)> = Vec::new();
        let mut line = band.start;
        while line < band.end {
            for (at, n) in self.place.ranges(line + lo, line + hi) {
                match ranges.last_mut() {
                    Some(last) if last.0 + last.1 as u64 == at => last.1 += n,
                    _ => ranges.push((at, n)),
                }
            }
            line += band.line;
        }
        let check = Check::Band {
            line: (hi - lo) as usize,
            col: band.col as usize,
            sums: self.sums[boxes.start as usize..boxes.end as usize].to_vec(),
            labels: boxes.map(|k| self.label(k)).collect(),
        };
        plan.verified(self.file, ranges, check, parts);
    }

    /// Plans checking blocks `blocks` of the tile, nothing delivered (`h5tile check`).
    /// Bands of boxes the range holds whole are read in one go each.
    pub fn plan_blocks(&self, plan: &mut ByteReads, blocks: std::ops::Range<u64>) {
        let mut k = blocks.start;
        while k < blocks.end {
            match self.grid.band(k) {
                Some(band) if band.first == k && k + band.count <= blocks.end => {
                    self.plan_band(plan, &band, k..k + band.count, Vec::new());
                    k += band.count;
                }
                _ => {
                    let check = Check::One(self.sums[k as usize], self.label(k));
                    plan.verified(self.file, self.ranges(k), check, Vec::new());
                    k += 1;
                }
            }
        }
    }

    /// How many blocks the tile has.
    pub fn blocks(&self) -> u64 {
        self.grid.count()
    }

    fn plan_block(
        &self,
        plan: &mut ByteReads,
        checked: &CheckedBlocks,
        k: u64,
        parts: Vec<Part>,
        deliver: bool,
    ) {
        let ranges = self.ranges(k);
        match checked.contains(self.tile, k) {
            true if deliver => plan.checked_before(self.file, &ranges, &parts, self.label(k)),
            true => {}
            false => {
                let check = Check::One(self.sums[k as usize], self.label(k));
                plan.verified(self.file, ranges, check, parts)
            }
        }
    }

    /// Where block `k`'s bytes lie in the file, in the block's order (neighbours joined).
    fn ranges(&self, k: u64) -> Vec<(u64, usize)> {
        let mut ranges: Vec<(u64, usize)> = Vec::new();
        for (start, len) in self.grid.runs(k) {
            for (at, n) in self.place.ranges(start, start + len) {
                match ranges.last_mut() {
                    Some(last) if last.0 + last.1 as u64 == at => last.1 += n,
                    _ => ranges.push((at, n)),
                }
            }
        }
        ranges
    }

    fn label(&self, k: u64) -> BlockLabel {
        let runs = self.grid.runs(k);
        let first = runs.first().map_or(0, |r| r.0);
        let end = runs.last().map_or(0, |r| r.0 + r.1);
        BlockLabel {
            tile: self.tile,
            block: k,
            in_tile: (first, end),
            bytes: self.grid.block_len(k),
        }
    }
}

/// The blocks one reader has found matching their checksums, per tile (the caller's number),
/// with the file they were read from: a later read of the reader takes its bytes of such a
/// block without reading the rest of it or summing it again (`ByteReads::checked_before`).
/// Reads in row-major order of narrow boxes touch each block many times (in runs, a 1 MiB
/// block holds 16 rows of a 8192-wide float64 tile, a 1024-wide box an eighth of each; boxes
/// not on the chunks' grid are shared by neighbouring chunks too): each is summed once. A bit
/// per block: a terabyte of tiles takes 128 KiB.
#[derive(Default)]
pub(crate) struct CheckedBlocks {
    /// Per tile: the file's (device, inode) and a bit per block.
    tiles: std::collections::HashMap<usize, ((u64, u64), Vec<u64>)>,
}

impl CheckedBlocks {
    /// Tile `tile`'s bytes are read from the file `id` names: what was checked in another
    /// file (one that has replaced it since) is forgotten.
    pub fn reading_from(&mut self, tile: usize, id: (u64, u64)) {
        if self.tiles.get(&tile).is_some_and(|(was, _)| *was != id) {
            self.tiles.remove(&tile);
        }
        self.tiles.entry(tile).or_insert((id, Vec::new()));
    }

    /// Whether block `k` of tile `tile` was checked.
    pub fn contains(&self, tile: usize, k: u64) -> bool {
        let Some((_, bits)) = self.tiles.get(&tile) else {
            return false;
        };
        bits.get((k / 64) as usize)
            .is_some_and(|w| w & (1 << (k % 64)) != 0)
    }

    /// Does `plan` into `buf`, then remembers the blocks it summed (each matched). A failure
    /// is `failed(path, about, the block that did not match, if that was it, error)` of the
    /// first file that failed. Returns what the plan cost.
    pub fn run<E>(
        &mut self,
        plan: ByteReads,
        buf: &mut [u8],
        failed: impl Fn(&PathBuf, &str, Option<&Mismatch>, &io::Error) -> E,
    ) -> Result<ReadCounts, E> {
        let counts = plan.counts();
        let summed: Vec<BlockLabel> = plan.summed().collect();
        plan.execute(buf, |path, about, e| {
            let mismatch = e.get_ref().and_then(|e| e.downcast_ref::<Mismatch>());
            failed(path, about, mismatch, &e)
        })?;
        summed.into_iter().for_each(|label| self.insert(label));
        Ok(counts)
    }

    /// The block `label` names matched its checksum (in the file `reading_from` gave).
    pub fn insert(&mut self, label: BlockLabel) {
        let Some((_, bits)) = self.tiles.get_mut(&label.tile) else {
            return;
        };
        let k = label.block;
        let word = (k / 64) as usize;
        if bits.len() <= word {
            bits.resize(word + 1, 0);
        }
        bits[word] |= 1 << (k % 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::blocks::Scheme;
    use crate::layout::checksums::block_sum;
    use crate::layout::runs::box_runs;
    use crate::ops::tile_io::byte_reads::file_id;
    use std::fs::File;
    use std::path::{Path, PathBuf};

    /// A 4 x 8 tile of 4-byte elements (128 bytes) from byte 10 of a file, in blocks of 32
    /// bytes: the file's path, its bytes and the blocks' checksums.
    fn tile_file(dir: &Path) -> (PathBuf, Vec<u8>, Vec<u64>) {
        let path = dir.join("tile");
        let bytes: Vec<u8> = (0..138u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let sums = bytes[10..].chunks(32).map(block_sum).collect();
        (path, bytes, sums)
    }

    /// Where `tile_file`'s tile lies.
    static PLACE: Placement = Placement::Run(10);

    /// `tile_file`'s tile (the caller's number `tile`) in a new plan of `total` bytes.
    fn summed<'a>(
        path: &Path,
        sums: &'a [u64],
        tile: usize,
        total: usize,
    ) -> (ByteReads, SummedTile<'a>) {
        let mut plan = ByteReads::new(total);
        let file = File::open(path).unwrap();
        let summed = SummedTile {
            file: plan.add_file(file, path.to_path_buf(), 138, String::new()),
            tile,
            place: &PLACE,
            grid: Box::leak(Box::new(Scheme::Runs { block: 32 }.grid(&[4, 8], 4))),
            sums,
        };
        (plan, summed)
    }

    fn plan(
        path: &Path,
        sums: &[u64],
        checked: &CheckedBlocks,
        runs: &[(u64, u64, usize)],
        deliver: bool,
    ) -> ByteReads {
        let total = runs.iter().map(|r| r.2).sum();
        let (mut plan, summed) = summed(path, sums, 0, if deliver { total } else { 0 });
        summed.plan_runs(&mut plan, checked, runs.iter().copied(), deliver);
        plan
    }

    /// The last column of the tile's first two rows (elements 7 and 15) touches blocks 0 and
    /// 1: both are read whole and summed once, and the two elements delivered; a block
    /// checked before is read only for its part, and not at all when nothing is delivered.
    #[test]
    fn a_read_checks_each_block_its_runs_touch_and_no_other() {
        let d = tempfile::tempdir().unwrap();
        let (path, bytes, sums) = tile_file(d.path());
        let runs = [(28, 0, 4), (60, 4, 4)];
        let mut checked = CheckedBlocks::default();
        checked.reading_from(0, file_id(&File::open(&path).unwrap()).unwrap());
        let first = plan(&path, &sums, &checked, &runs, true);
        let counts = first.counts();
        assert_eq!((counts.blocks_summed, counts.bytes_read), (2, 64));
        let summed: Vec<BlockLabel> = first.summed().collect();
        assert_eq!(
            summed.iter().map(|l| l.in_tile).collect::<Vec<_>>(),
            [(0, 32), (32, 64)]
        );
        let mut buf = vec![0u8; 8];
        first.execute(&mut buf, |_, _, e| e).unwrap();
        assert_eq!(&buf[..4], &bytes[38..42]);
        assert_eq!(&buf[4..], &bytes[70..74]);
        checked.insert(summed[0]);
        let again = plan(&path, &sums, &checked, &runs, true).counts();
        assert_eq!((again.blocks_summed, again.bytes_read), (1, 4 + 32));
        let unread = plan(&path, &sums, &checked, &runs, false).counts();
        assert_eq!((unread.blocks_summed, unread.bytes_read), (1, 32));
    }

    /// A survey of every block goes on past bad ones and reports each; neighbouring bad
    /// blocks join into one range of the file.
    #[test]
    fn a_survey_finds_every_bad_block_and_joins_neighbours() {
        let d = tempfile::tempdir().unwrap();
        let (path, mut bytes, sums) = tile_file(d.path());
        bytes[10 + 40] ^= 1; // block 1
        bytes[10 + 70] ^= 1; // block 2
        std::fs::write(&path, &bytes).unwrap();
        let (mut plan, summed) = summed(&path, &sums, 3, 0);
        summed.plan_blocks(&mut plan, 0..summed.blocks());
        let seen = std::cell::Cell::new(0);
        let (found, failed) = plan.survey(&|n| seen.set(seen.get() + n));
        assert!(failed.is_none());
        assert_eq!(seen.get(), 128);
        let ranges: Vec<(u64, u64)> = found.iter().map(|m| (m.at, m.end)).collect();
        assert_eq!(ranges, [(42, 74), (74, 106)]);
        let mut joined = found[0].clone();
        assert!(joined.join(&found[1]));
        assert_eq!(
            (joined.at, joined.end, joined.label.in_tile),
            (42, 106, (32, 96))
        );
        assert_eq!(joined.label.tile, 3);
        assert_eq!(
            joined.to_string(),
            "bytes 42..106 do not match their checksum (bytes 32..96 of the tile)"
        );
        assert!(!found[1].clone().join(&found[0]));
    }

    /// A 10 x 12 tile of 2-byte elements (rows of 24 bytes) from byte 6 of a file, in boxes
    /// 8 bytes wide and 32 in all (4 rows deep): 3 bands of 3 boxes. A read of a box's columns
    /// reads and sums only the boxes it touches; a whole read reads each band in one go, and
    /// finds a changed byte in its box.
    #[test]
    fn boxes_are_read_alone_for_narrow_reads_and_by_bands_for_wide_ones() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("wide");
        let mut bytes: Vec<u8> = (0..246u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let (shape, elem) = ([10u64, 12], 2usize);
        let grid = Scheme::Boxes { block: 32, row: 8 }.grid(&shape, elem);
        assert_eq!(grid.count(), 9);
        let tile = &bytes[6..];
        // (The writer's sums, which layout::checksums' tests check against each box gathered.)
        let sums = crate::layout::checksums::block_sums(grid.clone(), &tile[..240]);
        let place = Placement::Run(6);
        let read = |want: ([u64; 2], [u64; 2]), checked: &CheckedBlocks| {
            let (at, box_shape) = want;
            let runs = box_runs(&shape, &at, &box_shape, &[0, 0], &box_shape, elem);
            let total = (box_shape[0] * box_shape[1]) as usize * elem;
            let mut plan = ByteReads::new(total);
            let file = File::open(&path).unwrap();
            let summed = SummedTile {
                file: plan.add_file(file, path.clone(), 246, String::new()),
                tile: 0,
                place: &place,
                grid: &grid,
                sums: &sums,
            };
            summed.plan_runs(&mut plan, checked, runs, true);
            let counts = plan.counts();
            let mut buf = vec![0u8; total];
            let done = plan.execute(&mut buf, |_, _, e| e).map(|()| buf);
            (counts, done)
        };
        let checked = CheckedBlocks::default();
        // Columns 4..8 of rows 0..4: box 1 alone (its 4 rows of 8 bytes).
        let (counts, got) = read(([0, 4], [4, 4]), &checked);
        assert_eq!((counts.blocks_summed, counts.bytes_read), (1, 32));
        let got = got.unwrap();
        for r in 0..4 {
            assert_eq!(&got[r * 8..r * 8 + 8], &tile[r * 24 + 8..r * 24 + 16]);
        }
        // Columns 2..10 of rows 1..7: boxes 0-2 of bands 0 and 1, each band's three read
        // together (their rows of 24 bytes), the 2 x 3 boxes summed.
        let (counts, got) = read(([1, 2], [6, 8]), &checked);
        assert_eq!((counts.blocks_summed, counts.bytes_read), (6, 2 * 96));
        let got = got.unwrap();
        for r in 0..6 {
            let row = (r + 1) * 24;
            assert_eq!(
                &got[r * 16..r * 16 + 16],
                &tile[row + 4..row + 20],
                "row {r}"
            );
        }
        // The whole tile: every box summed, every byte read once, and delivered in order.
        let (counts, got) = read(([0, 0], [10, 12]), &checked);
        assert_eq!((counts.blocks_summed, counts.bytes_read), (9, 240));
        assert_eq!(got.unwrap(), tile[..240]);
        // A changed byte in row 5, column 11 (bytes 22..24 of the row): box 5 (band 1, box 2).
        bytes[6 + 5 * 24 + 22] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let e = read(([0, 0], [10, 12]), &checked).1.unwrap_err();
        let m = e
            .get_ref()
            .and_then(|e| e.downcast_ref::<Mismatch>())
            .unwrap();
        assert_eq!((m.label.block, m.label.bytes, m.others.len()), (5, 32, 0));
        // A read away from it still reads whole.
        assert!(read(([0, 0], [4, 12]), &checked).1.is_ok());
    }

    /// A reader's checked blocks, per tile and file: another file under the tile (one that
    /// replaced it) starts over.
    #[test]
    fn checked_blocks_are_kept_per_tile_and_file() {
        let mut checked = CheckedBlocks::default();
        let label = |tile, k: u64| BlockLabel {
            tile,
            block: k,
            in_tile: (k << 20, (k + 1) << 20),
            bytes: 1 << 20,
        };
        checked.reading_from(3, (1, 10));
        checked.reading_from(4, (1, 11));
        checked.insert(label(3, 0));
        checked.insert(label(3, 130));
        checked.insert(label(4, 1));
        assert!(checked.contains(3, 0) && checked.contains(3, 130) && checked.contains(4, 1));
        assert!(!checked.contains(3, 1) && !checked.contains(4, 0) && !checked.contains(5, 0));
        checked.reading_from(3, (1, 10));
        assert!(checked.contains(3, 130), "the same file: kept");
        checked.reading_from(3, (1, 12));
        assert!(
            !checked.contains(3, 0) && !checked.contains(3, 130),
            "another file"
        );
        assert!(checked.contains(4, 1));
    }
}
