//! Where a tile's checksummed blocks lie among its bytes. A block is summed over its bytes in
//! the tile's row-major order; which bytes a block holds is the dataset's scheme:
//! - `Runs`: runs of `block` bytes from the tile's first (every master before boxes; compressed
//!   tiles, whose reads check their stored chunks instead);
//! - `Boxes`: a tile whose rows (its last dimension) are wider than `row` bytes is cut into
//!   boxes `row` bytes wide and as many rows deep as make `block` bytes, so that a read of a
//!   chunk narrower than the tile reads and sums about its own bytes, not whole rows of the
//!   tile (a 1024-wide chunk of an 8192-wide float64 tile read 8 times its bytes in runs);
//!   a tile whose rows are no wider than `row` is cut in runs of `block` bytes, which whole
//!   rows of it already are, more or less.
//!
//! Boxes, exactly (README, "Checksums in the master"): for a tile of shape `t` (n ≥ 2
//! dimensions) of `e`-byte elements with `t[n-1] * e > row`, the box edge is
//! `b[n-1] = row / e` elements, then, with `depth = block / row` rows to fill, for `k` from
//! `n-2` down to 0: `b[k] = min(t[k], depth)` and `depth = depth / b[k]`. Blocks are the boxes
//! of the grid `ceil(t[k] / b[k])`, clipped at the tile's edges, in row-major order of the
//! grid; a block's checksum is that of its elements in row-major order within the box.

use super::runs::box_rows;

/// How a dataset's tiles are cut into blocks (the master records it per dataset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Runs of `block` bytes.
    Runs { block: u64 },
    /// Boxes `row` bytes wide and `block` bytes in all, for tiles with rows wider than `row`.
    Boxes { block: u64, row: u64 },
}

impl Scheme {
    /// Bytes per block (the last ones, and boxes at a tile's edges, hold fewer).
    pub fn block(self) -> u64 {
        match self {
            Scheme::Runs { block } | Scheme::Boxes { block, .. } => block,
        }
    }

    /// The blocks of a tile of `shape` elements of `elem` bytes.
    pub fn grid(self, shape: &[u64], elem: usize) -> BlockGrid {
        let elem = elem.max(1) as u64;
        let len = shape.iter().product::<u64>() * elem;
        let n = shape.len();
        let block = self.block().max(1);
        let boxes = match self {
            Scheme::Boxes { row, .. } if n >= 2 && shape[n - 1] * elem > row && row >= elem => {
                let mut edge = vec![0u64; n];
                edge[n - 1] = row / elem;
                let mut depth = (block / (edge[n - 1] * elem)).max(1);
                for k in (0..n - 1).rev() {
                    edge[k] = shape[k].min(depth).max(1);
                    depth = (depth / edge[k]).max(1);
                }
                let counts = shape.iter().zip(&edge).map(|(t, b)| t.div_ceil(*b));
                Some(Boxes {
                    shape: shape.to_vec(),
                    counts: counts.collect(),
                    edge,
                    elem,
                })
            }
            _ => None,
        };
        BlockGrid { len, block, boxes }
    }

    /// In words, for `h5tile ls`.
    #[cfg(any(test, feature = "internals"))]
    pub fn describe(self) -> String {
        let mib = |b: u64| match b % (1 << 20) {
            0 => format!("{} MiB", b >> 20),
            _ => format!("{b} B"),
        };
        match self {
            Scheme::Runs { block } => format!("{} runs", mib(block)),
            Scheme::Boxes { block, row } => {
                format!("{} boxes, {} KiB wide", mib(block), row / 1024)
            }
        }
    }
}

/// The blocks of one tile: which of its bytes each holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockGrid {
    /// The tile's bytes.
    len: u64,
    /// Bytes per run, where the tile is cut in runs.
    block: u64,
    boxes: Option<Boxes>,
}

/// A tile cut into boxes.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Boxes {
    /// The tile's shape, the box edge and the number of boxes along each dimension (elements).
    shape: Vec<u64>,
    edge: Vec<u64>,
    counts: Vec<u64>,
    elem: u64,
}

/// A band of boxes: blocks `first..first + count`, lying in the tile's bytes `start..end`,
/// rows `line` bytes long, each box `col` bytes of every row (the last one the rest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Band {
    pub first: u64,
    pub count: u64,
    pub start: u64,
    pub end: u64,
    pub line: u64,
    pub col: u64,
}

impl Boxes {
    /// The first byte in the tile of the box whose first element is at `at`.
    fn first_byte(&self, at: &[u64]) -> u64 {
        let first = at
            .iter()
            .zip(&self.shape)
            .fold(0, |acc, (a, t)| acc * t + a);
        first * self.elem
    }

