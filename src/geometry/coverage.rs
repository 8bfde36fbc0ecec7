//! Whether the ranks' tiles form a proper decomposition: no element written twice, and
//! (when the caller asks) no element left out.
//!
//! There can be hundreds of thousands of tiles, so pairs are never all compared. Tiles are
//! swept in order of their start on one axis (the one with the most distinct starts). The
//! tiles still "active" (not ended on the sweep axis) all cross the hyperplane where the
//! current tile starts, and since none of them overlapped so far, their cross-sections on
//! that hyperplane are disjoint boxes. They are kept in a B-tree keyed by their intervals on
//! the other axes, so the current tile only looks at keys near its own:
//!
//! * on every other axis but the last, only starts within `[start - longest + 1, end)` can
//!   meet it (`longest` being the largest extent on that axis);
//! * active tiles that agree on all those intervals are disjoint on the last axis, so only the
//!   one starting just before the current tile's end can meet it (a predecessor search).
//!
//! For block decompositions (slabs along any axis, 2-D and 3-D grids, irregular splits with
//! similar tile sizes) each tile costs O(ndim · log n), so the check is O(ndim · n log n).
//! Only tile sets with a few very long tiles among many short ones on an axis other than
//! the last key axis fall back to scanning their neighbours, like a plain sweep.
//!
//! Once no two tiles overlap, they cover the array exactly when their element counts add
//! up to its element count; the sum is exact however large the array.

use crate::geometry::tile::Tile;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::ops::Bound;

/// How much of the global array the tiles hold, once they are known not to overlap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coverage {
    /// Every element belongs to exactly one tile.
    Complete,
    /// The tiles hold `covered` of the `total` elements (each saturating at u128::MAX, which
    /// only arrays with three or more axes near u64::MAX reach; completeness is still exact).
    Partial { covered: u128, total: u128 },
}

/// Two tiles (indices into the input slice, a < b) that share at least one element, and their common box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    pub a: usize,
    pub b: usize,
    pub common: Tile,
}

/// Checks that the tiles do not overlap and reports how much of `global` they cover.
///
/// Every tile must fit inside `global` (see [`Tile::fits_in`]); the caller checks that first to
/// name the offending rank. Empty tiles hold nothing and are ignored, as are (a caller error)
/// tiles of another ndim. When several pairs overlap, one of them is reported; which one is
/// deterministic but otherwise unspecified.
pub fn check(global: &[u64], tiles: &[Tile]) -> Result<Coverage, Overlap> {
    let ndim = global.len();
    let holding: Vec<usize> = (0..tiles.len())
        .filter(|&i| holds_data(&tiles[i], ndim))
        .collect();
    if let Some(overlap) = find_overlap(tiles, &holding, ndim) {
        return Err(overlap);
    }
    let total = ExactCount::volume(global);
    let mut covered = ExactCount::zero();
    for &i in &holding {
        covered.add(&ExactCount::volume(&tiles[i].shape));
    }
    if covered == total {
        Ok(Coverage::Complete)
    } else {
        Ok(Coverage::Partial {
            covered: covered.saturating_u128(),
            total: total.saturating_u128(),
        })
    }
}

/// Tiles that take part in the check: well formed, of the array's ndim, and not empty.
fn holds_data(tile: &Tile, ndim: usize) -> bool {
    tile.offset.len() == ndim && tile.shape.len() == ndim && !tile.is_empty()
}

