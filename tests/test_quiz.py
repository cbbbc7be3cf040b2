import json
import re
from pathlib import Path

import pytest

import revformer
from revformer.exercises import run
from revformer.quiz import choice, number


def _data(html):
    return json.loads(re.search(r'<script type="application/json" class="rf-quiz-data">(.*?)</script>', html, re.S)
                      .group(1))


def test_choice_html_carries_question_answer_and_feedback():
    q = choice("Which `position` predicts the first answer?", ["6", "7", "8"], 1, "SEP at 7 predicts it.",
               ["6 predicts SEP", "", "8 holds it"])
    html = q._repr_html_()
    assert "<code>position</code>" in html and html.count('type="radio"') == 3
    data = _data(html)
    assert data.pop("ui")["correct"] == "Correct. "  # what the page says, in the question's language
    assert data == {"kind": "choice", "ref": "", "answer": 1, "explanation": "SEP at 7 predicts it.",
                    "feedback": ["6 predicts SEP", "", "8 holds it"]}
    assert "http" not in html  # nothing loaded from anywhere
    assert re.search(r'id="(rfq-[0-9a-f]+-\d+)"', html).group(1) in html.split("<script>")[1]


def test_number_html():
    q = number("Mean loss of seven targets at p = 0.5?", 0.693, 0.005, "-log 0.5 = 0.693.")
    data = _data(q._repr_html_())
    assert data["kind"] == "number" and data["answer"] == 0.693 and data["tolerance"] == 0.005


def test_text_is_escaped_and_cannot_close_the_script():
    q = choice("<b>bold</b>?", ["</script><script>alert(1)</script>", "b"], 0, "x </script> y")
    html = q._repr_html_()
    assert "<b>bold</b>" not in html and "&lt;b&gt;" in html
    assert "<script>alert(1)" not in html and "</script><script>" not in html
    assert _data(html)["explanation"] == "x </script> y"


def test_every_display_gets_its_own_id():
    same = choice("one?", ["a", "b"], 0, "x")
    ids = [re.search(r'id="(rfq-[\w-]+)"', h).group(1)
           for h in (same._repr_html_(), same._repr_html_(), choice("two?", ["a", "b"], 0, "x")._repr_html_())]
    assert len(set(ids)) == 3  # the same question shown twice on one page stays two questions


@pytest.mark.parametrize("args", [
    ("q?", ["only"], 0, "x"),
    ("q?", ["a", "b"], 2, "x"),
    ("q?", ["a", "b"], True, "x"),
    ("", ["a", "b"], 0, "x"),
])
def test_bad_choice(args):
    with pytest.raises(ValueError):
        choice(*args)


def test_bad_feedback_and_number():
    with pytest.raises(ValueError, match="one entry per option"):
        choice("q?", ["a", "b"], 0, "x", feedback=["only one"])
    with pytest.raises(ValueError, match="tolerance"):
        number("q?", 1.0, -0.1, "x")
    with pytest.raises(ValueError, match="numbers"):
        number("q?", "one", 0.1, "x")


def test_exercise_runner_reports_todo_errors_and_passes(capsys):
    def unfinished(checker):
        checker.call(lambda: (_ for _ in ()).throw(NotImplementedError()))
        checker.expect(True, "never reached", "")

    assert run("demo", unfinished) is False
    out = capsys.readouterr().out
    assert "not yet" in out and "TODO" in out and "never reached" not in out

    def crashing(checker):
        checker.call(lambda: 1 / 0)

    assert run("demo", crashing) is False
    assert "ZeroDivisionError" in capsys.readouterr().out

    def mixed(checker):
        checker.expect(checker.call(lambda: 2) == 2, "two is two", "")
        checker.expect(False, "", "three is not four")

    assert run("demo", mixed) is False
    out = capsys.readouterr().out
    assert "ok    two is two" in out and "WRONG three is not four" in out

    assert run("demo", lambda c: c.expect(True, "fine", "")) is True
    assert "all checks passed" in capsys.readouterr().out


