//! One shard of the GPU: a run of consecutive SMs (a GPC, or every SM) with their partitions,
//! warps, CTAs, clusters and units, its own clock and its own event queue. Shards advance
//! through the same time windows ([`super::Engine`] runs them, in parallel when it has
//! threads); nothing in one shard reads or writes another's state during a window. What crosses
//! to the memory system below the SMs leaves as requests ([`super::crossing`]) whose answers
//! come back before they can matter, and CTA slots freed and CTAs launched cross at window ends.

use super::crossing::{Cont, Fills, MemReq};
use super::event::Event;
use super::launch::{CtaSched, Launch};
use super::names::Names;
use super::queue::EventQueue;
use super::state::{Cluster, Cta, Live, Partition, Slab, Sm, Warp, WarpGroup};
use super::stats::{RoleTotals, WarpResult};
use super::{Config, SimError};
use crate::engine::server::Link;
use crate::gpu::preset::Preset;
use crate::observe::sanitizer::Sanitizer;
use crate::observe::trace::Tracer;
use crate::sm::cluster::RemoteArrival;
use crate::sm::tma::TmaLoad;
use isa::program::Kernel;
use std::collections::VecDeque;
use std::ops::{Index, IndexMut, Range};

/// A shard's slice of a GPU-wide array (SMs, partitions, ports), indexed by GPU-wide index.
pub(crate) struct Span<T> {
    base: usize,
    items: Vec<T>,
}

impl<T> Span<T> {
    pub fn new(base: usize, items: Vec<T>) -> Self {
        Span { base, items }
    }

    /// The GPU-wide indices it covers.
    pub fn range(&self) -> Range<usize> {
        self.base..self.base + self.items.len()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }
}

impl<T> Index<usize> for Span<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        &self.items[i - self.base]
    }
}

impl<T> IndexMut<usize> for Span<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.items[i - self.base]
    }
}

/// The requests a shard made during one window and what their answers complete.
#[derive(Default)]
pub(crate) struct Batch {
    pub reqs: Vec<MemReq>,
    pub conts: Vec<Cont>,
}

/// Emptied vectors of earlier windows, for the next: a window's requests, continuations and
/// answers are thousands each, and allocating them anew every window cost a few percent.
#[derive(Default)]
pub(crate) struct Spare {
    pub reqs: Vec<MemReq>,
    pub conts: Vec<Cont>,
    pub answers: Vec<u64>,
}

