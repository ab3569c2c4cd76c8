//! The compiled kernel: what the simulator runs. Names are resolved to small indices, parameters
//! folded into constants, loops and conditionals turned into counters and jumps.

use crate::divergence::{Mask, FULL};
use crate::expr::{Code, EvalError};
use crate::scenario::{DType, Poll};
use std::collections::BTreeMap;

/// Run-time variable slots every warp has; loop variables follow from [`FIRST_LOOP_SLOT`].
pub mod slot {
    /// Lane index 0..32 (only meaningful in per-lane address expressions).
    pub const LANE: u16 = 0;
    /// Warp index within its warpgroup, 0..4.
    pub const WARP: u16 = 1;
    /// Warpgroup index within its role.
    pub const WG: u16 = 2;
    /// Warp index within the CTA.
    pub const WARP_ID: u16 = 3;
    /// CTA (block) index within the grid.
    pub const CTA: u16 = 4;
    /// CTAs in the grid.
    pub const NUM_CTAS: u16 = 5;
    /// The CTA's rank in its cluster (`%cluster_ctarank`), 0 without clusters.
    pub const CLUSTER_RANK: u16 = 6;
    /// The CTA's cluster (`%clusterid.x`): `cta / cluster_size`.
    pub const CLUSTER_ID: u16 = 7;
    /// CTAs per cluster (`%cluster_nctarank`), 1 without clusters.
    pub const CLUSTER_SIZE: u16 = 8;
    pub const FIRST_LOOP_SLOT: u16 = 9;
    pub const BUILTINS: [(&str, u16); 9] = [
        ("lane", LANE),
        ("warp", WARP),
        ("wg", WG),
        ("warp_id", WARP_ID),
        ("cta", CTA),
        ("num_ctas", NUM_CTAS),
        ("cluster_rank", CLUSTER_RANK),
        ("cluster_id", CLUSTER_ID),
        ("cluster_size", CLUSTER_SIZE),
    ];

    /// Sets the built-ins of CTA `block` of a grid of `grid` CTAs in clusters of `cluster`
    /// (the warp's own ones are set by the caller).
    pub fn set_cta(env: &mut [i64], block: u32, grid: u32, cluster: u32) {
        env[CTA as usize] = block as i64;
        env[NUM_CTAS as usize] = grid as i64;
        env[CLUSTER_RANK as usize] = (block % cluster) as i64;
        env[CLUSTER_ID as usize] = (block / cluster) as i64;
        env[CLUSTER_SIZE as usize] = cluster as i64;
    }
}

pub const WARP_SIZE: u32 = 32;
pub const WARPS_PER_WARPGROUP: u32 = 4;

#[derive(Clone, Debug)]
pub struct Kernel {
    /// The scenario's name.
    pub name: String,
    /// This kernel's name in its sequence (the scenario's name for a lone kernel).
    pub kernel_name: String,
    pub gpu: String,
    pub params: BTreeMap<String, i64>,
    /// The parameters the scenario derives from others (written as expressions), in name
    /// order: the summary shows what they came to.
    pub derived: Vec<String>,
    /// The scenario's tables (`tables`), by name.
    pub tables: BTreeMap<String, Vec<i64>>,
    pub grid: u32,
    /// CTAs per cluster (1: no clusters); `grid` is a multiple of it.
    pub cluster: u32,
    pub regs_per_thread: u32,
    pub tensors: Vec<TensorInfo>,
    pub buffers: Vec<BufferInfo>,
    pub mbarriers: Vec<MBarrierInfo>,
    /// Total mbarrier objects (all arrays flattened).
    pub mbarrier_count: u32,
    /// Shared memory per CTA: buffers plus 8 bytes per mbarrier.
    pub smem_bytes: u64,
    /// Global counters and their initial values, arrays flattened (`flags[3]`).
    pub counters: Vec<(String, i64)>,
    /// Accumulator labels named by wgmma and compute instructions (`acc`).
    pub accs: Vec<String>,
    pub roles: Vec<RoleInfo>,
    pub analytic: Option<AnalyticInfo>,
}

