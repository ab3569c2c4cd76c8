//! The engine's per-agent state: warps, warpgroups, CTAs, SMs and their partitions. Units
//! (`crate::sm`) are plain values inside them; the engine owns every instance, so one
//! `&mut Engine` is the only way to change any of it.

use crate::engine::crossing::PENDING;
use crate::engine::server::{Link, Server};
use crate::gpu::preset::Preset;
use crate::observe::warp_state::{Accounting, State};
use crate::sm::async_groups::AsyncGroups;
use crate::sm::l1::L1Cache;
use crate::sm::local::{LocalTraffic, SpillSeq};
use crate::sm::mbarrier::{MBarrier, Polling};
use crate::sm::named_barrier::NamedBarrier;
use crate::sm::pipes::MixProgress;
use crate::sm::regfile::RegPool;
use crate::sm::tensor_core::TensorPipe;
use isa::divergence::{Lanes, Mask};
use isa::program::{SCOREBOARDS, WARPS_PER_WARPGROUP};
use std::collections::VecDeque;

pub(crate) struct Warp {
    /// The GPU-wide id (launch order over the GPU): what the trace, the results and the
    /// reports name it by. The shard's tables use its own ids.
    pub gid: u32,
    pub sm: u32,
    pub cta: u32,
    pub role: u16,
    /// The shard's warpgroup id.
    pub wg: u32,
    /// Engine-wide partition index (SM × partitions + partition).
    pub partition: u32,
    pub slot: u8,
    pub pc: u32,
    pub env: Vec<i64>,
    /// `barrier.cluster.arrive`s issued: the phase its next `barrier.cluster.wait` needs.
    pub cluster_arrivals: u32,
    /// The lanes taking part in the next instruction, and the lane-dependent `If`s and `Loop`s
    /// the warp is inside.
    pub lanes: Lanes,
    pub acct: Accounting,
    /// Warp-instructions left in the current macro instruction (compute, wgmma); 0 = none.
    pub progress: u32,
    /// Registers written by earlier instructions are ready at this cycle; `reg_kind` is the
    /// stall state while waiting for them.
    pub reg_ready: u64,
    pub reg_kind: State,
    /// Loads with a scoreboard (`sb`) are ready at these cycles instead, waited for only by
    /// `WaitScoreboard`; the state is that of the latest-arriving load on each.
    pub sb_ready: [u64; SCOREBOARDS],
    pub sb_kind: [State; SCOREBOARDS],
    /// Loads whose answers are still on their way from the memory system
    /// (`crate::engine::crossing`), on the registers and on each scoreboard.
    pub reg_pending: u16,
    pub sb_pending: [u16; SCOREBOARDS],
    /// HGMMAs this warp has issued, and the cycle its next one may issue (the gap after the
    /// last one, `tensor_core::issue_gap`).
    pub hgmma_issued: u64,
    pub hgmma_next: u64,
    /// The cycle this warp's next mma.sync may issue (`tensor.mma_issue_cycles`).
    pub mma_next: u64,
    /// Committed wgmma groups not yet known complete: HGMMA count that closes each.
    pub wgmma_groups: VecDeque<u64>,
    /// TMA stores' bulk async-groups and cp.async groups.
    pub stores: AsyncGroups,
    pub copies: AsyncGroups,
    /// The warp cannot proceed before this cycle (an atomic's result feeds its control flow, or
    /// a wait that passed at once is still returning), in state `sync_state`.
    pub sync_until: u64,
    pub sync_state: State,
    /// Atomics and counter polls whose round trips are still on their way: the warp waits for
    /// them as for `sync_until`.
    pub sync_pending: u16,
    /// The warp stalled on an answer still on its way: the answer wakes it.
    pub answer_wakes: bool,
    /// The warp's current `try_wait` has blocked (it will be woken, not pay the pass cost).
    pub wait_blocked: bool,
    /// The warp's last mbarrier-side instruction was a TMA load's issue
    /// (`tma.wait_after_issue_cycles`).
    pub after_tma_issue: bool,

