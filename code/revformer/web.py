"""The trained model in the reader's browser: exported weights, the JavaScript, the playground.

``export_weights(experiment, out_dir)`` writes two plain scripts a page loads
with ``<script src>`` (so the book works from ``file://``):

- ``revformer-weights.js``: ``window.REVFORMER_WEIGHTS``, per group its
  configuration and every tensor of its ``state_dict`` as float32 in base64;
- ``revformer-model.js``: a copy of ``revformer/web/model.js``, the forward
  pass of ``revformer.model`` written in plain JavaScript
  (``window.revformerModel``).

``python -m revformer web --out DIR`` does this for the cached experiment;
the book build writes them into ``_build/site-extra/web``, served at ``/web/``.

``playground(...)`` is the interactive page (type six digits, see the answer,
the attention of every head, switch the mask, knock out heads, watch the
loss); ``chapter_explorer(n)`` is its setting for chapters 10-12. Both return
an object whose ``_repr_html_`` loads the two scripts from the published site
(``WEB_URL``): the book build rewrites that address into a relative one, and
in Colab or Jupyter they load from the site.
"""
from __future__ import annotations

import base64
import html
import json
import shutil
import statistics
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

from .files import atomic_path
from .i18n import Bilingual
from .source import SourceListing, cut_lines

SITE_URL = "https://revformer.github.io/revformer-book/"
WEB_URL = SITE_URL + "web/"
WEIGHTS_FILE = "revformer-weights.js"
MODEL_FILE = "revformer-model.js"
MODEL_JS = Path(__file__).resolve().parent / "web" / "model.js"
MAX_EXPORT_BYTES = 1_500_000  # what the export may add to the site
FORMAT = 1

CONTROLS = ("digits", "random", "group", "mask", "knockout", "loss", "layer", "head", "row")
GROUP_TEXT = {
    "four_heads": "four_heads: 4 heads, trained with the mask",
    "one_head": "one_head: 1 head, trained with the mask",
    "no_mask": "no_mask: 4 heads, trained without the mask",
}
# Everything the playground says, in English; each edition's language comes from the catalogue
# (revformer.i18n). The script fills the {names}; the markup's labels are used as they are.
TEXT = {
    "sixDigits": "Six digits", "digits": "Digits:", "random": "Random digits", "model": "Model",
    "modelFixed": "Model:", "causalMask": "causal mask", "answer": "The generated answer (greedy, seven steps)",
    "position": "position", "writes": "the model writes", "probability": "its probability",
    "reversal": "the reversal", "allHeads": "all heads", "knockOut": "knock out in layer {layer}",
    "lossCaption": "Loss of the true next token at each answer position (the inputs teacher-forced on the "
                   "true answer)",
    "lossPosition": "position, true next token", "lossNow": "loss now", "lossTrained": "as trained",
    "mean": "mean", "layerLabel": "layer", "headLabel": "head", "rowLabel": "query row",
    "head": "head {h}", "layer": "layer {l}", "meanOfHeads": "mean of heads", "asTrained": "(as trained)",
    "trainedWith": "(trained with it)", "trainedWithout": "(trained without it)",
    "forced": " * After <EOS> every token is <EOS>.",
    "wrongOne": "Wrong at position {positions}: the reversal of {digits} is {want}.",
    "wrongMany": "Wrong at positions {positions}: the reversal of {digits} is {want}.",
    "right": "Right: {want} is {digits} reversed.",
    "note": "Query {row} ({token}) predicts the next token: {next}. Rows are queries, columns keys; the inputs "
            "are the prompt and the model's own answer.",
    "heatmapOn": "attention of {group}, layer {layer}, {head}, mask on; rows are queries, columns keys",
    "heatmapOff": "attention of {group}, layer {layer}, {head}, mask off; rows are queries, columns keys",
    "keyAxis": "key (position, token) \u2192", "weight": "attention weight", "bars": "weights of query row {row}",
    "masked": "masked",
    "build": "Computed in this browser by revformer-model.js from the exported weights (revformer {version}"
             "{seed}{steps}).",
    "seed": ", seed {seed}", "steps": "; {group} trained {steps} steps",
    "notLoaded": "The model did not load: this page could not read {files}.", "and": " and ",
    "badDigits": "Type exactly six digits 0-9 (got \u201c{text}\u201d).", "comma": ", ",
    "chipKey": "In each chip, top to bottom:",
    "hint": "Point at a cell, or tap it, to read its weight; click a row to pick the query row.",
    "readout": "query {q} ({qtoken}) \u2192 key {k} ({ktoken}): {weight}",
    "thumbs": "The attention of every head of both layers, and their mean: pick one to show it",
    "pick": "layer {layer}, {head}",
}
TITLES = {"playground": "The model in your browser",
          4: "Explorer: layer 0, head 0, with chapter 5's mask and chapter 9's greedy answer",
          10: "Explorer: the attention of every head, computed in your browser",
          11: "Explorer: switch the mask and watch the answer and the attention",
          12: "Explorer: the three groups, computed in your browser"}


def text(lang: str) -> dict:
    """The playground's words in ``lang`` (``TEXT`` through the catalogue), their {names} left for the script."""
    from .i18n import unfilled

    return {key: unfilled(english, lang) for key, english in TEXT.items()}


# ---- the export -------------------------------------------------------------

def _models_of(experiment) -> dict:
    """``{group: model}`` of an Experiment (every loaded group) or of a mapping."""
    if isinstance(experiment, dict):
        models = dict(experiment)
    elif hasattr(experiment, "runs") and hasattr(experiment, "model"):
        models = {name: experiment.model(name) for name in experiment.runs}
    else:
        raise ValueError("export_weights takes an Experiment (revformer.experiment.load_experiment()) "
                         f"or a mapping of group name to model, got {type(experiment).__name__}")
    if not models:
        raise ValueError("no model to export: the experiment holds no group")
    for name, model in models.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"group names must be non-empty strings, got {name!r}")
        if not hasattr(model, "state_dict") or not hasattr(model, "config") or not hasattr(model, "blocks"):
            raise ValueError(f"group {name!r}: expected a revformer ReversalTransformer, got {type(model).__name__}")
    return models


def _tensor_record(tensor) -> dict:
    array = tensor.detach().cpu().float().contiguous().numpy().astype("<f4")  # little-endian float32
    return {"shape": list(array.shape), "data": base64.b64encode(array.tobytes()).decode("ascii")}


