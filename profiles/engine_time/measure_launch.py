"""Measure, on a GPU server, what an engine's host pays to drive the GPU without CUDA graphs, and how fast
its host CPU is per thread.

Standalone (torch + the standard library; nothing from draftsim), run on the machine to measure:

    python3 profiles/engine_time/measure_launch.py --out DIR          # ~3 min on one H100

Writes DIR/launch.json. What it measures (`torch.set_num_threads(1)`, recorded):

* `host`: the CPU model, and the single-thread speed of the host as the time of fixed CPU workloads:
  `calibration_us` — the pure-Python workload of profiles/engine_time/measure_vllm.py (`calibration_us`,
  the same code, repeated here so this script stays standalone), which was timed on every step of the vLLM
  host-time measurement, so the ratio of the two is the host-speed scale of those constants; `numpy_us`
  (small-array numpy, as in an engine's input preparation) and `torch_cpu_us` (dispatch of tiny torch CPU
  ops) as cross-checks of that ratio.
* `launch`: per eager call of small CUDA ops (the GPU never the bottleneck: tiny tensors), host seconds per
  call and kernels per call (torch.profiler), so seconds per kernel launched from Python; a single-rank
  NCCL all-reduce's enqueue time (the host cost of one collective call through torch.distributed); CUDA
  graph replay of n tiny kernels (host seconds per replay, device seconds per replay: fixed + per node).
* `forward`: eager vs CUDA-graph forwards of a stack of Llama-3-8B-shaped decoder layers (unfused torch
  ops, SDPA attention over a 512-token cache) at several batch sizes, with the kernel count of one forward:
  the data for checking that an eager pass costs max(kernel time, kernels × launch cost) — the engine-time
  model's eager rule (profiles/engine_time/model.py).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

perf_ns = time.perf_counter_ns


def calibration_us(n: int = 5) -> float:
    """The workload of measure_vllm.calibration_us, unchanged (dicts, lists, attribute access, sorting)."""
    class Obj:
        __slots__ = ("a", "b", "c")

        def __init__(self, i):
            self.a, self.b, self.c = i, i * 2, [i]

    times = []
    for _ in range(n):
        t0 = perf_ns()
        d = {}
        objs = [Obj(i) for i in range(2000)]
        for _ in range(20):
            for o in objs:
                d[o.a] = d.get(o.a, 0) + o.b + len(o.c)
            objs.sort(key=lambda o: -o.a)
        times.append((perf_ns() - t0) / 1000)
    return round(statistics.median(times), 1)


def numpy_us(n: int = 5) -> float:
    import numpy as np
    rng = np.random.default_rng(0)
    a = rng.integers(0, 1000, 256)
    times = []
    for _ in range(n):
        t0 = perf_ns()
        for _ in range(2000):
            b = np.cumsum(a)
            c = a[b % 256]
            np.add(c, 1, out=c)
            _ = np.searchsorted(b, 5000)
        times.append((perf_ns() - t0) / 1000)
    return round(statistics.median(times), 1)


def torch_cpu_us(n: int = 5) -> float:
    import torch
    x = torch.ones(4)
    times = []
    for _ in range(n):
        t0 = perf_ns()
        for _ in range(2000):
            y = x + 1.0
            y = y * x
            _ = y.sum()
        times.append((perf_ns() - t0) / 1000)
    return round(statistics.median(times), 1)


def cpu_model() -> dict:
    info = {"model_name": None, "mhz": None, "logical_cpus": os.cpu_count()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name" and info["model_name"] is None:
                info["model_name"] = value.strip()
            elif key == "cpu MHz" and info["mhz"] is None:
                info["mhz"] = value.strip()
    except OSError:
        pass
    return info


def host_speed(repeats: int) -> dict:
    samples = {"calibration_us": [], "numpy_us": [], "torch_cpu_us": []}
    for _ in range(repeats):  # interleaved so that a slow period hits all three alike
        samples["calibration_us"].append(calibration_us())
        samples["numpy_us"].append(numpy_us())
        samples["torch_cpu_us"].append(torch_cpu_us())
    out = {"cpu": cpu_model(), "python": platform.python_version(), "repeats": repeats}
    for key, values in samples.items():
        out[key] = {"median": statistics.median(values), "min": min(values), "max": max(values), "samples": values}
    return out


# ---- CUDA --------------------------------------------------------------------------------------------
def _kernels_per_call(fn, calls: int = 20) -> float:
    import torch
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    return kernels / calls


def _host_seconds_per_call(fn, calls: int, repeats: int = 7) -> dict:
    """Back-to-back calls then one sync: with tiny tensors the GPU never waits for work, so the wall time per
    call is the host's issue time."""
    import torch
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    walls = []
    for _ in range(repeats):
        t0 = perf_ns()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        walls.append((perf_ns() - t0) * 1e-9 / calls)
    return {"median_s": statistics.median(walls), "min_s": min(walls), "max_s": max(walls)}


