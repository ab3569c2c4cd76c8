//! Where a TMA box lives in global memory: the contiguous spans of a row-major tensor that a box
//! at given element coordinates covers. Elements outside the tensor are zero-filled by the TMA
//! unit (they still count as transaction bytes) and cause no memory traffic, so spans are clipped
//! to the tensor.
//!
//! `cp.async.bulk.tensor` loads and stores are issued here. A load books the SM's TMA issue
//! unit, waits `tma.extra_latency`, reads its spans from the memory system in chunks of
//! `tma.chunk_bytes`, and each chunk, back from L2 (`TmaChunk`), passes the SM's fill path into
//! shared memory at the box's rate ([`fill_bytes_per_cycle`]); the last chunk's arrival is the
//! box's complete-tx on the mbarrier (`TxComplete`). Booking the fill path at the chunk's event keeps
//! its bookings in time order. TMA writes do not take the shared-memory port that wgmma
//! operand reads and ld/st.shared use: on the H200 they run at full rate beside SS wgmma
//! saturating that port (calibration/data/h200-smem_port.csv). A store reads the slot through
//! the shared-memory port (unmeasured), then writes its spans, its bytes leaving no faster
//! than `tma.store_bytes_per_cycle` (measured: 32 B/cycle an SM, from 1 to 32 issuing warps).

use crate::engine::crossing::Then;
use crate::engine::error::Fault;
use crate::engine::event::Event;
use crate::engine::hooks::Hook;
use crate::engine::server::fp_per_byte;
use crate::engine::Shard;
use crate::gpu::preset::Tma;
use crate::observe::warp_state::State;
use isa::compile::MAX_RANK;
use isa::expr::Code;
use isa::program::{BarRef, BufferInfo, SlotRef};

/// The fill rule: bytes per cycle at which a TMA box streams into the slots of `buf`. The fill
/// path's rate, higher into slots with the 128-byte swizzle, and at most
/// `tma.fill_rows_per_cycle` box rows a cycle (rows of 32 and 64 bytes fill at one a cycle on
/// the H200, whatever their swizzle: calibration/data/h200-tma.csv, tma_bw_shape). A swizzled
/// row wider than its swizzle is that many rows of the swizzle's width.
pub fn fill_bytes_per_cycle(t: &Tma, buf: &BufferInfo) -> f64 {
    let cap = if buf.swizzle == 128 && t.fill_swizzled_bytes_per_cycle > 0.0 {
        t.fill_swizzled_bytes_per_cycle
    } else {
        t.fill_bytes_per_cycle
    };
    let mut row_bytes = buf.shape.last().copied().unwrap_or(1) * buf.dtype.bytes();
    if buf.swizzle > 0 {
        row_bytes = row_bytes.min(buf.swizzle as u64);
    }
    match t.fill_rows_per_cycle {
        r if r > 0.0 => cap.min(r * row_bytes as f64),
        _ => cap,
    }
}

/// The fastest any box fills shared memory: the fill path's speed of light.
pub fn fill_peak_bytes_per_cycle(t: &Tma) -> f64 {
    t.fill_bytes_per_cycle.max(t.fill_swizzled_bytes_per_cycle)
}

/// Byte spans `(offset from the tensor's base, bytes)` of a box of extent `boxdims` at element
/// `coords` in a row-major tensor of extent `shape` with `elem`-byte elements, outermost first;
/// at most [`MAX_RANK`] dimensions. An iterator, so a box's hundreds of rows allocate nothing.
pub fn box_spans(shape: &[u64], elem: u64, coords: &[i64], boxdims: &[u64]) -> BoxSpans {
    let rank = shape.len();
    debug_assert!(rank > 0 && rank <= MAX_RANK && coords.len() == rank && boxdims.len() == rank);
    let inner = rank - 1;
    // Per dimension, the element coordinates `from..to` of the box inside the tensor.
    let inside = |d: usize| {
        let clip = |c: i64| c.clamp(0, shape[d] as i64) as u64;
        (
            clip(coords[d]),
            clip(coords[d].saturating_add(boxdims[d] as i64)),
        )
    };
    let (lo, hi) = inside(inner);
    let mut spans = BoxSpans {
        inner,
        elem,
        len: hi.saturating_sub(lo) * elem,
        from: [0; MAX_RANK],
        to: [0; MAX_RANK],
        at: [0; MAX_RANK],
        stride: [0; MAX_RANK],
        offset: lo,
        done: hi <= lo,
    };
    let mut stride = shape[inner];
    for d in (0..inner).rev() {
        let (from, to) = inside(d);
        spans.done |= to <= from;
        (spans.from[d], spans.to[d], spans.at[d]) = (from, to, from);
        spans.stride[d] = stride;
        spans.offset += from * stride;
        stride = stride.saturating_mul(shape[d]);
    }
    spans
}

