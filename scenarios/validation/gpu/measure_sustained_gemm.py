"""GEMMs timed as the measured tables time them (a short burst on an idle GPU) and as a busy server runs
them (back to back for seconds, at the board's power limit), with the SM clock and board power of each.

    python3 -m scenarios.validation.gpu.measure_sustained_gemm --out DIR [--tiny --device cpu]

Why. draftsim prices GEMMs from aiconfigurator's measured tables. Its collector times a GEMM in a short burst
(`collector/helper.py::benchmark_with_power`: 3 eager warm-ups, a CUDA graph of the op on 6 weight copies,
3 warm-up replays, 6 timed replays; `collector/vllm/collect_gemm.py`), one case after another with set-up
between them, so the GPU starts each case with its power budget unspent and at its boost clock. A server
under load runs its steps back to back; an H100 then sits at its 700 W limit and lowers the SM clock
(the 2026-11-26 held-out run logged 1,350 MHz in a GEMM loop, 1,680 MHz in verify forwards: data
profiles/data/gpu-forwards/h100-sxm-2026-11-26/power.csv). This script measures, per GEMM shape and row
count m, the time per GEMM both ways and the clock and power of the sustained run, so the ratio
sustained / burst can be read as a function of how compute-bound the GEMM is.

Parts (each guarded; a failed part is logged and the others run):
- `settle`: one 8192^3 bf16 GEMM graph, idle, then replayed back to back for `--settle-s` seconds; every
  replay's time and NVML samples every 10 ms (how fast the clock falls and where it settles).
- `grid`: per shape (on the tables' grid: Llama-3-8B's QKV and O, the grid points beside its gate-up and
  down, a wide LM-head-like GEMM, a small model's up and down) and m: `idle_s` idle, the burst protocol above (time per GEMM = elapsed / 6 replays / 6 copies), then the
  same 6-GEMM sequence captured as enough copies that one replay lasts >= 2 ms, replayed back to back for
  `--sustain-s`; the sustained time per GEMM is the median over the replays of the last second, with that
  second's median SM clock and board power.
- `mixed`: compute-bound GEMMs each followed by an elementwise pass (memory-bound, like decode attention)
  of 0, 0.5, 1, 2 or 4 times the GEMM's burst time: the region's burst and sustained times, and
  torch.profiler's summed kernel time per GEMM and per pass once sustained, say how much a GEMM beside
  memory-bound kernels slows against one run alone (the board's power is shared by the whole step).

Writes `gemm.csv`, `settle.csv`, `mixed.csv`, `fingerprint.json` (versions, GPU, driver, this file's sha256,
the command) and `log.txt`. Standalone: torch (and pynvml on CUDA) only.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import hashlib
import json
import math
import os
import statistics
import sys
import threading
import time
import traceback

import torch
import torch.nn.functional as F

# (name, n, k): the weight is n x k, the GEMM (m x k) @ (k x n). Every n and k is on the measured tables'
# grid (aiconfigurator's case generator), so a burst time here can be compared with the table's own point:
# Llama-3-8B's QKV and O, the grid shapes beside its gate-up (n 28,672) and down (k 14,336), an LM-head-like
# wide GEMM, and a small model's (hidden 1,024) gate-up and down.
SHAPES = (("qkv.6144x4096", 6144, 4096), ("o.4096x4096", 4096, 4096), ("up.16384x4096", 16384, 4096),
          ("down.4096x16384", 4096, 16384), ("head.65536x4096", 65536, 4096),
          ("small_up.8192x1024", 8192, 1024), ("small_down.1024x8192", 1024, 8192))
ROWS = (16, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
SMALL_ROWS = (64, 512, 2048, 8192)
LM_HEAD_ROWS = (16, 128, 512, 2048)
TINY_SHAPES = (("tiny.a", 256, 128), ("tiny.b", 128, 256))
TINY_ROWS = (4, 32)
COPIES = 6            # the collector's weight copies per case (outside_loop_count)
WARMUPS, RUNS = 3, 6  # the collector's benchmark_with_power defaults
MIN_REPLAY_S = 2e-3
GEMM_FIELDS = ("shape", "m", "n", "k", "flop", "weight_bytes", "burst_s", "burst_clock_mhz", "sustained_s",
               "sustained_p10_s", "sustained_p90_s", "sustained_replays", "graph_copies", "clock_mhz", "power_w",
               "temp_c", "nvml_samples", "error")


class Nvml:
    """Board power (W), SM clock (MHz) and temperature sampled every `period_s` in a thread (CUDA only)."""

    def __init__(self, period_s: float = 0.01):
        self.samples: list[tuple[float, float, float, float]] = []
        self.limit_w = self.driver = None
        self._stop = threading.Event()
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nv, self.h = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
            self.limit_w = pynvml.nvmlDeviceGetEnforcedPowerLimit(self.h) / 1e3
            self.driver = pynvml.nvmlSystemGetDriverVersion()
        except Exception:  # noqa: BLE001 - no NVML (CPU dry run): no samples
            self.nv = None
            return
        self.period_s = period_s
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        nv, h = self.nv, self.h
        while not self._stop.is_set():
            try:
                self.samples.append((time.monotonic(), nv.nvmlDeviceGetPowerUsage(h) / 1e3,
                                     nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                                     nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)))
            except Exception:  # noqa: BLE001 - a missed sample is skipped
                pass
            time.sleep(self.period_s)

    def window(self, t0: float, t1: float):
        rows = [r for r in list(self.samples) if t0 <= r[0] <= t1]
        if not rows:
            return math.nan, math.nan, math.nan, 0
        return (statistics.median(r[1] for r in rows), statistics.median(r[2] for r in rows),
                statistics.median(r[3] for r in rows), len(rows))

    def clock_max(self, t0: float, t1: float) -> float:
        rows = [r[2] for r in list(self.samples) if t0 <= r[0] <= t1]
        return max(rows) if rows else math.nan

    def stop(self):
        self._stop.set()


class Runner:
    """Builds a region's graph and times it in a burst or sustained (CUDA); wall clock on the CPU."""

    def __init__(self, device):
        self.device = device
        self.cuda = device.type == "cuda"

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def graph(self, region, copies: int = 1):
        if not self.cuda:
            return lambda: [region() for _ in range(copies)]
        region()  # eager first: library handles and workspaces exist before the capture
        self.sync()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(copies):
                region()
        self.sync()
        return g.replay

    def burst(self, region) -> float:
        """The collector's protocol: eager warm-ups, graph of one region, warm-up replays, timed replays."""
        for _ in range(WARMUPS):
            region()
        self.sync()
        replay = self.graph(region)
        for _ in range(WARMUPS):
            replay()
        self.sync()
        if not self.cuda:
            t0 = time.perf_counter()
            for _ in range(RUNS):
                replay()
            return (time.perf_counter() - t0) / RUNS
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(RUNS):
            replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / RUNS

    def sustained(self, replay, seconds: float, sync_every: int = 8):
        """Replays back to back for `seconds`; returns [(host time after, seconds)] per replay."""
        out = []
        if not self.cuda:
            end_t = time.monotonic() + seconds
            while time.monotonic() < end_t:
                t0 = time.perf_counter()
                replay()
                out.append((time.monotonic(), time.perf_counter() - t0))
            return out
        end_t = time.monotonic() + seconds
        while time.monotonic() < end_t:
            events = [torch.cuda.Event(enable_timing=True) for _ in range(sync_every + 1)]
            events[0].record()
            for i in range(sync_every):
                replay()
                events[i + 1].record()
            events[-1].synchronize()
            now = time.monotonic()
            out += [(now, events[i].elapsed_time(events[i + 1]) / 1e3) for i in range(sync_every)]
        return out