def weights_record(experiment) -> dict:
    """What ``revformer-weights.js`` holds, as a dict (see the module's docstring)."""
    from . import __version__

    record = {"format": FORMAT, "revformer": __version__, "seed": None, "groups": {}}
    config = getattr(experiment, "config", None)
    if config is not None:
        record["seed"] = config.train.seed
    for name, model in _models_of(experiment).items():
        c = model.config
        causal = {bool(block.attention.causal) for block in model.blocks}
        if len(causal) != 1:
            raise ValueError(f"group {name!r}: its layers disagree about the mask; the export needs one setting")
        if c.score_multiplier != 1:
            raise ValueError(f"group {name!r} scales its scores by {c.score_multiplier}; the browser's model "
                             "divides them by sqrt(Dh) only, so export a model with score_multiplier=1")
        record["groups"][name] = {
            "config": {"heads": c.num_heads, "layers": c.num_layers, "d_model": c.d_model, "d_ff": c.d_ff,
                       "vocab": c.vocab_size, "positions": c.max_positions, "causal": causal.pop()},
            "tensors": {key: _tensor_record(value) for key, value in model.state_dict().items()},
        }
        run = getattr(experiment, "runs", {}).get(name) if not isinstance(experiment, dict) else None
        if run is not None:
            record["groups"][name]["steps"] = run.steps
    return record


def weights_script(experiment) -> str:
    """The text of ``revformer-weights.js``."""
    record = weights_record(experiment)
    seed = "" if record["seed"] is None else f", seed {record['seed']}"
    return ("/* revformer-weights.js: the trained weights of this build (revformer "
            f"{record['revformer']}{seed}), written by `python -m revformer web`.\n"
            " * Per group: its configuration and every tensor of its state_dict, float32\n"
            " * little-endian in base64, read by revformer-model.js. */\n"
            "window.REVFORMER_WEIGHTS = " + json.dumps(record, separators=(",", ":")) + ";\n")


def export_weights(experiment, out_dir) -> dict[str, Path]:
    """Write ``revformer-weights.js`` and ``revformer-model.js`` into ``out_dir``.

    ``experiment``: an Experiment (every loaded group is exported) or a
    mapping of group name to model. Each file is written to a temporary name
    and renamed; an export over ``MAX_EXPORT_BYTES`` (the site's budget for
    it) raises ``ValueError`` before anything is written. Returns ``{file
    name: path}``.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out_dir must be a folder, but {out} is a file")
    text = weights_script(experiment)
    size = len(text.encode("utf-8")) + MODEL_JS.stat().st_size
    if size > MAX_EXPORT_BYTES:
        raise ValueError(f"the web export would be {size:,} bytes, over its budget of {MAX_EXPORT_BYTES:,}")
    written = {}
    with atomic_path(out / WEIGHTS_FILE) as tmp:
        tmp.write_text(text, encoding="utf-8")
    written[WEIGHTS_FILE] = out / WEIGHTS_FILE
    with atomic_path(out / MODEL_FILE) as tmp:
        shutil.copyfile(MODEL_JS, tmp)
    written[MODEL_FILE] = out / MODEL_FILE
    return written


def export_size(out_dir) -> int:
    """Bytes the export adds to the site: the two files in ``out_dir``."""
    paths = [Path(out_dir) / name for name in (WEIGHTS_FILE, MODEL_FILE)]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise ValueError(f"{out_dir} holds no web export: {', '.join(missing)} missing (run export_weights first)")
    return sum(p.stat().st_size for p in paths)


# ---- the listing ------------------------------------------------------------

def show_model_js(first: str | None = None, last: str | None = None, function: str | None = None) -> SourceListing:
    """``revformer/web/model.js``, whole or in part, shown like ``revformer.source.show_source``.

    ``function="attention"``: that function with the comment lines just above
    it. ``first`` and ``last``: the lines from the first that contains
    ``first`` to the next that contains ``last``.
    """
    lines = MODEL_JS.read_text(encoding="utf-8").splitlines(keepends=True)
    begin, end = 0, len(lines)
    if function is not None:
        if first is not None or last is not None:
            raise ValueError("give either function or first/last, not both")
        begin = next((i for i, line in enumerate(lines) if line.lstrip().startswith(f"function {function}(")), None)
        if begin is None:
            raise ValueError(f"model.js has no function {function!r}")
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        if lines[begin].rstrip().endswith("}"):  # a one-line function
            end = begin + 1
        else:
            end = next(i for i in range(begin + 1, len(lines)) if lines[i].rstrip() == indent + "}") + 1
        while begin > 0 and lines[begin - 1].lstrip().startswith("//"):
            begin -= 1
    begin, end = cut_lines(lines, first, last, "model.js", begin, end)
    name = "model.js" if function is None else f"{function} (model.js)"
    return SourceListing(name, "revformer/web/model.js", begin + 1, textwrap.dedent("".join(lines[begin:end])),
                         language="javascript")


@dataclass(frozen=True)
class Beside(Bilingual):
    """Listings shown side by side (one under the other on a narrow screen)."""

    listings: tuple

    def markdown(self, language: str) -> str:  # Markdown, like the listings (revformer.source)
        cells = "".join(f'<div style="flex:1 1 26em;min-width:0">\n\n{item.markdown(language)}\n</div>\n'
                        for item in self.listings)
        return ('<div class="rf-beside" style="display:flex;flex-wrap:wrap;gap:0 1em;align-items:flex-start">\n'
                f"{cells}</div>\n")


def beside(*listings) -> Beside:
    """``beside(show_source(f), show_model_js("function f"))``: the Python and its JavaScript."""
    if not listings or not all(hasattr(item, "markdown") for item in listings):
        raise ValueError("beside takes one or more listings (objects with markdown(language)), "
                         f"got {[type(item).__name__ for item in listings]}")
    return Beside(tuple(listings))


# ---- the playground ---------------------------------------------------------

@dataclass(frozen=True)
class Playground:
    """One playground's settings and its HTML (``_repr_html_``)."""

    options: dict

    @property
    def html(self) -> str:
        return self._repr_html_()

    def _repr_html_(self) -> str:
        from .quiz import element_id

        payload = json.dumps(self.options, separators=(",", ":")).replace("<", "\\u003c")
        uid = element_id("rfp", payload)
        base = self.options["scripts"]
        # a script that cannot load notes its address, so the playground can say which one at once
        scripts = "".join(f'<script src="{html.escape(base + name)}" onerror="{_ONERROR}"></script>'
                          for name in (WEIGHTS_FILE, MODEL_FILE))
        lang = ' lang="zh-CN"' if self.options.get("language") == "zh_CN" else ""
        return (scripts + _STYLE + f'<div class="rf-playground" id="{uid}"{lang}>'
                f'<script type="application/json" class="rfp-options">{payload}</script>'
                + _markup(uid, self.options) + "</div>" + _script(uid))


