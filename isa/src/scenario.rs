//! The scenario file: a RON document naming a GPU preset, parameters, a kernel (grid, CTA with
//! warpgroup roles, their register budgets and programs, shared-memory buffers, mbarriers and
//! global tensors) and the analytic prediction to compare against.
//!
//! Expressions and references are written as RON strings (or plain integers) and parsed while the
//! document is read, so a syntax error carries RON's line and column. Each one also gets its
//! position in document order ([`Expr::id`]); a later validation error names that id and
//! [`crate::locate`] recovers the line and column by re-reading the document.

use crate::expr::{self, Ast, RefAst};
use serde::{de, Deserialize, Deserializer};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;

thread_local! {
    /// Document-order counter of spanned nodes (expressions and references) while reading.
    static NEXT_ID: Cell<u32> = const { Cell::new(0) };
    /// When set, reading fails at the spanned node with this id, so RON reports its position.
    static FAIL_AT: Cell<Option<u32>> = const { Cell::new(None) };
}

pub(crate) fn reset_ids(fail_at: Option<u32>) {
    NEXT_ID.with(|c| c.set(0));
    FAIL_AT.with(|c| c.set(fail_at));
}

fn next_id<E: de::Error>() -> Result<u32, E> {
    let id = NEXT_ID.with(|c| {
        let id = c.get();
        c.set(id + 1);
        id
    });
    if FAIL_AT.with(|c| c.get()) == Some(id) {
        return Err(E::custom(crate::LOCATE_MARK));
    }
    Ok(id)
}

/// An integer expression as written in the scenario, with its parsed tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expr {
    pub text: String,
    pub ast: Ast,
    /// Document-order position among the scenario's spanned nodes.
    pub id: u32,
}

impl Expr {
    /// An expression made in code rather than read from a file (no source position).
    pub fn int(v: i64) -> Expr {
        Expr {
            text: v.to_string(),
            ast: Ast::Int(v),
            id: u32::MAX,
        }
    }
}

impl<'de> Deserialize<'de> for Expr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = Expr;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer or an expression string such as \"j % stages\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Expr, E> {
                let id = next_id()?;
                Ok(Expr {
                    text: v.to_string(),
                    ast: Ast::Int(v),
                    id,
                })
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Expr, E> {
                let v = i64::try_from(v).map_err(|_| E::custom("integer too large"))?;
                self.visit_i64(v)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Expr, E> {
                self.visit_i64(v as i64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Expr, E> {
                Err(not_an_integer(v, &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Expr, E> {
                Expr::read(v)
            }
        }
        d.deserialize_any(V)
    }
}

impl Expr {
    /// Parses `text` as the next spanned node of the document being read.
    fn read<E: de::Error>(text: &str) -> Result<Expr, E> {
        let id = next_id()?;
        let ast = expr::parse(text).map_err(E::custom)?;
        Ok(Expr {
            text: text.to_string(),
            ast,
            id,
        })
    }
}

/// The error for a number read as floating point: ron reads an integer literal beyond u64 as
/// one, which is an integer too large, not a fraction.
fn not_an_integer<E: de::Error>(v: f64, expected: &dyn de::Expected) -> E {
    if v.fract() == 0.0 && v.abs() >= i64::MAX as f64 {
        E::custom("integer too large")
    } else {
        E::invalid_type(de::Unexpected::Float(v), expected)
    }
}

/// A reference to an element of a named array (`"full[j % stages]"`, `"sA[s]"`, `"sQ"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ref {
    pub text: String,
    pub parsed: RefAst,
    pub id: u32,
}

impl<'de> Deserialize<'de> for Ref {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let id = next_id()?;
        let parsed = expr::parse_ref(&text).map_err(de::Error::custom)?;
        Ok(Ref { text, parsed, id })
    }
}

/// A parameter's value: an integer (a boolean reads as 1 / 0), or an expression over the other
/// parameters and `num_sms`, evaluated after `--set` overrides (`"bm": "hd <= 64 ? 192 : 128"`),
/// so that a choice that follows from others is written once and still overridable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamValue {
    Int(i64),
    Derived(Expr),
}

