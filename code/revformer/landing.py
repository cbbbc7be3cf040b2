"""The landing page's way in: three start buttons and a map of the book's parts, a picture each.

``landing_buttons()`` and ``landing_map(experiment)`` each return one displayable (both editions,
``revformer.i18n.Both``). Four of the map's pictures are drawn from the build's own run: layer 0's
masked attention of test sample 0 (attention), the validation loss of ``four_heads`` (training), the
prompt keys against the answer queries (looking inside) and the eight heads' weight on the reversal
keys (going further); the other two are diagrams. Every picture is inline SVG drawn in
``currentColor`` and the theme's colours, so it is sharp on any screen and reads
in light and dark mode.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass

from .web import SITE_URL

REPO_URL = "https://github.com/revformer/revformer-book"
COLAB_URL = "https://colab.research.google.com/github/"

# (title, chapters, first page, one line of what the part does)
PARTS = (
    ("The task and the data", "1-3", "01_task", "Six digits in, six reversed out: tokens, shifted labels, "
     "embeddings."),
    ("Attention, written by hand", "4-7", "04_one_head", "Queries, keys and values, the causal mask, four "
     "heads, the whole model."),
    ("Training and generation", "8-9", "08_training", "Adam on the shifted labels, then greedy answers one "
     "token at a time."),
    ("Looking inside", "10-12", "10_heatmaps", "Heatmaps of every head, the mask switched off, heads taken "
     "out."),
    ("Practice", "13-15", "13_troubleshooting", "The mistakes people make and the check for each; Colab; "
     "review questions."),
    ("Going further", "16-21", "16_seeds", "Seeds, learning curves, the heads the answer needs, a KV cache, "
     "other lengths."),
)
BUTTONS = (("Start: 1. The task", "book/01_task.html"), ("Open the playground", "book/playground.html"))
COLAB = "Run chapter 1 in Colab"
PICTURE = {  # each picture's text for a screen reader
    "arcs": "Six digits and their reversal, each answer digit joined to the digit it copies.",
    "masked": "Layer 0 attention of this build's test sample 0, head 0: every query against the keys up to it, "
              "the future left empty by the causal mask.",
    "loss": "The validation loss of four_heads in this build, falling over training (log scale).",
    "heat": "Layer 0 attention of this build's test sample 0, answer queries against prompt keys: "
            "a bright anti-diagonal.",
    "checks": "A checklist: three checks passed, one mistake caught.",
    "heads": "The eight heads of this build, two layers of four, each as bright as its weight on the reversal "
             "keys of test sample 0.",
}
NAMES = tuple(PICTURE)  # in the order of PARTS
ACCENT = "var(--pst-color-primary, #0a7d91)"
MUTED = "var(--pst-color-text-muted, #646464)"
W, H = 200, 96  # every picture's viewBox


def _svg(name: str, body: str, lang: str) -> str:
    from .i18n import tr

    label = html.escape(tr(PICTURE[name], lang))
    return (f'<svg class="rfl-pic" viewBox="0 0 {W} {H}" role="img" aria-label="{label}" '
            f'xmlns="http://www.w3.org/2000/svg">{body}</svg>')


def _arcs() -> str:
    digits = "314205"
    out, step = [], W / 13
    tokens = list(digits) + list(reversed(digits))
    for i, t in enumerate(tokens):
        x = step * (i + 0.5) + (step if i >= 6 else 0)  # a gap between question and answer
        fill = ACCENT if i >= 6 else "none"
        out.append(f'<rect x="{x - 6:.1f}" y="52" width="12" height="16" rx="2" fill="{fill}" '
                   f'fill-opacity="0.18" stroke="currentColor" stroke-width="0.8"/>'
                   f'<text x="{x:.1f}" y="64" font-size="11" text-anchor="middle" fill="currentColor">{t}</text>')
    for j in range(6):  # answer digit j copies question digit 5 - j
        x1 = step * (6 + j + 0.5) + step
        x0 = step * (5 - j + 0.5)
        lift = 6 + (x1 - x0) * 0.2  # the widest arc peaks inside the picture
        out.append(f'<path d="M{x1:.1f} 50 Q{(x0 + x1) / 2:.1f} {50 - 2 * lift:.1f} {x0:.1f} 50" fill="none" '
                   f'stroke="{ACCENT}" stroke-width="1.2"/>')
    return "".join(out)


def _axes() -> str:
    return (f'<path d="M12 8 V{H - 12} H{W - 6}" fill="none" stroke="{MUTED}" stroke-width="0.8"/>')


def _loss(history) -> str:
    """The validation loss over the steps, on a log scale, inside the axes."""
    points = [(step, math.log10(val)) for step, _, val in history if val > 0]
    (first, last), (low, high) = [(min(v), max(v)) for v in zip(*points)]
    x0, x1, y0, y1 = 12, W - 8, 10, H - 14
    coords = " ".join(f"{x0 + (x - first) / ((last - first) or 1) * (x1 - x0):.1f},"
                      f"{y0 + (high - y) / ((high - low) or 1) * (y1 - y0):.1f}" for x, y in points)
    return _axes() + f'<polyline points="{coords}" fill="none" stroke="{ACCENT}" stroke-width="1.6"/>'


def _cells(matrix, rows, cols, left, top, size) -> list[str]:
    from .explorer import _palette

    palette = _palette("cividis")
    out = []
    for r, q in enumerate(rows):
        for c, k in enumerate(cols):
            w = matrix[q][k]
            if w is None:
                continue
            colour = palette[min(len(palette) - 1, int(float(w) * (len(palette) - 1) + 0.5))]
            out.append(f'<rect x="{left + c * size:.1f}" y="{top + r * size:.1f}" width="{size:.1f}" '
                       f'height="{size:.1f}" fill="{colour}"/>')
    return out


def _masked(weights) -> str:
    """Layer 0, head 0 of test sample 0: every query against every key, the future left empty (the mask)."""
    T = weights.shape[-1]
    size = (H - 8) / T
    matrix = [[weights[0, 0, q, k] if k <= q else None for k in range(T)] for q in range(T)]
    left = (W - size * T) / 2
    return "".join(_cells(matrix, range(T), range(T), left, 4, size)) + (
        f'<path d="M{left:.1f} 4 L{left + size * T:.1f} 4 L{left + size * T:.1f} {4 + size * T:.1f} Z" '
        f'fill="none" stroke="{MUTED}" stroke-width="0.6" stroke-dasharray="2 2"/>')


def _heads(weights) -> str:
    """The eight heads of test sample 0 as tiles, 2 layers x 4 heads, each as bright as its weight on the
    reversal keys (rows 7-12): which heads do the reading."""
    from .analysis import reversal_weight

    share = reversal_weight(weights)  # [L,H]
    layers, heads = share.shape
    size = min((H - 8) / layers, (W - 24) / heads)
    left = (W - heads * size) / 2
    gaps = "".join(  # the page's own colour between the tiles
        f'<rect x="{left + h * size:.1f}" y="{4 + l * size:.1f}" width="{size:.1f}" height="{size:.1f}" '
        f'fill="none" stroke="var(--pst-color-background, #fff)" stroke-width="4"/>'
        for l in range(layers) for h in range(heads))
    return "".join(_cells(share, range(layers), range(heads), left, 4, size)) + gaps


def _heat(weights) -> str:
    """Rows 7-13 (the answer's queries) against keys 0-7 (the prompt), layer 0's head that reverses best."""
    from .analysis import ANSWER_QUERIES, reversal_key

    best = max(range(weights.shape[1]),
               key=lambda h: sum(int(weights[0, h, q].argmax()) == reversal_key(q) for q in ANSWER_QUERIES))
    rows, cols = range(7, 14), range(0, 8)
    size = min((H - 8) / len(rows), (W - 40) / len(cols))
    return "".join(_cells(weights[0, best], rows, cols, (W - size * len(cols)) / 2, 4, size))


def _checks() -> str:
    out = []
    for i, ok in enumerate((True, True, False, True)):
        y = 16 + i * 20
        mark = (f'<path d="M16 {y} l4 4 l8 -9" fill="none" stroke="{ACCENT}" stroke-width="2"/>' if ok else
                f'<path d="M16 {y - 5} l9 9 M25 {y - 5} l-9 9" stroke="#c0504d" stroke-width="2"/>')
        out.append(mark + f'<rect x="38" y="{y - 4}" width="{[120, 96, 132, 84][i]}" height="6" rx="3" '
                          f'fill="{MUTED}" fill-opacity="0.45"/>')
    return "".join(out)


@dataclass(frozen=True)
class LandingMap:
    """The parts' cards in one language (``_repr_html_``)."""

    pictures: tuple  # the six SVG bodies, in PARTS order
    language: str

    def _repr_html_(self) -> str:
        from .i18n import tr

        lang = self.language
        site = SITE_URL + ("zh_CN/" if lang == "zh_CN" else "")
        cards = []
        for (title, chapters, first, line), name, body in zip(PARTS, NAMES, self.pictures):
            cards.append(
                f'<a class="rfl-card" href="{html.escape(site + "book/" + first + ".html")}">'
                + _svg(name, body, lang)
                + f'<span class="rfl-chapters">{html.escape(tr("Chapters {chapters}", lang, chapters=chapters))}'
                f'</span><span class="rfl-title">{html.escape(tr(title, lang))}</span>'
                f'<span class="rfl-line">{html.escape(tr(line, lang))}</span></a>')
        label = html.escape(tr("The parts of the book", lang))
        return _STYLE + f'<nav class="rf-landing rfl-map" aria-label="{label}">{"".join(cards)}</nav>'


@dataclass(frozen=True)
class LandingButtons:
    """The three ways in, in one language (``_repr_html_``)."""

    language: str

    def _repr_html_(self) -> str:
        from .i18n import tr

        lang = self.language
        site = SITE_URL + ("zh_CN/" if lang == "zh_CN" else "")
        notebook = ("zh_CN/" if lang == "zh_CN" else "") + "book/01_task.ipynb"
        colab = f"{COLAB_URL}{REPO_URL.removeprefix('https://github.com/')}/blob/main/{notebook}"
        buttons = [f'<a class="rfl-button{" rfl-primary" if i == 0 else ""}" href="{html.escape(site + href)}">'
                   f'{html.escape(tr(label, lang))}</a>' for i, (label, href) in enumerate(BUTTONS)]
        buttons.append(f'<a class="rfl-button" href="{html.escape(colab)}">{html.escape(tr(COLAB, lang))}</a>')
        return _STYLE + f'<div class="rf-landing rfl-buttons">{"".join(buttons)}</div>'


def landing_map(experiment, language: str | None = None):
    """The map of the parts, a picture each, drawn from ``experiment`` (a loaded ``Experiment``)."""
    from .i18n import in_languages

    if "four_heads" not in experiment.runs:
        raise ValueError(f"the landing map draws four_heads; loaded: {', '.join(sorted(experiment.runs)) or 'none'}")
    weights = experiment.attention()  # [L,H,T,T]: four_heads on test sample 0
    pictures = (_arcs(), _masked(weights), _loss(experiment.run("four_heads").history), _heat(weights), _checks(),
                _heads(weights))
    return in_languages(lambda lang: LandingMap(pictures, lang), language)


def landing_buttons(language: str | None = None):
    """The three ways in, for the top of the landing page: chapter 1, the playground, chapter 1 in Colab."""
    from .i18n import in_languages

    return in_languages(LandingButtons, language)


_STYLE = """<style>
.rf-landing { margin: 1rem 0 1.4rem; }
.rfl-buttons { display: flex; flex-wrap: wrap; gap: .6rem; }
.rfl-button { display: inline-flex; align-items: center; min-height: 44px; padding: .45rem 1.1rem;
  border-radius: .4rem; border: 1px solid var(--pst-color-primary, #0a7d91); font-weight: 600;
  color: var(--pst-color-primary, #0a7d91); text-decoration: none !important; }
.rfl-button:hover { background: var(--pst-color-surface, #f3f4f5); }
.rfl-button.rfl-primary { background: var(--pst-color-primary, #0a7d91);
  color: var(--pst-color-background, #fff) !important; }
.rfl-map { display: grid; grid-template-columns: repeat(auto-fill, minmax(230px, 1fr)); gap: .8rem; }
@media (min-width: 900px) { .rfl-map { grid-template-columns: repeat(3, 1fr); } }  /* six parts: 3 + 3, not 4 + 2 */
.rfl-card { display: flex; flex-direction: column; gap: .2rem; padding: .7rem .8rem .8rem;
  border: 1px solid var(--pst-color-border, #d1d5da); border-radius: .5rem; text-decoration: none !important;
  color: var(--pst-color-text-base, #222) !important; background: var(--pst-color-on-background, transparent); }
.rfl-card:hover, .rfl-card:focus-visible { border-color: var(--pst-color-primary, #0a7d91); }
.rfl-pic { width: 100%; height: auto; aspect-ratio: 200 / 96; margin-bottom: .3rem; }
.rfl-chapters { font-size: .8rem; color: var(--pst-color-text-muted, #646464); }
.rfl-title { font-weight: 700; font-size: 1rem; }
.rfl-line { font-size: .88rem; line-height: 1.4; }
@media (max-width: 560px) {  /* a phone: picture beside the words (half the card: its digits 10 px at 390) */
  .rfl-map { grid-template-columns: 1fr; gap: .6rem; }
  .rfl-card { display: grid; grid-template-columns: 50% 1fr; column-gap: .7rem; align-items: center; }
  .rfl-pic { grid-row: 1 / span 3; margin: 0; }
  .rfl-button { flex: 1 1 100%; justify-content: center; }
}
</style>"""
