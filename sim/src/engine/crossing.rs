//! What crosses from the SMs to the memory system below them (the L2 and HBM, which all SMs
//! share), and back.
//!
//! An SM's request to the L2 is not booked when the SM makes it: it joins its shard's batch for
//! the window ([`MemReq`]), with a continuation ([`Then`]) saying what its answer completes. The
//! engine answers a window's requests of every shard during the next window, in the order a
//! single clock makes them (by cycle, then by SM: [`resolve`]), and each shard takes the answers
//! when the window after that starts ([`Shard::deliver`]). That is early enough: a window is at
//! most half the shortest L2 round trip (a quarter with atomic counters, whose new values
//! spinning warps see halfway through it), so no answer is due before it is delivered.
//!
//! Until then the SM side knows that the answer is coming, not when: a warp whose next step
//! needs it (registers a load writes, a fence on its stores, a wait on a store or copy group,
//! an atomic's value) stalls as if until [`PENDING`], and the answer wakes it. Its stall state
//! is the one the answer gives it (`LongScoreboard`), so the warps' accounting does not see the
//! difference.

use super::event::Event;
use super::shard::Shard;
use super::state::Warp;
use crate::memory::system::MemSys;
use crate::observe::warp_state::State;
use crate::sm::async_groups::AsyncGroups;
use rand_chacha::ChaCha8Rng;
use std::ops::Range;

/// A time no answer has: the result of a request still on its way.
pub(crate) const PENDING: u64 = u64::MAX >> 2;

/// One request of an SM to the L2: `bytes` at `addr`, reaching the memory system's side at
/// cycle `at` (from the SM's port); `cycle` is when the SM made it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemReq {
    pub cycle: u64,
    pub sm: u32,
    pub write: bool,
    pub at: u64,
    pub addr: u64,
    pub bytes: u64,
}

/// What the answers to requests `reqs` (indices in their batch) complete: each waits for the
/// latest of them.
pub(crate) struct Cont {
    pub reqs: Range<u32>,
    pub then: Then,
}

pub(crate) enum Then {
    /// A chunk of TMA load `load`, leaving at `at`, is back: it streams into shared memory.
    TmaChunk { load: u32, at: u64 },
    /// The last chunk of TMA load `load` (issued at `issued`) is back once every chunk is.
    TmaLast { load: u32, at: u64, issued: u64 },
    /// A TMA store of warp `warp`, sent at `sent`, in its store group `group`.
    TmaStore { warp: u32, group: u64, sent: u64 },
    /// A global store, acknowledged no sooner than `done`.
    Store { warp: u32, done: u64 },
    /// A global load's result, on scoreboard `sb` or the registers, no sooner than `done` and
    /// than the L1 fills `waits` of the lines it hit while they were on their way.
    Load {
        warp: u32,
        sb: Option<u8>,
        done: u64,
        waits: Vec<u32>,
    },
    /// L1 fill `fill` (`Shard::fills`) of way `slot` of SM `sm`'s L1, whose data was there at
    /// `before` (or a fill's `PENDING + id`).
    L1Fill {
        sm: u32,
        slot: usize,
        fill: u32,
        before: u64,
    },
    /// A cp.async of warp `warp` in its copy group `group`, done no sooner than `done`.
    CpAsync { warp: u32, group: u64, done: u64 },
    /// A spilled value's access to L2 (a load's value is in the registers `latency` after).
    Local {
        warp: u32,
        load: Option<u64>,
        done: u64,
    },
    /// A `WaitCounter` poll's read: the warp goes on when it is back.
    Poll { warp: u32 },
    /// The k-th atomic of CTA `cta` on `counter`, issued at `issued`: the warps that wait for
    /// its value go on when it is back, and the spinning warps it releases (`woken`) see it
    /// halfway.
    Atomic {
        cta: u32,
        counter: usize,
        k: usize,
        issued: u64,
        woken: Vec<u32>,
    },
}

/// The L1 fills of a shard's loads (`crate::sm::l1`) by id, while a load or a later fill may
/// ask when one is there: a line whose fill is on its way holds its id, and a load that hits it
/// waits for the fill's answer.
#[derive(Default)]
pub(crate) struct Fills {
    /// The id of `ready[0]`, and each fill's answer ([`PENDING`] until then).
    base: u32,
    ready: std::collections::VecDeque<u64>,
    /// The first id of each closed batch whose answers have not been delivered, oldest
    /// first, and of the open batch.
    firsts: std::collections::VecDeque<u32>,
    pub(crate) open_first: u32,
}

