"""One executed source, two languages: revformer.i18n, and what shows its text (quizzes, playground, solutions)."""
import json
import re

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


def test_say_refuses_anything_but_two_strings():
    with pytest.raises(ValueError, match="say needs two strings"):
        i18n.say("loss", 0.3)
    with pytest.raises(ValueError, match="one kind of object"):
        i18n.Both("text", 3)


def test_ipython_displays_both_with_their_metadata(monkeypatch):
    from IPython.core.formatters import format_display_data

    from revformer.quiz import ask

    monkeypatch.delenv(i18n.ENV, raising=False)
    data, metadata = format_display_data(ask("05", "q1"))
    assert set(data) == {"text/html", "text/plain"} and "rf-quiz" in data["text/html"]
    assert "问题。" in metadata[i18n.METADATA_KEY]["zh_CN"]["text/html"]


def _data(html):
    return json.loads(re.search(r'class="rf-quiz-data">(.*?)</script>', html, re.S).group(1))


@pytest.mark.parametrize("chapter", [f"{n:02d}" for n in range(1, 22)])
def test_chinese_questions_take_the_same_answers_and_answer_in_chinese(chapter):
    from importlib import resources

    from revformer.quiz import ask

    bank = json.loads(resources.files("revformer").joinpath(f"questions/{chapter}.json").read_text(encoding="utf-8"))
    for key in bank:
        both = ask(chapter, key)
        en, zh = _data(both.en._repr_html_()), _data(both.zh._repr_html_())
        assert (zh["kind"], zh["answer"], zh.get("tolerance")) == (en["kind"], en["answer"], en.get("tolerance"))
        assert zh["ui"]["correct"] == "正确。" and re.search(r"[\u4e00-\u9fff]", zh["explanation"]), (chapter, key)
        for text in zh.get("feedback", []) + [zh.get("hint", "")]:
            assert not text or re.search(r"[\u4e00-\u9fff]", text), (chapter, key, text)
        assert 'lang="zh-CN"' in both.zh._repr_html_()


def test_ask_takes_no_text_overrides():
    from revformer.quiz import ask

    with pytest.raises(ValueError, match="ask takes computed answers, not text"):
        ask("08", "q1", explanation="computed")


def test_a_stale_chinese_question_falls_back_to_its_english():
    from revformer.quiz import chinese

    record = {"question": "How many?", "explanation": "Seven.", "options": ["a", "b"]}
    catalogue = {"question": {"en": "How many, again?", "zh": "多少个？"},
                 "explanation": {"en": "Seven.", "zh": "七个。"},
                 "options": [{"en": "a", "zh": "甲"}, {"en": "b", "zh": "乙"}]}
    assert chinese(record, catalogue) == {"question": "How many?", "explanation": "七个。", "options": ["甲", "乙"]}


def test_the_playground_speaks_both_languages():
    from revformer import web

    assert set(web.TEXT["en"]) == set(web.TEXT["zh_CN"])
    script = web.PLAYGROUND_JS.read_text(encoding="utf-8")
    used = set(re.findall(r"O\.text\.(\w+)", script)) | set(re.findall(r'say\("(\w+)"', script))
    used |= {k for pair in re.findall(r'say\((\w+) \? "(\w+)" : "(\w+)"', script) for k in pair[1:]}
    assert used <= set(web.TEXT["en"]), used - set(web.TEXT["en"])
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
    """The words the package itself shows: one Chinese text for each English one, none left English."""
    from revformer import explorer, quiz, web
    from revformer.exercises import Solution
    from revformer.source import LINES

    tables = {"quiz.UI": quiz.UI, "web.TEXT": web.TEXT, "explorer.LABELS": explorer.LABELS,
              "Solution.SUMMARY": {k: {"summary": v} for k, v in Solution.SUMMARY.items()},
              "source.LINES": {k: {"lines": v} for k, v in LINES.items()}}
    for name, table in tables.items():
        assert set(table) == {"en", "zh_CN"}, name
        assert set(table["zh_CN"]) == set(table["en"]), f"{name}: {set(table['en']) ^ set(table['zh_CN'])}"
        for key, text in table["zh_CN"].items():
            english = table["en"][key]
            if re.search(r"[A-Za-z]{3,}", re.sub(r"\{\w+\}|<[^>]+>|revformer[-\w.]*|EOS|BOS|SEP|mask|query|key|"
                                                 r"token|loss|lr|PDF", "", english)):
                assert re.search(r"[\u4e00-\u9fff]", text), f"{name}[{key!r}] is not translated: {text!r}"
            assert set(re.findall(r"\{\w+\}", text)) == set(re.findall(r"\{\w+\}", english)), (name, key)
    assert set(web.GROUP_TEXT) == set(web.GROUP_TEXT_ZH)
    for key, (en, zh) in web.TITLES.items():
        assert re.search(r"[\u4e00-\u9fff]", zh), key