impl<'de> Deserialize<'de> for ParamValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = ParamValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer, a boolean or an expression string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ParamValue, E> {
                Ok(ParamValue::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ParamValue, E> {
                i64::try_from(v)
                    .map(ParamValue::Int)
                    .map_err(|_| E::custom("integer too large"))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<ParamValue, E> {
                Ok(ParamValue::Int(v as i64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ParamValue, E> {
                Err(not_an_integer(v, &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ParamValue, E> {
                Expr::read(v).map(ParamValue::Derived)
            }
        }
        d.deserialize_any(V)
    }
}

/// A map whose keys are each written once: a second value for a key is an error, not a silent
/// replacement of the first.
fn unique_keys<'de, D, V>(d: D) -> Result<BTreeMap<String, V>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Unique<V>(std::marker::PhantomData<V>);
    impl<'de, V: Deserialize<'de>> de::Visitor<'de> for Unique<V> {
        type Value = BTreeMap<String, V>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map of strings to values")
        }
        fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some(key) = map.next_key::<String>()? {
                if out.contains_key(&key) {
                    return Err(de::Error::custom(format!(
                        "the key `{key}` is written twice"
                    )));
                }
                let value = map.next_value()?;
                out.insert(key, value);
            }
            Ok(out)
        }
    }
    d.deserialize_map(Unique(std::marker::PhantomData))
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// GPU preset name (`h100-sxm`).
    pub gpu: String,
    /// Preset fields to override, by dotted path: `{"memory.l2.bytes": 25165824}`.
    #[serde(default, deserialize_with = "unique_keys")]
    pub gpu_overrides: BTreeMap<String, ron::Value>,
    #[serde(default, deserialize_with = "unique_keys")]
    pub params: BTreeMap<String, ParamValue>,
    /// Conditions the parameters must meet, checked before anything else: a configuration the
    /// kernel does not support is refused with its reason instead of failing further on.
    #[serde(default)]
    pub requires: Vec<Require>,
    /// Integer tables that expressions read as `name[i]`, computed in order after the
    /// parameters; each may use the parameters, `num_sms` and the tables above it.
    #[serde(default)]
    pub tables: Vec<Table>,
    pub kernel: Kernel,
    /// Kernels launched after `kernel` in the same stream, in order: each starts once the one
    /// before has finished and the launch gap has passed, with the L2 as that one left it.
    #[serde(default)]
    pub then: Vec<Kernel>,
    /// How the kernels of `then` are launched.
    #[serde(default)]
    pub launch: Launch,
    #[serde(default)]
    pub analytic: Option<Analytic>,
}

/// A condition on the parameters and the message that explains a configuration failing it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Require {
    /// An expression over the parameters and `num_sms`; 0 refuses the configuration.
    pub cond: Expr,
    pub message: String,
}

/// An integer table, computed once from the parameters by a documented rule; `len` entries,
/// read in expressions as `name[i]` for `i` in `0..len`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Table {
    /// Entry `i` is `value` with `var` = `i`.
    List {
        name: String,
        len: Expr,
        var: String,
        value: Expr,
    },
    /// Entry `i` is the sum of `value` for `var` in `0..=i` (an inclusive prefix sum: the end of
    /// item `i`'s range when item `var` spans `value` units).
    Prefix {
        name: String,
        len: Expr,
        var: String,
        value: Expr,
    },
    /// Seeded top-k sampling from a Zipf distribution: each of `draws` draws picks `picks`
    /// distinct items of `0..len`, item `i` with weight `1 / (i + 1)^(exponent / 100)`, without
    /// replacement; entry `i` counts the draws that picked item `i` (so the entries sum to
    /// `draws * picks`). The tokens each expert of a mixture-of-experts layer receives when
    /// every token is routed to its top `picks` experts.
    Zipf {
        name: String,
        len: Expr,
        draws: Expr,
        picks: Expr,
        exponent: Expr,
        seed: Expr,
    },
}

impl Table {
    pub fn name(&self) -> &str {
        match self {
            Table::List { name, .. } | Table::Prefix { name, .. } | Table::Zipf { name, .. } => {
                name
            }
        }
    }
}

