"""The job's PNG report: reward distribution per route, and advantages when there are any."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _histogram(ax: Axes, values: Sequence[float], bins: int, color: str, label: str) -> None:
    """A histogram of any finite values: magnitudes beyond 1e15 (up to 1.8e308, where the
    span of a range overflows) are drawn in units of a power of ten named on the axis."""
    top = max(abs(v) for v in values)
    scale = 10.0 ** math.floor(math.log10(top)) if top > 1e15 else 1.0
    scaled = [v / scale for v in values]
    low, high = min(scaled), max(scaled)
    pad = 0.05 * (high - low) or 0.5
    ax.hist(scaled, bins=bins, range=(low - pad, high + pad), color=color)
    ax.set_xlabel(label if scale == 1.0 else f"{label} (x {scale:.0e})")
    ax.set_ylabel("samples")


def build_figure(
    rewards_by_route: Mapping[str, Sequence[float]],
    advantages: Sequence[float] | None = None,
    reward_label: str = "reward",
) -> Figure:
    """One histogram panel per route (x: ``reward_label``, y: samples), plus one of advantages."""
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
        _histogram(ax, values, 20, "#3b75af", reward_label)
        ax.set_title(f"route {route} (n={len(values)})")
    if advantages is not None:
        ax = flat[len(routes)]
        if advantages:
            _histogram(ax, advantages, 30, "#c44e52", "advantage")
        ax.set_title(f"advantages (n={len(advantages)})")
    for ax in flat[panels:]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def write_figure(
    path: Path,
    rewards_by_route: Mapping[str, Sequence[float]],
    advantages: Sequence[float] | None = None,
    reward_label: str = "reward",
) -> None:
    """:func:`build_figure` saved as a PNG (no display needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    build_figure(rewards_by_route, advantages, reward_label).savefig(path, dpi=100)
