"""simulator.cluster.implied: a refusal of a value the scenario left out says the value and what implied it."""
from types import SimpleNamespace

import pytest

from models import get_model
from models.errors import FieldError
from simulator.cluster.implied import FRAMEWORK, VERSION, dtype_note, naming_implied, release_notes
from simulator.config.engine import EngineConfig
from simulator.config.serving import LatencyConfig
from simulator.errors import ScenarioError


def tables(framework: str, version: str, hw: str = "a100-80gb"):
    """A stand-in for a measured latency model: what release_notes reads of one."""
    return SimpleNamespace(framework=framework, version=version, hardware_id=hw)


def test_no_engine_block_names_the_measured_tables_release():
    notes = release_notes(LatencyConfig(), None, tables("vllm", "0.14.0"))
    assert notes == {FRAMEWORK: "vllm, draftsim's default engine",
                     VERSION: "vllm 0.14.0, the release of a100-80gb's measured tables, cluster.latency"}


def test_latency_block_fields_are_named_where_they_imply_the_release():
    notes = release_notes(LatencyConfig(framework="trtllm", version="1.0.0"), None, tables("trtllm", "1.0.0"))
    assert notes == {FRAMEWORK: "trtllm, cluster.latency.framework",
                     VERSION: "trtllm 1.0.0, the measured tables' release cluster.latency.version names"}


def test_without_measured_tables_the_newest_modelled_release():
    from profiles.engine_time.frameworks import release_or_modelled
    notes = release_notes(LatencyConfig(source="roofline"), EngineConfig(framework="sglang"), object())
    assert notes == {VERSION: f"sglang {release_or_modelled('sglang', None)}, the newest sglang release modelled"}


def test_a_release_given_is_not_noted():
    for lat, engine in ((LatencyConfig(), EngineConfig(framework="vllm", version="0.14.0")),
                        (LatencyConfig(engine_version="0.14.0"), EngineConfig(framework="vllm"))):
        assert release_notes(lat, engine, tables("vllm", "0.14.0")) == {}


def test_dtype_note_says_checkpoint_or_default():
    assert dtype_note("bf16", get_model("llama-3-8b")) == "bf16, draftsim's default"
    fp8 = SimpleNamespace(checkpoint_dtype="fp8", name="mine")
    assert dtype_note("fp8", fp8) == "fp8, mine's config.json quantization_config"


def test_naming_implied_notes_only_the_implied_field_once():
    with pytest.raises(ScenarioError) as caught:
        with naming_implied({VERSION: "vllm 0.14.0, x"}):
            raise FieldError(VERSION, "refused")
    assert str(caught.value) == "cluster.engine.version (not given: vllm 0.14.0, x): refused"
    assert (caught.value.field, caught.value.message) == (VERSION, "refused")
    with pytest.raises(ScenarioError) as caught:   # (an outer helper keeps the inner note)
        with naming_implied({VERSION: "outer"}):
            with naming_implied({VERSION: "inner"}):
                raise ScenarioError(VERSION, "refused")
    assert str(caught.value) == "cluster.engine.version (not given: inner): refused"
    with pytest.raises(ScenarioError, match=r"^drafter.kind: refused$"):
        with naming_implied({VERSION: "x"}):
            raise ScenarioError("drafter.kind", "refused")


def test_lazy_notes_are_worked_out_only_for_their_fields():
    def never():
        raise AssertionError("worked out for a field it does not note")
    with pytest.raises(ScenarioError, match=r"^cluster.hardware: bad$"):
        with naming_implied(never):
            raise ScenarioError("cluster.hardware", "bad")
    with pytest.raises(ScenarioError, match=r"^cluster.dtype: bad$"):   # (given: no field to note)
        with naming_implied(never, ()):
            raise ScenarioError("cluster.dtype", "bad")


def test_a_given_field_whose_refusal_names_the_implied_release_says_where_it_came_from():
    notes = {VERSION: "vllm 0.14.0, the release of a100-80gb's measured tables, cluster.latency"}
    with pytest.raises(ScenarioError) as caught:
        with naming_implied(notes, release_named=True):
            raise ScenarioError("cluster.engine.async_scheduling", "vllm 0.14.0 runs it with EAGLE only")
    assert str(caught.value) == ("cluster.engine.async_scheduling: vllm 0.14.0 runs it with EAGLE only "
                                 "(cluster.engine.version not given: vllm 0.14.0, the release of a100-80gb's "
                                 "measured tables, cluster.latency)")
    for message in ("vllm 0.14.0rc1 runs it", "vllm 0.14.0.post1 runs it", "sglang 0.14.0 runs it"):
        with pytest.raises(ScenarioError, match=r"^drafter.kind: [^(]*$"):   # (another release: no note)
            with naming_implied(notes, release_named=True):
                raise ScenarioError("drafter.kind", message)
    with pytest.raises(ScenarioError, match=r"^drafter.kind: vllm 0.14.0 runs it$"):   # (not asked for)
        with naming_implied(notes):
            raise ScenarioError("drafter.kind", "vllm 0.14.0 runs it")
