"""Suffix decoding in the simulator: walks against a brute-force proposer on real and random token
sequences (the heavy tail of accepted lengths included), the simulator replaying the walks exactly,
bulk ≡ step, determinism, and one-line errors."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from simulator.errors import ScenarioError
from simulator.speculation.suffix.cache import SuffixParams, SuffixProposer
from simulator.speculation.suffix.walk import NgramIndex, walk_request
from sim_helpers import assert_bulk_equals_step, merge, replica_kind, scenario
from suffix_reference import BruteSuffix
from paths import REPO

SHAREGPT = "sessions-sharegpt"


class BruteProposer:
    """vLLM's proposer over brute-force trees: local = prompt + output, global = every request's output."""

    def __init__(self, params: SuffixParams):
        self.p, self.glob, self.local, self.ctx, self.seq = params, BruteSuffix(params.max_tree_depth), {}, {}, {}

    def start(self, req, prompt, first):
        self.local[req] = BruteSuffix(self.p.max_tree_depth)
        self.local[req].extend(0, prompt)
        self.seq[req] = len(self.seq)
        self.ctx[req] = list(prompt)
        return self.propose(req, first)

    def propose(self, req, sampled):
        self.local[req].extend(0, sampled)
        self.glob.extend(self.seq[req], sampled)
        self.ctx[req].extend(sampled)
        c = self.ctx[req][-self.p.max_tree_depth:]
        a = self.local[req].speculate(c, self.p.num_speculative_tokens, self.p.max_spec_factor,
                                      self.p.max_spec_offset, self.p.min_token_prob)
        b = self.glob.speculate(c, self.p.num_speculative_tokens, self.p.max_spec_factor,
                                self.p.max_spec_offset, self.p.min_token_prob)
        return a[0] if a[2] >= b[2] else b[0]


def _walks(proposer_cls, requests, params):
    prop, out = proposer_cls(params), []
    for i, (prompt, output, stop) in enumerate(requests):
        first = prop.start(i, prompt, output[:1])
        first = first.tokens if hasattr(first, "tokens") else first

        def nxt(emitted, more, i=i):
            d = prop.propose(i, emitted)
            return (d.tokens if hasattr(d, "tokens") else d) if more else ()
        out.append(walk_request(output, stop, first, nxt))
    return out


def test_walks_match_brute_force_on_real_sessions():
    from profiles.acceptance.sessions import load_sessions
    from simulator.speculation.suffix.acceptance import resolve_corpus
    frame = load_sessions(resolve_corpus(SHAREGPT, Path(".")))
    rows = frame[frame["session"] == frame["session"].iloc[0]].head(2)
    requests = [(list(r.prompt_tokens[-100:]), list(r.output_tokens[:70]), False) for r in rows.itertuples()]
    params = SuffixParams(num_speculative_tokens=10, max_tree_depth=10)
    fast, slow = _walks(SuffixProposer, requests, params), _walks(BruteProposer, requests, params)
    for (p1, a1), (p2, a2) in zip(fast, slow):
        assert p1.tolist() == p2.tolist() and a1.tolist() == a2.tolist()
    # the heavy tail itself: identical histograms of accepted lengths per step
    h1 = np.bincount(np.concatenate([a for _, a in fast]))
    assert h1.tolist() == np.bincount(np.concatenate([a for _, a in slow])).tolist()


@settings(max_examples=25, deadline=None)
@given(motif=st.lists(st.integers(0, 4), min_size=2, max_size=6), noise=st.lists(st.integers(0, 6), max_size=30),
       reps=st.integers(1, 4), seed=st.integers(0, 1000))
def test_walks_match_brute_force_on_repetitive_random_text(motif, noise, reps, seed):
    rng = np.random.default_rng(seed)
    text = []
    for _ in range(reps):
        text += motif + [int(x) for x in rng.choice(noise or [5], size=rng.integers(0, 4))]
    requests = [(text[:8], text[8:] or [1, 2], bool(seed % 2)), (motif, text[::-1][:20] or [3, 4], False)]
    params = SuffixParams(num_speculative_tokens=5, max_tree_depth=6)
    fast, slow = _walks(SuffixProposer, requests, params), _walks(BruteProposer, requests, params)
    assert [(p.tolist(), a.tolist()) for p, a in fast] == [(p.tolist(), a.tolist()) for p, a in slow]


@settings(max_examples=60, deadline=None)
@given(text=st.lists(st.integers(0, 4), min_size=2, max_size=60), max_n=st.integers(1, 4), cap=st.integers(1, 6))
def test_ngram_index_equals_prompt_lookup(text, max_n, cap):
    from profiles.acceptance.drafters import NgramSettings, ngram_propose
    index = NgramIndex(max_n, 1, cap)
    for i, t in enumerate(text):
        index.extend([t])
        assert index.propose() == ngram_propose(text[:i + 1], NgramSettings(max_n, 1, cap))


@pytest.mark.parametrize("given,window", [({}, (5, 5)), ({"prompt_lookup_max": 3}, (3, 3)),
                                          ({"prompt_lookup_min": 2}, (2, 2)),
                                          ({"prompt_lookup_max": 3, "prompt_lookup_min": 1}, (3, 1))])
def test_ngram_windows_left_out_are_vllms(given, window):
    """vLLM 0.8.2-0.33.0 (vllm/config/speculative.py SpeculativeConfig.__post_init__): no window given, 5 and 5;
    one given, the other equals it. draftsim's 3 and 1 were no release's. Worked by hand through the walk's
    proposer: only a 3-gram repeats in [7, 1, 2, 3, 8, 9, 5, 1, 2, 3], so vLLM's default window (n = 5 only)
    proposes nothing where lookups 3 to 1 propose what followed it, [8, 9, 5, 1]; a repeated 5-gram is found by
    both."""
    from simulator.config.speculation import NgramDrafterConfig
    from simulator.speculation.suffix.acceptance import drafter_key
    key = drafter_key(NgramDrafterConfig(kind="ngram", gamma=4, **given))
    assert key == ("ngram", 4, *window)
    for text, at_5_5, at_3_1 in (([7, 1, 2, 3, 8, 9, 5, 1, 2, 3], [], [8, 9, 5, 1]),
                                 ([1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5], [6, 1, 2, 3], [6, 1, 2, 3])):
        for (high, low), want in (((5, 5), at_5_5), ((3, 1), at_3_1)):
            index = NgramIndex(high, low, 4)
            index.extend(text)
            assert index.propose() == want, (text, high, low)


def _suffix_scenario(**overrides):
    return scenario(**merge({"cluster": {"hardware": "h100-sxm", "model": "qwen2.5-coder-0.5b", "dtype": "bf16"},
                             "drafter": {"kind": "suffix"},
                             "acceptance": {"kind": "sessions", "corpus": SHAREGPT},
                             "workload": {"num_requests": 50, "arrival": {"process": "poisson", "qps": 10.0}}},
                            overrides))


def test_simulator_replays_the_walks_exactly():
    import simulator
    data = _suffix_scenario()
    result = simulator.run(data)
    from simulator.cluster.build import Streams, pool_kind
    from simulator.config.scenario import parse_scenario
    acc = pool_kind(parse_scenario(data), None, "cluster", Streams.from_seed(data["seed"]).acceptance_seed,
                    REPO).acceptance   # the run's own acceptance stream
    req = result.requests
    assert (req["emitted_tokens"] == req["output_tokens"]).all()
    for row in req.itertuples():
        rid, k = np.array([row.request_id]), int(row.decode_steps)
        steps = np.arange(k)
        tau = acc.tau(np.repeat(rid, k), steps)
        proposed = acc.proposed_counts(np.repeat(rid, k), steps)
        assert row.drafted_tokens == int(proposed.sum())          # each step verified what was proposed
        head = int(tau[:-1].sum())
        assert head <= row.accepted_tokens <= head + int(tau[-1])  # the last step is cut at the output's end
    # ragged verify passes: steps whose requests verify different numbers of drafts
    assert req["drafted_tokens"].sum() < req["decode_steps"].sum() * 24


def test_bulk_equals_step_and_runs_are_deterministic():
    import simulator
    data = _suffix_scenario()
    assert_bulk_equals_step(data)
    a, b = simulator.run(data), simulator.run(data)
    pd.testing.assert_frame_equal(a.steps, b.steps)


@pytest.mark.parametrize("overrides, field", [
    ({"acceptance": {"kind": "constant", "alpha": 0.5}}, "acceptance.kind"),
    ({"policy": {"kind": "smartspec", "max_gamma": 4}}, "policy.kind"),
    ({"policy": {"kind": "vllm_dynamic", "schedule": [[1, 8, 4]]}}, "policy.kind"),
    ({"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 4}}, "acceptance.kind"),
    ({"acceptance": {"kind": "sessions", "corpus": "no-such-corpus"}}, "acceptance.corpus"),
])
def test_bad_combinations_name_the_field(overrides, field):
    with pytest.raises(ScenarioError) as err:
        replica_kind(_suffix_scenario(**overrides))
    assert err.value.field == field


def test_workloads_are_named_as_in_the_corpus():
    """acceptance.workloads are the corpus's `workload` names: 'sharegpt' was refused (the field took only the
    generator's code_edit, agentic and chat) and 'chat', which this corpus lacks, was 'no request of ['chat']
    has a decode step'."""
    replica_kind(_suffix_scenario(acceptance={"workloads": ["sharegpt"]}))
    with pytest.raises(ScenarioError) as err:
        replica_kind(_suffix_scenario(acceptance={"workloads": ["chat", "sharegpt"]}))
    assert err.value.field == "acceptance.workloads"
    assert f"{SHAREGPT}.parquet holds workloads ['sharegpt']; not ['chat']" in str(err.value)