/// Some overlapping pair among `holding` (indices of well-formed, non-empty tiles of `ndim` axes).
fn find_overlap(tiles: &[Tile], holding: &[usize], ndim: usize) -> Option<Overlap> {
    let mut axes: Vec<usize> = (0..ndim).collect();
    let distinct: Vec<usize> = axes
        .iter()
        .map(|&axis| distinct_starts(tiles, holding, axis))
        .collect();
    // Fewest distinct starts first, ties to the higher axis, so pop() yields the sweep axis
    // (most distinct starts, ties to the lower axis) and the last key axis has the second most.
    axes.sort_by_key(|&axis| (distinct[axis], Reverse(axis)));
    let Some(sweep_axis) = axes.pop() else {
        // Without axes every non-empty tile is the same single element.
        return overlap_of(tiles, *holding.first()?, *holding.get(1)?);
    };
    let longest = (0..ndim)
        .map(|axis| {
            holding
                .iter()
                .map(|&i| tiles[i].shape[axis])
                .max()
                .unwrap_or(1)
        })
        .collect();
    Sweep {
        tiles,
        sweep_axis,
        key_axes: axes,
        longest,
    }
    .run(holding)
}

fn distinct_starts(tiles: &[Tile], holding: &[usize], axis: usize) -> usize {
    let mut starts: Vec<u64> = holding.iter().map(|&i| tiles[i].offset[axis]).collect();
    starts.sort_unstable();
    starts.dedup();
    starts.len()
}

/// The overlap of tiles `i` and `j`, if they share an element, with the indices in order.
fn overlap_of(tiles: &[Tile], i: usize, j: usize) -> Option<Overlap> {
    let (a, b) = (i.min(j), i.max(j));
    let common = tiles[a].intersection(&tiles[b])?;
    Some(Overlap { a, b, common })
}

/// The sweep described in the module documentation.
struct Sweep<'a> {
    tiles: &'a [Tile],
    sweep_axis: usize,
    /// The other axes; keys hold (start, end) on each of them but the last, and start on the last.
    key_axes: Vec<usize>,
    /// Largest extent on each axis among the tiles that hold data.
    longest: Vec<u64>,
}

/// Active tiles by key; keys are unique because active tiles never overlap.
type Active = BTreeMap<Vec<u64>, usize>;

impl Sweep<'_> {
    fn run(&self, holding: &[usize]) -> Option<Overlap> {
        let mut order = holding.to_vec();
        order.sort_unstable_by_key(|&i| (self.tiles[i].offset[self.sweep_axis], i));
        let mut active = Active::new();
        let mut ends: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
        let mut probe = Vec::new();
        for current in order {
            let (start, end) = self.interval(current, self.sweep_axis);
            while let Some(&Reverse((ended_at, done))) = ends.peek() {
                if ended_at > start {
                    break;
                }
                ends.pop();
                self.write_key(done, &mut probe);
                active.remove(&probe[..]);
            }
            probe.clear();
            if let Some(overlap) = self.search(&active, current, 0, &mut probe) {
                return Some(overlap);
            }
            active.insert(self.key(current), current);
            ends.push(Reverse((end, current)));
        }
        None
    }

    /// Start and end of a tile on an axis; the end saturates only for tiles that do not fit.
    fn interval(&self, tile: usize, axis: usize) -> (u64, u64) {
        let start = self.tiles[tile].offset[axis];
        (start, start.saturating_add(self.tiles[tile].shape[axis]))
    }

    fn key(&self, tile: usize) -> Vec<u64> {
        let mut key = Vec::with_capacity(2 * self.key_axes.len());
        self.write_key(tile, &mut key);
        key
    }

    /// Replaces `key` with the tile's key: (start, end) on each key axis but the last, then its start.
    fn write_key(&self, tile: usize, key: &mut Vec<u64>) {
        key.clear();
        for (depth, &axis) in self.key_axes.iter().enumerate() {
            let (start, end) = self.interval(tile, axis);
            key.push(start);
            if depth + 1 < self.key_axes.len() {
                key.push(end);
            }
        }
    }

    /// An active tile overlapping `current`, among those whose key begins with `probe`
    /// (the intervals on key axes before `depth`, already known to meet `current`'s).
    fn search(
        &self,
        active: &Active,
        current: usize,
        depth: usize,
        probe: &mut Vec<u64>,
    ) -> Option<Overlap> {
        let Some(&axis) = self.key_axes.get(depth) else {
            // One-dimensional: all active tiles contain `current`'s start.
            let &other = active.values().next()?;
            return overlap_of(self.tiles, current, other);
        };
        let (start, end) = self.interval(current, axis);
        let prefix_len = probe.len();
        if depth + 1 == self.key_axes.len() {
            // Disjoint on this axis: only the last one starting before `end` can reach `start`.
            probe.push(end);
            let before = active
                .range::<[u64], _>((Bound::Unbounded, Bound::Excluded(&probe[..])))
                .next_back();
            probe.truncate(prefix_len);
            let (key, &other) = before?;
            if !key.starts_with(probe) {
                return None;
            }
            return overlap_of(self.tiles, current, other);
        }
        // Starts further back than the longest extent end before `start`.
        let reach = self.longest[axis].saturating_sub(1);
        probe.push(start.saturating_sub(reach));
        loop {
            let next = active
                .range::<[u64], _>((Bound::Included(&probe[..]), Bound::Unbounded))
                .next();
            let Some((key, _)) = next else { break };
            if !key.starts_with(&probe[..prefix_len]) {
                break;
            }
            let (other_start, other_end) = (key[prefix_len], key[prefix_len + 1]);
            if other_start >= end {
                break;
            }
            probe.truncate(prefix_len);
            probe.extend([other_start, other_end]);
            if other_end > start {
                if let Some(overlap) = self.search(active, current, depth + 1, probe) {
                    return Some(overlap);
                }
            }
            // Skip all keys with this interval: the next possible one is (start, end + 1).
            probe.truncate(prefix_len);
            match (other_end.checked_add(1), other_start.checked_add(1)) {
                (Some(next_end), _) => probe.extend([other_start, next_end]),
                (None, Some(next_start)) => probe.push(next_start),
                (None, None) => break,
            }
        }
        probe.truncate(prefix_len);
        None
    }
}

