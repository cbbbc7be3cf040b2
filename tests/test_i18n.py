"""One executed source, two languages: revformer.i18n, and what shows its text (quizzes, playground, solutions)."""
import json
import re
from pathlib import Path

import pytest

from revformer import i18n


def test_say_shows_the_kernels_language_and_keeps_both(monkeypatch):
    monkeypatch.delenv(i18n.ENV, raising=False)
    data, metadata = i18n.Both("loss 0.3", "loss 为 0.3")._repr_mimebundle_()
    assert data["text/markdown"] == "loss 0.3"
    assert metadata[i18n.METADATA_KEY]["zh_CN"]["text/markdown"] == "loss 为 0.3"
    monkeypatch.setenv(i18n.ENV, "zh_CN")
    data, metadata = i18n.Both("loss 0.3", "loss 为 0.3")._repr_mimebundle_()
    assert data["text/markdown"] == "loss 为 0.3" and metadata[i18n.METADATA_KEY]["en"]["text/markdown"] == "loss 0.3"
    monkeypatch.setenv(i18n.ENV, "fr")
    with pytest.raises(ValueError, match="REVFORMER_LANGUAGE must be one of en, zh_CN, got 'fr'"):
        i18n.language()


def test_a_refusal_is_one_sentence_in_the_readers_language(monkeypatch, capsys):
    """The twelfth Chinese review: a chapter's refusal printed the English template above it in the cell, and the
    shape in two notations ([B,8] against [2, 15]). ``refused`` says it in the kernel's language, one notation."""
    import torch
    from revformer.generate import generate

    monkeypatch.setenv(i18n.ENV, "zh_CN")
    with i18n.refused("generate"):
        generate(None, torch.zeros(2, 15, dtype=torch.long))
    said = capsys.readouterr().out.strip()
    assert said == "`generate` 抛出 `ValueError`：`prompts` 的形状应为 [B,8]，实际为 [2,15]。", said
    monkeypatch.setenv(i18n.ENV, "en")
    with pytest.raises(AssertionError, match="generate should have raised ValueError"):
        with i18n.refused("generate"):
            pass
    with pytest.raises(TypeError):  # any other error goes through
        with i18n.refused("generate"):
            raise TypeError("not a refusal")


def test_both_refuses_two_kinds_of_object():
    with pytest.raises(ValueError, match="one kind of object"):
        i18n.Both("text", 3)


def test_ipython_displays_both_with_their_metadata(monkeypatch):
    from IPython.core.formatters import format_display_data

    from revformer.quiz import ask

    monkeypatch.delenv(i18n.ENV, raising=False)
    data, metadata = format_display_data(ask("05", "q1"))
    assert set(data) == {"text/html", "text/plain"} and "rf-quiz" in data["text/html"]
    assert "问题 05 q1。" in metadata[i18n.METADATA_KEY]["zh_CN"]["text/html"]


def _data(html):
    return json.loads(re.search(r'class="rf-quiz-data">(.*?)</script>', html, re.S).group(1))


@pytest.mark.parametrize("chapter", [f"{n:02d}" for n in range(1, 22)])
def test_chinese_questions_take_the_same_answers_and_answer_in_chinese(chapter):
    from importlib import resources

    from revformer.quiz import ask

    bank = json.loads(resources.files("revformer").joinpath(f"questions/{chapter}.json").read_text(encoding="utf-8"))
    for key in bank:
        both = ask(chapter, key, answer=3) if bank[key].get("from_the_run") else ask(chapter, key)
        en, zh = _data(both.en._repr_html_()), _data(both.zh._repr_html_())
        assert (zh["kind"], zh["answer"], zh.get("tolerance")) == (en["kind"], en["answer"], en.get("tolerance"))
        assert zh["ui"]["correct"] == "正确。" and re.search(r"[\u4e00-\u9fff]", zh["explanation"]), (chapter, key)
        for text in zh.get("feedback", []) + [zh.get("hint", "")]:
            assert not text or re.search(r"[\u4e00-\u9fff]", text), (chapter, key, text)
        assert 'lang="zh-CN"' in both.zh._repr_html_()


def test_a_question_answered_by_the_run_must_be_given_its_answer():
    from revformer.quiz import ask

    with pytest.raises(ValueError, match="takes its answer from the page's run"):
        ask("16", "q2")
    assert '"answer": 3' in ask("16", "q2", answer=3).en._repr_html_()


def test_ask_takes_no_text_overrides():
    from revformer.quiz import ask

    with pytest.raises(ValueError, match="ask takes computed answers, not text"):
        ask("08", "q1", explanation="computed")


def test_a_stale_chinese_question_falls_back_to_its_english(monkeypatch):
    from revformer.quiz import chinese

    record = {"question": "How many?", "explanation": "Seven.", "options": ["a", "b"]}
    table = {"99 q1 question\x04How many, again?": "多少个？",  # translates an English that has changed since
             "99 q1 explanation\x04Seven.": "七个。", "99 q1 options 0\x04a": "甲", "99 q1 options 1\x04b": "乙"}
    monkeypatch.setattr(i18n.catalogue("zh_CN"), "_catalog", table)
    assert chinese(record, "99", "q1") == {"question": "How many?", "explanation": "七个。", "options": ["甲", "乙"]}


