//! Tiles: the axis-aligned box of the global array that one rank reads or writes.
//!
//! All sizes are HDF5 `hsize_t` (u64). Element counts are u128 so that two huge
//! extents multiply without overflow; ends (`offset + shape`) are computed in u128
//! because a caller may hand us an offset and an extent that do not fit in u64 together.

use std::fmt;

/// An axis-aligned box of an N-d array, in elements: where it starts and how far it extends.
///
/// Axes are ordered slowest-varying first (row-major, as in HDF5).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tile {
    /// First element on each axis.
    pub offset: Vec<u64>,
    /// Number of elements on each axis.
    pub shape: Vec<u64>,
}

impl Tile {
    /// A tile from its per-axis offset and shape, which must have the same length.
    pub fn new(offset: Vec<u64>, shape: Vec<u64>) -> Tile {
        debug_assert_eq!(
            offset.len(),
            shape.len(),
            "a tile needs one offset and one extent per axis"
        );
        Tile { offset, shape }
    }

    /// Number of axes.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements (product of extents) as u128 so it never overflows; 0 if any extent is 0.
    ///
    /// Only three or more extents close to u64::MAX exceed u128; the count then saturates at u128::MAX.
    pub fn volume(&self) -> u128 {
        volume(&self.shape)
    }

    /// Bytes of the tile at `elem` bytes per element, None when a buffer that large cannot
    /// be addressed (over `isize::MAX`).
    pub fn bytes(&self, elem: usize) -> Option<usize> {
        let bytes = self.volume().checked_mul(elem as u128)?;
        (bytes <= isize::MAX as u128).then_some(bytes as usize)
    }

    /// True when some extent is 0: such a tile holds no data.
    pub fn is_empty(&self) -> bool {
        self.shape.contains(&0)
    }

    /// True when offset+shape <= global on every axis (computed without overflow) and ndim matches.
    pub fn fits_in(&self, global: &[u64]) -> bool {
        self.is_well_formed()
            && self.ndim() == global.len()
            && self
                .axes()
                .zip(global)
                .all(|((start, extent), &limit)| end(start, extent) <= u128::from(limit))
    }

    /// Where this box starts within `outer`, a box holding it.
    pub fn offset_in(&self, outer: &Tile) -> Vec<u64> {
        self.offset
            .iter()
            .zip(&outer.offset)
            .map(|(a, o)| a - o)
            .collect()
    }

    /// The common box of two tiles of the same ndim, None when they do not share an element.
    pub fn intersection(&self, other: &Tile) -> Option<Tile> {
        if !self.is_well_formed() || !other.is_well_formed() || self.ndim() != other.ndim() {
            return None;
        }
        // Reject before allocating: the overlap check runs this on many near misses.
        let common_ranges = || {
            self.axes()
                .zip(other.axes())
                .map(|((a_start, a_extent), (b_start, b_extent))| {
                    let start = a_start.max(b_start);
                    let stop = end(a_start, a_extent).min(end(b_start, b_extent));
                    (start, stop.saturating_sub(u128::from(start)))
                })
        };
        if common_ranges().any(|(_, extent)| extent == 0) {
            return None;
        }
        let mut offset = Vec::with_capacity(self.ndim());
        let mut shape = Vec::with_capacity(self.ndim());
        for (start, extent) in common_ranges() {
            offset.push(start);
            // extent <= min(a_extent, b_extent), so it always fits in u64.
            shape.push(u64::try_from(extent).ok()?);
        }
        Some(Tile { offset, shape })
    }

    /// The fields are public, so a caller can build a tile whose offset and shape disagree in length.
    fn is_well_formed(&self) -> bool {
        self.offset.len() == self.shape.len()
    }

    /// (offset, extent) per axis.
    fn axes(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.offset.iter().copied().zip(self.shape.iter().copied())
    }
}

/// Product of extents as u128 (0-length shape gives 1).
///
/// Saturates at u128::MAX, which only three or more extents near u64::MAX can reach.
pub fn volume(shape: &[u64]) -> u128 {
    shape.iter().fold(1u128, |count, &extent| {
        count.saturating_mul(u128::from(extent))
    })
}

/// One past the last element on an axis; u128 because offset + extent may exceed u64.
fn end(start: u64, extent: u64) -> u128 {
    u128::from(start) + u128::from(extent)
}

