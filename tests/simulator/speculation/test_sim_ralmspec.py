"""RaLMSpec in the DES (`retrieval:`, simulator.speculation.ralmspec): one request alone matches
theory.ralmspec's two-state chain (rate and speedup, Monte-Carlo error from the query-by-query reference);
token and knowledge-base conservation at load; p = 1 never rolls back; stride 1 with p = 0 queries the
knowledge base as often as the baseline; released KV is re-prefilled exactly; the knowledge base is the
FIFO SimPy Resource of its capacity; bulk ≡ step; bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
import simpy

import simulator
from simulator.api import prepare
from sim_helpers import assert_bulk_equals_step, merge, scenario
from simulator.errors import ScenarioError
from simulator.speculation.ralmspec import KnowledgeBase
from theory.ralmspec import ralmspec, simulate_ralmspec

I, P, S, C, A, B = 8, 0.8, 3, 0.002, 0.06, 0.01   # interval, cache_hit_p, stride, lookup, kb fixed, kb per query
RETRIEVAL = {"mode": "ralmspec", "interval_tokens": I, "kb_fixed_s": A, "kb_per_query_s": B, "lookup_s": C,
             "cache_hit_p": P, "stride": S}
LOAD = scenario(workload={"num_requests": 60, "arrival": {"process": "poisson", "qps": 3.0},
                          "output_tokens": {"kind": "uniform", "low": 20, "high": 300}},
                cluster={"replicas": 2, "router": "least_outstanding"},
                retrieval={**RETRIEVAL, "kb_servers": 2})


def _alone(mode: str, requests: int, output: int):
    """`requests` requests of `output` tokens, one at a time on one replica (a closed loop of one client)."""
    data = scenario(workload={"num_requests": requests, "prompt_tokens": {"kind": "fixed", "value": 128},
                              "output_tokens": {"kind": "fixed", "value": output}},
                    retrieval={**RETRIEVAL, "mode": mode})
    data["workload"]["arrival"] = {"process": "closed_loop", "concurrency": 1}
    result = simulator.run(data)
    req, steps = result.requests, result.steps
    assert (req.finish_s.to_numpy()[:-1] <= req.arrival_s.to_numpy()[1:]).all()   # alone on the replica
    decode = steps[steps.prefill_seqs == 0]
    assert (decode.decode_seqs == 1).all()
    step_s = float(decode.duration_s.mean())
    # time from the first token to the finish, plus one step for the first token (made by the prefill)
    seconds = float((req.finish_s - req.first_token_s).sum()) + step_s * requests
    return result, req.output_tokens.sum() / I / seconds, step_s, seconds


def test_one_request_alone_matches_the_two_state_chain():
    """The DES's committed intervals per second and its speedup over the baseline equal theory.ralmspec
    with G = interval_tokens × the DES's own decode step (nearly constant: one request, short contexts),
    within 4 standard deviations of the query-by-query reference run over as many intervals."""
    requests, output = 5, 400 * I
    result, rate, step_s, seconds = _alone("ralmspec", requests, output)
    cv = result.steps[result.steps.prefill_seqs == 0].duration_s.std() / step_s
    assert cv < 0.02          # a constant step time, as the chain assumes
    theory = ralmspec(P, S, I * step_s, C, A, B)
    exact = theory.intervals_per_round / theory.round_s
    intervals = requests * output // I
    runs = [c / s for c, s in (simulate_ralmspec(P, S, I * step_s, C, A, B, intervals, np.random.default_rng(k))
                               for k in range(40))]
    sigma = float(np.std(runs))
    assert abs(np.mean(runs) - exact) < 2 * sigma           # the reference itself is unbiased at this length
    assert abs(rate - exact) < 4 * sigma, (rate, exact, sigma)
    assert result.summary["rollbacks"] > 0
    _, _, base_step_s, base_seconds = _alone("baseline", requests, output)
    # the baseline is deterministic: a query before every interval but each request's first
    assert base_seconds == pytest.approx(requests * (output * base_step_s + (output // I - 1) * (A + B)), rel=1e-9)
    assert base_seconds / seconds == pytest.approx(theory.speedup, abs=4 * sigma / exact * theory.speedup)
    assert theory.speedup > 1.05   # a setting where speculation wins


@pytest.fixture(scope="module")
def at_load():
    return simulator.run(LOAD)


def test_conservation_at_load(at_load):
    req, steps, summary = at_load.requests, at_load.steps, at_load.summary
    assert req.finish_s.notna().all()
    assert (req.emitted_tokens == req.output_tokens).all()                   # delivered = output lengths
    discarded = int(steps.emitted_tokens.sum() - req.output_tokens.sum())    # generated (step log) − delivered
    assert discarded == summary["discarded_tokens"] == req.discarded_tokens.sum() > 0
    assert summary["generated_tokens"] == steps.emitted_tokens.sum()
    assert summary["rollbacks"] == req.rollbacks.sum() > 0
    # knowledge-base busy time = Σ query times; every cache lookup is verified by exactly one document
    assert summary["kb_busy_s"] == pytest.approx(A * req.kb_queries.sum() + B * req.kb_documents.sum(), rel=1e-12)
    assert summary["kb_queries"] == req.kb_queries.sum() and summary["kb_documents"] == req.kb_documents.sum()
    assert (req.kb_documents == req.cache_lookups).all()
    # a request's pauses cover at least its lookups and the service of its queries
    floor = C * req.cache_lookups + A * req.kb_queries + B * req.kb_documents
    assert (req.retrieval_pause_s >= floor - 1e-9).all()
    assert summary["cache_right_fraction"] == pytest.approx(P, abs=0.05)
    assert (steps.kv_blocks_used <= steps.kv_blocks_total).all()


def test_perfect_cache_never_rolls_back():
    result = simulator.run(merge(LOAD, {"retrieval": {"cache_hit_p": 1.0}}))
    assert result.summary["rollbacks"] == result.summary["discarded_tokens"] == 0
    assert result.steps.emitted_tokens.sum() == result.requests.output_tokens.sum()


def test_stride_one_and_a_useless_cache_query_as_often_as_the_baseline():
    """p = 0, stride 1: every document is the knowledge base's, one query per interval after the first,
    as the baseline (which queries ceil(output / interval) − 1 times per request)."""
    spec = simulator.run(merge(LOAD, {"retrieval": {"cache_hit_p": 0.0, "stride": 1}})).requests
    base = simulator.run(merge(LOAD, {"retrieval": {"mode": "baseline"}})).requests
    expected = -(-base.output_tokens // I) - 1
    assert (base.kb_queries == expected).all() and (base.rollbacks == 0).all()
    assert (spec.kb_queries == base.kb_queries).all()
    assert (spec.kb_documents == spec.kb_queries).all()


def test_documents_and_rollbacks_do_not_depend_on_batching(at_load):
    """The cache's answers are counter-based draws per (request, lookup): another batching scheduler changes
    every step's timing but not which documents a request looks up, verifies or rolls back."""
    other = simulator.run(merge(LOAD, {"scheduler": {"kind": "sarathi", "chunk_tokens": 512}})).requests
    ours = at_load.requests
    assert not np.allclose(other.finish_s, ours.finish_s)
    for column in ("kb_queries", "kb_documents", "cache_lookups", "rollbacks", "discarded_tokens"):
        assert (other[column] == ours[column]).all(), column