/// An unbounded non-negative integer, so that element counts of arrays whose size exceeds
/// u128 (three or more huge axes) still compare exactly.
#[derive(Debug, PartialEq, Eq)]
struct ExactCount {
    /// Little-endian base-2^64 digits, without trailing zeros (zero is empty).
    limbs: Vec<u64>,
}

impl ExactCount {
    fn zero() -> ExactCount {
        ExactCount { limbs: Vec::new() }
    }

    fn volume(shape: &[u64]) -> ExactCount {
        let mut count = ExactCount { limbs: vec![1] };
        for &extent in shape {
            count.multiply(extent);
        }
        count
    }

    fn multiply(&mut self, factor: u64) {
        let mut carry = 0u64;
        for limb in &mut self.limbs {
            // At most (2^64-1)^2 + 2^64-1 < 2^128.
            let wide = u128::from(*limb) * u128::from(factor) + u128::from(carry);
            *limb = wide as u64;
            carry = (wide >> 64) as u64;
        }
        if carry != 0 {
            self.limbs.push(carry);
        }
        self.trim();
    }

    fn add(&mut self, other: &ExactCount) {
        if self.limbs.len() < other.limbs.len() {
            self.limbs.resize(other.limbs.len(), 0);
        }
        let mut carry = false;
        for (position, limb) in self.limbs.iter_mut().enumerate() {
            let addend = other.limbs.get(position).copied().unwrap_or(0);
            let (sum, first_carry) = limb.overflowing_add(addend);
            let (sum, second_carry) = sum.overflowing_add(u64::from(carry));
            *limb = sum;
            carry = first_carry || second_carry;
        }
        if carry {
            self.limbs.push(1);
        }
        self.trim();
    }

    fn trim(&mut self) {
        while self.limbs.last() == Some(&0) {
            self.limbs.pop();
        }
    }

