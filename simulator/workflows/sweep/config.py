"""Sweep definitions: a base scenario, fixed overrides, a grid and/or list of points, seeds.

A sweep YAML (validated here; unknown keys are errors)::

    name: qps_gamma
    scenario: ../quickstart.yaml          # base scenario, relative to this file
    set: [workload.num_requests=300]      # `--set`-style overrides applied to every point
    grid:                                 # cartesian product over any scenario keys
      workload.arrival.qps: [5, 10, 20]
      drafter.gamma: [0, 2, 4]
    points:                               # optional explicit list (each crossed with the grid)
      - {acceptance.alpha: 0.6}
      - {acceptance.alpha: 0.8}
    replications: 2                       # or seeds: [1, 2, 3]
    plot: {x: workload.arrival.qps, hue: drafter.gamma, metrics: [goodput_rps, ttft_p99_s]}

Point identity: a point's id is a hash of its *validated* scenario (pydantic dump, defaults included), so
two spellings of the same simulation share an id, and growing a grid keeps the ids of the points already
run. Two points of one simulation (two spellings, or values of `name` or `outputs`, which change what a run
writes: simulator.config.scenario.simulated) are refused. Seeds: ``seeds`` lists them; ``replications: n`` uses the base scenario's seed + 0..n-1; neither
means one run at the base scenario's seed.
"""
from __future__ import annotations

import datetime
import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationInfo, field_validator, model_validator

from simulator.errors import ScenarioError
from simulator.console.printable import printable
from simulator.console.progress import Progress
from simulator.config.base import Strict, field_error
from simulator.config.names import FolderName
from simulator.config.scenario import (apply_overrides, check_overrides_once, checked_key, how_alike, key_parts,
                                       parse_scenario, read_config, read_scenario_dict, simulated)

FIELD = "sweep"
SEED_KEY = "seed"
MAX_SWEEP_POINTS = 100_000   # points of one sweep (grid x points x seeds)
MAX_SEED = 2**63 - 1         # a seed the results (an int64 column) keep


class SweepPlotConfig(Strict):
    x: str | None = None
    hue: str | None = None
    metrics: list[str] = Field(default_factory=lambda: ["goodput_rps", "ttft_p99_s", "tpot_p50_s",
                                                        "output_tokens_per_s"], min_length=1)

    @field_validator("x", "hue")
    @classmethod
    def _as_swept(cls, key: str | None) -> str | None:
        """Read as the swept keys are (check_key), so that 'a.b ' names the swept a.b."""
        return None if key is None else ".".join(key_parts(key))

    @field_validator("metrics")
    @classmethod
    def _each_once(cls, metrics: list[str]) -> list[str]:
        twice = next((m for i, m in enumerate(metrics) if m in metrics[:i]), None)
        if twice is not None:   # (its plot was drawn once, over the same file)
            raise ValueError(f"{twice!r} is listed twice; give each metric once")
        return metrics


