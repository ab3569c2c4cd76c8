//! Everything below the SMs' shared memory: each SM's port to the L2 (a per-SM bandwidth cap, so
//! a single SM cannot pull the whole chip's bandwidth), the L2 (tags in [`L2`], bandwidth in
//! address-interleaved slices, near/far partitions), and HBM ([`Hbm`]).
//!
//! A slice moves a line in two steps with their own rates: reading it out of its data array
//! (`memory.l2.data_bytes_per_cycle` GPU-wide) and sending it back through the crossbar
//! (`memory.l2.bytes_per_cycle`). A line that SMs of one GPC ask for again, with its read-out
//! due to start within `memory.l2.merge_cycles` of the line's last read-out for that GPC, rides
//! on that read and takes only the crossbar; another GPC's request is a read-out of its own. On the H200, 132 SMs
//! re-reading one buffer get 7446 B/cycle, reading disjoint data 4264; on an H100, TMA loads of
//! one tile by several SMs go as fast as the tile's GPC read-outs allow: sharing SMs in
//! different GPCs gain nothing, in one GPC they share it (calibration/l2_share.cu,
//! h100-l2_share.csv; Nsight Compute counts the L2 requests halved for pairs in one GPC).
//!
//! Latency of a line read: to L2 and back is the near or far hit latency (far when the line's
//! slice is in the other L2 partition than the SM), half each way; a miss adds the HBM channel's
//! queueing and the HBM latency, and `memory.hbm.far_latency` more in the far partition (on the
//! H200 single DRAM misses cluster near 515 and 700 cycles, L2 hits near 256 and 288). Each
//! request also gets a seeded jitter of 0..=`latency_jitter`.

use crate::engine::server::Link;
use crate::gpu::preset::Preset;
use crate::memory::hbm::Hbm;
use crate::memory::l2::L2;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

