"""The examples run as they are shown: the notebook-style tour and the Dask sweep."""

import subprocess
import sys

import pytest

from conftest import ROOT, sim


def example(name: str, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, str(ROOT / "python" / "examples" / name), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_the_notebook_example():
    out = example("notebook.py")
    cycles = sim("run", "scenarios/gemm_ws.ron", "--json", "--no-trace")["cycles"]
    assert out.startswith(f"gemm_ws on h100-sxm: {cycles:,} cycles")
    assert "fastest: stages=4 bk=32, 66,727 cycles (tensor binding)" in out
    assert "stages=5 bk=64: scenarios/gemm_ws.ron: the CTA needs 245840 bytes of shared memory" in out
    assert "pick: 64x64x128 4w 5s, the fastest" in out


@pytest.mark.parametrize("mode", [[], ["--processes"]], ids=["threads", "processes"])
def test_the_dask_example(mode):
    out = example("dask_sweep.py", "--check", *mode)
    assert "16 points of scenarios/gemm_ws.ron in 4 shards on 2" in out
    assert "  15 stages=4 bk=64 warm=1:   66548 cycles" in out
    assert out.rstrip().endswith("same rows as the sweep run in one process")
