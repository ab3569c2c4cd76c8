"""A sweep spread over a local Dask cluster: each task runs one shard of the sweep
(`shard=(i, n)`, as `sim sweep --shard i/n`), and the shards' rows, sorted by their point
index, are the whole sweep's.

    python python/examples/dask_sweep.py [--workers 2] [--shards 4] [--processes] [--check]

from the repository root (the scenario's path is relative to it). A cluster of real machines
works the same way with `Client("scheduler-address:8786")` in place of the LocalCluster, as
long as every worker has hopper_sim installed and the scenario file at the same path.
`--check` also runs the sweep in this process and compares; python/tests/test_examples.py
runs this file with it.
"""

import argparse
import sys
import time

from dask.distributed import Client, LocalCluster

import hopper_sim as hs

SCENARIO = "scenarios/gemm_ws.ron"
AXES = {"stages": [1, 2, 3, 4], "bk": [32, 64], "warm": [0, 1]}


def shard(index: int, count: int) -> list:
    """One shard's rows, run on a worker. One thread per task: the cluster is the parallelism.
    No cache: each worker would keep its own."""
    return hs.sweep(SCENARIO, set=AXES, shard=(index, count), jobs=1, cache=False)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--processes", action="store_true", help="workers as processes, not threads")
    p.add_argument("--check", action="store_true", help="compare with the sweep run here")
    a = p.parse_args()

    start = time.perf_counter()
    with LocalCluster(
        n_workers=a.workers,
        threads_per_worker=1,
        processes=a.processes,
        dashboard_address=None,
    ) as cluster, Client(cluster) as client:
        futures = [client.submit(shard, i, a.shards, pure=False) for i in range(a.shards)]
        parts = client.gather(futures)
    rows = sorted((r for part in parts for r in part), key=lambda r: r["point"])
    took = time.perf_counter() - start

    names = list(AXES)
    print(f"{len(rows)} points of {SCENARIO} in {a.shards} shards on {a.workers} "
          f"{'process' if a.processes else 'thread'} workers, {took:.1f} s")
    for r in rows:
        values = " ".join(f"{k}={v}" for k, v in zip(names, r["values"]))
        result = f"{r['metrics']['cycles']:>7} cycles" if "metrics" in r else r["error"].splitlines()[0]
        print(f"  {r['point']:>2} {values}: {result}")
    assert [r["point"] for r in rows] == list(range(len(rows))), "a point is missing or repeated"

    if a.check:
        local = hs.sweep(SCENARIO, set=AXES, cache=False)
        if rows != local:
            print("the cluster's rows differ from the local sweep's", file=sys.stderr)
            return 1
        print("same rows as the sweep run in one process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
