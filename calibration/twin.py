#!/usr/bin/env python3
"""The body of a scenario twin that follows one loop trip of a kernel's SASS, from a listing that
calibration/sass.py wrote (data/sm90a-sass-loops.txt):

    python3 calibration/twin.py calibration/data/sm90a-sass-loops.txt read_kernel 0180 09e0 \\
        'LdGlobal(tensor: "X", addr: "((first + (i * 8 + {u}) * 32 + warp_id) * 32 + lane) * 16", width: 16, sb: {sb})'

prints the RON instructions of the trip from address 0180 to 09e0 of the first kernel whose name
contains `read_kernel`; each global load becomes the given template with `{u}` its place among
the trip's loads (0, 1, ...) and `{sb}` its scoreboard. The rest follows each instruction's control
code (`stall`, `wr sbK`, `wait sb...`):
- a variable-latency instruction keeps its scoreboard: LDC -> Ldc(sb: K), S2R -> S2r(sb: K),
  LDG -> the template, LDS -> LdShared(buf: "s", addr: "lane * 4", sb: K);
- a wait mask becomes WaitScoreboard([...]) before the instruction that carries it;
- each run of fixed-latency instructions between those becomes Alu(a) and Fma(b): the a
  integer instructions' issue slots on the ALU pipe (16 lanes a partition: 2 cycles each, as
  IADD3 and LOP3 measure in data/h200-sreg.csv; CS2R among them) and the b IMADs' on the FMA
  pipe, which they share with FFMA and not with LOP3 (the mixes imad_lop3, imad_ffma there);
  then Stall for what the run's stall counts s leave beyond that issue (about 2a + b cycles).
  Branches (BRA, BSSY, BSYNC) keep only their stall counts.
A variable-latency instruction's own stall count joins the run after it. Scoreboards an
instruction releases when it has read its operands (`rd`) are not followed: they are waited on
only where a result on the same scoreboard is.
"""
import re
import sys

VARIABLE = {"LDC", "S2R", "LDG", "LDS"}
FMA_PIPE = {"IMAD", "FFMA", "FADD", "FMUL"}
# Not on a math pipe (the branch unit's): they keep their stall counts but take no issue slot in
# the twin. Nsight Compute counts CS2R on the ALU pipe, IMAD on the FMA pipe's heavy half, LDC and
# S2R on the ADU and none of the loop's BRA on the ALU (data/h200-pipes_ncu.txt).
NO_PIPE = {"BRA", "BSSY", "BSYNC", "YIELD", "NOP"}
LINE = re.compile(r"/\*([0-9a-f]{4})\*/\s+(.*?)\s*;\s+# (.*)")


def trip(path, kernel, lo, hi):
    """(opcode, stall, wr, wait) of each instruction from lo to hi of the kernel."""
    out, inside = [], False
    for text in open(path):
        if text.startswith("## "):
            inside = kernel in text
            if inside and out:
                break
            continue
        m = LINE.match(text)
        if not (inside and m):
            continue
        addr = int(m.group(1), 16)
        if not lo <= addr <= hi:
            continue
        words = m.group(2).split()
        op = (words[1] if words[0].startswith("@") else words[0]).split(".")[0]
        cc = m.group(3)
        stall = int(re.search(r"stall (\d+)", cc).group(1))
        wr = re.search(r"wr sb(\d)", cc)
        wait = re.search(r"wait (sb[\d,sb]+)", cc)
        waits = [int(k) for k in re.findall(r"\d", wait.group(1))] if wait else []
        out.append((op, stall, int(wr.group(1)) if wr else None, waits))
    return out


def body(instrs, load):
    lines, alu, fma, stall, loads = [], 0, 0, 0, 0

    def flush():
        nonlocal alu, fma, stall
        if alu:
            lines.append(f"Alu({alu}),")
        if fma:
            lines.append(f"Fma({fma}),")
        # The model's issue of the two macros: 2 cycles an ALU instruction, 1 an FMA one, and
        # the FMA macro's wait for the ALU one's result (4 cycles after its last started).
        issue = 2 * alu + fma + (2 if alu and fma else 0)
        if stall > issue:
            lines.append(f"Stall({stall - issue}),")
        alu, fma, stall = 0, 0, 0

    for op, s, wr, waits in instrs:
        if waits:
            flush()
            lines.append(f"WaitScoreboard({sorted(set(waits))}),")
        if op in VARIABLE and wr is not None:
            flush()
            if op == "LDC":
                lines.append(f"Ldc(sb: {wr}),")
            elif op == "S2R":
                lines.append(f"S2r(sb: {wr}),")
            elif op == "LDS":
                lines.append(f'LdShared(buf: "s", addr: "lane * 4", sb: {wr}),')
            else:
                lines.append(load.format(u=loads, sb=wr) + ",")
                loads += 1
            stall += s - 1
        elif op in NO_PIPE:
            stall += s
        elif op in FMA_PIPE:
            fma += 1
            stall += s
        else:
            alu += 1
            stall += s
    flush()
    return lines


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    path, kernel, lo, hi, load = sys.argv[1:]
    for line in body(trip(path, kernel, int(lo, 16), int(hi, 16)), load):
        print(line)


if __name__ == "__main__":
    main()
