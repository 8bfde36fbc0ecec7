//! A balanced block decomposition, for callers that have no layout of their own: every rank
//! asks for its block and gets a tile; together the tiles cover the array exactly once.

use crate::geometry::tile::Tile;

/// Trial division stops here, which keeps `grid` fast for any u64; a cofactor left with
/// only prime factors above it is dealt out whole. The grid stays valid (its product is
/// still `nparts`), just less cubic, and no MPI job has that many ranks.
const TRIAL_DIVISION_LIMIT: u64 = 1 << 20;

/// Process-grid extents per axis whose product is nparts; factors are dealt out (largest prime factor first)
/// to the axis with the largest remaining extent per part (`global[i] / grid[i]`, ties to the lower axis), so
/// tiles come out as close to cubes as the factorisation allows. nparts >= 1.
///
/// `nparts == 0` is treated as 1. With no axes the grid is empty.
pub fn grid(nparts: u64, global: &[u64]) -> Vec<u64> {
    let mut grid = vec![1u64; global.len()];
    if grid.is_empty() {
        return grid;
    }
    for factor in prime_factors_descending(nparts.max(1)) {
        let mut roomiest = 0;
        for axis in 1..global.len() {
            // global[axis] / grid[axis] > global[roomiest] / grid[roomiest], exactly.
            let here = u128::from(global[axis]) * u128::from(grid[roomiest]);
            let best = u128::from(global[roomiest]) * u128::from(grid[axis]);
            if here > best {
                roomiest = axis;
            }
        }
        // The grid's product never exceeds nparts, so this cannot saturate.
        grid[roomiest] = grid[roomiest].saturating_mul(factor);
    }
    grid
}

/// The tile of part `part` (0 <= part < nparts): its grid coordinate is `part` in row-major order over grid();
/// along each axis, an extent n split in g parts gives the first n % g parts one element more than the others
/// (so sizes differ by at most 1); parts beyond the data get extent 0 at offset n (or the balanced split gives 0).
///
/// `nparts == 0` is treated as 1; a `part` out of range gets an empty tile at the far corner of the array.
pub fn block(nparts: u64, part: u64, global: &[u64]) -> Tile {
    let nparts = nparts.max(1);
    if part >= nparts {
        return Tile::new(global.to_vec(), vec![0; global.len()]);
    }
    let grid = grid(nparts, global);
    let mut coordinate = vec![0u64; global.len()];
    let mut rest = part;
    for axis in (0..global.len()).rev() {
        let parts_here = grid[axis].max(1);
        coordinate[axis] = rest % parts_here;
        rest /= parts_here;
    }
    let (offset, shape) = global
        .iter()
        .zip(&grid)
        .zip(&coordinate)
        .map(|((&extent, &parts), &index)| split(extent, parts, index))
        .unzip();
    Tile::new(offset, shape)
}

/// Start and length of piece `index` when `extent` elements are cut into `pieces` pieces whose
/// lengths differ by at most one, the longer pieces first.
fn split(extent: u64, pieces: u64, index: u64) -> (u64, u64) {
    let pieces = pieces.max(1);
    let short = extent / pieces;
    let long_pieces = extent % pieces;
    let length = if index < long_pieces {
        short + 1
    } else {
        short
    };
    // index * short + min(index, long_pieces) <= extent for index < pieces; u128 regardless.
    let start = u128::from(index) * u128::from(short) + u128::from(index.min(long_pieces));
    (u64::try_from(start).unwrap_or(extent).min(extent), length)
}