    /// Per counter, how many `AtomicAdd`s this warp has executed.
    pub atomics: Vec<u32>,
    /// When the warp's global stores so far are acknowledged (what a `Fence` waits for).
    pub stores_done: u64,
    /// When the warp's shared-memory stores so far are written (what a `FenceProxyAsync`
    /// waits for).
    pub smem_stores_done: u64,
    /// Global stores whose acknowledgements are still on their way.
    pub stores_pending: u32,
    /// When each of the warp's distributed-shared-memory loads returns (those still in flight
    /// at the last one's issue; `cluster.dsmem_loads_per_warp` caps them).
    pub dsmem_loads: Vec<u64>,
    pub regs: u32,
    /// The instruction of the current state interval (for the trace).
    pub state_pc: u32,
    /// The mbarrier array of the current or last mbarrier wait, and the cycles spent waiting on
    /// each array (the sub-reasons of `mbarrier_wait`).
    pub waiting_on: u16,
    pub mbar_wait: Vec<u64>,
    /// The `Wait(poll: Test)` loop in progress, if any.
    pub polling: Option<Polling>,
    /// The part of `wgmma_wait` spent at a `Wgmma`'s issue, in the issue gap or with its
    /// warpgroup's HGMMAs in flight at the limit (the rest waits in `wgmma.wait_group`).
    pub wgmma_issue_wait: u64,
    /// Set at issue by a blocking instruction (bar.sync) and cleared by whoever releases it;
    /// `hold_pc` is that instruction.
    pub hold: Option<State>,
    pub hold_pc: u32,
    pub issued: u64,
    /// Lanes masked off, summed over the issued warp-instructions (0 unless the warp diverged:
    /// a warp-wide count costs nothing on the common path).
    pub masked_lanes: u64,
    /// The active lanes when the current state interval began (for the trace).
    pub state_mask: Mask,
    /// The spilled part of the current compute macro (`crate::sm::local`), the running count
    /// that decides which warp-instructions touch a spilled value, the frame slot of the next
    /// one, and the warp's local-memory traffic.
    pub spill: Option<SpillSeq>,
    /// The current `Mix` block's progress (`crate::sm::pipes`).
    pub mix: Option<MixProgress>,
    pub spill_carry: u64,
    pub spill_slot: u32,
    pub local: LocalTraffic,
}

impl Warp {
    /// The warp's next instruction waits until `until` (or the later wait already set), in
    /// `state`.
    pub fn hold_until(&mut self, until: u64, state: State) {
        self.sync_until = self.sync_until.max(until);
        self.sync_state = state;
    }

    /// A result this warp's later instructions read is ready at `ready`; while waiting for
    /// it the warp is in `kind` (the latest-arriving result names the stall).
    pub fn scoreboard(&mut self, ready: u64, kind: State) {
        if ready >= self.reg_ready {
            self.reg_ready = ready;
            self.reg_kind = kind;
        }
    }

    /// A load's result: on its scoreboard `sb` when it has one, otherwise as [`Self::scoreboard`].
    pub fn load_result(&mut self, sb: Option<u8>, ready: u64, kind: State) {
        match sb {
            Some(k) if ready >= self.sb_ready[k as usize] => {
                self.sb_ready[k as usize] = ready;
                self.sb_kind[k as usize] = kind;
            }
            Some(_) => {}
            None => self.scoreboard(ready, kind),
        }
    }

    /// The latest of the scoreboards in `mask` (bit k: scoreboard k): when and in what state
    /// ([`PENDING`] while a load's answer is on its way).
    pub fn scoreboards(&self, mask: u8) -> (u64, State) {
        (0..SCOREBOARDS)
            .filter(|k| mask >> k & 1 != 0)
            .map(|k| match self.sb_pending[k] {
                0 => (self.sb_ready[k], self.sb_kind[k]),
                _ => (PENDING, State::LongScoreboard),
            })
            .fold((0, State::Wait), |a, b| if b.0 > a.0 { b } else { a })
    }

