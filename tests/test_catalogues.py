"""One language per page: the code holds English templates, the catalogues the translations (revformer.i18n)."""
import base64
import json
import re
import sys
from pathlib import Path

import pytest

from revformer import i18n

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import translations  # noqa: E402

HAN = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


def test_say_fills_the_template_of_each_language_from_the_catalogue(monkeypatch):
    monkeypatch.delenv(i18n.ENV, raising=False)
    template = "This runtime has no font with Chinese characters: the figures keep their English text."
    text = i18n.Text(template, {})
    data, metadata = text._repr_mimebundle_()
    assert data["text/markdown"] == template
    zh = metadata[i18n.METADATA_KEY]["zh_CN"]["text/markdown"]
    assert HAN.search(zh) and zh == i18n.catalogue("zh_CN").gettext(template)
    monkeypatch.setenv(i18n.ENV, "zh_CN")
    assert i18n.Text(template, {})._repr_mimebundle_()[0]["text/markdown"] == zh


def test_a_template_without_its_field_or_an_fstring_is_refused(capsys):
    with pytest.raises(ValueError, match=r"names the field 'loss', which was not given \(given: lost\)"):
        i18n.say("The loss is {loss:.3f}.", lost=0.3)
    with pytest.raises(ValueError, match="say needs a template string"):
        i18n.say(0.3)
    i18n.say("The loss is {loss:.3f}.", loss=0.25)  # outside IPython: printed in the kernel's language
    assert capsys.readouterr().out == "The loss is 0.250.\n"


def test_a_message_renders_later_in_any_language():
    message = i18n.Message("This runtime has no font with Chinese characters: the figures keep their English text.")
    assert message.render("en").startswith("This runtime")
    assert HAN.search(message.render("zh_CN"))
    with pytest.raises(ValueError, match="language must be one of"):
        message.render("fr")


def test_a_series_is_listed_in_each_languages_way(monkeypatch):
    seeds = i18n.Series([42, 0, 1])
    assert i18n.tr("seeds {seeds}", "en", seeds=seeds) == "seeds 42, 0, 1"
    catalogue = i18n.catalogue("zh_CN")
    monkeypatch.setitem(catalogue._catalog, "seeds {seeds}", "种子 {seeds}")
    assert i18n.tr("seeds {seeds}", "zh_CN", seeds=seeds) == "种子 42、0、1"
    monkeypatch.setenv(i18n.ENV, "zh_CN")
    assert str(seeds) == "42、0、1"
    with pytest.raises(ValueError, match="language must be one of"):
        seeds.render("fr")
    stops = i18n.Series([i18n.Message("This runtime has no font with Chinese characters: the figures keep their "
                                      "English text."), "x"])
    assert stops.render("en").startswith("This runtime") and stops.render("en").endswith(", x")
    assert HAN.search(stops.render("zh_CN")) and stops.render("zh_CN").endswith("、x")


def test_a_yes_or_no_is_said_in_the_pages_language():
    import numpy as np

    assert i18n.tr("same: {same}", "en", same=True) == "same: True"
    assert HAN.search(i18n.tr("same: {same}", "zh_CN", same=np.bool_(False)).split(": ")[1])
    table = i18n.tr("{rows}", "zh_CN", rows="| a | True |\n| b | (True, False) |\n| causal=True | 3 |")
    assert "True" not in table.splitlines()[0] and "(True, False)" in table and "causal=True" in table


def test_figure_texts_are_found_exactly_or_as_templates(monkeypatch):
    catalogue = i18n.catalogue("zh_CN")
    monkeypatch.setattr(catalogue, "_catalog", {"training step": "训练步数", "clip limit {limit}": "裁剪上限 {limit}",
                                                "seed {seed}, {name}": "种子 {seed}，{name}"})
    i18n._templates.cache_clear()
    try:
        assert i18n.translate("training step", "zh_CN") == "训练步数"
        assert i18n.translate("clip limit 1.0", "zh_CN") == "裁剪上限 1.0"
        assert i18n.translate("seed 42, four_heads", "zh_CN") == "种子 42，four_heads"
        assert i18n.translate("training step\nclip limit 2", "zh_CN") == "训练步数\n裁剪上限 2"
        assert i18n.translate("the validation loss", "zh_CN") is None  # English words, no entry
        assert i18n.translate("L0 H3", "zh_CN") == "L0 H3"  # identifiers and tokens need none
        assert i18n.translate("7 <SEP>", "zh_CN") == "7 <SEP>"
    finally:
        i18n._templates.cache_clear()


