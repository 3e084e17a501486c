"""workload.dataset: request lengths as `vllm bench serve` and SGLang's `bench_serving` draw them
(simulator.core.bench_clients), checked against the clients' own algorithms written out here loop by loop as
their sources do (vllm-project/vllm vllm/benchmarks/datasets.py at 0056b87 and benchmarks/benchmark_serving.py
before PR #16126; sgl-project/sglang python/sglang/bench_serving.py at 0033168f), hand-worked ranges, the
shipped pool's fingerprint and published client printouts."""
from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

import simulator
from simulator.config.workload import WorkloadConfig
from simulator.core.bench_clients import BenchDataset, pool, sglang, vllm
from simulator.core.bench_clients.pool import POOL_PATH, Pool, sharegpt_pool
from sim_helpers import scenario

SHIPPED_FINGERPRINT = "b8aeb3ac5aa49b829d10a4196f83923de4a12953672c0965ab1147c566957eac"


def spec(**fields) -> BenchDataset:
    """A validated `workload.dataset` section's spec."""
    workload = {"arrival": {"process": "poisson", "qps": 1.0}, "num_requests": 1, "dataset": fields}
    return WorkloadConfig.model_validate(workload).spec().dataset


# ---- random datasets: ranges worked by hand from the sources' formulas ----

def test_vllm_random_ranges_by_release():
    # >= 0.8.4: L' = 100 - 1 = 99: floor(99 * 0.5) = 49, ceil(99 * 1.5) = 149; output floor(5), ceil(15)
    assert vllm.random_bounds(spec(client="vllm", name="random", input_len=100, output_len=10, range_ratio=0.5,
                                   special_tokens=1)) == ((49, 149), (5, 15))
    # default r = 0: every request L' (+ the server's BOS = L) and O
    assert vllm.random_bounds(spec(client="vllm", name="random", input_len=100, output_len=10,
                                   special_tokens=1)) == ((99, 99), (10, 10))
    # r = 0.9 on a 1-token output: floor(0.1) = 0 is raised to 1
    assert vllm.random_bounds(spec(client="vllm", name="random", input_len=100, output_len=1,
                                   range_ratio=0.9))[1] == (1, 2)
    # < 0.8.4: [int(L r), L], default r = 1 (every request exactly L), no special-token subtraction
    assert vllm.random_bounds(spec(client="vllm", name="random", release="0.8.3", input_len=100, output_len=10,
                                   special_tokens=1)) == ((100, 100), (10, 10))
    assert vllm.random_bounds(spec(client="vllm", name="random", release="0.6.3", input_len=100, output_len=10,
                                   range_ratio=0.5)) == ((50, 100), (5, 10))


def test_sglang_random_range_default_is_one_to_L():
    # max(int(L * 0), 1) = 1 .. L: the default that averages about L/2 (sgl-project/sglang issue #7253)
    d = spec(client="sglang", name="random", input_len=1024, output_len=1024)
    assert sglang.random_bounds(d) == ((1, 1024), (0, 1024))
    prompt, output = sglang.random_lengths(d, 20000, 1)
    assert abs(prompt.mean() - 512.5) < 0.02 * 512.5 and prompt.min() >= 1 and prompt.max() <= 1024
    assert output.min() == 1   # a drawn 0 is kept as one token


def _vllm_get_sampling_params(num_requests, range_ratio, input_len, output_len, num_special, seed):
    """vllm/benchmarks/datasets.py RandomDataset.__init__ + get_sampling_params at 0056b87, as written there."""
    _rng = np.random.default_rng(seed)
    real_input_len = max(0, int(input_len) - num_special)
    input_low = math.floor(real_input_len * (1 - range_ratio))
    input_high = math.ceil(real_input_len * (1 + range_ratio))
    output_low = max(math.floor(output_len * (1 - range_ratio)), 1)
    output_high = max(math.ceil(output_len * (1 + range_ratio)), 1)
    input_lens = _rng.integers(input_low, input_high + 1, size=num_requests)
    output_lens = _rng.integers(output_low, output_high + 1, size=num_requests)
    return input_lens, output_lens


