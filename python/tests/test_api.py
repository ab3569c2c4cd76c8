"""run, sweep, tune and analyze against the `sim` command line: the same numbers."""

import threading
import time

import pytest

import hopper_sim as hs
from conftest import sim, sim_error


def test_run_equals_sim_run_json():
    got = hs.run("scenarios/gemm_ws.ron")
    want = sim("run", "scenarios/gemm_ws.ron", "--json", "--no-trace")
    assert got["cycles"] == want["cycles"] == 66804
    assert got == want


def test_run_with_parameters_gpu_and_seed():
    got = hs.run("scenarios/gemm_ws.ron", set={"stages": 2, "warm": True}, gpu="h200-sxm", seed=3)
    want = sim(
        "run", "scenarios/gemm_ws.ron", "--set", "stages=2", "--set", "warm=1",
        "--gpu", "h200-sxm", "--seed", "3", "--json", "--no-trace",
    )
    assert got == want
    assert got["params"]["stages"] == 2 and got["gpu"] == "h200-sxm" and got["seed"] == 3


def test_a_sequence_runs_as_sim_run_runs_it():
    got = hs.run("tests/fixtures/sequence.ron")
    assert got == sim("run", "tests/fixtures/sequence.ron", "--json", "--no-trace")
    assert [k["name"] for k in got["kernels"]] == ["write", "read"]


def test_a_sequence_says_it_writes_no_trace(tmp_path):
    with pytest.warns(UserWarning, match="a sequence of kernels writes no trace yet"):
        hs.run("tests/fixtures/sequence.ron", trace=tmp_path / "t.json")
    assert not (tmp_path / "t.json").exists()


def test_run_writes_a_trace_when_asked(tmp_path):
    path = tmp_path / "run.trace.json.gz"
    report = hs.run("scenarios/block_sum.ron", trace=path)
    assert path.stat().st_size > 0
    assert report["trace"]["path"] == str(path)


def test_sweep_rows_equal_sim_sweep_json():
    got = hs.sweep("scenarios/gemm_ws.ron", set={"stages": range(1, 5), "bk": [32, 64]}, cache=False)
    want = sim(
        "sweep", "scenarios/gemm_ws.ron", "--set", "stages=1..4", "--set", "bk=32,64",
        "--json", "--no-cache",
    )["rows"]
    assert got == want
    assert [r["values"] for r in got[:3]] == [[1, 32], [1, 64], [2, 32]]
    assert got[7]["metrics"]["cycles"] == 66804


def test_sweep_takes_the_command_lines_text_and_gives_records():
    rows = hs.sweep("scenarios/gemm_ws.ron", set={"stages": "3..4", "bk": 64}, records=True, jobs=1)
    want = sim("sweep", "scenarios/gemm_ws.ron", "--set", "stages=3..4", "--set", "bk=64", "--json")
    assert [r["point"] for r in rows] == [0, 1]
    assert [(r["stages"], r["bk"]) for r in rows] == [(3, 64), (4, 64)]
    for row, full in zip(rows, want["rows"]):
        assert {k: row[k] for k in full["metrics"]} == full["metrics"]
        assert row["error"] is None


def test_shards_hold_every_point_once():
    axes = {"stages": [1, 2, 3], "mma": [0, 1]}
    whole = hs.sweep("scenarios/gemm_ws.ron", set=axes, cache=False)
    parts = [hs.sweep("scenarios/gemm_ws.ron", set=axes, shard=(i, 2), cache=False) for i in range(2)]
    assert [r["point"] for r in parts[0]] == [0, 2, 4]
    assert sorted(parts[0] + parts[1], key=lambda r: r["point"]) == whole


def test_a_failing_point_is_a_row_with_its_error():
    rows = hs.sweep("scenarios/gemm_ws.ron", set={"stages": [4, 40]}, cache=False)
    assert "metrics" in rows[0] and "error" not in rows[0]
    assert rows[1]["error"] == sim(
        "sweep", "scenarios/gemm_ws.ron", "--set", "stages=4,40", "--json", "--no-cache"
    )["rows"][1]["error"]


@pytest.mark.parametrize(
    "model,args,options,cli",
    [
        ("gemm", (4096, 4096, 4096), {}, ["gemm", "4096", "4096", "4096"]),
        (
            "gemm", (8192, 8192, 512), {"tile": "128x256x64", "warps": 8, "stages": 4, "l2_hit": 0.8},
            ["gemm", "8192", "8192", "512", "--tile", "128x256x64", "--warps", "8", "--stages", "4", "--l2-hit", "0.8"],
        ),
        ("gemm", (4096, 4096, 4096), {"tune": True, "top_k": 4}, ["gemm", "4096", "4096", "4096", "--tune", "--top-k", "4"]),
        ("attention", (), {"bn": 176, "l2_hit": 0.9, "causal": True}, ["attention", "--bn", "176", "--l2-hit", "0.9", "--causal"]),
        ("decode", (), {"gpu": "h200-sxm", "splits": [1, 8]}, ["decode", "--gpu", "h200-sxm", "--splits", "1,8"]),
        ("occupancy", (), {"threads": 384, "regs": 168}, ["occupancy", "--threads", "384", "--regs", "168"]),
        ("waves", (), {"tiles": 133}, ["waves", "--tiles", "133"]),
        ("wgmma", (), {"n": [64, 256]}, ["wgmma", "--n", "64,256"]),
    ],
)
def test_analyze_equals_sim_analyze_json(model, args, options, cli):
    got = hs.analyze(model, *args, **options)
    assert got == sim("analyze", *cli, "--json")