/// How a sequence of kernels reaches the GPU: one `cudaLaunchKernel` call each, or replayed
/// from a CUDA graph (a shorter gap, and no host launch rate to keep up with).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum Launch {
    #[default]
    Eager,
    Graph,
}

/// The scenario's own closed-form prediction, compared with the simulated cycles.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Analytic {
    /// Predicted cycles (an expression over the parameters).
    pub cycles: Expr,
    /// The resource the prediction says binds (`tensor`, `smem`, `mufu`, `memory`, ...).
    pub bound: String,
    #[serde(default)]
    pub note: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kernel {
    /// The kernel's name in a sequence's report (default: the scenario's name for `kernel`,
    /// `then[i]` for the others).
    #[serde(default)]
    pub name: Option<String>,
    /// Launches the kernel once for each value of a launch parameter, in order, as a host loop
    /// does (one GEMM launch per expert); without it, once.
    #[serde(default)]
    pub launches: Option<Launches>,
    /// Number of CTAs.
    #[serde(default = "one")]
    pub grid: Expr,
    /// CTAs per thread-block cluster (`__cluster_dims__(cluster)`): consecutive CTAs form a
    /// cluster, placed together on one GPC, sharing each other's shared memory (DSMEM), TMA
    /// multicast and the cluster barrier. 1 (the default): no clusters.
    #[serde(default = "one")]
    pub cluster: Expr,
    /// Registers per thread allocated at launch (the compiler's count); `setmaxnreg` moves
    /// registers between warpgroups from this pool.
    pub regs_per_thread: Expr,
    #[serde(default)]
    pub tensors: Vec<Tensor>,
    #[serde(default)]
    pub smem: Vec<Buffer>,
    #[serde(default)]
    pub mbarriers: Vec<MBarrier>,
    /// Global atomic counters (a persistent kernel's tile scheduler).
    #[serde(default)]
    pub counters: Vec<Counter>,
    pub roles: Vec<Role>,
    /// This kernel's own prediction; the scenario's `analytic` is the first kernel's.
    #[serde(default)]
    pub analytic: Option<Analytic>,
}

/// The launches of a kernel: `count` of them (a parameters-only expression, 0 skips the
/// kernel), launch `i` compiled with the parameter `var` = `i`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Launches {
    pub var: String,
    pub count: Expr,
}

/// `count` global integer counters (`name[i]`; one without an index is `name[0]`), each
/// `init` at kernel start, advanced by `AtomicAdd` and awaited by `WaitCounter`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counter {
    pub name: String,
    #[serde(default = "zero")]
    pub init: Expr,
    #[serde(default = "one")]
    pub count: Expr,
}

fn zero() -> Expr {
    Expr::int(0)
}

fn sixty_four() -> Expr {
    Expr::int(64)
}

fn one() -> Expr {
    Expr::int(1)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum DType {
    F8,
    F16,
    BF16,
    F32,
}

impl DType {
    pub fn bytes(self) -> u64 {
        match self {
            DType::F8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::F32 => 4,
        }
    }
}

/// An element type as a scenario writes it: a name, or `Bytes("expr")`, the element's bytes
/// from the parameters (1: F8, 2: BF16, 4: F32), so that a parameter can choose it.
#[derive(Clone, Debug, Deserialize)]
pub enum DTypeSpec {
    F8,
    F16,
    BF16,
    F32,
    Bytes(Expr),
}

/// A row-major tensor in global memory.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tensor {
    pub name: String,
    pub dtype: DTypeSpec,
    /// Extent of each dimension, outermost first.
    pub shape: Vec<Expr>,
    /// 1: the tensor is in L2 when the kernel starts (a warm run, as after an earlier kernel
    /// read it); 0 (the default): it starts in DRAM only.
    #[serde(default = "zero")]
    pub warm: Expr,
}