class SweepSpace(Strict):
    """What a sweep varies: `grid`, `points` and `seeds`, as a sweep file gives them and as
    `simulator.sweep(base, grid, points=..., seeds=...)` takes them (checked alike)."""

    grid: dict[str, list[Any]] = Field(default_factory=dict)
    points: list[dict[str, Any]] = Field(default_factory=list)
    seeds: list[int] | None = None

    @field_validator("grid", "points", mode="before")
    @classmethod
    def _keys(cls, value: Any, info: ValidationInfo) -> Any:
        """Each key checked and written as an override reads it (check_key), before the checks that compare
        keys: 'workload.arrival.qps ' set the field workload.arrival.qps does, so beside it one value was
        dropped without a word (and the rows labelled with the other), and beside `set:
        [workload.arrival.qps=3]` the fixed value was. A key that is no text (`1: [2]` in YAML, a number or a
        tuple from Python) is named as such; pydantic said 'grid.1: [1] is not allowed; expected [key]'."""
        if info.field_name == "grid" and isinstance(value, dict):
            return _normal_keys(value, "")
        if info.field_name == "points" and isinstance(value, list):
            return [_normal_keys(point, " in one point") if isinstance(point, dict) else point for point in value]
        return value

    @field_validator("grid")
    @classmethod
    def _grid_values(cls, grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for key, values in grid.items():
            if not values:
                raise ValueError(f"{key} must list at least one value")
            for value in values:
                _check_plain(key, value)
        return grid

    @field_validator("points")
    @classmethod
    def _point_keys(cls, points: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for point in points:
            if not point:
                raise ValueError("each entry of points must set at least one key")
            for key in point:
                _check_plain(key, point[key])
        return points

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, seeds: list[int] | None) -> list[int] | None:
        if seeds is not None:
            if not seeds or any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
                raise ValueError("seeds must be a non-empty list of distinct integers >= 0")
        return seeds

    @model_validator(mode="after")
    def _keys_in_one_place(self) -> "SweepSpace":
        overlap = set(self.grid) & {k for p in self.points for k in p}
        if overlap:   # (named: the Python API's sweep said ': keys both ...', a field of no name)
            raise field_error("points", f"keys both in grid and points: {', '.join(sorted(overlap))}")
        for point in self.points or [{}]:   # the keys set together in one point, in the order they are applied
            together = [*self.grid, *point]
            for i, outer in enumerate(together):
                for j, inner in enumerate(together):
                    if inner.startswith(outer + "."):
                        _check_nested(outer, inner, j < i, self.grid.get(outer, [point.get(outer)]),
                                      "grid" if (outer if j < i else inner) in self.grid else "points")
        return self

    @property
    def param_keys(self) -> list[str]:
        """The swept keys in a stable order: grid keys, then point keys in first-seen order."""
        keys = list(self.grid)
        for point in self.points:
            keys += [k for k in point if k not in keys]
        return keys


class SweepConfig(SweepSpace):
    name: FolderName = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    scenario: str
    set: list[str] = Field(default_factory=list)
    replications: int | None = Field(default=None, ge=1, le=10_000)
    plot: SweepPlotConfig = SweepPlotConfig()

    @model_validator(mode="after")
    def _one_seed_rule(self) -> "SweepConfig":
        if self.seeds is not None and self.replications is not None:
            raise ValueError("give either seeds or replications, not both")
        return self

    @model_validator(mode="after")
    def _plot_axes_are_swept(self) -> "SweepConfig":
        keys = self.param_keys
        if self.plot.x is not None and self.plot.x not in keys:
            raise ValueError(f"plot.x {self.plot.x!r} is not a swept key; swept: {', '.join(keys) or 'none'}")
        if self.plot.hue is not None and (self.plot.hue not in keys or self.plot.hue == self.plot_x):
            raise ValueError(f"plot.hue {self.plot.hue!r} is not a swept key other than x ({self.plot_x}); "
                             f"swept: {', '.join(keys) or 'none'}")
        return self

    def values_of(self, key: str) -> list[Any]:
        return list(self.grid.get(key, [])) + [p[key] for p in self.points if key in p]

    @property
    def plot_x(self) -> str:
        """The plots' x axis: `plot.x`, else the first swept key whose values are all numbers, else the
        first swept key, else the seed."""
        if self.plot.x is not None:
            return self.plot.x
        numeric = [k for k in self.param_keys
                   if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in self.values_of(k))]
        return (numeric or self.param_keys or [SEED_KEY])[0]


def _check_nested(outer: str, inner: str, inner_first: bool, outer_values: list, where: str) -> None:
    """A swept key inside another swept key of the same point (workload.arrival.qps, workload.arrival) is applied
    over it: refuse it where a value is dropped without a word — the inner key applied first (the mapping
    replaces it), or a value of the outer mapping that holds the inner key (the inner key's value replaces it:
    grid {workload.arrival: [{process: poisson, qps: 4}], workload.arrival.qps: [8]} ran qps 8 only)."""
    if inner_first:
        raise field_error(where, f"{outer}, applied after {inner} (the grid's keys first, then a point's, each "
                                 f"in the order written), replaces it; give {outer} before {inner}")
    rest = inner[len(outer) + 1:].split(".")
    for value in outer_values:
        for part in rest:
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            raise field_error(where, f"{outer} gives {inner.removeprefix(outer + '.')} in its values and {inner} "
                                     f"replaces it; give it in one of the two")


def check_set_not_swept(overrides: list[str], space: SweepSpace, field: str) -> None:
    """ScenarioError on `field` when a fixed override (a sweep's `set:`, the API's `overrides`) sets a swept key
    (of `grid` or `points`) or a key inside one: every point's value replaced it, so `set:
    [workload.arrival.qps=3]` beside a grid of workload.arrival.qps was dropped without a word. (Setting a
    mapping whose keys the grid varies is fine: the grid's keys apply over it.)"""
    from simulator.config.scenario import override_key
    swept = space.param_keys + ([SEED_KEY] if space.seeds is not None else [])
    for text in overrides:
        path = override_key(text)
        for key in swept:
            parts = key.split(".")
            if path[:len(parts)] == parts:
                raise ScenarioError(field, f"{'.'.join(path)} is also swept ({key if key != SEED_KEY else 'seeds'}): "
                                           f"each point's {key} replaces it; set it in one place")


_PLAIN = (str, int, float, bool, type(None), bytes, datetime.date)   # (what YAML reads: `2024-01-01` a date)


