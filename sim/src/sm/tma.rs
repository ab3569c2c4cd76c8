//! Where a TMA box lives in global memory: the contiguous spans of a row-major tensor that a box
//! at given element coordinates covers. Elements outside the tensor are zero-filled by the TMA
//! unit (they still count as transaction bytes) and cause no memory traffic, so spans are clipped
//! to the tensor.
//!
//! `cp.async.bulk.tensor` loads and stores are issued here. A load books the SM's TMA issue
//! unit, waits `tma.extra_latency`, reads its spans from the memory system in chunks of
//! `tma.chunk_bytes`, and each chunk, back from L2 (`TmaChunk`), passes the SM's fill path into
//! shared memory (`tma.fill_bytes_per_cycle`); the last chunk's arrival is the box's
//! complete-tx on the mbarrier (`TxComplete`). Booking the fill path at the chunk's event keeps
//! its bookings in time order. TMA writes do not take the shared-memory port that wgmma
//! operand reads and ld/st.shared use: on the H200 they run at full rate beside SS wgmma
//! saturating that port (calibration/data/h200-smem_port.csv). A store reads the slot through
//! the shared-memory port (unmeasured), then writes its spans.

use crate::engine::error::Fault;
use crate::engine::event::{Chunk, Event, TmaDone};
use crate::engine::hooks::Hook;
use crate::engine::schedule::Outcome;
use crate::engine::Engine;
use crate::observe::warp_state::State;
use isa::expr::Code;
use isa::program::{BarRef, SlotRef};

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

/// The operands of a TMA load or store.
pub(crate) struct TmaOperands<'k> {
    pub tensor: u16,
    pub coords: &'k [Code],
    pub slot: &'k SlotRef,
    /// Transaction bytes of the box (its full extent, zero fill included).
    pub bytes: u64,
}