/// A shared-memory buffer of `slots` equal tiles (a ring buffer when `slots > 1`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Buffer {
    pub name: String,
    #[serde(default = "one")]
    pub slots: Expr,
    pub dtype: DTypeSpec,
    /// Tile extent per dimension, outermost first; also the TMA box of copies into the slot.
    pub shape: Vec<Expr>,
    /// The slots' TMA swizzle in bytes: 0 (none, the default), 32, 64 or 128, as the tensor
    /// map's `CU_TENSOR_MAP_SWIZZLE_*`. A tile row (the innermost dimension) fits in it or is a
    /// whole number of its width (columns of swizzled rows, as CUTLASS's and FlashAttention-3's
    /// tensor maps load a 128-element bf16 row), and the buffer starts on 8 swizzle rows (1024
    /// bytes for the 128-byte swizzle). It sets how fast TMA boxes stream in (the fill rule,
    /// `sim::sm::tma::fill_bytes_per_cycle`).
    #[serde(default = "zero")]
    pub swizzle: Expr,
}

/// An array of `count` mbarriers, each initialized with `arrivals` expected arrivals at CTA start.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MBarrier {
    pub name: String,
    #[serde(default = "one")]
    pub count: Expr,
    pub arrivals: Expr,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Role {
    pub name: String,
    #[serde(default = "one")]
    pub warpgroups: Expr,
    /// Registers per thread this role runs with. If it differs from the kernel's launch
    /// allocation, the program must reach it with `setmaxnreg`.
    pub regs: Expr,
    /// Values each thread keeps live across the program besides its wgmma accumulators (a
    /// parameter-only constant). Stating it gives the role a register estimate (these, the
    /// accumulators and the preset's baseline); what exceeds `regs` is spilled to local memory.
    /// Without it no register use is checked.
    #[serde(default)]
    pub live: Option<Expr>,
    pub program: Vec<Instr>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum ComputePipe {
    Alu,
    Fma,
    Mufu,
    Shfl,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum RegAction {
    Inc,
    Dec,
}

/// The scope of an arrive's release semantics (PTX `.release.cta` / `.release.cluster`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum Scope {
    /// Release at CTA scope: the arrive alone.
    #[default]
    Cta,
    /// Release at cluster scope: a GPU-scope memory barrier (MEMBAR.ALL.GPU) before the arrive.
    Cluster,
}

/// The highest cache level a global load may be served from and allocate in (PTX's cache
/// operator).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum Cache {
    /// `ld.global` / `ld.global.ca` (sm_90's default for plain loads): the SM's L1, then L2.
    #[default]
    L1,
    /// `ld.global.cg` (`__ldcg`), and volatile or `.relaxed`/`.acquire` loads at GPU scope:
    /// L2 only.
    L2,
}

/// How a `Wait` loop polls its mbarrier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum Poll {
    /// `mbarrier.try_wait`: the thread is suspended until the phase completes.
    #[default]
    Try,
    /// `mbarrier.test_wait`: returns at once; the loop spins, one test per iteration.
    Test,
}

/// Where a wgmma's A operand comes from.
#[derive(Clone, Debug, Deserialize)]
pub enum AOperand {
    /// Shared memory (the SS form): read through the shared-memory port.
    Smem(Ref),
    /// Registers (the RS form).
    Regs,
}

