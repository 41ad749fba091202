"""What the Python benchmarks share: GPU time of a torch callable (CUDA events around each call,
median), and a step captured as a CUDA graph the way a server captures it."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "gpu", "apps"))
from common import capture as capture_like_the_tests  # noqa: E402


def median_ms(fn, reps=20):
    """Median milliseconds of fn() over reps calls, after 3 untimed warm-up calls."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def capture_graph(step):
    """Warms step() up twice on a side stream, then captures one call as a CUDA graph: returns it.
    The GPU test apps' capture (tests/gpu/apps/common.py), so benchmarks and tests capture alike."""
    return capture_like_the_tests(step)[0]
