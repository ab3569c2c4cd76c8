"""The Hopper SM simulator (`sim`) from Python: run, sweep, tune and analyze.

Every function returns plain dicts and lists, the JSON objects that `sim run --json`,
`sim sweep --json`, `sim tune gemm --json` and `sim analyze ... --json` print, ready for
`pandas.DataFrame` or `pandas.json_normalize`. Errors raise `SimError` with the message the
command line prints (a scenario's errors cite file:line:column). Paths are relative to the
working directory, as on the command line. Simulations run with the GIL released, so threads
(or a Dask or Ray cluster of them) run several at once.

See docs/python.md and python/README.md.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native

__all__ = [
    "SimError",
    "analyze",
    "presets",
    "run",
    "sweep",
    "tune",
    "__version__",
]

PathLike = Union[str, "os.PathLike[str]"]
Value = Union[int, bool, str]
AxisValues = Union[int, bool, str, Iterable[Union[int, bool]]]
Config = Union[str, Tuple[int, int, int, int, int]]


class SimError(Exception):
    """The simulator refused or failed a request; the message is the one `sim` prints."""


def _call(command: str, request: Mapping[str, Any]) -> Any:
    ok, text = _native.call(command, json.dumps(request))
    if not ok:
        raise SimError(text)
    return json.loads(text)


# The sweep cache is keyed by the code that computes its entries: this module's own file, not
# the Python interpreter that loads it.
__version__: str = _call("init", {"build_file": _native.__file__})


def _int(key: str, value: Value) -> int:
    """A parameter value as `--set` takes it: an integer or a bool (1/0), or their text."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip().replace("_", "")
        if text in ("true", "false"):
            return int(text == "true")
        try:
            return int(text)
        except ValueError:
            pass
    raise SimError(
        f"the value of `{key}` must be an integer or true/false, not `{value}`"
    )


def _path(p: PathLike) -> str:
    return os.fspath(p)


def _cache(cache: Union[bool, PathLike]) -> Optional[str]:
    if cache is True:
        return "default"
    if cache is False or cache is None:
        return None
    return _path(cache)


def run(
    scenario: PathLike,
    set: Optional[Mapping[str, Value]] = None,
    *,
    gpu: Optional[str] = None,
    seed: int = 0,
    clock_mhz: Optional[float] = None,
    max_cycles: Optional[int] = None,
    livelock_cycles: Optional[int] = None,
    max_wall: Optional[float] = None,
    check: bool = True,
    trace: Optional[PathLike] = None,
    warn: bool = True,
) -> Dict[str, Any]:
    """Simulates a scenario: the object `sim run --json` prints.

    `set` overrides scenario parameters (`{"stages": 4}`, as `--set stages=4`); `gpu` runs on
    another preset (`presets()`); `trace` writes a trace file there (none by default, unlike
    `sim run`). A scenario that is a sequence of kernels gives the sequence's object. Register
    spills are reported as Python warnings unless `warn` is False.
    """
    out = _call(
        "run",
        {
            "scenario": _path(scenario),
            "sets": [[k, _int(k, v)] for k, v in (set or {}).items()],
            "gpu": gpu,
            "seed": seed,
            "clock_mhz": clock_mhz,
            "max_cycles": max_cycles,
            "livelock_cycles": livelock_cycles,
            "max_wall": max_wall,
            "check": check,
            "trace": None if trace is None else _path(trace),
        },
    )
    if warn and out["warnings"]:
        import warnings

        for w in out["warnings"]:
            warnings.warn(f"{_path(scenario)}: {w}", stacklevel=2)
    return out["result"]


def _axis(key: str, values: AxisValues) -> str:
    """One `--set KEY=VALUES` of a sweep: a value, a list or range of them, or the CLI's text
    (`"1..6"`, `"128,256"`)."""
    if isinstance(values, str):
        return f"{key}={values}"
    if isinstance(values, (int, bool)):
        return f"{key}={_int(key, values)}"
    return f"{key}=" + ",".join(str(_int(key, v)) for v in values)


def _shard(shard: Union[None, str, Tuple[int, int]]) -> Optional[str]:
    if shard is None or isinstance(shard, str):
        return shard
    index, count = shard
    return f"{index}/{count}"