    /// The registers' stall at cycle `now`, if they are not ready: until when and in what state
    /// ([`PENDING`] while a load's answer is on its way).
    pub fn registers_wait(&self, now: u64) -> Option<(State, u64)> {
        if self.reg_pending > 0 {
            Some((State::LongScoreboard, PENDING))
        } else {
            (self.reg_ready > now).then_some((self.reg_kind, self.reg_ready))
        }
    }

    /// A load's result (on scoreboard `sb`, or the registers) is on its way from the memory
    /// system; memory results stall in `LongScoreboard`.
    pub fn load_pending(&mut self, sb: Option<u8>) {
        match sb {
            Some(k) => self.sb_pending[k as usize] += 1,
            None => {
                self.reg_pending += 1;
                self.reg_kind = State::LongScoreboard;
            }
        }
    }

    /// The answer to a load of [`Self::load_pending`]: its result is ready at `ready`.
    pub fn answer_load(&mut self, sb: Option<u8>, ready: u64) {
        match sb {
            Some(k) => self.sb_pending[k as usize] -= 1,
            None => self.reg_pending -= 1,
        }
        self.load_result(sb, ready, State::LongScoreboard);
    }

    /// An atomic's or a counter poll's round trip is on its way: the warp waits for it.
    pub fn sync_pending(&mut self) {
        self.sync_pending += 1;
        self.sync_state = State::LongScoreboard;
    }
}

pub(crate) struct WarpGroup {
    /// The GPU-wide id (the trace names it by it).
    pub gid: u32,
    pub cta: u32,
    pub warps: [u32; WARPS_PER_WARPGROUP as usize],
    /// HGMMAs submitted to the tensor pipe, out of its in-flight count (released), and
    /// completed (their results visible).
    pub submitted: u64,
    pub released: u64,
    pub completed: u64,
    /// HGMMAs given a place in the SM's window (`tensor.hgmma_window_per_sm`).
    pub admitted: u64,
    /// Warps blocked in wait_group and the completed-HGMMA count each needs.
    pub waiters: Vec<(u32, u64)>,
    /// Warps blocked at a `Wgmma`'s issue (HGMMAs in flight at the limit) and the count each
    /// needs: of `admitted` HGMMAs with the SM's window, else of `released` ones.
    pub issue_waiters: Vec<(u32, u64)>,
}

pub(crate) struct Cta {
    /// The GPU-wide id (the trace's slots are numbered by it).
    pub gid: u32,
    pub block: u32,
    pub sm: u32,
    pub mbars: Vec<MBarrier>,
    /// Per mbarrier: warps waiting and the parity each waits for.
    pub mbar_waiters: Vec<Vec<(u32, u32)>>,
    pub named: Vec<NamedBarrier>,
    pub pool: RegPool,
    pub reg_waiters: Vec<u32>,
    pub live_warps: u32,
    /// Per counter, the values the CTA's atomics fetched and when each was back.
    pub atomics: Vec<Vec<(i64, u64)>>,
    /// The ids of the CTA's warps and warpgroups (consecutive: launched together).
    pub warps: std::ops::Range<u32>,
    pub wgs: std::ops::Range<u32>,
    /// TMA loads issued and not yet landed, and remote arrivals on its mbarriers on their
    /// way: their events still refer to the CTA.
    pub tma_in_flight: u32,
    pub remote_in_flight: u32,
    /// Its cluster (an id in `Shard::clusters`) and its rank there.
    pub cluster: u32,
    pub rank: u32,
}

/// A thread-block cluster: its CTAs (consecutive ids from `first_cta`, by rank) and its
/// barrier (`crate::sm::cluster`).
pub(crate) struct Cluster {
    pub first_cta: u32,
    pub size: u32,
    /// CTAs not yet dropped, and warps not yet exited (the cluster barrier's count).
    pub live_ctas: u32,
    pub live_warps: u32,
    pub barrier: crate::sm::cluster::ClusterBarrier,
}