/// The spans of one box, row by row (see [`box_spans`]): an odometer over the rows inside the
/// tensor, the innermost outer dimension fastest.
#[derive(Clone)]
pub struct BoxSpans {
    inner: usize,
    elem: u64,
    /// Bytes of each span: the innermost dimension, clipped once.
    len: u64,
    /// Per outer dimension: the rows inside the tensor, the current one, and the elements
    /// between consecutive ones.
    from: [u64; MAX_RANK],
    to: [u64; MAX_RANK],
    at: [u64; MAX_RANK],
    stride: [u64; MAX_RANK],
    /// The current span's first element.
    offset: u64,
    done: bool,
}

impl Iterator for BoxSpans {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        if self.done {
            return None;
        }
        let span = (self.offset * self.elem, self.len);
        for d in (0..self.inner).rev() {
            self.at[d] += 1;
            self.offset += self.stride[d];
            if self.at[d] < self.to[d] {
                return Some(span);
            }
            self.offset -= (self.to[d] - self.from[d]) * self.stride[d];
            self.at[d] = self.from[d];
        }
        self.done = true;
        Some(span)
    }
}

/// A TMA load in flight: where it lands, the bytes of its last chunk (the others carry
/// `tma.chunk_bytes`), and what it completes: its box's transaction bytes, the slot it fills
/// (the shard's index), and the warp and instruction that issued it (for diagnostics). A
/// multicast load lands in the CTAs of `dests` (cluster ranks; 0: only `cta`), each in the same
/// slot and on the same mbarrier, `first` the CTA of rank 0.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TmaLoad {
    sm: u32,
    cta: u32,
    dests: u16,
    first: u32,
    bar: u32,
    last_chunk: u64,
    /// The latest of its chunks back so far.
    pub latest: u64,
    /// The box's rate into shared memory ([`fill_bytes_per_cycle`]) in the fill path's units.
    fill_fp_per_byte: u64,
    bytes: u64,
    slot: u32,
    warp: u32,
    pc: u32,
}

/// Whether a multicast load's issuer is not among the CTAs it lands in.
fn outside(issuer: u32, dests: u16, first: u32) -> bool {
    dests != 0 && u32::from(dests) & (1 << (issuer - first)) == 0
}

/// The box of one of `parts` equal parts of a slot of shape `slot`: its rows (the dimension
/// above the innermost) divided.
pub fn part_box(slot: &[u64], parts: u32) -> [u64; MAX_RANK] {
    let mut dims = [0; MAX_RANK];
    dims[..slot.len()].copy_from_slice(slot);
    if let Some(rows) = slot.len().checked_sub(2) {
        dims[rows] /= u64::from(parts.max(1));
    }
    dims
}

/// The operands of a TMA load or store.
pub(crate) struct TmaOperands<'k> {
    pub tensor: u16,
    pub coords: &'k [Code],
    pub slot: &'k SlotRef,
    /// Transaction bytes of the box (its full extent, zero fill included).
    pub bytes: u64,
    /// The box is one of this many parts of the slot's rows (1: the whole slot).
    pub parts: u32,
}