/// One instruction of the tile ISA, or a structured control construct.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Instr {
    /// TMA load of one box (the slot's shape) at element `coords` of `tensor` into `dst`;
    /// its bytes complete on the mbarrier `bar` (complete-tx). With `multicast`, a mask over
    /// the cluster's CTA ranks (`.multicast::cluster`'s ctaMask): the box lands in `dst` of
    /// each of those CTAs and completes on each one's `bar`. With `part: (i, n)`, the box is
    /// part `i` of `n` of the slot's rows (the dimension above the innermost), as a CTA of a
    /// cluster loads its share of a multicast tile; `n` is a parameter-only expression.
    TmaLoad {
        tensor: String,
        coords: Vec<Expr>,
        dst: Ref,
        bar: Ref,
        #[serde(default)]
        multicast: Option<Expr>,
        #[serde(default)]
        part: Option<(Expr, Expr)>,
    },
    /// TMA store of the slot `src` to element `coords` of `tensor` (a bulk async-group op).
    TmaStore {
        tensor: String,
        coords: Vec<Expr>,
        src: Ref,
    },
    /// Closes the warp's uncommitted TMA stores into a bulk async-group.
    TmaStoreCommit,
    /// Waits until at most `n` of the warp's bulk async-groups are pending.
    TmaStoreWait(Expr),
    /// mbarrier arrive; by every thread of the warp (32 arrivals) or, with `elect`, by one.
    /// With `cta`, on that cluster rank's mbarrier (`mapa` + a `shared::cluster` arrive). With
    /// `ranks`, a mask of cluster ranks: one lane for each rank arrives on that rank's mbarrier
    /// (one arrival each), all in one instruction, as CUTLASS's consumers release a stage to
    /// the CTAs that multicast into it. `scope` is its release's: `Cta` (PTX's default,
    /// CUTLASS's `ClusterBarrier::arrive`) or `Cluster` (`.release.cluster`, which puts a
    /// GPU-scope memory barrier before the arrive).
    Arrive {
        bar: Ref,
        #[serde(default)]
        elect: bool,
        #[serde(default)]
        cta: Option<Expr>,
        #[serde(default)]
        ranks: Option<Expr>,
        #[serde(default)]
        scope: Scope,
    },
    /// One elected thread: expect-tx(`bytes`) then arrive (1 arrival).
    ArriveExpectTx {
        bar: Ref,
        bytes: Expr,
    },
    /// expect-tx(`bytes`) without arriving.
    ExpectTx {
        bar: Ref,
        bytes: Expr,
    },
    /// mbarrier wait loop (`try_wait.parity`, or `test_wait.parity` with `poll: Test`): passes
    /// once the phase with parity `parity` has completed.
    Wait {
        bar: Ref,
        parity: Expr,
        #[serde(default)]
        poll: Poll,
    },
    /// Warpgroup MMA of `m` rows (m/64 m64nNk16 HGMMAs per k16 step), repeated `ksteps` times,
    /// fp32 accumulators.
    Wgmma {
        #[serde(default = "sixty_four")]
        m: Expr,
        n: Expr,
        #[serde(default = "one")]
        ksteps: Expr,
        a: AOperand,
        b: Ref,
        /// Label of the accumulator registers (for diagnostics).
        #[serde(default)]
        acc: Option<String>,
    },
    WgmmaFence,
    WgmmaCommit,
    /// Waits until at most `n` of the warpgroup's wgmma groups are pending.
    WgmmaWait(Expr),
    /// Named barrier: arrive with this warp's 32 threads and wait until `threads` have arrived.
    BarSync {
        id: Expr,
        threads: Expr,
    },
    /// Named barrier: arrive with this warp's 32 threads without waiting.
    BarArrive {
        id: Expr,
        threads: Expr,
    },
    /// Changes this warp's per-thread register ceiling.
    SetMaxNReg {
        action: RegAction,
        regs: Expr,
    },
    /// Integer ALU work: this many instructions per thread.
    Alu(Expr),
    /// FP32 FMA/FADD/FMUL work: this many instructions per thread.
    Fma(Expr),
    /// Special-function (MUFU: ex2, rcp, ...) work: this many instructions per thread.
    Mufu(Expr),
    /// Warp shuffles (`shfl.sync`: bfly, idx, up, down): this many per thread, independent of
    /// each other; the next instruction waits for the last one's result.
    Shfl(Expr),
    /// `count` instructions per thread on `pipe`, like `Alu`/`Fma`/`Mufu`, that read and write
    /// the wgmma accumulator registers `acc` (a softmax rescale of O, an epilogue): the
    /// sanitizer checks no wgmma writing them is still in flight.
    Compute {
        pipe: ComputePipe,
        count: Expr,
        #[serde(default)]
        acc: Option<String>,
    },
    /// A compiled block of independent instructions on several pipes, interleaved as the
    /// compiler schedules them: `alu`, `fma`, `mufu` and `shfl` warp-instructions on their
    /// pipes and `uniform` ones (uniform datapath: UMOV, UIADD3, R2UR) with an issue slot only,
    /// spread evenly, issued no faster than `stalls` cycles over the block (what a warp alone
    /// takes to issue it: its SASS stall counts and its waits for MUFU and SHFL results; 0:
    /// only the pipes pace it). `acc` as for `Compute`.
    Mix {
        #[serde(default = "zero")]
        alu: Expr,
        #[serde(default = "zero")]
        fma: Expr,
        #[serde(default = "zero")]
        mufu: Expr,
        #[serde(default = "zero")]
        shfl: Expr,
        #[serde(default = "zero")]
        uniform: Expr,
        #[serde(default = "zero")]
        stalls: Expr,
        #[serde(default)]
        acc: Option<String>,
    },
    /// Shared-memory load; `addr` is each lane's byte offset in the slot (may use `lane`).
    /// With `sb`, its result goes to that one of the warp's six scoreboards (0 to 5), which
    /// only `WaitScoreboard` waits for. With `cta`, the slot of that cluster rank's shared
    /// memory (`ld.shared::cluster`, distributed shared memory).
    LdShared {
        buf: Ref,
        addr: Expr,
        #[serde(default = "four")]
        width: Expr,
        #[serde(default)]
        sb: Option<u8>,
        #[serde(default)]
        cta: Option<Expr>,
    },
    /// Shared-memory store; `cta` as for `LdShared`.
    StShared {
        buf: Ref,
        addr: Expr,
        #[serde(default = "four")]
        width: Expr,
        #[serde(default)]
        cta: Option<Expr>,
    },
    /// `barrier.cluster.arrive` by every thread of the warp: a release, so a GPU-scope memory
    /// barrier comes first (CUTLASS's `cluster_arrive()`, `cluster_sync()`).
    ClusterArrive,
    /// `barrier.cluster.arrive.relaxed`: the arrive without the memory barrier (CUTLASS's
    /// `cluster_arrive_relaxed()`, as its kernels' prologues use).
    ClusterArriveRelaxed,
    /// `barrier.cluster.wait` (acquire): waits until every warp of every CTA of the cluster has
    /// arrived in the current phase.
    ClusterWait,
    /// Global load; `addr` is each lane's byte offset in the tensor (may use `lane`); `sb` as
    /// for `LdShared`; `cache` the highest level it may hit in (`L1`, the default, or `L2`).
    LdGlobal {
        tensor: String,
        addr: Expr,
        #[serde(default = "four")]
        width: Expr,
        #[serde(default)]
        sb: Option<u8>,
        #[serde(default)]
        cache: Cache,
    },
    /// Waits, without an issue slot, for the loads on these scoreboards (SASS: the wait mask
    /// of the instruction that reads their results).
    WaitScoreboard(Vec<u8>),
    /// A constant-memory load (SASS LDC: a kernel parameter or `__constant__` word) whose result
    /// goes to scoreboard `sb`.
    Ldc {
        sb: u8,
    },
    /// A special-register read (SASS S2R: `%ctaid`, `%tid`, ...) whose result goes to
    /// scoreboard `sb`.
    S2r {
        sb: u8,
    },
    /// The compiler's stall count: the warp issues nothing for this many cycles (no issue slot).
    Stall(Expr),
    StGlobal {
        tensor: String,
        addr: Expr,
        #[serde(default = "four")]
        width: Expr,
    },
    /// Binds `var` to `value` for the rest of the enclosing block (no issue slot).
    Let {
        var: String,
        value: Expr,
    },
    /// Gives the variable that a `Let` of an enclosing block bound a new value, for the rest of
    /// the warp's run of that block (a running sum across loop iterations).
    Assign {
        var: String,
        value: Expr,
    },
    /// Leaves the innermost loop.
    Break,
    /// `atomicAdd` on a global counter; the old value is bound to `into` for the rest of the
    /// block. The CTA's first warp to reach its k-th `AtomicAdd` on a counter performs it; the
    /// CTA's other warps get the same value (one thread fetches, the CTA shares it).
    AtomicAdd {
        counter: Ref,
        #[serde(default = "one")]
        add: Expr,
        into: String,
    },
    /// Spins until global counter `counter` is at least `value` (a `ld.acquire.gpu` loop on a
    /// flag, as stream-K's fix-up waits for its peers' partial tiles).
    WaitCounter {
        counter: Ref,
        value: Expr,
    },
    /// `fence.acq_rel.gpu` (`__threadfence()`): the warp waits until its global stores are
    /// acknowledged, so that a later `AtomicAdd` releases them, then for the memory barrier.
    Fence,
    /// `fence.proxy.async.shared::cta`: the warp waits until its shared-memory stores are
    /// written, so that the async proxy (a wgmma's operand reads, a TMA store) sees them.
    FenceProxyAsync,
    /// Ampere `cp.async`: each lane copies `width` bytes (4, 8 or 16) from byte `src` of
    /// `tensor` to byte `addr` of the slot `dst`, asynchronously (both may use `lane`).
    CpAsync {
        tensor: String,
        src: Expr,
        dst: Ref,
        addr: Expr,
        #[serde(default = "sixteen")]
        width: Expr,
    },
    /// `cp.async.commit_group`.
    CpAsyncCommit,
    /// `cp.async.wait_group n`: at most `n` of the warp's cp.async groups pending.
    CpAsyncWait(Expr),
    /// Synchronous warp-level `mma.sync.m16n8k16` (16-bit inputs, fp32 accumulators) on the
    /// partition's tensor core: this many independent instructions.
    Mma(Expr),
    /// Runs `body` `count` times with `var` = 0, 1, ...
    Loop {
        var: String,
        count: Expr,
        body: Vec<Instr>,
    },
    If {
        cond: Expr,
        then: Vec<Instr>,
        #[serde(default, rename = "else")]
        otherwise: Vec<Instr>,
    },
}