def test_the_playground_speaks_both_languages():
    from revformer import web

    assert set(web.text("en")) == set(web.text("zh_CN")) == set(web.TEXT)
    assert web.text("en") == web.TEXT  # the English is the code's, its {names} left for the script
    script = web.PLAYGROUND_JS.read_text(encoding="utf-8")
    used = set(re.findall(r"O\.text\.(\w+)", script)) | set(re.findall(r'say\("(\w+)"', script))
    used |= {k for pair in re.findall(r'say\((\w+) \? "(\w+)" : "(\w+)"', script) for k in pair[1:]}
    assert used <= set(web.TEXT), used - set(web.TEXT)
    both = web.chapter_explorer(12)
    zh = both.zh.html
    for label in ("六个数字", "随机数字", "敲除第 0 层的", "全部头", "当前 loss", "query 行"):
        assert label in zh, label
    assert "Six digits" in both.en.html and "Six digits" not in zh
    assert json.loads(re.search(r'class="rfp-options">(.*?)</script>', zh).group(1))["text"]["right"].startswith("正确")


def test_solutions_open_with_a_chinese_summary():
    from revformer.exercises import show_solution
    from revformer.exercises.solutions import ch06

    solution = show_solution(ch06.my_split_heads)
    zh, en = solution.markdown("zh_CN"), solution.markdown("en")
    assert "<summary>显示参考答案</summary>" in zh and "<summary>Show the solution</summary>" in en
    assert "ch06.py</code>，第 " in zh and "ch06.py</code>, lines " in en  # the listing's head
    assert re.sub(r"<summary>.*?</summary>|&mdash;.*?</div>", "", zh) == \
        re.sub(r"<summary>.*?</summary>|&mdash;.*?</div>", "", en)  # the same code
    data, metadata = solution._repr_mimebundle_()
    assert data["text/markdown"] == en and metadata[i18n.METADATA_KEY]["zh_CN"]["text/markdown"] == zh


def test_every_label_has_its_chinese():
    """The words the package itself shows: English in the code, one Chinese text each in the catalogue."""
    from revformer import explorer, quiz, source, web
    from revformer.exercises import Solution

    english = {"quiz.UI": quiz.UI, "web.TEXT": web.TEXT, "web.GROUP_TEXT": web.GROUP_TEXT,
               "web.TITLES": web.TITLES, "explorer.LABELS": explorer.LABELS,
               "source.LINES": {"lines": source.LINES}}
    for name, table in english.items():
        for key, text in table.items():
            assert not re.search(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]", text), (name, key)  # English only
            chinese = i18n.unfilled(text, "zh_CN")
            if re.search(r"[A-Za-z]{3,}", re.sub(r"\{\w+\}|<[^>]+>|revformer[-\w.]*|EOS|BOS|SEP|mask|query|key|"
                                                 r"token|loss|lr|PDF|four_heads|one_head|no_mask", "", text)):
                assert re.search(r"[\u4e00-\u9fff]", chinese), f"{name}[{key!r}] is not translated: {chinese!r}"
            assert set(re.findall(r"\{\w+\}", chinese)) == set(re.findall(r"\{\w+\}", text)), (name, key)
    summary = {k: {"summary": v} for k, v in Solution.SUMMARY.items()}  # exercises' own table
    assert set(summary) == {"en", "zh_CN"} and re.search(r"[\u4e00-\u9fff]", summary["zh_CN"]["summary"])
    for path in ("quiz.py", "web.py", "explorer.py", "source.py", "web/playground.js"):
        code = (Path(explorer.__file__).parent / path).read_text(encoding="utf-8")
        assert not re.search(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]", code), f"{path} holds Chinese"

