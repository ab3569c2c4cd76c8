//! Global-memory coalescing: the 32-byte sectors one warp access touches follow from the
//! lanes' addresses (CUDA C++ Programming Guide, "Device Memory Accesses").

use isa::divergence::FULL;
use isa::program::LaneAddrs;

/// The distinct `sector_bytes` sectors (sector indices, ascending) touched by the active lanes'
/// accesses of `width` bytes each.
pub fn sectors(a: &LaneAddrs, width: u32, sector_bytes: u64) -> Vec<u64> {
    // The whole warp, the usual case, without a test per lane.
    if a.mask == FULL {
        sectors_of(a.addrs.iter().copied(), width, sector_bytes)
    } else {
        sectors_of(a.active(), width, sector_bytes)
    }
}

fn sectors_of(addrs: impl Iterator<Item = u64>, width: u32, sector_bytes: u64) -> Vec<u64> {
    let mut s: Vec<u64> = addrs
        .flat_map(|a| (a / sector_bytes)..=((a + width as u64 - 1) / sector_bytes))
        .collect();
    // Lanes usually walk up through memory: then the sectors come in order already.
    if !s.is_sorted() {
        s.sort_unstable();
    }
    s.dedup();
    s
}

/// The L2 requests of a warp access: its sectors (ascending indices, as [`sectors`] returns
/// them) grouped by `line_bytes` line, each request `(first sector's address, bytes)`. A line
/// whose sectors are all touched is one whole-line request, so a coalesced store overwrites the
/// line without reading it from DRAM first.
pub fn line_requests(sectors: &[u64], sector_bytes: u64, line_bytes: u64) -> Vec<(u64, u64)> {
    let per_line = (line_bytes / sector_bytes).max(1);
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut current = u64::MAX;
    for &s in sectors {
        let line = s / per_line;
        match out.last_mut() {
            Some(last) if line == current => last.1 += sector_bytes,
            _ => {
                out.push((s * sector_bytes, sector_bytes));
                current = line;
            }
        }
    }
    out
}

/// The lines a warp access touches (line indices, ascending) with the mask of its sectors in
/// each (bit k: sector k of the line); `sectors` as [`sectors`] returns them.
pub fn line_sectors(sectors: &[u64], sector_bytes: u64, line_bytes: u64) -> Vec<(u64, u8)> {
    let per_line = (line_bytes / sector_bytes).max(1);
    let mut out: Vec<(u64, u8)> = Vec::new();
    for &s in sectors {
        let (line, bit) = (s / per_line, 1u8 << (s % per_line));
        match out.last_mut() {
            Some(last) if last.0 == line => last.1 |= bit,
            _ => out.push((line, bit)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lanes(f: impl Fn(u64) -> u64) -> LaneAddrs {
        LaneAddrs {
            addrs: std::array::from_fn(|l| f(l as u64)),
            mask: FULL,
        }
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
    fn sectors_group_into_line_requests() {
        // 32 consecutive words: one whole 128-byte line.
        let s = sectors(&lanes(|l| l * 4), 4, 32);
        assert_eq!(line_requests(&s, 32, 128), vec![(0, 128)]);
        // 16 B per lane from byte 96: sector 3 of line 0, then lines 1..4 whole, then one
        // sector of line 4.
        let s = sectors(&lanes(|l| 96 + l * 16), 16, 32);
        let r = line_requests(&s, 32, 128);
        assert_eq!(r.first(), Some(&(96, 32)));
        assert_eq!(r[1..4], [(128, 128), (256, 128), (384, 128)]);
        assert_eq!(r.last(), Some(&(512, 96)));
        // A 1 KiB stride: 32 requests of one sector each.
        let s = sectors(&lanes(|l| l * 1024), 4, 32);
        assert_eq!(line_requests(&s, 32, 128).len(), 32);
    }

    #[test]
    fn sectors_group_into_lines_with_masks() {
        // 16 B per lane from byte 96: sector 3 of line 0, lines 1..4 whole, sectors 0 to 2 of
        // line 4.
        let s = sectors(&lanes(|l| 96 + l * 16), 16, 32);
        let l = line_sectors(&s, 32, 128);
        assert_eq!(l.first(), Some(&(0, 0b1000)));
        assert_eq!(l[1..4], [(1, 0b1111), (2, 0b1111), (3, 0b1111)]);
        assert_eq!(l.last(), Some(&(4, 0b0111)));
        // Every lane on one word (a broadcast): one sector of one line.
        assert_eq!(
            line_sectors(&sectors(&lanes(|_| 200), 4, 32), 32, 128),
            [(1, 0b0100)]
        );
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
