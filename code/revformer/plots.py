"""The book's figures. One attention colormap everywhere, on a fixed scale.

Weights use ``ATTENTION_CMAP`` (cividis: perceptually uniform, readable in
grey and by colour-blind readers) from 0 to 1; differences use
``DIFFERENCE_CMAP`` from -1 to 1. Position axes show position and token
(``7 <SEP>``); layers and heads are counted from 0, as in the code.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from .analysis import ANSWER_QUERIES, reversal_key
from .data import PROMPT_LEN, position_labels

ATTENTION_CMAP = "cividis"
DIFFERENCE_CMAP = "RdBu_r"
GROUP_COLORS = {"four_heads": "#1b6ca8", "one_head": "#d95f02", "no_mask": "#7a7a7a"}


def _weights(weights) -> np.ndarray:
    weights = np.asarray(weights)
    if weights.ndim != 4 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must be [L,H,T,T], got {list(weights.shape)}")
    return weights


def heatmap(ax, matrix, row_labels, col_labels, vmin=0.0, vmax=1.0, cmap=ATTENTION_CMAP,
            fontsize=7):
    """Draw ``matrix`` [rows, cols] on ``ax`` with labelled axes; return the image."""
    image = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax, aspect="equal",
                      interpolation="nearest")
    ax.set_xticks(range(len(col_labels)), col_labels, rotation=90, fontsize=fontsize)
    ax.set_yticks(range(len(row_labels)), row_labels, fontsize=fontsize)
    ax.set_xlabel("key (position, token)", fontsize=fontsize + 1)
    ax.set_ylabel("query (position, token)", fontsize=fontsize + 1)
    return image


def _dividers(ax, color="white"):
    # Queries from 7 on are supervised (they predict the answer); keys from 8
    # on hold answer tokens as inputs. The lines are one apart: the shift.
    ax.axhline(PROMPT_LEN - 1.5, color=color, lw=1.2)
    ax.axvline(PROMPT_LEN - 0.5, color=color, lw=1.2, ls="--")


def plot_attention_grid(weights, tokens, title=None, dividers=True):
    """All layers (rows) and heads (columns) of ``[L,H,T,T]`` on one 0-1 scale."""
    w = _weights(weights)
    layers, heads = w.shape[:2]
    labels = position_labels(tokens)
    fig, axes = plt.subplots(layers, heads, figsize=(3.1 * heads + 0.8, 3.2 * layers + 0.6),
                             squeeze=False, constrained_layout=True)
    for layer in range(layers):
        for head in range(heads):
            ax = axes[layer, head]
            image = heatmap(ax, w[layer, head], labels, labels, fontsize=6)
            if dividers:
                _dividers(ax)
            ax.set_title(f"layer {layer}, head {head}", fontsize=9)
            if head:
                ax.set_ylabel("")
    fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight")
    if title:
        fig.suptitle(title)
    return fig


def plot_reversal_crop(weights, tokens, layer=0, title=None):
    """Answer queries 7-12 against prompt keys 1-6 for every head of ``layer``.

    The crop is cut from the full rows and not re-normalised: a row's cells
    may sum to less than 1. The boxes mark the reversal cells (key 13-q).
    """
    w = _weights(weights)[layer]
    heads = w.shape[0]
    labels = position_labels(tokens)
    keys = list(range(1, PROMPT_LEN - 1))
    rows = list(ANSWER_QUERIES)
    fig, axes = plt.subplots(1, heads, figsize=(3.0 * heads + 0.8, 3.3), squeeze=False,
                             constrained_layout=True)
    for head in range(heads):
        ax = axes[0, head]
        crop = w[head][np.ix_(rows, keys)]
        image = heatmap(ax, crop, [labels[q] for q in rows], [labels[k] for k in keys], fontsize=7)
        for i, q in enumerate(rows):
            j = keys.index(reversal_key(q))
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="#ff3b30", lw=1.8))
            for jj in range(len(keys)):
                value = crop[i, jj]
                ax.text(jj, i, f"{value:.2f}", ha="center", va="center", fontsize=5.5,
                        color="black" if value > 0.6 else "white")
        ax.set_title(f"layer {layer}, head {head}", fontsize=9)
        if head:
            ax.set_ylabel("")
    fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight (not re-normalised)")
    if title:
        fig.suptitle(title)
    return fig


def plot_losses(history, title="four_heads: whole-set loss"):
    """Train and validation loss, linear (left) and log (right) axes."""
    steps, train, val = (np.array(col) for col in zip(*history))
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), constrained_layout=True)
    for ax, scale in zip(axes, ("linear", "log")):
        ax.plot(steps, train, marker="o", ms=3, label="train")
        ax.plot(steps, val, marker="s", ms=3, ls="--", label="validation")
        ax.set_yscale(scale)
        ax.set_xlabel("training step")
        ax.set_ylabel(f"cross-entropy ({scale} axis)")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    return fig


def plot_mask_toggle(on, off, tokens, head=0):
    """Each layer's ``head``: mask on, mask off, and off minus on (-1 to 1)."""
    on, off = _weights(on), _weights(off)
    if on.shape != off.shape:
        raise ValueError(f"mask-on and mask-off weights differ in shape: {on.shape} vs {off.shape}")
    labels = position_labels(tokens)
    layers = on.shape[0]
    fig, axes = plt.subplots(layers, 3, figsize=(11, 3.5 * layers + 0.4), squeeze=False,
                             constrained_layout=True)
    for layer in range(layers):
        panels = ((on[layer, head], "mask on", 0, 1, ATTENTION_CMAP),
                  (off[layer, head], "mask off", 0, 1, ATTENTION_CMAP),
                  (off[layer, head] - on[layer, head], "off minus on", -1, 1, DIFFERENCE_CMAP))
        for col, (matrix, name, lo, hi, cmap) in enumerate(panels):
            ax = axes[layer, col]
            image = heatmap(ax, matrix, labels, labels, lo, hi, cmap, fontsize=6)
            ax.plot([-0.5, len(labels) - 0.5], [-0.5, len(labels) - 0.5], color="white" if col < 2 else "black",
                    lw=0.8, ls=":")
            ax.set_title(f"layer {layer}, head {head}: {name}", fontsize=9)
            if col:
                ax.set_ylabel("")
            if layer == 0 and col in (1, 2):
                fig.colorbar(image, ax=axes[:, col], shrink=0.7,
                             label="attention weight" if col == 1 else "change of weight")
    return fig


