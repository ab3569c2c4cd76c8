#!/usr/bin/env python3
"""Summary of FlashAttention-3's consumer mainloop in a `cuobjdump -sass` listing (calibration/
fa3_sass.sh runs it on each build): the innermost loop holding the HGMMAs, MUFU.EX2s and named
barriers; one trip's instructions by opcode, stall counts and scoreboard waits (the mbarrier
try-waits taken as succeeding at once), its phases in program order, the softmax span (first to
last MUFU.EX2) and the trip's listing with decoded control codes.

    python3 calibration/fa3_sass.py BUILD.sass LABEL
"""
import collections
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import sass  # noqa: E402  (calibration/sass.py: control() decodes a control word)

sass_file, label = sys.argv[1], sys.argv[2]
inst = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*/\* 0x[0-9a-f]{16} \*/\s*$")
hi_word = re.compile(r"^\s+/\* 0x([0-9a-f]{16}) \*/\s*$")
body, pending = [], None
for line in open(sass_file):
    if m := inst.match(line):
        pending = (int(m.group(1), 16), m.group(2).rstrip(" ;"))
    elif (h := hi_word.match(line)) and pending:
        hi = int(h.group(1), 16)
        body.append(dict(a=pending[0], t=pending[1], hi=hi, stall=(hi >> 41) & 0xF,
                         wait=(hi >> 52) & 0x3F, ctl=sass.control(hi)))
        pending = None
at = {x["a"]: i for i, x in enumerate(body)}

def opcode(t, full=False):
    op = re.sub(r"^@!?U?P\w+ ", "", t).split()[0]
    parts = op.split(".")
    return ".".join(parts[:2]) if parts[0] in ("BAR", "SYNCS", "WARPGROUP", "MUFU") or full else parts[0]

def target(t):
    b = re.search(r"\bBRA (0x[0-9a-f]+)", t)
    return int(b.group(1), 16) if b else None

# The consumer mainloop: the innermost backward branch whose span holds HGMMA, MUFU.EX2 and BAR.
loop = None
for i, x in enumerate(body):
    tg = target(x["t"])
    if tg is None or tg >= x["a"]:
        continue
    span = body[at[tg]:i + 1]
    txt = " ".join(y["t"] for y in span)
    if "HGMMA" in txt and "MUFU.EX2" in txt and "BAR." in txt and (loop is None or len(span) < len(loop)):
        loop = span
lo, hi_a = loop[0]["a"], loop[-1]["a"]

def path(wg_branch_taken):
    """The instructions one trip executes: mbarrier try-waits succeed at once (their `@P BRA`
    taken, the `@!P BRA` to the out-of-line retry not), other in-loop forward branches (FA3's
    `warp_group_idx == 0` around the K/V waits) taken or not as asked."""
    out, i, tw_pred = [], at[lo], None
    while True:
        x = body[i]
        out.append(x)
        if m := re.match(r"SYNCS\.PHASECHK\S* (P\d)", x["t"]):
            tw_pred = m.group(1)
        tg = target(x["t"])
        if x["a"] == hi_a:
            return out
        if tg is not None:
            m = re.match(r"@(!?)(P\d) ", x["t"])
            if not (lo <= tg <= hi_a):
                taken = False  # to an out-of-line retry
            elif m and m.group(2) == tw_pred:
                taken = m.group(1) == ""
            else:
                taken = wg_branch_taken
            if taken:
                i = at[tg]
                continue
        i += 1

def mix(xs, full=False):
    c = collections.Counter(opcode(x["t"], full) for x in xs)
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))

def stalls(xs):
    return sum(x["stall"] for x in xs)

def waits(xs):
    return sum(1 for x in xs if x["wait"])

trip = path(False)
trip1 = path(True)
hg = [x for x in trip if x["t"].startswith("HGMMA")]
shape = lambda x: re.search(r"HGMMA\.(\d+)x(\d+)x(\d+)", x["t"]).groups()
s_mma = [x for x in hg if not re.search(r"HGMMA\S* R\d+, R\d+", x["t"])]  # A from smem: S = Q K^T
pv_mma = [x for x in hg if x not in s_mma]                                # A from registers: O += P V
bn, hd = int(shape(s_mma[0])[1]), int(shape(pv_mma[0])[1])
blocks = len(s_mma) * 16 / hd
P = print
P(f"## {label}: consumer mainloop {lo:05x}-{hi_a:05x}, {len(loop)} instructions in the listing")
P(f"# tile: S HGMMA {'x'.join(shape(s_mma[0]))} x{len(s_mma)}, PV HGMMA {'x'.join(shape(pv_mma[0]))} x{len(pv_mma)}"
  f" -> hd {hd}, bn {bn}, {blocks:g} KV block(s) per trip (expect hd/16 = {hd // 16} and bn/16 = {bn // 16} per block)")