def test_analyze_figures():
    g = hs.analyze("gemm", 4096, 4096, 4096)
    assert g["model"] == "gemm" and g["flops"] == 2 * 4096**3
    assert g["occupancy"]["ctas_per_sm"] == 2 and g["waves"][0]["waves"] == 4
    d = hs.analyze("decode", gpu="h200-sxm", splits=[1, 8])
    assert d["fastest"] == 8 and round(d["splits"][1]["total_s"] * 1e6, 1) == 29.6
    assert hs.analyze("attention")["consumer_regs"]["total"] == 192
    w = hs.analyze("waves", tiles=133)
    assert (w["waves"], w["per_wave"], round(w["efficiency"], 3)) == (2, 132, 0.504)
    o = hs.analyze("occupancy", threads=384, regs=168)
    assert (o["occupancy"]["ctas_per_sm"], o["occupancy"]["limiter"]) == (1, "regs")
    assert hs.analyze("wgmma", n=[64])["feed"][0]["ss_ratio"] == 1.0


def test_tune_equals_sim_tune_json():
    got = hs.tune(256, 256, 512, top_k=2, repeats=2, cache=False)
    want = sim("tune", "gemm", "256", "256", "512", "--top-k", "2", "--repeats", "2", "--json", "--no-cache")
    assert got == want
    picked = [r for r in got["simulated"] if r["picked"]]
    assert len(picked) == 1 and (picked[0]["bm"], picked[0]["warps"], picked[0]["stages"]) == (64, 4, 5)
    assert got["pick"]["bk"] == picked[0]["bk"] == 128


def test_tune_takes_configs_and_shapes():
    got = hs.tune(shapes=[(256, 256, 512), (512, 256, 512)], configs=[(64, 64, 64, 4, 3), "128x128x64 8 4"], repeats=1, cache=False)
    assert [t["gemm"] for t in got] == [{"m": 256, "n": 256, "k": 512}, {"m": 512, "n": 256, "k": 512}]
    assert got[0]["configs"] == 2 and got[0]["origin"] == "the configs given"


def test_presets_are_sim_presets():
    names = [p["name"] for p in hs.presets()]
    assert names[:2] == ["h100-sxm", "h200-sxm"] and "rtx3070" in names


def test_a_bad_scenario_raises_with_file_line_and_column(tmp_path):
    bad = tmp_path / "bad.ron"
    bad.write_text('Scenario(\n    name: "bad",\n    gpu: "h100-sxm",\n    kernal: 3,\n)\n')
    with pytest.raises(hs.SimError) as e:
        hs.run(bad)
    message = str(e.value)
    assert message.startswith("Unexpected field named `kernal` in `Scenario`")
    assert f" --> {bad}:4:5\n" in message
    assert message == sim_error("run", str(bad), "--no-trace")
    # A sweep compiles the scenario at each point: the error is each row's, as in `sim sweep`.
    rows = hs.sweep(bad, set={"x": [1, 2]}, cache=False)
    assert [r["error"] for r in rows] == [message, message]


def test_other_errors_are_the_command_lines_messages():
    cases = [
        (lambda: hs.run("scenarios/none.ron"), ["run", "scenarios/none.ron"]),
        (lambda: hs.run("scenarios/gemm_ws.ron", gpu="b200"), ["run", "scenarios/gemm_ws.ron", "--gpu", "b200"]),
        (lambda: hs.run("scenarios/gemm_ws.ron", set={"nope": 1}), ["run", "scenarios/gemm_ws.ron", "--set", "nope=1"]),
        (lambda: hs.analyze("gemm", 64, 64, 64, l2_hit=1.5), ["analyze", "gemm", "64", "64", "64", "--l2-hit", "1.5"]),
        (lambda: hs.tune(64, 64, 64, gpu="b200"), ["tune", "gemm", "64", "64", "64", "--gpu", "b200"]),
    ]
    for call, cli in cases:
        with pytest.raises(hs.SimError) as e:
            call()
        assert str(e.value) == sim_error(*cli, "--no-trace") if cli[0] == "run" else sim_error(*cli)
    with pytest.raises(hs.SimError, match="unexpected argument '--tiles'"):
        hs.analyze("gemm", 64, 64, 64, tiles="64x64x64")
    with pytest.raises(hs.SimError, match="`I/N`|is not I/N"):
        hs.sweep("scenarios/gemm_ws.ron", set={"stages": [1]}, shard=(2, 2))


def test_simulation_releases_the_gil():
    """Another thread runs Python while a simulation runs: the simulation does not hold the GIL."""
    ticks = 0
    done = threading.Event()

    def simulate():
        hs.run("scenarios/gemm_ws.ron", set={"k": 262144})
        done.set()

    worker = threading.Thread(target=simulate)
    start = time.perf_counter()
    worker.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    worker.join()
    elapsed = time.perf_counter() - start
    # Holding the GIL, the simulation would leave this thread about one tick per switch
    # interval (5 ms) at most; released, it ticks about once a millisecond.
    assert elapsed > 0.2, elapsed
    assert ticks > elapsed / 0.005 * 2, (ticks, elapsed)
