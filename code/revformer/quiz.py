"""Check questions that the page grades itself, with no kernel and no network.

``choice(...)`` and ``number(...)`` return objects that notebooks display as
one self-contained block of HTML and JavaScript: the question, the answer
and the feedback inline, nothing loaded from anywhere. The same output works
in the built book, in Colab and in Jupyter.

The chapters' own questions live in the package (``questions/NN.json``, one
file per chapter) and a chapter asks them with ``ask("08", "q1")``: the cell
that asks a question never shows its answer key, in Colab or in a downloaded
notebook either. A question whose answer the page computes passes it in
(``ask("07", "q1", answer=wide)``).

Text may mark code with backticks (`` `labels` ``); everything else is
escaped, so a question can never inject markup.
"""
from __future__ import annotations

import hashlib
import html
import itertools
import json
import re
from dataclasses import dataclass

_STYLE = """<style>
.rf-quiz{border:1px solid #8a8a8a;border-radius:6px;padding:.7em 1em;margin:1em 0;max-width:46em}
.rf-quiz p{margin:.3em 0}.rf-quiz label{display:block;margin:.25em 0;cursor:pointer}
.rf-quiz button{margin-top:.4em;padding:.2em .9em;cursor:pointer}
.rf-quiz input[type=text]{width:9em;padding:.15em .3em}
.rf-quiz-feedback{font-weight:600;min-height:1.3em}
.rf-quiz-feedback.rf-right{color:#1a7f37}.rf-quiz-feedback.rf-wrong{color:#b42318}
</style>"""

_SCRIPT = r"""<script>
(function () {
  var root = document.getElementById(%(id)s);
  if (!root || root.dataset.ready) { return; }
  root.dataset.ready = "1";
  var data = JSON.parse(root.querySelector("script.rf-quiz-data").textContent);
  var out = root.querySelector(".rf-quiz-feedback");
  // "69,709" and "69709" are one number (commas between groups of three
  // digits separate thousands); a lone comma elsewhere is a decimal comma.
  function readNumber(text) {
    var t = text.replace(/\s/g, "");
    if (/^[-+]?\d{1,3}(,\d{3})+(\.\d*)?$/.test(t)) { return t.replace(/,/g, ""); }
    return (t.match(/,/g) || []).length === 1 && t.indexOf(".") < 0 ? t.replace(",", ".") : t;
  }
  var ui = data.ui;  // what the quiz says, in its language
  function say(right, text) {
    out.className = "rf-quiz-feedback " + (right ? "rf-right" : "rf-wrong");
    out.textContent = text;
  }
  root.querySelector("button.rf-quiz-check").addEventListener("click", function () {
    if (data.kind === "choice") {
      var picked = root.querySelector("input[type=radio]:checked");
      if (!picked) { say(false, ui.pick); return; }
      var i = Number(picked.value);
      if (i === data.answer) { say(true, ui.correct + data.explanation); }
      else { say(false, ui.wrong + (data.feedback[i] || ui.retry)); }
    } else {
      var raw = root.querySelector("input[type=text]").value.trim();
      var value = Number(readNumber(raw));
      if (raw === "" || !isFinite(value)) { say(false, ui.typeNumber); return; }
      if (Math.abs(value - data.answer) <= data.tolerance) { say(true, ui.correct + data.explanation); }
      else { say(false, ui.wrongNumber + raw + ui.is + (value < data.answer ? ui.tooSmall : ui.tooLarge) +
                 ui.stop + data.hint); }
    }
  });
})();
</script>"""


# What the quiz itself says, in each edition's language (revformer.i18n).
UI = {
    "en": {"question": "Question.", "check": "Check", "your_answer": "Your answer:", "answer_label": "your answer",
           "pick": "Pick an answer first.", "correct": "Correct. ", "wrong": "Not quite. ",
           "retry": "Read the question again and retry.", "typeNumber": "Type a number, for example 0.5.",
           "wrongNumber": "Not quite: ", "is": " is ", "tooSmall": "too small", "tooLarge": "too large",
           "stop": ". ", "hint": "Check the formula above and retry."},
    "zh_CN": {"question": "问题。", "check": "检查", "your_answer": "你的答案：", "answer_label": "你的答案",
              "pick": "请先选择一个答案。", "correct": "正确。", "wrong": "还不对。",
              "retry": "请重读问题，再试一次。", "typeNumber": "请输入一个数，例如 0.5。",
              "wrongNumber": "还不对：", "is": " ", "tooSmall": "太小了", "tooLarge": "太大了",
              "stop": "。", "hint": "请检查上面的公式，再试一次。"},
}
_SCRIPT_UI = ("pick", "correct", "wrong", "retry", "typeNumber", "wrongNumber", "is", "tooSmall", "tooLarge", "stop")