def launch_costs() -> dict:
    import torch
    import torch.nn.functional as F
    dev = torch.device("cuda")
    x = torch.randn(1, 64, device=dev, dtype=torch.bfloat16)
    w = torch.randn(64, 64, device=dev, dtype=torch.bfloat16)
    g = torch.ones(64, device=dev, dtype=torch.bfloat16)
    s = torch.zeros(1, device=dev)
    cache = torch.zeros(128, 8, 64, device=dev, dtype=torch.bfloat16)
    idx = torch.tensor([3], device=dev)
    kv = torch.randn(1, 8, 64, device=dev, dtype=torch.bfloat16)
    q = torch.randn(1, 32, 1, 64, device=dev, dtype=torch.bfloat16)
    k = torch.randn(1, 8, 128, 64, device=dev, dtype=torch.bfloat16)
    ops = {
        "add_scalar_inplace": lambda: s.add_(1.0),
        "linear": lambda: F.linear(x, w),
        "silu_mul": lambda: F.silu(x) * x,
        "rms_norm": lambda: F.rms_norm(x, (64,), g),
        "index_copy_kv_write": lambda: cache.index_copy_(0, idx, kv),
        "sdpa_decode_gqa": lambda: F.scaled_dot_product_attention(q, k, k, enable_gqa=True),
        "cat": lambda: torch.cat([x, x], dim=-1),
    }
    out = {}
    for name, fn in ops.items():
        host = _host_seconds_per_call(fn, 2000)
        kernels = _kernels_per_call(fn)
        out[name] = {**host, "kernels_per_call": kernels,
                     "seconds_per_kernel": host["median_s"] / kernels if kernels else None}
    return out


def nccl_enqueue() -> dict:
    import torch
    import torch.distributed as dist
    try:
        dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29577", rank=0, world_size=1)
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        return {"error": f"{type(exc).__name__}: {exc}"}
    t = torch.ones(4096, device="cuda", dtype=torch.bfloat16)
    host = _host_seconds_per_call(lambda: dist.all_reduce(t), 2000)
    kernels = _kernels_per_call(lambda: dist.all_reduce(t))
    dist.destroy_process_group()
    return {**host, "kernels_per_call": kernels, "world_size": 1,
            "note": "one rank: the host cost of enqueueing a collective through torch.distributed/NCCL; "
                    "the cross-rank synchronisation of a real TP group is not in it"}


def graph_replay() -> dict:
    import torch
    out = {}
    s = torch.zeros(1, device="cuda")
    for nodes in (1, 8, 64, 512):
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                for _ in range(nodes):
                    s.add_(1.0)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(nodes):
                s.add_(1.0)
        host = _host_seconds_per_call(graph.replay, 200 if nodes < 512 else 50)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        device = []
        for _ in range(20):
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            device.append(start.elapsed_time(end) * 1e-3)
        out[str(nodes)] = {"wall_per_replay": host, "device_s_median": statistics.median(device)}
    return out


