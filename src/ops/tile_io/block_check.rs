//! How a checked read sums what it reads and what it says when a block does not match: one
//! block (a run of a tile's bytes, or a box gathered from rows apart), or a band of boxes
//! read in one go (whole rows of a wide tile, each row cut across the band's boxes), each box
//! summed as its bytes pass, while they are still in the core's cache.

use crate::layout::checksums::BlockSum;

/// Which block a checked run is, for its caller's error: the caller's number for the tile,
/// the block's number in the tile, the span of the tile's bytes it lies in (first, end) and
/// its length (less than the span for a box, whose rows lie apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockLabel {
    pub tile: usize,
    pub block: u64,
    pub in_tile: (u64, u64),
    pub bytes: u64,
}

impl BlockLabel {
    /// Whether the block is a run of the tile's bytes (else a box).
    fn is_run(&self) -> bool {
        self.in_tile.1 - self.in_tile.0 == self.bytes
    }
}

/// A block whose bytes do not match their checksum: the error a plan's run returns, for its
/// caller to name the tile (`io::Error::get_ref` downcast). A band of boxes read together
/// gives its first bad box, the others in `others`.
#[derive(Clone, Debug)]
pub(crate) struct Mismatch {
    /// The bytes of the file holding the block, from its first to its last.
    pub at: u64,
    pub end: u64,
    pub label: BlockLabel,
    pub others: Vec<Mismatch>,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        // The file's bytes, then the tile's: in the single-file layout the first span also
        // holds other tiles' rows, and the second says which of the tile's bytes are bad.
        let (s, e) = self.label.in_tile;
        write!(
            f,
            "bytes {}..{} do not match their checksum",
            self.at, self.end
        )?;
        match self.label.is_run() {
            true => write!(f, " (bytes {s}..{e} of the tile)"),
            false => write!(
                f,
                " (block {} of the tile, a box of {} bytes in its bytes {s}..{e})",
                self.label.block, self.label.bytes
            ),
        }
    }
}

impl std::error::Error for Mismatch {}

impl Mismatch {
    /// Takes in `next` when it is the run after this one of the same tile, so that a run of
    /// bad blocks is described once; says whether it did. Boxes are told one by one.
    pub fn join(&mut self, next: &Mismatch) -> bool {
        let follows = next.label.tile == self.label.tile
            && self.label.is_run()
            && next.label.is_run()
            && next.label.in_tile.0 == self.label.in_tile.1;
        if follows {
            self.end = next.end;
            self.label.in_tile.1 = next.label.in_tile.1;
            self.label.bytes = self.label.in_tile.1 - self.label.in_tile.0;
        }
        follows
    }
}

/// What a checked run compares its bytes with.
#[derive(Debug)]
pub(crate) enum Check {
    /// Parts of a block that matched before: read, not summed.
    Before(BlockLabel),
    /// One block, its bytes those of the run in order.
    One(u64, BlockLabel),
    /// A band of boxes: the run's bytes are whole rows of the tile, `line` bytes each, every
    /// row cut into `col`-byte pieces, the first going to the band's first box, and so on
    /// (the last box may be narrower); `sums[c]` and `labels[c]` are box `c`'s.
    Band {
        line: usize,
        col: usize,
        sums: Vec<u64>,
        labels: Vec<BlockLabel>,
    },
}

impl Check {
    /// The blocks it sums (none for `Before`).
    pub fn summed(&self) -> &[BlockLabel] {
        match self {
            Check::Before(_) => &[],
            Check::One(_, label) => std::slice::from_ref(label),
            Check::Band { labels, .. } => labels,
        }
    }

    /// The block it names when its file cannot be read.
    pub fn label(&self) -> BlockLabel {
        match self {
            Check::Before(label) | Check::One(_, label) => *label,
            Check::Band { labels, .. } => labels[0],
        }
    }

    /// Whether it sums what it reads.
    pub fn sums(&self) -> bool {
        !matches!(self, Check::Before(_))
    }

    /// A sum in progress of the run's bytes, given in order.
    pub fn start(&self) -> Summer<'_> {
        let boxes = match self {
            Check::Band { sums, .. } => sums.len(),
            _ => 1,
        };
        Summer {
            check: self,
            sums: (0..boxes).map(|_| BlockSum::new()).collect(),
            at: 0,
        }
    }
}

/// The byte of the file at offset `o` of a run lying at `ranges`.
fn file_at(ranges: &[(u64, usize)], mut o: usize) -> u64 {
    for &(at, n) in ranges {
        if o < n {
            return at + o as u64;
        }
        o -= n;
    }
    ranges.last().map_or(0, |r| r.0 + r.1 as u64)
}

/// The sums of a run's bytes so far.
pub(crate) struct Summer<'c> {
    check: &'c Check,
    sums: Vec<BlockSum>,
    /// The run's bytes summed so far.
    at: usize,
}

