//! A dataset cut into chunks of one shape, clipped at its far edges, numbered in row-major
//! order, and dealt over ranks in contiguous runs (batched reads).

use crate::geometry::tile::Tile;
use crate::status::*;
use std::ops::Range;

/// The chunks of a dataset of `shape` cut by `chunk`, numbered in row-major order of their
/// offsets (last axis fastest); chunks at the far edges are clipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkGrid {
    shape: Vec<u64>,
    chunk: Vec<u64>,
    counts: Vec<u64>,
}

impl ChunkGrid {
    /// The elements of the largest chunk (a chunk clipped to the dataset where it is larger).
    pub fn largest_chunk(&self) -> usize {
        (self.chunk.iter().zip(&self.shape))
            .map(|(&c, &s)| c.min(s) as usize)
            .product()
    }

    /// Checks `chunk` against the dataset's `shape`: one entry per axis, each > 0 (an entry
    /// above `i64::MAX` is a negative number passed as unsigned, and is refused as such).
    pub fn new(shape: &[u64], chunk: &[u64]) -> Result<ChunkGrid> {
        if chunk.len() != shape.len() {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "chunk shape has {} entries but the dataset has {} dimensions {shape:?}",
                    chunk.len(),
                    shape.len()
                ),
            );
        }
        if let Some((axis, &c)) = chunk
            .iter()
            .enumerate()
            .find(|(_, &c)| c == 0 || c > i64::MAX as u64)
        {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "chunk_shape[{axis}] is {}; every entry must be > 0",
                    c as i64
                ),
            );
        }
        let counts = shape
            .iter()
            .zip(chunk)
            .map(|(&s, &c)| s.div_ceil(c))
            .collect();
        Ok(ChunkGrid {
            shape: shape.to_vec(),
            chunk: chunk.to_vec(),
            counts,
        })
    }

    /// Number of chunks (0 for a dataset with no elements).
    pub fn len(&self) -> u128 {
        self.counts.iter().map(|&n| n as u128).product()
    }

    /// Chunk number `index` (< `len()`), clipped at the dataset's edge.
    pub fn chunk(&self, mut index: u128) -> Tile {
        let n = self.shape.len();
        let mut offset = vec![0u64; n];
        let mut shape = vec![0u64; n];
        for axis in (0..n).rev() {
            let count = self.counts[axis] as u128;
            let i = (index % count) as u64;
            index /= count;
            offset[axis] = i * self.chunk[axis];
            shape[axis] = self.chunk[axis].min(self.shape[axis] - offset[axis]);
        }
        Tile::new(offset, shape)
    }

    /// The chunks rank `rank` of `size` reads: a contiguous run, the runs differing in length by
    /// at most one, so each rank reads its part of the file in order.
    pub fn share(&self, rank: usize, size: usize) -> Range<u128> {
        let (n, p, r) = (self.len(), size as u128, rank as u128);
        let (base, extra) = (n / p, n % p);
        let start = r * base + r.min(extra);
        start..start + base + u128::from(r < extra)
    }

    /// Bounding box of chunks `range` (None when empty).
    pub fn bounds(&self, range: &Range<u128>) -> Option<Tile> {
        if range.is_empty() {
            return None;
        }
        let (first, last) = (self.chunk(range.start), self.chunk(range.end - 1));
        // Chunks in between may reach further on inner axes: widen those to the whole extent.
        let n = self.shape.len();
        let mut offset = vec![0u64; n];
        let mut shape = self.shape.clone();
        let outer = (0..n)
            .find(|&a| first.offset[a] != last.offset[a])
            .unwrap_or(n);
        for a in 0..n.min(outer + 1) {
            offset[a] = first.offset[a];
            shape[a] = last.offset[a] + last.shape[a] - first.offset[a];
        }
        Some(Tile::new(offset, shape))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_come_in_row_major_order_clipped_at_the_edges() {
        let g = ChunkGrid::new(&[5], &[2]).unwrap();
        let got: Vec<Tile> = (0..g.len()).map(|i| g.chunk(i)).collect();
        assert_eq!(
            got,
            vec![
                Tile::new(vec![0], vec![2]),
                Tile::new(vec![2], vec![2]),
                Tile::new(vec![4], vec![1])
            ]
        );
        let g = ChunkGrid::new(&[3, 5], &[2, 2]).unwrap();
        assert_eq!(g.len(), 6);
        let offsets: Vec<Vec<u64>> = (0..6).map(|i| g.chunk(i).offset).collect();
        assert_eq!(
            offsets,
            vec![
                vec![0, 0],
                vec![0, 2],
                vec![0, 4],
                vec![2, 0],
                vec![2, 2],
                vec![2, 4]
            ]
        );
        assert_eq!(g.chunk(5).shape, vec![1, 1]);
    }

    #[test]
    fn a_chunk_larger_than_the_dataset_is_one_clipped_chunk_and_empty_datasets_have_none() {
        let g = ChunkGrid::new(&[3, 4], &[100, 100]).unwrap();
        assert_eq!(g.len(), 1);
        assert_eq!(g.chunk(0), Tile::new(vec![0, 0], vec![3, 4]));
        assert_eq!(ChunkGrid::new(&[0, 4], &[2, 2]).unwrap().len(), 0);
    }

    #[test]
    fn bad_chunk_shapes_are_invalid_arguments_naming_the_entry() {
        let e = ChunkGrid::new(&[3, 4], &[2]).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT);
        assert!(
            e.message.contains("1 entries") && e.message.contains("2 dimensions"),
            "{}",
            e.message
        );
        let e = ChunkGrid::new(&[3, 4], &[2, 0]).unwrap_err();
        assert!(e.message.contains("chunk_shape[1] is 0"), "{}", e.message);
        let e = ChunkGrid::new(&[3, 4], &[-1i64 as u64, -2i64 as u64]).unwrap_err();
        assert!(e.message.contains("chunk_shape[0] is -1"), "{}", e.message);
    }

    #[test]
    fn shares_cover_every_chunk_once_and_differ_by_at_most_one() {
        let g = ChunkGrid::new(&[10, 10], &[3, 3]).unwrap();
        for size in 1..=7 {
            let shares: Vec<Range<u128>> = (0..size).map(|r| g.share(r, size)).collect();
            assert_eq!(shares[0].start, 0);
            assert_eq!(shares[size - 1].end, g.len());
            for w in shares.windows(2) {
                assert_eq!(w[0].end, w[1].start);
            }
            let lens: Vec<u128> = shares.iter().map(|r| r.end - r.start).collect();
            assert!(
                lens.iter().max().unwrap() - lens.iter().min().unwrap() <= 1,
                "{lens:?}"
            );
        }
    }

    #[test]
    fn bounds_contain_every_chunk_of_a_share() {
        let g = ChunkGrid::new(&[7, 9, 4], &[2, 4, 3]).unwrap();
        for size in 1..=5 {
            for rank in 0..size {
                let range = g.share(rank, size);
                let Some(b) = g.bounds(&range) else { continue };
                for i in range {
                    let c = g.chunk(i);
                    assert_eq!(c.intersection(&b), Some(c.clone()), "chunk {c} outside {b}");
                }
            }
        }
        assert_eq!(g.bounds(&(3..3)), None);
    }
}
