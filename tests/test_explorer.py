import numpy as np
import pytest
import torch

from revformer.analysis import attention_maps
from revformer.data import encode
from revformer.explorer import STATIC_ENV, LiveExplorer, _palette, live_explorer
from revformer.generate import generate
from revformer.model import make_model


TOKENS = encode((0, 2, 8, 2, 2, 3))


def test_the_palette_is_the_books_colour_scale():
    palette = _palette("cividis")
    assert len(palette) == 64 and all(c.startswith("#") and len(c) == 7 for c in palette)
    assert palette[0] != palette[-1]


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
    from revformer.web import chapter_explorer

    static = chapter_explorer(10)
    shown = live_explorer(make_model(), static=static)
    # the static explorer and nothing else: no note about Colab under a page that runs the model itself
    assert shown is static and capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="static="):
        live_explorer(make_model())
    monkeypatch.delenv(STATIC_ENV)
    assert isinstance(live_explorer(make_model()), LiveExplorer)