/// Asynchronous work in flight (TMA loads, remote arrivals) by index, so that the events that
/// complete it carry an index, not the work; a finished entry's index is reused.
pub(crate) struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T: Copy> Slab<T> {
    pub fn insert(&mut self, item: T) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = Some(item);
                i
            }
            None => {
                self.items.push(Some(item));
                (self.items.len() - 1) as u32
            }
        }
    }

    pub fn get(&self, i: u32) -> T {
        self.items[i as usize].expect("an entry's events refer to it until it is removed")
    }

    pub fn get_mut(&mut self, i: u32) -> &mut T {
        self.items[i as usize]
            .as_mut()
            .expect("an entry's events refer to it until it is removed")
    }

    pub fn remove(&mut self, i: u32) -> T {
        let item = self.get(i);
        self.items[i as usize] = None;
        self.free.push(i);
        item
    }
}

/// One SM's shared units and its CTA slots.
pub(crate) struct Sm {
    /// The shared-memory port (one 128-byte wavefront per cycle).
    pub port: Server,
    pub tensor: TensorPipe,
    pub tma_issue: Server,
    /// The path TMA loads take from L2 into shared memory.
    pub tma_fill: Link,
    /// The rate at which TMA stores move their data out of the SM.
    pub tma_store: Link,
    /// The SM's HGMMA window (`tensor.hgmma_window_per_sm`): places taken, and the warpgroups
    /// waiting for one, first come first.
    pub hgmma_places: u64,
    pub hgmma_waiting: VecDeque<u32>,
    /// TMA busy time: cycles with at least one load in flight, and the end of the last.
    pub tma_covered_until: u64,
    pub tma_busy: u64,
    pub launched: u32,
    /// The L1's tag stage, which every global and local warp access passes
    /// (`crate::sm::lsu`); its path to L2 for local lines that miss, and the bytes of spilled
    /// values its resident warps keep (`crate::sm::local`).
    pub l1: Server,
    /// When each global access booked on `l1` starts, while it waits for the stage.
    pub l1_waiting: VecDeque<u64>,
    pub local_miss: Link,
    pub local_bytes: u64,
    /// The L1 data cache for global loads (`crate::sm::l1`).
    pub l1_cache: L1Cache,
    /// The SM's requests to other SMs' shared memory (distributed shared memory).
    pub dsmem: Link,
}

impl Sm {
    /// An SM with `l1_bytes` of L1 data cache for the kernel.
    pub fn new(p: &Preset, l1_bytes: u64) -> Self {
        Sm {
            port: Server::default(),
            tensor: TensorPipe::default(),
            tma_issue: Server::default(),
            tma_fill: Link::new(p.tma.fill_bytes_per_cycle),
            tma_store: Link::new(p.tma.store_bytes_per_cycle),
            hgmma_places: 0,
            hgmma_waiting: VecDeque::new(),
            tma_covered_until: 0,
            tma_busy: 0,
            launched: 0,
            l1: Server::default(),
            l1_waiting: VecDeque::new(),
            local_miss: Link::new(p.local.miss_bytes_per_cycle),
            local_bytes: 0,
            l1_cache: L1Cache::new(l1_bytes, p.memory.l2.line_bytes, p.l1.ways),
            dsmem: Link::new(p.cluster.dsmem_bytes_per_cycle.max(f64::MIN_POSITIVE)),
        }
    }
}

#[derive(Default)]
pub(crate) struct Partition {
    pub slots: Vec<Option<u32>>,
    /// Slots whose warp must be evaluated at the next tick.
    pub check: u32,
    /// Slots whose warp could issue at the last evaluation.
    pub eligible: u32,
    pub last: Option<usize>,
    /// ALU, FMA, MUFU, the tensor core as used by mma.sync, and shuffles (`crate::sm::pipes`).
    pub pipes: [Server; 5],
    /// The warp whose warp-instruction holds each pipe's last booking.
    pub pipe_owner: [u32; 5],
    pub issued: u64,
    /// The issue port is held until this cycle (`tensor.issue_beside_hgmma`), and the
    /// fraction of a cycle owed so far.
    pub issue_free: u64,
    pub issue_debt: f64,
    /// The partition takes its warps' next GPU-scope memory barrier from this cycle
    /// (`barriers.membar_interval`).
    pub membar_free: u64,
}