    fn saturating_u128(&self) -> u128 {
        match self.limbs[..] {
            [] => 0,
            [low] => u128::from(low),
            [low, high] => (u128::from(high) << 64) | u128::from(low),
            _ => u128::MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: u64 = u64::MAX;

    fn tile(offset: &[u64], shape: &[u64]) -> Tile {
        Tile::new(offset.to_vec(), shape.to_vec())
    }

    /// `check`'s answer when tiles `a` and `b` are the overlap it reports, both covering
    /// `common`.
    fn overlap(a: usize, b: usize, common: Tile) -> Result<Coverage, Overlap> {
        Err(Overlap { a, b, common })
    }

    /// Regular grid of `counts[i]` blocks per axis over `global`, sizes differing by at most 1.
    fn grid_tiles(global: &[u64], counts: &[u64]) -> Vec<Tile> {
        let mut tiles = vec![tile(&[], &[])];
        for (&extent, &count) in global.iter().zip(counts) {
            let mut next = Vec::new();
            for t in &tiles {
                for piece in 0..count {
                    let start = extent * piece / count;
                    let stop = extent * (piece + 1) / count;
                    let mut offset = t.offset.clone();
                    let mut shape = t.shape.clone();
                    offset.push(start);
                    shape.push(stop - start);
                    next.push(Tile::new(offset, shape));
                }
            }
            tiles = next;
        }
        tiles
    }

    /// Reference answer by comparing all pairs: every overlapping pair.
    fn all_overlapping_pairs(tiles: &[Tile]) -> Vec<(usize, usize)> {
        let mut pairs = Vec::new();
        for a in 0..tiles.len() {
            for b in a + 1..tiles.len() {
                if tiles[a].intersection(&tiles[b]).is_some() {
                    pairs.push((a, b));
                }
            }
        }
        pairs
    }

    #[test]
    fn exact_2d_grid_is_complete() {
        let tiles = grid_tiles(&[100, 37], &[4, 5]);
        assert_eq!(check(&[100, 37], &tiles), Ok(Coverage::Complete));
    }

    #[test]
    fn exact_3d_grid_is_complete() {
        let tiles = grid_tiles(&[10, 11, 12], &[2, 3, 4]);
        assert_eq!(check(&[10, 11, 12], &tiles), Ok(Coverage::Complete));
    }

    #[test]
    fn single_tile_covering_everything_is_complete() {
        assert_eq!(
            check(&[5, 6], &[tile(&[0, 0], &[5, 6])]),
            Ok(Coverage::Complete)
        );
    }

    #[test]
    fn one_dimensional_pieces_are_complete() {
        let tiles = grid_tiles(&[1000], &[7]);
        assert_eq!(check(&[1000], &tiles), Ok(Coverage::Complete));
    }

    #[test]
    fn slabs_along_first_axis_are_complete() {
        let tiles = grid_tiles(&[64, 5, 6], &[16, 1, 1]);
        assert_eq!(check(&[64, 5, 6], &tiles), Ok(Coverage::Complete));
    }

    #[test]
    fn slabs_along_last_axis_are_complete() {
        let tiles = grid_tiles(&[5, 6, 64], &[1, 1, 16]);
        assert_eq!(check(&[5, 6, 64], &tiles), Ok(Coverage::Complete));
    }

    #[test]
    fn rows_split_into_different_column_counts_are_complete() {
        // Row r (2 high) is cut into r + 1 columns of a 12-wide array.
        let mut tiles = Vec::new();
        for row in 0..6u64 {
            for piece in grid_tiles(&[12], &[row + 1]) {
                tiles.push(tile(&[2 * row, piece.offset[0]], &[2, piece.shape[0]]));
            }
        }
        assert_eq!(check(&[12, 12], &tiles), Ok(Coverage::Complete));
    }

    #[test]
    fn irregular_3d_decomposition_is_complete() {
        // Two slabs along axis 0: one cut 2x2 on the other axes, the other cut 3 ways on the last.
        let mut tiles = Vec::new();
        for t in grid_tiles(&[6, 6], &[2, 2]) {
            tiles.push(tile(
                &[0, t.offset[0], t.offset[1]],
                &[3, t.shape[0], t.shape[1]],
            ));
        }
        for t in grid_tiles(&[6], &[3]) {
            tiles.push(tile(&[3, 0, t.offset[0]], &[5, 6, t.shape[0]]));
        }
        assert_eq!(check(&[8, 6, 6], &tiles), Ok(Coverage::Complete));
    }

    #[test]
    fn tile_order_does_not_matter() {
        let mut tiles = grid_tiles(&[30, 40, 50], &[3, 4, 5]);
        tiles.reverse();
        tiles.swap(3, 40);
        assert_eq!(check(&[30, 40, 50], &tiles), Ok(Coverage::Complete));
    }

    #[test]
    fn gap_is_partial_with_counts() {
        let mut tiles = grid_tiles(&[10, 10], &[2, 2]);
        tiles.remove(1);
        assert_eq!(
            check(&[10, 10], &tiles),
            Ok(Coverage::Partial {
                covered: 75,
                total: 100
            })
        );
    }

    #[test]
    fn no_tiles_is_partial_with_nothing_covered() {
        assert_eq!(
            check(&[3, 4], &[]),
            Ok(Coverage::Partial {
                covered: 0,
                total: 12
            })
        );
    }

    #[test]
    fn overlap_reports_the_pair_and_common_box() {
        let tiles = vec![
            tile(&[0, 0], &[5, 5]),
            tile(&[5, 0], &[5, 5]),
            tile(&[0, 5], &[6, 5]),
            tile(&[6, 5], &[4, 5]),
        ];
        // Tile 2 is a row taller than tile 0 and tile 3 a row shorter than tile 1: still exact.
        assert_eq!(check(&[10, 10], &tiles), Ok(Coverage::Complete));
        let tiles = vec![
            tile(&[0, 0], &[5, 5]),
            tile(&[5, 0], &[5, 6]),
            tile(&[0, 5], &[6, 5]),
            tile(&[6, 6], &[4, 4]),
        ];
        assert_eq!(
            check(&[10, 10], &tiles),
            overlap(1, 2, tile(&[5, 5], &[1, 1]))
        );
    }

    #[test]
    fn overlap_pair_is_ordered_even_when_the_later_tile_sweeps_first() {
        let tiles = vec![tile(&[4], &[4]), tile(&[0], &[5])];
        assert_eq!(check(&[8], &tiles), overlap(0, 1, tile(&[4], &[1])));
    }

    #[test]
    fn overlap_in_a_3d_corner_is_found() {
        let mut tiles = grid_tiles(&[8, 8, 8], &[2, 2, 2]);
        let last = tiles.len() - 1;
        tiles[last] = tile(&[3, 3, 3], &[1, 1, 1]);
        assert_eq!(
            check(&[8, 8, 8], &tiles),
            overlap(0, last, tile(&[3, 3, 3], &[1, 1, 1]))
        );
    }

    #[test]
    fn overlap_behind_a_shorter_neighbour_is_found() {
        // Sweep axis 0; keys are (interval on axis 1, start on axis 2). Tiles 0 and 1 start
        // together on axis 1 but tile 1 is shorter there; tile 1 starts just before the new
        // tile 3 ends on axis 2, yet it is tile 0 that meets tile 3.
        let tiles = vec![
            tile(&[0, 0, 0], &[10, 10, 5]),
            tile(&[0, 0, 5], &[10, 2, 3]),
            tile(&[0, 0, 8], &[1, 1, 2]),
            tile(&[1, 5, 0], &[1, 1, 8]),
            tile(&[5, 0, 8], &[1, 1, 2]),
        ];
        assert_eq!(
            check(&[10, 10, 10], &tiles),
            overlap(0, 3, tile(&[1, 5, 0], &[1, 1, 5]))
        );
    }

    #[test]
    fn duplicate_tiles_overlap() {
        let mut tiles = grid_tiles(&[6, 6], &[3, 3]);
        tiles.push(tiles[4].clone());
        assert_eq!(check(&[6, 6], &tiles), overlap(4, 9, tiles[4].clone()));
    }

    #[test]
    fn tile_inside_another_overlaps() {
        let tiles = vec![tile(&[0, 0], &[10, 10]), tile(&[3, 4], &[1, 1])];
        assert_eq!(
            check(&[10, 10], &tiles),
            overlap(0, 1, tile(&[3, 4], &[1, 1]))
        );
    }

    #[test]
    fn empty_tiles_are_ignored() {
        let mut tiles = grid_tiles(&[4, 4], &[2, 2]);
        tiles.insert(0, tile(&[1, 1], &[0, 2]));
        tiles.push(tile(&[1, 1], &[3, 0]));
        tiles.push(tile(&[1, 1], &[3, 0]));
        tiles.push(tile(&[4, 4], &[0, 0]));
        assert_eq!(check(&[4, 4], &tiles), Ok(Coverage::Complete));
    }

    #[test]
    fn tiles_of_another_ndim_are_ignored() {
        let mut tiles = grid_tiles(&[4, 4], &[2, 2]);
        tiles.push(tile(&[0], &[4]));
        tiles.push(Tile {
            offset: vec![0, 0],
            shape: vec![4],
        });
        assert_eq!(check(&[4, 4], &tiles), Ok(Coverage::Complete));
    }

    #[test]
    fn zero_volume_global_without_tiles_is_complete() {
        assert_eq!(check(&[0, 10], &[]), Ok(Coverage::Complete));
        assert_eq!(
            check(&[0, 10], &[tile(&[0, 0], &[0, 10])]),
            Ok(Coverage::Complete)
        );
    }

    #[test]
    fn huge_extents_are_complete_when_halves_meet() {
        let global = [MAX, MAX, 2];
        let tiles = vec![
            tile(&[0, 0, 0], &[MAX, MAX, 1]),
            tile(&[0, 0, 1], &[MAX, MAX, 1]),
        ];
        assert_eq!(check(&global, &tiles), Ok(Coverage::Complete));
    }

    #[test]
    fn huge_extents_report_saturated_counts_when_partial() {
        let global = [MAX, MAX, 2];
        let tiles = vec![tile(&[0, 0, 0], &[MAX, MAX, 1])];
        assert_eq!(
            check(&global, &tiles),
            Ok(Coverage::Partial {
                covered: u128::from(MAX) * u128::from(MAX),
                total: u128::MAX,
            })
        );
    }

    #[test]
    fn huge_extents_overlap_is_found() {
        let tiles = vec![
            tile(&[0, 0], &[MAX, MAX - 1]),
            tile(&[MAX - 1, MAX - 2], &[1, 2]),
        ];
        assert_eq!(
            check(&[MAX, MAX], &tiles),
            overlap(0, 1, tile(&[MAX - 1, MAX - 2], &[1, 1]))
        );
    }

    #[test]
    fn exact_count_adds_and_multiplies_past_u128() {
        let mut sum = ExactCount::volume(&[MAX, MAX]);
        sum.add(&ExactCount::volume(&[MAX, MAX]));
        assert_eq!(sum, ExactCount::volume(&[MAX, MAX, 2]));
        assert_eq!(sum.saturating_u128(), u128::MAX);
        assert_eq!(ExactCount::volume(&[MAX, 0, MAX]), ExactCount::zero());
        assert_eq!(ExactCount::volume(&[3, 4]).saturating_u128(), 12);
    }

    /// Deterministic pseudo-random numbers (64-bit LCG) for the comparison below.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, bound: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % bound
        }
    }

