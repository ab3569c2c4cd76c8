//! Per-instruction demand: what one warp-instruction asks of each unit, with the engine's own
//! cost formulas (pipe cycles, HGMMA math and operand feed, shared-memory wavefronts, TMA box
//! spans, coalesced sectors), and the L2 lines it touches.

use super::demand::Demand;
use super::error::WalkError;
use super::lines::Touch;
use super::walk::{Walk, WarpWalk};
use crate::engine::server::fp_per_byte;
use crate::sm::local::spilled_share;
use crate::sm::pipes::MAX_MACRO_COUNT;
use crate::sm::pipes::{pipe_cycles, pipe_index};
use crate::sm::tensor_core::Hgmma;
use crate::{memory::coalesce, sm::smem, sm::tma};
use isa::expr::Code;
use isa::program::{
    lane_addresses, CounterRef, Inst, LaneAddrs, MixPipe, Pipe, SlotRef, MIX_PIPES,
};

/// Which way a TMA box moves.
#[derive(Clone, Copy)]
enum TmaDir {
    Load { parts: u32 },
    Store,
}

impl Walk<'_> {
    /// Adds one instruction's demand; returns the issue slots it takes (0: skipped, as the
    /// engine skips a compute instruction with a count of zero).
    pub(super) fn inst(
        &mut self,
        inst: &Inst,
        w: &mut WarpWalk,
        part: usize,
        d: &mut Demand,
    ) -> Result<u64, WalkError> {
        let p = self.p;
        let port = p.smem.bytes_per_cycle();
        match inst {
            Inst::Compute {
                pipe, count, acc, ..
            } => {
                let n = w.eval(count)?;
                if n <= 0 {
                    return Ok(0);
                }
                if n > MAX_MACRO_COUNT {
                    return Err(WalkError::CountTooLarge {
                        pipe: pipe.name(),
                        count: n,
                    });
                }
                let cycles = pipe_cycles(p, *pipe);
                d.pipes[part][pipe_index(*pipe)] += n as u64 * cycles;
                // Each warp-instruction on a spilled value reloads it and stores it back: a
                // local load and a local store, an issue slot and an L1 access each.
                let (spilled, live) = w.spill;
                let touched = if spilled > 0 && acc.is_none() && *pipe != Pipe::Mma {
                    let (count, carry) = spilled_share(w.spill_carry, n as u64, spilled, live);
                    w.spill_carry = carry;
                    count
                } else {
                    0
                };
                d.l1 += 2 * touched * p.l1.access_cycles;
                Ok(n as u64 + 2 * touched)
            }
            // The block's warp-instructions touch no spilled value (the accumulators' or
            // registers' of a compiled block the compiler keeps resident).
            Inst::Mix { counts, .. } => {
                let mut slots = 0;
                for (count, pipe) in counts.iter().zip(MIX_PIPES) {
                    let n = w.eval(count)?;
                    if n > MAX_MACRO_COUNT {
                        return Err(WalkError::CountTooLarge {
                            pipe: pipe.name(),
                            count: n,
                        });
                    }
                    let n = n.max(0) as u64;
                    if let MixPipe::Pipe(pipe) = pipe {
                        d.pipes[part][pipe_index(pipe)] += n * pipe_cycles(p, pipe);
                    }
                    slots += n;
                }
                Ok(slots)
            }
            Inst::Wgmma {
                n, k, ksteps, a, ..
            } => {
                let h = Hgmma {
                    warpgroup: 0,
                    n: *n,
                    k: *k,
                    a_smem: a.is_some(),
                };
                let ks = *ksteps as u64;
                w.hgmma.0 += ks * h.pipe_cycles(p.tensor.flops_per_cycle, p.tensor.rs_min_cycles);
                w.hgmma.1 += ks * h.smem_bytes().div_ceil(port);
                Ok(ks)
            }
            Inst::TmaLoad {
                tensor,
                coords,
                dst,
                parts,
                ..
            } => {
                // The box streams into shared memory by the fill path, not the port. A
                // multicast box reads L2 once and fills every destination; only the issuing
                // SM's fill is counted here (a lower bound for the others).
                let load = TmaDir::Load { parts: *parts };
                let bytes = self.tma_box(w, d, (*tensor, coords), dst, load)?;
                let buf = &self.k.buffers[dst.buf as usize];
                d.fill_bytes += bytes;
                // Saturating: a box of up to 2^48 bytes at sub-cycle resolution may not fit.
                let time =
                    bytes.saturating_mul(fp_per_byte(tma::fill_bytes_per_cycle(&self.p.tma, buf)));
                d.fill_time = d.fill_time.saturating_add(time);
                Ok(1)
            }
            Inst::TmaStore {
                tensor,
                coords,
                src,
                bytes,
            } => {
                d.store_bytes += self.tma_box(w, d, (*tensor, coords), src, TmaDir::Store)?;
                d.smem += bytes.div_ceil(port);
                Ok(1)
            }
            Inst::CpAsync {
                tensor,
                src,
                dst,
                addr,
                width,
            } => {
                let from = self.tensor_lanes(w, *tensor, src, *width)?;
                let to = self.slot_lanes(w, dst, addr, *width)?;
                self.sectors(d, &from, *width, false);
                d.smem += self.wavefronts(&to, *width);
                Ok(1)
            }
            Inst::Global {
                store,
                tensor,
                addr,
                width,
                l1,
                ..
            } => {
                let addrs = self.tensor_lanes(w, *tensor, addr, *width)?;
                if *l1 && self.l1_read.is_some() {
                    self.cached_sectors(d, &addrs, *width);
                } else {
                    self.sectors(d, &addrs, *width, *store);
                }
                Ok(1)
            }
            Inst::Shared {
                slot: s,
                addr,
                width,
                ..
            } => {
                let addrs = self.slot_lanes(w, s, addr, *width)?;
                d.smem += self.wavefronts(&addrs, *width);
                Ok(1)
            }
            Inst::AtomicAdd { counter, add, slot } => {
                let c = self.counter(w, counter)?;
                let init = self
                    .k
                    .counters
                    .get(c)
                    .map(|x| x.1)
                    .ok_or(WalkError::NoCounter(c))?;
                let add = w.eval(add)?;
                let kth = w.atomics[c];
                w.atomics[c] += 1;
                // Round-robin order: the k-th atomic of CTA c is the (c + k·CTAs)-th overall.
                let value = (kth as i64)
                    .checked_mul(self.k.grid as i64)
                    .and_then(|v| v.checked_add(w.cta as i64))
                    .and_then(|order| order.checked_mul(add))
                    .and_then(|v| v.checked_add(init))
                    .ok_or(WalkError::CounterOverflow)?;
                w.set(*slot, value)?;
                if kth >= self.charged[c] {
                    self.charged[c] = kth + 1;
                    let addr = self.counter_base + c as u64 * 128;
                    self.access(d, addr, 4, true);
                }
                Ok(1)
            }
            // Only the poll that sees the value: the spinning before it is not demand.
            Inst::WaitCounter { counter, .. } => {
                let c = self.counter(w, counter)?;
                let addr = self.counter_base + c as u64 * 128;
                self.access(d, addr, 4, false);
                Ok(1)
            }
            Inst::TmaStoreCommit
            | Inst::Fence
            | Inst::FenceProxyAsync
            | Inst::TmaStoreWait { .. }
            | Inst::Arrive { .. }
            | Inst::ArriveExpectTx { .. }
            | Inst::ExpectTx { .. }
            | Inst::Wait { .. }
            | Inst::WgmmaFence
            | Inst::WgmmaCommit
            | Inst::WgmmaWait { .. }
            | Inst::BarSync { .. }
            | Inst::BarArrive { .. }
            | Inst::ClusterArrive { .. }
            | Inst::ClusterWait
            | Inst::SetMaxNReg { .. }
            | Inst::CpAsyncCommit
            | Inst::CpAsyncWait { .. }
            | Inst::RegRead { .. } => Ok(1),
        }
    }

    /// A TMA box between `tensor` and `slot`: its issue cycles, and its spans through the SM's
    /// port and L2 (written to the tensor by a store; a load's box is one of `parts` parts of
    /// the slot's rows). Returns the bytes it moves.
    fn tma_box(
        &mut self,
        w: &WarpWalk,
        d: &mut Demand,
        (tensor, coords): (u16, &[Code]),
        slot: &SlotRef,
        dir: TmaDir,
    ) -> Result<u64, WalkError> {
        let (parts, store) = match dir {
            TmaDir::Load { parts } => (parts, false),
            TmaDir::Store => (1, true),
        };
        self.slot_base(w, slot)?;
        let spans = self.tma_spans(w, tensor, coords, slot.buf, parts)?;
        self.spend(spans.len() as u64)?;
        let traffic: u64 = spans.iter().map(|s| s.1).sum();
        for (addr, len) in spans {
            self.access(d, addr, len, store);
        }
        if store {
            d.port_bytes += traffic;
        }
        d.tma += self.p.tma.issue_cycles;
        Ok(traffic)
    }

    /// One L2 request of `bytes` at `addr`, in the units a fill moves (`memory.hbm.fetch_bytes`:
    /// the memory system fills the touched sectors of a line in such groups). A write fills
    /// only the sectors it covers in part: one that covers its sectors whole needs no fill,
    /// even when it leaves the rest of its unit untouched.
    fn access(&mut self, d: &mut Demand, addr: u64, bytes: u64, write: bool) {
        d.l2_bytes += bytes;
        let unit = self.p.memory.hbm.fetch_bytes;
        let sector = self.p.memory.sector_bytes;
        let first = addr / unit;
        let last = (addr + bytes.max(1) - 1) / unit;
        for l in first..=last {
            let lo = addr.max(l * unit);
            let hi = (addr + bytes).min((l + 1) * unit);
            // A warm tensor's lines are in L2 from the start (counting them present even past
            // the L2's capacity keeps the bound a lower bound).
            let warm = self.warm.iter().any(|r| r.contains(&lo));
            let touch = if !write {
                if warm {
                    continue;
                }
                Touch::Read
            } else if warm || (lo.is_multiple_of(sector) && hi.is_multiple_of(sector)) {
                Touch::WholeWrite
            } else {
                Touch::PartialWrite
            };
            self.lines.mark(l, touch);
        }
    }

    /// A warp's global access: one request per line it touches (the engine's split), the L1's
    /// tag stage for those lines, all through the SM's port.
    fn sectors(&mut self, d: &mut Demand, addrs: &LaneAddrs, width: u32, write: bool) {
        let sector = self.p.memory.sector_bytes;
        let sectors = coalesce::sectors(addrs, width, sector);
        d.port_bytes += sectors.len() as u64 * sector;
        let requests = coalesce::line_requests(&sectors, sector, self.p.memory.l2.line_bytes);
        let l1 = &self.p.l1;
        d.l1 += (requests.len() as u64 * l1.line_cycles).max(l1.access_cycles);
        for (a, n) in requests {
            self.access(d, a, n, write);
        }
    }

    /// A warp's load through the L1 data cache: the tag stage as if every line hit, and of its
    /// sectors only those no load through an L1 read before, to L2 and through the SM's port:
    /// each must reach some SM's L1 once (which SM's, and what is read again after an eviction,
    /// a walk without timing cannot tell; the engine's traffic is at least this).
    fn cached_sectors(&mut self, d: &mut Demand, addrs: &LaneAddrs, width: u32) {
        let sector = self.p.memory.sector_bytes;
        let sectors = coalesce::sectors(addrs, width, sector);
        let lines = coalesce::line_sectors(&sectors, sector, self.p.memory.l2.line_bytes);
        let l1 = &self.p.l1;
        d.l1 += (lines.len() as u64 * l1.line_cycles).max(l1.hit_cycles);
        for s in sectors {
            if self.l1_read.as_mut().is_some_and(|seen| seen.insert(s)) {
                d.port_bytes += sector;
                self.access(d, s * sector, sector, false);
            }
        }
    }

    /// (base address, bytes) of tensor `t`.
    fn tensor(&self, t: u16) -> Result<(u64, u64), WalkError> {
        match (
            self.tensor_base.get(t as usize),
            self.k.tensors.get(t as usize),
        ) {
            (Some(&base), Some(info)) => Ok((base, info.bytes)),
            _ => Err(WalkError::NoTensor(t)),
        }
    }

    fn slot_base(&self, w: &WarpWalk, s: &SlotRef) -> Result<u64, WalkError> {
        let b = self
            .k
            .buffers
            .get(s.buf as usize)
            .ok_or(WalkError::NoBuffer(s.buf))?;
        Ok(b.slot_offset(w.eval(&s.slot)?)?)
    }

    fn tma_spans(
        &self,
        w: &WarpWalk,
        tensor: u16,
        coords: &[Code],
        buf: u16,
        parts: u32,
    ) -> Result<Vec<(u64, u64)>, WalkError> {
        let (base, _) = self.tensor(tensor)?;
        let t = &self.k.tensors[tensor as usize];
        let c = coords
            .iter()
            .map(|c| w.eval(c))
            .collect::<Result<Vec<i64>, WalkError>>()?;
        let shape = &self.k.buffers[buf as usize].shape;
        if t.shape.is_empty() || c.len() != t.shape.len() || shape.len() != t.shape.len() {
            return Err(WalkError::TmaRank {
                rank: shape.len(),
                coords: c.len(),
                tensor_rank: t.shape.len(),
            });
        }
        let boxdims = tma::part_box(shape, parts);
        Ok(
            tma::box_spans(&t.shape, t.dtype.bytes(), &c, &boxdims[..c.len()])
                .map(|(off, len)| (base + off, len))
                .collect(),
        )
    }

    /// The lanes' addresses of a per-lane byte offset `addr` into tensor `tensor`.
    fn tensor_lanes(
        &mut self,
        w: &mut WarpWalk,
        tensor: u16,
        addr: &Code,
        width: u32,
    ) -> Result<LaneAddrs, WalkError> {
        let (base, bytes) = self.tensor(tensor)?;
        self.lane_addrs(w, addr, base, bytes, width, "the tensor")
    }

    /// The lanes' shared-memory addresses of a per-lane byte offset `addr` into slot `s`.
    fn slot_lanes(
        &mut self,
        w: &mut WarpWalk,
        s: &SlotRef,
        addr: &Code,
        width: u32,
    ) -> Result<LaneAddrs, WalkError> {
        let base = self.slot_base(w, s)?;
        let limit = self.k.buffers[s.buf as usize].slot_bytes;
        self.lane_addrs(w, addr, base, limit, width, "the slot")
    }

    /// Shared-memory wavefronts of one warp access at `addrs` (bank conflicts).
    fn wavefronts(&self, addrs: &LaneAddrs, width: u32) -> u64 {
        let p = &self.p.smem;
        smem::wavefronts(addrs, width, p.banks, p.bank_bytes) as u64
    }

    /// The active lanes' addresses of a per-lane expression, checked as the engine checks them.
    fn lane_addrs(
        &mut self,
        w: &mut WarpWalk,
        addr: &Code,
        base: u64,
        limit: u64,
        width: u32,
        what: &'static str,
    ) -> Result<LaneAddrs, WalkError> {
        self.spend(32)?;
        let mask = w.lanes.active();
        Ok(lane_addresses(
            &mut w.env, addr, mask, base, limit, width, what,
        )?)
    }
}

impl Walk<'_> {
    /// The flat index of a counter reference's element.
    fn counter(&self, w: &WarpWalk, c: &CounterRef) -> Result<usize, WalkError> {
        let i = w.eval(&c.index)?;
        match usize::try_from(i) {
            Ok(i) if i < c.len as usize => Ok(c.first as usize + i),
            _ => Err(WalkError::CounterIndex(i, c.len)),
        }
    }
}