impl Kernel {
    pub fn warps_per_cta(&self) -> u32 {
        self.roles.iter().map(|r| r.warps()).sum()
    }
    pub fn threads_per_cta(&self) -> u32 {
        self.warps_per_cta() * WARP_SIZE
    }
}

#[derive(Clone, Debug)]
pub struct AnalyticInfo {
    pub cycles: i64,
    pub bound: String,
    pub note: String,
}

#[derive(Clone, Debug)]
pub struct TensorInfo {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub bytes: u64,
    /// In L2 when the kernel starts.
    pub warm: bool,
}

#[derive(Clone, Debug)]
pub struct BufferInfo {
    pub name: String,
    pub slots: u32,
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub slot_bytes: u64,
    /// Byte offset of slot 0 in the CTA's shared memory (128-byte aligned, or 8 swizzle rows).
    pub base: u64,
    /// The slots' TMA swizzle in bytes: 0, 32, 64 or 128.
    pub swizzle: u32,
}

impl BufferInfo {
    /// The byte offset of slot `i` in the CTA's shared memory, if the buffer has that slot.
    pub fn slot_offset(&self, i: i64) -> Result<u64, IndexError> {
        if i < 0 || i >= self.slots as i64 {
            return Err(IndexError::Slot {
                name: self.name.clone(),
                index: i,
                len: self.slots,
            });
        }
        Ok(self.base + i as u64 * self.slot_bytes)
    }
}

/// A run-time index outside its array (an expression the compiler could not check).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("slot {index} of `{name}` is out of range: it has {len} slots")]
    Slot { name: String, index: i64, len: u32 },
    #[error("mbarrier index {index} is out of range: `{name}` has {len} elements")]
    MBarrier { name: String, index: i64, len: u32 },
    #[error("counter index {index} is out of range: `{name}` has {len} elements")]
    Counter { name: String, index: i64, len: u32 },
}

#[derive(Clone, Debug)]
pub struct MBarrierInfo {
    pub name: String,
    pub count: u32,
    pub arrivals: u32,
    /// Index of element 0 among all of the CTA's mbarriers.
    pub first: u32,
}

impl MBarrierInfo {
    /// The CTA-wide index of element `i`, if the array has it.
    pub fn flat(&self, i: i64) -> Result<u32, IndexError> {
        if i < 0 || i >= self.count as i64 {
            return Err(IndexError::MBarrier {
                name: self.name.clone(),
                index: i,
                len: self.count,
            });
        }
        Ok(self.first + i as u32)
    }
}

#[derive(Clone, Debug)]
pub struct RoleInfo {
    pub name: String,
    pub warpgroups: u32,
    pub regs: u32,
    /// The register estimate per thread against the role's budget, when the role states its
    /// live values.
    pub registers: Option<Registers>,
    pub code: Vec<Op>,
    /// For each op, where it came from (`program[2].body[0] wgmma`), for diagnostics.
    pub paths: Vec<String>,
    /// Run-time variable slots a warp of this role needs (builtins and loop variables).
    pub slots: u16,
}

impl RoleInfo {
    pub fn warps(&self) -> u32 {
        self.warpgroups * WARPS_PER_WARPGROUP
    }

    /// Registers per thread the role keeps in local memory.
    pub fn spilled(&self) -> u32 {
        self.registers.map_or(0, |r| r.spilled())
    }
}

/// A role's registers per thread as the compiler would count them: its live values, its wgmma
/// accumulators (N/2 fp32 registers per thread and m64 block for each label's widest wgmma) and the
/// preset's baseline (addresses, loop counters, constants), against its budget (`regs`, at
/// most the preset's per-thread maximum). What exceeds the budget lives in local memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Registers {
    pub live: u32,
    pub accumulators: u32,
    pub baseline: u32,
    pub budget: u32,
}

impl Registers {
    /// The estimate: live values, accumulators and baseline.
    pub fn needed(&self) -> u32 {
        self.live + self.accumulators + self.baseline
    }

    /// Registers per thread that do not fit the budget: live values in local memory (the
    /// compiler rejects budgets the accumulators and baseline do not fit).
    pub fn spilled(&self) -> u32 {
        self.needed().saturating_sub(self.budget)
    }
}