def _check_plain(key: str, value: Any) -> None:
    """ValueError when a swept `value` is not one a scenario file holds (text, a number, a boolean, null, a list
    or a mapping of them): a Python object of another type in the API's grid raised yaml's RepresenterError from
    inside the sweep. (A path object is its text by then, as a scenario dict takes one for a name or a path:
    simulator.workflows.sweep.main._plain.)"""
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_plain(key, item)
    elif isinstance(value, dict):
        for name, item in value.items():
            _check_plain(key, name)
            _check_plain(key, item)
    elif not isinstance(value, _PLAIN):
        raise ValueError(f"{key}: {value!r} is not a value a scenario file holds (text, a number, a boolean, null, "
                         f"a list or a mapping); got a {type(value).__name__}")


def check_key(key: Any) -> str:
    """A swept key as its point's override reads it (simulator.config.scenario.key_parts: 'a.b ' is a.b), or
    ValueError. Refused: no text; what checked_key refuses (an empty part, '=', a control character)."""
    if not isinstance(key, str):
        raise ValueError(f"key {key!r} is not text; expected dotted scenario keys like drafter.gamma")
    normal = ".".join(checked_key(key))
    if normal == SEED_KEY:
        raise ValueError("sweep seeds with `seeds:` or `replications:`, not as a grid key")
    return normal


def _normal_keys(mapping: dict, where: str) -> dict:
    """`mapping` with its keys checked and written as check_key does; ValueError naming a key given twice."""
    out: dict[str, Any] = {}
    spelt: dict[str, Any] = {}
    for key, value in mapping.items():
        normal = check_key(key)
        if normal in out:
            raise ValueError(f"{normal} is given twice{where} ({spelt[normal]!r} and {key!r}); give each key once")
        out[normal], spelt[normal] = value, key
    return out


@dataclass(frozen=True)
class SweepPoint:
    index: int
    params: dict[str, Any]      # swept key -> value (as written in the sweep file)
    seed: int
    point_id: str
    scenario: dict               # the validated scenario (pydantic JSON dump)


class _FlowDumper(yaml.SafeDumper):
    """Safe YAML that writes a text holding a line break (or another character console.printable escapes)
    double-quoted, escaped, on one line: the single-quoted style YAML picks for it folds the text over lines
    ('x<newline><newline>  y'), which a point's label showed as such. A text the scenario reader would read
    as a number when plain (models.files.reads_as_text) is quoted: PyYAML's YAML 1.1 resolver left `1e3`
    plain, and a grid of names ['1e3'] ran points named 1000.0 (refused: 'name: not 1000.0')."""


def _text_scalar(dumper: _FlowDumper, text: str):
    from models.files import reads_as_text
    style = '"' if printable(text) != text else None if reads_as_text(text) else "'"
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_FlowDumper.add_representer(str, _text_scalar)


def _flow_text(value: Any) -> str:
    """`value` as a YAML flow scalar/collection (what apply_overrides parses back)."""
    text = yaml.dump(value, Dumper=_FlowDumper, default_flow_style=True, width=10_000).strip()
    if text.endswith("\n...") or text.endswith("..."):
        text = text.rsplit("\n", 1)[0].strip()
    return text


def _override_text(key: str, value: Any) -> str:
    """`key=value` as apply_overrides takes it."""
    return f"{key}={_flow_text(value)}"


def value_text(value: Any) -> str:
    """A swept value on one line, for labels and messages: as its point's override writes it (YAML flow: x,
    '1', "a\\nb", null, [1, 2], {a: 1}), what is left of control characters escaped (console.printable: the
    line breaks of a long list or of bytes' `!!binary |` block). (A value over several lines cut the error line,
    which keeps its first: `sweep point (name='x` was all it said.)"""
    return printable(_flow_text(value))


def point_label(params: dict[str, Any]) -> str:
    """`key=value, ...` of a point's keys (and seed) on one line (value_text)."""
    return ", ".join(f"{printable(key)}={value_text(value)}" for key, value in params.items())