_ONERROR = "(window.REVFORMER_MISSING = window.REVFORMER_MISSING || []).push(this.src)"


def _check_digits(digits) -> str:
    from .quiz import ascii_digits

    text = ascii_digits(digits) if isinstance(digits, (str, int)) and not isinstance(digits, bool) else None
    if isinstance(digits, (list, tuple)) and all(isinstance(d, int) and not isinstance(d, bool) for d in digits):
        text = "".join(str(d) for d in digits) if all(0 <= d <= 9 for d in digits) else None
    if text is None or len(text) != 6 or not all(c in "0123456789" for c in text):
        raise ValueError(f"digits must be six digits 0-9, such as '314205' or [3, 1, 4, 2, 0, 5], got {digits!r}")
    return text


def playground(digits="314205", groups=("four_heads", "one_head", "no_mask"), controls=CONTROLS,
               layer: int = 0, head="mean", row: int = 7, title=TITLES["playground"],
               script_base: str = WEB_URL, language: str | None = None):
    """The interactive playground (HTML and one inline script over ``window.revformerModel``).

    ``digits``: the six digits shown first. ``groups``: the models to choose
    from, the first shown first. ``controls``: which of ``CONTROLS`` to show
    (``"digits"`` the text box, ``"random"`` its button, ``"group"`` the model,
    ``"mask"`` the mask toggle, ``"knockout"`` the head check boxes, ``"loss"``
    the per-position loss table, ``"layer"``, ``"head"``, ``"row"`` the
    heatmap's selects); the answer and the heatmap are always shown.
    ``layer``, ``head`` (an int or ``"mean"``) and ``row`` are the heatmap's
    first selection. ``script_base``: where the two scripts are loaded from.
    ``title``: an English string (its Chinese from the catalogue); None for none.
    ``language``: ``"en"`` or ``"zh_CN"`` gives that one ``Playground``; by
    default both, as one ``revformer.i18n.Both`` (the kernel's language shown).
    """
    from .config import GROUP_NAMES, group as find_group
    from .data import PROMPT_LEN

    digits_text = _check_digits(digits)
    if isinstance(groups, str) or not groups:
        raise ValueError(f"groups must be a non-empty list of group names, got {groups!r}")
    groups = list(groups)
    for name in groups:
        if name not in GROUP_NAMES:
            raise ValueError(f"unknown group {name!r}; expected some of {', '.join(GROUP_NAMES)}")
    if len(set(groups)) != len(groups):
        raise ValueError(f"groups names a group twice: {groups!r}")
    if isinstance(controls, str):
        raise ValueError(f"controls must be a list of control names, got the string {controls!r}")
    controls = list(controls)
    for name in controls:
        if name not in CONTROLS:
            raise ValueError(f"unknown control {name!r}; expected some of {', '.join(CONTROLS)}")
    heads = max(find_group(g).num_heads for g in groups)
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < 2:
        raise ValueError(f"layer must be 0 or 1, got {layer!r}")
    if head != "mean" and (isinstance(head, bool) or not isinstance(head, int)
                           or not 0 <= head < find_group(groups[0]).num_heads):
        raise ValueError(f"head must be 'mean' or a head of {groups[0]} "
                         f"(0-{find_group(groups[0]).num_heads - 1}), got {head!r}")
    length = 2 * PROMPT_LEN - 2
    if isinstance(row, bool) or not isinstance(row, int) or not 0 <= row < length:
        raise ValueError(f"row must be a query position 0-{length - 1}, got {row!r}")
    if not isinstance(script_base, str) or not script_base:
        raise ValueError(f"script_base must be a URL or a path, got {script_base!r}")
    if not script_base.endswith("/"):
        script_base += "/"
    if title is not None and not isinstance(title, str):
        raise ValueError(f"title must be an English string (its translation comes from the catalogue) or None, "
                         f"got {title!r}")
    from .explorer import _palette
    from .i18n import in_languages, tr

    def made(lang):
        return Playground({
            "title": tr(title, lang) if title else "", "digits": digits_text, "groups": groups,
            "groupText": {g: tr(GROUP_TEXT[g], lang) for g in groups}, "controls": controls, "maxHeads": heads,
            "layer": layer, "head": str(head), "row": row, "scripts": script_base,
            "palette": _palette("cividis"), "language": lang, "text": text(lang),
        })

    return in_languages(made, language)


def landing_playground(digits="314205", script_base: str = WEB_URL, language: str | None = None):
    """The playground's small form for the landing page: the digits, the answer and layer 0's heatmap of
    ``four_heads``, with the thumbnails of its eight heads under the answer, no title, so a reader sees the model
    answer within the first screen."""
    return playground(digits, groups=("four_heads",), controls=("digits", "random", "layer", "head"), title=None,
                      script_base=script_base, language=language)


def chapter_explorer(chapter: int, digits="314205", script_base: str = WEB_URL, language: str | None = None):
    """The playground as the explorer of chapter 4, 10, 11 or 12.

    4 (one head): four_heads, layer 0's head 0, the query row's control;
    10 (heatmaps): four_heads and one_head, the heatmap's controls;
    11 (the mask off): four_heads and no_mask, with the mask toggle;
    12 (ablations): the three groups, with the knockout boxes and the loss.
    """
    settings = {
        4: dict(groups=("four_heads",), controls=("digits", "random", "row"), layer=0, head=0,
                title=TITLES[4]),
        10: dict(groups=("four_heads", "one_head"),
                 controls=("digits", "random", "group", "layer", "head", "row"),
                 title=TITLES[10]),
        11: dict(groups=("four_heads", "no_mask"),
                 controls=("digits", "random", "group", "mask", "loss", "layer", "head", "row"),
                 title=TITLES[11]),
        12: dict(groups=("four_heads", "one_head", "no_mask"),
                 controls=("digits", "random", "group", "knockout", "loss", "layer", "head", "row"),
                 title=TITLES[12]),
    }
    if chapter not in settings:
        raise ValueError(f"chapter must be 4, 10, 11 or 12 (the chapters with an explorer), got {chapter!r}")
    return playground(digits, script_base=script_base, language=language, **settings[chapter])