def sweep(
    scenario: PathLike,
    set: Optional[Mapping[str, AxisValues]] = None,
    *,
    gpu: Optional[str] = None,
    seed: int = 0,
    max_cycles: Optional[int] = None,
    check: bool = True,
    jobs: Optional[int] = None,
    shard: Union[None, str, Tuple[int, int]] = None,
    cache: Union[bool, PathLike] = True,
    records: bool = False,
) -> List[Dict[str, Any]]:
    """Simulates a scenario at every point of a product of parameter values: the `rows` of
    `sim sweep --json`, in product order (the first parameter outermost).

    `set` maps each swept parameter to its values: a list or range (`{"stages": range(1, 5)}`),
    one value, or the command line's text (`"1..4"`, `"128,256"`). Each row holds `point` (its
    index in the product), `values` (in the order of `set`) and `metrics` (cycles, time_us,
    tflops, dram_gbs, binding, top_stall) or `error`. `shard=(i, n)` runs every n-th point from
    i, as `--shard i/n`: rows keep their indices, so the shards' rows sorted by `point` are the
    whole sweep's. `jobs` threads run the points (default: one per core). `cache` is the result
    cache: True for `sim sweep`'s folder, False for none, or a folder.

    With `records=True`, each row is flat, as `sim sweep --csv` prints it: `point`, one key per
    parameter, the metrics and `error` (None where the point ran).
    """
    out = _call(
        "sweep",
        {
            "scenario": _path(scenario),
            "axes": [_axis(k, v) for k, v in (set or {}).items()],
            "gpu": gpu,
            "seed": seed,
            "max_cycles": max_cycles,
            "check": check,
            "jobs": jobs,
            "shard": _shard(shard),
            "cache": _cache(cache),
        },
    )
    rows: List[Dict[str, Any]] = out["rows"]
    if not records:
        return rows
    names = [a["name"] for a in out["axes"]]
    return [_record(names, row) for row in rows]


_METRICS = ("cycles", "time_us", "tflops", "dram_gbs", "binding", "top_stall")


def _record(names: Sequence[str], row: Mapping[str, Any]) -> Dict[str, Any]:
    flat: Dict[str, Any] = {"point": row["point"]}
    flat.update(zip(names, row["values"]))
    metrics = row.get("metrics") or {}
    for m in _METRICS:
        flat[m] = metrics.get(m)
    flat["error"] = row.get("error")
    return flat


def _config_line(c: Config) -> str:
    if isinstance(c, str):
        return c
    bm, bn, bk, warps, stages = c
    return f"{bm}x{bn}x{bk} {warps} {stages}"


def tune(
    m: Optional[int] = None,
    n: Optional[int] = None,
    k: Optional[int] = None,
    *,
    shapes: Optional[Iterable[Tuple[int, int, int]]] = None,
    gpu: str = "h100-sxm",
    configs: Union[str, Iterable[Config]] = "triton",
    top_k: int = 8,
    repeats: int = 5,
    seed: int = 0,
    max_cycles: Optional[int] = None,
    jobs: Optional[int] = None,
    cache: Union[bool, PathLike] = True,
) -> Any:
    """Triton's autotuner steps for a GEMM with the survivors simulated: the object
    `sim tune gemm M N K --json` prints (for `shapes`, a list of them, one per shape).

    `configs` is "triton" (Triton's matmul space for the GPU), a file of
    `BMxBNxBK warps stages` lines, or the configs themselves, as such lines or as
    (bm, bn, bk, warps, stages) tuples. The result's `simulated` list holds one flat record
    per simulated config (its place in the perf model's and the simulated ranking, median and
    [p20, p80] in ms, binding unit, top stall, whether pick_best chose it).
    """
    if shapes is None:
        if m is None or n is None or k is None:
            raise SimError("give M N K or shapes=[(M, N, K), ...]")
        problems = [(m, n, k)]
    else:
        if m is not None or n is not None or k is not None:
            raise SimError("give either M N K or shapes, not both")
        problems = [tuple(s) for s in shapes]
    request: Dict[str, Any] = {
        "gpu": gpu,
        "shapes": problems,
        "top_k": top_k,
        "repeats": repeats,
        "seed": seed,
        "max_cycles": max_cycles,
        "jobs": jobs,
        "cache": _cache(cache),
    }
    if isinstance(configs, (str, os.PathLike)):
        request["configs"] = _path(configs)
    else:
        request["configs"] = "the configs given"
        request["configs_text"] = "\n".join(_config_line(c) for c in configs) + "\n"
    out = _call("tune", request)
    return out if shapes is not None else out[0]


def _option(key: str, value: Any) -> List[str]:
    flag = "--" + key.replace("_", "-")
    if value is None or value is False:
        return []
    if value is True:
        return [flag]
    if isinstance(value, (list, tuple, range)):
        value = ",".join(str(v) for v in value)
    return [f"{flag}={value}"]


def analyze(model: str, *args: Any, **options: Any) -> Dict[str, Any]:
    """An analytic model, as `sim analyze MODEL ARGS --json` prints it (no simulation).

    The model is `gemm`, `attention`, `decode`, `occupancy`, `waves` or `wgmma`; positional arguments and keyword options are
    the command's, an option's dashes written as underscores and a flag as True:
    `analyze("gemm", 4096, 4096, 4096, tile="128x256x64", warps=8)`,
    `analyze("gemm", 4096, 4096, 4096, tune=True)` (the autotuner's analytic steps),
    `analyze("attention", hd=128, bn=176, l2_hit=0.9)`, `analyze("decode", splits=[1, 8])`.
    `analyze("waves", tiles=133)`. The object has a `model` field (`gemm`, `gemm_tune`,
    `attention`, `decode`, `occupancy`, `waves`, `wgmma`).
    """
    argv = [model]
    for key, value in options.items():
        argv += _option(key, value)
    argv += [str(a) for a in args]
    return _call("analyze", {"args": argv})


def presets() -> List[Dict[str, str]]:
    """The built-in GPU presets (`sim presets`): each one's name and description."""
    return _call("presets", {})
