import json
import re

import pytest

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
    assert data == {"kind": "choice", "answer": 1, "explanation": "SEP at 7 predicts it.",
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