def _markup(uid: str, o: dict) -> str:
    """The static controls and the reserved places the script fills.

    Two columns where the playground is wide (``_STYLE``): the controls, the answer, the knockouts and the loss
    on one side, the heatmap, its row and the heads' thumbnails on the other; one column, in reading order, on a
    phone (the loss last).
    """
    shown = set(o["controls"])
    t = {k: html.escape(v) for k, v in o["text"].items()}
    side = [_controls(uid, o, t, shown), f'<div class="rfp-error" id="{uid}-error" role="alert"></div>', _answer(t)]
    if "knockout" in shown:  # with the model's other controls, beside the heatmap
        side.append(_knockout(uid, o, t))
    if "loss" in shown:
        side.append(_loss(t))
    # the heatmap at the top of its column, under the line that reads out the cell pointed at, so that it shows
    # in the widget's first screen; the note on its row under it; then the heads' thumbnails that pick what it
    # shows (under the answer instead, where that side is short)
    main = [f'<div class="rfp-readout" aria-live="polite">{t["hint"]}</div><div class="rfp-body"></div>'
            '<div class="rfp-note">&nbsp;</div>']
    (main if {"knockout", "loss"} & shown else side).append(_view(uid, o, t, shown))
    if "row" in shown:
        main.append(_bars())
    # the playground's own title is its page's heading too (book/playground and its notebook): said once
    from .i18n import tr

    own = o["title"] and o["title"] != tr(TITLES["playground"], o.get("language") or "en")
    title = f'<div class="rfp-title">{html.escape(o["title"])}</div>' if own else ""
    return (title + '<div class="rfp-grid"><div class="rfp-side">' + "".join(side) + "</div>"
            '<div class="rfp-main">' + "".join(main) + '</div></div><div class="rfp-build">&nbsp;</div>')


def _controls(uid: str, o: dict, t: dict, shown: set) -> str:
    """The digits, the random button, the model and the mask."""
    e = html.escape
    digits = []
    if "digits" in shown:
        digits.append(f'<span class="rfp-field rfp-digits-field"><label for="{uid}-digits">{t["sixDigits"]}</label>'
                      f'<input id="{uid}-digits" class="rfp-digits" type="text" inputmode="numeric" autocomplete="off"'
                      f' spellcheck="false" size="8" maxlength="12" value="{e(o["digits"])}"'
                      f' aria-describedby="{uid}-error"></span>')
    else:
        digits.append(f'<span class="rfp-field">{t["digits"]} <b class="rfp-fixed">{" ".join(o["digits"])}</b></span>')
    if "random" in shown:
        digits.append(f'<button type="button" class="rfp-random">{t["random"]}</button>')
    rows = ['<div class="rfp-controls rfp-digits-row">' + "".join(digits) + "</div>"]
    if "group" in shown and len(o["groups"]) > 1:
        options = "".join(f'<option value="{e(g)}">{e(o["groupText"][g])}</option>' for g in o["groups"])
        rows.append(f'<span class="rfp-field rfp-group-field"><label for="{uid}-group">{t["model"]}</label>'
                    f'<select id="{uid}-group" class="rfp-group">{options}</select></span>')
    else:
        fixed = e(o["groupText"][o["groups"][0]])
        # no space in the markup: the CSS spaces the name after "Model:", not after a full-width colon
        rows.append(f'<span class="rfp-field rfp-model">{t["modelFixed"]}<b>{fixed}</b></span>')
    if "mask" in shown:  # a check box drawn as a switch (_STYLE): Space and a click toggle it as ever
        rows.append(f'<span class="rfp-field rfp-switch"><input type="checkbox" id="{uid}-mask" class="rfp-mask">'
                    f'<label for="{uid}-mask">{t["causalMask"]}</label> <span class="rfp-mask-note"></span></span>')
    return '<div class="rfp-controls">' + "".join(rows) + "</div>"


def _answer(t: dict) -> str:
    """The answer as seven chips: one table row a position (token, probability, the reversal), laid out as a
    wrapping line of cards; the roles keep it a table for a screen reader whatever its CSS display."""
    cell = 'role="cell"'
    chips = "".join(f'<tr class="rfp-chip" role="row" data-i="{i}"><th scope="row" role="rowheader" class="rfp-at">'
                    f'{8 + i}</th><td {cell} class="rfp-tok" data-i="{i}">&nbsp;</td>'
                    f'<td {cell} class="rfp-prob" data-i="{i}">&nbsp;</td>'
                    f'<td {cell} class="rfp-want" data-i="{i}">&nbsp;</td></tr>' for i in range(7))
    heads = "".join(f'<th scope="col" role="columnheader">{t[k]}</th>'
                    for k in ("position", "writes", "probability", "reversal"))
    legend = " \u00b7 ".join(f"<span>{t[k]}</span>" for k in ("position", "writes", "probability", "reversal"))
    return (f'<div class="rfp-answer-box"><table class="rfp-answer" role="table"><caption>{t["answer"]}</caption>'
            f'<thead class="rfp-sr"><tr role="row">{heads}</tr></thead><tbody>{chips}</tbody></table>'
            f'<div class="rfp-legend" aria-hidden="true"><span class="rfp-legend-key">{t["chipKey"]}</span>'
            f"{legend}</div>"
            '<div class="rfp-verdict" aria-live="polite">&nbsp;</div></div>')


def _loss(t: dict) -> str:
    """The per-position loss, folded under the answer (open: a click folds it)."""
    rows = "".join(f'<tr data-p="{p}"><td class="rfp-pos">&nbsp;</td><td class="rfp-loss-now">&nbsp;</td>'
                   f'<td class="rfp-loss-base">&nbsp;</td><td class="rfp-loss-bar"><div></div></td></tr>'
                   for p in range(7, 14))
    return (f'<details class="rfp-fold rfp-loss-box" open><summary>{t["lossCaption"]}</summary>'
            f'<table class="rfp-loss"><tr><th scope="col">{t["lossPosition"]}</th><th scope="col">{t["lossNow"]}</th>'
            f'<th scope="col">{t["lossTrained"]}</th><th scope="col"></th></tr>' + rows +
            f'<tr class="rfp-loss-mean"><th scope="row">{t["mean"]}</th><td class="rfp-loss-now">&nbsp;</td>'
            '<td class="rfp-loss-base">&nbsp;</td><td></td></tr></table></details>')