def test_released_kv_is_re_prefilled_exactly():
    """kv_while_paused: released. Baseline (no rollback, no preemption here): every pause frees the
    request's KV (prompt + emitted − 1 tokens) and its re-admission prefills prompt + emitted, so the
    prefill tokens beyond the prompts are the released tokens plus one per knowledge-base query.
    RaLMSpec: the same documents and rollbacks as with resident KV, and every token conserved."""
    base = simulator.run(merge(LOAD, {"retrieval": {"mode": "baseline", "kv_while_paused": "released"}}))
    req, steps = base.requests, base.steps
    assert req.preemptions.sum() == 0 and req.finish_s.notna().all()
    extra = int(steps.prefill_tokens.sum() - req.prompt_tokens.sum())
    assert extra == base.summary["kv_released_tokens"] + req.kb_queries.sum() > 0
    resident = simulator.run(merge(LOAD, {"retrieval": {"mode": "baseline"}}))
    assert resident.steps.prefill_tokens.sum() == req.prompt_tokens.sum()
    assert base.summary["e2e_mean_s"] > resident.summary["e2e_mean_s"]     # the re-prefills cost time
    spec = simulator.run(merge(LOAD, {"retrieval": {"kv_while_paused": "released"}}))
    ours = simulator.run(LOAD).requests
    for column in ("kb_queries", "rollbacks", "discarded_tokens"):
        assert (spec.requests[column] == ours[column]).all(), column
    assert (spec.requests.emitted_tokens == spec.requests.output_tokens).all()
    assert spec.steps.emitted_tokens.sum() == spec.requests.output_tokens.sum() + spec.requests.discarded_tokens.sum()
    assert_bulk_equals_step(merge(LOAD, {"retrieval": {"kv_while_paused": "released"}}))


@pytest.mark.parametrize("kind", ["vllm", "vllm_v1", "sarathi", "trtllm"])
def test_paused_requests_keep_their_batch_slot(kind):
    """A request paused with resident KV keeps its place in the batch (simulator.core.pauses): running
    requests + those paused with their KV never exceed scheduler.max_batch_size, so no step holds more
    sequences than it. Before, the scheduler filled a paused request's slot with a waiting one and the
    paused one rejoined on top of it: with max_batch_size 2, steps of 15 decoding sequences."""
    data = merge(LOAD, {"scheduler": {"kind": kind, "max_batch_size": 2, "chunk_tokens": 512},
                        "cluster": {"replicas": 1}})
    result = simulator.run(data)
    steps, req = result.steps, result.requests
    assert (steps.decode_seqs + steps.prefill_seqs).max() == 2        # full batches, never more
    assert steps.running_requests.max() <= 2
    assert req.finish_s.notna().all() and (req.emitted_tokens == req.output_tokens).all()
    released = simulator.run(merge(data, {"retrieval": {"kv_while_paused": "released"}})).steps
    assert (released.decode_seqs + released.prefill_seqs).max() == 2


