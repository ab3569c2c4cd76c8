//! The groups of rows and how each is judged: a relative bound on the mean error, exact
//! equality, or reported only, with the reason the model lacks the mechanism.

use serde::Serialize;

/// How a group's rows are judged.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Mean |simulated / measured − 1| at most this.
    Relative(f64),
    /// Every row equal (integers, such as bank-conflict wavefronts).
    Exact,
    /// Reported, not judged: the model lacks the mechanism (the reason is the group's note).
    None,
}

pub(super) struct Group {
    pub(super) name: &'static str,
    pub(super) bound: Bound,
    pub(super) note: &'static str,
}

pub(super) const GROUPS: &[Group] = &[
    Group {
        name: "wgmma",
        bound: Bound::Relative(0.05),
        note:
            "cycles per wgmma m64nNk16, back to back, SS all N and RS N >= 32, 1 and 2 warpgroups",
    },
    Group {
        name: "wgmma_rs_floor",
        bound: Bound::Relative(0.05),
        note: "cycles per RS wgmma m64nNk16 at N = 8, 16, 24, 1 and 2 warpgroups: the SM's \
               pipe takes an RS HGMMA at most every 13 cycles (tensor.rs_min_cycles), above \
               its math (N/2)",
    },
    Group {
        name: "wgmma_dtype",
        bound: Bound::Relative(0.05),
        note: "cycles per SS wgmma m64nNk32 e4m3 and m64nNk8 tf32 (N = 64, 128, 256), back to \
               back, 1 and 2 warpgroups (an H100, h100-wgmma_dtype.csv): each takes a k16 bf16 \
               wgmma's cycles, so e4m3 runs at twice bf16's FLOP rate and tf32 at half",
    },
    Group {
        name: "smem_port",
        bound: Bound::Relative(0.05),
        note: "cycles per SS wgmma m64nNk16 (N = 32 to 256, 1 and 2 warpgroups) while a TMA \
               stream of 32 KiB boxes writes other shared-memory slots at ~93 B/cycle",
    },
    Group {
        name: "pipes",
        bound: Bound::Relative(0.05),
        note: "FFMA and MUFU.EX2 warp-instructions per cycle per SM; mma.sync m16n8k16 per \
               cycle per SM from 1 to 16 warps",
    },
    Group {
        name: "smem_banks",
        bound: Bound::Exact,
        note: "shared-memory wavefronts per warp-load vs width and lane stride; a broadcast \
               (every lane the same address) takes 1 wavefront up to 8 bytes and 2 at 16: \
               16-byte loads go in half-warp phases",
    },
    Group {
        name: "bandwidth",
        bound: Bound::Relative(0.10),
        note: "shared memory, L2 (every SM reading one buffer, 1 to 132 SMs) and HBM reads \
               (66 and 132 SMs) bytes per cycle",
    },
    Group {
        name: "latency",
        bound: Bound::Relative(0.15),
        note: "dependent-issue latencies (FFMA, MUFU, LDS, LDG L2 hit and miss), wgmma \
               issue-to-wait, mbarrier hand-off, TMA load to mbarrier wake",
    },
    Group {
        name: "l1_cache",
        bound: Bound::Relative(0.15),
        note: "one thread's pointer chase, a line per 128 bytes, over 8 to 384 KiB (an H100, \
               h100-l1_cache.csv: the same SM as the H200): plain loads hit the L1 in 38.9 \
               cycles a hop while the footprint fits, to 192 KiB with the least shared-memory \
               carveout (248 KB of L1) and to 16 KiB with the most (28 KB); .cg loads take the \
               L2's 283-290 at every footprint, as plain ones far past the capacity. Between, \
               the knee of 4 ways in hashed sets: 86.5 cycles at 224 KiB against the chip's \
               73.8, 163 at 256 against 173, 191 at 32 KiB of 28 KB against 217",
    },
    Group {
        name: "wgmma_in_flight",
        bound: Bound::Relative(0.15),
        note: "one warpgroup: k = 1 to 32 back-to-back wgmma m64nNk16 (N = 64, 128, 256), \
               commit, wait_group 0: cycles until the wait returns",
    },
    Group {
        name: "l2_disjoint",
        bound: Bound::Relative(0.10),
        note: "132 SMs reading disjoint L2-resident data (16 to 48 MiB, and a 32 MiB buffer): \
               ~4300 B/cycle GPU-wide, the slices' reads of distinct lines; all SMs re-reading \
               one buffer get 7446 (bandwidth), as a line asked for again soon after its last \
               read-out shares it",
    },
    Group {
        name: "l2_few_sms",
        bound: Bound::None,
        note: "not modeled: 1 to 66 SMs reading disjoint slices of a 32 MiB L2-resident buffer \
               (mem.cu's slice_read, the twin following its SASS: 99 instructions a trip of 8 \
               loads) get 50-60 B/cycle each on the H200, 83 in the model; one SM reads 98 B/cycle \
               from footprints up to 16 MiB and 71-78 from 32 MiB (h200-memsys.csv, \
               inflight_l2_fp). The footprint in bytes sets it, not the address range: 8 MiB spread \
               over 16 to 256 MiB of addresses streams and chases as contiguous data, and a \
               stream's rate falls 10% between 28 and 36 MiB, half the L2 (h200-l2_pages.csv); \
               which part of the L2 a single SM's lines fill is not yet known",
    },
    Group {
        name: "l2_capacity",
        bound: Bound::Relative(0.10),
        note: "132 SMs re-reading 64 and 128 MiB: past the L2's 60 MiB almost nothing stays \
               (SRRIP, not thrash-resistant, as the chip's knee between 50 and 64 MiB shows in \
               h200-mem_knee.csv)",
    },
    Group {
        name: "hbm_write_mix",
        bound: Bound::Relative(0.10),
        note: "132 CTAs mixing streaming loads and stores 4:0 to 0:4 (h200-memsys.csv hbm_mix: \
               2045, 1843, 1936, 1913, 2234 B/cycle) and a copy (mem_bw hbm_copy: 1544): a \
               channel drains posted writes 4 KiB at a time and loses 12 cycles per switch of \
               its bus between reading and writing (memory.hbm.turnaround_cycles). The loss is \
               proportional to the writes in the model, about flat (10-12%) on the chip, so \
               r3w1 is 15% fast; the copy (loads, then dependent stores to a buffer 4 GiB \
               away) loses 30% on the chip, the model 12%: not explained by one turnaround",
    },
    Group {
        name: "hbm_few_sms",
        bound: Bound::Relative(0.10),
        note: "1 to 33 SMs reading DRAM (mem_bw hbm_read: 47 B/cycle per SM up to 16 SMs) with \
               mem_bw's read kernel as compiled (the twin follows its SASS, sm90a-sass-loops.txt): \
               a warp's 16-byte loads of 4 lines wait for the slowest, in the far L2 partition \
               (memory.hbm.far_latency); 33 SMs are 16% fast",
    },
    Group {
        name: "dram_granularity",
        bound: Bound::Relative(0.10),
        note: "bytes DRAM reads for isolated reads at random addresses over the bytes asked \
               for: 2.0x for 32 bytes, 1.0x for 64 (sector.cu under Nsight Compute): a fill \
               moves the touched sectors in aligned pairs (memory.hbm.fetch_bytes 64). Whole \
               128-byte lines read 16 bytes at a time move 1.29x on the chip (refetched lines), \
               not modeled",
    },
    Group {
        name: "inflight",
        bound: Bound::Relative(0.10),
        note: "one SM reading with T threads x U loads of 16 B per warp-iteration (h200-memsys.csv \
               inflight_hbm, inflight_l2), the twin following probe_read<U>'s SASS instruction by \
               instruction (12 to 99 instructions a trip; LDC, S2R and LDG on their scoreboards; \
               calibration/twin.py): from L2 within 5% up to 16 warps and at 32 warps with U = 1, \
               4; 32 warps with U = 4 and 8 are 15-20% slow (98.8 and 99.2 B/cycle on the chip, 79 \
               and 85: the model's first-come SM port and L1 queue); from DRAM 2-8% fast with few \
               loads in flight and 12-18% with 8 to 32 warps at U = 2 and 4 (the chip's latency \
               grows with the loads in flight: 790, 860-960, 930-1110 cycles an iteration at U = 1, \
               2, 4)",
    },
    Group {
        name: "named_barrier",
        bound: Bound::Relative(0.15),
        note: "cycles per bar.sync of 4 to 32 warps: the release costs 12 + 2 cycles per \
               participating warp",
    },
    Group {
        name: "softmax",
        bound: Bound::Relative(0.10),
        note: "cycles per online-softmax step of an attention consumer warp (FMNMX, SHFL.BFLY, \
               MUFU.EX2, FMUL/FADD/FFMA, F2FP as compiled), alone and beside back-to-back wgmma \
               of another warpgroup (each math instruction beside an HGMMA holds the issue port \
               1.35 more cycles); the twin is the SASS loop's stretches between its dependences, \
               each a Mix of its instructions at what a warp alone takes to issue it \
               (calibration/issue_time.py: 880 cycles of stall counts and 122 of MUFU and SHFL \
               waits a step); two warps a partition beside wgmma: softmax_pair",
    },
    Group {
        name: "softmax_pair",
        bound: Bound::None,
        note: "not modeled: 8 softmax warps (two a partition, as an attention kernel's two \
               consumer warpgroups) beside another warpgroup's back-to-back wgmma take 2,563 (SS) \
               and 2,583 (RS) cycles a step on the chip (h100-softmax.csv, an H100: the same \
               SM), 1.66x their 1,542 alone there, as 4 warps' steps beside it are 1.57x \
               theirs: about one more cycle of the partition's issue for each math instruction \
               whether one or two warps issue them. The model gives 1,908: its issue-port hold beside HGMMAs \
               (tensor.issue_beside_hgmma) hides in the two warps' stall counts. A candidate \
               for what FA3 loses in its softmax beside the other warpgroup's GEMMs",
    },
    Group {
        name: "hgmma_beside",
        bound: Bound::Relative(0.25),
        note: "cycles the softmax steps of 4 warps add to each of another warpgroup's \
               back-to-back wgmma m64n128k16: 9.1 (SS) and 5.9 (RS) on the chip; each ALU, FMA \
               or MUFU instruction issued beside an HGMMA holds the tensor pipe \
               tensor.hgmma_beside_issue (0.08) more cycles, 6.8 for both forms: why the chip's \
               RS form loses less (its softmax runs 6% slower beside it) is not modeled, hence \
               the wide bound. Alone these wgmmas take 73.9 (SS) and 71.8 (RS) cycles in \
               groups of 8 against 64.3 in groups of 32 (h200-wgmma.csv), 64 in the model: not \
               yet explained either. Beside 8 softmax warps (two a partition; h100-softmax.csv) the chip adds 17.1 \
               (SS) and 14.4 (RS), the model 17.3 to both",
    },
    Group {
        name: "attention",
        bound: Bound::Relative(0.15),
        note: "whole kernel: FLOP per SM-cycle of cuDNN's FA3-class attention forward (head dim \
               128) against the twin of its SASS schedule, steady state",
    },
    Group {
        name: "mbarrier_ops",
        bound: Bound::Relative(0.15),
        note: "cycles per operation of one issuing thread (calibration/mbar_cost.cu): a wait \
               on a completed phase 76, 125 right after a TMA issue \
               (tma.wait_after_issue_cycles 49), arrive 6, arrive.expect_tx 8, a 1-row TMA \
               load's round trip from L2 on one or two mbarriers",
    },
    Group {
        name: "tma_issue",
        bound: Bound::Relative(0.10),
        note: "cycles a loop iteration of one thread issuing TMA loads \
               (calibration/mbar_cost.cu): back-to-back 1-row loads every 44.7 cycles, the \
               compiled sequence of one cp.async.bulk.tensor (10 instructions, 44 cycles of \
               stall counts: tma.thread_cycles), 48.7 with an arrive.expect_tx each; a 4-stage \
               stream of 16 KiB boxes refilled by one thread 225 a stage, the twin adding the \
               loop's own test and increment (52 cycles of stall counts in its SASS) to the \
               wait, the arrive and the load",
    },
    Group {
        name: "tma_pair",
        bound: Bound::Relative(0.15),
        note: "one thread's TMA box from L2 (calibration/tma_box.cu): from before its \
               arrive.expect_tx to its wait's return, alone and as the second of a pair on two \
               mbarriers, 1 to 256 rows of 128 B, contiguous (c) or a GEMM operand's swizzled \
               k-tile box (s; the model does not tell them apart). The chip takes 368 cycles \
               for one row and streams a box at 104 to 119 B/cycle after it; the model is 12 \
               to 88 cycles longer (its mbarrier wake, 103 cycles, fitted to two warps handing \
               phases over). In gemm_ws.cu's ring the chip's consumers see two such boxes about \
               700 cycles after the producer's wake (ws_stamp), 45 more than the issuing thread \
               sees them here, and the model matches that ring within 1% (tma_ring)",
    },
    Group {
        name: "tma_burst",
        bound: Bound::None,
        note: "not modeled: one thread issuing a burst of boxes on one mbarrier \
               (calibration/tma_box.cu, cycles a box adds): up to 2 KiB boxes every 60 cycles, \
               of which the SASS's stall counts are 51 (the twin's 44 of tma.thread_cycles and \
               7 of address math) and the rest the branch after each UTMALDG waiting for the \
               unit to read its operands, 2 cycles after it where tma_onebar's waits 25; 16 KiB \
               boxes every 152 contiguous or swizzled (the model 172 and 152: its fill rule, \
               95 and 108 B/cycle, from streams of 1024 boxes); but 8 KiB boxes of contiguous \
               rows every 91 where the swizzled GEMM-operand boxes take 60 (above the fill \
               rule's rate over a burst of 8), and 32 KiB contiguous boxes every 428 (77 \
               B/cycle) where the swizzled ones take 336 and the model 345 and 304: what sets \
               a short burst's rate apart from a stream's is not known",
    },
    Group {
        name: "tma_unit",
        bound: Bound::Relative(0.15),
        note: "the SM's TMA unit (calibration/tma_box.cu unit): lane 0 of 16 or 32 warps \
               each issuing a burst on its own mbarrier, the SM's cycles a box. 1-row boxes \
               come every 5.5 cycles from 32 warps (5.2 in an earlier run; tma.issue_cycles \
               5), 2 KiB boxes every 22 (89-94 B/cycle; the fill rule: 95 without swizzle, 108 \
               with, where the chip's swizzled 2 KiB boxes take 22 as well); with 1, 2, \
               4 and 8 warps every 60, 31, 15 and 7.4 cycles, each thread's own sequence \
               (tma_burst), and the 8-warp rows of 2 KiB boxes moved 20-26% between two runs \
               (2 boxes a warp more), so they are left out. The unit takes boxes in the order \
               warps issue them: with the warps of one partition served last whenever the \
               unit was free (a retry in partition order), 16 warps got 6.7 cycles a box. Not \
               modeled: swizzled 2 KiB boxes fill no faster than unswizzled ones (a cost a \
               box?)",
    },
    Group {
        name: "tma_store",
        bound: Bound::Relative(0.15),
        note: "TMA stores (calibration/tma_box.cu unit, tma_storew): lane 0 of 1 to 32 warps \
               each storing a burst of boxes of contiguous rows, committing and waiting for \
               them, the SM's cycles a store. 2 KiB stores take 64.3-64.5 cycles each from any \
               number of warps (tma.store_bytes_per_cycle 32), 128 B stores 4.3 from 16 or 32 \
               warps (the unit) and 40.5 from one (its own sequence, below the 52 cycles of \
               stall counts in its SASS: the twin adds nothing to the 44 of a TmaStore). Not \
               modeled: 128 B stores from 16 and 32 warps at 4.3 cycles where the model's \
               unit, fitted to loads (5.2-5.5), gives 5.0, and a store's completion, about \
               210 cycles later in the model than on the chip (its writes' L2 round trip)",
    },
    Group {
        name: "dram_box",
        bound: Bound::None,
        note: "not modeled: one TMA box from DRAM takes 836 to 934 cycles for 128 B to 4 KiB of \
               contiguous rows, then 1166 at 8 KiB and 1403 at 16 KiB (1461 at 32 KiB); boxes of \
               rows 8 KiB apart jump from 884 to 1244 cycles between 8 and 16 rows \
               (h200-dram_map.csv). The model (a box waits for its slowest line, the far \
               partition's misses 186 cycles longer) grows it from 760 to 1044. One thread's \
               stream of 16 KiB boxes from DRAM with 1, 2 and 4 in flight (tma.cu tma_bw_hbm) \
               gets 14.1, 26.4 and 49.1 B/cycle, the model 12 to 28% more. How DRAM pages and \
               channels hold a box is not yet known",
    },
    Group {
        name: "wgmma_arb",
        bound: Bound::Relative(0.15),
        note: "two warpgroups of one CTA each issue a group of back-to-back wgmma m64nNk16 \
               (calibration/wgmma_arb.cu) against the model's window of 7 HGMMAs shared by the \
               SM's warpgroups (tensor.hgmma_window_per_sm), a freed place going to a waiting \
               warpgroup that holds places before one that holds none. A warpgroup that starts \
               138 to 358 cycles into another's 16 HGMMAs, when that one's 7 are in flight, \
               waits for all of them (its 4 complete at 1360 cycles, the model 1337; the other's \
               at 1090, 1081), and two started together share the pipe (the 4 of one that \
               starts 2 cycles later done at 516, the model 569). Off: one that starts 74 to 127 \
               cycles into another's 8 gets places on the chip (the first done at 806 instead of \
               583), where the model's first warpgroup has filled the window by then (569), and \
               the 4 that start 285 cycles into 32 get in at about the 26th on the chip (1806), \
               after all 32 in the model (2361). Which of two started together goes first \
               changed between builds of the same code",
    },
    Group {
        name: "fa3",
        bound: Bound::Relative(0.15),
        note: "whole kernel (calibration/fa3.cu, written after FlashAttention-3's mainloop): \
               cycles per KV block of one CTA (head dim 128, blocks of 128, 2 or 3 K/V stages) \
               with ping-pong and intra-warpgroup overlap, and with each or both off, against \
               fa3_pingpong.ron at bn 128, whose consumers run FA3's own SASS (fa3.cu's compiles \
               its softmax after its P V wait too, as FA3's does). Without ping-pong the chip's \
               consumers settle into alternation (2,525 cycles, this build) or into lockstep \
               (3,102, an earlier build of the same code: h200-fa3_first.csv, and 3,112 rebuilt \
               unchanged: h200-fa3_rebuild.csv). The model is 9-17% fast: the stamps (fa3_stamp) \
               show warpgroup 0's softmax taking 1,696 cycles beside warpgroup 1's GEMMs and \
               warpgroup 1's 1,208 where a warp alone issues it in 696 (calibration/issue_time.py \
               on the traced build), more than the measured cost of math beside HGMMAs; the chip \
               gains 4.4% from a third stage with both techniques, the model nothing",
    },
    Group {
        name: "fa3_real",
        bound: Bound::Relative(0.15),
        note: "whole kernel: FlashAttention-3 itself (its hopper/ source built with each \
               technique on or off, calibration/fa3_real.cu; bf16, no cluster; at head dim 128 \
               2048 tiles of 128 x 176 on 132 SMs), FLOP per SM-cycle at each build's NVML \
               clock over the busiest SM's tiles, against fa3_pingpong.ron's steady state, its \
               consumers FA3's own SASS as Mix blocks (calibration/fa3_sass.sh). On the H200 \
               ping-pong adds 0.5% at 8k and 0.9% at 16k when intra-warpgroup overlap is on \
               (the model: 0.1%), and intra-warpgroup overlap 8.9% and 10.7% with ping-pong \
               (the model 9.9%); without both 9.4% of the rate is lost at 8k and 20.0% at 16k, \
               where the warpgroups fall into step (the model 22.7%). The model is 12-15% fast with either \
               technique on at head dim 128 against these rows, 3-4% against the cycles Nsight \
               Compute counts for the same builds (fa3_cycles): NVML's clock, this group's \
               basis, reads 11-14% above the cycles the kernel runs. At head \
               dim 64 (192 x 192 tiles, 3 consumer warpgroups, P through shared memory for an SS \
               P V as FA3 runs it there, pv_smem) ping-pong adds 19% on the chip and costs \
               3% in the model, whose warpgroups never fall into step without it; at 256 (128 x 80, no ping-pong, as FA3 runs it) the \
               model is 7-9% fast, 13-16% without intra-warpgroup overlap",
    },
    Group {
        name: "fa3_cycles",
        bound: Bound::Relative(0.15),
        note: "whole kernel: FlashAttention-3 itself (fa3_real's builds, head dim 128, seqlen \
               8k, with and without intra-warpgroup overlap) in the SM cycles Nsight Compute \
               counts (calibration/fa3_ncu.sh, h100-fa3_ncu.csv: an H100, whose SM is the \
               H200's), not at NVML's clock: 3,422 and 3,154 FLOP per SM-cycle, 11-14% more \
               than the same builds timed back to back at NVML's clock on that H100, the basis \
               of fa3_real. The intra-warpgroup overlap gain in cycles: 1.085 (the model 1.099)",
    },
    Group {
        name: "gemm_ws",
        bound: Bound::Relative(0.05),
        note: "whole kernel (calibration/gemm_ws.cu): cycles per k-tile of one CTA of \
               gemm_ws's structure with A and B in L2, at 1 and 3 to 6 stages (BN 128) and 1, \
               3 and 4 (BN 256): 1284 cycles with one stage at BN 128 (a stage's round trip and \
               its wgmmas; the model 1355, 5.6% long), 512 from 3 stages on (the tensor \
               bound); 1985 and 1024 at BN 256",
    },
    Group {
        name: "gemm_ws_latency",
        bound: Bound::None,
        note: "not modeled: the same kernel with 2 stages, where the consumers keep one wgmma \
               batch in flight and release the stage before (so one load is in flight at a \
               time): 942 cycles a k-tile at BN 128 and 1144 at BN 256 on the chip, 872 and \
               1088 in the model (817 and 1017 with a window per warpgroup). Clock stamps \
               (ws_stamp) put the difference in the consumers' issue: after the full wait, \
               fence and first wgmma take 32 and 54 cycles in both warpgroups, and one \
               warpgroup's last 3 wgmmas 84 cycles more (the other's 43; with one stage 37 and \
               79, the slower one the other way round): their 8 HGMMAs exceed the SM's 7 places \
               (wgmma_arb), which the model now shares; the 70 and 56 cycles left are not yet \
               placed. Ruled out: a committed group left pending (wgmma_fence: 51 cycles \
               either way at N = 128) and the descriptors' path to uniform registers (a \
               warp-uniform warpgroup index removed the per-k-tile R2URs: 942 against 943)",
    },
    Group {
        name: "gemm_ws_cold",
        bound: Bound::None,
        note: "not modeled: the same kernel at K = 4096 from DRAM: 2 to 22% slower on the chip \
               with 1 to 6 stages (BN 128); a 16 KiB TMA box from DRAM lands in 1247 cycles on \
               the chip, 1029 in the model (latency: tma_lat_hbm; dram_box)",
    },
    Group {
        name: "tma_ring",
        bound: Bound::Relative(0.05),
        note: "gemm_ws.cu's ring without wgmma (the consumers release each stage as it lands; \
               one thread loads A and B, 16 KiB each at BN 128, 16 and 32 KiB at BN 256): a \
               round trip of 793 (BN 128) and 947 (BN 256) cycles with one stage, and from 3 \
               stages a stream of 108 B/cycle (303 and 455 cycles a stage), the fill rule's \
               rate into the 128-byte-swizzled slots",
    },
    Group {
        name: "mbarrier_poll",
        bound: Bound::Relative(0.15),
        note: "two warps handing mbarrier phases over, waiting in test_wait loops: cycles per \
               round trip. A poll sees a phase half a poll interval (84 cycles) after a \
               try_wait loop would wake",
    },
    Group {
        name: "tma_throughput",
        bound: Bound::Relative(0.10),
        note: "one SM's TMA loads where the SM or a box's latency from L2 binds (tma.cu, loops \
               free of run-time divisions): 1-row boxes from one thread; one thread's 16 KiB \
               boxes with 1 or 2 in flight; 2 and 4 warps from L2, 2 to 8 from DRAM and one \
               thread's 32 KiB boxes at the fill path's 95 B/cycle (tma.fill_bytes_per_cycle)",
    },
    Group {
        name: "tma_thread_loop",
        bound: Bound::None,
        note: "not modeled: one thread streaming boxes with 4 or more in flight (tma.cu) issues one \
               every 263 cycles on the H200 whatever the box (2 to 16 KiB, 128- or 256-byte \
               rows, L2 or DRAM), 223 in the model. Its loop has 135 cycles of stall counts \
               (calibration/sass.py tma tma_streamILi4ELi16384E), 22 fewer than mbar_cost.cu's \
               stream_same4 (225 on the chip, 229 in the model, group tma_issue), but its \
               try_wait sits inside BSSY/BSYNC behind a YIELD where that one's branch is \
               uniform: the cost of that structure (see divergence) is not modeled. (The same \
               loop with a constant-bank load in its arrive's chain: 271)",
    },
    Group {
        name: "tma_beside_wgmma",
        bound: Bound::Relative(0.10),
        note: "B/cycle of a TMA stream (4 issuers x 4 stages of 32 KiB boxes) while one or two \
               warpgroups issue back-to-back SS wgmma (N = 32 to 256): the wgmmas leave it at \
               the fill path's rate, 92-95 B/cycle on the H200 as alone (tma_alone b256_p1x4)",
    },
    Group {
        name: "wgmma_issue",
        bound: Bound::Relative(0.15),
        note: "one warpgroup's back-to-back wgmma m64nNk16 (N = 64, 128, 256): cycles from \
               the 1st issue to the k-th (k = 2 to 32). A warp's next HGMMA issues N/8 - 4 \
               cycles after its last; from the 8th on, issue waits for room among the 7 in \
               flight, which an HGMMA leaves 27 cycles before wait_group sees it complete",
    },
    Group {
        name: "cta_launch",
        bound: Bound::Relative(0.15),
        note: "cycles between a CTA's end and the next CTA's start on an SM (sm.cta_launch_gap)",
    },
    Group {
        name: "spill",
        bound: Bound::Relative(0.15),
        note: "cycles per loop iteration of 1, 4 and 32 warps each keeping 32 to 192 fp32 \
               values live (one FFMA each an iteration) under -maxrregcount 255, 128, 64 and 32 \
               (calibration/spill.cu): the E = live + 10 - cap registers over the budget spill, \
               and each FFMA on one reloads and stores it, 4 at a time, through an L1 of 64 \
               B/cycle and, past 128 KiB of spilled values, to L2 at 47 B/cycle. Within the \
               budget the rows are FFMA issue (4.5%, the chip's loop adds 3 to 12 cycles an \
               iteration); 32 warps 5.1% (the L1's rate at E = 10, 5.4 cycles a warp and value \
               from E = 42); one warp takes 14.3 cycles a value, the chip 10 to 11 plus ~190 an \
               iteration (13.4%); 4 warps the L1's 16 a value, the chip ~190 more an iteration \
               (11.2%); the builds spilling 10 to 42 values at caps 64 and 32 cost the chip 1.4 to 2x \
               the model's (their ptxas spill bytes are 2 to 3 times the excess)",
    },
    Group {
        name: "clock",
        bound: Bound::Relative(0.05),
        note: "the preset's sustained SM clock at the tensor load of bf16 matmuls (n = 2048, \
               4096, 8192; random data) against the clock NVML reports under them at the 700 W \
               power cap",
    },
    Group {
        name: "bank_conflicts",
        bound: Bound::Relative(0.05),
        note: "cycles per warp-load of 32 warps' 4-byte shared loads at lane strides 1 to 33 \
               words, and a 32 x 32 float tile's column without and with a word of padding \
               (scenarios/bank_conflicts.ron)",
    },
    Group {
        name: "coalescing",
        bound: Bound::Relative(0.10),
        note: "32 warps' 4-byte L2-resident loads at lane strides of 1 to 32 words \
               (scenarios/coalescing.ron) take 2.0, 3.0, 3.9, 4.7, 9.2, 16.4 and 33.1 cycles each \
               at strides 1, 2, 3, 4, 8, 16, 32 on the H200, the 16 loads' last latency included: \
               the L1 tag stage (a line a cycle, 2 at least: l1_lines) binds strides 16 and 32, the \
               SM port's 128 B/cycle of sectors strides 2 to 8 (l1_port); stride 1 is 25% slow \
               (2.56 cycles: one line, 2 at least, and the latency), stride 2 14% fast",
    },
    Group {
        name: "l1_lines",
        bound: Bound::Relative(0.05),
        note: "one SM's steady L2-resident warp-loads (l1_rate.cu, 32 warps) whose 128-byte lines \
               bind: 1, 16 and 32 lines a load of 4-, 8- and 16-byte lanes take max(2, lines) \
               cycles, the L1 tag stage's rate (l1.access_cycles, l1.line_cycles)",
    },
    Group {
        name: "l1_port",
        bound: Bound::Relative(0.10),
        note: "the same loads where few lines carry many sectors: 4-byte lanes at strides 2, 4, 8 \
               move their 8, 16, 32 sectors at 126-128 B/cycle (2.0, 4.0, 8.1 cycles), the SM \
               port's rate (memory.sm_bytes_per_cycle 128); 16-byte lanes take 4.57 cycles for 4 \
               full lines (112 B/cycle), 8-byte lanes 2.9 for 2 (88): 13% and 31% slower than the \
               port, not modeled",
    },
    Group {
        name: "loaded_latency",
        bound: Bound::Relative(0.10),
        note: "one SM, one warp chasing pointers while S others stream (loaded_lat.cu), the \
               streamers following loaded_kernel's SASS (calibration/twin.py). On the H200 the \
               chase barely notices the stream: from L2 287 cycles a hop alone, 297 beside 16 warps \
               x 4 loads (84 B/cycle), 356 beside 28 (119 B/cycle, near the SM's 128); from DRAM \
               665-700 at any load (a lone chase's first 776 is 17% over the model's 645). The \
               model's chase: 283-288 from L2, 382 beside 28 warps, 645-648 from DRAM. Streams of \
               one load a warp-iteration from L2 are 25-49% fast: one warp's 12-instruction \
               iteration takes 492 cycles on the chip, 328 (its L2 hit latency and stall counts) in \
               the model, not explained",
    },
    Group {
        name: "cluster_dsmem_lat",
        bound: Bound::Relative(0.10),
        note: "a pointer chase through the last cluster rank's shared memory (clusters of 2 to \
               16), over the same chase through the CTA's own: 156-171 cycles a hop on the chip \
               (an H100, h100-cluster.csv), cluster.dsmem_latency less the ld.shared the model \
               charges either way",
    },
    Group {
        name: "cluster_dsmem_bw",
        bound: Bound::Relative(0.10),
        note: "bytes per cycle of 1 to 32 warps of one SM loading from (or storing to) the next \
               rank's shared memory, 16 B a lane, 8 in flight a thread; `both`: the two SMs \
               each at the other. Stores and many warps' loads reach 21.3 B/cycle an SM (the \
               SM's DSMEM link); one warp's loads 5.3 (two in flight a warp). Not modeled: \
               loads both ways at once reach 17 B/cycle on the chip, 20-21 in the model (+18% at \
               16 and 32 warps), and 8 warps' loads one way 21.2 against the model's 16.7",
    },
    Group {
        name: "cluster_barrier",
        bound: Bound::Relative(0.10),
        note: "barrier.cluster.arrive + wait back to back, clusters of 1 to 16 CTAs of 4 or 12 \
               warps: relaxed 92-123 cycles (cluster.barrier_latency 92, barrier_per_warp 2 a \
               warp of the CTA); the default arrive is a release whose memory barrier adds ~690 \
               (see membar): 772 at 4 warps a CTA, 1,246 at 12. Not modeled: the default \
               arrive's cost grows with the cluster, 772 at 1 CTA to 928 at 16 (-15% at 16), \
               where the relaxed one grows from 92 to 104",
    },
    Group {
        name: "cluster_remote_arrive",
        bound: Bound::Relative(0.10),
        note: "round trip of two CTAs' threads handing an mbarrier phase to each other by \
               remote arrives (clusters of 2 to 16): CUTLASS's CTA-scope arrive 734 cycles, \
               each way cluster.remote_arrive_latency (263) and the waiter's wake (103); with \
               `.release.cluster` 1,868-1,925, the sender's memory barrier (690) added each way",
    },
    Group {
        name: "remote_arrive_issue",
        bound: Bound::Relative(0.15),
        note: "cycles an arrive through a cluster address holds its thread more than a local \
               one (arrive_cost, cluster.cu's fourth run): 87 whether on another rank's \
               barrier or its own, back to back or 25 and 50 FFMAs apart, from 1 or 4 warps, \
               and as CUTLASS's release (lanes to every rank in one instruction); with \
               .release.cluster its memory barrier (669). The model holds the thread \
               cluster.remote_arrive_cycles (96) against barriers.arrive_cycles (6)",
    },
    Group {
        name: "cluster_mcast",
        bound: Bound::Relative(0.10),
        note: "bytes the L2 slices (lts__t_bytes) and DRAM moved for the tiles that clusters \
               of 1, 2 and 4 CTAs stream, over the tiles' bytes (cluster.cu's mcast kernel on \
               an H100, Nsight Compute): each CTA loading the tile itself costs the slices \
               what one multicast does at 2 CTAs (0.51-0.52 against 0.51), since the L2 \
               serves a GPC's reads of a line from one read-out (memory.l2.merge_cycles), \
               and DRAM 1/N for both. At 4 CTAs the chip's unicast moves 0.33-0.36 where \
               multicast moves 0.26 (multicast saves 22-28% of the slices' bytes there); \
               the model shares all four reads and gives 0.25 for both: a limit on how many \
               reads share one read-out is not modeled",
    },
    Group {
        name: "cluster_mcast_cycles",
        bound: Bound::None,
        note: "not modeled: cycles a 16 KiB tile takes in the same runs (one thread a CTA, 4 \
               stages). One CTA a cluster matches (555 and 1,428 against 548 and 1,428), but \
               with 2 or 4 CTAs sharing tiles the chip stays at 375 cycles a tile from L2 \
               where the model's shared read-outs give 277 and 216, and the cross-CTA empty \
               barriers (CTA-scope remote arrives, CUTLASS's) cost 821-844 (c2) and 966-988 \
               (c4) against 593 and 785. Both point at the thread's own loop (its try_wait \
               inside BSSY/BSYNC, see tma_thread_loop and divergence), whose cost the model \
               does not carry; multicast itself is no faster than unicast on the chip (+3%) \
               nor in the model",
    },
    Group {
        name: "gemm_cutlass",
        bound: Bound::None,
        note: "not modeled: whole kernels, CUTLASS 4.3's persistent GEMMs at 4096^3 on an H100 \
               (cutlass_gemm.cu, Nsight Compute's cycles). The model's persistent cooperative \
               kernel is 11% slow (its CTAs fall out of step and share fewer L2 read-outs; \
               the chip loses nothing to persistence), its 2x1 cluster 5% fast (the chip \
               gains nothing from the cluster, the model 15%), and its ping-pong 34% slow, \
               bound by the L2 slices at 3,990 B/cycle where the chip's moved 4,778; the \
               chip's DRAM reads are 1.5-2x the model's (docs/scenarios.md, Against CUTLASS \
               on the chip)",
    },
    Group {
        name: "scheduler",
        bound: Bound::Relative(0.05),
        note: "cycles until the first and the last of 2 to 4 warps of one partition end 512 \
               independent FFMAs each (sched.cu on an H100): 528 to 540 for the first, then \
               about 520 more for each other: the scheduler issues one warp while it can \
               (greedy, sm.scheduler `gto`; round-robin would end them all together), on the \
               chip and in the model the youngest first (the last to pass the barrier, so the \
               last issued); which warp goes next when the greedy one stalls is not measured",
    },
    Group {
        name: "l2_share",
        bound: Bound::Relative(0.10),
        note: "cycles a 16 KiB TMA box takes when 128 or 132 SMs (one thread each, 4 slots) \
               stream from L2 (l2_share.cu on an H100): 542 on disjoint tiles, as many when \
               2 to 8 SMs in different GPCs read the same tiles (adj: consecutive blocks sit \
               in different GPCs), less when SMs of one GPC do (spread groups, clusters): \
               the L2 sends a line once to a GPC whose SMs ask for it together \
               (memory.l2.merge_cycles) and moves 3990 B/cycle of such read-outs \
               (data_bytes_per_cycle); groups of 16 spread over every GPC take 326 on the \
               chip, 248 in the model. One SM alone gets a box every 222 cycles, the model \
               172 (tma_thread_loop)",
    },
    Group {
        name: "l2_merge",
        bound: Bound::Relative(0.10),
        note: "cycles a 16 KiB TMA box takes when 132 SMs in clusters of 2 stream the same \
               tiles from L2, the second CTA of a cluster L tiles behind the first (l2_share.cu's \
               lag rows on an H100): 279, 307, 473, 534 and 532 cycles at L = 0, 1, 2, 4 and \
               8: a GPC's second read of a line shares the first's read-out one tile (~300 \
               cycles) later, mostly not two tiles later. The model shares a read whose \
               read-out would start within memory.l2.merge_cycles (768) of the line's last \
               read-out for its GPC; the window lies between the unshared gaps of L = 1 and \
               L = 2 (~544 and ~1090 cycles), so the model shares at L = 1 and not at L = 2 \
               (543 against the chip's partial 473)",
    },
    Group {
        name: "membar",
        bound: Bound::Relative(0.10),
        note: "a GPU-scope memory barrier (fence.release.cluster: MEMBAR.ALL.GPU, ERRBAR, \
               CGAERRBAR) back to back by 4, 8 and 16 warps of one CTA: 700, 698 and 926 cycles \
               an iteration; barriers.membar_cycles 690, a partition starting one every 231 \
               (membar_interval), so four warps a partition take 924. Not modeled: \
               __threadfence() (MEMBAR.SC.GPU) takes 771 at one warp a partition and 924 at two",
    },
    Group {
        name: "divergence",
        bound: Bound::None,
        note: "not modeled: an if/else round of 32 dependent FFMAs a path takes 185 cycles \
               warp-uniform and 336 with lanes split on parity on the H200, 128 and 256 in \
               the model: the branch, its reconvergence (BSSY/BSYNC) and the loop's own \
               instructions cost nothing in the model; lanes with 1 to 32 trips take 4,863 \
               cycles against 4,495 for 32 each (4,093 both in the model). The SASS \
               (calibration/sass.py fundamentals branch_kernel) puts 35 cycles of stall counts \
               besides the 32 FFMAs' 128 in a uniform round (UIADD3, BSSY 5, ISETP, the branch \
               12, a BRA over the other path 6, BSYNC 5, the loop's BRA 5) and 5 in a trip of \
               the trip loop (131 for 32 FFMAs): the chip's 185 and 140.5 leave 9 to 14 cycles \
               a taken branch, a cost the ISA's loops (often unrolled code in a kernel) do not \
               carry",
    },
    Group {
        name: "clock_data",
        bound: Bound::None,
        note: "not modeled: power follows the operands' toggling: a matmul of zeros draws 401 W \
               and holds 1740 MHz at a tensor load of 0.833, where random data run at ~1480; \
               the model's clock follows the load alone",
    },
    Group {
        name: "triton_gemm",
        bound: Bound::None,
        note: "not modeled: whole kernel, Triton 3.6's Hopper matmul (bf16 4096^3, TMA \
               descriptors, calibration/triton_gemm.py) against gemm_pipelined.ron, FLOP per \
               SM-cycle at each config's NVML clock; the twin's mainloop follows the kernels' \
               SASS (h200-triton_sass.txt: 8 warps wait for each k16 HGMMA, 3 or 4 CTA barriers \
               a k-tile). Over the 40 configs both ran the model is fast by 24% on average \
               (-21% to +60%), Spearman 0.80; the chip's best is 64x256x64 4w 4s (2,782; the \
               model's 11th), the model's 128x128x64 4w 5s (3,249; chip 2,562). 8 warps keep \
               0.79x of 4 warps' rate in the model, 0.82x on the chip (medians). 2 stages are \
               32% fast, and the 15 configs the chip ran at 1,905 to 1,980 MHz (a mostly idle \
               tensor pipe) 37%, the rest 17%: the latency of loads under load (inflight, \
               loaded_latency), not in the model, is the candidate; the HGMMA window shared by \
               an SM's warpgroups (wgmma_arb), now in the model, never fills in these kernels \
               (each warpgroup waits for each HGMMA) and left these rows as they were",
    },
];

/// Whether group `name` is judged by exact equality (its errors are differences, not ratios).
pub(super) fn is_exact(name: &str) -> bool {
    GROUPS
        .iter()
        .any(|g| g.name == name && g.bound == Bound::Exact)
}