fn four() -> Expr {
    Expr::int(4)
}

fn sixteen() -> Expr {
    Expr::int(16)
}

impl Instr {
    /// The mnemonic used in messages and docs.
    pub fn mnemonic(&self) -> &'static str {
        match self {
            Instr::TmaLoad { .. } => "tma_load",
            Instr::TmaStore { .. } => "tma_store",
            Instr::TmaStoreCommit => "tma_store_commit",
            Instr::TmaStoreWait(_) => "tma_store_wait",
            Instr::Arrive { .. } => "mbarrier.arrive",
            Instr::ArriveExpectTx { .. } => "mbarrier.arrive_expect_tx",
            Instr::ExpectTx { .. } => "mbarrier.expect_tx",
            Instr::Wait { .. } => "mbarrier.wait",
            Instr::Wgmma { .. } => "wgmma",
            Instr::WgmmaFence => "wgmma.fence",
            Instr::WgmmaCommit => "wgmma.commit_group",
            Instr::WgmmaWait(_) => "wgmma.wait_group",
            Instr::BarSync { .. } => "bar.sync",
            Instr::BarArrive { .. } => "bar.arrive",
            Instr::SetMaxNReg { .. } => "setmaxnreg",
            Instr::Alu(_) => "alu",
            Instr::Fma(_) => "fma",
            Instr::Mufu(_) => "mufu",
            Instr::Shfl(_) => "shfl",
            Instr::Compute { .. } => "compute",
            Instr::Mix { .. } => "mix",
            Instr::LdShared { .. } => "ld.shared",
            Instr::StShared { .. } => "st.shared",
            Instr::ClusterArrive => "barrier.cluster.arrive",
            Instr::ClusterArriveRelaxed => "barrier.cluster.arrive.relaxed",
            Instr::ClusterWait => "barrier.cluster.wait",
            Instr::LdGlobal { .. } => "ld.global",
            Instr::WaitScoreboard(_) => "wait scoreboard",
            Instr::Ldc { .. } => "ldc",
            Instr::S2r { .. } => "s2r",
            Instr::Stall(_) => "stall",
            Instr::StGlobal { .. } => "st.global",
            Instr::Let { .. } => "let",
            Instr::Assign { .. } => "assign",
            Instr::Break => "break",
            Instr::AtomicAdd { .. } => "atom.add",
            Instr::WaitCounter { .. } => "wait counter",
            Instr::Fence => "fence.acq_rel.gpu",
            Instr::FenceProxyAsync => "fence.proxy.async",
            Instr::CpAsync { .. } => "cp.async",
            Instr::CpAsyncCommit => "cp.async.commit_group",
            Instr::CpAsyncWait(_) => "cp.async.wait_group",
            Instr::Mma(_) => "mma.sync",
            Instr::Loop { .. } => "loop",
            Instr::If { .. } => "if",
        }
    }
}
