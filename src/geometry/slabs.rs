//! A dataset's extent cut into boxes of bounded size, in C order (`pack` copies a dataset box
//! by box): pure geometry.

use crate::geometry::tile::Tile;

/// The boxes, in C order, that cover a dataset of `shape` with elements of `elem` bytes, each
/// of at most `bound` bytes where one element fits: the trailing dimensions whole, as many
/// indices of the one before them as fit, and single indices of those further ahead. A scalar
/// dataset is one empty box; a dataset with no elements has none.
#[derive(Clone, Debug)]
pub struct Slabs {
    shape: Vec<u64>,
    elem: u64,
    /// The dimension cut into runs of `step` indices; those before it are cut into single
    /// indices, those after it are whole.
    split: usize,
    step: u64,
    /// The next box's first index along dimensions up to `split`; None when done.
    next: Option<Vec<u64>>,
}

impl Slabs {
    pub fn new(shape: &[u64], elem: u64, bound: u64) -> Slabs {
        let ndim = shape.len();
        let trailing = |d: usize| {
            shape[d + 1..]
                .iter()
                .fold(u128::from(elem), |n, &e| n.saturating_mul(u128::from(e)))
        };
        let split = (0..ndim)
            .find(|&d| trailing(d) <= u128::from(bound))
            .unwrap_or(ndim.saturating_sub(1));
        let step = match ndim {
            0 => 1,
            _ => {
                let fit = u128::from(bound) / trailing(split).max(1);
                fit.clamp(1, u128::from(shape[split].max(1))) as u64
            }
        };
        let empty = shape.contains(&0);
        Slabs {
            shape: shape.to_vec(),
            elem,
            split,
            step,
            next: (!empty).then(|| vec![0; ndim.min(split + 1)]),
        }
    }

    /// Boxes of whole chunks of shape `chunk` (`chunk_bytes` each) of a dataset of `shape`:
    /// as many chunks along the chunks' axis as fit in `bound` bytes, one at least. The box at
    /// the end of the axis ends where the dataset does, as its last chunk does.
    pub fn of_chunks(
        shape: &[u64],
        elem: u64,
        (chunk, chunk_bytes): (&[u64], u64),
        bound: u64,
    ) -> Slabs {
        // The axis: the last dimension the chunks do not span whole (the first when they
        // span all); before it the chunks are one index wide.
        let axis = (0..shape.len())
            .rev()
            .find(|&d| chunk[d] != shape[d])
            .unwrap_or(0);
        let per_chunk = chunk_bytes;
        let step = (bound / per_chunk.max(1))
            .max(1)
            .saturating_mul(chunk[axis]);
        Slabs {
            shape: shape.to_vec(),
            elem,
            split: axis,
            step: step.min(shape[axis]),
            next: (!shape.contains(&0)).then(|| vec![0; axis + 1]),
        }
    }

    /// Bytes of the largest box (the first).
    pub fn largest_bytes(&self) -> u64 {
        self.clone().next().map_or(0, |t| t.volume() as u64) * self.elem
    }
}

impl Iterator for Slabs {
    type Item = Tile;

