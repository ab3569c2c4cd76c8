"""The SM clock while a workload runs: NVML's SM clock and power, sampled every 10 ms by a
thread, over a loop that repeats the workload for about `seconds`. Shared by attention.py and
clocks.py."""
import statistics
import threading
import time

import pynvml
import torch


def sustained(fn, seconds=1.5):
    """Runs fn() repeatedly for about `seconds` after a warm-up; returns (calls per second,
    median SM MHz, median W) over the second half of the loop, when the clock has settled."""
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    samples, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            samples.append((time.perf_counter(),
                            pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                            pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0))
            time.sleep(0.01)

    t = threading.Thread(target=sample)
    t.start()
    t0 = time.perf_counter()
    calls, half, t_half, calls_half = 0, t0 + seconds / 2, None, 0
    # A synchronize after each call: a launch that blocks on a full queue would hold the GIL
    # and starve the sampling thread.
    while time.perf_counter() - t0 < seconds:
        fn()
        torch.cuda.synchronize()
        calls += 1
        if t_half is None and time.perf_counter() >= half:
            t_half, calls_half = time.perf_counter(), calls
    t1 = time.perf_counter()
    stop.set()
    t.join()
    late = [s for s in samples if s[0] >= t_half]
    rate = (calls - calls_half) / (t1 - t_half)
    return rate, statistics.median(s[1] for s in late), statistics.median(s[2] for s in late)