/// Prime factors of `n` (with multiplicity), largest first; see `TRIAL_DIVISION_LIMIT`.
fn prime_factors_descending(mut n: u64) -> Vec<u64> {
    let mut factors = Vec::new();
    let mut divisor = 2u64;
    while divisor <= TRIAL_DIVISION_LIMIT && divisor * divisor <= n {
        while n.is_multiple_of(divisor) {
            factors.push(divisor);
            n /= divisor;
        }
        divisor += if divisor == 2 { 1 } else { 2 };
    }
    if n > 1 {
        factors.push(n);
    }
    factors.sort_unstable_by(|a, b| b.cmp(a));
    factors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::coverage::{check, Coverage};

    /// The largest prime below 2^64.
    const LARGEST_U64_PRIME: u64 = 18_446_744_073_709_551_557;

    fn all_blocks(nparts: u64, global: &[u64]) -> Vec<Tile> {
        (0..nparts)
            .map(|part| block(nparts, part, global))
            .collect()
    }

    #[test]
    fn one_part_gets_the_whole_array() {
        assert_eq!(grid(1, &[5, 6, 7]), vec![1, 1, 1]);
        assert_eq!(
            block(1, 0, &[5, 6, 7]),
            Tile::new(vec![0, 0, 0], vec![5, 6, 7])
        );
    }

    #[test]
    fn four_parts_over_a_square_make_a_2x2_grid() {
        assert_eq!(grid(4, &[100, 100]), vec![2, 2]);
        assert_eq!(
            block(4, 0, &[100, 100]),
            Tile::new(vec![0, 0], vec![50, 50])
        );
        assert_eq!(
            block(4, 3, &[100, 100]),
            Tile::new(vec![50, 50], vec![50, 50])
        );
    }

    #[test]
    fn parts_are_numbered_row_major() {
        assert_eq!(
            block(4, 1, &[100, 100]),
            Tile::new(vec![0, 50], vec![50, 50])
        );
        assert_eq!(
            block(4, 2, &[100, 100]),
            Tile::new(vec![50, 0], vec![50, 50])
        );
        assert_eq!(grid(6, &[30, 20]), vec![3, 2]);
        assert_eq!(
            block(6, 3, &[30, 20]),
            Tile::new(vec![10, 10], vec![10, 10])
        );
    }

    #[test]
    fn two_parts_over_a_wide_array_split_the_second_axis() {
        assert_eq!(grid(2, &[10, 1000]), vec![1, 2]);
        assert_eq!(
            block(2, 1, &[10, 1000]),
            Tile::new(vec![0, 500], vec![10, 500])
        );
    }

    #[test]
    fn largest_prime_factor_goes_first_and_ties_go_to_the_lower_axis() {
        // 12 = 3 * 2 * 2: 3 to axis 0 (tie), then 2 to axis 1, then 2 to axis 2.
        assert_eq!(grid(12, &[1000, 1000, 1000]), vec![3, 2, 2]);
        assert_eq!(grid(2, &[10, 10]), vec![2, 1]);
    }

    #[test]
    fn factors_follow_the_longest_extent_per_part() {
        // 8 = 2*2*2 over 400x200x100: 400/1, then a tie of 200/2 and 200/1 (lower axis), then 200/1.
        assert_eq!(grid(8, &[400, 200, 100]), vec![4, 2, 1]);
        assert_eq!(grid(64, &[1, 1, 1_000_000]), vec![1, 1, 64]);
        assert_eq!(grid(7, &[3, 5]), vec![1, 7]);
    }

    #[test]
    fn grid_product_is_nparts() {
        for nparts in [1, 2, 3, 4, 6, 7, 12, 64, 97, 360, 1 << 20, 999_983 * 3] {
            for global in [&[10u64][..], &[7, 9], &[0, 5], &[2, 3, 4], &[1000, 1, 10]] {
                let product: u128 = grid(nparts, global)
                    .iter()
                    .map(|&g| u128::from(g))
                    .product();
                assert_eq!(product, u128::from(nparts), "{nparts} over {global:?}");
            }
        }
    }

    #[test]
    fn huge_prime_nparts_is_fast_and_exact() {
        assert_eq!(
            grid(LARGEST_U64_PRIME, &[10, 20]),
            vec![1, LARGEST_U64_PRIME]
        );
        assert_eq!(grid(1 << 63, &[1, 1]), vec![1 << 32, 1 << 31]);
        // Two primes above the trial-division limit stay together as one factor.
        let big = 1_000_003u64 * 1_000_033;
        let product: u64 = grid(big, &[5, 5]).iter().product();
        assert_eq!(product, big);
    }

    #[test]
    fn blocks_cover_the_array_exactly_once() {
        let shapes: [&[u64]; 10] = [
            &[100],
            &[5],
            &[0],
            &[10, 1000],
            &[3, 2],
            &[0, 7],
            &[17, 19],
            &[4, 5, 6],
            &[1, 1, 2],
            &[33, 0, 12],
        ];
        for nparts in [1, 2, 3, 4, 6, 7, 12, 64] {
            for &global in &shapes {
                let blocks = all_blocks(nparts, global);
                assert!(
                    blocks.iter().all(|b| b.fits_in(global)),
                    "{nparts} over {global:?}"
                );
                assert_eq!(
                    check(global, &blocks),
                    Ok(Coverage::Complete),
                    "{nparts} over {global:?}"
                );
            }
        }
    }

    #[test]
    fn sizes_along_an_axis_differ_by_at_most_one() {
        let sizes: Vec<u64> = all_blocks(4, &[10]).iter().map(|b| b.shape[0]).collect();
        assert_eq!(sizes, vec![3, 3, 2, 2]);
        for nparts in [3, 7, 12, 64] {
            let blocks = all_blocks(nparts, &[101, 37, 13]);
            for axis in 0..3 {
                let sizes = blocks.iter().map(|b| b.shape[axis]);
                let spread = sizes.clone().max().unwrap() - sizes.min().unwrap();
                assert!(spread <= 1, "{nparts} parts, axis {axis}");
            }
        }
    }

    #[test]
    fn parts_beyond_the_data_are_empty_at_the_end() {
        let blocks = all_blocks(7, &[3]);
        let expected: Vec<Tile> = [(0, 1), (1, 1), (2, 1), (3, 0), (3, 0), (3, 0), (3, 0)]
            .iter()
            .map(|&(offset, extent)| Tile::new(vec![offset], vec![extent]))
            .collect();
        assert_eq!(blocks, expected);
    }

    #[test]
    fn out_of_range_part_gets_an_empty_tile_at_the_far_corner() {
        assert_eq!(block(4, 4, &[10, 20]), Tile::new(vec![10, 20], vec![0, 0]));
        assert_eq!(
            block(4, u64::MAX, &[10, 20]),
            Tile::new(vec![10, 20], vec![0, 0])
        );
    }

    #[test]
    fn zero_parts_count_as_one() {
        assert_eq!(grid(0, &[8, 8]), vec![1, 1]);
        assert_eq!(block(0, 0, &[8, 8]), Tile::new(vec![0, 0], vec![8, 8]));
    }

    #[test]
    fn no_axes_give_an_empty_grid_and_tile() {
        assert_eq!(grid(6, &[]), Vec::<u64>::new());
        assert_eq!(block(6, 0, &[]), Tile::new(vec![], vec![]));
    }

    #[test]
    fn huge_extents_split_without_overflow() {
        let max = u64::MAX;
        let blocks = all_blocks(3, &[max]);
        assert_eq!(blocks[0], Tile::new(vec![0], vec![max / 3]));
        assert_eq!(blocks[2], Tile::new(vec![2 * (max / 3)], vec![max / 3]));
        assert_eq!(check(&[max], &blocks), Ok(Coverage::Complete));
        let blocks = all_blocks(4, &[max, max]);
        assert_eq!(check(&[max, max], &blocks), Ok(Coverage::Complete));
        let last = LARGEST_U64_PRIME - 1;
        assert_eq!(
            block(LARGEST_U64_PRIME, last, &[max]),
            Tile::new(vec![max - 1], vec![1])
        );
    }
}
