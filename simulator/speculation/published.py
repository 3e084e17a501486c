"""The registry of published acceptance figures (profiles/data/acceptance_published/) and the rule that
turns one of them into per-position acceptance rates.

Each row of `acceptance.csv` is one published measurement of one (method, target, draft, dataset,
temperature) with the drafting shape it was measured with (`chain` of `depth` tokens, `tree` of `depth`
levels and `nodes` verified tokens, or `unspecified`), and either the mean tokens per verify step
(`tokens_per_step`, the bonus token included; "acceptance length" in EAGLE/vLLM/SGLang/TensorRT-LLM) or the
published per-position figures (`survival`: P(draft position i accepted), unconditional, as vLLM prints
"acceptance at token i"), or both. `sources.yaml` holds the publication of every `source` id.

Conversion rule (`per_position_alphas`), stated once and tested:

* per-position figures given: αᵢ = sᵢ / sᵢ₋₁ (s₀ = 1), i.e. the conditional acceptance of position i given
  that positions 1..i−1 were accepted — exact;
* otherwise geometric: the single α whose i.i.d. chain of the published depth d has the published tokens
  per step, (1 − α^(d+1))/(1 − α) = τ (`theory.chain.alpha_from_expected_tokens`), repeated d times.
  Approximation: real per-position acceptance falls with depth (EAGLE-3 paper Fig. 7, vLLM's per-position
  figures), so for a chain shorter than d the geometric α under-states the first positions and for a longer
  one it over-states the later ones; for a `tree` row α is the acceptance of a chain that emits as many
  tokens at the tree's depth (a "path-equivalent" α), which over-states a plain chain's acceptance (a
  tree verifies several candidates per level); n-gram/suffix acceptance is bimodal (TensorRT-LLM blog 7,
  Fig. 7) and a geometric law spreads it.
  A row without a depth (`unspecified` shape) cannot be converted unless the caller states the depth it
  assumes (`depth`), which is then named as an assumption.
* two rows of the same drafter (`decayed_alphas`): the first position's acceptance α₁ from one row that
  publishes it (e.g. DeepSeek-V3's report: second-token acceptance 85–90 %) and the acceptance length τ at
  depth d from another (e.g. the same MTP module reused for 7 positions in vLLM): αᵢ = α₁·rⁱ⁻¹ with r solved
  so that the chain has τ tokens per step at depth d. Approximation: a geometric decay between the two
  published figures (the MTP module is trained for the first position and reused for the later ones).
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from models.errors import FieldError

REGISTRY_DIR = Path(__file__).resolve().parents[2] / "profiles" / "data" / "acceptance_published"
SHAPES = ("chain", "tree", "unspecified")
KEYS = ("method", "target", "draft", "dataset", "temperature")
# Published acceptance lengths are printed to two decimals: 1 + Σ survival may differ by that rounding.
ROUNDING_TOKENS = 0.02


class RegistryError(FieldError):
    """A malformed registry file or a selection that names no single row (`field`: the file's field, or the
    scenario's acceptance field to change)."""


@dataclass(frozen=True)
class PublishedSource:
    id: str
    title: str
    url: str
    date: str
    setup: str


@dataclass(frozen=True)
class PublishedAcceptance:
    id: str
    method: str
    target: str
    draft: str
    dataset: str
    temperature: float | None      # None: the publication does not state it
    shape: str                      # chain | tree | unspecified
    depth: int | None               # chain length γ / tree depth
    nodes: int | None               # tree: tokens verified per request, root included
    tokens_per_step: float | None   # mean tokens per verify step, bonus token included
    survival: tuple[float, ...]     # P(position i accepted), i = 1..len
    engine: str
    hardware: str
    batch: int | None
    source: PublishedSource
    locator: str
    notes: str

    @property
    def mean_tokens(self) -> float:
        """Tokens per verify step: the published figure, else 1 + Σ survival."""
        return self.tokens_per_step if self.tokens_per_step is not None else 1.0 + sum(self.survival)


def _float(value: str, where: str) -> float | None:
    if value.strip() == "":
        return None
    try:
        out = float(value)
    except ValueError:
        raise RegistryError(where, f"expected a number, got {value!r}") from None
    if not math.isfinite(out):
        raise RegistryError(where, f"expected a finite number, got {value!r}")
    return out


def _int(value: str, where: str) -> int | None:
    number = _float(value, where)
    if number is None:
        return None
    if number != int(number) or number < 1:
        raise RegistryError(where, f"expected a positive integer, got {value!r}")
    return int(number)


def _row(raw: dict, sources: dict, where: str) -> PublishedAcceptance:
    field = lambda name: f"{where}: {name}"  # noqa: E731
    shape = raw["shape"].strip()
    if shape not in SHAPES:
        raise RegistryError(str(field('shape')), f"one of {', '.join(SHAPES)}, got {shape!r}")
    if raw["source"] not in sources:
        raise RegistryError(str(field('source')), f"{raw['source']!r} is not in sources.yaml")
    depth, nodes = _int(raw["depth"], field("depth")), _int(raw["nodes"], field("nodes"))
    if shape != "unspecified" and depth is None:
        raise RegistryError(str(field('depth')), f"a {shape} row needs its depth")
    temperature = _float(raw["temperature"], field("temperature"))
    if temperature is not None and temperature < 0:
        raise RegistryError(str(field('temperature')), f"must be >= 0, got {temperature}")
    tokens = _float(raw["tokens_per_step"], field("tokens_per_step"))
    survival = tuple(float(_float(s, field("survival"))) for s in raw["survival"].split(";") if s.strip())
    if tokens is None and not survival:
        raise RegistryError(where, "give tokens_per_step or survival (or both)")
    if survival:
        if any(not 0.0 < s <= 1.0 for s in survival) or any(b > a for a, b in zip(survival, survival[1:])):
            raise RegistryError(str(field('survival')), f"probabilities in (0, 1], non-increasing, got {survival}")
        if depth is not None and len(survival) > depth:
            raise RegistryError(str(field('survival')), f"{len(survival)} positions for depth {depth}")
        if tokens is not None and abs(1.0 + sum(survival) - tokens) > ROUNDING_TOKENS:
            raise RegistryError(str(field('tokens_per_step')), f"{tokens} disagrees with 1 + Σ survival = "
                                f"{1.0 + sum(survival):.3f}")
    if tokens is not None:
        top = (depth + 1) if depth is not None else math.inf
        if not 1.0 <= tokens <= top:
            raise RegistryError(str(field('tokens_per_step')), f"must be in [1, depth + 1 = {top}], got {tokens}")
    batch = _int(raw["batch"], field("batch"))
    return PublishedAcceptance(raw["id"], raw["method"], raw["target"], raw["draft"], raw["dataset"], temperature,
                               shape, depth, nodes, tokens, survival, raw["engine"], raw["hardware"], batch,
                               sources[raw["source"]], raw["locator"], raw["notes"])


@lru_cache(maxsize=4)
def load_registry(directory: Path = REGISTRY_DIR) -> tuple[PublishedAcceptance, ...]:
    """Every row of `directory`/acceptance.csv with its source (RegistryError naming the row and field)."""
    directory = Path(directory)
    raw_sources = yaml.safe_load((directory / "sources.yaml").read_text())
    if not isinstance(raw_sources, dict):
        raise RegistryError(str(directory / 'sources.yaml'), "expected a mapping of source ids")
    sources = {}
    for key, value in raw_sources.items():
        missing = {"title", "url", "date", "setup"} - set(value or {})
        if missing:
            raise RegistryError(str(directory / 'sources.yaml'), f"{key}: missing {', '.join(sorted(missing))}")
        sources[key] = PublishedSource(key, value["title"], value["url"], str(value["date"]), value["setup"])
    path = directory / "acceptance.csv"
    rows, seen = [], set()
    with path.open(newline="") as handle:
        for number, raw in enumerate(csv.DictReader(handle), start=2):
            where = f"{path.name} line {number} ({raw.get('id') or 'no id'})"
            if not raw.get("id"):
                raise RegistryError(where, "id is empty")
            if raw["id"] in seen:
                raise RegistryError(where, "id appears twice")
            seen.add(raw["id"])
            rows.append(_row(raw, sources, where))
    return tuple(rows)


def find_entry(entry_id: str, directory: Path = REGISTRY_DIR) -> PublishedAcceptance:
    for row in load_registry(directory):
        if row.id == entry_id:
            return row
    raise RegistryError("acceptance.entry", f"no published entry {entry_id!r} (`draftsim catalog acceptance` "
                        f"lists them)")


def select(directory: Path = REGISTRY_DIR, depth: int | None = None, **keys) -> PublishedAcceptance:
    """The one row matching `keys` (method, target, draft, dataset, temperature; unset keys match any).
    Among matches, rows with per-position figures come first, then chains whose depth equals `depth`, then
    the chain of nearest depth; a tie is an error that lists the candidates (give acceptance.entry)."""
    unknown = set(keys) - set(KEYS)
    if unknown:
        raise RegistryError("acceptance", f"unknown selection key(s) {', '.join(sorted(unknown))}")
    rows = [r for r in load_registry(directory)
            if all(value is None or getattr(r, key) == value for key, value in keys.items())]
    if not rows:
        given = ", ".join(f"{k}={v!r}" for k, v in keys.items() if v is not None)
        raise RegistryError("acceptance", f"no published entry matches {given}")

    def rank(row: PublishedAcceptance) -> tuple:
        gap = abs(row.depth - depth) if depth is not None and row.depth is not None else math.inf
        return (not row.survival, row.shape != "chain", gap)
    best = min(rank(r) for r in rows)
    top = [r for r in rows if rank(r) == best]
    if len(top) > 1:
        raise RegistryError("acceptance", f"{len(top)} published entries match equally well "
                            f"({', '.join(r.id for r in top[:6])}{' …' if len(top) > 6 else ''}); give acceptance.entry")
    return top[0]


def per_position_alphas(entry: PublishedAcceptance, depth: int | None = None) -> tuple[float, ...]:
    """Conditional acceptance of draft positions 1, 2, … of `entry` (module docstring's rule). `depth`: the
    depth to assume for a row whose shape is `unspecified` (ignored for rows that state theirs)."""
    if entry.survival:
        previous, alphas = 1.0, []
        for s in entry.survival:
            alphas.append(s / previous)
            previous = s
        return tuple(alphas)
    d = entry.depth if entry.depth is not None else depth
    if d is None:
        raise RegistryError("acceptance.depth", f"entry {entry.id!r} publishes no drafting depth; state the depth "
                            f"its acceptance length was measured at to convert it")
    if entry.tokens_per_step > d + 1:
        raise RegistryError("acceptance.depth", f"entry {entry.id!r} has {entry.tokens_per_step} tokens per step, "
                            f"more than depth {d} + 1 allows")
    from theory.chain import alpha_from_expected_tokens
    return (alpha_from_expected_tokens(entry.tokens_per_step, d),) * d


def decayed_alphas(first: PublishedAcceptance, length: PublishedAcceptance) -> tuple[float, ...]:
    """αᵢ = α₁·rⁱ⁻¹ (module docstring): α₁ from `first`'s first position, r from `length`'s tokens per step at
    its depth (RegistryError when the two figures are inconsistent: no r in [0, 1] fits)."""
    from scipy.optimize import brentq
    alpha1 = per_position_alphas(first)[0]
    if length.depth is None:
        raise RegistryError("acceptance.entry", f"{length.id!r} publishes no depth")
    d, tau = length.depth, length.mean_tokens

    def tokens(r: float) -> float:
        survival, total = 1.0, 1.0
        for i in range(d):
            survival *= alpha1 * r ** i
            total += survival
        return total
    if not tokens(0.0) <= tau <= tokens(1.0):
        raise RegistryError("acceptance.first_alpha_entry", f"α1 = {alpha1:.3f} cannot give {tau} tokens per step at "
                            f"depth {d} with a decay in [0, 1]")
    r = brentq(lambda x: tokens(x) - tau, 0.0, 1.0, xtol=1e-14)
    return tuple(alpha1 * r ** i for i in range(d))


def main() -> None:
    """List the registry: id, tokens per step, shape, source."""
    for row in load_registry():
        shape = row.shape if row.depth is None else f"{row.shape} {row.depth}"
        print(f"{row.id:70s} {row.mean_tokens:5.2f}  {shape:12s} {row.source.id}")


if __name__ == "__main__":
    main()
