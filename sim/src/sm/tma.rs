//! Where a TMA box lives in global memory: the contiguous spans of a row-major tensor that a box
//! at given element coordinates covers. Elements outside the tensor are zero-filled by the TMA
//! unit (they still count as transaction bytes) and cause no memory traffic, so spans are clipped
//! to the tensor.

/// Byte spans `(offset from the tensor's base, bytes)` of a box of extent `boxdims` at element
/// `coords` in a row-major tensor of extent `shape` with `elem`-byte elements, outermost first.
pub fn box_spans(shape: &[u64], elem: u64, coords: &[i64], boxdims: &[u64]) -> Vec<(u64, u64)> {
    let rank = shape.len();
    debug_assert!(rank > 0 && coords.len() == rank && boxdims.len() == rank);
    let inner = rank - 1;
    // The innermost dimension is contiguous: clip it once.
    let lo = coords[inner].clamp(0, shape[inner] as i64) as u64;
    let hi = coords[inner]
        .saturating_add(boxdims[inner] as i64)
        .clamp(0, shape[inner] as i64) as u64;
    if hi <= lo {
        return Vec::new();
    }
    let mut spans = Vec::new();
    // Odometer over the outer dimensions of the box.
    let mut idx = vec![0u64; inner];
    loop {
        let mut offset = 0u64;
        let mut inside = true;
        for d in 0..inner {
            let c = coords[d].saturating_add(idx[d] as i64);
            if c < 0 || c >= shape[d] as i64 {
                inside = false;
                break;
            }
            offset = offset * shape[d] + c as u64;
        }
        if inside {
            let row = if inner == 0 { 0 } else { offset * shape[inner] };
            spans.push(((row + lo) * elem, (hi - lo) * elem));
        }
        // Advance the odometer, innermost outer dimension fastest.
        let mut d = inner;
        loop {
            if d == 0 {
                return spans;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < boxdims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_2d_box_is_one_span_per_row() {
        // A 128 x 64 bf16 box at (256, 128) of a 4096 x 4096 tensor: 128 rows of 128 bytes.
        let spans = box_spans(&[4096, 4096], 2, &[256, 128], &[128, 64]);
        assert_eq!(spans.len(), 128);
        assert_eq!(spans[0], ((256 * 4096 + 128) * 2, 128));
        assert_eq!(spans[1].0 - spans[0].0, 4096 * 2);
        assert_eq!(spans.iter().map(|s| s.1).sum::<u64>(), 128 * 64 * 2);
    }

    #[test]
    fn out_of_bounds_parts_are_clipped() {
        // Box 4 x 8 at (-1, 4) of a 3 x 10 tensor: rows -1 and 3 are outside, columns 10..12 too.
        let spans = box_spans(&[3, 10], 4, &[-1, 4], &[4, 8]);
        assert_eq!(
            spans,
            vec![(4 * 4, 24), ((10 + 4) * 4, 24), ((20 + 4) * 4, 24)]
        );
        assert!(box_spans(&[3, 10], 4, &[0, 10], &[2, 2]).is_empty());
    }

    #[test]
    fn extreme_coordinates_do_not_overflow() {
        assert!(box_spans(&[4, 4], 2, &[i64::MAX, i64::MAX], &[2, 2]).is_empty());
        assert!(box_spans(&[4, 4], 2, &[i64::MIN, i64::MIN], &[2, 2]).is_empty());
    }

    #[test]
    fn rank_one_and_rank_three() {
        assert_eq!(box_spans(&[100], 2, &[10], &[16]), vec![(20, 32)]);
        let spans = box_spans(&[2, 4, 8], 1, &[0, 1, 0], &[2, 2, 8]);
        assert_eq!(spans, vec![(8, 8), (16, 8), (40, 8), (48, 8)]);
    }
}