def scenario_id(scenario_json: dict) -> str:
    """16 hex digits identifying a validated scenario."""
    blob = json.dumps(scenario_json, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def load_sweep(path: str | Path) -> tuple[SweepConfig, Path]:
    """Read and validate a sweep file; returns the spec and the sweep file's folder."""
    return read_config(path, SweepConfig, FIELD), Path(path).resolve().parent


def expand_points(spec: SweepConfig, folder: Path, progress: bool = False) -> tuple[list[SweepPoint], Path]:
    """All points of the sweep (grid × points × seeds), validated (`progress`: on stderr, under the sweep's
    name); returns them and the scenario folder.

    A point whose overrides do not validate is a mistake in the sweep file: ScenarioError naming the
    point. Errors that appear only when the scenario is built (e.g. the model does not fit) are recorded
    per point by the runner instead.
    """
    from simulator.core.lengths import resolve_path
    # (relative to the sweep's folder, `~` expanded as every path a scenario file holds: `scenario: ~/a.yaml`
    # was read as <sweep's folder>/~/a.yaml, 'file not found')
    base_path = resolve_path(Path(spec.scenario), folder, f"{FIELD}.scenario")
    check_overrides_once(spec.set, f"{FIELD}.set")
    check_set_not_swept(spec.set, spec, f"{FIELD}.set")
    try:
        base = read_scenario_dict(base_path)
    except ScenarioError as exc:
        raise ScenarioError(f"{FIELD}.scenario", str(exc)) from None
    try:   # (`set: [seed.x=1]` was named sweep.scenario, the file it applies to)
        base = apply_overrides(base, spec.set)
    except ScenarioError as exc:
        raise ScenarioError(f"{FIELD}.set", exc.message if exc.field == "--set" else str(exc)) from None
    base.setdefault("name", spec.name)
    return (expand(base, spec.grid, spec.points, spec.seeds, spec.replications, progress=progress, label=spec.name),
            base_path.resolve().parent)


def expand(base: dict, grid: dict[str, list], points: list[dict] | None = None, seeds: list[int] | None = None,
           replications: int | None = None, field: str = FIELD, *, progress: bool = False,
           label: str | None = None) -> list[SweepPoint]:
    """The points of a raw base scenario crossed with `grid` (key path → values), the listed `points`
    (each a dict of key path → value) and the seeds (`seeds`, else the base seed + 0 .. replications − 1,
    else the base seed), each validated (ScenarioError naming the point). `field`: where the errors point, the
    sweep file's `sweep`, or "" for the Python API's arguments (grid, points, seeds). `progress`: the
    validation's progress on stderr under `label` (default: the base's name), as the points' run shows its own:
    at a few ms a point, the 100,000 points a sweep may have took minutes without a word."""
    prefix = f"{field}." if field else ""
    base_seed = int(base.get(SEED_KEY, 0)) if isinstance(base.get(SEED_KEY, 0), int) else 0
    given = seeds
    if seeds is not None:
        seeds = list(seeds)
    elif replications is not None:
        seeds = [base_seed + i for i in range(replications)]
    else:
        seeds = [base_seed]
    if seeds and max(seeds) > MAX_SEED:   # (the store's seed column is int64: pyarrow's OverflowError, a half-made store)
        where = "seeds" if given is not None else "replications" if replications is not None else "scenario: seed"
        raise ScenarioError(f"{prefix}{where}", f"seed {max(seeds)} is beyond {MAX_SEED:,} (2^63 - 1), the "
                                                "largest a sweep's results keep")
    listed = points or [{}]
    count = math.prod(len(values) for values in grid.values()) * len(listed) * len(seeds)
    if count > MAX_SWEEP_POINTS:   # (each point is validated here: 10^6 of them would take an hour first)
        sizes = " x ".join([*(f"{len(v):,} {k}" for k, v in grid.items()), *([f"{len(points):,} points"] if points
                            else []), f"{len(seeds):,} seeds"])
        raise ScenarioError(field or "grid", f"{count:,} points ({sizes}); at most {MAX_SWEEP_POINTS:,} in one sweep: "
                                   "split it into several")
    grid_keys = list(grid)
    combos = [dict(zip(grid_keys, values)) for values in itertools.product(*(grid[k] for k in grid_keys))]
    found, seen = [], {}
    with Progress(f"{label or base.get('name')}: validating", total=count, unit="pt", quiet=not progress) as bar:
        for combo, extra in itertools.product(combos, listed):
            params = {**combo, **extra}
            for seed in seeds:
                found.append(_validated_point(base, params, seed, len(found), seen, field))
                bar.update()
    return found


def _validated_point(base: dict, params: dict[str, Any], seed: int, index: int, seen: dict[str, tuple], field: str
                     ) -> SweepPoint:
    """The point of `params` and `seed` over `base`, validated; ScenarioError naming it when it does not validate
    or is the simulation of a point in `seen` (the id of its `simulated` scenario -> its params and seed, and its
    scenario; it is added there). Points that differ only in what a run writes (`name`, `outputs`: grid
    {outputs.plots: [true, false]}) ran twice, exit 0, where compare refused them."""
    named = {**params, SEED_KEY: seed}
    overrides = [_override_text(k, v) for k, v in named.items()]
    try:
        scenario = parse_scenario(apply_overrides(base, overrides)).model_dump(mode="json")
    except ScenarioError as exc:
        raise ScenarioError(f"{field} point ({point_label(named)})".strip(), str(exc)) from None
    same = scenario_id(simulated(scenario))
    if same in seen:
        earlier, earlier_scenario = seen[same]
        raise ScenarioError(field or "grid", f"points ({point_label(earlier)}) and ({point_label(named)}) "
                                             f"{how_alike(earlier_scenario, scenario)}")
    seen[same] = named, scenario
    return SweepPoint(index, params, seed, scenario_id(scenario), scenario)
