#!/usr/bin/env python3
"""The SASS of a calibration program's kernels, with each instruction's control code decoded,
built here without a GPU: the same CUDA 13.0 compiler the device runs (nvcc 13.0.88, whose
SASS matches the device's cuobjdump in data/h200-sass-loads.txt), from NVIDIA's wheels on PyPI.

    python3 calibration/sass.py mem_bw read_kernel          # one kernel (a name substring)
    python3 calibration/sass.py memsys 'probe_readILi4E'

After each kernel it sums up every loop (a backward branch and its target): the instructions
by opcode and the sum of their stall counts, the cycles one warp needs to issue one trip when
no scoreboard holds it.

The wheels go to $CUDA_WHEELS (default /tmp/cuda-wheels) on the first run. Each instruction
line ends with its control code, after the Volta-and-later layout of the high 64-bit word
(Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking", 2018):
`stall` cycles before the next instruction may issue (bits 105-108), `yield`, the
scoreboard the instruction's result sets (`wr`, bits 110-112) or its source operands release
(`rd`, bits 113-115), and the scoreboards it waits on (`wait`, a 6-bit mask, bits 116-121).
A variable-latency instruction (LDG, LDS, S2R, MUFU, ...) sets one of a warp's six
scoreboards; only the instructions whose `wait` names it wait for its result.
"""
import os
import pathlib
import re
import subprocess
import sys
import zipfile

# CUDA 13.0's compiler as on the device (nvcc --version: V13.0.88). No nvdisasm wheel of 13.0
# exists; the disassembler only prints what the compiler chose.
WHEELS = [
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cuda-cuobjdump==13.2.86",
    "nvidia-cuda-nvdisasm==13.2.86",
]


def toolkit() -> pathlib.Path:
    root = pathlib.Path(os.environ.get("CUDA_WHEELS", "/tmp/cuda-wheels"))
    cuda = root / "nvidia" / "cu13"
    if not (cuda / "bin" / "nvdisasm").exists():
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(root), *WHEELS],
            check=True,
        )
        for whl in root.glob("*.whl"):
            with zipfile.ZipFile(whl) as z:
                z.extractall(root)
        for exe in list((cuda / "bin").iterdir()) + list((cuda / "nvvm" / "bin").iterdir()):
            exe.chmod(0o755)
    return cuda


def control(hi: int) -> str:
    stall, yld = (hi >> 41) & 0xF, (hi >> 45) & 1
    wr, rd, wait = (hi >> 46) & 7, (hi >> 49) & 7, (hi >> 52) & 0x3F
    parts = [f"stall {stall}"]
    if yld:
        parts.append("yield")
    if wr != 7:
        parts.append(f"wr sb{wr}")
    if rd != 7:
        parts.append(f"rd sb{rd}")
    if wait:
        parts.append("wait " + ",".join(f"sb{i}" for i in range(6) if wait >> i & 1))
    return "; ".join(parts)


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    program, kernel = sys.argv[1], sys.argv[2]
    cuda = toolkit()
    env = dict(os.environ, PATH=f"{cuda / 'bin'}:{os.environ['PATH']}")
    here = pathlib.Path(__file__).resolve().parent
    tmp = pathlib.Path(os.environ.get("TMPDIR", "/tmp"))
    cubin = tmp / f"{program}.cubin"
    # The wgmma programs include the header run.sh generates (the same N list).
    with open(tmp / "wgmma_ops.h", "w") as header:
        subprocess.run([sys.executable, str(here / "gen_wgmma.py"),
                        *"8 16 24 32 48 64 96 128 192 256".split()], check=True, stdout=header)
    subprocess.run(
        ["nvcc", "-O3", "-gencode=arch=compute_90a,code=sm_90a", f"-I{tmp}", "-cubin", "-o",
         str(cubin), str(here / f"{program}.cu")],
        check=True, env=env, cwd=here,
    )
    sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], check=True, env=env,
                          capture_output=True, text=True).stdout
    inst = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*/\* 0x[0-9a-f]{16} \*/\s*$")
    hi_word = re.compile(r"^\s+/\* 0x([0-9a-f]{16}) \*/\s*$")
    inside, pending, body = False, None, []
    for line in sass.splitlines() + ["Function : (end)"]:
        if "Function :" in line:
            if inside:
                loops(body)
            inside, body = kernel in line, []
            if inside:
                print(f"## {program}.cu {line.split('Function :')[1].strip()}")
            continue
        if not inside:
            continue
        m = inst.match(line)
        if m:
            pending = (int(m.group(1), 16), m.group(2))
            continue
        h = hi_word.match(line)
        if h and pending:
            hi = int(h.group(1), 16)
            print(f"/*{pending[0]:04x}*/ {pending[1]:<60} # {control(hi)}")
            body.append((pending[0], pending[1], (hi >> 41) & 0xF))
            pending = None


def loops(body: list) -> None:
    """Each loop's instruction mix and stall-count sum (its trip's issue time for one warp)."""
    for addr, text, _ in body:
        b = re.search(r"\bBRA (0x[0-9a-f]+)", text)
        if not b or int(b.group(1), 16) >= addr:
            continue
        start = int(b.group(1), 16)
        trip = [(t, s) for a, t, s in body if start <= a <= addr]
        ops = {}
        for t, _ in trip:
            op = re.sub(r"^@!?U?P\w+ ", "", t).split()[0].split(".")[0]
            ops[op] = ops.get(op, 0) + 1
        mix = ", ".join(f"{k} {v}" for k, v in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0])))
        stalls = sum(s for _, s in trip)
        print(f"# loop {start:04x}-{addr:04x}: {len(trip)} instructions, stall counts {stalls}: {mix}")


if __name__ == "__main__":
    main()
