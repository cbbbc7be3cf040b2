"""The figure packs for slides (``tools/book.py figure-packs``): plain-text captions and the figures' licence.

Each chapter's ``downloads/figures/NN.zip`` holds its figures in both languages with ``captions.txt`` (plain text:
a slide shows no Markdown) and ``LICENSE.txt``: CC BY 4.0 with the credit line ``LICENSE-TEXT.md`` asks for and
the site ``_config.yml`` names.
"""
import base64
import re
import zipfile

import pytest

from book_facts import ROOT, book_tool

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()


def _site() -> str:
    return book_tool.named()[1]


def _credit_in_licence_text() -> str:
    text = " ".join((ROOT / "LICENSE-TEXT.md").read_text(encoding="utf-8").split())
    return re.search(r'credit \(("[^)]*)\)', text).group(1)


@pytest.mark.parametrize("markdown, plain", [
    ("`one_head`'s validation loss divided by that of `four_heads`",
     "one_head's validation loss divided by that of four_heads"),
    ("A `[5,64]` tensor through `split_heads`", "A [5,64] tensor through split_heads"),
    ("*Left*, the **loss** mask; __right__, _the_ causal one", "Left, the loss mask; right, the causal one"),
    ("See [chapter 4](04_one_head.ipynb) and [the paper](https://arxiv.org/abs/1706.03762).",
     "See chapter 4 and the paper."),
    ("Scores over $\\sqrt{d_k}$, with $d_k = 16$; it costs $5 and $6.",
     "Scores over \\sqrt{d_k}, with d_k = 16; it costs $5 and $6."),
    ("`one_head` and one_head_two, `*not emphasis*`, \\*literal stars\\*", "one_head and one_head_two, *not emphasis*, "
                                                                         "*literal stars*"),
    ("Two\nlines,  one   space", "Two lines, one space"),
    ("一个 `[5,64]` 张量经过 `split_heads`，**加粗**", "一个 [5,64] 张量经过 split_heads，加粗"),
])
def test_a_caption_loses_its_markdown(markdown, plain):
    assert book_tool.plain_caption(markdown) == plain


def test_the_credit_line_is_the_one_the_licence_of_the_text_asks_for():
    credit = book_tool.figure_credit()
    assert credit == _credit_in_licence_text()
    assert credit.startswith('"Reversing digits') and "revformer authors" in credit


def _pack(tmp_path, stem="17_learning_curves"):
    figures = {"en": [(PNG, "`one_head`'s validation loss, *one line per seed*"),
                      ([PNG[:10], PNG[10:]], "The [temperature](https://example.org) control: **step 20**")],
               "zh_CN": [(PNG, "`one_head` 的验证 loss，*每个种子一条线*"),
                         (PNG, "温度对照：**第 20 步**")]}
    return book_tool._figure_pack(tmp_path / f"{stem[:2]}.zip", stem, figures)


def test_a_figure_pack_has_plain_captions_and_its_licence(tmp_path):
    with zipfile.ZipFile(_pack(tmp_path)) as archive:
        names = archive.namelist()
        assert sorted(names) == sorted(["en/figure-17.1.png", "en/figure-17.2.png", "en/captions.txt",
                                        "zh_CN/图-17.1.png", "zh_CN/图-17.2.png", "zh_CN/captions.txt",
                                        "LICENSE.txt"])
        assert archive.read("en/figure-17.2.png") == base64.b64decode(PNG)
        assert archive.read("en/captions.txt").decode().splitlines() == [
            "figure-17.1.png\tone_head's validation loss, one line per seed",
            "figure-17.2.png\tThe temperature control: step 20"]
        assert archive.read("zh_CN/captions.txt").decode().splitlines() == [
            "图-17.1.png\tone_head 的验证 loss，每个种子一条线", "图-17.2.png\t温度对照：第 20 步"]
        licence = archive.read("LICENSE.txt").decode("utf-8")
    site = _site()
    assert "CC BY 4.0" in licence and "https://creativecommons.org/licenses/by/4.0/" in licence
    assert "Creative Commons Attribution 4.0 International" in licence and "知识共享 署名 4.0 国际" in licence
    assert licence.count(book_tool.figure_credit()) >= 2  # in English and in Chinese
    assert f"Figure 17.1: {book_tool.figure_credit()}, {site}, CC BY 4.0" in licence
    assert f"{site}book/17_learning_curves.html" in licence
    assert f"{site}zh_CN/book/17_learning_curves.html" in licence
    assert f"图 17.1：{book_tool.figure_credit()}" in licence


def test_a_retargeted_fork_names_its_own_site_in_the_licence(tmp_path, monkeypatch):
    fork = "https://someone.github.io/their-book/"
    monkeypatch.setattr(book_tool, "named", lambda: ("https://github.com/someone/their-book", fork))
    licence = book_tool.figure_licence("08_training")
    assert f"{fork}book/08_training.html" in licence and f"{fork}zh_CN/" in licence
    assert _site() not in licence.replace(fork, "")


@pytest.mark.book
def test_the_built_chapters_figure_packs_have_plain_captions_and_the_licence(tmp_path):
    """The packs written from the English build's executed chapters (read from _build, written to a temporary
    folder): every caption plain text, each pack's licence naming its chapter's page, which the site has."""
    out = tmp_path / "figures"
    written = book_tool.figure_packs(out, site=None)
    assert len(written) >= 10 and all(p.parent == out for p in written)
    site = _site()
    for path in written:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            assert "LICENSE.txt" in names, path.name
            licence = archive.read("LICENSE.txt").decode()
            assert book_tool.figure_credit() in licence and "CC BY 4.0" in licence
            page = re.search(re.escape(site) + r"book/(\d\d_\w+\.html)", licence).group(1)
            assert page.startswith(path.stem) and (ROOT / "_build" / "html" / "book" / page).exists(), page
            for language in ("en", "zh_CN"):
                captions = archive.read(f"{language}/captions.txt").decode().splitlines()
                pngs = [n for n in names if n.startswith(f"{language}/") and n.endswith(".png")]
                assert len(captions) == len(pngs) >= 1
                for line in captions:
                    name, caption = line.split("\t")
                    assert f"{language}/{name}" in pngs
                    assert caption and not re.search(r"[`*]|\]\(|\$[^\d\s]", caption), (path.name, line)