def _view(uid: str, o: dict, t: dict, shown: set) -> str:
    """What the heatmap shows: a thumbnail of every head (and their mean) of both layers, and the selects."""
    parts = []
    if "layer" in shown or "head" in shown:
        columns = [t["head"].replace("{h}", str(h)) for h in range(o["maxHeads"])] + [t["mean"]]
        cells = ['<span></span>'] + [f'<span class="rfp-thumb-head" data-head="{h}">{c}</span>'
                                     for h, c in zip([*range(o["maxHeads"]), "mean"], columns)]
        for layer in range(2):
            cells.append(f'<span class="rfp-thumb-layer">{t["layer"].replace("{l}", str(layer))}</span>')
            cells += [f'<button type="button" class="rfp-thumb" data-layer="{layer}" data-head="{h}" '
                      'aria-pressed="false"><canvas width="14" height="14" aria-hidden="true"></canvas></button>'
                      for h in [*range(o["maxHeads"]), "mean"]]
        parts.append(f'<div class="rfp-thumbs" role="group" aria-label="{t["thumbs"]}" '
                     f'style="--rfp-heads:{o["maxHeads"] + 1}">' + "".join(cells) + "</div>")
    # where the thumbnails (buttons, reached by Tab) pick the layer and the head, their selects would be a second
    # control for the same thing (the look review): they stay in the page, hidden, for the script to keep in step
    thumbs = "layer" in shown or "head" in shown
    selects = [f'<span class="rfp-field"{" hidden" if thumbs and name != "row" else ""}>'
               f'<label for="{uid}-{name}">{label}</label>'
               f'<select id="{uid}-{name}" class="rfp-{name}"></select></span>'
               for name, label in (("layer", t["layerLabel"]), ("head", t["headLabel"]), ("row", t["rowLabel"]))
               if name in shown]
    parts.append('<div class="rfp-controls rfp-selects">' + "".join(selects) + "</div>")
    return '<div class="rfp-view">' + "".join(parts) + "</div>"


def _knockout(uid: str, o: dict, t: dict) -> str:
    """The knockouts: per layer a row of head chips, each a check box drawn as a toggle (Space toggles it)."""
    sets = []
    for layer in range(2):
        chips = [f'<span class="rfp-chipbox rfp-ko-head" data-head="{h}"><input type="checkbox" '
                 f'id="{uid}-ko-{layer}-{h}" class="rfp-ko" data-layer="{layer}" data-head="{h}">'
                 f'<label for="{uid}-ko-{layer}-{h}">{t["head"].replace("{h}", str(h))}</label></span>'
                 for h in range(o["maxHeads"])]
        chips.append(f'<span class="rfp-chipbox"><input type="checkbox" id="{uid}-ko-{layer}-all" class="rfp-ko-all"'
                     f' data-layer="{layer}"><label for="{uid}-ko-{layer}-all">{t["allHeads"]}</label></span>')
        sets.append(f'<fieldset class="rfp-ko-layer"><legend>{t["knockOut"].replace("{layer}", str(layer))}</legend>'
                    + "".join(chips) + "</fieldset>")
    return '<div class="rfp-knockout">' + "".join(sets) + "</div>"


def _bars() -> str:
    """The query row's weights as numbers, folded under the heatmap (the script fills them)."""
    rows = "".join(f'<tr><td class="rfp-key">&nbsp;</td><td class="rfp-bar-cell"><div class="rfp-bar"></div></td>'
                   f'<td class="rfp-value" data-k="{k}">&nbsp;</td></tr>' for k in range(14))
    return (f'<details class="rfp-fold rfp-bars-box"><summary>&nbsp;</summary>'
            f'<table class="rfp-bars">{rows}</table></details>')


