//! The load/store path to global memory: ld/st.global, cp.async and atomics on global counters.
//! Lane addresses coalesce into 32-byte sectors and L2-line requests
//! (`crate::memory::coalesce`). Every warp access first holds the SM's L1 tag stage, one
//! line after another (`l1.line_cycles` each, at least `l1.access_cycles`: calibration/
//! l1_rate.cu; at least `l1.hit_cycles` for a plain load whose sectors the L1 data cache holds,
//! `crate::sm::l1`), so an uncoalesced load costs the lines it touches even where its bytes are
//! few; its line requests and its bytes on the SM's port to L2 leave when the stage takes it up.
//! All are booked at issue, for that cycle: behind a backlog, ahead of time (as L2's slices
//! are, `engine::server`). While `l1.queue` accesses wait for the stage, the next global one
//! waits to issue (`lg_throttle`).

use crate::engine::crossing::{Then, PENDING};
use crate::engine::error::Fault;
use crate::engine::schedule::{Outcome, Pending};
use crate::engine::Shard;
use crate::memory::coalesce::{line_requests, line_sectors, sectors};
use crate::observe::warp_state::State;
use crate::sm::l1::{runs, LineLookup};
use crate::sm::smem::wavefronts;
use isa::expr::Code;
use isa::program::{CounterRef, SlotRef};