def test_the_package_figures_are_translated():
    """Every text the package's figures draw (plots, seeds_plots) has its Chinese in the catalogue."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from revformer import plots, seeds_plots

    rng = np.random.default_rng(0)
    weights = rng.random((2, 4, 14, 14))
    weights /= weights.sum(-1, keepdims=True)
    tokens = [10, 3, 1, 4, 2, 0, 5, 11, 5, 0, 2, 4, 1, 3]
    history = [(0, 2.5, 2.6), (50, 0.5, 0.6), (100, 0.05, 0.06)]
    groups = ("four_heads", "one_head", "no_mask")
    stats = [{"group": g, "layer": layer, "reversal_weight": 0.8, "next_answer_weight": 0.1}
             for g in groups for layer in (0, 1)]
    rows = [{"group": g, "seed": seed, "first_perfect_step": 100 + 10 * seed,
             **{m: 0.5 for m in seeds_plots.MEASURES if m != "first_perfect_step"}}
            for g in groups for seed in (0, 1, 2)]
    curves = [{"group": g, "seed": seed, "step": step, "val_sequence_accuracy": step / 100}
              for g in groups for seed in (0, 1) for step in (0, 50, 100)]
    figures = [plots.plot_attention_grid(weights, tokens), plots.plot_reversal_crop(weights, tokens),
               plots.plot_losses(history), plots.plot_mask_toggle(weights, weights[::-1], tokens),
               plots.plot_ablation({g: history for g in groups}, stats),
               seeds_plots.plot_seed_strips(rows, list(seeds_plots.MEASURES), highlight_seed=1),
               seeds_plots.plot_learning_curves(curves, highlight_seed=0),
               seeds_plots.plot_paired_slopes([("four_heads", [0.5, 0.6]), ("one_head", [0.4, 0.7])], [0, 1],
                                              highlight_seed=0)]
    try:
        for fig in figures:
            for text in i18n.figure_texts(fig):
                chinese = i18n.translate(text, "zh_CN")
                assert chinese is not None, f"no Chinese for the figure text {text!r}"
                if i18n.needs_translation(text):
                    assert re.search(r"[\u4e00-\u9fff]", chinese) and not i18n.needs_translation(
                        re.sub(r"\b(key|query|mask|loss|token)\b", "", chinese)), (text, chinese)
    finally:
        for fig in figures:
            plt.close(fig)


def test_the_most_specific_figure_template_wins():
    assert i18n.translate("layer 1, head 2: mask off", "zh_CN") == "第 1 层，头 2：mask 关闭"
    assert i18n.translate("layer 1, head 2", "zh_CN") == "第 1 层，头 2"
    assert i18n.translate("seed 7 (this build)", "zh_CN") == "种子 7（本次构建）"
    assert i18n.translate("seed 7", "zh_CN") == "种子 7"
    assert i18n.translate("layer 1, head 2 of something new", "zh_CN") is None  # a field holds no words


def test_a_chinese_report_line_folds_after_a_phrase_not_inside_a_word():
    """A checker's Chinese line folds by display width, at a punctuation mark or space near the end when one is
    there (the Chinese review: folds split words such as 因果|掩码), and between characters only when none is."""
    from revformer.exercises import INDENT, fold, width_of

    text = ("错误    第 2 行第 5 列的权重不为零：因果掩码应当把未来位置的分数设为负无穷，"
            "再做 softmax，这样每一行只在过去和当前位置上分配注意力，总和仍为 1。")
    lines = fold(text, width=76).split("\n")
    assert "".join(line.strip() for line in lines).replace(" ", "") == text.replace(" ", "")
    assert all(width_of(line) <= 76 for line in lines)
    assert lines[0].endswith("负无穷，") and lines[1].startswith(" " * INDENT + "再做")
    unbroken = "因" * 60  # no punctuation at all: it still folds, between characters
    assert [width_of(line) for line in fold(unbroken, width=76).split("\n")] == [76, 8 + 44]


def test_a_variant_says_the_none_case_in_the_languages_own_words():
    """The Chinese review: "共有 0 道相同的题目" where a Chinese writer says "没有相同的题目". The catalogue's
    variant (msgctxt "when: shared=0") is taken when the field holds that value, the template otherwise."""
    template = "`{a}` and `{b}` share {shared} questions."
    none = i18n.tr(template, "zh_CN", a="train", b="val", shared=0)
    some = i18n.tr(template, "zh_CN", a="train", b="val", shared=3)
    assert "没有" in none and "0" not in none, none
    assert "3" in some and "没有" not in some, some
    assert i18n.tr(template, "en", a="train", b="val", shared=0) == "`train` and `val` share 0 questions."
    # a share of 100% is the value 1; the most specific variant wins
    lens = ("In this build the read-out after block 0 gets {lens:.2%} of the answer digits right, "
            "the embeddings alone {embeddings:.1%}.")
    assert "全部" in i18n.tr(lens, "zh_CN", lens=1.0, embeddings=0.1)
    assert "99.00%" in i18n.tr(lens, "zh_CN", lens=0.99, embeddings=0.1)
    pairs = next(t for t in i18n._variants("zh_CN") if t.startswith("In this build, of the 6 pairs"))
    fields = dict(weight=6, write=6, dla=6, spread=1.0, ratio=2.0)
    assert "都把 6 对全部排对" in i18n.tr(pairs, "zh_CN", **fields)
    assert "4 对" in i18n.tr(pairs, "zh_CN", **dict(fields, weight=4))


def test_a_variants_condition_is_checked():
    assert i18n.conditions("when: shared=0, total=6") == {"shared": "0", "total": "6"}
    for bad in ("shared=0", "when: shared", "when: =0", "when: a b=1"):
        with pytest.raises(ValueError):
            i18n.conditions(bad)
    assert i18n._holds(0.0, "0") and i18n._holds(1, "1") and not i18n._holds(True, "1") and i18n._holds(True, "True")
