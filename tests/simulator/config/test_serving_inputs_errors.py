"""Bad input for every field of real-world inputs (models, hardware, dtypes, context, traces, prefixes, KV
tiers, routing): one line naming the field and what is allowed, exit 2, nothing written — checked through
the CLI, before any work starts. (Trace-file contents, model files and hardware fields are covered in
test_workload_traces.py, test_models_hf_import.py and test_hardware_user_dtypes.py.)"""
from __future__ import annotations

import pytest

from contract import assert_one_line, run_cli
from sim_helpers import merge, scenario

TRACE = {"workload": {"arrival": {"process": "trace", "trace_csv": "t.csv"}}}
LONG = {"workload": {"prompt_tokens": {"kind": "fixed", "value": 9000}, "output_tokens": {"kind": "fixed", "value": 8}}}

# name -> (overrides of the small scenario, what the one line must say)
BAD = {
    "unknown_format": (merge(TRACE, {"workload": {"arrival": {"format": "alibaba"}}}),
                       "workload.arrival.format: Input should be 'draftsim', 'azure', 'burstgpt' or 'mooncake'"),
    "missing_column": (merge(TRACE, {"workload": {"arrival": {"columns": {"arrival": "ts"}}}}),
                       "lacks column(s) 'ts'"),
    "bad_time_unit": (merge(TRACE, {"workload": {"arrival": {"time_unit": "days"}}}), "workload.arrival.time_unit"),
    "trace_option_without_trace": ({"workload": {"arrival": {"speedup": 2.0}}},
                                   "speedup is only allowed for process 'trace'"),
    "fp8_on_a100": ({"cluster": {"hardware": "a100-80gb", "dtype": "fp8", "engine": {"version": "0.5.0"}}},
                    "cluster.dtype: fp8 weights need FP8 tensor cores, which a100-80gb lacks, and vllm 0.5.0 has no "
                    "weight-only FP8"),
    "unknown_dtype": ({"cluster": {"dtype": "int2"}}, "cluster.dtype: Input should be"),
    "unknown_kv_dtype": ({"cluster": {"kv_dtype": "int4"}},
                         "cluster.kv_dtype: Input should be 'fp32', 'bf16', 'fp16', 'fp8' or 'nvfp4'"),
    "unsupported_architecture": ({"cluster": {"model": {"architectures": ["Gemma3ForCausalLM"], "hidden_size": 8}}},
                                 "Gemma3ForCausalLM"),
    "max_model_len_above_context": ({"cluster": {"max_model_len": 100000}},
                                    "cluster.max_model_len: 100000 exceeds the 8192 tokens vllm"),
    "prompt_longer_than_context": (LONG, "but the context of llama-3-8b is 8192 (cluster.max_model_len)"),
    "allow_long_context_before_vllm_0_5_4": ({"cluster": {"max_model_len": 16384, "engine": {
        "version": "0.5.3", "allow_long_context": True}}},
        "cluster.engine.allow_long_context: vllm 0.5.3 has no VLLM_ALLOW_LONG_MAX_MODEL_LEN (read from 0.5.4)"),
    "allow_long_context_not_a_boolean": ({"cluster": {"engine": {"allow_long_context": "always"}}},
                                         "cluster.engine.allow_long_context: Input should be a valid boolean"),
    "unknown_context_overflow": (merge(LONG, {"workload": {"context_overflow": "cut"}}),
                                 "workload.context_overflow: Input should be 'error', 'drop' or 'truncate'"),
    "unknown_preemption": ({"cluster": {"kv_cache": {"preemption": "offload"}}},
                           "cluster.kv_cache.preemption: Input should be 'recompute' or 'swap'"),
    "swap_without_host_memory": ({"cluster": {"kv_cache": {"preemption": "swap"}}}, "needs host_memory_gib > 0"),
    "prefix_router_without_cache": ({"cluster": {"router": "prefix_aware", "replicas": 2}},
                                    "cluster.router: 'prefix_aware' routes by cached prefixes"),
    "bad_shared_prefix": ({"workload": {"shared_prefix": {"prompts": 0, "tokens": 64}}},
                          "workload.shared_prefix.prompts"),
    "sessions_on_a_trace": (merge(TRACE, {"workload": {"sessions": {"turns": {"kind": "fixed", "value": 2},
                                                                    "think_time_s": 1.0}}}),
                            "shared_prefix and sessions generate requests; not allowed for process 'trace'"),
    "bad_user_hardware": ({"cluster": {"hardware": {"id": "my-gpu", "peak_flops": {"bf16": 1e15}}}},
                          "cluster.hardware"),
    "unknown_scheduler": ({"scheduler": {"kind": "orca"}},
                          "scheduler.kind: unknown scheduler 'orca'; allowed: vllm, sarathi, vllm_v1"),
    "simulation_key_twice": ({"scheduler": {"workers": 2}, "simulation": {"workers": 1}},
                             "scheduler.workers: unknown field"),
    # a boolean is no number: pydantic alone reads `true` as 1 (one request ran) and `false` as 0.0
    "bool_as_count": ({"workload": {"num_requests": True}},
                      "workload.num_requests: Input should be a number, not the boolean true"),
    "bool_as_rate": ({"workload": {"arrival": {"qps": False}}},
                     "workload.arrival.qps: Input should be a number, not the boolean false"),
    "bool_as_int_or_name": ({"simulation": {"workers": True}},
                            "simulation.workers: Input should be a number, not the boolean true"),
    "bool_in_a_nested_section": ({"cluster": {"parallelism": {"tp": True}}},
                                 "cluster.parallelism.tp: Input should be a number, not the boolean true"),
    # inside a mapping of numbers (its keys and its values) and a list of fixed-length tuples: read as 1 before
    "bool_as_a_mapped_number": ({"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 4},
                                 "policy": {"kind": "trtllm_schedule", "draft_len_schedule": {4: True, 64: 0}}},
                                "policy.draft_len_schedule: Input should be a number, not the boolean true"),
    "bool_as_a_mapping_key": ({"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 4},
                               "policy": {"kind": "sglang_adaptive", "slots": {True: {"candidate_steps": [1, 2]}}}},
                              "policy.slots: Input should be a number, not the boolean true"),
    "bool_in_a_tuple_of_a_list": ({"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 4},
                                   "policy": {"kind": "vllm_dynamic", "schedule": [[1, True, 3], [2, 64, 2]]}},
                                  "policy.schedule: Input should be a number, not the boolean true"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_serving_input_is_one_line_exit_2_nothing_written(tmp_path, capsys, name):
    overrides, message = BAD[name]
    data = merge(scenario(), overrides)
    if "trace_csv" in str(overrides):
        data["workload"] = {k: v for k, v in data["workload"].items() if k in ("arrival", "sessions")}
        data["workload"]["arrival"] = {k: v for k, v in data["workload"]["arrival"].items() if k != "qps"}
        (tmp_path / "t.csv").write_text("arrival_s,prompt_tokens,output_tokens\n0.0,12,3\n0.5,20,4\n")
    code, err, out = run_cli(tmp_path, data)
    assert code == 2
    assert_one_line(err, message)
    assert not out.exists()


def test_only_number_fields_refuse_booleans():
    """The rule reads each field's type: numbers (through unions and Annotated) refuse a boolean; a boolean
    field, an Any and a number-or-boolean union take it; a string field keeps pydantic's own message."""
    from typing import Annotated, Any, Literal

    from pydantic import Field

    from simulator.config.base import _bool_for_number, _number_not_bool
    assert _number_not_bool(int) and _number_not_bool(float) and _number_not_bool(int | None)
    assert _number_not_bool(Annotated[float, Field(gt=0)]) and _number_not_bool(int | Literal["auto"])
    assert not _number_not_bool(bool) and not _number_not_bool(bool | int) and not _number_not_bool(Any)
    assert not _number_not_bool(str) and not _number_not_bool(list[int]) and not _number_not_bool(Literal[1, 2])
    assert _bool_for_number(list[int], [1, True]) is True and _bool_for_number(tuple[float, ...], (False,)) is False
    assert _bool_for_number(list[int] | None, [True]) is True and _bool_for_number(int, True) is True
    assert _bool_for_number(list[bool | int], [True]) is None and _bool_for_number(list[str], [True]) is None
    assert _bool_for_number(int, [True]) is None and _bool_for_number(list[int], [1, 2]) is None
    # through dicts (keys and values) and fixed-length tuples (by position), as deep as the type goes
    assert _bool_for_number(dict[int, int], {1: True}) is True and _bool_for_number(dict[int, int], {True: 1}) is True
    assert _bool_for_number(dict[str, Any], {"a": True}) is None and _bool_for_number(dict[str, bool], {"a": 1}) is None
    assert _bool_for_number(list[tuple[int, str]], [(1, True)]) is None
    assert _bool_for_number(list[tuple[int, str]], [(False, "a")]) is False
    assert _bool_for_number(dict[str, list[float]] | None, {"a": [1.0, True]}) is True
    assert _bool_for_number(list[int] | list[bool], [True]) is None   # one member takes it as a boolean


def test_numpy_booleans_are_no_numbers_either():
    """A NumPy boolean (np.True_ out of an array or a DataFrame) through the Python API is refused as a
    Python one is: pydantic alone read it as 1 where a field takes a number."""
    import numpy as np

    from simulator.api import prepare
    from simulator.errors import ScenarioError
    for overrides, where in [({"workload": {"num_requests": np.True_}}, "workload.num_requests"),
                             ({"cluster": {"parallelism": {"tp": np.True_}}}, "cluster.parallelism.tp"),
                             ({"seed": np.False_}, "seed"),
                             ({"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 4},
                               "policy": {"kind": "trtllm_schedule", "draft_len_schedule": {4: np.True_}}},
                              "policy.draft_len_schedule")]:
        with pytest.raises(ScenarioError, match=f"^{where}: Input should be a number, not the boolean "):
            prepare(merge(scenario(), overrides))
    assert prepare(merge(scenario(), {"workload": {"num_requests": np.int64(3)}, "outputs": {"plots": np.False_}}))


def test_values_of_another_type_are_refused_and_what_yaml_writes_is_kept():
    """pydantic's lax mode read `replicas: "2"` or `replicas: 2.0` as 2, `plots: "off"` or `plots: 0` as false
    and `alpha: "0.7"` as 0.7, and ran them (simulator.config.base.Strict is strict now); what YAML writes one way
    still validates: its booleans (`no` as PyYAML reads it), an integer where a float goes, a path as text, a row
    as a list, and a NumPy integer through the Python API."""
    import numpy as np
    import yaml

    from simulator.api import prepare
    from simulator.errors import ScenarioError
    for overrides, says in [({"cluster": {"replicas": "2"}}, "cluster.replicas: Input should be a valid integer, "
                                                             "not the text '2'"),
                            ({"cluster": {"replicas": 2.0}}, "cluster.replicas: Input should be a valid integer, "
                                                             "not 2.0"),
                            ({"cluster": {"replicas": np.float64(2.0)}}, "cluster.replicas: Input should be a "
                                                                         "valid integer, not 2.0"),
                            ({"outputs": {"plots": 0}}, "outputs.plots: Input should be a valid boolean (true or "
                                                        "false), not 0"),
                            ({"acceptance": {"kind": "constant", "alpha": "0.7"}},
                             "acceptance.alpha: Input should be a valid number, not the text '0.7'")]:
        with pytest.raises(ScenarioError) as err:
            prepare(merge(scenario(), overrides))
        assert str(err.value) == says
    kept = prepare(merge(scenario(), yaml.safe_load("""
        cluster: {gpu_memory_utilization: 1}
        outputs: {plots: no}
        drafter: {kind: draft_model, model: llama-68m, gamma: 2}
        acceptance: {kind: drifting, points: [[0, 1], [3, 0.5]]}
    """) | {"seed": np.int64(3)})).scenario
    assert kept.cluster.gpu_memory_utilization == 1.0 and kept.outputs.plots is False and kept.seed == 3
    assert kept.acceptance.points == [(0, 1.0), (3, 0.5)]


def test_booleans_still_set_boolean_fields():
    import simulator
    result = simulator.run(merge(scenario(), {"outputs": {"plots": False}}))
    assert result.scenario.outputs.plots is False


def test_a_longer_context_runs_with_the_engines_variable():
    """cluster.engine.allow_long_context: the requests a 16K max_model_len admits run (llama-3-8b derives 8,192
    under vLLM: refused without the flag, BAD above), and the pool's context is the one given."""
    import simulator
    data = merge(scenario(), merge(LONG, {"cluster": {"max_model_len": 16384, "engine": {
        "version": "0.11.0", "allow_long_context": True}}, "outputs": {"plots": False}}))
    result = simulator.run(data)
    assert result.summary["requests_finished"] == result.summary["requests_arrived"] > 0
    assert result.summary["requests_dropped"] == 0 and result.requests.prompt_tokens.min() == 9000
    assert result.built.pools[0].kind.context_len == 16384


def test_the_simulation_keys_old_place_still_runs_with_a_warning():
    import warnings

    import simulator
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = simulator.run(merge(scenario(), {"scheduler": {"step_mode": "step", "workers": 1}}))
    assert result.scenario.simulation.step_mode == "step" and result.scenario.simulation.workers == 1
    assert {str(w.message) for w in caught} >= {"scheduler.step_mode is now simulation.step_mode",
                                                "scheduler.workers is now simulation.workers"}


def test_what_a_python_user_writes_for_a_list_or_a_path_is_taken():
    """Strict mode refused a tuple or a 1-D NumPy array where a field takes a list (`alphas=(0.8, 0.7)`,
    `capture_sizes=np.arange(1, 5)`: 'Input should be a valid list', where pydantic's lax mode took them) and a
    Path object where a field takes a name or a path as text (`cluster.model=Path(".../config.json")`); each now
    validates to what the list or the text gives. Their items stay strict, and a value of another type is still
    refused in one line."""
    from pathlib import Path

    import numpy as np

    from simulator.api import prepare
    from simulator.errors import ScenarioError
    draft = {"kind": "draft_model", "model": Path("llama-68m"), "gamma": 2}
    config = Path(__file__).resolve().parents[2] / "data" / "hf_configs" / "Llama-3.1-8B" / "config.json"
    as_list = {"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 2},
               "acceptance": {"kind": "positional", "alphas": [0.8, 0.5]},
               "cluster": {"engine": {"framework": "vllm", "capture_sizes": [1, 2, 4]}, "model": str(config)}}
    want = prepare(merge(scenario(), as_list)).scenario
    for alphas, sizes in [((0.8, 0.5), (1, 2, 4)), (np.array([0.8, 0.5]), np.array([1, 2, 4], dtype=np.int32))]:
        got = prepare(merge(scenario(), {"drafter": draft, "acceptance": {"kind": "positional", "alphas": alphas},
                                         "cluster": {"engine": {"framework": "vllm", "capture_sizes": sizes},
                                                     "model": config}})).scenario
        assert got == want and type(got.acceptance.alphas) is list and type(got.cluster.model) is str
    rows = [prepare(merge(scenario(), {"drafter": draft, "acceptance": {"kind": "drifting", "points": points}}))
            .scenario.acceptance.points for points in ([[0, 1], [3, 1]], np.array([[0, 1], [3, 1]]),
                                                       ((0, 1), (3, 1)), [np.array([0, 1]), np.array([3, 1])])]
    assert rows[1:] == rows[:1] * 3
    for overrides, says in [({"acceptance": {"kind": "positional", "alphas": ("0.8",)}},
                             "acceptance.alphas.0: Input should be a valid number, not the text '0.8'"),
                            ({"acceptance": {"kind": "positional", "alphas": (True, 0.5)}},
                             "acceptance.alphas: Input should be a number, not the boolean true"),
                            ({"seed": np.array([3])}, "seed: Input should be a valid integer, not a ndarray"),
                            ({"name": Path("t")}, "name: Input should be a valid string, not a PosixPath")]:
        with pytest.raises(ScenarioError) as err:
            prepare(merge(scenario(), {"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 2}}
                          | overrides))
        assert str(err.value) == says


def test_a_value_whose_repr_spans_lines_is_named_in_one_line():
    """A section or a name-or-mapping field given a pandas Series or DataFrame or a 2-D NumPy array through the
    Python API printed the object's repr, over several lines ('scheduler: kind  vllm\\nmax_batch_size  8\\n
    dtype: object is not allowed; ...'); it is named by its kind now, and a long repr is cut."""
    import numpy as np
    import pandas as pd

    from simulator.api import prepare
    from simulator.errors import ScenarioError
    for overrides, says in [({"scheduler": pd.Series({"kind": "vllm", "max_batch_size": 8})},
                             "scheduler: a Series is not allowed; expected a mapping of its fields"),
                            ({"slo": pd.DataFrame({"ttft_s": [1.0, 2.0]})},
                             "slo: a DataFrame is not allowed; expected a mapping of its fields"),
                            ({"cluster": {"model": np.array([[1, 2], [3, 4]])}},
                             "cluster.model: a ndarray is not allowed; expected a name or path (string) or a mapping"),
                            ({"scheduler": "ab" * 3000},
                             f"scheduler: '{'ab' * 38}... is not allowed; expected a mapping of its fields")]:
        with pytest.raises(ScenarioError) as err:
            prepare(merge(scenario(), overrides))
        assert str(err.value) == says


def test_integer_keys_written_as_text_as_json_writes_them_are_read_as_integers(tmp_path):
    """JSON writes every key as text: a scenario in JSON with `"draft_len_schedule": {"4": 2}` (or SGLang's
    adaptive slots {"1": ...}) was refused by strict mode ('policy.draft_len_schedule.4: 2 is not allowed;
    expected [key]') where pydantic's lax mode read it; a decimal key is now the integer, any other text key is
    refused naming the mapping, and a key given both ways is refused rather than merged."""
    import json

    from simulator.api import prepare
    from simulator.errors import ScenarioError
    draft = {"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 4}}
    schedule = lambda keys: merge(scenario(), draft | {"policy": {"kind": "trtllm_schedule", "draft_len_schedule": keys}})
    path = tmp_path / "s.json"
    path.write_text(json.dumps(schedule({4: 2, 16: 1})))
    assert prepare(path).scenario.policy.draft_len_schedule == {4: 2, 16: 1} \
        == prepare(schedule({4: 2, 16: 1})).scenario.policy.draft_len_schedule
    slots = {"kind": "sglang_adaptive", "slots": {"1": {"candidate_steps": [1, 3]}, "8": {"candidate_steps": [1]}}}
    assert list(prepare(merge(scenario(), {"cluster": {"model": "llama-3.1-8b"}, "drafter": {"kind": "eagle3", "gamma": 3},
                                           "policy": slots}))
                .scenario.policy.slots) == [1, 8]
    for keys, says in [({"4.0": 2}, "policy.draft_len_schedule: key '4.0': Input should be a valid integer, not the "
                                    "text '4.0'"),
                       ({" 4": 2}, "policy.draft_len_schedule: key ' 4': Input should be a valid integer, not the "
                                   "text ' 4'"),
                       ({"4": 2, 4: 3}, "policy.draft_len_schedule: key 4 is given twice (as text and as a number)"),
                       ({"0": 1}, "policy.draft_len_schedule: key 0: Input should be greater than or equal to 1")]:
        with pytest.raises(ScenarioError) as err:
            prepare(schedule(keys))
        assert str(err.value) == says


def test_a_field_named_like_its_kind_is_told_from_the_kinds_tag():
    """`acceptance: {kind: trace, trace: NAME}` and `{kind: contexts, contexts: [...]}`: the kind's tag that pydantic
    puts in an error's location has the field's name. A bad field beside it was named as the trace
    ('acceptance.trace: 'NAME' is not allowed; expected drafter') and a missing trace as the section ('acceptance:
    required field is missing'); each names its own field now."""
    from simulator.api import prepare
    from simulator.errors import ScenarioError
    draft = {"drafter": {"kind": "draft_model", "model": "qwen2.5-coder-0.5b", "gamma": 2}}
    name = "qwen2.5-coder-1.5b-0.5b"
    for acceptance, says in [({"kind": "trace", "trace": name, "drafter": "bogus"},
                              "acceptance.drafter: Input should be 'draft', 'skip' or 'ngram'"),
                             ({"kind": "trace", "trace": name, "temperature": -1},
                              "acceptance.temperature: Input should be greater than 0"),
                             ({"kind": "trace", "trace": name, "extra": 1}, "acceptance.extra: unknown field"),
                             ({"kind": "trace"}, "acceptance.trace: required field is missing"),
                             ({"kind": "trace", "trace": 5}, "acceptance.trace: Input should be a valid string, not 5"),
                             ({"kind": "contexts"}, "acceptance.contexts: required field is missing"),
                             ({"kind": "contexts", "contexts": [{"weight": 1}]},
                              "acceptance.contexts.0.accept_probs: required field is missing")]:
        with pytest.raises(ScenarioError) as err:
            prepare(merge(scenario(), draft | {"acceptance": acceptance}))
        assert str(err.value) == says
