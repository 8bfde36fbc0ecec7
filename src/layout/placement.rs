//! Where a tile's bytes lie in their file, and the runs of the file holding a range of them
//! in the tile's own order (the order its checksums count them in): one run (a tile file, a
//! subfile's dataset), or the tile's rows within a contiguous dataset (the single-file
//! layout), where a checksum block is gathered from the rows it covers.

use super::runs::tile_runs;
use crate::geometry::tile::Tile;

/// Where a tile's bytes are in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// One run from this byte (a tile file, a subfile's dataset).
    Run(u64),
    /// Rows: (byte in the file, byte in the tile, length), in the tile's order.
    Rows(Vec<(u64, u64, usize)>),
}

impl Placement {
    /// `tile`'s rows within a contiguous row-major dataset of shape `global` whose data start
    /// at byte `data_offset`, elements of `elem` bytes.
    pub fn rows_of(data_offset: u64, global: &[u64], tile: &Tile, elem: usize) -> Placement {
        let rows = tile_runs(global, tile, elem)
            .into_iter()
            .map(|(at, from, n)| (data_offset + at, from, n))
            .collect();
        Placement::Rows(rows)
    }

    /// The runs of the file, (first byte, length) in the tile's order, that hold the tile's
    /// bytes `start..end`.
    pub fn ranges(&self, start: u64, end: u64) -> Vec<(u64, usize)> {
        match self {
            Placement::Run(at) => vec![(at + start, (end - start) as usize)],
            Placement::Rows(rows) => {
                // The first row that ends past `start`: rows are in the tile's order.
                let first = rows.partition_point(|&(_, from, n)| from + n as u64 <= start);
                rows[first..]
                    .iter()
                    .take_while(|&&(_, from, _)| from < end)
                    .map(|&(at, from, n)| {
                        let (a, b) = (from.max(start), (from + n as u64).min(end));
                        (at + (a - from), (b - a) as usize)
                    })
                    .collect()
            }
        }
    }

    /// The bytes of the file that hold the tile's bytes `start..end`, from the first to the
    /// last (rows between them may hold other tiles' bytes), as the tools report them.
    pub fn file_range(&self, start: u64, end: u64) -> (u64, u64) {
        let ranges = self.ranges(start, end);
        match (ranges.first(), ranges.last()) {
            (Some(&(first, _)), Some(&(last, n))) => (first, last + n as u64),
            _ => (0, 0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::os::unix::fs::FileExt;

    #[test]
    fn rows_give_the_tile_s_bytes_in_its_own_order_from_anywhere() {
        // A 6 x 5 dataset of 2-byte elements from byte 100; the tile is rows 1..4, columns 1..4.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file_bytes: Vec<u8> = (0..100 + 60).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &file_bytes).unwrap();
        let file = File::open(&path).unwrap();
        let tile = Tile::new(vec![1, 1], vec![3, 3]);
        let place = Placement::rows_of(100, &[6, 5], &tile, 2);
        let mut whole = Vec::new();
        for r in 1..4 {
            let at = 100 + (r * 5 + 1) * 2;
            whole.extend_from_slice(&file_bytes[at..at + 6]);
        }
        for start in 0..whole.len() {
            for end in start..=whole.len() {
                let mut got = Vec::new();
                for (at, n) in place.ranges(start as u64, end as u64) {
                    let mut piece = vec![0u8; n];
                    file.read_exact_at(&mut piece, at).unwrap();
                    got.extend(piece);
                }
                assert_eq!(got, whole[start..end], "bytes {start}..{end}");
            }
        }
        // Tile bytes 4..8 lie in the first row's last two bytes and the second row's first two.
        assert_eq!(place.file_range(4, 8), (100 + 12 + 4, 100 + 22 + 2));
        assert_eq!(Placement::Run(7).file_range(4, 8), (11, 15));
    }
}
