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
            fontsize=8):
    """Draw ``matrix`` [rows, cols] on ``ax`` with labelled axes; return the image."""
    image = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax, aspect="equal",
                      interpolation="nearest")
    ax.set_xticks(range(len(col_labels)), col_labels, rotation=90, fontsize=fontsize)
    ax.set_yticks(range(len(row_labels)), row_labels, fontsize=fontsize)
    ax.set_xlabel("key (position, token)", fontsize=fontsize + 1)
    ax.set_ylabel("query (position, token)", fontsize=fontsize + 1)
    return image


def _inner_labels_off(ax, left=False, bottom=False):
    """Hide ``ax``'s tick labels and axis label on the sides shared with a neighbour."""
    if left:
        ax.tick_params(labelleft=False)
        ax.set_ylabel("")
    if bottom:
        ax.tick_params(labelbottom=False)
        ax.set_xlabel("")


def _dividers(ax, color="white"):
    # Queries from 7 on are supervised (they predict the answer); keys from 8
    # on hold answer tokens as inputs. The lines are one apart: the shift.
    ax.axhline(PROMPT_LEN - 1.5, color=color, lw=1.2)
    ax.axvline(PROMPT_LEN - 0.5, color=color, lw=1.2, ls="--")


def plot_attention_grid(weights, tokens, title=None, dividers=True):
    """All layers (rows) and heads (columns) of ``[L,H,T,T]`` on one 0-1 scale.

    Two rows of four fit the page's column at 1440 px and a 900 px screen, with
    8-point labels (the look review: four rows of two ran taller than the screen);
    the axes are labelled once, on the outer panels, and the colour bar lies below.
    """
    w = _weights(weights)
    layers, heads = w.shape[:2]
    labels = position_labels(tokens)
    fig, axes = plt.subplots(layers, heads, figsize=(1.9 * heads, 2.25 * layers + 0.8),
                             squeeze=False, constrained_layout=True)
    for layer in range(layers):
        for head in range(heads):
            ax = axes[layer, head]
            image = heatmap(ax, w[layer, head], labels, labels)
            if dividers:
                _dividers(ax)
            ax.set_title(f"layer {layer}, head {head}", fontsize=9)
            _inner_labels_off(ax, left=head > 0, bottom=layer < layers - 1)
    fig.colorbar(image, ax=axes, location="bottom", shrink=0.45, aspect=40, pad=0.02,
                 label="attention weight")
    if title:
        fig.suptitle(title, fontsize=10)
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
    # two panels a row: at the column's width a cell still holds its number
    cols = min(heads, 2)
    grid = -(-heads // cols)
    fig, axes = plt.subplots(grid, cols, figsize=(2.4 * cols + 1.5, 2.45 * grid + 0.9),
                             squeeze=False, constrained_layout=True)
    for head in range(heads):
        ax = axes[head // cols, head % cols]
        crop = w[head][np.ix_(rows, keys)]
        image = heatmap(ax, crop, [labels[q] for q in rows], [labels[k] for k in keys])
        ax.tick_params(axis="x", labelrotation=0)
        for i, q in enumerate(rows):
            j = keys.index(reversal_key(q))
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="#ff3b30", lw=1.8))
            for jj in range(len(keys)):
                value = crop[i, jj]
                ax.text(jj, i, f"{value:.2f}", ha="center", va="center", fontsize=8,
                        color="black" if value > 0.6 else "white")
        ax.set_title(f"layer {layer}, head {head}", fontsize=10)
        _inner_labels_off(ax, left=head % cols > 0, bottom=head + cols < heads)
    for ax in axes.flat[heads:]:
        ax.set_visible(False)
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
    fig, axes = plt.subplots(layers, 3, figsize=(7.6, 2.75 * layers + 1.5), squeeze=False,
                             constrained_layout=True)
    for layer in range(layers):
        panels = ((on[layer, head], "mask on", 0, 1, ATTENTION_CMAP),
                  (off[layer, head], "mask off", 0, 1, ATTENTION_CMAP),
                  (off[layer, head] - on[layer, head], "off minus on", -1, 1, DIFFERENCE_CMAP))
        for col, (matrix, name, lo, hi, cmap) in enumerate(panels):
            ax = axes[layer, col]
            image = heatmap(ax, matrix, labels, labels, lo, hi, cmap)
            ax.plot([-0.5, len(labels) - 0.5], [-0.5, len(labels) - 0.5], color="white" if col < 2 else "black",
                    lw=0.8, ls=":")
            ax.set_title(f"layer {layer}, head {head}: {name}", fontsize=9)
            _inner_labels_off(ax, left=col > 0, bottom=layer < layers - 1)
            # the scales go below the panels, so that three fit across the column
            if layer == 0 and col in (1, 2):
                fig.colorbar(image, ax=axes[:, :2] if col == 1 else axes[:, 2], location="bottom",
                             shrink=0.8, aspect=25 if col == 1 else 12,
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


# The page's colours in the theme's dark mode (the PyData theme's text and background).
DARK_TEXT, DARK_LINE, DARK_BACKGROUND = "#ced6dd", "#9aa5b1", "#14181e"


def _rgba(colour):
    """``colour`` as an (r, g, b, a) tuple, or None where it is no colour ("none", "auto", None)."""
    from matplotlib.colors import to_rgba

    if colour is None or (isinstance(colour, str) and colour in ("none", "auto")):
        return None
    try:
        return to_rgba(colour)
    except (TypeError, ValueError):
        return None


def _grey(colour, darker_than: float) -> bool:
    """True for a grey or black (no hue) darker than ``darker_than`` (0 black, 1 white)."""
    rgba = _rgba(colour)
    return (rgba is not None and rgba[3] > 0 and max(rgba[:3]) - min(rgba[:3]) < 0.12
            and max(rgba[:3]) < darker_than)


def _light(colour) -> bool:
    """True for a white or near-white colour (a background)."""
    rgba = _rgba(colour)
    return rgba is not None and rgba[3] > 0 and min(rgba[:3]) > 0.85


def _pale(colour) -> bool:
    """True for a pale colour that is not near-white (a tinted box, which keeps its tint)."""
    rgba = _rgba(colour)
    return rgba is not None and rgba[3] > 0 and 0.6 < min(rgba[:3]) <= 0.85


def contrast(colour, background) -> float:
    """WCAG's contrast ratio of two colours, 1 to 21 (4.5 is the least for text)."""
    def luminance(c):
        return sum(w * (v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4)
                   for w, v in zip((0.2126, 0.7152, 0.0722), _rgba(c)[:3]))

    high, low = sorted((luminance(colour), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _dim_hue(colour) -> bool:
    """True for a colour with a hue that a dark page would read below 4.5:1 (a blue label)."""
    rgba = _rgba(colour)
    return (rgba is not None and rgba[3] > 0 and not _grey(colour, 1.0)
            and contrast(rgba, DARK_BACKGROUND) < 4.5)


def _lightened(colour):
    """``colour`` mixed with white, in steps of 5 %, until a dark page reads it at 4.5:1: the same hue."""
    from matplotlib.colors import to_rgba

    r, g, b, a = to_rgba(colour)
    for step in range(21):
        by = step / 20
        mixed = (r + (1 - r) * by, g + (1 - g) * by, b + (1 - b) * by)
        if contrast(mixed, DARK_BACKGROUND) >= 4.5:
            break
    return (*mixed, a)


def _dark_maps() -> dict:
    """The dark page's twins of the colormaps that are white at zero (a white slab on a dark page): the
    middle, or the low end, is the page's surface, and the ends are the light map's colours, made bright."""
    from matplotlib.colors import LinearSegmentedColormap

    surface = "#262b33"
    diverging = LinearSegmentedColormap.from_list(
        "RdBu_r_dark", ["#92c5de", "#2166ac", surface, "#b2182b", "#f4a582"])
    reds = LinearSegmentedColormap.from_list("Reds_dark", [surface, "#a50f15", "#fc9272"])
    blues = LinearSegmentedColormap.from_list("Blues_dark", [surface, "#08519c", "#9ecae1"])
    return {"RdBu_r": diverging, "RdBu": diverging.reversed(), "Reds": reds, "Blues": blues}


def _cell_value(image, x: float, y: float):
    """The value of ``image`` (an ``imshow``) under the data point (x, y), or None outside it."""
    import numpy as np

    values = np.asarray(image.get_array())
    rows, cols = values.shape[:2]
    left, right, bottom, top = image.get_extent()
    col = int(np.floor((x - left) / (right - left) * cols))
    if image.origin == "upper":
        row = int(np.floor((y - top) / (bottom - top) * rows))
    else:
        row = int(np.floor((y - bottom) / (top - bottom) * rows))
    if not (0 <= row < rows and 0 <= col < cols):
        return None
    value = values[row, col]
    return None if np.ma.is_masked(value) else float(value)


class dark_chrome:
    """``fig`` drawn for a dark page while inside: the same data, its frame recoloured.

    A figure's chrome (white backgrounds and boxes, black and grey texts, axes, ticks,
    lines and arrows) becomes transparent, dark or light; dark coloured texts are
    lightened; every colour that carries data (a colormap, a group's colour) stays,
    except a colormap that is white at zero (``RdBu_r``, ``Reds``), which takes its dark
    twin (``_dark_maps``), and the black or white number written on one of its cells,
    which is chosen again for the cell's new colour. Other texts written on an image or
    a mesh, and texts on a tinted box (which keeps its tint), stay as they are.
    Everything is put back on exit.
    """

    def __init__(self, fig):
        self.fig = fig

    def _set(self, getter, setter, new):
        self.saved.append((setter, getter()))
        setter(new)

    def __enter__(self):
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
        from matplotlib.text import Text

        self.saved = []
        fig = self.fig
        renderer = fig.canvas.get_renderer()
        over_images = {id(t) for ax in fig.axes if ax.images or any(hasattr(c, "get_array") and
                       c.get_array() is not None for c in ax.collections) for t in ax.texts}
        tinted = [p for ax in fig.axes for p in ax.patches if _pale(p.get_facecolor())]

        def on_tint(text):  # the text's centre lies on a tinted box of its axes
            if text.axes is None or not any(p.axes is text.axes for p in tinted):
                return False
            box = text.get_window_extent(renderer)
            centre = ((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2)
            return any(p.axes is text.axes and p.contains_point(centre) for p in tinted)

        dark_maps = _dark_maps()
        for ax in fig.axes:
            for image in ax.images:
                twin = dark_maps.get(image.get_cmap().name)
                if twin is None:
                    continue
                for text in ax.texts:  # a cell's number, black or white for its cell: again for the new colour
                    if text.get_transform() != ax.transData or not (_grey(text.get_color(), 0.3)
                                                                   or _light(text.get_color())):
                        continue
                    value = _cell_value(image, *text.get_position())
                    if value is not None:
                        r, g, b, _ = twin(image.norm(value))
                        self._set(text.get_color, text.set_color,
                                  "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.45 else "white")
                self._set(image.get_cmap, image.set_cmap, twin)
        backgrounds = {id(fig.patch)} | {id(ax.patch) for ax in fig.axes}
        if _light(fig.get_facecolor()):
            self._set(fig.get_facecolor, fig.set_facecolor, (0, 0, 0, 0))
        for ax in fig.axes:
            if _light(ax.get_facecolor()):
                self._set(ax.get_facecolor, ax.set_facecolor, (0, 0, 0, 0))
        artists = fig.findobj()
        arrows = [a.arrow_patch for a in artists if getattr(a, "arrow_patch", None) is not None]
        for artist in artists + arrows:
            if isinstance(artist, Text):
                box = artist.get_bbox_patch()
                if (id(artist) in over_images or (box is not None and _light(box.get_facecolor()))
                        or on_tint(artist)):
                    continue
                if _grey(artist.get_color(), 0.6):
                    self._set(artist.get_color, artist.set_color, DARK_TEXT)
                elif _dim_hue(artist.get_color()):
                    self._set(artist.get_color, artist.set_color, _lightened(artist.get_color()))
            elif isinstance(artist, Line2D):  # black stays the lightest, grey a step darker
                for get, put in ((artist.get_color, artist.set_color),
                                 (artist.get_markeredgecolor, artist.set_markeredgecolor)):
                    if _grey(get(), 0.6):
                        self._set(get, put, DARK_TEXT if _grey(get(), 0.3) else DARK_LINE)
            elif isinstance(artist, Patch) and id(artist) not in backgrounds:
                if _light(artist.get_facecolor()):  # a legend's frame, a white box
                    self._set(artist.get_facecolor, artist.set_facecolor, DARK_BACKGROUND)
                elif _grey(artist.get_facecolor(), 0.25):
                    self._set(artist.get_facecolor, artist.set_facecolor, DARK_LINE)
                if _grey(artist.get_edgecolor(), 0.6):
                    self._set(artist.get_edgecolor, artist.set_edgecolor, DARK_LINE)
        return self

    def __exit__(self, *exc):
        for setter, old in reversed(self.saved):
            setter(old)
        return False
