"""Refusals of a value the scenario never wrote: the engine release a pool runs is implied where `cluster.engine`
leaves it out (simulator.cluster.factory.engine_release: the framework from `cluster.latency.framework`, else
draftsim's vllm; the version from `cluster.latency.version`, else the measured tables' release, else the newest
release modelled), and a refusal that depends on it named the field as if the user had written it
("cluster.engine.version: vllm 0.14.0 raises at start-up for a draft model" for a scenario with no engine block,
the version being that of a100-80gb's measured tables). `release_notes` says, for each such field, the value and
what implied it (`dtype_note`: cluster.dtype, from a quantized config.json or draftsim's bf16; `context_note`:
cluster.max_model_len, the engine's derived limit); `naming_implied` re-raises a refusal of one of those fields
with that note, on the same one line: "cluster.engine.version (not given: vllm 0.14.0, the release of a100-80gb's
measured tables, cluster.latency): ..." (models.errors.FieldError `implied`)."""
from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Callable

from models.errors import FieldError
from simulator.errors import ScenarioError

FRAMEWORK, VERSION = "cluster.engine.framework", "cluster.engine.version"


def scenario_field(key: str) -> str:
    """The scenario's name of `cluster.latency`'s field `key` ("": the block)."""
    return f"cluster.latency.{key}" if key else "cluster.latency"


def release_notes(lat_cfg, engine_cfg, latency, name: Callable[[str], str | None] = scenario_field
                  ) -> dict[str, str]:
    """{field: "value, what implied it"} for cluster.engine.framework and cluster.engine.version where the scenario
    gives neither (nor `cluster.latency.engine_version`, the older spelling of the version); `lat_cfg`: the
    LatencyConfig, `engine_cfg`: the EngineConfig (None: none given), `latency`: the pool's latency model (its
    `framework`, `version` and `hardware_id` where it prices from measured tables); `name`: the name the caller's
    input gives a field of the latency block (`draftsim estimate`: its flags; None: none to name)."""
    from simulator.cluster.factory import engine_release
    from simulator.config.engine import EngineConfig, engine_settings
    engine_cfg = engine_cfg if engine_cfg is not None else EngineConfig()
    settings = engine_settings(engine_cfg, lat_cfg)
    framework = settings.framework
    notes = {}
    if engine_cfg.framework is None:
        notes[FRAMEWORK] = f"{framework}, " + (name("framework") if "framework" in lat_cfg.model_fields_set
                                               else "draftsim's default engine")
    if settings.version is not None:   # (cluster.engine.version or cluster.latency.engine_version: given)
        return notes
    try:
        _, version = engine_release(lat_cfg, engine_cfg, latency)
    except FieldError:   # (no engine-time entry: that refusal names cluster.latency.version)
        return notes
    if getattr(latency, "framework", None) == framework and version == getattr(latency, "version", None):
        hw = getattr(latency, "hardware_id", "this GPU")
        block = name("")
        source = f"the measured tables' release {name('version')} names" if lat_cfg.version is not None else \
            f"the release of {hw}'s measured tables" + (f", {block}" if block else "")
    else:
        source = f"the newest {framework} release modelled"
    notes[VERSION] = f"{framework} {version}, {source}"
    return notes


def dtype_note(dtype: str, target) -> str:
    """How `cluster.dtype` `dtype` was implied where the scenario leaves it out (models.quant_config.served_dtype):
    `target`'s (a ModelSpec) quantized checkpoint, else draftsim's default."""
    if target.checkpoint_dtype == dtype:
        return f"{dtype}, {target.name}'s config.json quantization_config"
    return f"{dtype}, draftsim's default"


def context_note(kind) -> str | None:
    """How the context limit of the pool `kind` (a ReplicaKind) was implied where cluster.max_model_len is left out
    (its `context_rule`: the engine's derived limit, simulator.core.context.context_and_rule); None where it was given."""
    return f"{kind.context_len} tokens, derived from {kind.target.name}'s {kind.context_rule}" if kind.context_rule \
        else None


def _release_of(note: str) -> str:
    """"vllm 0.14.0" of a cluster.engine.version note ("vllm 0.14.0, the release of ...")."""
    return note.partition(", ")[0]


def _names(message: str, release: str) -> bool:
    """`message` names the release `release` ("vllm 0.14.0"; not "vllm 0.14.0rc1" nor "vllm 0.14.0.post1")."""
    return re.search(rf"(?<![\w.]){re.escape(release)}(?![\w.]|\.\w)", message) is not None


@contextmanager
def naming_implied(notes, fields: tuple[str, ...] = (FRAMEWORK, VERSION), release_named: bool = False):
    """Re-raise a FieldError of a field in `notes` as a ScenarioError that says the value was not given and what
    implied it. `notes`: {field: note}, or a callable that returns one, called only when a refusal of one of
    `fields` comes (the release is resolved by then). `release_named`: a refusal of another field (one the user
    gave: drafter.kind, cluster.engine.async_scheduling, cluster.max_model_len) whose message names the implied
    release ("vllm 0.14.0 runs async scheduling with EAGLE/MTP speculation only") ends by saying where that release
    came from, "(cluster.engine.version not given: vllm 0.14.0, the release of ...)"."""
    try:
        yield
    except FieldError as exc:
        if exc.implied is not None or (exc.field not in (fields if callable(notes) else notes) and not release_named):
            raise
        try:
            found = notes() if callable(notes) else notes
        except FieldError:   # (the refusal came before the pool's hardware and release were resolved)
            raise exc from None
        if exc.field in found:
            raise ScenarioError(exc.field, exc.message, implied=found[exc.field]) from None
        release = found.get(VERSION)
        if release_named and release is not None and _names(exc.message, _release_of(release)):
            raise ScenarioError(exc.field, f"{exc.message} ({VERSION} not given: {release})") from None
        raise
