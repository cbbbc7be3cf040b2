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
}
TITLES = {"playground": "The model in your browser",
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
    from .i18n import LANGUAGES, Both, tr

    if language not in (None, *LANGUAGES):
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)} (or None for both), got {language!r}")
    from .explorer import _palette

    def made(lang):
        return Playground({
            "title": tr(title, lang) if title else "", "digits": digits_text, "groups": groups,
            "groupText": {g: tr(GROUP_TEXT[g], lang) for g in groups}, "controls": controls, "maxHeads": heads,
            "layer": layer, "head": str(head), "row": row, "scripts": script_base,
            "palette": _palette("cividis"), "language": lang, "text": text(lang),
        })

    return made(language) if language else Both(made("en"), made("zh_CN"))


def chapter_explorer(chapter: int, digits="314205", script_base: str = WEB_URL, language: str | None = None):
    """The playground as the explorer of chapter 10, 11 or 12.

    10 (heatmaps): four_heads and one_head, the heatmap's controls;
    11 (the mask off): four_heads and no_mask, with the mask toggle;
    12 (ablations): the three groups, with the knockout boxes and the loss.
    """
    settings = {
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
        raise ValueError(f"chapter must be 10, 11 or 12 (the chapters with an explorer), got {chapter!r}")
    return playground(digits, script_base=script_base, language=language, **settings[chapter])


def _markup(uid: str, o: dict) -> str:
    """The static controls and the reserved places the script fills."""
    shown = set(o["controls"])
    e = html.escape
    t = {k: e(v) for k, v in o["text"].items()}
    parts = []
    if o["title"]:
        parts.append(f'<div class="rfp-title">{e(o["title"])}</div>')
    top = []
    if "digits" in shown:
        top.append(f'<span class="rfp-field"><label for="{uid}-digits">{t["sixDigits"]}</label>'
                   f'<input id="{uid}-digits" class="rfp-digits" type="text" inputmode="numeric" autocomplete="off"'
                   f' spellcheck="false" size="8" maxlength="12" value="{e(o["digits"])}"'
                   f' aria-describedby="{uid}-error"></span>')
    else:
        top.append(f'<span class="rfp-field">{t["digits"]} <b class="rfp-fixed">{" ".join(o["digits"])}</b></span>')
    if "random" in shown:
        top.append(f'<button type="button" class="rfp-random">{t["random"]}</button>')
    if "group" in shown and len(o["groups"]) > 1:
        options = "".join(f'<option value="{e(g)}">{e(o["groupText"][g])}</option>' for g in o["groups"])
        top.append(f'<span class="rfp-field"><label for="{uid}-group">{t["model"]}</label>'
                   f'<select id="{uid}-group" class="rfp-group">{options}</select></span>')
    else:
        top.append(f'<span class="rfp-field">{t["modelFixed"]} <b>{e(o["groupText"][o["groups"][0]])}</b></span>')
    if "mask" in shown:
        top.append(f'<span class="rfp-field"><input type="checkbox" id="{uid}-mask" class="rfp-mask">'
                   f'<label for="{uid}-mask">{t["causalMask"]}</label> <span class="rfp-mask-note"></span></span>')
    parts.append('<div class="rfp-controls">' + "".join(top) + "</div>")
    parts.append(f'<div class="rfp-error" id="{uid}-error" role="alert"></div>')
    cells = "".join(f'<td class="rfp-tok" data-i="{i}">&nbsp;</td>' for i in range(7))
    probs = "".join(f'<td class="rfp-prob" data-i="{i}">&nbsp;</td>' for i in range(7))
    wants = "".join(f'<td class="rfp-want" data-i="{i}">&nbsp;</td>' for i in range(7))
    heads = "".join(f"<th scope=\"col\">{8 + i}</th>" for i in range(7))
    parts.append(f'<table class="rfp-answer"><caption>{t["answer"]}</caption>'
                 f'<tr><th scope="row">{t["position"]}</th>{heads}</tr>'
                 f'<tr><th scope="row">{t["writes"]}</th>{cells}</tr>'
                 f'<tr><th scope="row">{t["probability"]}</th>{probs}</tr>'
                 f'<tr><th scope="row">{t["reversal"]}</th>{wants}</tr></table>')
    parts.append('<div class="rfp-verdict" aria-live="polite">&nbsp;</div>')
    if "knockout" in shown:
        sets = []
        for layer in range(2):
            boxes = [f'<input type="checkbox" id="{uid}-ko-{layer}-all" class="rfp-ko-all" data-layer="{layer}">'
                     f'<label for="{uid}-ko-{layer}-all">{t["allHeads"]}</label>']
            for h in range(o["maxHeads"]):
                boxes.append(f'<span class="rfp-ko-head" data-head="{h}"><input type="checkbox" id="{uid}-ko-{layer}-{h}"'
                             f' class="rfp-ko" data-layer="{layer}" data-head="{h}">'
                             f'<label for="{uid}-ko-{layer}-{h}">{t["head"].replace("{h}", str(h))}</label></span>')
            sets.append(f'<fieldset class="rfp-ko-layer"><legend>{t["knockOut"].replace("{layer}", str(layer))}</legend>'
                        + "".join(boxes) + "</fieldset>")
        parts.append('<div class="rfp-knockout">' + "".join(sets) + "</div>")
    if "loss" in shown:
        rows = "".join(f'<tr data-p="{p}"><td class="rfp-pos">&nbsp;</td><td class="rfp-loss-now">&nbsp;</td>'
                       f'<td class="rfp-loss-base">&nbsp;</td><td class="rfp-loss-bar"><div></div></td></tr>'
                       for p in range(7, 14))
        parts.append(f'<table class="rfp-loss"><caption>{t["lossCaption"]}</caption>'
                     f'<tr><th scope="col">{t["lossPosition"]}</th><th scope="col">{t["lossNow"]}</th>'
                     f'<th scope="col">{t["lossTrained"]}</th><th scope="col"></th></tr>' + rows +
                     f'<tr class="rfp-loss-mean"><th scope="row">{t["mean"]}</th><td class="rfp-loss-now">&nbsp;</td>'
                     '<td class="rfp-loss-base">&nbsp;</td><td></td></tr></table>')
    selects = []
    for name, label in (("layer", t["layerLabel"]), ("head", t["headLabel"]), ("row", t["rowLabel"])):
        if name in shown:
            selects.append(f'<span class="rfp-field"><label for="{uid}-{name}">{label}</label>'
                           f'<select id="{uid}-{name}" class="rfp-{name}"></select></span>')
    parts.append('<div class="rfp-controls rfp-view">' + "".join(selects) + "</div>")
    parts.append('<div class="rfp-note">&nbsp;</div><div class="rfp-body"></div>')
    parts.append('<div class="rfp-build">&nbsp;</div>')
    return "".join(parts)


# Captions inherit the text colour: in dark mode pydata-sphinx-theme paints an HTML output light
# (with dark text), and its own light-grey caption colour would be unreadable there (WCAG AA).
_STYLE = """<style>
.rf-playground{font:13px/1.4 system-ui,sans-serif;border:1px solid #9a9a9a;border-radius:6px;padding:.6em .8em;margin:1em 0;max-width:100%;overflow-x:auto}
.rf-playground .rfp-title{font-weight:600;margin-bottom:.4em}
.rf-playground .rfp-controls{display:flex;flex-wrap:wrap;gap:.4em 1.1em;align-items:center;margin:.3em 0}
.rf-playground .rfp-field{white-space:nowrap}.rf-playground .rfp-field label{margin:0 .3em}
.rf-playground .rfp-digits{font:15px ui-monospace,monospace;letter-spacing:.15em;width:8.5em}
.rf-playground .rfp-error{min-height:1.4em;color:#b00020;font-weight:600}
.rf-playground table{border-collapse:collapse;margin:.3em 0}.rf-playground caption{text-align:left;font-weight:600;padding:.2em 0;color:inherit}
.rf-playground th,.rf-playground td{padding:.1em .45em;text-align:center;font-variant-numeric:tabular-nums}
.rf-playground th[scope=row]{text-align:left;font-weight:normal;color:#444}
.rf-playground td.rfp-tok,.rf-playground td.rfp-want{min-width:3.3em;font:14px ui-monospace,monospace}
.rf-playground td.rfp-tok{font-weight:700}.rf-playground td.rfp-prob{min-width:3.3em;font-size:12px}
.rf-playground td.rfp-wrong{background:#fde0dc;color:#8a0010;text-decoration:underline wavy}
.rf-playground .rfp-verdict{min-height:1.4em;margin-bottom:.3em}
.rf-playground .rfp-knockout{display:flex;flex-wrap:wrap;gap:.5em}
.rf-playground fieldset{border:1px solid #c8c8c8;border-radius:4px;padding:.2em .6em;margin:0}
.rf-playground legend{font-size:1em;font-weight:600;float:none;width:auto;padding:0 .3em;margin:0;line-height:1.35}
.rf-playground fieldset label{margin-right:.6em}
.rf-playground .rfp-ko-head.rfp-absent{visibility:hidden}
.rf-playground table.rfp-loss td{min-width:4.5em}.rf-playground table.rfp-loss td.rfp-pos{text-align:left;min-width:7em}
.rf-playground td.rfp-loss-bar{width:130px;text-align:left}.rf-playground td.rfp-loss-bar div{height:10px;background:#3b528b}
.rf-playground .rfp-note{min-height:1.4em;margin:.2em 0}
.rf-playground .rfp-body{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start;min-height:420px}
.rf-playground table.rfp-bars td{padding:0 .35em;height:18px}.rf-playground .rfp-bar{height:12px;background:#3b528b}
.rf-playground tr.rfp-expected td{font-weight:700}
.rf-playground .rfp-build{color:#555;font-size:12px;margin-top:.4em}
.rf-playground.rfp-stale .rfp-body,.rf-playground.rfp-stale table{opacity:.45}
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
           "Beside", "beside", "chapter_explorer", "export_size", "export_weights", "playground", "show_model_js", "weights_record",
           "weights_script"]