    /// Box `k`'s first element and shape (clipped at the tile's edges).
    fn place(&self, k: u64) -> (Vec<u64>, Vec<u64>) {
        let n = self.shape.len();
        let (mut at, mut shape) = (vec![0; n], vec![0; n]);
        let mut rest = k;
        for d in (0..n).rev() {
            at[d] = (rest % self.counts[d]) * self.edge[d];
            rest /= self.counts[d];
            shape[d] = self.edge[d].min(self.shape[d] - at[d]);
        }
        (at, shape)
    }
}

impl BlockGrid {
    /// How many blocks the tile has.
    pub fn count(&self) -> u64 {
        match &self.boxes {
            None => self.len.div_ceil(self.block),
            Some(b) => b.counts.iter().product(),
        }
    }

    /// The tile's bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the blocks are boxes (else runs of the tile's bytes).
    #[cfg(any(test, feature = "internals"))]
    pub fn is_boxes(&self) -> bool {
        self.boxes.is_some()
    }

    /// Block `k`'s bytes: runs (byte in the tile, length) in the block's order.
    pub fn runs(&self, k: u64) -> Vec<(u64, u64)> {
        let Some(b) = &self.boxes else {
            let start = k * self.block;
            return vec![(start, self.len.min(start + self.block) - start)];
        };
        let (at, shape) = b.place(k);
        let zero = vec![0; shape.len()];
        let (row, rows) = box_rows(&b.shape, &at, &shape, &zero, &shape);
        rows.map(|(s, _)| (s * b.elem, row * b.elem)).collect()
    }

    /// Block `k`'s length in bytes.
    pub fn block_len(&self, k: u64) -> u64 {
        match &self.boxes {
            None => self.len.min((k + 1) * self.block) - k * self.block,
            Some(b) => b.place(k).1.iter().product::<u64>() * b.elem,
        }
    }

    /// Where byte `at` of the tile lies: its block, its offset among that block's bytes, and
    /// how many bytes from it on follow it in both the tile and the block.
    pub fn locate(&self, at: u64) -> (u64, u64, u64) {
        let Some(b) = &self.boxes else {
            let k = at / self.block;
            return (
                k,
                at - k * self.block,
                self.len.min((k + 1) * self.block) - at,
            );
        };
        let n = b.shape.len();
        let line = b.shape[n - 1] * b.elem;
        let (mut rest, col) = (at / line, at % line);
        // The element's coordinates, then its box's and its place in that box (on the stack:
        // a read plans a call per row of every box it touches).
        let mut coord = [0u64; 32];
        coord[n - 1] = col / b.elem;
        for d in (0..n - 1).rev() {
            coord[d] = rest % b.shape[d];
            rest /= b.shape[d];
        }
        let (mut k, mut within) = (0u64, 0u64);
        for (d, &x) in coord[..n].iter().enumerate() {
            let c = x / b.edge[d];
            let lo = c * b.edge[d];
            let size = b.edge[d].min(b.shape[d] - lo);
            k = k * b.counts[d] + c;
            within = within * size + (x - lo);
        }
        let c = coord[n - 1] / b.edge[n - 1];
        let hi = ((c + 1) * b.edge[n - 1]).min(b.shape[n - 1]) * b.elem;
        (k, within * b.elem + col % b.elem, hi - col)
    }

    /// For boxes, the band holding block `k`: the boxes side by side across the tile's rows,
    /// whose bytes are whole rows of the tile, one after the other (the scheme's rule fills
    /// the dimensions from the last, so a box's rows are consecutive rows of the tile).
    pub fn band(&self, k: u64) -> Option<Band> {
        let b = self.boxes.as_ref()?;
        let n = b.shape.len();
        let across = b.counts[n - 1];
        let first = k - k % across;
        let (at, shape) = b.place(first);
        let line = b.shape[n - 1] * b.elem;
        let rows: u64 = shape[..n - 1].iter().product();
        let start = b.first_byte(&at);
        Some(Band {
            first,
            count: across,
            start,
            end: start + rows * line,
            line,
            col: b.edge[n - 1] * b.elem,
        })
    }