impl Fills {
    /// A new fill on its way; its id.
    pub fn open(&mut self) -> u32 {
        self.ready.push_back(PENDING);
        self.base + self.ready.len() as u32 - 1
    }

    /// The answer to fill `id`, which must have come.
    pub fn answer(&self, id: u32) -> u64 {
        let r = self.ready[(id - self.base) as usize];
        debug_assert!(r < PENDING, "a fill is answered before what waits for it");
        r
    }

    fn answered(&mut self, id: u32, ready: u64) {
        self.ready[(id - self.base) as usize] = ready;
    }

    /// A batch closes: the fills from here on are the next one's.
    pub fn close_batch(&mut self) {
        self.firsts.push_back(self.open_first);
        self.open_first = self.base + self.ready.len() as u32;
    }

    /// The oldest batch's answers were delivered: the batch before it is referred to no more
    /// (loads and fills of a batch wait only for fills of their own batch and of the one
    /// before, whose answers came first).
    fn delivered(&mut self) {
        if let Some(first) = self.firsts.pop_front() {
            let drop = (first.saturating_sub(self.base) as usize).min(self.ready.len());
            self.ready.drain(..drop);
            self.base += drop as u32;
        }
    }
}

/// Answers each shard's requests of one window (`reqs[shard]`, each shard's in the order it
/// made them) in the order one clock makes them: by cycle, then by shard (their SMs are in
/// order), a shard's own in its order, into `out[shard]` (empty, kept from an earlier window:
/// a window's thousands of answers allocate nothing). The jitter of each comes from `rng` in
/// that order.
pub(crate) fn resolve(
    mem: &mut MemSys,
    rng: &mut ChaCha8Rng,
    reqs: &[Vec<MemReq>],
    out: &mut [Vec<u64>],
) {
    let mut next = vec![0usize; reqs.len()];
    while let Some(cycle) = reqs
        .iter()
        .zip(&next)
        .filter_map(|(r, &i)| r.get(i))
        .map(|q| q.cycle)
        .min()
    {
        for ((r, i), answers) in reqs.iter().zip(&mut next).zip(out.iter_mut()) {
            while let Some(q) = r.get(*i).filter(|q| q.cycle == cycle) {
                // The next request's L2 tags start on their way into the host's cache while
                // this one is booked: each lookup would otherwise wait for them (a quarter of
                // a GEMM's time, TMA rows one after another).
                if let Some(n) = r.get(*i + 1) {
                    mem.prefetch(n.addr);
                }
                answers.push(mem.access(q.sm, q.at, q.addr, q.bytes, q.write, rng));
                *i += 1;
            }
        }
    }
}