/// Human-readable "[o0:e0, o1:e1]" (half-open ranges) used in error messages.
impl fmt::Display for Tile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (axis, (start, extent)) in self.axes().enumerate() {
            if axis > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{start}:{}", end(start, extent))?;
        }
        f.write_str("]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: u64 = u64::MAX;

    fn tile(offset: &[u64], shape: &[u64]) -> Tile {
        Tile::new(offset.to_vec(), shape.to_vec())
    }

    #[test]
    fn ndim_counts_axes() {
        assert_eq!(tile(&[0], &[4]).ndim(), 1);
        assert_eq!(tile(&[0, 1, 2], &[4, 5, 6]).ndim(), 3);
    }

    #[test]
    fn volume_multiplies_extents() {
        assert_eq!(tile(&[7], &[5]).volume(), 5);
        assert_eq!(tile(&[1, 2], &[3, 4]).volume(), 12);
        assert_eq!(tile(&[0, 0, 0], &[2, 3, 4]).volume(), 24);
    }

    #[test]
    fn volume_is_zero_when_any_extent_is_zero() {
        assert_eq!(tile(&[0, 0, 0], &[2, 0, 4]).volume(), 0);
        assert_eq!(tile(&[0, 0, 0], &[MAX, MAX, 0]).volume(), 0);
    }

    #[test]
    fn volume_of_no_axes_is_one() {
        assert_eq!(volume(&[]), 1);
    }

    #[test]
    fn volume_of_two_huge_extents_is_exact() {
        assert_eq!(volume(&[MAX, MAX]), u128::from(MAX) * u128::from(MAX));
    }

    #[test]
    fn volume_beyond_u128_saturates() {
        assert_eq!(volume(&[MAX, MAX, 2]), u128::MAX);
        assert_eq!(volume(&[MAX, MAX, MAX, 0]), 0);
    }

    #[test]
    fn is_empty_when_some_extent_is_zero() {
        assert!(tile(&[3], &[0]).is_empty());
        assert!(tile(&[0, 0], &[5, 0]).is_empty());
        assert!(!tile(&[0, 0], &[5, 1]).is_empty());
    }

    #[test]
    fn fits_in_accepts_tiles_reaching_the_edge() {
        assert!(tile(&[0, 0], &[10, 20]).fits_in(&[10, 20]));
        assert!(tile(&[4, 15], &[6, 5]).fits_in(&[10, 20]));
        assert!(tile(&[10, 20], &[0, 0]).fits_in(&[10, 20]));
    }

    #[test]
    fn fits_in_rejects_tiles_past_the_edge() {
        assert!(!tile(&[5, 0], &[6, 20]).fits_in(&[10, 20]));
        assert!(!tile(&[0, 21], &[1, 0]).fits_in(&[10, 20]));
    }

    #[test]
    fn fits_in_rejects_other_ndim() {
        assert!(!tile(&[0], &[1]).fits_in(&[10, 20]));
        assert!(!tile(&[0, 0, 0], &[1, 1, 1]).fits_in(&[10, 20]));
    }

    #[test]
    fn fits_in_rejects_malformed_tiles() {
        let malformed = Tile {
            offset: vec![0],
            shape: vec![1, 1],
        };
        assert!(!malformed.fits_in(&[10, 10]));
    }

    #[test]
    fn fits_in_does_not_overflow_near_u64_max() {
        assert!(tile(&[MAX - 1], &[1]).fits_in(&[MAX]));
        assert!(!tile(&[MAX - 1], &[2]).fits_in(&[MAX]));
        assert!(!tile(&[MAX], &[MAX]).fits_in(&[MAX]));
        assert!(tile(&[0, 0], &[MAX, MAX]).fits_in(&[MAX, MAX]));
    }

    #[test]
    fn intersection_of_overlapping_tiles_is_their_common_box() {
        let a = tile(&[0, 0], &[10, 10]);
        let b = tile(&[5, 8], &[10, 10]);
        assert_eq!(a.intersection(&b), Some(tile(&[5, 8], &[5, 2])));
        assert_eq!(b.intersection(&a), Some(tile(&[5, 8], &[5, 2])));
    }

    #[test]
    fn intersection_of_nested_tiles_is_the_inner_one() {
        let outer = tile(&[0, 0, 0], &[10, 10, 10]);
        let inner = tile(&[2, 3, 4], &[1, 2, 3]);
        assert_eq!(outer.intersection(&inner), Some(inner.clone()));
    }

    #[test]
    fn intersection_of_touching_tiles_is_none() {
        let a = tile(&[0, 0], &[5, 5]);
        assert_eq!(a.intersection(&tile(&[5, 0], &[5, 5])), None);
        assert_eq!(a.intersection(&tile(&[0, 5], &[5, 5])), None);
    }

    #[test]
    fn intersection_needs_overlap_on_every_axis() {
        let a = tile(&[0, 0, 0], &[4, 4, 4]);
        assert_eq!(a.intersection(&tile(&[1, 1, 4], &[2, 2, 2])), None);
    }

    #[test]
    fn intersection_with_empty_tile_is_none() {
        let a = tile(&[0, 0], &[5, 5]);
        assert_eq!(a.intersection(&tile(&[2, 2], &[0, 3])), None);
        assert_eq!(tile(&[2], &[0]).intersection(&tile(&[2], &[0])), None);
    }

    #[test]
    fn intersection_of_different_ndim_is_none() {
        assert_eq!(tile(&[0], &[5]).intersection(&tile(&[0, 0], &[5, 5])), None);
    }

    #[test]
    fn intersection_handles_extents_near_u64_max() {
        let a = tile(&[MAX - 10], &[10]);
        let b = tile(&[MAX - 5], &[MAX]);
        assert_eq!(a.intersection(&b), Some(tile(&[MAX - 5], &[5])));
        let whole = tile(&[0, 0], &[MAX, MAX]);
        assert_eq!(whole.intersection(&whole), Some(whole.clone()));
    }

    #[test]
    fn display_shows_half_open_ranges() {
        assert_eq!(tile(&[0, 5], &[10, 3]).to_string(), "[0:10, 5:8]");
        assert_eq!(tile(&[7], &[0]).to_string(), "[7:7]");
    }

    #[test]
    fn display_shows_ends_beyond_u64() {
        assert_eq!(
            tile(&[MAX], &[2]).to_string(),
            "[18446744073709551615:18446744073709551617]"
        );
    }
}
