"""SGLang's admission reserve: KV tokens its scheduler sets aside for the running requests' future output
(`new_token_ratio`), which keeps a waiting request out even where its prompt's KV would fit.

The rule, as SGLang's source has it (read in the PyPI sources of 0.4.0, 0.4.5 and 0.5.9 and in sgl-project/sglang
main at 00550cd, 2026-11; the same from 0.4.0, the oldest release draftsim models, to main):
- managers/schedule_policy.py `PrefillAdder.__init__` (`_get_running_request_total_token_offset` from 0.5):
  rem_total_tokens = the pool's available + evictable tokens − Σ over the running batch of
  min(max_new_tokens − len(output_ids), CLIP_MAX_NEW_TOKENS) × new_token_ratio; CLIP_MAX_NEW_TOKENS is
  SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION, 4096 by default.
- `PrefillAdder.add_one_req`: a waiting request joins the prefill batch only if extend_input_len +
  min(max_new_tokens − len(output_ids), CLIP_MAX_NEW_TOKENS) < rem_total_tokens, else NO_TOKEN ends the batch;
  extend_input_len is its prompt less its prefix match, and a match on tokens running requests hold costs nothing
  (they are neither available nor evictable) while one on evictable tokens costs them (`_lock_node` takes them out
  of evictable_size before the second check): draftsim charges the prompt less the hit that running requests hold
  (`kv.hit_in_use_tokens`), the free cached units being counted in the free tokens;
  once in, its prompt and its whole clipped output (ratio 1, not new_token_ratio) are charged for the rest of
  the batch (`_prefill_one_req`, `_update_prefill_budget` from 0.5). A chunked request's output is charged only
  with its last chunk (`add_being_chunked_req` / `add_chunked_req`: 0 while truncated).
- managers/scheduler.py `Scheduler.__init__`: init_new_token_ratio = min(SGLANG_INIT_NEW_TOKEN_RATIO (0.7) ×
  schedule_conservativeness (1.0), 1), min_new_token_ratio = min(init × SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR (0.14), 1),
  new_token_ratio_decay = (init − min) / SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS (600) (global_config.py in 0.4.x,
  srt/environ.py in 0.5.x: the same defaults).
- `Scheduler.update_running_batch`, run before each decode batch: when `check_decode_mem` fails the scheduler
  retracts requests (`ScheduleBatch.retract_decode`) and sets the ratio to min(1, (Σ len(output_ids) +
  RETRACT_DECODE_STEPS (20) × n) / (Σ max_new_tokens + 1)) over the n requests kept (0.4.x divides by
  Σ max_new_tokens: one token apart); else ratio = max(ratio − decay, min). Prefill batches leave it.
- `Scheduler.event_loop_normal` / `event_loop_overlap` (inline in 0.4.x, `self_check_during_idle` in 0.5.x): a
  loop iteration without a batch (idle) resets the ratio to init ("re-init some states when the server is idle").
- Speculative decoding adds nothing to the reserve (schedule_policy.py has no draft term; the draft tokens'
  slots are `check_decode_mem`'s, which draftsim's decode growth, ctx + q, stands for).

In draftsim a request's max_new_tokens is its output length (SGLang's bench_serving sends the dataset's output
length with ignore_eos) and len(output_ids) its emitted tokens. Approximations, named:
- available tokens are the KV manager's free blocks in tokens (`free_tokens`: × block size; a hybrid model's pool
  per attention group) where SGLang counts tokens of its page size (1 by default), and a prompt's KV is reserved
  whole at admission (SGLang allocates a chunked prompt chunk by chunk; the chunk that is cut ends the batch in
  both, so only the prompt's own later chunks differ);
- the ratio resets when a step is planned with nothing running (SGLang: when a loop iteration finds no batch;
  a batch that drains while requests queued during its last step goes on to prefill them without an idle
  iteration in SGLang, keeping its decayed ratio);
- a batch with nothing running admits its head whatever its length: SGLang clips max_new_tokens at arrival to
  max_req_len − prompt − 1 (managers/scheduler.py `handle_generate_request`; tp_worker.py max_req_len = min(
  context_len − 1, the token pool's size − 1)), so an empty pool always takes it;
- SGLang's `add_one_req_ignore_eos` (ignore_eos requests, bench_serving's default, with the radix cache off:
  `--disable-radix-cache`, or EAGLE in 0.4.1.post4 - 0.4.3.post2; a walk over the batch's future decode) is not
  modelled; the rule above stands for it;
- which requests a retraction takes is draftsim's (sched.grow_decodes, LIFO), not SGLang's sort;
- a disaggregated prefill pool admits without the reserve (simulator.cluster.build): its requests leave it after
  their prompt, and SGLang's prefill server's accounting of their KV until the transfer is not modelled.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OutputReserve:
    """SGLang's reserve constants (module docstring): the ratio's start, floor and per-decode-batch decay, the clip
    of a request's output estimate, and the decode steps per kept request a retraction's ratio counts."""

    init_ratio: float = 0.7              # SGLANG_INIT_NEW_TOKEN_RATIO × schedule_conservativeness 1.0
    min_ratio_factor: float = 0.14       # SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR
    decay_steps: int = 600               # SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS
    clip_new_tokens: int = 4096          # SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION
    retract_decode_steps: int = 20       # global_config.retract_decode_steps / SGLANG_RETRACT_DECODE_STEPS

    @property
    def init(self) -> float:
        return min(self.init_ratio, 1.0)

    @property
    def min_ratio(self) -> float:
        return min(self.init * self.min_ratio_factor, 1.0)

    @property
    def decay(self) -> float:
        return (self.init - self.min_ratio) / self.decay_steps


SGLANG_OUTPUT_RESERVE = OutputReserve()


class NewTokenRatio:
    """One replica's new_token_ratio and the admission check it drives (module docstring)."""

    def __init__(self, rule: OutputReserve):
        self.rule = rule
        self.ratio = rule.init
        self._min, self._decay = rule.min_ratio, rule.decay

    def reset(self) -> None:
        self.ratio = self.rule.init

    def decay(self, steps: int = 1) -> None:
        """`steps` decode batches without retraction (one subtraction each, as SGLang does them)."""
        low, d = self._min, self._decay
        ratio = self.ratio
        for _ in range(steps):
            if ratio <= low:
                break
            ratio = max(ratio - d, low)
        self.ratio = ratio

    def after_retract(self, view, kept: list[int]) -> None:
        """The ratio `retract_decode` leaves, over the requests it kept."""
        if not kept:
            self.reset()
            return
        s = view.s
        ids = np.asarray(kept, dtype=np.int64)
        decoded = int(s.emitted[ids].sum())
        budget = int(s.output[ids].sum())
        self.ratio = min(1.0, (decoded + self.rule.retract_decode_steps * len(kept)) / (budget + 1))

    def remaining_tokens(self, view, prefills) -> float:
        """SGLang's rem_total_tokens: the free KV tokens less the running requests' future output × ratio and the
        whole clipped output of the step's prompts that complete in it."""
        s, clip = view.s, self.rule.clip_new_tokens
        step = set(prefills.ids)
        decoding = [r for r in view.running if r not in step and view.decoding(r)]
        offset = 0.0
        if decoding:
            ids = np.asarray(decoding, dtype=np.int64)
            left = np.minimum(s.output[ids] - s.emitted[ids], clip)
            offset = float((left * self.ratio).sum())
        for r, c in zip(prefills.ids, prefills.chunks):
            if s.prefilled.item(r) + c >= s.prefill_target.item(r):
                offset += min(s.output.item(r) - s.emitted.item(r), clip)
        return view.kv.free_tokens - offset

    def admits(self, view, prefills) -> bool:
        """`add_one_req`'s check for the waiting head (module docstring); with nothing running it is admitted."""
        if not view.running:
            return True
        view.settle()   # (the bulk profile's emitted tokens, written back)
        r = view.waiting[0]
        s = view.s
        tokens = view.kv.need(r)[1] - s.prefilled.item(r) - view.kv.hit_in_use_tokens(r)   # (module docstring)
        total = tokens + min(max(s.output.item(r) - s.emitted.item(r), 0), self.rule.clip_new_tokens)
        return total < self.remaining_tokens(view, prefills)