def _legacy_randint(num_prompts, range_ratio, input_len, output_len, seed, low_at_least_1=False):
    """benchmark_serving.py sample_random_requests (vLLM < 0.8.4) and sglang's sample_random_requests: the global
    NumPy stream seeded in main, then randint for inputs and outputs."""
    np.random.seed(seed)
    input_lens = np.random.randint(max(int(input_len * range_ratio), 1) if low_at_least_1
                                   else int(input_len * range_ratio), input_len + 1, size=num_prompts)
    output_lens = np.random.randint(int(output_len * range_ratio), output_len + 1, size=num_prompts)
    return input_lens, output_lens


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_random_draws_are_the_clients_draws(seed):
    d = spec(client="vllm", name="random", input_len=300, output_len=50, range_ratio=0.3, special_tokens=1)
    inputs, outputs = _vllm_get_sampling_params(64, 0.3, 300, 50, 1, seed)
    prompt, output = vllm.random_lengths(d, 64, seed)
    assert (prompt == inputs + 1).all() and (output == outputs).all()   # + the BOS the server adds

    d = spec(client="vllm", name="random", release="0.8.3", input_len=300, output_len=50, range_ratio=0.3)
    inputs, outputs = _legacy_randint(64, 0.3, 300, 50, seed)
    prompt, output = vllm.random_lengths(d, 64, seed)
    assert (prompt == inputs).all() and (output == outputs).all()

    d = spec(client="sglang", name="random", input_len=300, output_len=50, range_ratio=0.3)
    inputs, outputs = _legacy_randint(64, 0.3, 300, 50, seed, low_at_least_1=True)
    prompt, output = sglang.random_lengths(d, 64, seed)
    assert (prompt == inputs).all() and (output == outputs).all()


# ---- ShareGPT: the clients' loops over a small pool, and the filters' bounds by hand ----

@pytest.fixture
def small_pool(monkeypatch):
    """A pool whose rows sit on and beside every filter bound."""
    prompt = np.array([3, 4, 1024, 1025, 1000, 1000, 2, 1, 500, 10, 20, 30], np.int64)
    output = np.array([50, 4, 1024, 50, 1048, 1049, 3, 50, 1, 3, 40, 60], np.int64)
    fake = Pool(prompt, output, {})
    for module in (vllm, sglang):
        monkeypatch.setattr(module, "sharegpt_pool", lambda: fake)
    return fake


def _vllm_sharegpt_loop(data, num_requests, seed, output_len=None):
    """ShareGPTDataset.load_data (random.seed; random.shuffle) + sample + is_valid_sequence +
    maybe_oversample_requests, as written in vllm/benchmarks/datasets.py (lengths in place of texts)."""
    data = list(data)
    random.seed(seed)
    random.shuffle(data)
    samples = []
    for prompt_len, completion_len in data:
        if len(samples) >= num_requests:
            break
        new_output_len = completion_len if output_len is None else output_len
        too_short = prompt_len < 4 or (output_len is None and new_output_len < 4)
        if too_short or prompt_len > 1024 or prompt_len + new_output_len > 2048:
            continue
        samples.append((prompt_len, new_output_len))
    if len(samples) < num_requests:
        random.seed(seed)
        samples.extend([random.choice(samples) for _ in range(num_requests - len(samples))])
    return samples


def _sglang_sharegpt_loop(data, num_requests, seed, context_len=None, legacy=False):
    """sample_sharegpt_requests (random.seed in run_benchmark; random.shuffle; the pruning of 0033168f, or the
    4/1024/2048 pruning before PR #2922)."""
    dataset = list(data)
    random.seed(seed)
    random.shuffle(dataset)
    filtered = []
    for i in range(len(dataset)):
        if len(filtered) == num_requests:
            break
        prompt_len, output_len = dataset[i]
        if legacy:
            if prompt_len < 4 or output_len < 4 or prompt_len > 1024 or prompt_len + output_len > 2048:
                continue
        else:
            if prompt_len < 2 or output_len < 2:
                continue
            if context_len and prompt_len + output_len > context_len:
                continue
        filtered.append((prompt_len, output_len))
    return filtered


def _pairs(prompt, output):
    return list(zip(prompt.tolist(), output.tolist()))


