"""SGLang's --schedule-policy by release (profiles.engine_time.queue_defaults), as read in the PyPI wheels'
server_args.py (`ServerArgs.schedule_policy`, the `--schedule-policy` choices) and managers/schedule_policy.py."""
from __future__ import annotations

import pytest

from profiles.engine_time.queue_defaults import (policy_refusal, sglang_default_policy, sglang_in_batch_check,
                                                 sglang_policies)


@pytest.mark.parametrize("version, default", [
    ("0.4.0", "lpm"), ("0.4.2", "lpm"), ("0.4.3", "lpm"), ("0.4.3.post2", "lpm"),   # schedule_policy: str = "lpm"
    ("0.4.3.post3", "fcfs"), ("0.4.3.post4", "fcfs"), ("0.4.4", "fcfs"), ("0.4.5", "fcfs"), ("0.5.23", "fcfs")])
def test_the_default_flips_to_fcfs_in_0_4_3_post3(version, default):
    assert sglang_default_policy(version) == default


@pytest.mark.parametrize("version, choices", [
    ("0.4.10.post2", ("lpm", "random", "fcfs", "dfs-weight")),
    ("0.5.1", ("lpm", "random", "fcfs", "dfs-weight", "lof")),
    ("0.5.2", ("lpm", "random", "fcfs", "dfs-weight", "lof")),
    ("0.5.3", ("lpm", "random", "fcfs", "dfs-weight", "lof", "priority")),
    ("0.5.7", ("lpm", "random", "fcfs", "dfs-weight", "lof", "priority")),
    ("0.5.8", ("lpm", "random", "fcfs", "dfs-weight", "lof", "priority", "routing-key")),
    ("0.5.19", ("lpm", "random", "fcfs", "dfs-weight", "lof", "priority", "routing-key")),
    ("0.5.20", ("lpm", "random", "fcfs", "dfs-weight", "lof", "priority", "routing-key", "hrrn")),
    ("0.5.21", ("lpm", "random", "fcfs", "dfs-weight", "lof", "priority", "routing-key", "hrrn",
                "shortest-prefill-first"))])
def test_each_releases_choices(version, choices):
    assert sglang_policies(version) == choices


def test_the_in_batch_check_from_0_4_0_post2():
    assert not sglang_in_batch_check("0.4.0") and not sglang_in_batch_check("0.4.0.post1")
    assert sglang_in_batch_check("0.4.0.post2") and sglang_in_batch_check("0.5.23")


def test_refusals_name_the_release_and_what_it_has():
    assert policy_refusal("lpm", "0.4.2") is None and policy_refusal("lof", "0.5.1") is None
    assert policy_refusal("lof", "0.4.9") == ("sglang 0.4.9 has no schedule policy 'lof' (from 0.5.1); it has lpm, "
                                              "random, fcfs, dfs-weight")
    text = policy_refusal("random", "0.4.2")
    assert "'random' (sglang 0.4.2) is not modelled" in text and text.endswith("allowed: fcfs, lpm")
    assert policy_refusal("dfs-weight", "0.5.23").endswith("allowed: fcfs, lpm, lof")
