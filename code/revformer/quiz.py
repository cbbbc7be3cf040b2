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
.rf-quiz-feedback{min-height:1.3em}.rf-quiz-feedback strong{font-weight:700}
.rf-quiz-feedback.rf-right{color:var(--pst-color-success,#1a7f37)}
.rf-quiz-feedback.rf-wrong{color:var(--pst-color-danger,#b42318)}
.rf-quiz code{color:var(--pst-color-inline-code,inherit);background:var(--pst-color-surface,rgba(127,127,127,.12));
padding:.05em .3em;border-radius:3px;overflow-wrap:break-word;word-break:normal}
</style>"""

_SCRIPT = r"""<script>
(function () {
  var root = document.getElementById(%(id)s);
  if (!root || root.dataset.ready) { return; }
  root.dataset.ready = "1";
  var data = JSON.parse(root.querySelector("script.rf-quiz-data").textContent);
  var out = root.querySelector(".rf-quiz-feedback");
%(read)s
  var ui = data.ui;  // what the quiz says, in its language
  if (!("answer" in data)) {  // the student edition: no key in the page, the course grades the answer
    root.querySelector("button.rf-quiz-check").hidden = true;
    out.textContent = ui.graded;
    return;
  }
  function fill(text, fields) {  // a sentence of ui with its {names} filled in
    return text.replace(/\{(\w+)\}/g, function (m, k) { return k in fields ? fields[k] : m; });
  }
  function say(right, text) {  // the verdict ("Right." or "Not quite.") in bold, the explanation in plain text
    out.className = "rf-quiz-feedback " + (right ? "rf-right" : "rf-wrong");
    var verdict = right ? ui.correct : ui.wrong;
    out.textContent = "";
    if (verdict && text.indexOf(verdict) === 0) {
      var strong = document.createElement("strong");
      strong.textContent = verdict;
      out.appendChild(strong);
      text = text.slice(verdict.length);
    }
    out.appendChild(document.createTextNode(text));
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
      var read = readNumber(raw, data.answer, data.tolerance), value = read.value;
      if (read.ambiguous) { say(false, fill(ui.ambiguous, {decimal: read.ambiguous[0], whole: read.ambiguous[1]}));
                            return; }
      if (raw === "" || !isFinite(value)) { say(false, ui.typeNumber); return; }
      if (Math.abs(value - data.answer) <= data.tolerance) { say(true, ui.correct + data.explanation); }
      else if (data.answer !== 0 && Math.abs(100 * value - data.answer) <= data.tolerance) { say(false, ui.asPercent); }
      else if (data.answer !== 0 && Math.abs(value / 100 - data.answer) <= data.tolerance) {
        say(false, ui.asFraction); }
      else { say(false, ui.wrongNumber + raw + ui.is + (value < data.answer ? ui.tooSmall : ui.tooLarge) +
                 ui.stop + data.hint); }
    }
  });
})();
</script>"""


# How a typed number is read, in the page (JavaScript) and here (``read_number``), the same way:
# full-width digits and signs (U+FF10-FF19, U+FF0B, U+FF0D), a full-width or Chinese decimal point
# (U+FF0E, U+3002) and a decimal comma (0,092) are accepted; commas between groups of three digits
# separate thousands (69,709); "1,234" may be either, and is taken for the reading near the answer,
# else asked about. A counter word after the number is dropped (U+4E2A after 2); a percentage is a share
# (95% is 0.95) unless the answer is given in percent (the reading nearer the answer).
_READ_NUMBER_JS = r"""  function readNumber(text, answer, tolerance) {  // {value, ambiguous: null or [decimal, whole]}
    var t = String(text).replace(/[\uff10-\uff19]/g, function (c) { return String(c.charCodeAt(0) - 0xff10); })
      .replace(/\s/g, "").replace(/[\u3002\uff61\uff0e]$/, "")  // a sentence's full stop after it
      .replace(/[\uff0e\u3002\uff61]/g, ".").replace(/\uff0c/g, ",").replace(/\uff0b/g, "+")
      .replace(/[\uff0d\u2212]/g, "-").replace(/\uff05/g, "%")
      .replace(/[\u4e00-\u9fff]+$/, "")  // a counter word after the number (U+4E2A, U+6B65 ...)
      .replace(/^(\u5927?\u7ea6|~|\u2248|\u5171)/, "")  // "about" or "in all" before it (U+7EA6, U+5171, ~)
      .replace(/^\u767e\u5206\u4e4b(.+)$/, "$1%");  // "per hundred" before it: a percentage
    var fraction = /^([-+]?\d+)[\/\uff0f](\d+)$/.exec(t);  // 1/8, as the feedback writes it
    if (fraction && Number(fraction[2]) > 0) { return {value: Number(fraction[1]) / Number(fraction[2]), ambiguous: null}; }
    var percent = /%$/.test(t);
    if (percent) { t = t.slice(0, -1); }
    var r = readPlain(t, answer, tolerance);
    if (percent && !isNaN(r.value)) {  // 95% is 0.95, or 95 where the answer is given in percent
      var share = r.value / 100, asIs = answer === undefined || answer === null ? Infinity
        : Math.abs(r.value - answer) - Math.abs(share - answer);
      r.value = asIs < 0 ? r.value : share;
    }
    return r;
  }
  function readPlain(t, answer, tolerance) {
    if (/^[-+]?[1-9]\d{0,2}(,\d{3})+(\.\d*)?$/.test(t)) {
      if (/^[-+]?\d+,\d{3}$/.test(t)) {
        var decimal = t.replace(",", "."), whole = t.replace(",", "");
        var near = function (v) { return Math.abs(v - answer) <= Math.max(tolerance || 0, Math.abs(answer) / 2); };
        var d = answer !== undefined && answer !== null && near(Number(decimal));
        var w = answer !== undefined && answer !== null && near(Number(whole));
        if (d === w) { return {value: NaN, ambiguous: [decimal, whole]}; }
        t = d ? decimal : whole;
      } else { t = t.replace(/,/g, ""); }
    } else if ((t.match(/,/g) || []).length === 1 && t.indexOf(".") < 0) { t = t.replace(",", "."); }
    return {value: /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t) ? Number(t) : NaN, ambiguous: null};
  }"""
_WIDE = str.maketrans({**{chr(0xFF10 + i): str(i) for i in range(10)}, "\uff0e": ".", "\u3002": ".",
                       "\uff61": ".", "\uff0c": ",", "\uff0b": "+", "\uff0d": "-", "\u2212": "-", "\uff05": "%"})


def ascii_digits(text: str) -> str:
    """``text`` with full-width digits, signs, points and commas as ASCII (what a Chinese keyboard types)."""
    return str(text).translate(_WIDE)


@dataclass(frozen=True)
class Reading:
    """A typed number as read: ``value`` (None if not a number), or the two readings it may mean."""

    value: float | None
    ambiguous: tuple[str, str] | None = None


def read_number(text: str, answer: float | None = None, tolerance: float = 0.0) -> Reading:
    """Read a number as a reader types it, the way the quiz's page does (``_READ_NUMBER_JS``).

    ``"0,092"``, ``"0.092"`` in full-width digits and ``"0\u3002092"`` are 0.092; ``"69,709"`` is
    69709; 2 and a counter word (U+4E2A) is 2; ``"95%"`` is 0.95 (or 95, where that is nearer ``answer``).
    ``"1,234"`` may be 1.234 or 1234: the reading near ``answer`` (within ``tolerance`` or half the answer)
    if only one is, else ``Reading(None, ("1.234", "1234"))``, a question to ask.
    """
    t = re.sub(r"[\u3002\uff61\uff0e]$", "", re.sub(r"\s", "", str(text)))  # a sentence's full stop after it
    t = re.sub(r"[\u4e00-\u9fff]+$", "", ascii_digits(t))  # a counter word (U+4E2A ...)
    t = re.sub(r"^(\u5927?\u7ea6|~|\u2248|\u5171)", "", t)  # "about" or "in all" before it
    fraction = re.fullmatch(r"([-+]?\d+)[/\uff0f](\d+)", t)  # 1/8, as the feedback writes it
    if fraction and int(fraction.group(2)) > 0:
        return Reading(int(fraction.group(1)) / int(fraction.group(2)))
    t = re.sub(r"^\u767e\u5206\u4e4b(.+)$", r"\1%", t)  # "per hundred" before it: a percentage
    if t.endswith("%"):  # 95% is 0.95, or 95 where the answer is given in percent
        read = _read_plain(t[:-1], answer, tolerance)
        if read.value is None:
            return read
        share = read.value / 100
        as_is = answer is not None and abs(read.value - answer) < abs(share - answer)
        return Reading(read.value if as_is else share)
    return _read_plain(t, answer, tolerance)


def _read_plain(t: str, answer: float | None, tolerance: float) -> Reading:
    if re.fullmatch(r"[-+]?[1-9]\d{0,2}(,\d{3})+(\.\d*)?", t):
        if re.fullmatch(r"[-+]?\d+,\d{3}", t):
            decimal, whole = t.replace(",", "."), t.replace(",", "")

            def near(v: float) -> bool:
                return answer is not None and abs(v - answer) <= max(tolerance or 0, abs(answer) / 2)

            d, w = near(float(decimal)), near(float(whole))
            if d == w:
                return Reading(None, (decimal, whole))
            t = decimal if d else whole
        else:
            t = t.replace(",", "")
    elif t.count(",") == 1 and "." not in t:
        t = t.replace(",", ".")
    return Reading(float(t) if re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", t) else None)


# What the quiz itself says, in English; each edition's language from the catalogue (revformer.i18n).
UI = {"question": "Question.", "numbered": "Question {ref}.", "check": "Check", "your_answer": "Your answer:", "answer_label": "your answer",
      "pick": "Pick an answer first.", "correct": "Correct. ", "wrong": "Not quite. ",
      "retry": "Read the question again and retry.", "typeNumber": "Type a number, for example 0.5.",
      "wrongNumber": "Not quite: ", "is": " is ", "tooSmall": "too small", "tooLarge": "too large",
      "stop": ". ", "hint": "Check the formula above and retry.",
      "ambiguous": "Did you mean {decimal} or {whole}? Write it with a point.",
      "asPercent": "Right number, written as a fraction: the question asks for a percentage (multiply by 100).",
      "asFraction": "Right number, written as a percentage: the question asks for a fraction (divide by 100).",
      "graded": "Your course grades this question: give your answer where your teacher collects it."}
_SCRIPT_UI = ("pick", "correct", "wrong", "retry", "typeNumber", "wrongNumber", "is", "tooSmall", "tooLarge", "stop",
              "ambiguous", "asPercent", "asFraction", "graded")
# The fields that give a question's answer away: the student edition's package and pages leave them out.
KEY_FIELDS = ("answer", "tolerance", "explanation", "hint", "feedback")


def _ui(language: str) -> dict:
    from .i18n import LANGUAGES, unfilled

    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {language!r}")
    return {key: unfilled(text, language) for key, text in UI.items()}


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
    # the book's questions carry their reference ("08 q3"), as the key and the exports name them
    label = ui["numbered"].replace("{ref}", html.escape(data["ref"])) if data.get("ref") else ui["question"]
    return (
        f'{_STYLE}<div class="rf-quiz" id="{quiz_id}" data-kind="{data["kind"]}"{lang}>'
        f'<p class="rf-quiz-q"><strong>{label}</strong>{" " * (language == "en")}{_inline(question)}</p>'
        f'{body}'
        f'<button type="button" class="rf-quiz-check">{ui["check"]}</button>'
        '<p class="rf-quiz-feedback" role="status" aria-live="polite"></p>'
        f'<script type="application/json" class="rf-quiz-data">{payload}</script></div>'
        + _SCRIPT % {"id": json.dumps(quiz_id), "read": _READ_NUMBER_JS}
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
    ref: str = ""  # "08 q1": which of the book's questions (ask), for the exports and the student edition

    def _repr_html_(self) -> str:
        quiz_id = element_id("rfq", self.question, self.options)
        data = {"kind": "choice", "ref": self.ref, "answer": self.answer, "explanation": _plain(self.explanation),
                "feedback": [_plain(f) for f in self.feedback]}
        return _render(quiz_id, self.question, _options(quiz_id, self.options), data, self.language)

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
    ref: str = ""

    def _repr_html_(self) -> str:
        quiz_id = element_id("rfq", self.question, self.answer)
        data = {"kind": "number", "ref": self.ref, "answer": self.answer, "tolerance": self.tolerance,
                "explanation": _plain(self.explanation), "hint": _plain(self.hint)}
        return _render(quiz_id, self.question, _number_field(quiz_id, self.language), data, self.language)

    def __repr__(self) -> str:
        return f"{self.question}\n  (answer with a number)"


def _options(quiz_id: str, options) -> str:
    return '<div role="radiogroup">' + "".join(
        f'<label><input type="radio" name="{quiz_id}" value="{i}"> {_inline(option)}</label>'
        for i, option in enumerate(options)) + "</div>"


def _number_field(quiz_id: str, language: str) -> str:
    ui = _ui(language)
    return (f'<p><label>{ui["your_answer"]} <input type="text" inputmode="decimal" '
            f'aria-label="{ui["answer_label"]}" name="{quiz_id}"></label></p>')


@dataclass(frozen=True)
class Unkeyed:
    """A question of the student edition: asked without its key, which the course keeps (``KEY_FIELDS``)."""

    kind: str
    question: str
    options: tuple = ()
    language: str = "en"
    ref: str = ""

    def _repr_html_(self) -> str:
        quiz_id = element_id("rfq", self.question, self.options)
        body = _options(quiz_id, self.options) if self.kind == "choice" else _number_field(quiz_id, self.language)
        return _render(quiz_id, self.question, body, {"kind": self.kind, "ref": self.ref}, self.language)

    def __repr__(self) -> str:
        return "\n".join([self.question] + [f"  ({chr(97 + i)}) {o}" for i, o in enumerate(self.options)])


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


def chinese(record: dict, chapter: str, key: str, lang: str = "zh_CN") -> dict:
    """``record`` with its text fields in ``lang``, from the catalogue (``questions.po``, context ``NN qK field``).

    An entry translates the English it names (its msgid); a field whose English
    has changed since, or that is not translated yet, stays English.
    """
    from .i18n import catalogue

    table = catalogue(lang)
    out = dict(record)
    for field in TEXT_FIELDS:
        if field not in record:
            continue
        if isinstance(record[field], list):
            out[field] = [table.pgettext(f"{chapter} {key} {field} {i}", text) if text.strip() else text
                          for i, text in enumerate(record[field])]
        elif record[field].strip():
            out[field] = table.pgettext(f"{chapter} {key} {field}", record[field])
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
    book's languages (``revformer.i18n.Both``): the Chinese text from the
    catalogue (``locale/zh_CN/LC_MESSAGES/questions.po``), the same answer and tolerance.
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
                         "so it lives in revformer/questions/NN.json and its catalogue, questions.po")
    record = dict(bank[key])
    kind = record.pop("kind", None)
    makers = {"choice": choice, "number": number}
    if kind not in makers:
        raise ValueError(f"question {chapter}/{key} has kind {kind!r}; expected 'choice' or 'number'")
    ref = f"{chapter} {key}"
    if "answer" not in record:  # the student edition's package: the question without its key
        zh = chinese(record, chapter, key)
        return Both(Unkeyed(kind, record["question"], tuple(record.get("options", ())), ref=ref),
                    Unkeyed(kind, zh["question"], tuple(zh.get("options", ())), "zh_CN", ref))
    if record.pop("from_the_run", False) and "answer" not in overrides:
        raise ValueError(f"question {chapter}/{key} takes its answer from the page's run: ask it with answer=...")
    record.update(overrides)
    zh = chinese(record, chapter, key)
    try:
        return Both(_with_ref(makers[kind](**record), ref), _with_ref(makers[kind](**zh, language="zh_CN"), ref))
    except TypeError as error:
        raise ValueError(f"question {chapter}/{key} is malformed: {error}") from None


def _with_ref(question, ref: str):
    import dataclasses

    return dataclasses.replace(question, ref=ref)