def _decoder_stack(layers: int, batch: int, ctx: int, device: str = "cuda", dims=(4096, 32, 8, 128, 14336)):
    """Llama-3-8B-shaped decoder layers (hidden 4096, 32 query / 8 KV heads of 128, MLP 14336), unfused
    torch ops, random bf16 weights; returns a decode forward over a `ctx`-token cache."""
    import torch
    import torch.nn.functional as F
    dev, dt = torch.device(device), torch.bfloat16
    h, nq, nk, d, inter = dims
    gen = torch.Generator(device=dev).manual_seed(0)
    def rnd(*shape):
        return (torch.randn(*shape, device=dev, dtype=dt, generator=gen) * 0.02)
    params = [dict(wqkv=rnd((nq + 2 * nk) * d, h), wo=rnd(h, nq * d), wgu=rnd(2 * inter, h), wd=rnd(h, inter),
                   n1=torch.ones(h, device=dev, dtype=dt), n2=torch.ones(h, device=dev, dtype=dt),
                   kc=rnd(batch, nk, ctx + 1, d), vc=rnd(batch, nk, ctx + 1, d)) for _ in range(layers)]
    x0 = rnd(batch, h)
    pos = torch.full((batch,), ctx, device=dev)
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2, device=dev, dtype=torch.float32) / d))

    def rope(t):
        ang = pos[:, None, None].float() * inv[None, None, :]
        cos, sin = ang.cos().to(dt), ang.sin().to(dt)
        a, b = t[..., : d // 2], t[..., d // 2:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)

    def forward():
        x = x0
        for p in params:
            r = x
            x = F.rms_norm(x, (h,), p["n1"])
            qkv = F.linear(x, p["wqkv"])
            q, k, v = qkv.split([nq * d, nk * d, nk * d], dim=-1)
            q = rope(q.view(batch, nq, d))
            k = rope(k.view(batch, nk, d))
            p["kc"][:, :, ctx] = k
            p["vc"][:, :, ctx] = v.view(batch, nk, d)
            o = F.scaled_dot_product_attention(q[:, :, None, :], p["kc"], p["vc"], enable_gqa=True)
            x = r + F.linear(o.reshape(batch, nq * d), p["wo"])
            r = x
            x = F.rms_norm(x, (h,), p["n2"])
            gate, up = F.linear(x, p["wgu"]).chunk(2, dim=-1)
            x = r + F.linear(F.silu(gate) * up, p["wd"])
        return x
    return forward


def eager_vs_graph(layers: int, batches: tuple[int, ...], ctx: int) -> dict:
    import torch
    out = {}
    for batch in batches:
        fwd = _decoder_stack(layers, batch, ctx)
        kernels = _kernels_per_call(fwd, calls=3)
        for _ in range(5):
            fwd()
        torch.cuda.synchronize()
        eager = []
        for _ in range(30):
            t0 = perf_ns()
            fwd()
            torch.cuda.synchronize()
            eager.append((perf_ns() - t0) * 1e-9)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                fwd()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fwd()
        for _ in range(5):
            graph.replay()
        torch.cuda.synchronize()
        replay = []
        for _ in range(30):
            t0 = perf_ns()
            graph.replay()
            torch.cuda.synchronize()
            replay.append((perf_ns() - t0) * 1e-9)
        # the eager forward's host issue time alone: queue the forward behind a long GPU sleep so the host
        # never waits for the GPU, and time the Python calls
        issue = []
        for _ in range(10):
            torch.cuda._sleep(50_000_000)
            t0 = perf_ns()
            fwd()
            issue.append((perf_ns() - t0) * 1e-9)
            torch.cuda.synchronize()
        out[str(batch)] = {"kernels": kernels, "eager_s_median": statistics.median(eager),
                           "graph_s_median": statistics.median(replay),
                           "eager_issue_s_median": statistics.median(issue),
                           "eager_s_min": min(eager), "graph_s_min": min(replay)}
        del graph, fwd
        torch.cuda.empty_cache()
    return {"layers": layers, "ctx_tokens": ctx, "shape": "llama-3-8b layer", "batches": out}


CXX_LAUNCH = r"""
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
__global__ void empty(float *x) { if (x == nullptr && threadIdx.x == 12345) x[0] = 1.f; }
int main() {
  float *d; cudaMalloc(&d, 4); cudaStream_t s; cudaStreamCreate(&s);
  for (int i = 0; i < 1000; ++i) empty<<<1, 32, 0, s>>>(d);
  cudaStreamSynchronize(s);
  const int n = 200000; double best = 1e9;
  for (int r = 0; r < 5; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) empty<<<1, 32, 0, s>>>(d);
    cudaStreamSynchronize(s);
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
    printf("launch_us %.4f\n", us); if (us < best) best = us;
  }
  printf("best_launch_us %.4f\n", best);
  return 0;
}
"""


def cxx_launch() -> dict:
    """Host time per kernel launched from C++ (cudaLaunchKernel of an empty kernel, back to back): what a
    C++ runtime (TensorRT's enqueue) pays per kernel, without Python."""
    import shutil
    import subprocess
    import tempfile
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    with tempfile.TemporaryDirectory() as d:
        src, exe = Path(d) / "launch.cu", Path(d) / "launch"
        src.write_text(CXX_LAUNCH)
        subprocess.run([nvcc, "-O2", "-o", str(exe), str(src)], check=True, capture_output=True, timeout=120)
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True, timeout=120).stdout
    runs = [float(line.split()[1]) for line in out.splitlines() if line.startswith("launch_us")]
    return {"us_per_launch": runs, "median_us": statistics.median(runs), "nvcc": nvcc}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--host-repeats", type=int, default=15)
    parser.add_argument("--host-only", action="store_true", help="only the host-speed workloads (any machine)")
    args = parser.parse_args()
    import torch
    torch.set_num_threads(1)
    result = {"tool": "profiles/engine_time/measure_launch.py", "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "torch": torch.__version__, "torch_threads": torch.get_num_threads(), "platform": platform.platform()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def part(name, fn, *a):  # each part on its own: one failing part is reported, the others kept
        try:
            result[name] = fn(*a)
        except Exception as exc:  # noqa: BLE001
            result[name] = {"error": f"{type(exc).__name__}: {exc}"}
        (out / "launch.json").write_text(json.dumps(result, indent=1))

    part("host", host_speed, args.host_repeats)
    if not args.host_only and torch.cuda.is_available():
        result["gpu"] = {"name": torch.cuda.get_device_name(), "cuda": torch.version.cuda}
        part("launch", launch_costs)
        part("graph_replay", graph_replay)
        part("forward", eager_vs_graph, 4, (1, 16, 64), 512)
        part("forward_gpu_bound", eager_vs_graph, 4, (512,), 2048)
        part("cxx_launch", cxx_launch)
        part("nccl_all_reduce", nccl_enqueue)
        part("host_after", host_speed, 5)   # did the host's speed drift during the GPU part?
    print(json.dumps({k: v for k, v in result.items() if k != "host"}, indent=1)[:6000])
    print("host:", {k: result["host"][k]["median"] for k in ("calibration_us", "numpy_us", "torch_cpu_us")},
          result["host"]["cpu"])


if __name__ == "__main__":
    main()
