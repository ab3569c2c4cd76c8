"""The Python module's tests (tests/run runs them): the module against the `sim` binary built
from the same sources. They run from the repository root, where the scenarios' paths start."""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def at_root(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    # Where `sim` and the module keep their sweep caches: nothing lands in the checkout.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def sim_bin() -> str:
    """The `sim` binary: $SIM_BIN (tests/run sets it), else the test profile's build."""
    path = os.environ.get("SIM_BIN") or str(ROOT / "target" / "debug" / "sim")
    assert Path(path).is_file(), f"no sim binary at {path}: build it (cargo test) or set SIM_BIN"
    return path


def sim(*args: str):
    """`sim ARGS` from the repository root; its standard output read as JSON."""
    out = subprocess.run(
        [sim_bin(), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def sim_error(*args: str) -> str:
    """`sim ARGS`, which must fail: the message it prints after `error: `."""
    out = subprocess.run([sim_bin(), *args], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode != 0, out.stdout
    return out.stderr.strip().removeprefix("error: ")
