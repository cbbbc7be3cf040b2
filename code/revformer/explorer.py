"""The live attention explorer: type six digits, pick a layer, a head and a query row.

``live_explorer(model)`` is an ipywidgets explorer that recomputes with the
model in the notebook's kernel (Colab, Jupyter, Binder). In the static book
build no kernel runs, so it shows an explorer that needs none instead
(``revformer.web.chapter_explorer``: the same trained model, computed in the
reader's browser), with one line saying so.

Weights are ``[L,H,T,T]`` indexed ``[layer, head, query, key]``.
"""
from __future__ import annotations

import os

from .data import PROMPT_LEN

STATIC_ENV = "REVFORMER_STATIC_BUILD"


def _palette(name: str, stops: int = 64) -> list[str]:
    import matplotlib

    cmap = matplotlib.colormaps[name]
    return [matplotlib.colors.to_hex(cmap(i / (stops - 1))) for i in range(stops)]


class LiveExplorer:
    """An ipywidgets explorer over a trained model (Colab, Jupyter, Binder).

    Type six digits: the model generates its answer from the prompt, then the
    teacher-forced sequence (prompt + its own answer) is run once more to get
    the attention of every layer. Pick layer, head and query row; toggle the
    mask and both the attention and the answer are recomputed.
    """

    def __init__(self, model, digits: str = "314205"):
        import ipywidgets as widgets

        from .i18n import language, tr

        self.model = model
        self.language = lang = language()
        heads = model.blocks[0].attention.num_heads
        self.digits = widgets.Text(value=digits, description=tr(LABELS["digits"], lang))
        self.layer = widgets.Dropdown(options=[(tr(LABELS["layer"], lang, layer=i), i) for i in range(len(model.blocks))],
                                      description=tr(LABELS["layer_label"], lang))
        self.head = widgets.Dropdown(options=[(tr(LABELS["head"], lang, head=i), i) for i in range(heads)]
                                     + [(tr(LABELS["mean"], lang), "mean")], description=tr(LABELS["head_label"], lang))
        self.row = widgets.Dropdown(options=list(range(2 * PROMPT_LEN - 2)), value=PROMPT_LEN - 1,
                                    description=tr(LABELS["row"], lang))
        self.causal = widgets.Checkbox(value=True, description=tr(LABELS["mask"], lang))
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
        from .i18n import tr
        from .plots import ATTENTION_CMAP, heatmap
        from .quiz import ascii_digits

        lang = self.language
        text = "".join(ascii_digits(self.digits.value).split())  # full-width digits and spaces too
        if len(text) != 6 or not all(c in "0123456789" for c in text):
            self.weights = self.answer = None
            self.status.value = tr(LABELS["bad"], lang, text=html_lib.escape(repr(self.digits.value)))
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
        verdict = tr(LABELS["right"], lang) if ok else tr(LABELS["wrong"], lang,
                                                           expected=" ".join(right) + " &lt;EOS&gt;")
        self.status.value = tr(LABELS["status"], lang, answer=html_lib.escape(self.answer), verdict=verdict, row=row,
                               label=html_lib.escape(labels[row]), next=html_lib.escape(format_tokens([full[row + 1]])))
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


# The widgets' labels and the status line, in English; the kernel's language from the catalogue
# (revformer.i18n). The figure's texts are looked up like every figure's of the book.
LABELS = {"digits": "digits", "layer": "layer {layer}", "layer_label": "layer", "head": "head {head}",
          "head_label": "head", "mean": "mean of heads", "row": "query row", "mask": "causal mask",
          "bad": "<b>Type exactly six digits 0-9</b> (got {text}).",
          "status": "Model's answer: <b>{answer}</b> ({verdict}); query {row} ({label}) predicts {next}.",
          "right": "right", "wrong": "wrong: expected {expected}"}


def live_explorer(model, digits: str = "314205", static=None):
    """The live explorer; in the static book build, ``static`` instead.

    The book build sets ``REVFORMER_STATIC_BUILD=1``: a widget executed there
    would freeze in the HTML, so the page shows ``static``, an explorer that
    needs no kernel (``revformer.web.chapter_explorer(10)``: the same model,
    computed in the reader's browser).
    """
    if os.environ.get(STATIC_ENV, "") not in ("", "0"):
        if static is None:
            raise ValueError("in the static build, live_explorer needs static=, an explorer that runs without a "
                             "kernel, such as revformer.web.chapter_explorer(10)")
        return static
    return LiveExplorer(model, digits)
