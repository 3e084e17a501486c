"""Whole Llama-3-8B forwards and one layer's dense ops, timed in a short burst after idle and back to back at
the board's power limit: held-out data for draftsim's power-limit rule (profiles.measured.power_limit, whose
curve came from GEMMs and synthetic mixes in measure_sustained_gemm.py, not from these forwards).

    python3 -m scenarios.validation.gpu.measure_sustained_forwards --out DIR [--tiny --device cpu]

The model, fused elementwise ops (torch.compile) and attention backends are measure_forwards.py's (loaded by
path: both are standalone). Per point (batch B, context c, q tokens per request, chain or tree mask) and per
region (`forward`: embedding ... LM head + argmax over every token; `dense`: one layer's dense ops):
`idle_s` idle, then the region captured in a CUDA graph (one copy, or as many as make a replay >= 2 ms),
3 warm-up replays and 6 timed ones between two events (`burst_s`, per region), then replays back to back
for `sustain_s` (`sustained_s`: the median replay of the last second, with its NVML clock and power).

Writes `forwards.csv`, `fingerprint.json` (versions, GPU, driver, this file's and measure_forwards.py's
sha256, the command) and `log.txt`. Standalone: torch (and pynvml on CUDA) only.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import hashlib
import importlib.util
import json
import math
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
# (batch, context, q, mask): plain decode, GQA-packed tree verifies of 512 rows at three batch sizes, a
# 2,048-token causal pass with no cache (a prefill whose LM head runs over every token), a long-context verify
POINTS = ((64, 2048, 1, "chain"), (32, 2048, 16, "tree"), (64, 2048, 8, "tree"), (128, 2048, 4, "tree"),
          (1, 0, 2048, "chain"), (16, 8192, 16, "tree"))
TINY_POINTS = ((2, 16, 1, "chain"), (2, 16, 4, "tree"), (1, 0, 8, "chain"))
FIELDS = ("model", "batch", "ctx", "q", "mask", "tokens", "region", "burst_s", "sustained_s", "sustained_p10_s",
          "sustained_p90_s", "copies", "clock_mhz", "power_w", "temp_c", "backend", "error")
WARMUPS, RUNS, MIN_REPLAY_S = 3, 6, 2e-3


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def time_region(region, cuda: bool, nvml, idle_s: float, sustain_s: float) -> dict:
    """Burst then sustained time of `region` (see the module docstring)."""
    if not cuda:
        region()
        t0 = time.perf_counter()
        region()
        single = time.perf_counter() - t0
        return dict(burst_s=single, sustained_s=single, sustained_p10_s=single, sustained_p90_s=single, copies=1,
                    clock_mhz=math.nan, power_w=math.nan, temp_c=math.nan)
    stream = torch.cuda.Stream()  # warm-up on a side stream before capture, as measure_forwards.Timer does
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            region()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        region()
    torch.cuda.synchronize()
    time.sleep(idle_s)
    for _ in range(WARMUPS):
        graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(RUNS):
        graph.replay()
    end.record()
    end.synchronize()
    burst = start.elapsed_time(end) / 1e3 / RUNS
    copies = max(1, math.ceil(MIN_REPLAY_S / burst))
    if copies > 1:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(copies):
                region()
        torch.cuda.synchronize()
    samples, end_t = [], time.monotonic() + sustain_s
    while time.monotonic() < end_t:
        events = [torch.cuda.Event(enable_timing=True) for _ in range(9)]
        events[0].record()
        for i in range(8):
            graph.replay()
            events[i + 1].record()
        events[-1].synchronize()
        now = time.monotonic()
        samples += [(now, events[i].elapsed_time(events[i + 1]) / 1e3 / copies) for i in range(8)]
    t_last = samples[-1][0]
    last = sorted(s for t, s in samples if t >= t_last - 1.0)
    power, clock, temp, _ = nvml.window(t_last - 1.0, t_last)
    return dict(burst_s=burst, sustained_s=statistics.median(last), sustained_p10_s=last[len(last) // 10],
                sustained_p90_s=last[(9 * len(last)) // 10], copies=copies, clock_mhz=clock, power_w=power,
                temp_c=temp)


def measure(mf, model, backend, points, writer, nvml, idle_s, sustain_s, log) -> None:
    s, dev = model.s, model.device
    cuda = dev.type == "cuda"
    for batch, ctx, qn, kind in points:
        row0 = dict(model=s.name, batch=batch, ctx=ctx, q=qn, mask=kind if qn > 1 else "none", tokens=batch * qn)
        try:
            model.alloc_cache(batch, ctx + qn)
            tokens = batch * qn
            ids = torch.randint(0, s.vocab, (tokens,), device=dev)
            pos = (torch.arange(qn, device=dev) + ctx).repeat(batch)
            cos, sin = mf.rope_tables(pos, s.head_dim, model.dtype)
            mask = mf.verify_mask(kind, qn, ctx, dev)
            x = torch.randn(tokens, s.hidden, device=dev, dtype=model.dtype)
            attn_in = torch.randn(tokens, s.heads * s.head_dim, device=dev, dtype=model.dtype)
            regions = {"forward": lambda: model.forward(ids, cos, sin, batch, qn, ctx, mask, backend),
                       "dense": lambda: (model.layer_dense_in(0, x, x, cos, sin), model.layer_dense_out(0, attn_in, x))}
            for region, fn in regions.items():
                row = dict(row0, region=region, error="", **time_region(fn, cuda, nvml, idle_s, sustain_s))
                row["backend"] = backend.used.get("decode" if qn == 1 else kind, "none")
                writer.writerow(row)
                log(f"B={batch} ctx={ctx} q={qn} {row['mask']} {region}: burst {row['burst_s'] * 1e3:.3f} ms, "
                    f"sustained {row['sustained_s'] * 1e3:.3f} ms ({row['sustained_s'] / row['burst_s']:.3f}x) "
                    f"at {row['clock_mhz']} MHz {row['power_w']} W")
        except Exception as exc:  # noqa: BLE001 - a failed point is recorded, the others go on
            writer.writerow(dict(row0, region="", error=repr(exc)[:300]))
            log(f"B={batch} ctx={ctx} q={qn}: FAILED {exc!r}")
        if cuda:
            model.alloc_cache(1, 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="dry run: tiny model, three points, no waits")
    ap.add_argument("--idle-s", type=float, default=1.0)
    ap.add_argument("--sustain-s", type=float, default=2.5)
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
    mf = _load("measure_forwards")
    gemm = _load("measure_sustained_gemm")
    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    ops, backend = mf.Ops(compile_ops=cuda), mf.Backend(dev)
    nvml = gemm.Nvml()
    shape, points = (mf.TINY, TINY_POINTS) if args.tiny else (mf.LLAMA3_8B, POINTS)
    if args.tiny:
        args.idle_s, args.sustain_s = 0.0, 0.0
    fp = dict(date=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), command=" ".join(sys.argv),
              script_sha256=_sha(Path(__file__)), measure_forwards_sha256=_sha(HERE / "measure_forwards.py"),
              torch=torch.__version__, cuda=torch.version.cuda, device=str(dev), dtype=str(dtype), threads=2,
              fusion=ops.fusion, idle_s=args.idle_s, sustain_s=args.sustain_s, power_limit_w=nvml.limit_w,
              driver=nvml.driver, load_average_start=os.getloadavg())
    if cuda:
        p = torch.cuda.get_device_properties(dev)
        fp.update(device_name=p.name, sms=p.multi_processor_count, hbm_bytes=p.total_memory)
    try:
        model = mf.Model(shape, dev, dtype, ops)
        with open(os.path.join(args.out, "forwards.csv"), "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=FIELDS)
            writer.writeheader()
            measure(mf, model, backend, points, writer, nvml, args.idle_s, args.sustain_s, log)
    except Exception:  # noqa: BLE001 - recorded in the fingerprint and the log
        log(f"FAILED:\n{traceback.format_exc()}")
        fp["failed"] = True
    nvml.stop()
    fp["attention_backend"], fp["attention_backend_errors"] = backend.used, backend.errors
    fp["load_average_end"] = os.getloadavg()
    fp["seconds"] = round(time.monotonic() - t_start, 1)
    with open(os.path.join(args.out, "fingerprint.json"), "w") as fh:
        json.dump(fp, fh, indent=2, default=str)
    log(f"done in {fp['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