/// Scoreboards per warp for variable-latency results (SASS control codes: 3 bits name one of
/// six; Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking", 2018).
pub const SCOREBOARDS: usize = 6;

/// One step of a compiled program. Only [`Op::Issue`] takes an issue slot; the others are
/// control flow, resolved for free when the warp fetches its next instruction.
#[derive(Clone, Debug)]
pub enum Op {
    /// Sets `var` = 0 and `count_slot` = `count`; jumps to `exit` when the count is not positive.
    LoopStart {
        var: u16,
        count_slot: u16,
        count: Code,
        exit: u32,
    },
    /// `var` += 1; jumps back to `body` while `var` < count.
    LoopEnd {
        var: u16,
        count_slot: u16,
        body: u32,
    },
    /// Jumps to `target` when `cond` is zero.
    BranchIfZero {
        cond: Code,
        target: u32,
    },
    Jump {
        target: u32,
    },
    /// A lane-dependent `If` (`crate::divergence`): the active lanes where `cond` is non-zero
    /// run the then-path; jumps to `otherwise` (the `If`'s `ElseLanes`) when none does.
    BranchLanes {
        cond: Code,
        otherwise: u32,
    },
    /// The end of a lane-dependent `If`'s then-path: its other lanes run the else-path; jumps
    /// to `end` (the `If`'s `Reconverge`) when there are none.
    ElseLanes {
        end: u32,
    },
    /// A lane-dependent `Loop`: `count` is evaluated once per active lane; `var` = 0 and
    /// `count_slot` = the largest count; jumps to `exit` (the loop's `Reconverge`) when that is
    /// not positive.
    LoopLanesStart {
        var: u16,
        count_slot: u16,
        count: Code,
        exit: u32,
    },
    /// `var` += 1; jumps back to `body` while `var` < count, with the lanes whose own count
    /// is done masked off.
    LoopLanesEnd {
        var: u16,
        count_slot: u16,
        body: u32,
    },
    /// The end of a lane-dependent `If` or `Loop`: the lanes active before it are active again.
    Reconverge,
    /// The compiler's stall count: `cycles` (evaluated on arrival) without issuing.
    Stall {
        cycles: Code,
    },
    /// Waits until the loads on the scoreboards of `mask` (bit i: scoreboard i) are back.
    WaitScoreboard {
        mask: u8,
    },
    /// `slot` = `value` (a `Let`).
    Set {
        slot: u16,
        value: Code,
    },
    Issue(Inst),
}

/// Element `index` of mbarrier array `array`.
#[derive(Clone, Debug)]
pub struct BarRef {
    pub array: u16,
    pub index: Code,
}

/// Element `index` of a counter array whose first element is flat counter `first` and which
/// has `len` elements.
#[derive(Clone, Debug)]
pub struct CounterRef {
    pub first: u16,
    pub len: u32,
    pub index: Code,
}

/// Slot `slot` of shared-memory buffer `buf`.
#[derive(Clone, Debug)]
pub struct SlotRef {
    pub buf: u16,
    pub slot: Code,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pipe {
    Alu,
    Fma,
    Mufu,
    /// The partition's tensor core running mma.sync m16n8k16.
    Mma,
    /// Warp shuffles.
    Shfl,
}

impl Pipe {
    pub fn name(self) -> &'static str {
        match self {
            Pipe::Alu => "alu",
            Pipe::Fma => "fma",
            Pipe::Mufu => "mufu",
            Pipe::Mma => "mma",
            Pipe::Shfl => "shfl",
        }
    }
}

/// Where a warp-instruction of a [`Inst::Mix`] goes: a math pipe, or the uniform datapath
/// (UMOV, UIADD3, R2UR: an issue slot, no pipe whose rate is modeled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MixPipe {
    Pipe(Pipe),
    Uniform,
}

impl MixPipe {
    pub fn name(self) -> &'static str {
        match self {
            MixPipe::Pipe(p) => p.name(),
            MixPipe::Uniform => "uniform",
        }
    }
}