    /// A random guillotine decomposition of `global` into about `pieces` tiles.
    fn random_layout(rng: &mut Lcg, global: &[u64], pieces: usize) -> Vec<Tile> {
        let mut tiles = vec![tile(&vec![0; global.len()], global)];
        for _ in 1..pieces {
            let victim = rng.below(tiles.len() as u64) as usize;
            let axis = rng.below(global.len() as u64) as usize;
            let extent = tiles[victim].shape[axis];
            if extent < 2 {
                continue;
            }
            let cut = 1 + rng.below(extent - 1);
            let mut upper = tiles[victim].clone();
            upper.offset[axis] += cut;
            upper.shape[axis] -= cut;
            tiles[victim].shape[axis] = cut;
            tiles.push(upper);
        }
        tiles
    }

    #[test]
    fn agrees_with_all_pairs_comparison_on_random_layouts() {
        let mut rng = Lcg(42);
        for round in 0..600 {
            let ndim = 1 + round % 4;
            let global: Vec<u64> = (0..ndim).map(|_| 1 + rng.below(12)).collect();
            let pieces = 2 + rng.below(40) as usize;
            let mut tiles = random_layout(&mut rng, &global, pieces);
            // Disturb a few tiles: grow, shift, drop, or duplicate, staying inside `global`.
            for _ in 0..rng.below(3) {
                if tiles.is_empty() {
                    break;
                }
                let victim = rng.below(tiles.len() as u64) as usize;
                let axis = rng.below(ndim as u64) as usize;
                match rng.below(4) {
                    0 if tiles[victim].offset[axis] > 0 => {
                        tiles[victim].offset[axis] -= 1;
                        tiles[victim].shape[axis] += 1;
                    }
                    1 if tiles[victim].shape[axis] > 1 => tiles[victim].offset[axis] += 1,
                    2 if tiles.len() > 1 => {
                        tiles.remove(victim);
                    }
                    3 => tiles.push(tiles[victim].clone()),
                    _ => {}
                }
                tiles.retain(|t| t.fits_in(&global));
            }
            // Shuffle so that input order carries no information.
            for i in (1..tiles.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                tiles.swap(i, j);
            }
            let pairs = all_overlapping_pairs(&tiles);
            match check(&global, &tiles) {
                Err(overlap) => {
                    assert!(pairs.contains(&(overlap.a, overlap.b)), "round {round}");
                    assert_eq!(
                        Some(overlap.common),
                        tiles[overlap.a].intersection(&tiles[overlap.b])
                    );
                }
                Ok(coverage) => {
                    assert!(pairs.is_empty(), "round {round}: missed {pairs:?}");
                    let covered: u128 = tiles.iter().map(Tile::volume).sum();
                    let total = crate::geometry::tile::volume(&global);
                    let expected = if covered == total {
                        Coverage::Complete
                    } else {
                        Coverage::Partial { covered, total }
                    };
                    assert_eq!(coverage, expected, "round {round}");
                }
            }
        }
    }

    // The next four take well under two seconds together in a debug build.

    #[test]
    fn grid_of_65536_tiles_is_checked() {
        let tiles = grid_tiles(&[1024, 2048], &[256, 256]);
        assert_eq!(tiles.len(), 65536);
        assert_eq!(check(&[1024, 2048], &tiles), Ok(Coverage::Complete));
    }

    #[test]
    fn one_dimensional_array_in_100000_pieces_is_checked() {
        let tiles = grid_tiles(&[1_000_000], &[100_000]);
        assert_eq!(check(&[1_000_000], &tiles), Ok(Coverage::Complete));
    }

    #[test]
    fn slabs_along_the_last_axis_100000_of_them_are_checked() {
        let tiles = grid_tiles(&[7, 400_000], &[1, 100_000]);
        assert_eq!(check(&[7, 400_000], &tiles), Ok(Coverage::Complete));
    }

    #[test]
    fn cubic_grid_of_65536_tiles_is_checked() {
        let tiles = grid_tiles(&[128, 64, 96], &[64, 32, 32]);
        assert_eq!(tiles.len(), 65536);
        assert_eq!(check(&[128, 64, 96], &tiles), Ok(Coverage::Complete));
    }
}