impl Summer<'_> {
    /// The run's next bytes.
    pub fn add(&mut self, mut bytes: &[u8]) {
        match self.check {
            Check::Before(_) => {}
            Check::One(..) => self.sums[0].add(bytes),
            Check::Band { line, col, .. } => {
                while !bytes.is_empty() {
                    let pos = self.at % line;
                    let c = pos / col;
                    let n = ((c + 1) * col).min(*line).min(pos + bytes.len()) - pos;
                    self.sums[c].add(&bytes[..n]);
                    bytes = &bytes[n..];
                    self.at += n;
                }
                return;
            }
        }
        self.at += bytes.len();
    }

    /// Compares the sums with the blocks' checksums, the run lying at `ranges` of its file;
    /// the first bad block with the others, if any, each with the bytes of the file from its
    /// first to its last.
    pub fn finish(self, ranges: &[(u64, usize)]) -> Result<(), Mismatch> {
        let total: usize = ranges.iter().map(|r| r.1).sum();
        let bad = |label: BlockLabel, (first, last): (usize, usize)| Mismatch {
            at: file_at(ranges, first),
            end: file_at(ranges, last) + 1,
            label,
            others: Vec::new(),
        };
        let mut found: Vec<Mismatch> = match self.check {
            Check::Before(_) => Vec::new(),
            Check::One(sum, label) => match self.sums[0].finish() == *sum {
                true => Vec::new(),
                false => vec![bad(*label, (0, total.saturating_sub(1)))],
            },
            // Box c: from its piece of the first row to its piece of the last.
            Check::Band {
                line,
                col,
                sums,
                labels,
            } => (self.sums.iter().zip(sums).zip(labels).enumerate())
                .filter(|(_, ((got, want), _))| got.finish() != **want)
                .map(|(c, (_, label))| {
                    let last_row = (total / line).saturating_sub(1) * line;
                    let last = last_row + ((c + 1) * col).min(*line) - 1;
                    bad(*label, (c * col, last))
                })
                .collect(),
        };
        match found.is_empty() {
            true => Ok(()),
            false => {
                let mut first = found.remove(0);
                first.others = found;
                Err(first)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::checksums::block_sum;

    fn label(block: u64, in_tile: (u64, u64), bytes: u64) -> BlockLabel {
        BlockLabel {
            tile: 2,
            block,
            in_tile,
            bytes,
        }
    }

    /// Rows of 10 bytes cut into boxes 4 wide (4, 4, 2): each box summed over its pieces of
    /// every row, however the bytes come; a changed byte fails its box alone.
    #[test]
    fn a_band_sums_each_box_over_its_pieces_of_every_row() {
        let bytes: Vec<u8> = (0..30u8).collect(); // 3 rows
        let boxes: Vec<Vec<u8>> = [(0, 4), (4, 8), (8, 10)]
            .iter()
            .map(|&(a, b)| {
                (0..3)
                    .flat_map(|r| bytes[r * 10 + a..r * 10 + b].to_vec())
                    .collect()
            })
            .collect();
        let labels = vec![
            label(0, (0, 24), 12),
            label(1, (4, 28), 12),
            label(2, (8, 30), 6),
        ];
        let check = Check::Band {
            line: 10,
            col: 4,
            sums: boxes.iter().map(|b| block_sum(b)).collect(),
            labels: labels.clone(),
        };
        for piece in [1, 3, 7, 30] {
            let mut summer = check.start();
            bytes.chunks(piece).for_each(|p| summer.add(p));
            summer.finish(&[(100, 30)]).unwrap();
        }
        let mut bad = bytes.clone();
        bad[19] ^= 1; // row 1, box 2
        let mut summer = check.start();
        summer.add(&bad);
        let m = summer.finish(&[(100, 30)]).unwrap_err();
        // Box 2 is bytes 8..10 of each row: of the file's 100..130, 108 to 129.
        assert_eq!(
            (m.at, m.end, m.label, m.others.len()),
            (108, 130, labels[2], 0)
        );
        assert_eq!(
            m.to_string(),
            "bytes 108..130 do not match their checksum (block 2 of the tile, a box of 6 \
             bytes in its bytes 8..30)"
        );
        bad[0] ^= 1;
        let mut summer = check.start();
        summer.add(&bad);
        // Rows apart in the file (the single-file layout): box 0 is 0..4 of each.
        let m = summer
            .finish(&[(100, 10), (200, 10), (300, 10)])
            .unwrap_err();
        assert_eq!((m.label, m.others[0].label), (labels[0], labels[2]));
        assert_eq!((m.at, m.end), (100, 304));
        assert_eq!((m.others[0].at, m.others[0].end), (108, 310));
    }

    #[test]
    fn runs_join_and_boxes_do_not() {
        let m = |label| Mismatch {
            at: 0,
            end: 10,
            label,
            others: Vec::new(),
        };
        let mut a = m(label(0, (0, 10), 10));
        assert!(a.join(&m(label(1, (10, 20), 10))));
        assert_eq!((a.label.in_tile, a.label.bytes), ((0, 20), 20));
        let mut b = m(label(0, (0, 30), 10));
        assert!(!b.join(&m(label(1, (30, 60), 10))));
    }
}