# The theme's colours (pydata-sphinx-theme's --pst-color-*, light and dark), each with a fallback for Colab and
# Jupyter, where they do not exist: there the text keeps the notebook's own colour and the fields the system's.
# The playground paints no background of its own, so dark mode shows no light slab; the theme's light backing
# of an HTML output in dark mode is taken away for it (the rule with :has).
# Two columns where the playground is at least 660 px wide (a container query: the book's text column from
# 1100 px, a notebook's output); one column, everything shrinking to the width, on a phone.
# No text under 12 px (the widget's 14 px times .875 at the least), and every control a target of at least
# 40 px: the digits, the buttons, the lists, the knockout chips, the mask's switch (a 44 x 40 px box whose
# transparent border leaves a 24 px track), and the thumbnails (3.2em square). Seven answer chips share a
# column 320-370 px wide: a probability shows without its "%" (a screen reader still reads it; the legend says
# "(%)" once), so that ">99.99" fits a chip at 12 px, condensed where the font has a condensed face; only on a
# 320 px phone (a playground under 300 px) does it take 11 px, and "<EOS>" a tighter spacing, to fit its chip.
# Chinese sentences break at their spaces and punctuation where their phrases are short (the verdict's closing
# "reversed." phrase is not split), and the notes keep more than one word on their last line (not the verdict,
# whose six digits stay together rather than lend one to its last word).
_STYLE = """<style>
.rf-playground{--rfp-text:var(--pst-color-text-base,currentColor);--rfp-muted:var(--pst-color-text-muted,color-mix(in srgb,currentColor 68%,transparent));--rfp-border:var(--pst-color-border,color-mix(in srgb,currentColor 30%,transparent));--rfp-surface:var(--pst-color-surface,rgba(128,128,128,.1));--rfp-field:var(--pst-color-background,Field);--rfp-primary:var(--pst-color-primary,#0a7d91);--rfp-on-primary:var(--pst-color-primary-text,#fff);--rfp-success:var(--pst-color-success,#00843f);--rfp-danger:var(--pst-color-danger,#d72d47);--rfp-on-danger:var(--pst-color-danger-text,#fff);container:rfp/inline-size;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--rfp-text);background:transparent;border:1px solid var(--rfp-border);border-radius:10px;padding:.9em 1em;margin:1em 0;max-width:100%}
html[data-theme=dark] .bd-content div.cell_output div.output.text_html:has(> .rf-playground){background:transparent;padding:0;color:inherit}
.rf-playground *{box-sizing:border-box}
@media (max-width:480px){.rf-playground{padding:.75em .7em}}
.rf-playground .rfp-title{font-weight:650;font-size:1.05em;margin:0 0 .7em}
.rf-playground .rfp-grid{display:flex;flex-direction:column;gap:.75em}
.rf-playground .rfp-side,.rf-playground .rfp-main{display:contents}
.rf-playground .rfp-loss-box{order:1}
@container rfp (min-width:660px){
.rf-playground .rfp-grid{display:grid;grid-template-columns:minmax(19em,1fr) minmax(0,1fr);gap:1.6em;align-items:start}
.rf-playground .rfp-side,.rf-playground .rfp-main{display:flex;flex-direction:column;gap:.75em;min-width:0}
.rf-playground .rfp-loss-box{order:0}}
.rf-playground .rfp-controls{display:flex;flex-wrap:wrap;gap:.6em .9em;align-items:flex-end}
.rf-playground .rfp-field{display:inline-flex;flex-direction:column;gap:.2em;min-width:0;max-width:100%}
.rf-playground .rfp-field[hidden]{display:none}
.rf-playground .rfp-field>label{margin:0;font-size:.875em;font-weight:600;color:var(--rfp-muted)}
.rf-playground .rfp-group-field{flex:1 1 100%}
.rf-playground .rfp-model{display:block;font-size:.875em;color:var(--rfp-muted)}.rf-playground .rfp-model b{font-weight:600;color:var(--rfp-text);margin-left:.3em}.rf-playground:lang(zh) .rfp-model b{margin-left:0}
.rf-playground input[type=text],.rf-playground select,.rf-playground button{font:inherit;color:var(--rfp-text);background-color:var(--rfp-field);border:1px solid var(--rfp-border);border-radius:6px;padding:.3em .6em;margin:0;min-height:40px;max-width:100%}
.rf-playground input.rfp-digits{font:600 1.3em/1.2 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;letter-spacing:.14em;width:9.6em;max-width:100%;padding:.25em .5em}
.rf-playground button{cursor:pointer}.rf-playground button:hover{border-color:var(--rfp-primary)}
.rf-playground button.rfp-random{background:var(--rfp-primary);border-color:var(--rfp-primary);color:var(--rfp-on-primary);font-weight:600;padding:.3em .9em}
.rf-playground button.rfp-random:hover{filter:brightness(1.1)}
.rf-playground select{appearance:none;-webkit-appearance:none;padding-right:2.2em;text-overflow:ellipsis;background-image:linear-gradient(45deg,transparent 50%,currentColor 50%),linear-gradient(135deg,currentColor 50%,transparent 50%);background-position:calc(100% - 15px) 55%,calc(100% - 10px) 55%;background-size:5px 5px;background-repeat:no-repeat}
.rf-playground select.rfp-group{width:100%}
.rf-playground :focus-visible{outline:2px solid var(--rfp-primary);outline-offset:2px}
.rf-playground .rfp-switch{flex-direction:row;align-items:center;gap:.5em;flex-wrap:wrap;min-height:40px}
.rf-playground .rfp-switch>label{font-size:1em;font-weight:500;color:var(--rfp-text);padding:.6em 0;cursor:pointer}
.rf-playground input.rfp-mask{appearance:none;-webkit-appearance:none;position:relative;flex:none;box-sizing:border-box;width:44px;height:40px;margin:0;border:8px solid transparent;border-width:8px 0;border-radius:12px/20px;background:var(--rfp-muted);background-clip:padding-box;cursor:pointer;transition:background-color .15s}
.rf-playground input.rfp-mask::before{content:"";position:absolute;top:3px;left:3px;width:18px;height:18px;border-radius:50%;background:var(--rfp-field);transition:transform .15s}
.rf-playground input.rfp-mask:checked{background-color:var(--rfp-primary)}.rf-playground input.rfp-mask:checked::before{transform:translateX(20px)}
.rf-playground .rfp-mask-note{font-size:.875em;color:var(--rfp-muted)}
.rf-playground .rfp-error{min-height:1.3em;line-height:1.3;margin:-.6em 0 -.4em;color:var(--rfp-danger);font-weight:600;font-size:.875em}
.rf-playground .rfp-sr{position:absolute!important;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
.rf-playground table{border-collapse:collapse;margin:0;color:inherit;background:transparent;font-variant-numeric:tabular-nums}
.rf-playground th,.rf-playground td{border:0;background:transparent;color:inherit}
.rf-playground caption,.rf-playground details.rfp-fold>summary{caption-side:top;text-align:left;padding:0 0 .35em;font-size:.875em;font-weight:600;color:var(--rfp-muted)}
.rf-playground table.rfp-answer{display:block;position:relative;width:auto}
.rf-playground table.rfp-answer caption{display:block}
.rf-playground table.rfp-answer tbody{display:flex;flex-wrap:wrap;gap:.3em}
.rf-playground tr.rfp-chip{display:flex;flex-direction:column;flex:1 0 2.75em;max-width:4.4em;border:1px solid var(--rfp-border);border-top:3px solid var(--rfp-success);border-radius:8px;background:var(--rfp-surface);text-align:center;overflow:hidden}
.rf-playground tr.rfp-chip>*{display:block;padding:0 1px;text-align:center;white-space:nowrap}
.rf-playground th.rfp-at{font-size:.875em;font-weight:600;color:var(--rfp-muted);padding-top:.15em}
.rf-playground th.rfp-at::after{content:" \\2713";color:var(--rfp-success)}
.rf-playground tr.rfp-wrong th.rfp-at::after{content:" \\2717";color:var(--rfp-danger)}
.rf-playground td.rfp-tok{font:700 1.3em/1.3 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.rf-playground td.rfp-tok.rfp-special{font-size:.86em;line-height:1.965}
.rf-playground td.rfp-prob{font-size:.875em;font-stretch:condensed;letter-spacing:-.01em;color:var(--rfp-muted)}
.rf-playground td.rfp-want{font:.875em/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:var(--rfp-muted);border-top:1px dashed var(--rfp-border);margin-top:.2em}
.rf-playground td.rfp-want.rfp-special{font-size:.86em;line-height:1.526}
.rf-playground tr.rfp-chip.rfp-wrong{border-color:var(--rfp-danger);background:color-mix(in srgb,var(--rfp-danger) 15%,transparent)}
.rf-playground td.rfp-wrong{color:var(--rfp-danger)}
.rf-playground tr.rfp-wrong td.rfp-want{color:var(--rfp-text);font-weight:700}
.rf-playground .rfp-pct{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)}
@container rfp (max-width:420px){.rf-playground table.rfp-answer tbody{gap:.2em}.rf-playground tr.rfp-chip{flex-basis:2.3em}.rf-playground tr.rfp-chip>*{padding:0}}
@container rfp (max-width:300px){.rf-playground td.rfp-special{letter-spacing:-.07em}.rf-playground td.rfp-prob{font-size:11px;letter-spacing:-.03em}}
.rf-playground .rfp-legend{margin-top:.3em;font-size:.875em;color:var(--rfp-muted)}.rf-playground .rfp-legend-key{margin-right:.35em}.rf-playground .rfp-legend>span:nth-child(4)::after{content:" (%)"}
.rf-playground[lang^="zh"] .rfp-legend>span:nth-child(4)::after,html[lang^="zh"] .rf-playground .rfp-legend>span:nth-child(4)::after{content:"\\FF08%\\FF09"}
.rf-playground .rfp-verdict{min-height:1.45em;margin-top:.45em;font-weight:600;font-size:.95em}
.rf-playground :is(.rfp-note,.rfp-readout,.rfp-legend,caption,summary,.rfp-build){text-wrap:pretty}
.rf-playground[lang^=zh] :is(.rfp-verdict,.rfp-legend){word-break:keep-all;overflow-wrap:anywhere;line-break:strict}
.rf-playground .rfp-verdict.rfp-ok{color:var(--rfp-success)}.rf-playground .rfp-verdict.rfp-bad{color:var(--rfp-danger)}
.rf-playground details.rfp-fold{border:1px solid var(--rfp-border);border-radius:8px;padding:.35em .7em .45em;margin:0}
.rf-playground details.rfp-fold>summary{cursor:pointer;padding:.1em 0}
.rf-playground details.rfp-fold[open]>summary{margin-bottom:.3em}
.rf-playground table.rfp-loss{width:100%;font-size:.875em}
.rf-playground table.rfp-loss th,.rf-playground table.rfp-loss td{padding:.05em .25em;text-align:right}
.rf-playground table.rfp-loss th[scope=col]{font-size:1em;font-weight:600;color:var(--rfp-muted);vertical-align:bottom;word-break:keep-all}
.rf-playground table.rfp-loss td.rfp-pos,.rf-playground table.rfp-loss th[scope=row],.rf-playground table.rfp-loss th:first-child{text-align:left;white-space:nowrap}
@media (max-width:360px){.rf-playground details.rfp-loss-box{overflow-x:auto}.rf-playground table.rfp-loss{font-size:.75em}.rf-playground table.rfp-loss th,.rf-playground table.rfp-loss td{padding:.05em .15em}.rf-playground table.rfp-loss td.rfp-loss-bar,.rf-playground table.rfp-loss th:last-child,.rf-playground table.rfp-loss tr.rfp-loss-mean td:last-child{display:none}}
.rf-playground table.rfp-loss th[scope=row]{font-weight:600}
.rf-playground tr.rfp-loss-mean{border-top:1px solid var(--rfp-border)}
.rf-playground td.rfp-loss-bar{width:20%}.rf-playground td.rfp-loss-bar div{height:.6em;border-radius:2px;background:var(--rfp-primary)}
.rf-playground .rfp-view{display:flex;flex-direction:column;gap:.5em}
.rf-playground .rfp-thumbs{display:grid;grid-template-columns:auto repeat(var(--rfp-heads),minmax(0,3.2em));gap:.25em .35em;align-items:center;justify-content:start}
.rf-playground .rfp-thumb-head,.rf-playground .rfp-thumb-layer{font-size:.875em;color:var(--rfp-muted);white-space:nowrap;text-align:center}
.rf-playground .rfp-thumb-layer{text-align:right;padding-right:.2em}
.rf-playground button.rfp-thumb{display:block;width:100%;min-height:0;padding:2px;line-height:0;border-radius:5px;background:var(--rfp-surface)}
.rf-playground button.rfp-thumb canvas{display:block;width:100%;height:auto;aspect-ratio:1;image-rendering:pixelated;border-radius:2px}
.rf-playground button.rfp-thumb.rfp-off{position:relative}.rf-playground button.rfp-thumb.rfp-off canvas{opacity:.3}
.rf-playground button.rfp-thumb.rfp-off::after{content:"";position:absolute;inset:2px;border-radius:2px;background:linear-gradient(to top right,transparent calc(50% - 1.5px),var(--rfp-bad,#c62828) calc(50% - 1.5px),var(--rfp-bad,#c62828) calc(50% + 1.5px),transparent calc(50% + 1.5px))}
.rf-playground button.rfp-thumb[aria-pressed=true]{border-color:var(--rfp-primary);box-shadow:0 0 0 2px var(--rfp-primary)}
.rf-playground .rfp-absent{visibility:hidden}
.rf-playground .rfp-selects{gap:.4em .8em;align-items:center}.rf-playground .rfp-selects:empty{display:none}
.rf-playground .rfp-selects .rfp-field{flex-direction:row;align-items:center;gap:.4em}
.rf-playground .rfp-selects select{padding-top:.15em;padding-bottom:.15em}
.rf-playground .rfp-knockout{display:flex;flex-direction:column;gap:.35em}
.rf-playground fieldset.rfp-ko-layer{display:flex;flex-wrap:wrap;align-items:center;gap:.3em;border:0;padding:0;margin:0;min-width:0}
.rf-playground fieldset.rfp-ko-layer legend{float:left;width:100%;margin:0 0 .05em;padding:0;font-size:.875em;font-weight:600;color:var(--rfp-muted);line-height:1.3}
.rf-playground .rfp-chipbox{position:relative;display:inline-flex}
.rf-playground .rfp-chipbox input{position:absolute;inset:0;width:100%;height:100%;margin:0;opacity:0;cursor:pointer;z-index:1}
.rf-playground .rfp-chipbox label{display:inline-flex;align-items:center;min-height:40px;margin:0;padding:0 .5em;border:1px solid var(--rfp-border);border-radius:999px;background:var(--rfp-surface);font-size:.875em;white-space:nowrap}
.rf-playground .rfp-chipbox input:hover+label{border-color:var(--rfp-primary)}
.rf-playground .rfp-chipbox input:checked+label{background:var(--rfp-danger);border-color:var(--rfp-danger);color:var(--rfp-on-danger);text-decoration:line-through}
.rf-playground .rfp-chipbox input:indeterminate+label{border-color:var(--rfp-danger);border-style:dashed}
.rf-playground .rfp-chipbox input:focus-visible+label{outline:2px solid var(--rfp-primary);outline-offset:2px}
.rf-playground .rfp-note{font-size:.875em;color:var(--rfp-muted);min-height:4.35em}
.rf-playground .rfp-readout{min-height:1.9em;padding:.25em .6em;border-radius:6px;background:var(--rfp-surface);font:600 .875em/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
.rf-playground .rfp-readout.rfp-hint{font:.875em/1.45 system-ui,sans-serif;color:var(--rfp-muted)}
.rf-playground .rfp-body{width:100%;max-width:30em;aspect-ratio:388/525}
.rf-playground .rfp-body svg{display:block;width:100%;height:auto;touch-action:manipulation}
.rf-playground svg text{fill:currentColor;font-family:system-ui,sans-serif}
.rf-playground svg text.rfp-hot{fill:var(--rfp-primary);font-weight:700}
.rf-playground svg .rfp-cell{cursor:crosshair}
.rf-playground svg .rfp-hatch-bg{fill:var(--rfp-surface)}.rf-playground svg .rfp-hatch-line{stroke:var(--rfp-border)}
.rf-playground svg .rfp-hover{fill:none;pointer-events:none}.rf-playground svg .rfp-hover-halo{stroke:#fff;stroke-width:5}.rf-playground svg .rfp-hover-ring{stroke:#000;stroke-width:2}
.rf-playground svg .rfp-strip-bg{fill:var(--rfp-surface)}.rf-playground svg .rfp-strip-bar{fill:var(--rfp-primary)}
.rf-playground table.rfp-bars{font-size:.875em}
.rf-playground table.rfp-bars td{padding:0 .4em;height:1.4em;white-space:nowrap}
.rf-playground td.rfp-bar-cell{width:9em}.rf-playground .rfp-bar{height:.6em;border-radius:2px;background:var(--rfp-primary)}
.rf-playground td.rfp-value{text-align:right}.rf-playground tr.rfp-expected td{font-weight:700}
.rf-playground .rfp-build{margin-top:.9em;font-size:.875em;color:var(--rfp-muted)}
.rf-playground.rfp-stale .rfp-body,.rf-playground.rfp-stale table,.rf-playground.rfp-stale .rfp-thumbs,
.rf-playground.rfp-stale :is(.rfp-verdict,.rfp-readout){opacity:.45}
</style>"""