/// The pipes of a [`Inst::Mix`], in the order its counts are given, which is also the order
/// that breaks ties when it interleaves them: the slower pipe first, as a compiler starts the
/// critical resource's work first.
pub const MIX_PIPES: [MixPipe; 5] = [
    MixPipe::Pipe(Pipe::Mufu),
    MixPipe::Pipe(Pipe::Shfl),
    MixPipe::Pipe(Pipe::Alu),
    MixPipe::Pipe(Pipe::Fma),
    MixPipe::Uniform,
];

/// Where a [`Inst::RegRead`] reads from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegSource {
    /// The constant cache (SASS LDC).
    Constant,
    /// A special register (SASS S2R).
    Special,
}

/// An issuing instruction with its operands resolved.
#[derive(Clone, Debug)]
pub enum Inst {
    TmaLoad {
        tensor: u16,
        coords: Vec<Code>,
        dst: SlotRef,
        bar: BarRef,
        bytes: u64,
        /// The cluster ranks the box lands in (a mask), when it is multicast.
        multicast: Option<Code>,
        /// Which of `parts` equal parts of the slot's rows the box is (`bytes` is one part's).
        part: Option<Code>,
        parts: u32,
    },
    TmaStore {
        tensor: u16,
        coords: Vec<Code>,
        src: SlotRef,
        bytes: u64,
    },
    TmaStoreCommit,
    TmaStoreWait {
        n: Code,
    },
    Arrive {
        bar: BarRef,
        count: u32,
        /// The cluster rank whose mbarrier it is, for a remote arrive.
        cta: Option<Code>,
        /// A mask of cluster ranks, one arrival on each one's mbarrier (one lane a rank).
        ranks: Option<Code>,
        /// A release at cluster scope: a GPU-scope memory barrier before the arrive.
        membar: bool,
    },
    ArriveExpectTx {
        bar: BarRef,
        bytes: Code,
    },
    ExpectTx {
        bar: BarRef,
        bytes: Code,
    },
    Wait {
        bar: BarRef,
        parity: Code,
        poll: Poll,
    },
    /// One logical wgmma: `ksteps` HGMMA instructions of m64 n`n` k16 (each k16 step of a wgmma
    /// of M rows counts M/64 of them).
    Wgmma {
        n: u32,
        /// K of each HGMMA: 16 (bf16/f16), 32 (e4m3/e5m2) or 8 (tf32), the operands' 32 bytes
        /// a row.
        k: u32,
        ksteps: u32,
        a: Option<SlotRef>,
        b: SlotRef,
        /// Index into [`Kernel::accs`].
        acc: u16,
    },
    WgmmaFence,
    WgmmaCommit,
    WgmmaWait {
        n: Code,
    },
    BarSync {
        id: Code,
        threads: u32,
    },
    BarArrive {
        id: Code,
        threads: u32,
    },
    SetMaxNReg {
        inc: bool,
        regs: u32,
    },
    /// `count` warp-instructions on `pipe` (independent of each other); `acc` when they read and
    /// write wgmma accumulators.
    Compute {
        pipe: Pipe,
        count: Code,
        acc: Option<u16>,
    },
    /// A compiled block of independent warp-instructions on several pipes (`MixPipe`),
    /// `counts[i]` on `MIX_PIPES[i]`, issued interleaved and no faster than `stalls` cycles over
    /// the block; `acc` when they read and write wgmma accumulators.
    Mix {
        counts: [Code; MIX_PIPES.len()],
        stalls: Code,
        acc: Option<u16>,
    },
    /// ld.shared / st.shared: `addr` per lane (uses the `lane` slot), `width` bytes per lane.
    Shared {
        store: bool,
        slot: SlotRef,
        addr: Code,
        width: u32,
        sb: Option<u8>,
        /// The cluster rank whose shared memory it is (distributed shared memory).
        cta: Option<Code>,
    },
    /// `barrier.cluster.arrive` by the warp's threads; `membar` unless `.relaxed`.
    ClusterArrive {
        membar: bool,
    },
    /// `barrier.cluster.wait`.
    ClusterWait,
    /// Atomic add on global counter `counter`; the old value goes to `slot`.
    AtomicAdd {
        counter: CounterRef,
        add: Code,
        slot: u16,
    },
    /// Blocks until global counter `counter` is at least `value`.
    WaitCounter {
        counter: CounterRef,
        value: Code,
    },
    /// Waits for the warp's global stores to be acknowledged.
    Fence,
    /// Waits for the warp's shared-memory stores to be written (`fence.proxy.async`).
    FenceProxyAsync,
    /// cp.async: per lane, `width` bytes from byte `src` of `tensor` to byte `addr` of `dst`.
    CpAsync {
        tensor: u16,
        src: Code,
        dst: SlotRef,
        addr: Code,
        width: u32,
    },
    CpAsyncCommit,
    CpAsyncWait {
        n: Code,
    },
    /// LDC or S2R: a register read of fixed source whose result goes to scoreboard `sb`.
    RegRead {
        source: RegSource,
        sb: u8,
    },
    /// ld.global / st.global: `addr` per lane, a byte offset into `tensor`; a load's result
    /// goes to scoreboard `sb` when it has one (the warp's general scoreboard otherwise); `l1`:
    /// a load that may hit in and allocate in the SM's L1 (`cache: L1`).
    Global {
        store: bool,
        tensor: u16,
        addr: Code,
        width: u32,
        sb: Option<u8>,
        l1: bool,
    },
}