impl Shard<'_> {
    /// Queues a request of SM `sm` for `bytes` at `addr`, reaching the memory system at `at`.
    pub(crate) fn request(&mut self, sm: u32, at: u64, addr: u64, bytes: u64, write: bool) {
        self.batch.reqs.push(MemReq {
            cycle: self.now,
            sm,
            write,
            at,
            addr,
            bytes,
        });
    }

    /// The index the next request gets in this window's batch.
    pub(crate) fn next_request(&self) -> u32 {
        self.batch.reqs.len() as u32
    }

    /// The requests from index `from` on complete `then` (none: it only waits for the
    /// continuations before it in the batch).
    pub(crate) fn then(&mut self, from: u32, then: Then) {
        let reqs = from..self.next_request();
        self.batch.conts.push(Cont { reqs, then });
    }

    /// A load with no request of its own completes `then` once the fills it waits for are
    /// answered: with the last batch closed when they all are in it (the fills made before this
    /// window), else with this window's.
    pub(crate) fn then_after_fills(&mut self, then: Then) {
        let earlier = match &then {
            Then::Load { waits, .. } => waits.iter().all(|&f| f < self.fills.open_first),
            _ => unreachable!("only loads wait for fills"),
        };
        let cont = Cont { reqs: 0..0, then };
        match self.waiting.back_mut() {
            Some(closed) if earlier => closed.push(cont),
            _ => self.batch.conts.push(cont),
        }
    }

    /// Wakes warp `w` at `t` if it stalled on an answer (its wake-up then had no time).
    fn wake_answered(&mut self, w: u32, t: u64) {
        if let Some(warp) = self.warps.get_mut(w) {
            if std::mem::take(&mut warp.answer_wakes) {
                self.q.push(t.max(self.now), Event::Wake(w));
            }
        }
    }

    /// A store or copy group's answer: its bytes are through at `done`.
    fn deliver_group(
        &mut self,
        w: u32,
        group: u64,
        done: u64,
        groups: impl Fn(&mut Warp) -> &mut AsyncGroups,
    ) {
        self.book_horizon(done);
        if let Some(warp) = self.warps.get_mut(w) {
            groups(warp).deliver(group, done);
        }
        self.wake_answered(w, done);
    }

    /// Applies the answers to a batch's requests, in the order they were made; the emptied
    /// vectors are kept for later windows.
    pub(crate) fn deliver(&mut self, mut conts: Vec<Cont>, mut answers: Vec<u64>) {
        self.deliver_conts(&mut conts, &answers);
        self.fills.delivered();
        answers.clear();
        self.spare.answers = answers;
        self.spare.conts = conts;
    }

    fn deliver_conts(&mut self, conts: &mut Vec<Cont>, answers: &[u64]) {
        for Cont { reqs, then } in conts.drain(..) {
            let back = answers[reqs.start as usize..reqs.end as usize]
                .iter()
                .copied()
                .max()
                .unwrap_or(0);
            match then {
                Then::TmaChunk { load, at } => {
                    let ready = back.max(at);
                    self.q.push(ready, Event::TmaChunk(load));
                    let l = self.tma_loads.get_mut(load);
                    l.latest = l.latest.max(ready);
                }
                Then::TmaLast { load, at, issued } => {
                    self.tma_last_back(load, back.max(at), issued)
                }
                Then::TmaStore { warp, group, sent } => {
                    self.deliver_group(warp, group, back.max(sent), |w| &mut w.stores)
                }
                Then::Store { warp, done } => {
                    let done = back.max(done);
                    self.book_horizon(done);
                    if let Some(wr) = self.warps.get_mut(warp) {
                        wr.stores_done = wr.stores_done.max(done);
                        wr.stores_pending -= 1;
                    }
                    self.wake_answered(warp, done);
                }
                Then::Load {
                    warp,
                    sb,
                    done,
                    waits,
                } => {
                    let mut done = back.max(done);
                    for fill in waits {
                        done = done.max(self.fills.answer(fill));
                    }
                    self.book_horizon(done);
                    if let Some(wr) = self.warps.get_mut(warp) {
                        wr.answer_load(sb, done);
                    }
                    self.wake_answered(warp, done);
                }
                Then::L1Fill {
                    sm,
                    slot,
                    fill,
                    before,
                } => {
                    // As the line's data was when it was looked up: a fill on its way then
                    // was answered before this one.
                    let before = match before.checked_sub(PENDING) {
                        Some(earlier) => self.fills.answer(earlier as u32),
                        None => before,
                    };
                    let ready = back.max(before);
                    self.fills.answered(fill, ready);
                    self.sms[sm as usize]
                        .l1_cache
                        .answer_fill(slot, fill, ready);
                }
                Then::CpAsync { warp, group, done } => {
                    self.deliver_group(warp, group, back.max(done), |w| &mut w.copies)
                }
                Then::Local { warp, load, done } => {
                    let done = back.max(done);
                    self.book_horizon(done);
                    if let Some(latency) = load {
                        if let Some(wr) = self.warps.get_mut(warp) {
                            wr.answer_load(None, done + latency);
                        }
                        self.wake_answered(warp, done + latency);
                    }
                }
                Then::Poll { warp } => {
                    if let Some(wr) = self.warps.get_mut(warp) {
                        wr.sync_pending -= 1;
                        wr.hold_until(back, State::LongScoreboard);
                    }
                    self.wake_answered(warp, back);
                }
                Then::Atomic {
                    cta,
                    counter,
                    k,
                    issued,
                    woken,
                } => {
                    let seen = (issued + back) / 2;
                    for w in woken {
                        self.wake_at(w, seen);
                    }
                    self.ctas[cta as usize].atomics[counter][k].1 = back;
                    let mut held = std::mem::take(&mut self.atomic_waiters);
                    held.retain(|&(c, n, i, w)| {
                        let this = (c, n, i) == (cta, counter, k);
                        if this {
                            let wr = &mut self.warps[w as usize];
                            wr.sync_pending -= 1;
                            wr.hold_until(back, State::LongScoreboard);
                            self.wake_answered(w, back);
                        }
                        !this
                    });
                    self.atomic_waiters = held;
                }
            }
        }
    }
}