impl Shard<'_> {
    /// A global access waits for room in the L1's queue (`l1.queue` accesses waiting for the
    /// tag stage); a store first for the registers it writes out.
    pub(crate) fn global_outcome(&mut self, w: u32, store: bool, at: Pending) -> Outcome {
        let now = self.now;
        let queue = self.p.l1.queue as usize;
        let waiting = &mut self.sms[self.warps[w as usize].sm as usize].l1_waiting;
        while waiting.front().is_some_and(|&start| start <= now) {
            waiting.pop_front();
        }
        match at.scoreboard {
            Some(stall) if store => stall,
            // Room once the oldest waiting beyond the queue's depth has started.
            _ if waiting.len() >= queue => {
                Outcome::StallUntil(State::LgThrottle, waiting[waiting.len() - queue])
            }
            _ => Outcome::Ready,
        }
    }

    /// Books a global warp access of `lines` lines, at least `least` cycles, on the L1's tag
    /// stage (it joins the stage's queue until it starts): (start, end).
    fn book_l1_global(&mut self, sm: u32, lines: u64, least: u64) -> (u64, u64) {
        let (start, end) = self.book_l1_at_least(sm, lines, least);
        if start > self.now {
            self.sms[sm as usize].l1_waiting.push_back(start);
        }
        (start, end)
    }

    /// Books a warp access of `lines` 128-byte lines on SM `sm`'s L1 tag stage: (start, end).
    pub(crate) fn book_l1(&mut self, sm: u32, lines: u64) -> (u64, u64) {
        self.book_l1_at_least(sm, lines, self.p.l1.access_cycles)
    }

    fn book_l1_at_least(&mut self, sm: u32, lines: u64, least: u64) -> (u64, u64) {
        let cycles = lines.saturating_mul(self.p.l1.line_cycles).max(least);
        self.sms[sm as usize].l1.book(self.now, cycles)
    }

    /// The 32-byte sectors (indices) a warp's per-lane access of `width` bytes at byte offsets
    /// `addr` of `tensor` touches.
    fn tensor_sectors(
        &mut self,
        w: u32,
        tensor: u16,
        addr: &Code,
        width: u32,
    ) -> Result<Vec<u64>, Fault> {
        let t = &self.k.tensors[tensor as usize];
        let base = self.tensor_base[tensor as usize];
        let addrs = self.lane_addrs(w, addr, base, t.bytes, width, "the tensor")?;
        Ok(sectors(&addrs, width, self.p.memory.sector_bytes))
    }

    /// st.global: the data leaves through the port first, then each line is written to L2.
    /// The L1 is write-through and allocates nothing for a store (`crate::sm::l1`): a line it
    /// holds keeps its sectors, which take the stored bytes.
    pub(crate) fn issue_store(
        &mut self,
        w: u32,
        tensor: u16,
        addr: &Code,
        width: u32,
    ) -> Result<(), Fault> {
        let sector = self.p.memory.sector_bytes;
        let sectors = self.tensor_sectors(w, tensor, addr, width)?;
        let requests = line_requests(&sectors, sector, self.p.memory.l2.line_bytes);
        let sm = self.warps[w as usize].sm;
        let least = self.p.l1.access_cycles;
        let (start, tagged) = self.book_l1_global(sm, requests.len() as u64, least);
        let sent = self.ports[sm as usize].book(start, sectors.len() as u64 * sector);
        let done = tagged.max(sent);
        let from = self.next_request();
        for (a, n) in requests {
            self.request(sm, sent, a, n, true);
        }
        // What is known now counts at once: a run stopped before the answers still covers
        // the port's booking.
        self.book_horizon(done);
        if self.next_request() == from {
            let warp = &mut self.warps[w as usize];
            warp.stores_done = warp.stores_done.max(done);
        } else {
            self.warps[w as usize].stores_pending += 1;
            self.then(from, Then::Store { warp: w, done });
        }
        Ok(())
    }

    /// ld.global: the result is ready when its last line is there. With `l1` (`cache: L1`)
    /// and an L1 data cache on the SM, lines whose sectors it holds are there `l1.hit_latency`
    /// after the tag stage (or when their fill arrives) and only the missing sectors go to L2;
    /// otherwise every line is an L2 request.
    pub(crate) fn issue_load(
        &mut self,
        w: u32,
        tensor: u16,
        addr: &Code,
        width: u32,
        sb: Option<u8>,
        l1: bool,
    ) -> Result<(), Fault> {
        let sectors = self.tensor_sectors(w, tensor, addr, width)?;
        let sm = self.warps[w as usize].sm;
        let from = self.next_request();
        let (done, waits) = if l1 && self.sms[sm as usize].l1_cache.enabled() {
            self.cached_load(sm, &sectors)
        } else {
            (self.uncached_load(sm, &sectors), Vec::new())
        };
        self.book_horizon(done);
        if self.next_request() == from && waits.is_empty() {
            self.warps[w as usize].load_result(sb, done, State::LongScoreboard);
        } else {
            self.warps[w as usize].load_pending(sb);
            let then = Then::Load {
                warp: w,
                sb,
                done,
                waits,
            };
            if self.next_request() == from {
                // It only hit lines still filling: its continuation comes after the fills it
                // waits for, with the batch of the latest.
                self.then_after_fills(then);
            } else {
                self.then(from, then);
            }
        }
        Ok(())
    }

    /// A load of `sectors` from L2: one request per line, all its bytes through the port.
    fn uncached_load(&mut self, sm: u32, sectors: &[u64]) -> u64 {
        let sector = self.p.memory.sector_bytes;
        let requests = line_requests(sectors, sector, self.p.memory.l2.line_bytes);
        let least = self.p.l1.access_cycles;
        let (start, tagged) = self.book_l1_global(sm, requests.len() as u64, least);
        let done = tagged.max(self.ports[sm as usize].book(start, sectors.len() as u64 * sector));
        for (a, n) in requests {
            self.request(sm, start, a, n, false);
        }
        done
    }

    /// A load of `sectors` through the SM's L1 data cache: a load that hits all its lines
    /// holds the tag stage `l1.hit_cycles` at least, one that misses any `l1.access_cycles`;
    /// each run of a line's missing sectors is one L2 request, and only they cross the port.
    /// Returns when the load is done as far as is known now, and the fills still on their way
    /// of the lines it hit.
    fn cached_load(&mut self, sm: u32, sectors: &[u64]) -> (u64, Vec<u32>) {
        let (sector, line_bytes) = (self.p.memory.sector_bytes, self.p.memory.l2.line_bytes);
        let cache = &mut self.sms[sm as usize].l1_cache;
        let found: Vec<(u64, u8, LineLookup)> = line_sectors(sectors, sector, line_bytes)
            .into_iter()
            .map(|(line, touched)| (line, touched, cache.lookup(line, touched)))
            .collect();
        let missing: u64 = found
            .iter()
            .map(|(_, _, l)| u64::from(l.missing.count_ones()))
            .sum();
        let l1 = &self.p.l1;
        let least = if missing == 0 {
            l1.hit_cycles
        } else {
            l1.access_cycles
        };
        let hit_latency = l1.hit_latency;
        let (start, tagged) = self.book_l1_global(sm, found.len() as u64, least);
        let mut done = tagged;
        let mut waits = Vec::new();
        if missing > 0 {
            done = done.max(self.ports[sm as usize].book(start, missing * sector));
        }
        for (line, touched, l) in found {
            if touched & !l.missing != 0 {
                done = done.max(tagged + hit_latency);
                match l.ready.checked_sub(PENDING) {
                    // The line's fill is on its way: the load waits for its answer.
                    Some(fill) => waits.push(fill as u32),
                    None => done = done.max(l.ready),
                }
            }
            if l.missing != 0 {
                let from = self.next_request();
                for (first, count) in runs(l.missing) {
                    let at = line * line_bytes + u64::from(first) * sector;
                    let bytes = u64::from(count) * sector;
                    self.request(sm, start, at, bytes, false);
                }
                let fill = self.fills.open();
                self.sms[sm as usize].l1_cache.filling(&l, fill);
                self.then(
                    from,
                    Then::L1Fill {
                        sm,
                        slot: l.slot,
                        fill,
                        before: l.ready,
                    },
                );
            }
        }
        (done, waits)
    }

    /// cp.async: per lane, `width` bytes from byte `src` of `tensor` to byte `addr` of slot
    /// `dst`; the copy joins the warp's open cp.async group.
    pub(crate) fn issue_cp_async(
        &mut self,
        w: u32,
        tensor: u16,
        src: &Code,
        dst: &SlotRef,
        addr: &Code,
        width: u32,
    ) -> Result<(), Fault> {
        let now = self.now;
        let sectors = self.tensor_sectors(w, tensor, src, width)?;
        let slot = self.slot_base(w, dst)?;
        let limit = self.k.buffers[dst.buf as usize].slot_bytes;
        let to = self.lane_addrs(w, addr, slot, limit, width, "the slot")?;
        let sector = self.p.memory.sector_bytes;
        let sm = self.warps[w as usize].sm;
        let requests = line_requests(&sectors, sector, self.p.memory.l2.line_bytes);
        let least = self.p.l1.access_cycles;
        let (start, tagged) = self.book_l1_global(sm, requests.len() as u64, least);
        let back = tagged.max(self.ports[sm as usize].book(start, sectors.len() as u64 * sector));
        let from = self.next_request();
        for (a, n) in requests {
            self.request(sm, start, a, n, false);
        }
        // The shared-memory write is booked at issue (keeping the port in time order);
        // the copy completes when both the data and the write are through.
        let wf = wavefronts(&to, width, self.p.smem.banks, self.p.smem.bank_bytes);
        let (_, written) = self.sms[sm as usize].port.book(now, wf as u64);
        let done = back.max(written);
        self.book_horizon(done);
        if self.next_request() == from {
            self.warps[w as usize].copies.add(done);
        } else {
            let group = self.warps[w as usize].copies.add_pending();
            self.then(
                from,
                Then::CpAsync {
                    warp: w,
                    group,
                    done,
                },
            );
        }
        Ok(())
    }

    /// `WaitCounter`: ready once the counter holds `value`; until then the warp spins (an
    /// `AtomicAdd` that gets it there wakes it).
    pub(crate) fn wait_counter_outcome(
        &mut self,
        w: u32,
        counter: &CounterRef,
        value: &Code,
    ) -> Result<Outcome, Fault> {
        let c = self.counter_index(w, counter)?;
        let value = self.eval(w, value)?;
        if self.counters[c] >= value {
            return Ok(Outcome::Ready);
        }
        let waiters = &mut self.counter_waiters[c];
        if !waiters.iter().any(|&(x, _)| x == w) {
            waiters.push((w, value));
        }
        Ok(Outcome::Blocked(State::LongScoreboard))
    }

    /// The poll that sees the counter's value: one read of its line.
    pub(crate) fn issue_wait_counter(&mut self, w: u32, counter: &CounterRef) -> Result<(), Fault> {
        let c = self.counter_index(w, counter)?;
        let sm = self.warps[w as usize].sm;
        let addr = self.counter_base + c as u64 * 128;
        let from = self.next_request();
        self.request(sm, self.now, addr, 4, false);
        self.warps[w as usize].sync_pending();
        self.then(from, Then::Poll { warp: w });
        Ok(())
    }

    /// `Fence`: ready once the warp's global stores are acknowledged.
    /// A GPU-scope memory barrier (MEMBAR.ALL.GPU or MEMBAR.SC.GPU with ERRBAR, as a
    /// `fence.acq_rel.gpu`, a `.release.cluster` arrive or a non-relaxed
    /// `barrier.cluster.arrive` compiles to) by warp `w`: it starts once its partition's
    /// previous one has had `barriers.membar_interval`, and completes `barriers.membar_cycles`
    /// after its start; the warp is held until then. Returns that time.
    pub(crate) fn membar(&mut self, w: u32) -> u64 {
        let b = &self.p.barriers;
        let part = &mut self.parts[self.warps[w as usize].partition as usize];
        let start = part.membar_free.max(self.now);
        part.membar_free = start + b.membar_interval;
        let done = start + b.membar_cycles;
        self.warps[w as usize].hold_until(done, State::Membar);
        done
    }

    pub(crate) fn fence_outcome(&self, w: u32) -> Outcome {
        let warp = &self.warps[w as usize];
        match warp.stores_done {
            _ if warp.stores_pending > 0 => Outcome::StallUntil(State::LongScoreboard, PENDING),
            t if t > self.now => Outcome::StallUntil(State::LongScoreboard, t),
            _ => Outcome::Ready,
        }
    }

    /// The k-th `AtomicAdd` of a CTA on a counter is performed once, by the CTA's first warp to
    /// reach it (one L2 round trip on the counter's line); the CTA's other warps get the same
    /// value and time, as when one thread fetches and the CTA shares it. The value lands in
    /// `slot`, and the warp's control flow waits for it.
    pub(crate) fn issue_atomic_add(
        &mut self,
        w: u32,
        counter: &CounterRef,
        add: &Code,
        slot: u16,
    ) -> Result<(), Fault> {
        let c = self.counter_index(w, counter)?;
        let add = self.eval(w, add)?;
        let (sm, cta) = (
            self.warps[w as usize].sm,
            self.warps[w as usize].cta as usize,
        );
        let k = self.warps[w as usize].atomics[c] as usize;
        self.warps[w as usize].atomics[c] += 1;
        let (value, ready) = match self.ctas[cta].atomics[c].get(k) {
            Some(&r) => r,
            None => {
                let addr = self.counter_base + c as u64 * 128;
                let from = self.next_request();
                self.request(sm, self.now, addr, 4, true);
                let old = self.counters[c];
                let new = old.checked_add(add).ok_or(Fault::CounterOverflow)?;
                self.counters[c] = new;
                if add != 0 {
                    self.last_progress = self.now;
                }
                // A spinning warp's next poll sees the value: it reaches the L2 halfway
                // through the atomic's round trip, and a poll then waits half a round trip on
                // average for the spinner to issue it. The waiters it releases wake then,
                // once its round trip is answered.
                let mut waiters = std::mem::take(&mut self.counter_waiters[c]);
                let mut woken = Vec::new();
                waiters.retain(|&(waiter, value)| {
                    let wakes = new >= value;
                    if wakes {
                        woken.push(waiter);
                    }
                    !wakes
                });
                self.counter_waiters[c] = waiters;
                self.ctas[cta].atomics[c].push((old, PENDING));
                self.then(
                    from,
                    Then::Atomic {
                        cta: cta as u32,
                        counter: c,
                        k,
                        issued: self.now,
                        woken,
                    },
                );
                (old, PENDING)
            }
        };
        let warp = &mut self.warps[w as usize];
        warp.env[slot as usize] = value;
        if ready == PENDING {
            warp.sync_pending();
            self.atomic_waiters.push((cta as u32, c, k, w));
        } else {
            warp.hold_until(ready, State::LongScoreboard);
        }
        Ok(())
    }
}
