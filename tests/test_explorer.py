import numpy as np
import pytest
import torch

from revformer.analysis import attention_maps
from revformer.data import encode
from revformer.explorer import (STATIC_ENV, LiveExplorer, StaticExplorer, attention_explorer,
                                explorer_weights, live_explorer)
from revformer.generate import generate
from revformer.model import make_model


def _weights(seed=0, heads=4, samples=None):
    g = np.random.default_rng(seed)
    shape = (2, heads, 14, 14) if samples is None else (samples, 2, heads, 14, 14)
    w = g.random(shape)
    w = np.tril(w)
    return w / w.sum(-1, keepdims=True)


TOKENS = encode((0, 2, 8, 2, 2, 3))


def test_html_holds_the_weights_it_was_given():
    on, off = _weights(1), _weights(2)
    ex = attention_explorer({"mask on": on, "mask off": off, "difference": off - on}, TOKENS)
    np.testing.assert_allclose(explorer_weights(ex, "mask on")[0], on, atol=5e-4)
    np.testing.assert_allclose(explorer_weights(ex, "difference")[0], off - on, atol=5e-4)
    sets = {s["name"]: s for s in ex.data["sets"]}
    assert sets["mask on"]["masked"] and not sets["mask on"]["diverging"]
    assert sets["difference"]["diverging"]
    html = ex._repr_html_()
    assert "http" not in html.replace("http://www.w3.org/2000/svg", "")  # no CDN, no external file
    assert html.count('class="rf-explorer-data"') == 1 and len(html) < 150_000


def test_groups_with_different_head_counts_and_samples():
    ex = attention_explorer({"four_heads": _weights(1), "one_head": _weights(2, heads=1)}, TOKENS)
    assert [s["heads"] for s in ex.data["sets"]] == [4, 1]
    many = attention_explorer(_weights(3, samples=3), [TOKENS] * 3, sample_names=["a", "b", "c"])
    assert explorer_weights(many).shape == (3, 2, 4, 14, 14) and many.data["samples"] == ["a", "b", "c"]


@pytest.mark.parametrize("weights, tokens, words", [
    (np.zeros((2, 4, 14, 13)), TOKENS, r"\[L,H,T,T\]"),
    (np.zeros((4, 14, 14)), TOKENS, r"\[L,H,T,T\]"),
    (np.zeros((2, 4, 14, 14)), TOKENS[:10], "14 entries"),
    (np.zeros((3, 2, 4, 14, 14)), TOKENS, "samples"),
    ({"a": np.zeros((2, 4, 14, 14)), "b": np.zeros((1, 4, 14, 14))}, TOKENS, "does not match"),
    ({}, TOKENS, "empty"),
    (np.full((2, 4, 14, 14), np.nan), TOKENS, "NaN"),
])
def test_bad_input(weights, tokens, words):
    with pytest.raises(ValueError, match=words):
        attention_explorer(weights, tokens)


def test_labels_are_escaped():
    ex = attention_explorer({"<img src=x onerror=alert(1)>": _weights()}, TOKENS,
                            title="</script><script>alert(2)</script>")
    html = ex._repr_html_()
    assert "<img src=x" not in html and "<script>alert(2)" not in html
    assert "textContent" in html and "innerHTML = \"\"" in html  # labels go in as text, never as markup


def test_live_explorer_recomputes_with_the_model():
    model = make_model(seed=7)
    live = LiveExplorer(model, "314205")
    prompt = torch.tensor([encode((3, 1, 4, 2, 0, 5))[:8]])
    answer = generate(model, prompt)[0]
    assert live.answer.split(" ")[0] in {str(int(answer[0])), "<EOS>", "<BOS>", "<SEP>"}
    expected = attention_maps(model, torch.cat([prompt[0], answer[:-1]]))
    np.testing.assert_allclose(live.weights, expected)
    live.layer.value, live.head.value, live.row.value = 1, 2, 9
    np.testing.assert_allclose(live.row_weights, expected[1, 2, 9])
    assert "query 9" in live.status.value
    live.head.value = "mean"
    np.testing.assert_allclose(live.row_weights, expected[1].mean(axis=0)[9])
    live.causal.value = False
    off = attention_maps(model, torch.cat([prompt[0], generate(model, prompt, causal=False)[0][:-1]]), causal=False)
    np.testing.assert_allclose(live.weights, off)
    assert np.count_nonzero(np.triu(live.weights[0, 0], 1)) > 0
    live.digits.value = "12a"
    assert live.weights is None and "six digits" in live.status.value


def test_live_explorer_in_the_static_build(monkeypatch, capsys):
    monkeypatch.setenv(STATIC_ENV, "1")
    shown = live_explorer(make_model(), static_weights=_weights(), static_tokens=TOKENS)
    assert isinstance(shown, StaticExplorer)
    with pytest.raises(ValueError, match="static_weights"):
        live_explorer(make_model())
    monkeypatch.delenv(STATIC_ENV)
    assert isinstance(live_explorer(make_model()), LiveExplorer)
