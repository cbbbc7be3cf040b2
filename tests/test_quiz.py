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
    stored = set()
    for path in (Path(revformer.__file__).parent / "questions").glob("*.json"):
        stored |= {(path.stem, key) for key in json.loads(path.read_text())}
    assert asked == stored, f"asked but not stored: {asked - stored}; stored but never asked: {stored - asked}"
    for chapter, key in sorted(stored):
        html = ask(chapter, key)._repr_html_()
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