impl Inst {
    /// The PTX instruction is `.sync.aligned` (or, for `bar.sync`, aligned by definition): every
    /// thread of the warp must execute it together, so it may not run with lanes masked off.
    pub fn aligned(&self) -> Option<&'static str> {
        Some(match self {
            Inst::Wgmma { .. } => "wgmma.mma_async",
            Inst::WgmmaFence => "wgmma.fence",
            Inst::WgmmaCommit => "wgmma.commit_group",
            Inst::WgmmaWait { .. } => "wgmma.wait_group",
            Inst::BarSync { .. } => "bar.sync",
            Inst::BarArrive { .. } => "bar.arrive",
            Inst::SetMaxNReg { .. } => "setmaxnreg",
            Inst::ClusterArrive { membar: true } => "barrier.cluster.arrive.aligned",
            Inst::ClusterArrive { membar: false } => "barrier.cluster.arrive.relaxed.aligned",
            Inst::ClusterWait => "barrier.cluster.wait.aligned",
            Inst::Compute {
                pipe: Pipe::Mma, ..
            } => "mma.sync",
            _ => return None,
        })
    }
}

/// Why a warp's per-lane address expression gives no addresses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LaneError {
    #[error(transparent)]
    Eval(#[from] EvalError),
    #[error("lane {lane} accesses bytes {start}..{end}, outside {what} ({limit} bytes)")]
    OutOfRange {
        lane: i64,
        start: i64,
        end: i64,
        what: &'static str,
        limit: u64,
    },
}

/// A warp access's byte addresses, one per lane, and the lanes that take part in it (the
/// entries of the others are meaningless).
#[derive(Clone, Copy, Debug)]
pub struct LaneAddrs {
    pub addrs: [u64; WARP_SIZE as usize],
    pub mask: Mask,
}

impl LaneAddrs {
    /// The active lanes' addresses, in lane order.
    pub fn active(&self) -> impl Iterator<Item = u64> + '_ {
        let mask = self.mask;
        self.addrs
            .iter()
            .enumerate()
            .filter(move |(l, _)| mask & (1 << l) != 0)
            .map(|(_, &a)| a)
    }
}