/// The warps, warpgroups or CTAs alive now, by the shard's id. Ids grow with launch order and
/// are never reused, so an event still queued for a retired agent cannot reach a new one (and
/// GTO's "oldest" stays the lowest id); a retired agent's entry is dropped, and the run of
/// dropped entries before the oldest live one is given back, so memory follows the resident
/// CTAs, not the grid.
pub(crate) struct Live<T> {
    /// The id of `items[0]`.
    base: u32,
    items: Vec<Option<T>>,
    /// Leading `None`s of `items`, given back once they are half of it (amortized O(1)).
    dead: usize,
}

impl<T> Default for Live<T> {
    fn default() -> Self {
        Live {
            base: 0,
            items: Vec::new(),
            dead: 0,
        }
    }
}

impl<T> Live<T> {
    /// Adds the entry of `id`, which must be above every id added before; the ids between are
    /// holes, dropped as retired ones.
    pub fn insert(&mut self, id: u32, t: T) {
        if self.items.is_empty() {
            self.base = id;
            self.dead = 0;
        }
        let i = (id - self.base) as usize;
        debug_assert!(i >= self.items.len(), "ids grow");
        self.items.resize_with(i, || None);
        self.items.push(Some(t));
    }

    pub fn get(&self, id: u32) -> Option<&T> {
        let i = id.checked_sub(self.base)? as usize;
        self.items.get(i)?.as_ref()
    }

    pub fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        let i = id.checked_sub(self.base)? as usize;
        self.items.get_mut(i)?.as_mut()
    }

    /// Drops the entries of `ids`, which must be live.
    pub fn remove(&mut self, ids: std::ops::Range<u32>) {
        for id in ids {
            self.items[(id - self.base) as usize] = None;
        }
        while self.items.get(self.dead).is_some_and(Option::is_none) {
            self.dead += 1;
        }
        if self.dead > 0 && self.dead * 2 >= self.items.len() {
            self.items.drain(..self.dead);
            self.base += self.dead as u32;
            self.dead = 0;
        }
    }

    /// The live entries in id order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        let base = self.base;
        self.items
            .iter()
            .enumerate()
            .filter_map(move |(i, t)| Some((base + i as u32, t.as_ref()?)))
    }
}

impl<T> std::ops::Index<usize> for Live<T> {
    type Output = T;
    fn index(&self, id: usize) -> &T {
        self.items[id - self.base as usize]
            .as_ref()
            .expect("an agent's state is dropped only once nothing refers to it")
    }
}

impl<T> std::ops::IndexMut<usize> for Live<T> {
    fn index_mut(&mut self, id: usize) -> &mut T {
        self.items[id - self.base as usize]
            .as_mut()
            .expect("an agent's state is dropped only once nothing refers to it")
    }
}

#[cfg(test)]
mod tests {
    use super::Live;

    #[test]
    fn ids_are_never_reused_and_retired_entries_are_given_back() {
        let mut live = Live::default();
        for round in 0..100u32 {
            let first = round * 10;
            for i in 0..10 {
                live.insert(first + i, first + i);
            }
            // The oldest entry lives on; the rest of each round retires.
            live.remove(first + 1..first + 10);
        }
        assert_eq!(live.get(995), None);
        assert_eq!(live[990], 990);
        assert_eq!(live.iter().count(), 100);
        // Once the retired entries before the oldest live one are half of the table, they go.
        for id in (0..490).step_by(10) {
            live.remove(id..id + 1);
        }
        assert_eq!(live.items.len(), 1000);
        live.remove(490..491);
        assert_eq!(live.items.len(), 500);
        assert_eq!(live.get(0), None);
        assert_eq!(live[500], 500);
        for id in (500..1000).step_by(10) {
            live.remove(id..id + 1);
        }
        assert!(live.items.is_empty());
        // Skipped ids are holes, given back as retired entries are.
        live.insert(1000, 7);
        live.insert(1005, 8);
        assert_eq!((live.get(1002), live[1005]), (None, 8));
        live.remove(1000..1001);
        assert_eq!(live.iter().map(|(id, _)| id).collect::<Vec<_>>(), [1005]);
        assert_eq!(live.items.len(), 1);
    }
}