def test_a_figure_is_drawn_again_in_chinese_and_left_as_it_was(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    catalogue = i18n.catalogue("zh_CN")
    monkeypatch.setattr(catalogue, "_catalog", {"training step": "训练步数", "loss at step {step}": "第 {step} 步的 loss"})
    monkeypatch.delenv(i18n.ENV, raising=False)
    monkeypatch.setenv("REVFORMER_STATIC_BUILD", "1")
    i18n._templates.cache_clear()
    try:
        fig, ax = plt.subplots()
        ax.plot([0, 1], [1, 0], label="loss at step 40")
        ax.set_xlabel("training step")
        ax.set_ylabel("untranslated words")
        ax.set_xticks([0, 1], ["L0 H1", "first"])
        ax.legend()
        data, metadata = i18n.figure_bundle(fig)
        assert data == {}  # the kernel's own image is IPython's png formatter's
        kept = metadata[i18n.METADATA_KEY]
        assert kept["untranslated"] == ["untranslated words", "first"]
        png = base64.b64decode(kept["zh_CN"]["image/png"])
        assert png.startswith(b"\x89PNG")
        assert ax.get_xlabel() == "training step" and ax.get_legend().get_texts()[0].get_text() == "loss at step 40"
        assert "Noto" not in " ".join(ax.xaxis.label.get_fontfamily())  # the font of the English figure, kept
        plt.close(fig)
    finally:
        i18n._templates.cache_clear()


def test_no_chapter_of_the_english_edition_has_chinese_in_its_code():
    found = []
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code" and HAN.search("".join(cell["source"])):
                line = next(line for line in "".join(cell["source"]).splitlines() if HAN.search(line))
                found.append(f"{path.name} {cell['id']}: {line.strip()[:80]}")
    assert not found, f"{len(found)} code cells of the English edition hold Chinese:\n" + "\n".join(found)


def test_no_chapter_writes_a_sentence_twice():
    """The old machinery is gone from the chapters: no say(en, zh), no show(en, zh), no ..._zh variable."""
    found = []
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"][1:]:
            text = "".join(cell["source"]) if cell["cell_type"] == "code" else ""
            if re.search(r"\b\w+_zh\b|(?<![.\w])Both\(|(?<![.\w])show\(", text):
                found.append(f"{path.name} {cell['id']}")
    assert not found, found


def test_the_chinese_setup_cell_draws_figures_in_chinese():
    cell = translations.zh_setup_cell()
    assert 'os.environ["REVFORMER_LANGUAGE"] = "zh_CN"' in cell and "revformer.i18n.watch_figures()" in cell
    english = (ROOT / "tools" / "setup_cell.py.template").read_text(encoding="utf-8")
    assert not HAN.search(english) and "i18n" not in english


def test_the_compiled_catalogue_is_current_and_shipped():
    assert translations.compiled_now() == translations.compiled_messages()
    pyproject = (ROOT / "code" / "pyproject.toml").read_text(encoding="utf-8")
    assert '"locale/*/LC_MESSAGES/*.mo"' in pyproject


@pytest.mark.book
@pytest.mark.parametrize("chapter", [p.name for p in sorted((ROOT / "book").glob("*.ipynb"))], ids=lambda n: n[:2])
def test_every_sentence_report_and_figure_of_a_chapter_has_its_chinese(chapter):
    """In the executed chapter (the build's cache), every output written in every language has Chinese text,
    every figure with words has a Chinese image, and no figure text was left without a catalogue entry."""
    executed = translations.executed(ROOT / "_build", ROOT / "book" / chapter)
    problems = []
    for cell in executed["cells"]:
        for output in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            kept = output.get("metadata", {}).get(i18n.METADATA_KEY)
            data = output.get("data", {})
            if "image/png" in data:
                texts = (kept or {}).get("texts") or []
                if kept and kept.get("untranslated"):
                    problems.append(f"{cell['id']}: figure texts without a translation {kept['untranslated'][:4]}")
                if any(i18n.needs_translation(t) for t in texts) and "zh_CN" not in (kept or {}):
                    problems.append(f"{cell['id']}: a figure with words has no Chinese image")
                if kept is None:
                    problems.append(f"{cell['id']}: a figure the build did not draw in Chinese (no metadata)")
            elif kept and "zh_CN" in kept:
                shown = kept["zh_CN"].get("text/markdown") or kept["zh_CN"].get("text/plain") or ""
                english = kept["en"].get("text/markdown") or kept["en"].get("text/plain") or ""
                if i18n.needs_translation(re.sub(r"`[^`]*`|<[^>]*>|\$[^$]*\$", "", english)) and not HAN.search(shown):
                    problems.append(f"{cell['id']}: written in every language, but its Chinese is English: "
                                    f"{shown[:60]!r}")
                numbers = set(re.findall(r"\d+(?:\.\d+)?(?:e[-+]\d+)?%?", shown))
                lost = [n for n in re.findall(r"\d+\.\d+(?:e[-+]\d+)?%?|\d+%", english) if n not in numbers]
                # a variant says none or all in words ("没有一个", "全部"), not "0.0%" or "100.0%"
                if re.search("没有|全部|都|每|一道也|一个也|一行也", shown):
                    lost = [n for n in lost if not re.fullmatch(r"0(?:\.0+)?%|100(?:\.0+)?%", n)]
                if lost:  # the same run's numbers in both editions
                    problems.append(f"{cell['id']}: numbers of the English missing from the Chinese: {lost[:5]}")
    assert not problems, "\n".join(problems)
