"""Attention explorers: pick a layer, a head and a query row, and see what it reads.

``attention_explorer(...)`` returns a self-contained block of HTML and
JavaScript (the weights inline as JSON; no file, no CDN) that works in the
built book with no kernel, in Colab and in Jupyter. ``live_explorer(model)``
is an ipywidgets explorer that recomputes with the model; in the static book
build it shows the static explorer instead, with one line saying so.

Weights are ``[L,H,T,T]`` indexed ``[layer, head, query, key]``, or
``[S,L,H,T,T]`` with one ``[L,H,T,T]`` per sample.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from .analysis import ANSWER_QUERIES, reversal_key
from .data import PROMPT_LEN, token_name
from .quiz import element_id

STATIC_ENV = "REVFORMER_STATIC_BUILD"


def _palette(name: str, stops: int = 64) -> list[str]:
    import matplotlib

    cmap = matplotlib.colormaps[name]
    return [matplotlib.colors.to_hex(cmap(i / (stops - 1))) for i in range(stops)]


def _as_sets(weights) -> dict:
    if isinstance(weights, dict):
        if not weights:
            raise ValueError("weights is an empty mapping: give at least one named set")
        return {str(k): np.asarray(v, dtype=float) for k, v in weights.items()}
    return {"weights": np.asarray(weights, dtype=float)}


def _token_rows(tokens, samples: int, length: int) -> list[list[str]]:
    rows = np.asarray(tokens)
    if rows.ndim == 1:
        rows = rows[None]
    if rows.ndim != 2 or rows.shape[0] != samples:
        raise ValueError(f"tokens must be [T] or [S,T] with S = {samples} samples, got shape {list(rows.shape)}")
    if rows.shape[1] not in (length, length + 1):
        raise ValueError(f"tokens must have {length} entries (the inputs) or {length + 1} (with the token "
                         f"after the last input), got {rows.shape[1]}")
    return [[token_name(int(t)) for t in row] for row in rows]


@dataclass(frozen=True)
class StaticExplorer:
    """The data of one explorer and its HTML (``_repr_html_``)."""

    data: dict

    @property
    def html(self) -> str:
        return self._repr_html_()

    def _repr_html_(self) -> str:
        payload = json.dumps(self.data, separators=(",", ":")).replace("<", "\\u003c")  # no markup
        uid = element_id("rfx", payload)
        return (_STYLE + f'<div class="rf-explorer" id="{uid}">'
                f'<script type="application/json" class="rf-explorer-data">{payload}</script></div>'
                + _SCRIPT.replace("__ID__", json.dumps(uid)))


def attention_explorer(weights, tokens, title: str | None = None, sample_names=None,
                       digits: int = 3) -> StaticExplorer:
    """A static explorer over one or several named sets of attention weights.

    ``weights``: ``[L,H,T,T]``, ``[S,L,H,T,T]``, or a mapping from a set's name
    to such an array (all sets with the same L, T and S; H may differ, as
    between four heads and one). A set with negative values (a difference)
    is drawn on a diverging scale from -1 to 1, the others from 0 to 1.
    ``tokens``: ``[T]`` or ``[S,T]`` input tokens, or ``T+1`` tokens per sample so
    that the last row also shows the token it predicts.
    """
    sets = _as_sets(weights)
    shapes = {}
    for name, w in sets.items():
        if w.ndim == 4:
            w = w[None]
        if w.ndim != 5 or w.shape[-1] != w.shape[-2] or w.shape[-1] == 0:
            raise ValueError(f"set {name!r}: weights must be [L,H,T,T] or [S,L,H,T,T], got {list(np.shape(sets[name]))}")
        if not np.isfinite(w).all():
            raise ValueError(f"set {name!r} holds NaN or infinite values")
        sets[name] = w
        shapes[name] = w.shape
    first = next(iter(shapes.values()))
    for name, shape in shapes.items():
        if (shape[0], shape[1], shape[3]) != (first[0], first[1], first[3]):
            raise ValueError(f"set {name!r} has shape {list(shape)}, which does not match {list(first)} "
                             "in samples, layers or positions")
    samples, layers, _, length, _ = first
    token_rows = _token_rows(tokens, samples, length)
    names = list(sample_names) if sample_names is not None else [f"sample {i}" for i in range(samples)]
    if len(names) != samples:
        raise ValueError(f"sample_names has {len(names)} names for {samples} samples")
    scale = 10 ** digits
    data = {
        "title": title or "",
        "length": int(length),
        "layers": int(layers),
        "samples": [str(n) for n in names],
        "tokens": token_rows,
        "sets": [],
        "marks": {
            "dividers": length == 2 * PROMPT_LEN - 2,  # the book's 14-position layout
            "expected": [[q, reversal_key(q)] for q in ANSWER_QUERIES] if length == 2 * PROMPT_LEN - 2 else [],
        },
        "digits": digits,
        "palette": _palette("cividis"),
        "diverging": _palette("RdBu_r"),
    }
    upper = np.triu(np.ones((length, length), dtype=bool), 1)
    for name, w in sets.items():
        data["sets"].append({
            "name": name,
            "heads": int(w.shape[2]),
            "diverging": bool((w < 0).any()),
            "masked": bool((w[..., upper] == 0).all()),
            # integers at 10^-digits: compact, and exact to the shown precision
            "w": np.rint(w * scale).astype(int).tolist(),
        })
    return StaticExplorer(data)


def explorer_weights(explorer: StaticExplorer, name: str | None = None) -> np.ndarray:
    """The weights stored in ``explorer`` for set ``name``: ``[S,L,H,T,T]``."""
    sets = explorer.data["sets"]
    chosen = next((s for s in sets if name is None or s["name"] == name), None)
    if chosen is None:
        raise ValueError(f"no set named {name!r}; sets: {[s['name'] for s in sets]}")
    return np.asarray(chosen["w"], dtype=float) / 10 ** explorer.data["digits"]


_STYLE = """<style>
.rf-explorer{font:13px/1.35 system-ui,sans-serif;border:1px solid #9a9a9a;border-radius:6px;padding:.6em .8em;margin:1em 0;max-width:100%;overflow-x:auto}
.rf-explorer .rfx-title{font-weight:600;margin-bottom:.3em}
.rf-explorer .rfx-controls{display:flex;flex-wrap:wrap;gap:.4em 1em;margin-bottom:.5em}
.rf-explorer label{white-space:nowrap}.rf-explorer select{margin-left:.3em}
.rf-explorer .rfx-body{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}
.rf-explorer .rfx-note{margin:.2em 0 .4em}
.rf-explorer table.rfx-bars{border-collapse:collapse}.rf-explorer table.rfx-bars td{padding:0 .35em;height:18px}
.rf-explorer .rfx-bar{height:12px;background:#3b528b}.rf-explorer .rfx-bar.neg{background:#b2182b}
.rf-explorer tr.rfx-expected td{font-weight:700}
</style>"""

_SCRIPT = r"""<script>
(function () {
  var root = document.getElementById(__ID__);
  if (!root || root.dataset.ready) { return; }
  root.dataset.ready = "1";
  var D = JSON.parse(root.querySelector("script.rf-explorer-data").textContent);
  var T = D.length, SVGNS = "http://www.w3.org/2000/svg", scale = Math.pow(10, D.digits);
  function el(tag, attrs, text, ns) {
    var e = ns ? document.createElementNS(SVGNS, tag) : document.createElement(tag);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function select(label, cls, options) {
    var l = el("label", {}, label), s = el("select", {"class": cls});
    options.forEach(function (o, i) { s.appendChild(el("option", {value: String(i)}, o)); });
    l.appendChild(s); return [l, s];
  }
  if (D.title) { root.appendChild(el("div", {"class": "rfx-title"}, D.title)); }
  var bar = el("div", {"class": "rfx-controls"}); root.appendChild(bar);
  var controls = {};
  function add(name, label, options) {
    var pair = select(label, "rfx-" + name, options); bar.appendChild(pair[0]); controls[name] = pair[1];
    pair[1].addEventListener("change", draw); return pair[1];
  }
  if (D.sets.length > 1) { add("set", "set", D.sets.map(function (s) { return s.name; })); }
  if (D.samples.length > 1) { add("sample", "sample", D.samples); }
  var layers = []; for (var i = 0; i < D.layers; i++) { layers.push("layer " + i); }
  add("layer", "layer", layers);
  var head = add("head", "head", []);
  var rows = []; for (var q = 0; q < T; q++) { rows.push(String(q)); }
  add("row", "query row", rows);
  function setIndex() { return controls.set ? Number(controls.set.value) : 0; }
  function fillHeads() {
    var s = D.sets[setIndex()], keep = head.value;
    head.innerHTML = "";
    for (var h = 0; h < s.heads; h++) { head.appendChild(el("option", {value: String(h)}, "head " + h)); }
    head.appendChild(el("option", {value: "mean"}, "mean of heads"));
    if (keep && (keep === "mean" || Number(keep) < s.heads)) { head.value = keep; }
  }
  if (controls.set) { controls.set.addEventListener("change", fillHeads); }
  fillHeads();
  controls.row.value = String(Math.min(7, T - 1));
  var note = el("div", {"class": "rfx-note"}); root.appendChild(note);
  var body = el("div", {"class": "rfx-body"}); root.appendChild(body);
  function label(toks, i) { return i + " " + toks[i]; }
  function color(s, v) {
    if (s.diverging) {
      var x = Math.max(-1, Math.min(1, v));
      return D.diverging[Math.round((x + 1) / 2 * (D.diverging.length - 1))];
    }
    return D.palette[Math.round(Math.max(0, Math.min(1, v)) * (D.palette.length - 1))];
  }
  function matrix(s, sample, layer, h) {
    var W = s.w[sample][layer], out = [];
    for (var q = 0; q < T; q++) {
      out.push([]);
      for (var k = 0; k < T; k++) {
        var v;
        if (h === "mean") { v = 0; for (var j = 0; j < s.heads; j++) { v += W[j][q][k]; } v /= s.heads * scale; }
        else { v = W[Number(h)][q][k] / scale; }
        out[q].push(v);
      }
    }
    return out;
  }
  function draw() {
    var s = D.sets[setIndex()], sample = controls.sample ? Number(controls.sample.value) : 0;
    var layer = Number(controls.layer.value), h = head.value, row = Number(controls.row.value);
    var toks = D.tokens[sample], M = matrix(s, sample, layer, h);
    var next = row + 1 < toks.length ? toks[row + 1] : "?";
    note.textContent = "Query " + row + " (" + toks[row] + ") predicts the next token: " + next +
      (s.diverging ? ". Colours: change of weight, -1 (blue) to +1 (red)." : ". Colours: weight, 0 to 1.");
    body.innerHTML = "";
    var c = 22, left = 64, top = 64, size = left + c * T + 8;
    var svg = el("svg", {width: size, height: top + c * T + 44, role: "img",
      "aria-label": "attention of " + s.name + ", layer " + layer + ", " + (h === "mean" ? "mean of heads" : "head " + h) +
      "; rows are queries, columns keys", "class": "rfx-heatmap"}, undefined, true);
    var defs = el("defs", {}, undefined, true), pat = el("pattern", {id: __ID__ + "-hatch", width: 5, height: 5,
      patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)"}, undefined, true);
    pat.appendChild(el("rect", {width: 5, height: 5, fill: "#f2f2f2"}, undefined, true));
    pat.appendChild(el("line", {x1: 0, y1: 0, x2: 0, y2: 5, stroke: "#b0b0b0", "stroke-width": 2}, undefined, true));
    defs.appendChild(pat); svg.appendChild(defs);
    for (var i = 0; i < T; i++) {
      svg.appendChild(el("text", {x: left - 4, y: top + c * i + c * 0.7, "text-anchor": "end", "font-size": 10,
        "font-weight": i === row ? "bold" : "normal"}, label(toks, i), true));
      svg.appendChild(el("text", {x: 0, y: 0, "font-size": 10, "text-anchor": "start",
        transform: "translate(" + (left + c * i + c * 0.65) + "," + (top - 4) + ") rotate(-90)"}, label(toks, i), true));
    }
    svg.appendChild(el("text", {x: left, y: 10, "font-size": 10}, "key (position, token) \u2192", true));
    for (var q = 0; q < T; q++) {
      for (var k = 0; k < T; k++) {
        var masked = s.masked && k > q;
        svg.appendChild(el("rect", {x: left + c * k, y: top + c * q, width: c, height: c,
          fill: masked ? "url(#" + __ID__ + "-hatch)" : color(s, M[q][k]), "class": "rfx-cell",
          "data-q": q, "data-k": k, "data-value": M[q][k].toFixed(D.digits)}, undefined, true));
      }
    }
    if (D.marks.dividers) {
      svg.appendChild(el("line", {x1: left, x2: left + c * T, y1: top + c * 7, y2: top + c * 7, stroke: "#ffffff",
        "stroke-width": 2, "class": "rfx-divider-query"}, undefined, true));
      svg.appendChild(el("line", {x1: left + c * 8, x2: left + c * 8, y1: top, y2: top + c * T, stroke: "#ffffff",
        "stroke-width": 2, "stroke-dasharray": "4 3", "class": "rfx-divider-key"}, undefined, true));
    }
    D.marks.expected.forEach(function (p) {
      svg.appendChild(el("rect", {x: left + c * p[1] + 1, y: top + c * p[0] + 1, width: c - 2, height: c - 2,
        fill: "none", stroke: "#ff3b30", "stroke-width": 2, "class": "rfx-expected"}, undefined, true));
    });
    svg.appendChild(el("rect", {x: left - 1, y: top + c * row, width: c * T + 2, height: c, fill: "none",
      stroke: "#e6007e", "stroke-width": 2.5, "class": "rfx-row"}, undefined, true));
    var lo = s.diverging ? -1 : 0, steps = 28, cw = c * T / steps, by = top + c * T + 10;
    for (var b = 0; b < steps; b++) {
      svg.appendChild(el("rect", {x: left + b * cw, y: by, width: cw + 0.5, height: 10,
        fill: color(s, lo + (1 - lo) * (b + 0.5) / steps)}, undefined, true));
    }
    [lo, (lo + 1) / 2, 1].forEach(function (v, i) {
      svg.appendChild(el("text", {x: left + i * c * T / 2, y: by + 22, "font-size": 10,
        "text-anchor": i === 0 ? "start" : (i === 1 ? "middle" : "end")}, String(v), true));
    });
    svg.appendChild(el("text", {x: left + c * T / 2, y: by + 33, "font-size": 10, "text-anchor": "middle"},
      s.diverging ? "change of attention weight" : "attention weight", true));
    body.appendChild(svg);
    var table = el("table", {"class": "rfx-bars"});
    table.appendChild(el("caption", {}, "weights of query row " + row));
    var expected = D.marks.expected.filter(function (p) { return p[0] === row; }).map(function (p) { return p[1]; });
    for (var k2 = 0; k2 < T; k2++) {
      var v2 = M[row][k2], tr = el("tr", {"class": expected.indexOf(k2) >= 0 ? "rfx-expected" : ""});
      tr.appendChild(el("td", {}, label(toks, k2)));
      var cell = el("td", {style: "width:160px"});
      cell.appendChild(el("div", {"class": "rfx-bar" + (v2 < 0 ? " neg" : ""),
        style: "width:" + Math.round(Math.min(1, Math.abs(v2)) * 150) + "px"}));
      tr.appendChild(cell);
      tr.appendChild(el("td", {"class": "rfx-value", "data-k": k2},
        (s.masked && k2 > row) ? "masked" : v2.toFixed(D.digits)));
      table.appendChild(tr);
    }
    body.appendChild(table);
  }
  draw();
})();
</script>"""


class LiveExplorer:
    """An ipywidgets explorer over a trained model (Colab, Jupyter, Binder).

    Type six digits: the model generates its answer from the prompt, then the
    teacher-forced sequence (prompt + its own answer) is run once more to get
    the attention of every layer. Pick layer, head and query row; toggle the
    mask and both the attention and the answer are recomputed.
    """

    def __init__(self, model, digits: str = "314205"):
        import ipywidgets as widgets

        self.model = model
        heads = model.blocks[0].attention.num_heads
        self.digits = widgets.Text(value=digits, description="digits")
        self.layer = widgets.Dropdown(options=[(f"layer {i}", i) for i in range(len(model.blocks))],
                                      description="layer")
        self.head = widgets.Dropdown(options=[(f"head {i}", i) for i in range(heads)] + [("mean of heads", "mean")],
                                     description="head")
        self.row = widgets.Dropdown(options=list(range(2 * PROMPT_LEN - 2)), value=PROMPT_LEN - 1,
                                    description="query row")
        self.causal = widgets.Checkbox(value=True, description="causal mask")
        self.status = widgets.HTML()
        self.output = widgets.Output()
        for control in (self.digits, self.layer, self.head, self.row, self.causal):
            control.observe(lambda change: self.update(), names="value")
        self.widget = widgets.VBox([
            widgets.HBox([self.digits, self.causal]),
            widgets.HBox([self.layer, self.head, self.row]),
            self.status, self.output])
        self.weights = None
        self.answer = None
        self.update()

    def update(self) -> None:
        """Recompute with the model and redraw (called on every change)."""
        import html as html_lib

        import matplotlib.pyplot as plt
        import torch

        from .analysis import attention_maps
        from .data import encode, format_tokens, position_labels
        from .generate import generate
        from .plots import ATTENTION_CMAP, heatmap

        text = self.digits.value.strip().replace(" ", "")
        if len(text) != 6 or not text.isdigit():
            self.weights = self.answer = None
            self.status.value = ("<b>Type exactly six digits 0-9</b> (got "
                                 f"{html_lib.escape(repr(self.digits.value))}).")
            self.output.clear_output()
            return
        prompt = torch.tensor([encode([int(c) for c in text])[:PROMPT_LEN]])
        causal = bool(self.causal.value)
        answer = generate(self.model, prompt, causal=causal)[0]
        self.answer = format_tokens(answer)
        tokens = torch.cat([prompt[0], answer[:-1]])  # the 14 inputs, the model's own answer
        self.weights = attention_maps(self.model, tokens, causal=causal)  # [L,H,14,14]
        layer, head, row = self.layer.value, self.head.value, self.row.value
        w = self.weights[layer].mean(axis=0) if head == "mean" else self.weights[layer, head]
        full = tokens.tolist() + [int(answer[-1])]
        labels = position_labels(tokens.tolist())
        right = text[::-1]
        ok = "".join(str(int(t)) for t in answer[:6]) == right and int(answer[6]) == 12
        self.status.value = (f"Model's answer: <b>{html_lib.escape(self.answer)}</b> "
                             f"({'right' if ok else 'wrong: expected ' + ' '.join(right) + ' <EOS>'}); "
                             f"query {row} ({html_lib.escape(labels[row])}) predicts "
                             f"{html_lib.escape(format_tokens([full[row + 1]]))}.")
        self.row_weights = w[row]
        self.output.clear_output(wait=True)
        with self.output:
            fig, (ax, bars) = plt.subplots(1, 2, figsize=(9.5, 4), gridspec_kw={"width_ratios": [1.1, 1]},
                                           constrained_layout=True)
            image = heatmap(ax, w, labels, labels, cmap=ATTENTION_CMAP, fontsize=7)
            ax.add_patch(plt.Rectangle((-0.5, row - 0.5), len(labels), 1, fill=False, ec="#e6007e", lw=2))
            ax.set_title(f"layer {layer}, {'mean of heads' if head == 'mean' else f'head {head}'}, "
                         f"mask {'on' if causal else 'off'}", fontsize=9)
            fig.colorbar(image, ax=ax, shrink=0.8, label="attention weight")
            bars.barh(range(len(labels)), w[row], color="#3b528b")
            bars.set_yticks(range(len(labels)), labels, fontsize=7)
            bars.invert_yaxis()
            bars.set_xlim(0, 1)
            bars.set_xlabel(f"weight of query row {row}")
            plt.show()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


def live_explorer(model, digits: str = "314205", static_weights=None, static_tokens=None):
    """The live explorer; in the static book build, a one-line note and the static one.

    The book build sets ``REVFORMER_STATIC_BUILD=1``: a widget executed there
    would freeze in the HTML, so the page shows ``attention_explorer`` over
    ``static_weights`` and ``static_tokens`` instead.
    """
    if os.environ.get(STATIC_ENV, "") not in ("", "0"):
        from IPython.display import HTML, display

        display(HTML("<p><em>The live explorer runs in Colab or Jupyter (open this chapter there with the "
                     "launch button); this page shows the static explorer of the same model instead.</em></p>"))
        if static_weights is None or static_tokens is None:
            raise ValueError("in the static build, live_explorer needs static_weights and static_tokens")
        return attention_explorer(static_weights, static_tokens)
    return LiveExplorer(model, digits)