PLAYGROUND_JS = Path(__file__).resolve().parent / "web" / "playground.js"


def _script(uid: str) -> str:
    """The playground's inline script (``web/playground.js``) for the element ``uid``."""
    return "<script>\n" + PLAYGROUND_JS.read_text(encoding="utf-8").replace("__ID__", json.dumps(uid)) + "</script>"


# ---- timings, for the benchmark ---------------------------------------------

def browser_timings(experiment=None, repeats: int = 50, chromium: str = "/usr/bin/chromium", browser=None) -> dict:
    """Measure in headless Chromium: one forward pass (14 tokens) and the playground's first drawing.

    Returns milliseconds: ``forward_ms`` (median of ``repeats`` passes after a
    warm-up), ``forward_min_ms``, ``generate_ms`` (one answer, seven steps),
    ``first_draw_ms`` (from the playground's script starting to its first
    drawing: the weights decoded, the answer generated, the attention and the
    losses computed, the heatmap drawn), ``page_ready_ms`` (from navigation to
    that drawing, the 1.1 MB of weights parsed), and ``export_bytes``.
    ``experiment``: as for ``export_weights``; None loads the cached one.
    ``browser``: a Playwright browser to use (else headless ``chromium`` is started).
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive int, got {repeats!r}")
    from playwright.sync_api import sync_playwright

    if experiment is None:
        from .experiment import load_experiment

        experiment = load_experiment(progress=False)
    with tempfile.TemporaryDirectory(prefix="revformer-web-") as folder:
        export_weights(experiment, folder)
        page = Path(folder) / "playground.html"
        page.write_text("<!doctype html><html><head><meta charset='utf-8'><title>playground</title></head><body>"
                        + playground(script_base="./").html + "</body></html>", encoding="utf-8")
        if browser is not None:
            measured = _measure(browser, page, repeats)
        else:
            with sync_playwright() as p:
                launched = p.chromium.launch(executable_path=chromium, args=[
                    "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
                try:
                    measured = _measure(launched, page, repeats)
                finally:
                    launched.close()
        size = export_size(folder)
    return dict(measured, export_bytes=size)


def _measure(browser, page: Path, repeats: int) -> dict:
    context = browser.new_context()
    try:
        tab = context.new_page()
        tab.goto(page.as_uri(), wait_until="load")
        tab.wait_for_selector(".rf-playground[data-first-draw-ms]", timeout=20000)
        first = float(tab.locator(".rf-playground").get_attribute("data-first-draw-ms"))
        ready = float(tab.locator(".rf-playground").get_attribute("data-drawn-at-ms"))
        times = tab.evaluate("""(repeats) => {
          const M = window.revformerModel, ids = [10, 3, 1, 4, 2, 0, 5, 11, 5, 0, 2, 4, 1, 3], out = [];
          for (let i = 0; i < 5; i++) { M.forward('four_heads', ids); }
          for (let i = 0; i < repeats; i++) {
            const t = performance.now(); M.forward('four_heads', ids); out.push(performance.now() - t);
          }
          const g = performance.now();
          for (let i = 0; i < repeats; i++) { M.generate('four_heads', [3, 1, 4, 2, 0, 5]); }
          return {forward: out, generate: (performance.now() - g) / repeats};
        }""", repeats)
    finally:
        context.close()
    return {"forward_ms": statistics.median(times["forward"]), "forward_min_ms": min(times["forward"]),
            "generate_ms": times["generate"], "first_draw_ms": first, "page_ready_ms": ready}


def main(out_dir, cache_dir=None) -> dict[str, Path]:
    """``python -m revformer web --out DIR``: export the cached experiment's weights."""
    from .experiment import load_experiment

    return export_weights(load_experiment(cache_dir=cache_dir, progress=False), out_dir)


__all__ = ["CONTROLS", "MAX_EXPORT_BYTES", "Playground", "SITE_URL", "WEB_URL", "browser_timings",
           "Beside", "beside", "chapter_explorer", "export_size", "export_weights", "landing_playground", "playground",
           "show_model_js", "weights_record", "weights_script"]
