"""The job's PNG report: reward distribution per route, and advantages when there are any."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def build_figure(
    rewards_by_route: Mapping[str, Sequence[float]],
    advantages: Sequence[float] | None = None,
) -> Figure:
    """One histogram panel per route (x: reward, y: samples), plus one of advantages."""
    from matplotlib.figure import Figure

    routes = sorted(rewards_by_route)
    panels = len(routes) + (advantages is not None)
    cols = min(3, max(panels, 1))
    rows = -(-max(panels, 1) // cols)
    fig = Figure(figsize=(4.2 * cols, 3.2 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    flat = list(axes.flat)
    for ax, route in zip(flat, routes, strict=False):
        values = rewards_by_route[route]
        low, high = min(values), max(values)
        pad = 0.05 * (high - low) or 0.5
        ax.hist(values, bins=20, range=(low - pad, high + pad), color="#3b75af")
        ax.set_title(f"route {route} (n={len(values)})")
        ax.set_xlabel("reward")
        ax.set_ylabel("samples")
    if advantages is not None:
        ax = flat[len(routes)]
        ax.hist(advantages, bins=30, color="#c44e52")
        ax.set_title(f"advantages (n={len(advantages)})")
        ax.set_xlabel("advantage")
        ax.set_ylabel("samples")
    for ax in flat[panels:]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def write_figure(
    path: Path,
    rewards_by_route: Mapping[str, Sequence[float]],
    advantages: Sequence[float] | None = None,
) -> None:
    """:func:`build_figure` saved as a PNG (no display needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    build_figure(rewards_by_route, advantages).savefig(path, dpi=100)