def _ui(language: str) -> dict:
    if language not in UI:
        raise ValueError(f"language must be one of {', '.join(UI)}, got {language!r}")
    return UI[language]


def _inline(text: str) -> str:
    """Escape ``text`` and turn `backticks` into <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(str(text)))


def _plain(text: str) -> str:
    """Feedback is shown as plain text: drop the backticks."""
    return str(text).replace("`", "")


_displayed = itertools.count()


def element_id(prefix: str, *parts) -> str:
    """A page-unique element id: a hash of the content and a running count.

    The hash keeps ids stable across runs of the same notebook; the count
    keeps two displays of the same content on one page apart (each script
    finds its own element).
    """
    digest = hashlib.sha1(json.dumps(parts, default=str).encode()).hexdigest()[:10]
    return f"{prefix}-{digest}-{next(_displayed)}"


def _render(quiz_id: str, question: str, body: str, data: dict, language: str) -> str:
    ui = _ui(language)
    data = {**data, "ui": {k: ui[k] for k in _SCRIPT_UI}}
    payload = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")  # no markup, cannot close the script
    lang = ' lang="zh-CN"' if language == "zh_CN" else ""
    return (
        f'{_STYLE}<div class="rf-quiz" id="{quiz_id}" data-kind="{data["kind"]}"{lang}>'
        f'<p class="rf-quiz-q"><strong>{ui["question"]}</strong>{" " * (language == "en")}{_inline(question)}</p>'
        f'{body}'
        f'<button type="button" class="rf-quiz-check">{ui["check"]}</button>'
        '<p class="rf-quiz-feedback" role="status" aria-live="polite"></p>'
        f'<script type="application/json" class="rf-quiz-data">{payload}</script></div>'
        + _SCRIPT % {"id": json.dumps(quiz_id)}
    )


@dataclass(frozen=True)
class Choice:
    """A multiple-choice question; ``answer`` is the index of the right option."""

    question: str
    options: tuple
    answer: int
    explanation: str
    feedback: tuple
    language: str = "en"

    def _repr_html_(self) -> str:
        quiz_id = element_id("rfq", self.question, self.options)
        body = '<div role="radiogroup">' + "".join(
            f'<label><input type="radio" name="{quiz_id}" value="{i}"> {_inline(option)}</label>'
            for i, option in enumerate(self.options)
        ) + "</div>"
        data = {"kind": "choice", "answer": self.answer, "explanation": _plain(self.explanation),
                "feedback": [_plain(f) for f in self.feedback]}
        return _render(quiz_id, self.question, body, data, self.language)

    def __repr__(self) -> str:  # what a plain console shows
        lines = [self.question] + [f"  ({chr(97 + i)}) {o}" for i, o in enumerate(self.options)]
        return "\n".join(lines)


@dataclass(frozen=True)
class Number:
    """A question whose answer is a number, accepted within ``tolerance``."""

    question: str
    answer: float
    tolerance: float
    explanation: str
    hint: str
    language: str = "en"

    def _repr_html_(self) -> str:
        quiz_id = element_id("rfq", self.question, self.answer)
        ui = _ui(self.language)
        body = (f'<p><label>{ui["your_answer"]} <input type="text" inputmode="decimal" '
                f'aria-label="{ui["answer_label"]}" name="{quiz_id}"></label></p>')
        data = {"kind": "number", "answer": self.answer, "tolerance": self.tolerance,
                "explanation": _plain(self.explanation), "hint": _plain(self.hint)}
        return _render(quiz_id, self.question, body, data, self.language)

    def __repr__(self) -> str:
        return f"{self.question}\n  (answer with a number)"


def choice(question: str, options, answer: int, explanation: str, feedback=None, language: str = "en") -> Choice:
    """A graded multiple-choice question.

    ``feedback`` optionally gives, per option, what a reader who picked it
    misunderstood; it is shown when that wrong option is checked.
    """
    options = tuple(str(o) for o in options)
    if len(options) < 2:
        raise ValueError(f"a multiple-choice question needs at least 2 options, got {len(options)}")
    if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < len(options):
        raise ValueError(f"answer must be the index of an option, 0 to {len(options) - 1}, got {answer!r}")
    feedback = tuple(str(f) for f in (feedback or [""] * len(options)))
    if len(feedback) != len(options):
        raise ValueError(f"feedback needs one entry per option ({len(options)}), got {len(feedback)}")
    if not str(question).strip() or not str(explanation).strip():
        raise ValueError("question and explanation must not be empty")
    _ui(language)
    return Choice(str(question), options, answer, str(explanation), feedback, language)


def number(question: str, answer: float, tolerance: float, explanation: str,
           hint: str | None = None, language: str = "en") -> Number:
    """A graded question whose answer is a number, right within ``tolerance``."""
    hint = _ui(language)["hint"] if hint is None else hint
    try:
        answer, tolerance = float(answer), float(tolerance)
    except (TypeError, ValueError):
        raise ValueError(f"answer and tolerance must be numbers, got {answer!r} and {tolerance!r}") from None
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be zero or positive, got {tolerance!r}")
    if not str(question).strip() or not str(explanation).strip():
        raise ValueError("question and explanation must not be empty")
    return Number(str(question), answer, tolerance, str(explanation), str(hint), language)


TEXT_FIELDS = ("question", "explanation", "hint", "options", "feedback")


def chinese(record: dict, catalogue: dict) -> dict:
    """``record`` with its text fields in Chinese, from its entry of ``questions/zh_CN/NN.json``.

    An entry records the English it translates; a field whose English has
    changed since, or that is not translated yet, stays English.
    """
    out = dict(record)
    for field in TEXT_FIELDS:
        if field not in record or field not in catalogue:
            continue
        entry = catalogue[field]
        if isinstance(record[field], list):
            if len(entry) == len(record[field]):
                out[field] = [e["zh"] if e["en"] == t and (e["zh"].strip() or not t.strip()) else t
                              for e, t in zip(entry, record[field])]
        elif entry["en"] == record[field] and entry["zh"].strip():
            out[field] = entry["zh"]
    return out


def _bank(name: str) -> dict:
    from importlib import resources

    try:
        return json.loads(resources.files("revformer").joinpath("questions").joinpath(name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def ask(chapter: str, key: str, **overrides):
    """Question ``key`` of chapter ``chapter`` (``"08"``), from the package's question files.

    ``overrides`` replace fields of the stored question, for an answer that
    the page computes from its own run. The question comes in both of the
    book's languages (``revformer.i18n.Both``): the Chinese text from
    ``questions/zh_CN/NN.json``, the same answer and tolerance.
    """
    from .i18n import Both

    name = f"{chapter}.json"
    bank = _bank(name)
    if not bank:
        raise ValueError(f"no questions for chapter {chapter!r} (expected revformer/questions/{name})")
    if key not in bank:
        raise ValueError(f"chapter {chapter} has no question {key!r}; it has {', '.join(bank)}")
    texts = sorted(set(overrides) & set(TEXT_FIELDS))
    if texts:
        raise ValueError(f"ask takes computed answers, not text ({', '.join(texts)}): text is translated, "
                         "so it lives in revformer/questions/NN.json and questions/zh_CN/NN.json")
    record = {**bank[key], **overrides}
    kind = record.pop("kind", None)
    makers = {"choice": choice, "number": number}
    if kind not in makers:
        raise ValueError(f"question {chapter}/{key} has kind {kind!r}; expected 'choice' or 'number'")
    zh = chinese(record, _bank(f"zh_CN/{name}").get(key, {}))
    try:
        return Both(makers[kind](**record), makers[kind](**zh, language="zh_CN"))
    except TypeError as error:
        raise ValueError(f"question {chapter}/{key} is malformed: {error}") from None
