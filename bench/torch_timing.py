"""GPU time of a torch callable for the Python benchmarks: CUDA events around each call, median."""
import torch


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
