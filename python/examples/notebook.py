# %% [markdown]
# # How deep should the warp-specialized GEMM's ring buffer be?
#
# A notebook-style tour of `hopper_sim` (cells split by `# %%`: VS Code, Jupytext and
# PyCharm open it as a notebook; `python python/examples/notebook.py` runs it whole, from the
# repository root). Every result is a plain dict or list of dicts, so pandas takes it as is.
# python/tests/test_examples.py runs this file and checks what it prints.

# %%
import pandas as pd

import hopper_sim as hs

pd.set_option("display.width", 120)
pd.set_option("display.max_columns", None)
SCENARIO = "scenarios/gemm_ws.ron"

# %% [markdown]
# ## One run
# `run` returns the object `sim run --json` prints: cycles, time, TFLOP/s, per-unit busy
# fractions, the warps' stall cycles per role, the analytic bound.

# %%
report = hs.run(SCENARIO)
print(f"{report['scenario']} on {report['gpu']}: {report['cycles']:,} cycles, "
      f"{report['time_us']:.2f} µs, {report['tflops']:.1f} TFLOP/s")

# The stall cycles of each role, one row per role.
stalls = pd.DataFrame({role: r["states"] for role, r in report["roles"].items()}).T
print(stalls.loc[:, (stalls > 0).any()])

# %% [markdown]
# ## A sweep into a DataFrame
# `sweep(..., records=True)` gives one flat record per point, the columns `sim sweep --csv`
# prints: the point, one column per swept parameter, the metrics, and the error of a point
# that failed.

# %%
rows = hs.sweep(SCENARIO, set={"stages": range(1, 7), "bk": [32, 64]}, records=True)
df = pd.DataFrame(rows).astype({"cycles": "Int64"})
print(df[["stages", "bk", "cycles", "tflops", "binding", "top_stall"]].to_string(index=False))

# %%
# Points that could not run keep their row, with the simulator's reason.
failed = df[df["error"].notna()]
for _, row in failed.iterrows():
    print(f"stages={row['stages']} bk={row['bk']}: {row['error'].splitlines()[0]}")

# %%
table = df.pivot(index="stages", columns="bk", values="cycles")
print("cycles by stages (rows) and bk (columns):")
print(table)
best = df.loc[df["cycles"].idxmin()]
print(f"fastest: stages={best['stages']} bk={best['bk']}, {best['cycles']:,} cycles "
      f"({best['binding']} binding)")
# One stage serializes the TMA load and the wgmma; the pipelined depths are faster.
assert table.loc[1].min() > table.loc[4].min()

# %% [markdown]
# ## The analytic model beside it
# `analyze` is `sim analyze ... --json`: the GEMM model's waves, and the roofline cases.

# %%
g = hs.analyze("gemm", 4096, 4096, 4096, tile="128x256x64", warps=8, stages=4)
print(pd.DataFrame(g["waves"]))
print(pd.DataFrame(g["roofline"])[["case", "dram_bytes", "t_compute_s", "t_memory_s", "bound"]])

# %% [markdown]
# ## Autotuning by simulation
# `tune` runs Triton's autotuner steps and simulates the survivors; `simulated` is one flat
# record per config.

# %%
tuned = hs.tune(256, 256, 512, top_k=2, repeats=2)
sims = pd.DataFrame(tuned["simulated"])
print(sims[["model_rank", "sim_rank", "bm", "bn", "bk", "warps", "stages", "median_ms", "picked"]])
print(tuned["pick"]["why"])
