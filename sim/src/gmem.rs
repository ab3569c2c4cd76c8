//! Global-memory coalescing: the 32-byte sectors one warp access touches follow from the
//! lanes' addresses (CUDA C++ Programming Guide, "Device Memory Accesses").

/// The distinct `sector_bytes` sectors (sector indices, ascending) touched by the lanes'
/// accesses of `width` bytes each.
pub fn sectors(addrs: &[u64], width: u32, sector_bytes: u64) -> Vec<u64> {
    let mut s: Vec<u64> = addrs
        .iter()
        .flat_map(|&a| (a / sector_bytes)..=((a + width as u64 - 1) / sector_bytes))
        .collect();
    s.sort_unstable();
    s.dedup();
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lanes(f: impl Fn(u64) -> u64) -> Vec<u64> {
        (0..32).map(f).collect()
    }

    #[test]
    fn consecutive_words_are_four_sectors() {
        assert_eq!(sectors(&lanes(|l| l * 4), 4, 32), vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_row_stride_is_one_sector_per_lane() {
        assert_eq!(sectors(&lanes(|l| l * 1024), 4, 32).len(), 32);
    }

    #[test]
    fn misaligned_and_wide_accesses() {
        // 32 x 4 B starting 4 bytes into a sector: spills into a fifth sector.
        assert_eq!(sectors(&lanes(|l| 4 + l * 4), 4, 32).len(), 5);
        // 32 x 16 B contiguous = 512 B = 16 sectors; all lanes on one word = 1.
        assert_eq!(sectors(&lanes(|l| l * 16), 16, 32).len(), 16);
        assert_eq!(sectors(&lanes(|_| 100), 4, 32).len(), 1);
    }
}
