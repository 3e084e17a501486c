"""`Vllm._plan_plain` (the plain block pool's prefill-first steps, simulator.core.sched.vllm) forms the same steps
as `Vllm.plan`'s general path, through admissions, batch and token limits and preemptions."""
from __future__ import annotations

import numpy as np
import pytest

from sim_helpers import bare_replica, step_plans
from simulator.core.kv.block_pool import BlockPool
from simulator.core.sched import BatchLimits
from simulator.core.sched.vllm import Vllm


def _general(limits: BatchLimits) -> Vllm:
    sched = Vllm(limits)
    sched._whole_fcfs = False   # the general path, as with chunking, a reserve or a queue order
    return sched


@pytest.mark.parametrize("prefill_requests", [None, 1, 2])
@pytest.mark.parametrize("blocks", [40, 400])   # 40: decodes run out of KV and preempt (re-prefills)
def test_plain_path_forms_the_general_steps(prefill_requests, blocks):
    rng = np.random.default_rng(3)
    prompts, outputs = rng.integers(1, 300, 24).tolist(), rng.integers(1, 60, 24).tolist()
    limits = BatchLimits(max_batch_size=6, max_batched_tokens=512, chunk_tokens=512, prefill_requests=prefill_requests)
    fast = bare_replica(Vllm(limits), lambda s: BlockPool(s, blocks, 16), prompts, outputs, limits, q=3)
    general = bare_replica(_general(limits), lambda s: BlockPool(s, blocks, 16), prompts, outputs, limits, q=3)
    assert fast.plain_kv and fast.scheduler._whole_fcfs
    prompts_prefilled = 0
    for (a, used_a), (b, used_b) in zip(step_plans(fast, 400), step_plans(general, 400), strict=True):
        assert (a.prefill_ids, a.prefill_chunks, a.prefill_attn_pairs) == (b.prefill_ids, b.prefill_chunks,
                                                                          b.prefill_attn_pairs)
        assert a.decode_ids.tolist() == b.decode_ids.tolist() and a.decode_context_tokens == b.decode_context_tokens
        assert (a.queued, a.running, used_a) == (b.queued, b.running, used_b)
        prompts_prefilled += len(a.prefill_ids)
    assert prompts_prefilled >= len(prompts)   # (more where preempted requests re-prefill)
    for name in ("emitted", "ctx", "blocks", "preemptions", "admit_s"):
        np.testing.assert_array_equal(getattr(fast.s, name), getattr(general.s, name))
    assert not fast.has_work() and not general.has_work()
    assert (fast.s.preemptions.sum() > 0) == (blocks == 40)