def test_knowledge_base_is_the_fifo_simpy_resource_of_its_capacity():
    """Brute force: queries submitted in time order finish when a SimPy Resource of the same capacity
    serves them."""
    rng = np.random.default_rng(3)
    submits = np.sort(rng.uniform(0, 10, 400))
    sizes = rng.integers(1, 6, 400)
    for servers in (1, 3):
        kb = KnowledgeBase(servers, 0.05, 0.02)
        ours = [kb.query(t, int(n)) for t, n in zip(submits, sizes)]
        env = simpy.Environment()
        res = simpy.Resource(env, capacity=servers)
        ends = [0.0] * len(submits)

        def client(i):
            yield env.timeout(float(submits[i]))
            with res.request() as req:
                yield req
                yield env.timeout(0.05 + 0.02 * int(sizes[i]))
                ends[i] = env.now

        for i in range(len(submits)):
            env.process(client(i))
        env.run()
        assert ours == pytest.approx(ends, rel=1e-12)
        assert kb.busy_s == pytest.approx(float((0.05 + 0.02 * sizes).sum()), rel=1e-12)


def test_kb_queueing_grows_as_servers_shrink():
    one = simulator.run(merge(LOAD, {"retrieval": {"mode": "baseline", "kb_servers": 1, "kb_fixed_s": 0.2}})).summary
    many = simulator.run(merge(LOAD, {"retrieval": {"mode": "baseline", "kb_servers": 64, "kb_fixed_s": 0.2}})).summary
    assert one["kb_wait_mean_s"] > 0 and many["kb_wait_mean_s"] == 0.0
    assert one["e2e_mean_s"] > many["e2e_mean_s"]


def test_bulk_equals_step_and_deterministic(at_load):
    assert_bulk_equals_step(LOAD)
    again = simulator.run(LOAD)
    assert again.requests.equals(at_load.requests) and again.steps.equals(at_load.steps)
    assert again.summary == at_load.summary or all(
        again.summary[k] == at_load.summary[k] or (isinstance(v, float) and math.isnan(v))
        for k, v in at_load.summary.items())


@pytest.mark.parametrize("override,field", [
    ({"retrieval": {"kb_fixed_s": -0.1}}, "retrieval.kb_fixed_s"),
    ({"retrieval": {"lookup_s": -1.0}}, "retrieval.lookup_s"),
    ({"retrieval": {"cache_hit_p": 1.5}}, "retrieval.cache_hit_p"),
    ({"retrieval": {"stride": 0}}, "retrieval.stride"),
    ({"retrieval": {"interval_tokens": 0}}, "retrieval.interval_tokens"),
    ({"retrieval": {"mode": "prefetch"}}, "retrieval.mode"),
    ({"retrieval": {"kv_while_paused": "swapped"}}, "retrieval.kv_while_paused"),
    ({"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 3}}, "drafter.kind"),
    ({"cluster": {"kv_cache": {"prefix_caching": True}}}, "cluster.kv_cache.prefix_caching"),
    ({"workload": {"parallel_samples": 2}}, "workload.parallel_samples"),
    ({"cluster": {"replicas": None, "router": None, "disaggregation": {}}}, "cluster.disaggregation"),
])
def test_bad_input_names_the_field(override, field):
    data = merge(LOAD, override)
    data["cluster"] = {k: v for k, v in data["cluster"].items() if v is not None}
    with pytest.raises(ScenarioError) as err:
        prepare(data)
    assert err.value.field == field, str(err.value)


def test_a_round_of_no_time_is_refused():
    """Every time 0: the speedup (and ralmspec_optimal_stride) divided 0 by 0, a ZeroDivisionError."""
    from theory.ralmspec import ralmspec_optimal_stride
    with pytest.raises(ValueError, match="a round takes no time"):
        ralmspec(0.5, 2, 0.0, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="a round takes no time"):
        ralmspec_optimal_stride(0.5, 0.0, 0.0, 0.0, 0.0)
    assert ralmspec(1.0, 1, 0.0, 0.0, 0.1, 0.0).speedup == pytest.approx(1.0)   # free generation, one query


@pytest.mark.parametrize("times, name", [((-1.0, 0.1, 1.0, 0.1), "generate_s"), ((1.0, math.nan, 1.0, 0.1), "lookup_s"),
                                         ((1.0, 0.1, -2.0, 0.1), "kb_fixed_s"), ((1.0, 0.1, 1.0, math.inf), "kb_per_query_s")])
def test_simulate_ralmspec_names_a_bad_time(times, name):
    """The query-by-query run took negative, NaN or infinite times (a negative or NaN clock); it now checks
    what ralmspec checks."""
    with pytest.raises(ValueError, match=name):
        simulate_ralmspec(0.5, 3, *times, 10, np.random.default_rng(0))