    /// Block `k` in words, for messages: the tile's bytes of a run, the elements of a box.
    pub fn describe(&self, k: u64) -> String {
        match &self.boxes {
            None => {
                let (start, len) = self.runs(k)[0];
                format!("bytes {start}..{} of the tile", start + len)
            }
            Some(b) => {
                let (at, shape) = b.place(k);
                let dims: Vec<String> = (at.iter().zip(&shape))
                    .map(|(a, s)| format!("{a}:{}", a + s))
                    .collect();
                format!("block {k}, elements [{}] of the tile", dims.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOXES: Scheme = Scheme::Boxes {
        block: 1 << 20,
        row: 8192,
    };

    /// Every byte of the tile in exactly one block, at the place `locate` gives, and the
    /// blocks' lengths adding up to the tile's.
    fn check_partition(grid: &BlockGrid) {
        let mut owner = vec![u64::MAX; grid.len() as usize];
        for k in 0..grid.count() {
            let mut within = 0;
            for (start, len) in grid.runs(k) {
                for at in start..start + len {
                    assert_eq!(owner[at as usize], u64::MAX, "byte {at} twice");
                    owner[at as usize] = k;
                    let (kk, w, left) = grid.locate(at);
                    assert_eq!((kk, w), (k, within), "byte {at}");
                    assert_eq!(left, start + len - at, "byte {at}");
                    within += 1;
                }
            }
            assert_eq!(within, grid.block_len(k));
        }
        assert!(owner.iter().all(|&k| k != u64::MAX));
    }

    #[test]
    fn a_wide_tile_is_cut_in_boxes_of_8_kib_rows_and_1_mib() {
        let grid = BOXES.grid(&[8192, 8192], 8);
        assert!(grid.is_boxes());
        assert_eq!(grid.count(), 64 * 8);
        assert_eq!(grid.block_len(0), 1 << 20);
        let runs = grid.runs(1);
        assert_eq!(runs.len(), 128);
        assert_eq!(runs[0], (8192, 8192));
        assert_eq!(runs[1], (65536 + 8192, 8192));
        assert_eq!(
            grid.describe(9),
            "block 9, elements [128:256, 1024:2048] of the tile"
        );
    }

    #[test]
    fn narrow_rows_and_one_dimension_are_cut_in_runs() {
        for (shape, elem) in [
            (vec![1000u64, 1024], 8usize),
            (vec![3 << 20], 1),
            (vec![5, 7], 4),
        ] {
            let grid = BOXES.grid(&shape, elem);
            assert!(!grid.is_boxes(), "{shape:?}");
            let runs = Scheme::Runs { block: 1 << 20 }.grid(&shape, elem);
            assert_eq!(grid, runs);
        }
        let grid = Scheme::Runs { block: 1 << 20 }.grid(&[3, 1 << 20], 1);
        assert_eq!(grid.count(), 3);
        assert_eq!(grid.runs(2), vec![(2 << 20, 1 << 20)]);
        assert_eq!(grid.describe(1), "bytes 1048576..2097152 of the tile");
    }

    #[test]
    fn boxes_partition_odd_tiles_of_every_rank() {
        let small = Scheme::Boxes { block: 64, row: 16 };
        for (shape, elem) in [
            (vec![7u64, 9], 4usize),
            (vec![3, 5, 11], 2),
            (vec![2, 3, 2, 13], 1),
            (vec![1, 40], 8),
            (vec![33, 3], 8),
            (vec![5, 17], 16),
        ] {
            let grid = small.grid(&shape, elem);
            check_partition(&grid);
        }
        check_partition(&Scheme::Runs { block: 10 }.grid(&[7, 3], 4));
        // A box 16 bytes wide and 4 rows deep: 64 bytes.
        let grid = small.grid(&[8, 8], 4);
        assert_eq!((grid.count(), grid.block_len(0)), (4, 64));
    }

    /// A band's boxes are side by side, and its bytes are exactly theirs, consecutive.
    #[test]
    fn a_band_is_the_boxes_across_consecutive_rows() {
        let small = Scheme::Boxes { block: 64, row: 16 };
        for (shape, elem) in [
            (vec![7u64, 9], 4usize),
            (vec![3, 5, 11], 2),
            (vec![2, 3, 2, 37], 1),
        ] {
            let grid = small.grid(&shape, elem);
            let mut k = 0;
            while k < grid.count() {
                let band = grid.band(k).unwrap();
                assert_eq!(band.first, k);
                let mut bytes: Vec<(u64, u64)> =
                    (k..k + band.count).flat_map(|j| grid.runs(j)).collect();
                bytes.sort_unstable();
                let total: u64 = bytes.iter().map(|r| r.1).sum();
                assert_eq!(
                    (bytes[0].0, total),
                    (band.start, band.end - band.start),
                    "{shape:?}"
                );
                let last = bytes[bytes.len() - 1];
                assert_eq!(last.0 + last.1, band.end, "{shape:?}");
                assert_eq!((band.end - band.start) % band.line, 0);
                for j in k..k + band.count {
                    assert_eq!(grid.band(j), Some(band));
                }
                k += band.count;
            }
        }
        assert_eq!(Scheme::Runs { block: 8 }.grid(&[4, 4], 4).band(0), None);
    }

    #[test]
    fn a_deep_box_spans_the_leading_dimensions() {
        // 3 x 100 x 2048 float64: 128 rows deep is all 100 rows of one plane, then 1 plane.
        let grid = BOXES.grid(&[3, 100, 2048], 8);
        assert_eq!(grid.count(), 3 * 2);
        assert_eq!(grid.block_len(0), 100 * 8192);
        assert_eq!(
            grid.describe(3),
            "block 3, elements [1:2, 0:100, 1024:2048] of the tile"
        );
    }
}