def test_every_asked_question_is_in_the_package_and_renders():
    """Each ``ask("NN", "qK")`` of a chapter names a stored question; every stored one is asked."""
    import re

    from book_facts import chapter_files, chapter_number, load_notebook, source
    from revformer.quiz import ask

    asked = set()
    for name in chapter_files():
        for cell in load_notebook(name)["cells"]:
            for chapter, key in re.findall(r'\bask\("(\d\d)", "([^"]+)"', source(cell)):
                assert int(chapter) == chapter_number(name), f"{name} asks chapter {chapter}'s question"
                asked.add((chapter, key))
    stored, from_the_run = set(), set()
    for path in (Path(revformer.__file__).parent / "questions").glob("*.json"):
        bank = json.loads(path.read_text())
        stored |= {(path.stem, key) for key in bank}
        from_the_run |= {(path.stem, key) for key, record in bank.items() if record.get("from_the_run")}
    assert asked == stored, f"asked but not stored: {asked - stored}; stored but never asked: {stored - asked}"
    for chapter, key in sorted(stored):
        html = (ask(chapter, key, answer=3) if (chapter, key) in from_the_run else ask(chapter, key))._repr_html_()
        assert 'class="rf-quiz"' in html


def test_ask_refuses_unknown_questions_and_takes_computed_answers():
    from revformer.quiz import ask

    with pytest.raises(ValueError, match="no questions for chapter '99'"):
        ask("99", "q1")
    with pytest.raises(ValueError, match="has no question 'q9'"):
        ask("08", "q9")
    with pytest.raises(ValueError, match="malformed"):
        ask("08", "q1", colour="red")
    computed = ask("08", "q1", answer=0.25)
    assert computed.answer == 0.25 and computed.question == ask("08", "q1").question


# Numbers as people type them: (typed, answer, tolerance, what is read: a number, None for no
# number, or the two readings the quiz asks about). The page's JavaScript reads them the same way.
NUMBER_CASES = [
    ("0.092", None, 0.0, 0.092),
    ("0,092", None, 0.0, 0.092),  # a decimal comma
    ("\uff10.\uff10\uff19\uff12", None, 0.0, 0.092),  # full-width digits
    ("\uff10\uff0e\uff10\uff19\uff12", None, 0.0, 0.092),  # and a full-width point
    ("0\u3002092", None, 0.0, 0.092),  # a Chinese full stop as the point
    ("0\uff0e092", None, 0.0, 0.092),
    ("\uff0d\uff10\uff0c\uff15", None, 0.0, -0.5),  # full-width minus and comma
    ("\u30000.5\u3000", None, 0.0, 0.5),  # ideographic spaces around it
    ("69,709,123", None, 0.0, 69709123.0),  # commas between groups of three: thousands
    ("1,234.5", None, 0.0, 1234.5),
    ("1,234", None, 0.0, ("1.234", "1234")),  # thousands or a decimal comma: asked
    ("1,234", 0.5, 0.01, ("1.234", "1234")),  # neither reading near the answer: asked
    ("1,234", 1.2, 0.01, 1.234),  # the reading near the answer is taken (and graded: too large)
    ("\uff11\uff0c\uff12\uff13\uff14", 1.2, 0.01, 1.234),
    ("1,234", 1234.0, 1.0, 1234.0),
    ("69,709", 69709.0, 0.0, 69709.0),
    ("0,234", None, 0.0, 0.234),  # a leading 0 never opens a group of thousands
    ("12,34", None, 0.0, 12.34),
    ("1e-3", None, 0.0, 0.001),
    ("2个", None, 0.0, 2.0), ("７ 步", None, 0.0, 7.0),  # a counter word after the number
    ("95%", None, 0.0, 0.95), ("95%", 0.9, 0.01, 0.95), ("９５％", 0.9, 0.01, 0.95),
    ("95%", 96.0, 0.5, 95.0),  # the answer is given in percent
    ("\u7ea60.003", None, 0.0, 0.003), ("\u5927\u7ea6 12", None, 0.0, 12.0), ("~0.5", None, 0.0, 0.5),  # about
    ("\u767e\u5206\u4e4b99.6", 0.996, 0.001, 0.996), ("\u767e\u5206\u4e4b99.6", 99.6, 0.1, 99.6),
    # the thirteenth Chinese review: a sentence's full stop after the number, "in all", a fraction
    ("0.125\u3002", None, 0.0, 0.125), ("224\u3002", None, 0.0, 224.0), ("0\u3002125\u3002", None, 0.0, 0.125),
    ("\u5171 224 \u4e2a", None, 0.0, 224.0), ("1/8", None, 0.0, 0.125), ("\uff11\uff0f\uff18", None, 0.0, 0.125),
    ("1/0", None, 0.0, None), ("1/2/3", None, 0.0, None),
    ("%", None, 0.0, None), ("个", None, 0.0, None), ("2个3", None, 0.0, None),
    ("", None, 0.0, None), ("abc", None, 0.0, None), ("1.2.3", None, 0.0, None), ("0x10", None, 0.0, None),
    ("inf", None, 0.0, None), ("1,2,3", None, 0.0, None), ("1.234,5", None, 0.0, None),
]