pub(crate) struct Shard<'a> {
    pub(crate) k: &'a Kernel,
    pub(crate) p: &'a Preset,
    pub(crate) cfg: Config,
    /// The next cycle to work through.
    pub(crate) now: u64,
    /// The last cycle in which an event was handled or a partition ticked.
    pub(crate) last: u64,
    pub(crate) q: EventQueue<Event>,
    /// `Poll` events in `q`: when they are all that is left, nothing can complete a phase.
    pub(crate) polls_pending: usize,
    pub(crate) sms: Span<Sm>,
    /// The SMs' partitions, SM-major.
    pub(crate) parts: Span<Partition>,
    /// Bitset over `parts` (from its first): partitions with a warp to evaluate or an eligible
    /// warp.
    pub(crate) active: Vec<u64>,
    /// Each SM's port to the L2 (the memory system's per-SM bandwidth cap): only its SM books it.
    pub(crate) ports: Span<Link>,
    /// Its warps, warpgroups and CTAs by its own ids, and the CTAs it launched so far (the next
    /// CTA's id; its warps' and warpgroups' follow from it).
    pub(crate) warps: Live<Warp>,
    pub(crate) wgs: Live<WarpGroup>,
    pub(crate) ctas: Live<Cta>,
    pub(crate) launched_ctas: u32,
    /// The results of retired warps: each role's totals, and the first
    /// [`super::stats::MAX_WARP_RESULTS`] warps' own (by GPU-wide id).
    pub(crate) role_totals: Vec<RoleTotals>,
    pub(crate) warp_results: Vec<(u32, WarpResult)>,
    /// The last cycle the shard made progress (see [`Config::livelock_cycles`]), the last the
    /// GPU made progress as of the window's start, and the first cycle this shard went on to
    /// without progress for longer than the limit (the engine decides at the window's end).
    pub(crate) last_progress: u64,
    pub(crate) gpu_progress: u64,
    pub(crate) livelock_at: Option<u64>,
    pub(crate) names: Names,
    /// Addresses: tensors laid out one after another, 4 KiB aligned.
    pub(crate) tensor_base: Vec<u64>,
    /// Latest cycle any booked work ends (kernel end covers in-flight work).
    pub(crate) horizon: u64,
    pub(crate) mma_flops: u64,
    pub(crate) tma_loads: Slab<TmaLoad>,
    /// The clusters alive now (`crate::sm::cluster`), and remote mbarrier arrivals on their way.
    pub(crate) clusters: Live<Cluster>,
    pub(crate) remote_arrivals: Slab<RemoteArrival>,
    pub(crate) sanitizer: Option<Sanitizer>,
    /// The run's trace writer, lent to the shard while it works through a window.
    pub(crate) tracer: Option<Tracer>,
    pub(crate) retired: u32,
    /// Global atomic counters (a kernel with counters runs as one shard), and where they live.
    pub(crate) counters: Vec<i64>,
    /// Per counter, the warps spinning in `WaitCounter` and the value each waits for.
    pub(crate) counter_waiters: Vec<Vec<(u32, i64)>>,
    pub(crate) counter_base: u64,
    /// Warps held until an atomic's round trip is back: (CTA, counter, the CTA's k-th atomic
    /// on it, warp).
    pub(crate) atomic_waiters: Vec<(u32, usize, usize, u32)>,
    /// Local memory (spilled registers) after the counters: one frame of `frame_stride` bytes
    /// per warp slot of the GPU (`crate::sm::local`).
    pub(crate) local_base: u64,
    pub(crate) frame_stride: u64,
    pub(crate) error: Option<SimError>,
    /// The CTA scheduler, when this shard holds every SM; otherwise the engine's decides at
    /// window ends: `freed` are the slots this shard's CTAs left (free from the cycle given)
    /// and `launches` the CTAs it was told to start (an index in `Event::Launch`).
    pub(crate) sched: Option<CtaSched>,
    pub(crate) freed: Vec<(u64, u32)>,
    pub(crate) launches: Slab<Launch>,
    /// This window's requests to the memory system and their continuations; the batches
    /// whose answers are still on their way, oldest first, and the answers to the oldest once
    /// they are in.
    pub(crate) batch: Batch,
    pub(crate) waiting: VecDeque<Vec<Cont>>,
    pub(crate) answers: Option<Vec<u64>>,
    /// Its SMs' L1 fills on their way.
    pub(crate) fills: Fills,
    pub(crate) spare: Spare,
}