    fn next(&mut self) -> Option<Tile> {
        let at = self.next.take()?;
        let ndim = self.shape.len();
        if ndim == 0 {
            return Some(Tile::new(Vec::new(), Vec::new()));
        }
        let mut offset = at.clone();
        offset.resize(ndim, 0);
        let mut extent = vec![1; self.split];
        extent.push(self.step.min(self.shape[self.split] - at[self.split]));
        extent.extend_from_slice(&self.shape[self.split + 1..]);
        // The next box: along the split dimension, then carried over the ones before it.
        let mut following = at;
        let mut d = self.split;
        following[d] += self.step;
        while following[d] >= self.shape[d] {
            following[d] = 0;
            if d == 0 {
                return Some(Tile::new(offset, extent));
            }
            d -= 1;
            following[d] += 1;
        }
        self.next = Some(following);
        Some(Tile::new(offset, extent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxes(shape: &[u64], elem: u64, bound: u64) -> Vec<(Vec<u64>, Vec<u64>)> {
        Slabs::new(shape, elem, bound)
            .map(|t| (t.offset, t.shape))
            .collect()
    }

    /// Every element is in exactly one box, and no box is larger than the bound allows.
    fn covers_once(shape: &[u64], elem: u64, bound: u64) {
        for (_, extent) in boxes(shape, elem, bound) {
            let volume: u64 = extent.iter().product();
            assert!(volume * elem <= bound.max(elem), "{extent:?} of {shape:?}");
        }
        covers_once_by(Slabs::new(shape, elem, bound), shape);
    }

    /// Every element of a dataset of `shape` is in exactly one of `slabs`.
    fn covers_once_by(slabs: Slabs, shape: &[u64]) {
        let total: u64 = shape.iter().product();
        let mut seen = vec![0u8; total as usize];
        for t in slabs {
            let (offset, extent) = (t.offset, t.shape);
            let volume: u64 = extent.iter().product();
            let tile = Tile::new(offset.clone(), extent.clone());
            assert!(tile.fits_in(shape), "{tile} in {shape:?}");
            for k in 0..volume {
                // The k-th element of the box, as an index of the whole.
                let (mut rest, mut flat) = (k, 0);
                for d in (0..shape.len()).rev() {
                    let i = offset[d] + rest % extent[d];
                    rest /= extent[d];
                    let stride: u64 = shape[d + 1..].iter().product();
                    flat += i * stride;
                }
                seen[flat as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "{shape:?}");
    }

    #[test]
    fn a_dataset_within_the_bound_is_one_box() {
        assert_eq!(boxes(&[6, 5], 8, 240), [(vec![0, 0], vec![6, 5])]);
        assert_eq!(boxes(&[], 8, 1), [(vec![], vec![])]);
        assert!(boxes(&[3, 0], 8, 64).is_empty());
    }

    #[test]
    fn rows_are_grouped_then_rows_and_elements_cut() {
        assert_eq!(
            boxes(&[6, 5], 8, 100),
            [
                (vec![0, 0], vec![2, 5]),
                (vec![2, 0], vec![2, 5]),
                (vec![4, 0], vec![2, 5])
            ]
        );
        assert_eq!(
            boxes(&[2, 5], 8, 16),
            [
                (vec![0, 0], vec![1, 2]),
                (vec![0, 2], vec![1, 2]),
                (vec![0, 4], vec![1, 1]),
                (vec![1, 0], vec![1, 2]),
                (vec![1, 2], vec![1, 2]),
                (vec![1, 4], vec![1, 1])
            ]
        );
        assert_eq!(boxes(&[2], 16, 8), [(vec![0], vec![1]), (vec![1], vec![1])]);
    }

    #[test]
    fn boxes_of_chunks_are_whole_chunks_in_order() {
        for (shape, bound) in [
            (vec![600u64, 500], 1u64),
            (vec![600, 500], 3 << 20),
            (vec![40, 300, 500], 5 << 20),
            (vec![7, 5, 3], 1),
            (vec![1000], 1),
        ] {
            let target = match shape.len() {
                1 => 800,
                _ => crate::layout::chunks::CHUNK_BYTES,
            };
            let chunks = crate::layout::chunks::Chunks::new(&shape, 8, target);
            let mut at = 0;
            let mut next_chunk = 0;
            for slab in Slabs::of_chunks(
                &shape,
                8,
                (&chunks.shape, chunks.chunk_bytes() as u64),
                bound,
            ) {
                let n = slab.volume() as u64 * 8;
                assert!(
                    n <= bound.max(chunks.chunk_bytes() as u64),
                    "{shape:?}: {slab}"
                );
                let which = chunks.covering(at, at + n);
                assert_eq!(which.start, next_chunk, "{shape:?}: {slab}");
                assert_eq!(chunks.range(which.start).0, at, "{shape:?}: {slab}");
                let (last, len) = chunks.range(which.end - 1);
                assert_eq!(last + len, at + n, "{shape:?}: {slab} ends with a chunk");
                (at, next_chunk) = (at + n, which.end);
            }
            assert_eq!(next_chunk, chunks.count(), "{shape:?}");
            covers_once_by(
                Slabs::of_chunks(
                    &shape,
                    8,
                    (&chunks.shape, chunks.chunk_bytes() as u64),
                    bound,
                ),
                &shape,
            );
        }
    }

    #[test]
    fn boxes_cover_every_element_once() {
        for shape in [&[7, 3, 5][..], &[1, 1, 9], &[4], &[3, 4, 2, 5]] {
            for bound in [1, 8, 24, 40, 100, 1000, 1 << 20] {
                covers_once(shape, 8, bound);
            }
        }
    }
}