@pytest.mark.parametrize("typed, answer, tolerance, expected", NUMBER_CASES)
def test_read_number_takes_what_people_type(typed, answer, tolerance, expected):
    from revformer.quiz import Reading, read_number

    read = read_number(typed, answer, tolerance)
    if isinstance(expected, tuple):
        assert read == Reading(None, expected)
    elif expected is None:
        assert read == Reading(None)
    else:
        assert read.ambiguous is None and read.value == pytest.approx(expected, rel=1e-12)


def test_ascii_digits():
    from revformer.quiz import ascii_digits

    assert ascii_digits("\uff13\uff11\uff14\uff12\uff10\uff15") == "314205"
    assert ascii_digits("\uff10\u3002\uff10\uff19\uff12") == "0.092" and ascii_digits("a b") == "a b"


def _node(script: str) -> str:
    import shutil
    import subprocess

    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("node is not installed")
    done = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_page_reads_numbers_as_python_does():
    """The quiz's JavaScript (``_READ_NUMBER_JS``, run by node) reads every case as ``read_number`` does."""
    from revformer.quiz import _READ_NUMBER_JS

    cases = [[typed, answer, tolerance] for typed, answer, tolerance, _ in NUMBER_CASES]
    out = json.loads(_node(_READ_NUMBER_JS + "\nconsole.log(JSON.stringify(" + json.dumps(cases, ensure_ascii=False)
                           + ".map(function (c) { var r = readNumber(c[0], c[1], c[2]);"
                           " return [isNaN(r.value) ? null : r.value, r.ambiguous]; })));"))
    for (typed, _, _, expected), (value, ambiguous) in zip(NUMBER_CASES, out):
        if isinstance(expected, tuple):
            assert (value, ambiguous) == (None, list(expected)), typed
        elif expected is None:
            assert (value, ambiguous) == (None, None), typed
        else:
            assert ambiguous is None and value == pytest.approx(expected, rel=1e-12), typed


def test_the_ambiguous_comma_is_asked_about_in_the_quizs_language():
    html = number("Largest weight?", 0.5, 0.01, "x", language="zh_CN")._repr_html_()
    ui = _data(html)["ui"]
    assert "{decimal}" in ui["ambiguous"] and "{whole}" in ui["ambiguous"] and re.search(r"[\u4e00-\u9fff]",
                                                                                         ui["ambiguous"])
    assert _data(number("q?", 0.5, 0.01, "x")._repr_html_())["ui"]["ambiguous"] == \
        "Did you mean {decimal} or {whole}? Write it with a point."
    assert "function readNumber(text, answer, tolerance)" in html and "ui.ambiguous" in html


def test_the_playground_reads_full_width_digits():
    from revformer import web

    assert web._check_digits("\uff13\uff11\uff14\uff12\uff10\uff15") == "314205"
    script = web.PLAYGROUND_JS.read_text(encoding="utf-8")
    function = re.search(r"^ *(function asciiDigits\(text\) \{.*\})$", script, re.M).group(1)
    out = _node(function + '\nconsole.log(JSON.stringify(["\uff19\uff18\uff17 650", "3\u30001 4205", "31a205"]'
                           '.map(asciiDigits)));')
    assert json.loads(out) == ["987650", "314205", "31a205"]


def test_the_books_questions_show_their_reference_in_each_edition():
    """A teacher says "answer 08 q1": the page shows the reference the key and the exports use."""
    from revformer.quiz import Unkeyed, ask

    asked = ask("08", "q1")
    assert "<strong>Question 08 q1.</strong>" in asked.en._repr_html_()
    assert "<strong>问题 08 q1。</strong>" in asked.zh._repr_html_()
    student = Unkeyed("choice", "Which?", ("a", "b"), ref="08 q1")
    assert "<strong>Question 08 q1.</strong>" in student._repr_html_()
    # a question of the reader's own, made with choice(), has no reference to show
    assert "<strong>Question.</strong>" in choice("Which?", ["a", "b"], 0, "a.")._repr_html_()