def test_vllm_sharegpt_filter_bounds(small_pool):
    # by hand: (3, 50) p < 4; (1025, 50) p > 1024; (1000, 1049) p + o = 2049; (2, 3), (1, 50) short; (500, 1),
    # (10, 3) o < 4 -- kept: p = 4 = o, p = 1024 with p + o = 2048, p + o = 2048, (20, 40), (30, 60)
    d = spec(client="vllm", name="sharegpt")
    kept = _pairs(*vllm.sharegpt_lengths(d, 6, 0))
    assert set(kept) == {(4, 4), (1024, 1024), (1000, 1048), (20, 40), (30, 60)} and len(kept) == 6  # 1 oversampled


@pytest.mark.parametrize("seed", [0, 3, 42])
@pytest.mark.parametrize("n", [2, 5, 9])
def test_vllm_sharegpt_is_the_clients_loop(small_pool, seed, n):
    data = _pairs(small_pool.prompt_tokens, small_pool.output_tokens)
    d = spec(client="vllm", name="sharegpt")
    assert _pairs(*vllm.sharegpt_lengths(d, n, seed)) == _vllm_sharegpt_loop(data, n, seed)
    fixed = spec(client="vllm", name="sharegpt", output_len=2)   # a fixed output skips the output minimum
    assert _pairs(*vllm.sharegpt_lengths(fixed, n, seed)) == _vllm_sharegpt_loop(data, n, seed, output_len=2)


@pytest.mark.parametrize("seed", [1, 7])
def test_sglang_sharegpt_is_the_clients_loop(small_pool, seed):
    data = _pairs(small_pool.prompt_tokens, small_pool.output_tokens)
    d = spec(client="sglang", name="sharegpt")
    # the current rule keeps every row but p = 1 and o = 1 (p, o >= 2): 10 of 12
    assert _pairs(*sglang.sharegpt_lengths(d, 10, seed)) == _sglang_sharegpt_loop(data, 10, seed)
    ctx = spec(client="sglang", name="sharegpt", context_len=100)
    assert _pairs(*sglang.sharegpt_lengths(ctx, 3, seed)) == _sglang_sharegpt_loop(data, 3, seed, context_len=100)
    old = spec(client="sglang", name="sharegpt", release="0.4.1")
    assert _pairs(*sglang.sharegpt_lengths(old, 5, seed)) == _sglang_sharegpt_loop(data, 5, seed, legacy=True)
    with pytest.raises(sglang.TooFewRequests):
        sglang.sharegpt_lengths(d, 11, seed)   # SGLang never oversamples


def test_special_tokens_count_on_both_sides(small_pool):
    # tokenizer(text).input_ids adds the BOS to the prompt and to the reference reply alike, before the filter:
    # (3, 50) -> (4, 51) and (10, 3) -> (11, 4) now pass; (1024, 1024) -> (1025, 1025), (1000, 1048) ->
    # (1001, 1049) and (500, 1) -> (501, 2) now fail
    d = spec(client="vllm", name="sharegpt", special_tokens=1)
    assert set(_pairs(*vllm.sharegpt_lengths(d, 5, 0))) == {(4, 51), (5, 5), (11, 4), (21, 41), (31, 61)}


# ---- in a scenario: determinism, the scenario's seed, exclusivity with the arrival stream ----

def _lengths(seed: int, dataset: dict, n: int = 50):
    data = scenario(seed=seed, workload={"arrival": {"process": "poisson", "qps": 4.0}, "num_requests": n,
                                         "dataset": dataset})
    del data["workload"]["prompt_tokens"], data["workload"]["output_tokens"]
    from simulator.config.scenario import Scenario
    from simulator.core.workload import generate_requests
    scen = Scenario.model_validate(data)
    table = generate_requests(scen.workload.spec(), np.random.default_rng(seed), Path("."))
    return table.arrival_s, table.prompt_tokens, table.output_tokens


def test_same_seed_same_lengths_other_seed_other_lengths():
    d = {"client": "vllm", "name": "sharegpt"}
    a, b, c = _lengths(7, d), _lengths(7, d), _lengths(8, d)
    assert all((x == y).all() for x, y in zip(a, b))
    assert not (a[1] == c[1]).all()
    # a seed of the client's own fixes the draw whatever the scenario's seed
    fixed = {**d, "seed": 0}
    assert (_lengths(7, fixed)[1] == _lengths(8, fixed)[1]).all()
    assert (_lengths(7, fixed)[1] == vllm.sharegpt_lengths(spec(**fixed), 50, 0)[0]).all()