impl Engine<'_> {
    /// Both directions wait for the SM's TMA issue unit.
    pub(crate) fn tma_outcome(&self, w: u32) -> Outcome {
        let free = self.sms[self.warps[w as usize].sm as usize]
            .tma_issue
            .next_free();
        if free > self.now {
            Outcome::StallUntil(State::MioThrottle, free)
        } else {
            Outcome::Ready
        }
    }

    /// The global-memory spans (absolute addresses) of the TMA box of buffer `buf` at `coords`.
    fn tma_spans(&self, w: u32, op: &TmaOperands) -> Result<Vec<(u64, u64)>, Fault> {
        let t = &self.k.tensors[op.tensor as usize];
        let c = op
            .coords
            .iter()
            .map(|c| self.eval(w, c))
            .collect::<Result<Vec<i64>, Fault>>()?;
        let base = self.tensor_base[op.tensor as usize];
        let boxdims = &self.k.buffers[op.slot.buf as usize].shape;
        Ok(box_spans(&t.shape, t.dtype.bytes(), &c, boxdims)
            .into_iter()
            .map(|(off, len)| (base + off, len))
            .collect())
    }

    pub(crate) fn issue_tma_load(
        &mut self,
        w: u32,
        op: TmaOperands,
        bar: &BarRef,
    ) -> Result<(), Fault> {
        let now = self.now;
        self.slot_base(w, op.slot)?;
        let b = self.bar_index(w, bar)?;
        let spans = self.tma_spans(w, &op)?;
        let (sm, cta) = (self.warps[w as usize].sm, self.warps[w as usize].cta);
        let slot = self.slot_index(w, op.slot)?;
        self.emit(Hook::TmaLoadIssued {
            warp: w,
            slot,
            bar: b,
        })?;
        self.warps[w as usize].after_tma_issue = true;
        let (start, issued) = self.sms[sm as usize]
            .tma_issue
            .book(now, self.p.tma.issue_cycles);
        // The issuing thread moves on once the unit has taken the box.
        let warp = &mut self.warps[w as usize];
        warp.sync_until = warp.sync_until.max(issued);
        warp.sync_state = State::MioThrottle;
        let at = start + self.p.tma.extra_latency;
        // Group the box's spans into chunks that stream back independently.
        let chunk_bytes = self.p.tma.chunk_bytes;
        let mut chunks: Vec<(u64, u64)> = Vec::new();
        let (mut ready, mut size) = (at, 0u64);
        for (addr, len) in spans {
            let mut off = 0;
            while off < len {
                let piece = (len - off).min(chunk_bytes - size);
                ready = ready.max(self.mem.read(sm, at, addr + off, piece, &mut self.rng));
                size += piece;
                off += piece;
                if size == chunk_bytes {
                    chunks.push((ready, size));
                    (ready, size) = (at, 0);
                }
            }
        }
        if size > 0 {
            chunks.push((ready, size));
        }
        let last = chunks.iter().map(|c| c.0).max().unwrap_or(at);
        self.ctas[cta as usize].tma_in_flight += 1;
        let done = TmaDone {
            bytes: op.bytes,
            slot,
            warp: w,
            pc: self.warps[w as usize].pc,
        };
        match chunks.len() {
            // Entirely outside the tensor: zero fill, no traffic.
            0 => self.q.push(at, Event::TxComplete { cta, bar: b, done }),
            n => {
                for (i, (t, size)) in chunks.into_iter().enumerate() {
                    let ev = Event::TmaChunk(Chunk {
                        sm,
                        cta,
                        bar: b,
                        bytes: size,
                        complete: (i + 1 == n).then_some(done),
                    });
                    // The last chunk completes the box, so it must arrive last.
                    self.q.push(if i + 1 == n { last } else { t }, ev);
                }
            }
        }
        self.book_horizon(last);
        // Cycles with at least one load in flight (loads are issued in time order).
        let unit = &mut self.sms[sm as usize];
        unit.tma_busy += last.saturating_sub(now.max(unit.tma_covered_until));
        unit.tma_covered_until = unit.tma_covered_until.max(last);
        Ok(())
    }

    pub(crate) fn issue_tma_store(&mut self, w: u32, op: TmaOperands) -> Result<(), Fault> {
        self.slot_base(w, op.slot)?;
        let spans = self.tma_spans(w, &op)?;
        let sm = self.warps[w as usize].sm;
        let unit = &mut self.sms[sm as usize];
        let (start, _) = unit.tma_issue.book(self.now, self.p.tma.issue_cycles);
        let (_, read_end) = unit
            .port
            .book(start, op.bytes.div_ceil(self.p.smem.bytes_per_cycle()));
        let traffic: u64 = spans.iter().map(|s| s.1).sum();
        let sent = self.mem.port(sm, read_end, traffic);
        let mut done = sent;
        for (addr, len) in spans {
            done = done.max(self.mem.write(sm, sent, addr, len, &mut self.rng));
        }
        self.book_horizon(done);
        self.warps[w as usize].stores.add(done);
        Ok(())
    }

    /// A chunk is back from L2: it streams into shared memory through the SM's fill path; the
    /// last chunk's arrival completes the box.
    pub(crate) fn on_tma_chunk(&mut self, c: Chunk) {
        let end = self.sms[c.sm as usize].tma_fill.book(self.now, c.bytes);
        self.book_horizon(end);
        if let Some(done) = c.complete {
            self.q.push(
                end,
                Event::TxComplete {
                    cta: c.cta,
                    bar: c.bar,
                    done,
                },
            );
        }
    }

    /// The whole box is in shared memory: its slot is filled and its bytes complete-tx on the
    /// mbarrier; a finding there is the issuing warp's.
    pub(crate) fn on_tx_complete(&mut self, cta: u32, bar: u32, done: TmaDone) {
        self.record(Hook::TmaLoadLanded {
            cta,
            slot: done.slot,
            bar,
            bytes: done.bytes,
        });
        if let Err(finding) = self.complete_tx(cta, bar, done.bytes) {
            self.hazard_at((done.warp, done.pc), cta, finding);
        }
        self.ctas[cta as usize].tma_in_flight -= 1;
        self.last_progress = self.now;
        self.drop_cta(cta);
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
