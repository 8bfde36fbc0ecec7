//! Byte runs of a box copied between two row-major arrays: how tile bytes at a known file
//! offset map onto a caller's buffer, rows consecutive in both merged into one run.

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
    let n = shape.len();
    if n == 0 || shape.contains(&0) {
        return Vec::new();
    }
    let row = shape[n - 1];
    let linear = |dims: &[u64], at: &[u64], idx: &[u64]| -> u64 {
        (0..n).fold(0u64, |acc, a| {
            acc * dims[a] + at[a] + if a < n - 1 { idx[a] } else { 0 }
        })
    };
    let rows: u64 = shape[..n - 1].iter().product();
    let mut idx = vec![0u64; n - 1];
    let mut runs: Vec<(u64, u64, u64)> = Vec::new(); // in elements
    for _ in 0..rows {
        let (s, d) = (
            linear(src_shape, src_at, &idx),
            linear(dst_shape, dst_at, &idx),
        );
        match runs.last_mut() {
            Some((ls, ld, len)) if *ls + *len == s && *ld + *len == d => *len += row,
            _ => runs.push((s, d, row)),
        }
        for a in (0..n - 1).rev() {
            idx[a] += 1;
            if idx[a] < shape[a] {
                break;
            }
            idx[a] = 0;
        }
    }
    let e = elem as u64;
    runs.into_iter()
        .map(|(s, d, len)| (s * e, d * e, (len * e) as usize))
        .collect()
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