impl<'a> Shard<'a> {
    /// A shard of SMs `sms` (each with `l1_bytes` of L1 data cache), starting at cycle `start`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        k: &'a Kernel,
        p: &'a Preset,
        cfg: Config,
        sms: Range<usize>,
        ports: Vec<Link>,
        l1_bytes: u64,
        start: u64,
        names: Names,
        tensor_base: Vec<u64>,
        (counter_base, local_base): (u64, u64),
    ) -> Self {
        let per = p.sm.partitions as usize;
        let nparts = sms.len() * per;
        let parts = (0..nparts)
            .map(|_| Partition {
                slots: vec![None; p.sm.warps_per_partition as usize],
                ..Default::default()
            })
            .collect();
        Shard {
            k,
            p,
            now: start,
            last: start,
            q: EventQueue::default(),
            polls_pending: 0,
            sms: Span::new(
                sms.start,
                sms.clone().map(|_| Sm::new(p, l1_bytes)).collect(),
            ),
            parts: Span::new(sms.start * per, parts),
            active: vec![0; nparts.div_ceil(64)],
            ports: Span::new(sms.start, ports),
            warps: Live::default(),
            wgs: Live::default(),
            ctas: Live::default(),
            launched_ctas: 0,
            role_totals: vec![RoleTotals::new(k.mbarriers.len()); k.roles.len()],
            warp_results: Vec::new(),
            last_progress: start,
            gpu_progress: start,
            livelock_at: None,
            tensor_base,
            horizon: start,
            mma_flops: 0,
            tma_loads: Slab::default(),
            clusters: Live::default(),
            remote_arrivals: Slab::default(),
            sanitizer: cfg.check.then(|| Sanitizer::new(names.clone())),
            names,
            tracer: None,
            retired: 0,
            counters: k.counters.iter().map(|(_, v)| *v).collect(),
            counter_waiters: vec![Vec::new(); k.counters.len()],
            counter_base,
            atomic_waiters: Vec::new(),
            local_base,
            frame_stride: k
                .roles
                .iter()
                .map(|r| u64::from(r.spilled()) * crate::sm::local::VALUE_BYTES)
                .max()
                .unwrap_or(0),
            error: None,
            sched: None,
            freed: Vec::new(),
            launches: Slab::default(),
            batch: Batch::default(),
            waiting: VecDeque::new(),
            answers: None,
            fills: Fills::default(),
            spare: Spare::default(),
            cfg,
        }
    }

    /// CTA `l`, placed by the engine's scheduler, starts at cycle `t`.
    pub(crate) fn push_launch(&mut self, t: u64, l: Launch) {
        let i = self.launches.insert(l);
        self.q.push(t, Event::Launch(i));
    }

    /// Marks partition `p` (GPU-wide index) active.
    pub(crate) fn activate(&mut self, p: usize) {
        let i = p - self.parts.range().start;
        self.active[i / 64] |= 1 << (i % 64);
    }

    /// Whether the shard has nothing to do but polls that nothing is left to release.
    pub(crate) fn idle(&self) -> bool {
        self.active.iter().all(|&w| w == 0) && self.q.len() == self.polls_pending
    }

    /// The first cycle at which the shard has work: now with an active partition, else its
    /// next event.
    pub(crate) fn next_work(&self) -> Option<u64> {
        if self.active.iter().any(|&w| w != 0) {
            Some(self.now)
        } else {
            self.q.peek_cycle().map(|t| t.max(self.now))
        }
    }

    /// Works through cycles `from..end`: first the answers that came back for its oldest
    /// batch, then, each cycle, the due events and the active partitions' ticks. Stops early
    /// at an error.
    pub(crate) fn run_window(&mut self, from: u64, end: u64) {
        self.now = self.now.max(from);
        if let Some(answers) = self.answers.take() {
            let conts = self
                .waiting
                .pop_front()
                .expect("answers come for a batch that waits");
            self.deliver(conts, answers);
        }
        let base = self.parts.range().start;
        while self.now < end {
            if self.now > self.cfg.max_cycles && self.next_work().is_some_and(|t| t <= self.now) {
                self.error = Some(SimError::CycleLimit {
                    limit: self.cfg.max_cycles,
                });
                return;
            }
            // A cycle with work this long after the last progress on the GPU (the next
            // window's end tells whether another shard made progress since).
            let since = self.last_progress.max(self.gpu_progress);
            if self.now.saturating_sub(since) > self.cfg.livelock_cycles
                && self.livelock_at.is_none()
                && self.next_work().is_some_and(|t| t <= self.now)
            {
                self.livelock_at = Some(self.now);
            }
            let mut worked = false;
            while let Some((_, ev)) = self.q.pop_due(self.now) {
                self.handle(ev);
                worked = true;
            }
            for word in 0..self.active.len() {
                let mut bits = self.active[word];
                while bits != 0 {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let p = base + word * 64 + b;
                    self.tick(p);
                    worked = true;
                    let part = &self.parts[p];
                    if part.check | part.eligible == 0 {
                        self.active[word] &= !(1 << b);
                    }
                }
            }
            if worked {
                self.last = self.now;
            }
            if self.error.is_some() {
                return;
            }
            // Events booked during this cycle's ticks take effect at the next cycle at the
            // earliest, so no partition ticks twice in one cycle.
            let next = if self.active.iter().any(|&w| w != 0) {
                Some(self.now + 1)
            } else {
                self.q.peek_cycle().map(|t| t.max(self.now + 1))
            };
            self.now = next.map_or(end, |t| t.min(end));
        }
    }

    /// The window is over: its requests go to the memory system, its continuations wait for
    /// the answers.
    pub(crate) fn close_window(&mut self) -> Vec<MemReq> {
        let reqs = std::mem::replace(&mut self.batch.reqs, std::mem::take(&mut self.spare.reqs));
        let conts = std::mem::replace(&mut self.batch.conts, std::mem::take(&mut self.spare.conts));
        self.waiting.push_back(conts);
        self.fills.close_batch();
        reqs
    }
}
