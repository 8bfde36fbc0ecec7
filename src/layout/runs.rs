//! Byte runs of a box copied between two row-major arrays: how tile bytes at a known file
//! offset map onto a caller's buffer, rows consecutive in both merged into one run.

use crate::geometry::tile::Tile;

/// The rows of the box of `shape` at `src_at` of a row-major array of `src_shape`, copied to
/// `dst_at` of a row-major array of `dst_shape`: the row length (elements along the last axis)
/// and, in row-major order, each row's first element in the source and in the destination.
pub fn box_rows<'a>(
    src_shape: &'a [u64],
    src_at: &'a [u64],
    dst_shape: &'a [u64],
    dst_at: &'a [u64],
    shape: &'a [u64],
) -> (u64, impl Iterator<Item = (u64, u64)> + 'a) {
    let n = shape.len();
    let empty = n == 0 || shape.contains(&0);
    let row = if empty { 0 } else { shape[n - 1] };
    let rows: u64 = if empty {
        0
    } else {
        shape[..n - 1].iter().product()
    };
    let linear = move |dims: &[u64], at: &[u64], idx: &[u64]| -> u64 {
        (0..n).fold(0u64, |acc, a| {
            acc * dims[a] + at[a] + if a < n - 1 { idx[a] } else { 0 }
        })
    };
    let mut idx = vec![0u64; n.saturating_sub(1)];
    let iter = (0..rows).map(move |_| {
        let here = (
            linear(src_shape, src_at, &idx),
            linear(dst_shape, dst_at, &idx),
        );
        for a in (0..n - 1).rev() {
            idx[a] += 1;
            if idx[a] < shape[a] {
                break;
            }
            idx[a] = 0;
        }
        here
    });
    (row, iter)
}

/// `(source_byte, destination_byte, length)` runs copying the box of `shape` at `src_at` of a
/// row-major array of `src_shape` to `dst_at` of a row-major array of `dst_shape`, `elem` bytes
/// per element; runs consecutive in both arrays are merged.
pub fn box_runs(
    src_shape: &[u64],
    src_at: &[u64],
    dst_shape: &[u64],
    dst_at: &[u64],
    shape: &[u64],
    elem: usize,
) -> Vec<(u64, u64, usize)> {
    let (row, rows) = box_rows(src_shape, src_at, dst_shape, dst_at, shape);
    let mut runs: Vec<(u64, u64, u64)> = Vec::new(); // in elements
    for (s, d) in rows {
        match runs.last_mut() {
            Some((ls, ld, len)) if *ls + *len == s && *ld + *len == d => *len += row,
            _ => runs.push((s, d, row)),
        }
    }
    let e = elem as u64;
    runs.into_iter()
        .map(|(s, d, len)| (s * e, d * e, (len * e) as usize))
        .collect()
}

/// The byte runs of `tile` inside a row-major array of `global` shape, against its own dense
/// buffer: a slab of whole rows is a single run.
pub fn tile_runs(global: &[u64], tile: &Tile, elem: usize) -> Vec<(u64, u64, usize)> {
    let zero = vec![0u64; tile.ndim()];
    box_runs(global, &tile.offset, &tile.shape, &zero, &tile.shape, elem)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies the runs to real arrays and compares with an element-by-element copy.
    fn check(src_shape: &[u64], src_at: &[u64], dst_shape: &[u64], dst_at: &[u64], shape: &[u64]) {
        let volume = |s: &[u64]| s.iter().product::<u64>() as usize;
        let src: Vec<u32> = (0..volume(src_shape) as u32).collect();
        let mut by_runs = vec![u32::MAX; volume(dst_shape)];
        for (s, d, len) in box_runs(src_shape, src_at, dst_shape, dst_at, shape, 4) {
            let (s, d, len) = (s as usize / 4, d as usize / 4, len / 4);
            by_runs[d..d + len].copy_from_slice(&src[s..s + len]);
        }
        let mut expected = vec![u32::MAX; volume(dst_shape)];
        let n = shape.len();
        for i in 0..volume(shape) {
            let mut rest = i;
            let mut idx = vec![0u64; n];
            for a in (0..n).rev() {
                idx[a] = (rest % shape[a] as usize) as u64;
                rest /= shape[a] as usize;
            }
            let lin = |dims: &[u64], at: &[u64]| {
                (0..n).fold(0u64, |acc, a| acc * dims[a] + at[a] + idx[a]) as usize
            };
            expected[lin(dst_shape, dst_at)] = src[lin(src_shape, src_at)];
        }
        assert_eq!(
            by_runs, expected,
            "{src_shape:?} {src_at:?} -> {dst_shape:?} {dst_at:?} box {shape:?}"
        );
    }

    #[test]
    fn runs_copy_exactly_the_box() {
        check(&[8, 16], &[0, 0], &[8, 16], &[0, 0], &[8, 16]);
        check(&[8, 16], &[2, 4], &[4, 8], &[0, 0], &[4, 8]);
        check(&[8, 16], &[0, 0], &[10, 20], &[1, 2], &[8, 16]);
        check(&[5, 6, 7], &[1, 2, 3], &[4, 4, 4], &[0, 1, 0], &[3, 3, 4]);
        check(&[100], &[10], &[50], &[5], &[40]);
    }

    #[test]
    fn full_rows_are_one_run_and_blocks_are_one_run_per_row() {
        let g = [4u64, 6];
        assert_eq!(
            tile_runs(&g, &Tile::new(vec![1, 0], vec![2, 6]), 1),
            vec![(6, 0, 12)]
        );
        assert_eq!(
            tile_runs(&g, &Tile::new(vec![1, 2], vec![2, 3]), 1),
            vec![(8, 0, 3), (14, 3, 3)]
        );
        assert!(tile_runs(&g, &Tile::new(vec![0, 0], vec![0, 6]), 1).is_empty());
    }

    #[test]
    fn runs_of_a_3d_block_cover_exactly_its_elements() {
        let g = [3u64, 4, 5];
        let t = Tile::new(vec![1, 1, 0], vec![2, 2, 5]);
        let r = tile_runs(&g, &t, 1);
        assert_eq!(r, vec![(25, 0, 10), (45, 10, 10)]);
        let t = Tile::new(vec![0, 1, 2], vec![3, 3, 2]);
        let mut covered: Vec<u64> = tile_runs(&g, &t, 1)
            .iter()
            .flat_map(|&(f, _, n)| f..f + n as u64)
            .collect();
        covered.sort();
        let mut want = Vec::new();
        for i in 0..3 {
            for j in 1..4 {
                for k in 2..4 {
                    want.push(i * 20 + j * 5 + k);
                }
            }
        }
        assert_eq!(covered, want);
    }

    #[test]
    fn whole_rows_consecutive_in_both_merge_into_one_run() {
        assert_eq!(
            box_runs(&[8, 16], &[2, 0], &[4, 16], &[0, 0], &[4, 16], 8),
            [(2 * 16 * 8, 0, 4 * 16 * 8)]
        );
        // Part of each row: one run per row.
        assert_eq!(
            box_runs(&[8, 16], &[0, 4], &[8, 8], &[0, 0], &[8, 8], 1).len(),
            8
        );
        assert!(box_runs(&[8, 16], &[0, 0], &[8, 16], &[0, 0], &[0, 16], 1).is_empty());
    }
}