def plot_ablation(histories: dict, stats: list[dict], layer=0):
    """Left: validation loss of each group. Right: layer ``layer``'s mean weight
    on the reversal keys and on the next-answer keys, per group (sample 0)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), constrained_layout=True)
    for name, history in histories.items():
        steps, _, val = (np.array(c) for c in zip(*history))
        left.plot(steps, val, marker="o", ms=3, label=name, color=GROUP_COLORS.get(name))
    left.set_yscale("log")
    left.set_xlabel("training step")
    left.set_ylabel("validation cross-entropy (log axis)")
    left.grid(alpha=0.3)
    left.legend()
    names = list(histories)
    rev = [np.mean([r["reversal_weight"] for r in stats if r["group"] == n and r["layer"] == layer])
           for n in names]
    nxt = [np.mean([r["next_answer_weight"] for r in stats if r["group"] == n and r["layer"] == layer])
           for n in names]
    x = np.arange(len(names))
    bars1 = right.bar(x - 0.2, rev, 0.4, label="reversal key 13-q", color="#1b6ca8")
    bars2 = right.bar(x + 0.2, nxt, 0.4, label="next answer key q+1", color="#e8a33d", hatch="//")
    right.bar_label(bars1, fmt="%.3f", fontsize=8)
    right.bar_label(bars2, fmt="%.3f", fontsize=8)
    right.set_xticks(x, names)
    right.set_ylim(0, 1.1)
    right.set_ylabel(f"mean weight, layer {layer}, queries 7-12")
    right.legend(loc="upper right", fontsize=8)
    return fig


__all__ = ["ATTENTION_CMAP", "DIFFERENCE_CMAP", "heatmap", "plot_ablation", "plot_attention_grid",
           "plot_losses", "plot_mask_toggle", "plot_reversal_crop"]
