//! How one request is cut into transfers: aligned spans for O_DIRECT (and, later, cuFile), and
//! pieces for parallel workers. Plain arithmetic, tested without any device.

/// The `align`-aligned span `[start, end)` that covers `addr..addr+len`.
pub fn aligned_span(addr: u64, len: u64, align: u64) -> (u64, u64) {
    let start = addr / align * align;
    let end = (addr + len).div_ceil(align) * align;
    (start, end)
}

/// `[start, end)` cut into consecutive pieces of at most `max` bytes.
pub fn pieces(start: u64, end: u64, max: u64) -> impl Iterator<Item = (u64, u64)> {
    (start..end)
        .step_by(max.max(1) as usize)
        .map(move |p| (p, (p + max).min(end)))
}

/// The part of piece `[p0, p1)` that overlaps the request `addr..addr+len`, as
/// (offset in the piece, offset in the request, length).
pub fn overlap(p0: u64, p1: u64, addr: u64, len: u64) -> Option<(usize, usize, usize)> {
    let (lo, hi) = (p0.max(addr), p1.min(addr + len));
    (lo < hi).then(|| ((lo - p0) as usize, (lo - addr) as usize, (hi - lo) as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_round_out_to_the_alignment() {
        assert_eq!(aligned_span(0, 4096, 4096), (0, 4096));
        assert_eq!(aligned_span(100, 10, 4096), (0, 4096));
        assert_eq!(aligned_span(4000, 200, 4096), (0, 8192));
        assert_eq!(aligned_span(8192, 1, 4096), (8192, 12288));
        assert_eq!(aligned_span(5, 0, 4096), (0, 4096));
    }

    #[test]
    fn pieces_cover_the_span_in_order_without_gaps() {
        let p: Vec<_> = pieces(0, 10_000, 4096).collect();
        assert_eq!(p, vec![(0, 4096), (4096, 8192), (8192, 10_000)]);
        assert_eq!(pieces(4096, 4096, 4096).count(), 0);
        assert_eq!(pieces(0, 8192, 8192).collect::<Vec<_>>(), vec![(0, 8192)]);
    }

    #[test]
    fn overlaps_map_piece_and_request_offsets() {
        // request 5000..5300 inside piece 4096..8192
        assert_eq!(overlap(4096, 8192, 5000, 300), Some((904, 0, 300)));
        // request 4000..9000 against piece 4096..8192: the middle of the request
        assert_eq!(overlap(4096, 8192, 4000, 5000), Some((0, 96, 4096)));
        assert_eq!(overlap(0, 4096, 4096, 10), None);
        let total: usize = pieces(0, 12288, 4096)
            .filter_map(|(a, b)| overlap(a, b, 4000, 5000))
            .map(|o| o.2)
            .sum();
        assert_eq!(
            total, 5000,
            "the pieces of a span deliver every byte of the request once"
        );
    }
}