def test_arrivals_do_not_move_with_the_length_source():
    plain = scenario(seed=11, workload={"num_requests": 40})
    with_dataset = scenario(seed=11, workload={"num_requests": 40})
    del with_dataset["workload"]["prompt_tokens"], with_dataset["workload"]["output_tokens"]
    with_dataset["workload"]["dataset"] = {"client": "sglang", "name": "random", "input_len": 64, "output_len": 16}
    a, b = simulator.run(plain).requests, simulator.run(with_dataset).requests
    assert np.allclose(a["arrival_s"], b["arrival_s"])
    assert b["prompt_tokens"].between(1, 64).all() and b["output_tokens"].between(1, 16).all()


# ---- the shipped pool ----

def test_shipped_pool_matches_its_fingerprint_and_readme():
    p = sharegpt_pool()
    assert p.meta["fingerprint"] == SHIPPED_FINGERPRINT and len(p) == p.meta["rows"] == 17400
    summary = json.loads(POOL_PATH.with_name("sharegpt-first-turns.summary.json").read_text())
    assert summary["fingerprint"] == SHIPPED_FINGERPRINT
    assert SHIPPED_FINGERPRINT in (POOL_PATH.parent / "README.md").read_text()
    assert POOL_PATH.stat().st_size < 200_000
    assert (p.prompt_tokens >= 0).all() and (p.output_tokens >= 0).all()


def test_a_changed_pool_is_refused(tmp_path):
    import pyarrow.parquet as pq
    table = pq.read_table(POOL_PATH)
    prompt = table.column("prompt_tokens").to_numpy().copy()
    prompt[123] += 1
    changed = table.set_column(0, "prompt_tokens", [prompt]).replace_schema_metadata(table.schema.metadata)
    path = tmp_path / "pool.parquet"
    pq.write_table(changed, path)
    with pytest.raises(ValueError, match="does not match its fingerprint"):
        pool.sharegpt_pool(path)
    shutil.copy(POOL_PATH, tmp_path / "same.parquet")
    assert len(pool.sharegpt_pool(tmp_path / "same.parquet")) == 17400


# ---- out of sample: published client printouts (profiles/data/workloads/README.md) ----

def test_published_printouts():
    """Mean prompt (and, with --ignore-eos-free caveats, output) lengths of two published ShareGPT runs of vLLM's
    client against draftsim's sampler at the same prompt count and seed; nothing tuned to them.
    - sgl-project/sglang issue #1639 (2024-10-17): benchmark_serving.py, Meta-Llama-3-8B-Instruct, 2000 prompts,
      --seed 42: total input 453,502, generated 376,493 (Llama-3: BOS, special_tokens 1);
    - vllm-project/vllm-ascend issue #1605 (2025-07-03): Qwen/Qwen3-32B, 200 prompts (default seed 0): total input
      43,560, generated 44,697 (Qwen: no special tokens)."""
    llama = spec(client="vllm", name="sharegpt", special_tokens=1)
    prompt, output = vllm.sharegpt_lengths(llama, 2000, 42)
    assert abs(prompt.mean() / (453502 / 2000) - 1) < 0.05
    assert abs(output.mean() / (376493 / 2000) - 1) < 0.10
    qwen = spec(client="vllm", name="sharegpt")
    prompt, _ = vllm.sharegpt_lengths(qwen, 200, 0)
    assert abs(prompt.mean() / (43560 / 200) - 1) < 0.05


def test_the_readme_examples_validate():
    import yaml
    text = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    section = text[text.index("### Lengths as a benchmark client draws them"):]
    block = section[section.index("```yaml") + len("```yaml"): section.index("```", section.index("```yaml") + 7)]
    workloads = [doc["workload"] for doc in yaml.safe_load_all(block)]
    assert [w["dataset"]["client"] for w in workloads] == ["vllm", "sglang"]
    for workload in workloads:
        WorkloadConfig.model_validate(workload)