def _weights(n, k, copies, device, dtype):
    return [torch.randn(n, k, device=device, dtype=dtype) * 0.02 for _ in range(copies)]


def measure_point(runner: Runner, nvml: Nvml, name, m, n, k, dtype, idle_s, sustain_s) -> dict:
    dev = runner.device
    ws = _weights(n, k, COPIES, dev, dtype)
    x = torch.randn(m, k, device=dev, dtype=dtype)

    def region_linear():
        for w in ws:
            F.linear(x, w)

    time.sleep(idle_s)
    t0 = time.monotonic()
    burst_s = runner.burst(region_linear) / COPIES
    burst_clock = nvml.clock_max(t0 - 0.02, time.monotonic())
    copies = max(1, math.ceil(MIN_REPLAY_S / max(burst_s * COPIES, 1e-7)))
    replay = runner.graph(region_linear, copies)
    samples = runner.sustained(replay, sustain_s)
    t_end = samples[-1][0]
    last = [s for t, s in samples if t >= t_end - 1.0] or [s for _, s in samples]
    per = sorted(s / (copies * COPIES) for s in last)
    power, clock, temp, nsamp = nvml.window(t_end - 1.0, t_end)
    return dict(shape=name, m=m, n=n, k=k, flop=2 * m * n * k, weight_bytes=n * k * 2, burst_s=burst_s,
                burst_clock_mhz=burst_clock, sustained_s=statistics.median(per),
                sustained_p10_s=per[len(per) // 10], sustained_p90_s=per[(9 * len(per)) // 10],
                sustained_replays=len(per), graph_copies=copies, clock_mhz=clock, power_w=power, temp_c=temp,
                nvml_samples=nsamp, error="")


def part_settle(runner, nvml, dtype, size, seconds, out_dir, log):
    dev = runner.device
    a = torch.randn(size, size, device=dev, dtype=dtype)
    b = torch.randn(size, size, device=dev, dtype=dtype)
    replay = runner.graph(lambda: torch.mm(a, b))
    replay()
    runner.sync()
    time.sleep(2.0)
    t0 = time.monotonic()
    samples = runner.sustained(replay, seconds, sync_every=1)
    with open(os.path.join(out_dir, "settle.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(("kind", "t_s", "value_a", "value_b", "value_c"))
        for t, s in samples:
            w.writerow(("replay", f"{t - t0:.4f}", f"{s:.9f}", f"{2 * size ** 3 / s:.6e}", ""))
        for t, p, c, tc in list(nvml.samples):
            if t >= t0 - 0.5:
                w.writerow(("nvml", f"{t - t0:.4f}", p, c, tc))
    first = statistics.median(s for _, s in samples[:5])
    tail = statistics.median(s for t, s in samples if t >= samples[-1][0] - 1.0)
    log(f"settle {size}^3: first replays {first * 1e3:.3f} ms ({2 * size ** 3 / first / 1e12:.0f} TFLOP/s), "
        f"last second {tail * 1e3:.3f} ms ({2 * size ** 3 / tail / 1e12:.0f} TFLOP/s)")


def part_grid(runner, nvml, dtype, points, idle_s, sustain_s, out_dir, log, deadline):
    path = os.path.join(out_dir, "gemm.csv")
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=GEMM_FIELDS)
        w.writeheader()
        for name, n, k, m in points:
            if time.monotonic() > deadline:
                log(f"deadline: {name} m={m} and later points not measured")
                break
            try:
                row = measure_point(runner, nvml, name, m, n, k, dtype, idle_s, sustain_s)
            except Exception as exc:  # noqa: BLE001 - a failed point is recorded, the grid goes on
                row = {f: "" for f in GEMM_FIELDS} | dict(shape=name, m=m, n=n, k=k, error=repr(exc)[:300])
            if runner.cuda:
                torch.cuda.empty_cache()
            w.writerow(row)
            fh.flush()
            if not row["error"]:
                log(f"{name:22s} m={m:5d}: burst {row['burst_s'] * 1e6:9.1f} us "
                    f"({row['flop'] / row['burst_s'] / 1e12:6.1f} TFLOP/s), sustained "
                    f"{row['sustained_s'] * 1e6:9.1f} us ({row['sustained_s'] / row['burst_s']:.3f}x) at "
                    f"{row['clock_mhz']} MHz {row['power_w']} W")
            else:
                log(f"{name} m={m}: FAILED {row['error']}")


MIXED_POINTS = ((SHAPES[0], 512), (SHAPES[2], 1024), (SHAPES[2], 4096))   # u >= 0.7 GEMMs, 36 us to 0.8 ms
MIXED_RATIOS = (0.0, 0.5, 1.0, 2.0, 4.0)   # elementwise time per GEMM time (burst), 0 = GEMMs alone
MIXED_FIELDS = ("shape", "m", "n", "k", "ratio", "gemm_share", "burst_gemm_s", "burst_pass_s", "burst_region_s",
                "sustained_region_s", "gemm_kernel_s", "pass_kernel_s", "gemm_kernels", "pass_kernels", "clock_mhz",
                "power_w", "pass_bytes", "error")


def part_mixed(runner, nvml, dtype, points, ratios, idle_s, sustain_s, out_dir, log):
    """A region of 6 GEMMs, each followed by an elementwise pass over a buffer (read + write: memory-bound,
    like decode attention) sized to `ratio` x the GEMM's burst time: the region's burst and sustained time,
    and from torch.profiler the summed device time of the GEMM's kernels and of the pass per GEMM."""
    dev = runner.device
    with open(os.path.join(out_dir, "mixed.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=MIXED_FIELDS)
        w.writeheader()
        for (name, n, k), m in points:
            ws = _weights(n, k, COPIES, dev, dtype)
            x = torch.randn(m, k, device=dev, dtype=dtype)
            time.sleep(idle_s)
            gemm_s = runner.burst(lambda: [F.linear(x, wt) for wt in ws]) / COPIES
            for ratio in ratios:
                row = dict(shape=name, m=m, n=n, k=k, ratio=ratio, burst_gemm_s=gemm_s, error="")
                try:
                    row.update(_mixed_point(runner, nvml, dtype, ws, x, gemm_s, ratio, idle_s, sustain_s))
                except Exception as exc:  # noqa: BLE001 - a failed point is recorded, the part goes on
                    row["error"] = repr(exc)[:300]
                w.writerow(row)
                fh.flush()
                if not row["error"]:
                    log(f"mixed {name} m={m} ratio {ratio}: GEMM share {row['gemm_share']:.2f}, region "
                        f"{row['sustained_region_s'] / row['burst_region_s']:.3f}x burst; GEMM kernels "
                        f"{row['gemm_kernel_s'] * 1e6:.1f} us (burst {gemm_s * 1e6:.1f}), pass "
                        f"{row['pass_kernel_s'] * 1e6:.1f} us (burst {row['burst_pass_s'] * 1e6:.1f}) at "
                        f"{row['clock_mhz']} MHz {row['power_w']} W")
                else:
                    log(f"mixed {name} m={m} ratio {ratio}: FAILED {row['error']}")
            if runner.cuda:
                torch.cuda.empty_cache()


PASS_BYTES_S = {"cuda": 3.0e12, "cpu": 1.0e10}   # a pass's memory bandwidth, to size it: ~H100 HBM3; a CPU dry run
MAX_CPU_PASS_ELEMS = 1 << 22   # 16 MB of float32 per buffer: a dry run on a busy machine (a slow GEMM) stays small


def _pass_elems(runner, dtype, gemm_s: float, ratio: float) -> int:
    """Elements of the elementwise pass that takes `ratio` GEMM times: read and written once each at the
    device's bandwidth. (On the CPU the GEMM's time, hence the size, grows with the machine's load: bounded.)"""
    if ratio <= 0:
        return 0
    itemsize = torch.empty(0, dtype=dtype).element_size()
    elems = max(1024, int(ratio * gemm_s * PASS_BYTES_S["cuda" if runner.cuda else "cpu"] / (2 * itemsize)))
    return elems if runner.cuda else min(elems, MAX_CPU_PASS_ELEMS)


def _mixed_point(runner, nvml, dtype, ws, x, gemm_s, ratio, idle_s, sustain_s) -> dict:
    dev = runner.device
    elems = _pass_elems(runner, dtype, gemm_s, ratio)
    src = torch.randn(max(elems, 1), device=dev, dtype=dtype)
    dst = torch.empty_like(src)

    def one_pass():
        torch.mul(src, 1.0001, out=dst)

    def region():
        for wt in ws:
            F.linear(x, wt)
            if elems:
                one_pass()

    pass_s = runner.burst(lambda: [one_pass() for _ in range(COPIES)]) / COPIES if elems else 0.0
    time.sleep(idle_s)
    region_s = runner.burst(region)
    copies = max(1, math.ceil(MIN_REPLAY_S / max(region_s, 1e-7)))
    replay = runner.graph(region, copies)
    samples = runner.sustained(replay, sustain_s)
    t_end = samples[-1][0]
    last = [s for t, s in samples if t >= t_end - 1.0] or [s for _, s in samples]
    power, clock, _, _ = nvml.window(t_end - 1.0, t_end)
    gemm_k, pass_k, n_gemm, n_pass = _kernel_seconds(runner, replay)
    gemms = 5 * copies * COPIES  # _kernel_seconds profiles 5 replays
    return dict(gemm_share=gemm_s / (gemm_s + pass_s), burst_pass_s=pass_s, burst_region_s=region_s,
                sustained_region_s=statistics.median(last) / copies, gemm_kernel_s=gemm_k / gemms,
                pass_kernel_s=(pass_k / gemms) if elems else 0.0, gemm_kernels=n_gemm, pass_kernels=n_pass,
                clock_mhz=clock, power_w=power, pass_bytes=4 * elems)


def _kernel_seconds(runner, replay, replays: int = 5):
    """Summed device time of the GEMM kernels and of the elementwise kernels over `replays` replays, and
    how many of each ran (cuBLAS may run more than one kernel per GEMM)."""
    if not runner.cuda:
        t0 = time.perf_counter()
        for _ in range(replays):
            replay()
        return time.perf_counter() - t0, 0.0, 0, 0
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            replay()
        runner.sync()
    gemm, other = [], []
    for ev in prof.events():
        if ev.device_type != torch.autograd.DeviceType.CUDA:
            continue
        # only two kinds of kernel are in the graph: the GEMM's and the elementwise pass's
        (other if "elementwise" in ev.name.lower() else gemm).append(ev.time_range.elapsed_us() / 1e6)
    return sum(gemm), sum(other), len(gemm), len(other)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="dry run: tiny shapes, short phases")
    ap.add_argument("--idle-s", type=float, default=0.7)
    ap.add_argument("--sustain-s", type=float, default=2.0)
    ap.add_argument("--settle-s", type=float, default=6.0)
    ap.add_argument("--budget-s", type=float, default=240.0, help="no new grid point after this")
    ap.add_argument("--parts", default="settle,grid,mixed")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    t_start = time.monotonic()
    logf = open(os.path.join(args.out, "log.txt"), "a")

    def log(msg):
        line = f"[{time.monotonic() - t_start:7.1f}s] {msg}"
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    torch.set_num_threads(2)
    dev = torch.device(args.device)
    runner = Runner(dev)
    dtype = torch.bfloat16 if runner.cuda else torch.float32
    nvml = Nvml()
    with open(__file__, "rb") as fh:
        sha = hashlib.sha256(fh.read()).hexdigest()
    fp = dict(date=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), command=" ".join(sys.argv),
              script_sha256=sha, torch=torch.__version__, cuda=torch.version.cuda, device=str(dev),
              dtype=str(dtype), threads=2, idle_s=args.idle_s, sustain_s=args.sustain_s,
              burst_protocol=f"{WARMUPS} eager warm-ups, graph of {COPIES} GEMMs on {COPIES} weight copies, "
                             f"{WARMUPS} warm-up replays, {RUNS} timed replays (aiconfigurator collector)",
              power_limit_w=nvml.limit_w, driver=nvml.driver, load_average_start=os.getloadavg())
    if runner.cuda:
        p = torch.cuda.get_device_properties(dev)
        fp.update(device_name=p.name, sms=p.multi_processor_count, hbm_bytes=p.total_memory)
    parts = set(args.parts.split(","))
    shapes, rows = (TINY_SHAPES, TINY_ROWS) if args.tiny else (SHAPES, ROWS)
    points = []
    for name, n, k in shapes:
        use = LM_HEAD_ROWS if name.startswith("head") else SMALL_ROWS if name.startswith("small") else rows
        points += [(name, n, k, m) for m in use]
    if args.tiny:
        args.sustain_s, args.settle_s, args.idle_s = 0.05, 0.05, 0.0

    def part(name, fn):
        if name not in parts:
            return
        try:
            fn()
        except Exception:  # noqa: BLE001 - one failed part must not lose the others
            log(f"PART {name} FAILED:\n{traceback.format_exc()}")
            fp.setdefault("failed_parts", []).append(name)

    part("settle", lambda: part_settle(runner, nvml, dtype, 256 if args.tiny else 8192, args.settle_s,
                                       args.out, log))
    part("grid", lambda: part_grid(runner, nvml, dtype, points, args.idle_s, args.sustain_s, args.out, log,
                                   t_start + args.budget_s))
    mixed = tuple((shape, m) for shape in TINY_SHAPES for m in TINY_ROWS) if args.tiny else MIXED_POINTS
    part("mixed", lambda: part_mixed(runner, nvml, dtype, mixed, MIXED_RATIOS, args.idle_s, args.sustain_s,
                                     args.out, log))
    nvml.stop()
    fp["load_average_end"] = os.getloadavg()
    fp["seconds"] = round(time.monotonic() - t_start, 1)
    with open(os.path.join(args.out, "fingerprint.json"), "w") as fh:
        json.dump(fp, fh, indent=2, default=str)
    log(f"done in {fp['seconds']} s; failed parts: {fp.get('failed_parts', [])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
