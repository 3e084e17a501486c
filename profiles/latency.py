"""The latency-model interface: op → seconds. Implementations: roofline (profiles.roofline),
profile-backed interpolation (profiles.predictor) and measured GPU kernels (profiles.measured)."""
from __future__ import annotations

from typing import Protocol, Sequence

from models.ops import Op


class LatencyModel(Protocol):
    hardware_id: str

    def op_seconds(self, op: Op) -> float:
        """Wall seconds of one instance of `op` on one GPU (multiply by op.count for the step)."""
        ...

    def host_overhead_s(self, layers: int, tokens: float) -> float:
        """Host seconds of one forward pass that no op accounts for (0 where host work overlaps)."""
        ...

    def describe(self) -> dict:
        """Which source priced which op kinds (a run's `latency_source`)."""
        ...

    def usage_mark(self) -> object:
        """A mark of what `describe` has counted so far (for `usage_since`)."""
        ...

    def usage_since(self, mark: object) -> object:
        """What this copy counted after `mark` (picklable): a worker process's pricing, for `merge_usage`."""
        ...

    def merge_usage(self, usage: object) -> None:
        """Count another copy's `usage_since` as if this one had priced it (simulator.core.parallel)."""
        ...


class UncountedUsage:
    """The usage methods of a latency model whose `describe` counts nothing while a run goes."""

    def usage_mark(self) -> None:
        return None

    def usage_since(self, mark: object) -> None:
        return None

    def merge_usage(self, usage: object) -> None:
        return None


def ops_seconds(model: LatencyModel, ops: Sequence[Op]) -> float:
    """Σ count · seconds over a list of ops: the serial cost of a step."""
    return sum(op.count * model.op_seconds(op) for op in ops)


def power_limited_seconds(model: LatencyModel, ops: Sequence[Op]) -> float | None:
    """The seconds of a pass's dense ops run back to back at the board's power limit, where the latency
    model prices one (measured GPU kernels of a GPU whose limit was measured: `power_limit` and
    `sustained_seconds`, profiles.measured.power_limit); None elsewhere, where `ops_seconds` stands."""
    if getattr(model, "power_limit", None) is None:
        return None
    return model.sustained_seconds(ops)[0]