/// Maps a unit index (a line, an interleave unit) to one of `n` slices or channels with a
/// multiplicative hash: hardware hashes addresses so that strided accesses do not pile onto a
/// few slices or channels.
pub fn spread(unit: u64, n: usize) -> usize {
    ((unit.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % n as u64) as usize
}

pub struct MemSys {
    ports: Vec<Link>,
    l2: L2,
    /// Per slice: its data array and its crossbar port.
    arrays: Vec<Link>,
    slices: Vec<Link>,
    merge: u64,
    hbm: Hbm,
    line: u64,
    sector: u64,
    /// The mask of a whole line's sectors.
    all_sectors: u8,
    /// Sectors DRAM moves at a time for a fill (`memory.hbm.fetch_bytes / sector_bytes`).
    fetch_group: u32,
    near: u64,
    far: u64,
    /// Extra cycles of a miss in the far partition (`memory.hbm.far_latency`).
    far_miss: u64,
    /// The L2 partition of each slice and of each SM: a slice in another partition than the SM
    /// is far.
    slice_part: Vec<u32>,
    sm_part: Vec<u32>,
    /// The GPC of each SM (`cluster.gpc_sms`; all in one without GPCs).
    gpc_of: Vec<u32>,
    jitter: u64,
    l2_bytes: u64,
    /// Bytes of reads that rode on another SM's read-out of the line (see `access`).
    l2_shared_bytes: u64,
    /// The counts when the present kernel started (`begin_kernel`): its stats are those since.
    base: Counts,
}

/// The memory system's running counts, as a kernel of a sequence found them.
#[derive(Clone, Debug, Default)]
struct Counts {
    l2_hits: u64,
    l2_misses: u64,
    l2_bytes: u64,
    l2_shared_bytes: u64,
    dram_read_bytes: u64,
    dram_write_bytes: u64,
    /// Dirty lines left by the kernels before: counted as their writes already.
    dirty_lines: u64,
    port_busy: Vec<u64>,
}

/// Totals of a run.
#[derive(Clone, Debug, Default)]
pub struct MemStats {
    pub l2_hits: u64,
    pub l2_misses: u64,
    /// Bytes the SMs read from and wrote to L2.
    pub l2_bytes: u64,
    /// The part of `l2_bytes` read on another SM's read-out of the same line, so that the
    /// slices' data arrays moved them once for both (Nsight Compute's `lts__t_bytes` counts
    /// them once: h100-cluster_ncu.csv, unicast loads by 2 CTAs of a cluster).
    pub l2_shared_bytes: u64,
    pub dram_read_bytes: u64,
    /// Write-backs, including the dirty lines left in L2 at the end.
    pub dram_write_bytes: u64,
    /// The part of `dram_write_bytes` still dirty in L2 at the end (written after the kernel).
    pub dram_flush_bytes: u64,
    /// Cycles the busiest SM port transferred.
    pub port_busy_max: u64,
    pub port_busy_total: u64,
}

impl MemSys {
    pub fn new(p: &Preset, clock_mhz: f64) -> Self {
        let m = &p.memory;
        let slices = m.l2.slices.max(1);
        let partitions = m.l2.partitions.max(1) as u64;
        let hbm_bytes_per_cycle = m.hbm.bandwidth_gbs * 1e9 * m.hbm.efficiency / (clock_mhz * 1e6);
        MemSys {
            ports: (0..p.sm.count)
                .map(|_| Link::new(m.sm_bytes_per_cycle))
                .collect(),
            l2: L2::new(m.l2.bytes, m.l2.line_bytes, m.l2.ways),
            arrays: (0..slices)
                .map(|_| Link::new(m.l2.data_bytes_per_cycle / slices as f64))
                .collect(),
            slices: (0..slices)
                .map(|_| Link::new(m.l2.bytes_per_cycle / slices as f64))
                .collect(),
            merge: m.l2.merge_cycles,
            hbm: Hbm::new(
                hbm_bytes_per_cycle,
                m.hbm.channels,
                m.hbm.interleave_bytes,
                m.hbm.latency,
                m.hbm.turnaround_cycles,
                m.hbm.write_batch_bytes,
            ),
            line: m.l2.line_bytes,
            sector: m.sector_bytes,
            all_sectors: ((1u32 << (m.l2.line_bytes / m.sector_bytes)) - 1) as u8,
            fetch_group: (m.hbm.fetch_bytes / m.sector_bytes) as u32,
            near: m.l2.near_latency,
            far: m.l2.far_latency,
            far_miss: m.hbm.far_latency,
            slice_part: (0..slices)
                .map(|s| (s as u64 * partitions / slices as u64) as u32)
                .collect(),
            sm_part: (0..p.sm.count)
                .map(|sm| (u64::from(sm) * partitions / u64::from(p.sm.count.max(1))) as u32)
                .collect(),
            gpc_of: (0u32..)
                .zip(p.cluster.gpcs(p.sm.count))
                .flat_map(|(g, n)| std::iter::repeat_n(g, n as usize))
                .collect(),
            jitter: m.latency_jitter,
            l2_bytes: 0,
            l2_shared_bytes: 0,
            base: Counts::default(),
        }
    }

    fn slice_of(&self, line: u64) -> usize {
        spread(line, self.slices.len())
    }

    /// Whether `slice` is in the other L2 partition than SM `sm`.
    fn is_far(&self, sm: u32, slice: usize) -> bool {
        self.slice_part[slice] != self.sm_part[sm as usize]
    }

    /// Reads `bytes` at `addr` for SM `sm`, requested at `now`; returns when the last byte has
    /// come back through L2 (the SM's port is booked separately with [`MemSys::port`]).
    pub fn read(&mut self, sm: u32, now: u64, addr: u64, bytes: u64, rng: &mut ChaCha8Rng) -> u64 {
        self.access(sm, now, addr, bytes, false, rng)
    }

    /// Writes `bytes` at `addr` (write-allocate, write-back); returns when L2 has them.
    pub fn write(&mut self, sm: u32, now: u64, addr: u64, bytes: u64, rng: &mut ChaCha8Rng) -> u64 {
        self.access(sm, now, addr, bytes, true, rng)
    }

    /// Reads or writes `bytes` at `addr` for SM `sm`, requested at `now` (as
    /// [`MemSys::read`] and [`MemSys::write`]).
    pub(crate) fn access(
        &mut self,
        sm: u32,
        now: u64,
        addr: u64,
        bytes: u64,
        write: bool,
        rng: &mut ChaCha8Rng,
    ) -> u64 {
        self.l2_bytes += bytes;
        // One jitter draw per request: its lines travel together.
        let jitter = if self.jitter > 0 {
            rng.random_range(0..=self.jitter)
        } else {
            0
        };
        let first = addr / self.line;
        let last = (addr + bytes.max(1) - 1) / self.line;
        let mut done = now;
        for line in first..=last {
            // Bytes of this request that fall in this line.
            let lo = addr.max(line * self.line);
            let hi = (addr + bytes).min((line + 1) * self.line);
            let part = hi.saturating_sub(lo).max(1);
            let slice = self.slice_of(line);
            let far = self.is_far(sm, slice);
            // The round trip between the SM and the slice: near or far partition.
            let lat = if far { self.far } else { self.near } + jitter;
            let at_l2 = now + lat / 2;
            let a = self.l2.access(line, write);
            // The victim's address is gone; charge the write-back to this line's channel. Its
            // way takes the new data once the victim is out, so writes that evict dirty lines
            // go at DRAM's pace, not L2's.
            let evicted = if a.writeback {
                self.hbm.write(at_l2, line * self.line, self.line)
            } else {
                at_l2
            };
            // The sectors touched, and those a write covers whole (they need no fill).
            let (touched, whole) = self.sectors(line * self.line, lo, hi);
            let fill = if write {
                self.l2.validate(a.slot, whole);
                self.l2.fill(a.slot, touched & !whole, self.fetch_group)
            } else {
                self.l2.fill(a.slot, touched, self.fetch_group)
            };
            self.l2.count(fill == 0 && a.hit);
            let data_at_l2 = if fill == 0 {
                if a.hit {
                    a.ready.max(at_l2)
                } else {
                    evicted.max(at_l2)
                }
            } else {
                let bytes = u64::from(fill.count_ones()) * self.sector;
                let far_miss = if far { self.far_miss } else { 0 };
                let filled = self.hbm.read(at_l2, line * self.line, bytes) + far_miss;
                self.l2.set_ready(a.slot, filled.max(a.ready));
                filled
            };
            // A write or a fill goes through the data array. A read whose read-out would start
            // within the merge window of the line's last read-out for the SM's GPC rides on it:
            // it takes the data when that read-out is done, or at once from its buffer. The
            // window counts from where the read would leave the array's queue, not from its
            // arrival: requests wait for their turn upstream on the chip, so the queue's depth
            // does not widen the window (h100-l2_share_lag.csv: one tile apart shares, two not).
            let gpc = self.gpc_of.get(sm as usize).copied().unwrap_or(0);
            let ride = if a.hit && !write {
                let own = self.arrays[slice].start_at(data_at_l2);
                self.l2.shared_read_out(a.slot, gpc, own, self.merge)
            } else {
                None
            };
            let out = match ride {
                Some(read_out) => {
                    self.l2_shared_bytes += part;
                    data_at_l2.max(read_out)
                }
                None => {
                    let t = self.arrays[slice].book(data_at_l2, part);
                    if !write {
                        self.l2.record_read(a.slot, gpc, t, self.merge);
                    }
                    t
                }
            };
            let through = self.slices[slice].book(out, part);
            done = done.max(through + lat - lat / 2);
        }
        done
    }

    /// A read of `addr` comes soon: its L2 tags start on their way into the host's cache.
    pub fn prefetch(&self, addr: u64) {
        self.l2.prefetch(addr / self.line);
    }

    /// Puts the lines of `bytes` at `addr` in L2, clean and present from cycle 0, as an earlier
    /// kernel's reads would leave them; neither hits nor misses are counted.
    pub fn preload(&mut self, addr: u64, bytes: u64) {
        let first = addr / self.line;
        let last = (addr + bytes.max(1) - 1) / self.line;
        for line in first..=last {
            let a = self.l2.access(line, false);
            self.l2.validate(a.slot, self.all_sectors);
            self.l2.set_ready(a.slot, 0);
        }
        self.l2.clear_counts();
    }

    /// The sectors of the line at `base` that bytes `lo..hi` touch, and those they cover whole.
    fn sectors(&self, base: u64, lo: u64, hi: u64) -> (u8, u8) {
        if lo == base && hi == base + self.line {
            // The whole line (a TMA row of 128 bytes): no division.
            return (self.all_sectors, self.all_sectors);
        }
        let (first, last) = ((lo - base) / self.sector, (hi - 1 - base) / self.sector);
        // Sectors `from..to` as a mask (a line has at most 8).
        let span = |from: u64, to: u64| ((1u32 << to) - (1u32 << from.min(to))) as u8;
        let touched = span(first, last + 1);
        // Covered whole: from the first sector starting at or after `lo` to the last ending at
        // or before `hi`.
        let whole = span((lo - base).div_ceil(self.sector), (hi - base) / self.sector);
        (touched, whole)
    }

    /// Moves `bytes` through SM `sm`'s port to L2 starting no earlier than `now`.
    pub fn port(&mut self, sm: u32, now: u64, bytes: u64) -> u64 {
        self.ports[sm as usize].book(now, bytes)
    }

    /// Hands over the SMs' ports, by SM: during a run each SM books its own (they are its
    /// alone), and [`MemSys::restore_ports`] gives them back.
    pub fn take_ports(&mut self) -> Vec<Link> {
        std::mem::take(&mut self.ports)
    }

    pub fn restore_ports(&mut self, ports: Vec<Link>) {
        self.ports = ports;
    }

    /// The present kernel starts: its totals count from here.
    pub fn begin_kernel(&mut self) {
        self.base = Counts {
            l2_hits: self.l2.hits(),
            l2_misses: self.l2.misses(),
            l2_bytes: self.l2_bytes,
            l2_shared_bytes: self.l2_shared_bytes,
            dram_read_bytes: self.hbm.read_bytes(),
            dram_write_bytes: self.hbm.write_bytes(),
            dirty_lines: self.l2.dirty_lines(),
            port_busy: self.ports.iter().map(Link::busy).collect(),
        };
    }

    /// The present kernel's totals; dirty lines still in L2 count as DRAM writes (they are
    /// written back eventually). So a sequence's dirty lines count in the kernel that leaves
    /// them: a later kernel's writes are its write-backs and the lines dirty at its end less
    /// those dirty at its start (each of which it either wrote back or left dirty).
    pub fn stats(&self) -> MemStats {
        let b = &self.base;
        let port = |i: usize, l: &Link| l.busy() - b.port_busy.get(i).copied().unwrap_or(0);
        MemStats {
            l2_hits: self.l2.hits() - b.l2_hits,
            l2_misses: self.l2.misses() - b.l2_misses,
            l2_bytes: self.l2_bytes - b.l2_bytes,
            l2_shared_bytes: self.l2_shared_bytes - b.l2_shared_bytes,
            dram_read_bytes: self.hbm.read_bytes() - b.dram_read_bytes,
            dram_write_bytes: (self.hbm.write_bytes() - b.dram_write_bytes
                + self.l2.dirty_lines() * self.line)
                .saturating_sub(b.dirty_lines * self.line),
            dram_flush_bytes: self.l2.dirty_lines().saturating_sub(b.dirty_lines) * self.line,
            port_busy_max: self
                .ports
                .iter()
                .enumerate()
                .map(|(i, l)| port(i, l))
                .max()
                .unwrap_or(0),
            port_busy_total: self.ports.iter().enumerate().map(|(i, l)| port(i, l)).sum(),
        }
    }

    /// Bytes the SMs have moved through L2 so far.
    pub fn l2_bytes(&self) -> u64 {
        self.l2_bytes
    }

    /// Bytes HBM has read and written so far (without the final flush).
    pub fn dram_bytes(&self) -> u64 {
        self.hbm.read_bytes() + self.hbm.write_bytes()
    }

    /// Cycles each SM's port was busy.
    pub fn port_busy(&self, sm: u32) -> u64 {
        self.ports[sm as usize].busy()
    }

    /// Cycles SM `sm`'s port transferred by cycle `t` (at least; `Link::busy_by`).
    pub fn port_busy_by(&self, sm: u32, t: u64) -> f64 {
        self.ports[sm as usize].busy_by(t)
    }

    /// Bytes through the L2 slices by cycle `t` (at least; `Link::bytes_by`).
    pub fn l2_bytes_by(&self, t: u64) -> f64 {
        self.slices.iter().map(|s| s.bytes_by(t)).sum()
    }

    /// Bytes through the HBM channels by cycle `t` (at least; `Link::bytes_by`).
    pub fn dram_bytes_by(&self, t: u64) -> f64 {
        self.hbm.bytes_by(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn h100() -> (Preset, ChaCha8Rng) {
        let mut p = Preset::builtin("h100-sxm").unwrap();
        p.memory.latency_jitter = 0;
        (p, ChaCha8Rng::seed_from_u64(0))
    }

    #[test]
    fn miss_then_hit_latencies() {
        let (p, mut rng) = h100();
        let mut m = MemSys::new(&p, 1830.0);
        let l2 = &p.memory.l2;
        let t_miss = m.read(0, 0, 0, 128, &mut rng);
        let t_hit = m.read(0, 10_000, 0, 128, &mut rng) - 10_000;
        // The hit latency plus one line out of a slice's data array (128 B at 4264 / 64 B/cycle:
        // 2 cycles) and through its crossbar port (at 7446 / 64: 2 cycles, rounded up).
        let lat = t_hit - 4;
        assert!(lat == l2.near_latency || lat == l2.far_latency, "{lat}");
        assert!(t_miss >= lat + p.memory.hbm.latency, "{t_miss}");
        let s = m.stats();
        assert_eq!((s.l2_hits, s.l2_misses, s.dram_read_bytes), (1, 1, 128));
    }

    #[test]
    fn a_miss_in_the_far_partition_takes_its_far_latency_more() {
        let mut p = Preset::builtin("h200-sxm").unwrap();
        p.memory.latency_jitter = 0;
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut m = MemSys::new(&p, 1980.0);
        // The first line of each partition, as SM 0 sees it; each read alone on its channel.
        let line = p.memory.l2.line_bytes;
        let near = (0..64).find(|&l| !m.is_far(0, m.slice_of(l))).unwrap();
        let far = (0..64).find(|&l| m.is_far(0, m.slice_of(l))).unwrap();
        let t_near = m.read(0, 0, near * line, line, &mut rng);
        let t_far = m.read(0, 100_000, far * line, line, &mut rng) - 100_000;
        let (l2, hbm) = (&p.memory.l2, &p.memory.hbm);
        assert_eq!(
            t_far - t_near,
            l2.far_latency - l2.near_latency + hbm.far_latency
        );
    }

    #[test]
    fn one_sm_port_caps_its_bandwidth() {
        let (p, mut rng) = h100();
        let mut m = MemSys::new(&p, 1830.0);
        let mut end = 0;
        // 1 MiB through SM 0's port at sm_bytes_per_cycle.
        for i in 0..1024u64 {
            let at = m.read(0, 0, i * 1024, 1024, &mut rng);
            end = end.max(m.port(0, at, 1024));
        }
        let floor = (1u64 << 20) as f64 / p.memory.sm_bytes_per_cycle;
        assert!(end as f64 >= floor, "{end} < {floor}");
    }

    #[test]
    fn a_line_read_again_at_once_shares_its_read_out() {
        let (p, mut rng) = h100();
        let mut m = MemSys::new(&p, 1830.0);
        // The fill, then 1000 SMs' worth of reads of that line at one time: one read-out from
        // the data array, then 1000 x 128 B through one slice's crossbar port (7446 / 64
        // B/cycle), not through the array (4264 / 64) each.
        m.read(0, 0, 0, 128, &mut rng);
        let (port, array) = (
            p.memory.l2.bytes_per_cycle / 64.0,
            p.memory.l2.data_bytes_per_cycle / 64.0,
        );
        let mut end = 0;
        for i in 0..1000u32 {
            end = end.max(m.read(i % 132, 10_000, 0, 128, &mut rng));
        }
        let took = (end - 10_000) as f64;
        assert!(took >= 128_000.0 / port, "{took}");
        assert!(took < 128_000.0 / array, "{took}");
    }

    #[test]
    fn writes_that_evict_dirty_lines_go_at_dram_pace() {
        // A 1 MiB L2 and 8 MiB of full-line writes requested at once: 7 MiB of dirty victims
        // leave through HBM before their ways take new data, so the last write lands no
        // earlier than 7 MiB / HBM bytes per cycle, far later than L2's rates alone allow.
        let (mut p, mut rng) = h100();
        p.memory.l2.bytes = 1 << 20;
        let hbm = p.memory.hbm.bandwidth_gbs * 1e9 * p.memory.hbm.efficiency / 1830e6;
        let mut m = MemSys::new(&p, 1830.0);
        let mut end = 0;
        for i in 0..(8u64 << 20) / 4096 {
            end = end.max(m.write(0, 0, i * 4096, 4096, &mut rng));
        }
        let floor = (7u64 << 20) as f64 / hbm;
        assert!(end as f64 >= floor, "{end} < {floor}");
        assert!((end as f64) < 1.3 * floor, "{end}");
    }

    #[test]
    fn sectors_touched_and_covered_whole() {
        let (p, _) = h100();
        let m = MemSys::new(&p, 1830.0);
        // A 128-byte line at 256 of 32-byte sectors.
        assert_eq!(m.sectors(256, 256, 384), (0b1111, 0b1111));
        assert_eq!(m.sectors(256, 260, 384), (0b1111, 0b1110));
        assert_eq!(m.sectors(256, 260, 380), (0b1111, 0b0110));
        assert_eq!(m.sectors(256, 290, 300), (0b0010, 0));
        assert_eq!(m.sectors(256, 288, 320), (0b0010, 0b0010));
    }

    #[test]
    fn full_line_writes_need_no_fill() {
        let (p, mut rng) = h100();
        let mut m = MemSys::new(&p, 1830.0);
        m.write(0, 0, 0, 4096, &mut rng);
        let s = m.stats();
        assert_eq!(s.dram_read_bytes, 0);
        assert_eq!(s.dram_write_bytes, 4096); // dirty lines left in L2
    }
}