/// The byte addresses of the per-lane expression `addr` for the lanes of `mask`, evaluated over
/// a warp's variables `env` with the `lane` slot set to each lane in turn (and back to 0 after).
/// Each active lane's `width` bytes must lie within `limit` bytes from `base`; `what` names that
/// range. Inactive lanes are neither evaluated for errors nor checked.
pub fn lane_addresses(
    env: &mut [i64],
    addr: &Code,
    mask: Mask,
    base: u64,
    limit: u64,
    width: u32,
    what: &'static str,
) -> Result<LaneAddrs, LaneError> {
    let mut out = LaneAddrs {
        addrs: [base; WARP_SIZE as usize],
        mask,
    };
    let in_range = |lane: usize, a: i64| {
        if a < 0 || a as u64 + width as u64 > limit {
            return Err(LaneError::OutOfRange {
                lane: lane as i64,
                start: a,
                end: a.saturating_add(width as i64),
                what,
                limit,
            });
        }
        Ok(base + a as u64)
    };
    let active = |lane: usize| mask & (1 << lane) != 0;
    if let Some(values) = addr.eval_lanes(env, slot::LANE) {
        let lanes = out.addrs.iter_mut().zip(values).enumerate();
        // The whole warp, the usual case, without a test per lane.
        if mask == FULL {
            for (lane, (o, a)) in lanes {
                *o = in_range(lane, a)?;
            }
        } else {
            for (lane, (o, a)) in lanes.filter(|(lane, _)| active(*lane)) {
                *o = in_range(lane, a)?;
            }
        }
        return Ok(out);
    }
    // Lane by lane: the first failing active lane's error.
    let result = out
        .addrs
        .iter_mut()
        .enumerate()
        .filter(|(lane, _)| active(*lane))
        .try_for_each(|(lane, o)| {
            env[slot::LANE as usize] = lane as i64;
            *o = in_range(lane, addr.eval(env)?)?;
            Ok(())
        });
    env[slot::LANE as usize] = 0;
    result.map(|()| out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{parse, Binding};

    /// `text` compiled with `lane` bound to its slot.
    fn per_lane(text: &str) -> Code {
        Code::compile(&parse(text).unwrap(), &mut |n| {
            (n == "lane").then_some(Binding::Slot(slot::LANE))
        })
        .unwrap()
    }

    #[test]
    fn lane_addresses_cover_the_warp_and_stay_in_range() {
        let mut env = vec![0i64; slot::LANE as usize + 1];
        let a = lane_addresses(
            &mut env,
            &per_lane("lane * 8"),
            FULL,
            1000,
            256,
            8,
            "the slot",
        )
        .unwrap()
        .addrs;
        assert_eq!((a[0], a[31]), (1000, 1000 + 31 * 8));
        assert_eq!(env[slot::LANE as usize], 0);
        let err = lane_addresses(&mut env, &per_lane("lane * 8"), FULL, 0, 255, 8, "the slot");
        assert_eq!(
            err.unwrap_err().to_string(),
            "lane 31 accesses bytes 248..256, outside the slot (255 bytes)"
        );
        assert_eq!(
            env[slot::LANE as usize],
            0,
            "the lane slot is reset on errors too"
        );
        let err = lane_addresses(
            &mut env,
            &per_lane("64 / (3 - lane) + 100"),
            FULL,
            0,
            1 << 20,
            4,
            "x",
        );
        assert!(matches!(err, Err(LaneError::Eval(_))), "{err:?}");
        // Masked-off lanes are neither evaluated nor range-checked: lanes 0..3 only.
        let a = lane_addresses(
            &mut env,
            &per_lane("64 / (3 - lane) * 4"),
            0b111,
            0,
            512,
            4,
            "x",
        )
        .unwrap();
        assert_eq!(a.active().collect::<Vec<_>>(), [84, 128, 256]);
    }

    #[test]
    fn out_of_range_indices_say_which_array() {
        let buf = BufferInfo {
            name: "sA".into(),
            slots: 4,
            dtype: DType::BF16,
            shape: vec![64, 64],
            slot_bytes: 8192,
            base: 128,
            swizzle: 0,
        };
        assert_eq!(buf.slot_offset(3), Ok(128 + 3 * 8192));
        assert_eq!(
            buf.slot_offset(4).unwrap_err().to_string(),
            "slot 4 of `sA` is out of range: it has 4 slots"
        );
        let bar = MBarrierInfo {
            name: "full".into(),
            count: 2,
            arrivals: 1,
            first: 5,
        };
        assert_eq!(bar.flat(1), Ok(6));
        assert_eq!(
            bar.flat(-1).unwrap_err().to_string(),
            "mbarrier index -1 is out of range: `full` has 2 elements"
        );
    }
}
