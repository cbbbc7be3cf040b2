"""Tables and figures of several seeds, for the chapters on seeds and learning curves.

The rows are those of ``revformer.sweep``: ``seeds.csv`` (one row per group
and seed) and ``learning_curves.csv`` (one row per group, seed and recorded
step). Nothing here computes a result; it only lays out the rows: a table of
mean and min-max per group, a strip plot with one dot a seed, the learning
curves with one line a seed, a paired slope chart (one line a seed across
groups or controls) and a table of paired comparisons (``revformer.stats``).
Groups keep the colours of ``revformer.plots.GROUP_COLORS``.
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np

from .plots import GROUP_COLORS

# measure of seeds.csv -> (what the figure calls it, how a table writes one value)
MEASURES = {
    "val_loss": ("final validation loss", "{:.2e}"),
    "train_loss": ("final training loss", "{:.2e}"),
    "digit_accuracy": ("test digit accuracy", "{:.2%}"),
    "sequence_accuracy": ("test sequence accuracy", "{:.2%}"),
    "reversal_weight": ("layer-0 weight on reversal keys", "{:.3f}"),
    "next_answer_weight": ("layer-0 weight on next-answer key", "{:.3f}"),
    "first_perfect_step": ("first perfect step", "{:.0f}"),
}


def groups_of(rows) -> list[str]:
    """The groups of ``rows`` in the order they first appear."""
    return list(dict.fromkeys(r["group"] for r in rows))


def seeds_of(rows) -> list[int]:
    """The seeds of ``rows`` in the order they first appear (the build's seed first in a sweep)."""
    return list(dict.fromkeys(r["seed"] for r in rows))


def values(rows, measure: str, group: str) -> list:
    """``measure`` of ``group``, one value a seed, in the order of ``seeds_of(rows)``."""
    by_seed = {r["seed"]: r[measure] for r in rows if r["group"] == group}
    return [by_seed[s] for s in seeds_of(rows) if s in by_seed]


def spread_table(rows, measures) -> str:
    """A markdown table: one row a measure, one column a group, ``mean (min-max)`` in each cell.

    A measure with a missing value (a ``first_perfect_step`` never reached)
    shows how many seeds reached it instead of a mean.
    """
    groups = groups_of(rows)
    lines = ["| measure | " + " | ".join(f"`{g}`" for g in groups) + " |", "|---" * (len(groups) + 1) + "|"]
    for measure in measures:
        label, fmt = MEASURES[measure]
        cells = []
        for g in groups:
            v = values(rows, measure, g)
            known = [x for x in v if x is not None]
            if not known:
                cells.append(f"never (0 of {len(v)})")
                continue
            text = f"{fmt.format(np.mean(known))} ({fmt.format(min(known))} to {fmt.format(max(known))})"
            if len(known) < len(v):
                text = f"{len(known)} of {len(v)} seeds: " + text
            cells.append(text)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# measures recorded on a grid: the strip plot puts a tick on every grid value and no line between them
GRID_MEASURES = {"first_perfect_step": 10}


def plot_seed_strips(rows, measures, highlight_seed=None, log_measures=(), columns=3, grids=GRID_MEASURES):
    """One panel per measure: a dot per seed, a column per group, a bar at the group's mean.

    The dots of one group are spread sideways by seed (the same offset for a
    seed in every panel) so that equal values stay visible; the build's seed
    (``highlight_seed``) is drawn as a ring. A measure of ``grids`` (the
    first perfect step, recorded every 10 steps) gets a tick at each grid
    value it can take, from one below its smallest to one above its largest.
    """
    groups, seeds = groups_of(rows), seeds_of(rows)
    rows_n = -(-len(measures) // columns)
    fig, axes = plt.subplots(rows_n, columns, figsize=(3.6 * columns, 3.0 * rows_n), squeeze=False,
                             constrained_layout=True)
    offsets = np.linspace(-0.22, 0.22, len(seeds)) if len(seeds) > 1 else np.zeros(1)
    for ax, measure in zip(axes.flat, measures):
        for x, g in enumerate(groups):
            v = values(rows, measure, g)
            color = GROUP_COLORS.get(g, "black")
            for offset, seed, value in zip(offsets, seeds, v):
                if value is None:
                    continue
                ring = seed == highlight_seed
                ax.scatter(x + offset, value, s=36, zorder=3, facecolors="white" if ring else color,
                           edgecolors=color, linewidths=1.6)
            known = [value for value in v if value is not None]
            if known:
                ax.hlines(np.mean(known), x - 0.32, x + 0.32, color="black", lw=1.2, zorder=2)
        ax.set_xticks(range(len(groups)), groups, fontsize=8)
        ax.set_xlim(-0.6, len(groups) - 0.4)
        ax.set_title(MEASURES[measure][0], fontsize=9)
        if measure in log_measures:
            ax.set_yscale("log")
        if measure in grids:
            known = [x for g in groups for x in values(rows, measure, g) if x is not None]
            step = grids[measure]
            if known:
                ticks = np.arange(min(known) - step, max(known) + 2 * step, step)
                ax.set_yticks(ticks)
                ax.set_ylim(ticks[0] - step / 2, ticks[-1] + step / 2)
            ax.set_title(f"{MEASURES[measure][0]} (recorded every {step})", fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    for ax in list(axes.flat)[len(measures):]:
        ax.axis("off")
    return fig


def plot_learning_curves(curve_rows, measure="val_sequence_accuracy", until=None, highlight_seed=None,
                         ylabel="validation sequence accuracy"):
    """One panel per group, one line per seed: ``measure`` against the training step, up to ``until``."""
    groups, seeds = groups_of(curve_rows), seeds_of(curve_rows)
    fig, axes = plt.subplots(1, len(groups), figsize=(4.0 * len(groups), 3.3), sharey=True, squeeze=False,
                             constrained_layout=True)
    styles = ["-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1))]
    for ax, g in zip(axes[0], groups):
        for i, seed in enumerate(seeds):
            points = [(r["step"], r[measure]) for r in curve_rows if r["group"] == g and r["seed"] == seed
                      and (until is None or r["step"] <= until)]
            if not points:
                continue
            steps, ys = zip(*points)
            ax.plot(steps, ys, ls=styles[i % len(styles)], marker="o", ms=3, lw=2.2 if seed == highlight_seed else 1.3,
                    color=GROUP_COLORS.get(g, "black"), label=f"seed {seed}" + (" (this build)" if seed == highlight_seed
                                                                               else ""))
        ax.set_title(g, fontsize=10)
        ax.set_xlabel("training step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    axes[0, 0].set_ylabel(ylabel)
    return fig


def _draw_slopes(ax, columns, seeds, highlight_seed, percent):
    xs = np.arange(len(columns))
    palette = plt.get_cmap("tab10")
    for i, seed in enumerate(seeds):
        ys = [100 * v[i] if percent else v[i] for _, v in columns]
        thick = seed == highlight_seed
        ax.plot(xs, ys, color=palette(i % 10), lw=2.4 if thick else 1.3, zorder=2,
                label=f"seed {seed}" + (" (this build)" if thick else ""))
        for x, (label, _), y in zip(xs, columns, ys):
            group = label.split()[0].strip("`")
            ax.scatter(x, y, s=30, zorder=3, color=GROUP_COLORS.get(group, palette(i % 10)),
                       edgecolors="black", linewidths=0.5)
    ax.set_xticks(xs, [label for label, _ in columns], fontsize=8)
    ax.set_xlim(-0.4, len(columns) - 0.6)
    ax.grid(alpha=0.3, axis="y")


def plot_paired_slopes(columns, seeds, highlight_seed=None, ylabel="", percent=True, title=None):
    """A paired slope chart: one column per entry of ``columns``, one line per seed joining its values.

    ``columns``: ``[(label, values), ...]``, ``values`` one a seed in the order
    of ``seeds``. The runs of one seed share their initial weights, so a
    line's slope is that seed's paired difference. A label that names a
    group gets its colour at the dots; the build's seed is drawn thicker.
    """
    fig, ax = plt.subplots(figsize=(1.6 + 1.55 * len(columns), 3.6), constrained_layout=True)
    _draw_slopes(ax, columns, seeds, highlight_seed, percent)
    ax.set_ylabel(ylabel + (" (%)" if percent else ""))
    ax.legend(fontsize=7, loc="best")
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def plot_paired_slope_panels(panels, seeds, highlight_seed=None, ylabel="", percent=True):
    """Paired slope charts side by side, sharing the y axis: ``panels`` is ``[(title, columns), ...]``.

    Each panel joins only the runs it compares (``columns`` as in
    ``plot_paired_slopes``), so no line links runs that were never compared.
    """
    width = sum(1.0 + 1.55 * len(columns) for _, columns in panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(0.6 + width, 3.6), sharey=True,
                             constrained_layout=True, squeeze=False)
    for ax, (title, columns) in zip(axes[0], panels):
        _draw_slopes(ax, columns, seeds, highlight_seed, percent)
        ax.set_title(title, fontsize=10)
    axes[0][0].set_ylabel(ylabel + (" (%)" if percent else ""))
    axes[0][-1].legend(fontsize=7, loc="best")
    return fig


def _difference(value: float, kind: str) -> str:
    if kind == "ratio":
        return f"×{math.exp(value):.3f}"
    if kind == "pp":
        return f"{100 * value:+.1f}"
    if kind == "steps":
        return f"{value:+.0f}"
    return f"{value:+.3f}"


def paired_table(comparisons, seeds, seed_label="seed") -> str:
    """A markdown table of paired comparisons, one row each.

    ``comparisons``: ``[(label, Paired, kind), ...]``, ``kind`` how a
    difference reads: ``"ratio"`` (a log comparison: second / first),
    ``"pp"`` (percentage points), ``"steps"`` or ``"plain"``. Columns: the
    per-seed differences, the signs, the mean (for a ratio its geometric
    mean) with its 95% t-interval, and the exact sign-flip p-value.
    """
    head = ("| second vs first | " + " | ".join(f"{seed_label} {s}".strip() for s in seeds)
            + " | higher / lower | mean (95% t-interval) | sign-flip p |")
    lines = [head, "|---" * (len(seeds) + 4) + "|"]
    for label, p, kind in comparisons:
        if len(p.differences) != len(seeds):
            raise ValueError(f"{label}: {len(p.differences)} differences for {len(seeds)} seeds")
        cells = " | ".join(_difference(d, kind) for d in p.differences)
        mean = _difference(p.mean, kind)
        if p.low is not None:
            mean += f" ({_difference(p.low, kind)} to {_difference(p.high, kind)})"
        lines.append(f"| {label} | {cells} | {p.higher} / {p.lower} | {mean} | {p.p_value:.3g} |")
    return "\n".join(lines)


__all__ = ["GRID_MEASURES", "MEASURES", "groups_of", "paired_table", "plot_learning_curves",
           "plot_paired_slope_panels", "plot_paired_slopes", "plot_seed_strips", "seeds_of", "spread_table", "values"]