impl Shard<'_> {
    /// The global-memory spans (absolute addresses) of the TMA box of buffer `buf` at `coords`.
    fn tma_spans(
        &self,
        w: u32,
        op: &TmaOperands,
    ) -> Result<impl Iterator<Item = (u64, u64)> + Clone, Fault> {
        let t = &self.k.tensors[op.tensor as usize];
        let mut c = [0i64; MAX_RANK];
        for (c, code) in c.iter_mut().zip(op.coords) {
            *c = self.eval(w, code)?;
        }
        let base = self.tensor_base[op.tensor as usize];
        let boxdims = part_box(&self.k.buffers[op.slot.buf as usize].shape, op.parts);
        let rank = op.coords.len();
        Ok(
            box_spans(&t.shape, t.dtype.bytes(), &c[..rank], &boxdims[..rank])
                .map(move |(off, len)| (base + off, len)),
        )
    }

    pub(crate) fn issue_tma_load(
        &mut self,
        w: u32,
        op: TmaOperands,
        bar: &BarRef,
        multicast: Option<&Code>,
    ) -> Result<(), Fault> {
        let now = self.now;
        let slot = self.slot_index(w, op.slot)?;
        let b = self.bar_index(w, bar)?;
        let spans = self.tma_spans(w, &op)?;
        let (sm, cta) = (self.warps[w as usize].sm, self.warps[w as usize].cta);
        let (dests, first) = match multicast {
            Some(mask) => self.cluster_mask(w, mask, "multicast", "a multicast TMA load")?,
            None => (0, cta),
        };
        for dest in self.load_ctas(cta, dests, first) {
            let slot = self.names.same_slot(slot, dest);
            self.emit(Hook::TmaLoadIssued {
                warp: w,
                cta: dest,
                slot,
                bar: b,
            })?;
            self.ctas[dest as usize].tma_in_flight += 1;
        }
        // An issuer outside its mask stays too: its warp names what goes wrong at a landing.
        if outside(cta, dests, first) {
            self.ctas[cta as usize].tma_in_flight += 1;
        }
        self.warps[w as usize].after_tma_issue = true;
        let (start, issued) = self.sms[sm as usize]
            .tma_issue
            .book(now, self.p.tma.issue_cycles);
        self.hold_tma_issuer(w, issued);
        let at = start + self.p.tma.extra_latency;
        let buf = &self.k.buffers[op.slot.buf as usize];
        let i = self.tma_loads.insert(TmaLoad {
            sm,
            cta,
            dests,
            first,
            bar: b,
            last_chunk: 0,
            latest: 0,
            fill_fp_per_byte: fp_per_byte(fill_bytes_per_cycle(&self.p.tma, buf)),
            bytes: op.bytes,
            slot,
            warp: w,
            pc: self.warps[w as usize].pc,
        });
        // Group the box's spans into chunks that stream back independently, each chunk's
        // requests one continuation (`crate::engine::crossing`): a chunk is queued when it is
        // back; the last one completes the box, so it is queued at the latest chunk's time.
        let chunk_bytes = self.p.tma.chunk_bytes;
        let (mut from, mut size) = (self.next_request(), 0u64);
        let mut last_chunk = None;
        for (addr, len) in spans {
            let mut off = 0;
            while off < len {
                let piece = (len - off).min(chunk_bytes - size);
                self.request(sm, at, addr + off, piece, false);
                size += piece;
                off += piece;
                if size == chunk_bytes {
                    self.then(from, Then::TmaChunk { load: i, at });
                    last_chunk = Some(size);
                    (from, size) = (self.next_request(), 0);
                }
            }
        }
        if size > 0 {
            self.then(from, Then::TmaChunk { load: i, at });
            last_chunk = Some(size);
        }
        match last_chunk {
            Some(bytes) => {
                let load = self.tma_loads.get_mut(i);
                (load.last_chunk, load.latest) = (bytes, at);
                let last = self.batch.conts.last_mut().expect("a chunk was queued");
                last.then = Then::TmaLast {
                    load: i,
                    at,
                    issued: now,
                };
            }
            // Entirely outside the tensor: zero fill, no traffic.
            None => {
                self.q.push(at, Event::TxComplete(i));
                self.tma_last_back(i, at, now);
            }
        }
        Ok(())
    }

    /// Every chunk of load `i` (issued at `issued`) is back, the last at `last`: its last
    /// chunk streams in then.
    pub(crate) fn tma_last_back(&mut self, i: u32, last: u64, issued: u64) {
        let load = self.tma_loads.get(i);
        let last = last.max(load.latest);
        if load.last_chunk > 0 {
            self.q.push(last, Event::TmaLastChunk(i));
        }
        self.book_horizon(last);
        // Cycles with at least one load in flight (loads are issued, and answered, in time
        // order).
        let unit = &mut self.sms[load.sm as usize];
        unit.tma_busy += last.saturating_sub(issued.max(unit.tma_covered_until));
        unit.tma_covered_until = unit.tma_covered_until.max(last);
    }

    /// The issuing thread moves on once its own instruction sequence is done
    /// (`tma.thread_cycles`, the compiler's stall counts: `wait`) and the unit has taken the
    /// box (`issued`: backpressure from the other warps' boxes, `mio_throttle`).
    fn hold_tma_issuer(&mut self, w: u32, issued: u64) {
        let own = self.now + self.p.tma.thread_cycles;
        let warp = &mut self.warps[w as usize];
        warp.sync_until = warp.sync_until.max(own).max(issued);
        warp.sync_state = if issued > own {
            State::MioThrottle
        } else {
            State::Wait
        };
    }

    pub(crate) fn issue_tma_store(&mut self, w: u32, op: TmaOperands) -> Result<(), Fault> {
        let slot = self.slot_index(w, op.slot)?;
        self.emit(Hook::TmaStoreIssued { warp: w, slot })?;
        let spans = self.tma_spans(w, &op)?;
        let sm = self.warps[w as usize].sm;
        let (start, issued) = self.sms[sm as usize]
            .tma_issue
            .book(self.now, self.p.tma.issue_cycles);
        self.hold_tma_issuer(w, issued);
        let unit = &mut self.sms[sm as usize];
        let (_, read_end) = unit
            .port
            .book(start, op.bytes.div_ceil(self.p.smem.bytes_per_cycle()));
        let traffic: u64 = spans.clone().map(|s| s.1).sum();
        // The unit moves store data at its own rate, below the SM's port to L2.
        let drained = unit.tma_store.book(read_end, traffic);
        let sent = self.ports[sm as usize].book(read_end, traffic).max(drained);
        let from = self.next_request();
        for (addr, len) in spans {
            self.request(sm, sent, addr, len, true);
        }
        self.book_horizon(sent);
        if self.next_request() == from {
            self.warps[w as usize].stores.add(sent);
        } else {
            let group = self.warps[w as usize].stores.add_pending();
            self.then(
                from,
                Then::TmaStore {
                    warp: w,
                    group,
                    sent,
                },
            );
        }
        Ok(())
    }

    /// A chunk of load `i` is back from L2: it streams into shared memory through the SM's
    /// fill path.
    pub(crate) fn on_tma_chunk(&mut self, i: u32) {
        let end = self.fill(i, self.p.tma.chunk_bytes);
        self.book_horizon(end);
    }

    /// A load's last chunk is back from L2: once it is through the fill path, the box is in.
    pub(crate) fn on_tma_last_chunk(&mut self, i: u32) {
        let end = self.fill(i, self.tma_loads.get(i).last_chunk);
        self.book_horizon(end);
        self.q.push(end, Event::TxComplete(i));
    }

    /// Books `bytes` of load `i` on its SM's fill path at the box's rate, or on the fill path
    /// of every SM it multicasts to; returns when they are in everywhere.
    fn fill(&mut self, i: u32, bytes: u64) -> u64 {
        let load = self.tma_loads.get(i);
        if load.dests == 0 {
            return self.sms[load.sm as usize].tma_fill.book_at(
                self.now,
                bytes,
                load.fill_fp_per_byte,
            );
        }
        let at = self.now + self.p.cluster.multicast_latency;
        let mut end = at;
        for dest in self.load_ctas(load.cta, load.dests, load.first) {
            let sm = self.ctas[dest as usize].sm as usize;
            end = end.max(
                self.sms[sm]
                    .tma_fill
                    .book_at(at, bytes, load.fill_fp_per_byte),
            );
        }
        end
    }

    /// The CTAs a load lands in: `cta` alone, or the ranks of `dests` from `first`.
    fn load_ctas(&self, cta: u32, dests: u16, first: u32) -> impl Iterator<Item = u32> {
        let ranks = if dests == 0 { 1 } else { u32::from(dests) };
        let base = if dests == 0 { cta } else { first };
        (0..16u32)
            .filter(move |r| ranks & (1 << r) != 0)
            .map(move |r| base + r)
    }

    /// The whole box is in shared memory: its slot is filled and its bytes complete-tx on the
    /// mbarrier; a finding there is the issuing warp's.
    pub(crate) fn on_tx_complete(&mut self, i: u32) {
        let TmaLoad {
            cta: issuer,
            dests,
            first,
            bar,
            bytes,
            slot,
            warp,
            pc,
            ..
        } = self.tma_loads.remove(i);
        self.last_progress = self.now;
        for cta in self.load_ctas(issuer, dests, first) {
            let slot = self.names.same_slot(slot, cta);
            self.record(Hook::TmaLoadLanded {
                cta,
                slot,
                bar,
                bytes,
            });
            if let Err(finding) = self.complete_tx(cta, bar, bytes) {
                self.hazard_at((warp, pc), cta, finding);
            }
            self.ctas[cta as usize].tma_in_flight -= 1;
        }
        if outside(issuer, dests, first) {
            self.ctas[issuer as usize].tma_in_flight -= 1;
        }
        // The issuer last: its warp names a finding at another CTA's landing.
        for cta in self.load_ctas(issuer, dests, first) {
            if cta != issuer {
                self.drop_cta(cta);
            }
        }
        self.drop_cta(issuer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::preset::Preset;
    use isa::scenario::DType;

    #[test]
    fn the_fill_rule_follows_the_swizzle_and_the_row_width() {
        let t = Preset::builtin("h200-sxm").unwrap().tma;
        let buf = |cols: u64, swizzle: u32| BufferInfo {
            name: "s".into(),
            slots: 1,
            dtype: DType::BF16,
            shape: vec![128, cols],
            slot_bytes: 256 * cols,
            base: 0,
            swizzle,
        };
        // (bf16 a row, swizzle) -> B/cycle: the H200's tma_bw_shape rows.
        for (cols, swizzle, rate) in [
            (64, 0, 95.0),
            (64, 128, 108.0),
            (32, 0, 64.0),
            (32, 64, 64.0),
            (16, 32, 32.0),
            // Two columns of swizzled 128-byte rows; unswizzled 256-byte rows.
            (128, 128, 108.0),
            (128, 0, 95.0),
        ] {
            assert_eq!(
                fill_bytes_per_cycle(&t, &buf(cols, swizzle)),
                rate,
                "{cols} {swizzle}"
            );
        }
        assert_eq!(fill_peak_bytes_per_cycle(&t), 108.0);
        // Unmeasured parts default to the plain rate and no row limit.
        let plain = Tma {
            fill_swizzled_bytes_per_cycle: 0.0,
            fill_rows_per_cycle: 0.0,
            ..t
        };
        assert_eq!(fill_bytes_per_cycle(&plain, &buf(16, 32)), 95.0);
        assert_eq!(fill_bytes_per_cycle(&plain, &buf(64, 128)), 95.0);
    }

    #[test]
    fn a_2d_box_is_one_span_per_row() {
        // A 128 x 64 bf16 box at (256, 128) of a 4096 x 4096 tensor: 128 rows of 128 bytes.
        let spans: Vec<_> = box_spans(&[4096, 4096], 2, &[256, 128], &[128, 64]).collect();
        assert_eq!(spans.len(), 128);
        assert_eq!(spans[0], ((256 * 4096 + 128) * 2, 128));
        assert_eq!(spans[1].0 - spans[0].0, 4096 * 2);
        assert_eq!(spans.iter().map(|s| s.1).sum::<u64>(), 128 * 64 * 2);
    }

    #[test]
    fn out_of_bounds_parts_are_clipped() {
        // Box 4 x 8 at (-1, 4) of a 3 x 10 tensor: rows -1 and 3 are outside, columns 10..12 too.
        let spans: Vec<_> = box_spans(&[3, 10], 4, &[-1, 4], &[4, 8]).collect();
        assert_eq!(
            spans,
            vec![(4 * 4, 24), ((10 + 4) * 4, 24), ((20 + 4) * 4, 24)]
        );
        assert_eq!(box_spans(&[3, 10], 4, &[0, 10], &[2, 2]).next(), None);
    }

    #[test]
    fn extreme_coordinates_do_not_overflow() {
        assert_eq!(
            box_spans(&[4, 4], 2, &[i64::MAX, i64::MAX], &[2, 2]).next(),
            None
        );
        assert_eq!(
            box_spans(&[4, 4], 2, &[i64::MIN, i64::MIN], &[2, 2]).next(),
            None
        );
    }

    #[test]
    fn rows_outside_the_tensor_in_any_dimension_are_skipped() {
        // Every row of a 3 x 3 x 4 box at (-1, 2, 3) of a 2 x 4 x 5 tensor, row-major, against
        // the rows the box covers inside the tensor.
        let mut expect = Vec::new();
        for i in -1i64..2 {
            for j in 2i64..5 {
                if (0..2).contains(&i) && (0..4).contains(&j) {
                    expect.push((((i * 4 + j) * 5 + 3) as u64 * 2, 4));
                }
            }
        }
        let spans: Vec<_> = box_spans(&[2, 4, 5], 2, &[-1, 2, 3], &[3, 3, 4]).collect();
        assert_eq!(spans, expect);
    }

    #[test]
    fn rank_one_and_rank_three() {
        assert_eq!(
            box_spans(&[100], 2, &[10], &[16]).collect::<Vec<_>>(),
            [(20, 32)]
        );
        let spans: Vec<_> = box_spans(&[2, 4, 8], 1, &[0, 1, 0], &[2, 2, 8]).collect();
        assert_eq!(spans, vec![(8, 8), (16, 8), (40, 8), (48, 8)]);
    }
}