who = "consumer warpgroup 0 (waits on the K/V mbarriers; " if len(trip1) != len(trip) else "either consumer warpgroup ("
P(f"# one trip, {who}try-waits succeed at once): "
  f"{len(trip)} instructions, stall-count sum {stalls(trip)}, {waits(trip)} scoreboard waits")
P(f"#   {mix(trip)}")
if len(trip1) != len(trip):
    P(f"# one trip, consumer warpgroup 1 (branches past the K/V mbarrier waits: FA3 gives them to WG 0): "
      f"{len(trip1)} instructions, stall-count sum {stalls(trip1)}, {waits(trip1)} scoreboard waits")
    P(f"#   {mix(trip1)}")
if blocks != 1:
    P(f"# per KV block (/{blocks:g}): {len(trip) / blocks:g} instructions, stall-count sum {stalls(trip) / blocks:g}")
ur = sum(1 for x in trip if re.sub(r"^@!?U?P\w+ ", "", x["t"]).startswith(("U", "R2UR")))
P(f"# uniform datapath (U*, R2UR): {ur} a trip, {ur / len(hg):.2f} per HGMMA ({len(hg)} HGMMAs)")

# Phases in program order: a new phase at each WARPGROUP.*, BAR.*, SYNCS.* and HGMMA group.
phases, cur, in_group = [], None, False
for x in trip:
    op = re.sub(r"^@!?U?P\w+ ", "", x["t"])
    if op.startswith("HGMMA"):
        if not in_group:
            cur = dict(label=f"HGMMA {op.split()[0][6:]}", xs=[])
            phases.append(cur)
            in_group = True
        if "gsb0" in op:
            in_group = False
            cur["xs"].append(x)
            cur = None
            continue
    elif not in_group and op.startswith(("WARPGROUP.", "BAR.", "SYNCS.")) or cur is None:
        sync = re.sub(r" P\d+,| RZ,|, R\d+$|, RZ$|\+URZ", "", op)  # keep opcode, barrier, address
        cur = dict(label=sync if op.startswith(("WARPGROUP.", "BAR.", "SYNCS.")) else
                   "(after the HGMMA group)" if phases else "(top of the trip)", xs=[])
        phases.append(cur)
    cur["xs"].append(x)
P("#")
P("# phases (that trip, program order): start address, label, instructions, "
  "stall-count sum, scoreboard waits: opcodes")
for ph in phases:
    xs = ph["xs"]
    lab = ph["label"] if not ph["label"].startswith("HGMMA") else \
        f"{ph['label']} x{sum(1 for x in xs if x['t'].startswith('HGMMA'))}"
    P(f"#  {xs[0]['a']:05x} {lab[:46]:<46} n={len(xs):<4} stall={stalls(xs):<4} waits={waits(xs):<3}: {mix(xs)}")

# Softmax: from the first to the last MUFU.EX2 of the trip.
ex = [i for i, x in enumerate(trip) if "MUFU.EX2" in x["t"]]
sm = trip[ex[0]:ex[-1] + 1]
b2b = sum(1 for i in ex if i + 1 in ex)
after = collections.Counter(trip[i]["stall"] for i in ex)
gaps = collections.Counter(ex[k + 1] - ex[k] for k in range(len(ex) - 1))
cyc = collections.Counter(stalls(trip[ex[k]:ex[k + 1]]) for k in range(len(ex) - 1))
hist = lambda c: ", ".join(f"{k}: {v}" for k, v in sorted(c.items()))
P("#")
P(f"# softmax region {sm[0]['a']:05x}-{sm[-1]['a']:05x} (first to last MUFU.EX2): {len(sm)} instructions, "
  f"stall-count sum {stalls(sm)}, {waits(sm)} scoreboard waits, {len(ex)} MUFU.EX2")
P(f"#   {mix(sm)}")
P(f"#   MUFU.EX2 back to back (the next instruction also a MUFU): {b2b} pairs")
P(f"#   stall count on a MUFU.EX2 (cycles to the next issue) -> how many: {hist(after)}")
P(f"#   instructions from one MUFU.EX2 to the next -> how many: {hist(gaps)}")
P(f"#   stall cycles from one MUFU.EX2 to the next -> how many: {hist(cyc)}; "
  f"mean {stalls(trip[ex[0]:ex[-1]]) / (len(ex) - 1):.2f}")
P("#")
P("# the loop's listing, flag r: the mbarrier retry, run only when the first try-wait fails" +
  (", w: consumer warpgroup 0 only (warpgroup 1 branches past it)" if len(trip1) != len(trip) else ""))
run0 = {x["a"] for x in trip}
run1 = {x["a"] for x in trip1}
for x in loop:
    flag = " " if x["a"] in run0 and x["a"] in run1 else "w" if x["a"] in run0 else "r"
    P(f"{flag} /*{x['a']:05x}*/ {x['t']:<66} # {x['ctl']}")
P("")
