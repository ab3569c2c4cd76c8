#!/usr/bin/env python3
"""How long one warp alone takes to issue stretches of a compiled loop: the `stalls` of the
simulator's `Mix` blocks (docs/isa.md, `Mix`), read off a SASS listing with decoded control
codes, as calibration/sass.py prints one and calibration/data/sm90a-fa3_sass.txt keeps FA3's.

    python3 calibration/sass.py softmax softmax_kernel > /tmp/softmax.sass
    python3 calibration/issue_time.py /tmp/softmax.sass 1570 19e0 1b20 2f50 35f0

The addresses (hex) start the stretches, each running to the next; the last one is where the
trip ends (the address after the loop's backward branch), so the lines from the first address
to it are one trip (the first such run of lines, where a file holds several listings). The trip is issued
in order several times over and the last one is timed, so the stretches see the steady state.
Each instruction issues once the scoreboards it waits on are ready and its pipe is free, and
holds the warp its stall count. The result latencies and pipe rates are the H200's
(sim/presets/h200-sxm.ron): MUFU 17 cycles and one warp-instruction every 8 (h200-core.csv,
ex2_dep and ex2_rate), SHFL 24 and every 4 (h200-softmax.csv, shfl_dep; pipes.shfl), LDC 28
and S2R 21 (h200-sreg.csv; S2UR, not measured, taken as S2R), the
16-lane ALU pipe's integer, logic, FMNMX and F2FP every 2, the FMA pipe's every cycle. Waits on
mbarrier, named-barrier and wgmma results (SYNCS, BAR, WARPGROUP, HGMMA) are left out: the
simulator times those with the scenario's own instructions. Lines flagged `r` (FA3's mbarrier
retry, run only when a try-wait fails) are skipped.

Prints each stretch's address, its instructions, their stall counts and the cycles it took.
"""
import re
import sys

LATENCY = {"MUFU": 17, "SHFL": 24, "LDC": 28, "S2R": 21, "S2UR": 21}
# Cycles a warp-instruction holds its pipe, by opcode; anything else on the FMA pipe (1 cycle).
PIPE = {"MUFU": ("mufu", 8), "SHFL": ("shfl", 4)}
ALU_OPS = {"FMNMX", "F2FP", "LOP3", "ISETP", "IADD3", "MOV", "FSETP", "PRMT", "LEA", "VIADD",
           "SHF", "SEL", "FSEL"}
# No pipe whose rate the simulator models: uniform datapath, branches, sync and tensor ops.
NO_PIPE = ("U", "BRA", "NOP", "HGMMA", "WARPGROUP", "SYNCS", "BAR", "EXIT", "R2UR")
# Their results are timed by the scenario's own mbarrier, barrier and wgmma instructions.
SYNC_OPS = ("SYNCS", "BAR", "WARPGROUP", "HGMMA")

LINE = re.compile(r"^(?P<flag>\w)?\s*/\*(?P<addr>[0-9a-f]+)\*/\s+(?:@!?U?P\w+\s+)?(?P<op>[A-Z0-9_.]+)"
                  r".*#\s*stall (?P<stall>\d+)(?P<rest>.*)$")


def parse(path):
    rows = []
    for line in open(path):
        m = LINE.match(line)
        if not m or m["flag"] == "r":
            continue
        op = m["op"].split(".")[0]
        wr = re.search(r"wr sb(\d)", m["rest"])
        wait = re.search(r"wait (sb[\d, sb]*)", m["rest"])
        rows.append(dict(addr=int(m["addr"], 16), op=op, stall=int(m["stall"]),
                         wr=int(wr[1]) if wr else None,
                         waits=[int(k) for k in re.findall(r"\d", wait[1])] if wait else []))
    return rows


def pipe(op):
    if op.startswith(NO_PIPE):
        return None
    if op in PIPE:
        return PIPE[op]
    return ("alu", 2) if op in ALU_OPS else ("fma", 1)


def times(rows, starts, trips=4):
    t, ready, free, sync = 0, [0] * 6, {}, [False] * 6
    begin = {}
    for trip in range(trips):
        for r in rows:
            if trip == trips - 1 and r["addr"] in starts:
                begin[r["addr"]] = t
            t = max([t] + [ready[k] for k in r["waits"] if not sync[k]])
            p = pipe(r["op"])
            if p:
                t = max(t, free.get(p[0], 0))
                free[p[0]] = t + p[1]
            if r["wr"] is not None:
                sync[r["wr"]] = r["op"].startswith(SYNC_OPS)
                ready[r["wr"]] = t + LATENCY.get(r["op"], 0)
            t += r["stall"]
    return begin, t


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    path, cuts = sys.argv[1], [int(a, 16) for a in sys.argv[2:]]
    starts, end = cuts[:-1], cuts[-1]
    rows = []
    for r in parse(path):
        if starts[0] <= r["addr"] < end and (rows or r["addr"] == starts[0]):
            rows.append(r)
        elif rows:
            break  # the trip's first listing only (a file may hold several)
    begin, finish = times(rows, set(starts))
    bounds = [begin[a] for a in starts] + [finish]
    for i, a in enumerate(starts):
        stretch = [r for r in rows if a <= r["addr"] < cuts[i + 1]]
        print(f"{a:05x}: {len(stretch)} instructions, stall counts "
              f"{sum(r['stall'] for r in stretch)}, {bounds[i + 1] - bounds[i]} cycles")


if __name__ == "__main__":
    main()
