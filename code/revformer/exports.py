"""The graded questions where schools grade them: ``python -m revformer questions export``.

Every question the chapters ask with ``revformer.quiz.ask`` (``questions/NN.json``), with its key,
in one of the formats learning platforms import:

- ``gift``: Moodle's GIFT text format (multiple choice with feedback per option, numeric with
  its tolerance, the explanation as general feedback);
- ``moodle-xml``: Moodle's XML question format, the same content;
- ``qti``: an IMS QTI 2.1 content package (a zip: one ``assessmentItem`` per question, an
  ``assessmentTest`` with a section per chapter, and a manifest), which Canvas, Blackboard and
  most other platforms import;
- ``csv``: one row per question, for a spreadsheet or a platform's own importer.

The options of a multiple-choice question are shuffled where the platform shuffles (no option
refers to another by its place). GIFT and Moodle XML put each chapter's questions in a category of
their own (``$course$/revformer/Chapter 08``; ``revformer-zh_CN`` for the Chinese export), so that
each chapter lands in its own question bank.

A few answers come from the build's run (``"from_the_run": true`` in the question file: "in how
many of this build's seeds ..."); they are read from the build's record of what its pages asked
(``graded-answers.json``, written by ``make book``), and only when that build used the seed asked
for, so an export never carries another run's numbers.
"""
from __future__ import annotations

import csv
import io
import itertools
import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

FORMATS = ("gift", "moodle-xml", "qti", "csv")
SUFFIXES = {"gift": ".gift.txt", "moodle-xml": ".moodle.xml", "qti": ".qti.zip", "csv": ".csv"}


@dataclass(frozen=True)
class Graded:
    """One graded question with its key, in one language."""

    ref: str  # "08 q1"
    kind: str  # "choice" or "number"
    question: str
    explanation: str
    options: tuple = ()
    feedback: tuple = ()
    answer: float = 0  # the right option's index, or the number
    tolerance: float = 0.0
    hint: str = ""


def chapters() -> list[str]:
    from importlib import resources

    folder = resources.files("revformer").joinpath("questions")
    return sorted(p.name[:2] for p in folder.iterdir() if re.fullmatch(r"\d\d\.json", p.name))


def read_answers(path: Path, seed: int) -> dict:
    """The answers a build's pages computed (``{"16 q2": 4, ...}``), if that build used ``seed``."""
    path = Path(path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"no record of a build's answers at {path}: build the book first (make book SEED={seed})") \
            from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not the JSON that make book writes ({error})") from None
    if not isinstance(record, dict) or "seed" not in record or not isinstance(record.get("answers"), dict):
        raise ValueError(f"{path} lacks the fields make book writes (seed, answers)")
    if record["seed"] != seed:
        raise ValueError(f"the build at {path} used seed {record['seed']}, not {seed}: export with --seed "
                         f"{record['seed']}, or build with make book SEED={seed}")
    return record["answers"]


def graded_questions(language: str = "en", answers: dict | None = None) -> list[Graded]:
    """Every graded question of the book, in ``language``, with the run's ``answers`` filled in."""
    from .i18n import LANGUAGES
    from .quiz import _bank, chinese

    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {language!r}")
    answers = answers or {}
    out, missing = [], []
    for chapter in chapters():
        for key, record in _bank(f"{chapter}.json").items():
            ref = f"{chapter} {key}"
            if "answer" not in record:
                raise ValueError(f"question {ref} has no answer: this is the student edition's package, "
                                 "which has no key to export (the instructor's build has it)")
            record = dict(record)
            if record.pop("from_the_run", False):
                if ref not in answers:
                    missing.append(ref)
                    continue
                record["answer"] = answers[ref]
            if language != "en":
                record = chinese(record, chapter, key, language)
            out.append(Graded(ref, record["kind"], record["question"], record["explanation"],
                              tuple(record.get("options", ())), tuple(record.get("feedback", ())),
                              record["answer"], float(record.get("tolerance", 0.0)), record.get("hint", "")))
    if missing:
        raise ValueError(f"the answers of {', '.join(missing)} come from the build's run: pass the build's "
                         "record (--answers _build/graded-answers.json)")
    return out


def _plain(text: str) -> str:
    return str(text).replace("`", "")


def _number(value: float) -> str:
    """A number as written in an export: a whole number without a point, else every digit Python keeps."""
    return repr(float(value)) if float(value) != int(value) else str(int(value))


_GIFT_SPECIAL = re.compile(r"([~=#{}:\\])")


def _gift(text: str) -> str:
    """``text`` (HTML already) with GIFT's special characters escaped."""
    return _GIFT_SPECIAL.sub(r"\\\1", text).replace("\n", " ")


def category(chapter: str, language: str = "en") -> str:
    """The question bank of a chapter's questions, as Moodle names a category: ``$course$/revformer/Chapter 08``.

    ASCII in every language (the Chinese export's top category is ``revformer-zh_CN``, so that a course
    that imports both languages keeps them apart)."""
    top = "revformer" if language == "en" else f"revformer-{language}"
    return f"$course$/{top}/Chapter {chapter}"


def _by_chapter(questions):
    """``(chapter, [questions])`` in the order given, a group each time the chapter changes."""
    return [(chapter, list(group)) for chapter, group in itertools.groupby(questions, key=lambda q: q.ref[:2])]


def _letter(index) -> str:
    return chr(ord("a") + int(index))


def gift(questions, language: str = "en") -> str:
    """GIFT: ``$CATEGORY: $course$/revformer/Chapter 08`` before each chapter's questions, then
    ``::08 q1::[html]question {=right#feedback ~wrong#feedback ####explanation}``."""
    blocks = []
    for chapter, group in _by_chapter(questions):
        blocks.append(f"$CATEGORY: {category(chapter, language)}")
        for q in group:
            head = f"::{q.ref}::[html]{_gift(_html(q.question))} {{"
            if q.kind == "choice":
                lines = [f"\t{'=' if i == q.answer else '~'}{_gift(_html(option))}"
                         + (f"#{_gift(_html(q.feedback[i]))}" if i < len(q.feedback) and q.feedback[i].strip() else "")
                         for i, option in enumerate(q.options)]
            else:
                lines = [f"\t#{_number(q.answer)}:{_number(q.tolerance)}"]
            blocks.append("\n".join([head, *lines, f"\t####{_gift(_html(q.explanation))}", "}"]))
    return "\n\n".join(blocks) + "\n"


def _text(tag: str, text: str, html: bool = False) -> str:
    body = f"<![CDATA[{_html(text)}]]>" if html else escape(_plain(text))
    return f'<{tag}{" format=" + chr(34) + "html" + chr(34) if html else ""}><text>{body}</text></{tag}>'


def _html(text: str) -> str:
    """Text with `code` as <code>, escaped (the page's own rendering, revformer.quiz._inline)."""
    from .quiz import _inline

    return _inline(text).replace("]]>", "]]&gt;")


def moodle_xml(questions, language: str = "en") -> str:
    """Moodle XML: a category question before each chapter's questions, then multichoice (one right
    option, feedback per option, options shuffled) and numerical questions (the explanation once, as
    general feedback)."""
    parts = ['<?xml version="1.0" encoding="UTF-8"?>', "<quiz>"]
    for chapter, group in _by_chapter(questions):
        parts += ['  <question type="category">',
                  f"    <category><text>{escape(category(chapter, language))}</text></category>",
                  '    <info format="html"><text></text></info>', "  </question>"]
        for q in group:
            kind = "multichoice" if q.kind == "choice" else "numerical"
            parts += [f'  <question type="{kind}">', f"    <name><text>{escape(q.ref)}</text></name>",
                      "    " + _text("questiontext", q.question, html=True),
                      "    " + _text("generalfeedback", q.explanation, html=True),
                      "    <defaultgrade>1</defaultgrade>"]
            if q.kind == "choice":
                parts += ["    <single>true</single>", "    <shuffleanswers>true</shuffleanswers>",
                          "    <answernumbering>abc</answernumbering>"]
                for i, option in enumerate(q.options):
                    feedback = q.feedback[i] if i < len(q.feedback) else ""
                    parts += [f'    <answer fraction="{100 if i == q.answer else 0}" format="html">',
                              f"      <text><![CDATA[{_html(option)}]]></text>",
                              "      " + _text("feedback", feedback, html=True), "    </answer>"]
            else:
                parts += ['    <answer fraction="100">', f"      <text>{_number(q.answer)}</text>",
                          f"      <tolerance>{_number(q.tolerance)}</tolerance>", "    </answer>"]
            parts.append("  </question>")
    parts.append("</quiz>")
    return "\n".join(parts) + "\n"


CSV_COLUMNS = ("ref", "kind", "question", "options (a | b | c | ...)",
               "answer (choice: the right option's letter; number: the value)", "tolerance (number: accepted within)",
               "explanation", "feedback (per option: a | b | c | ...)")


def csv_table(questions) -> str:
    """CSV, one row per question; options and feedback joined by `` | `` in the order a, b, c, ...; the
    answer of a choice the right option's letter, of a number the value (its tolerance beside it)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for q in questions:
        choice = q.kind == "choice"
        writer.writerow([q.ref, q.kind, _plain(q.question), " | ".join(_plain(o) for o in q.options),
                         _letter(q.answer) if choice else _number(q.answer), "" if choice else _number(q.tolerance),
                         _plain(q.explanation), " | ".join(_plain(f) for f in q.feedback)])
    return out.getvalue()


_QTI = "http://www.imsglobal.org/xsd/imsqti_v2p1"
_CP = "http://www.imsglobal.org/xsd/imscp_v1p1"
# The explanation's modal feedback: the outcome FEEDBACK, which every response processing sets to this identifier
# (an identifier outcome: QTI 2.1 shows a modalFeedback when its outcome matches its identifier).
EXPLANATION = "EXPLANATION"


def _set(outcome: str, value: str, base_type: str = "float") -> str:
    return (f'<setOutcomeValue identifier="{outcome}"><baseValue baseType="{base_type}">{value}</baseValue>'
            "</setOutcomeValue>")


def _qti_item(q: Graded, ident: str, language: str) -> str:
    """One ``assessmentItem``: SCORE 1 or 0; the chosen option's feedback (outcome OPTION_FEEDBACK, the chosen
    option's identifier) and the explanation (outcome FEEDBACK, always EXPLANATION) as modal feedback."""
    lang = "zh-CN" if language == "zh_CN" else "en"
    head = (f'<?xml version="1.0" encoding="UTF-8"?>\n<assessmentItem xmlns="{_QTI}" identifier="{ident}" '
            f'title="{escape(q.ref)}" adaptive="false" timeDependent="false" xml:lang="{lang}">')
    outcomes = ('<outcomeDeclaration identifier="SCORE" cardinality="single" baseType="float">'
                '<defaultValue><value>0</value></defaultValue></outcomeDeclaration>'
                '<outcomeDeclaration identifier="FEEDBACK" cardinality="single" baseType="identifier"/>')
    feedback = ""
    if q.kind == "choice":
        declaration = ('<responseDeclaration identifier="RESPONSE" cardinality="single" baseType="identifier">'
                       f'<correctResponse><value>C{int(q.answer)}</value></correctResponse></responseDeclaration>')
        outcomes += '<outcomeDeclaration identifier="OPTION_FEEDBACK" cardinality="single" baseType="identifier"/>'
        choices = "".join(f'<simpleChoice identifier="C{i}">{_html(o)}</simpleChoice>' for i, o in enumerate(q.options))
        interaction = (f'<choiceInteraction responseIdentifier="RESPONSE" shuffle="true" maxChoices="1">'
                       f"<prompt>{_html(q.question)}</prompt>{choices}</choiceInteraction>")
        right = '<match><variable identifier="RESPONSE"/><correct identifier="RESPONSE"/></match>'
        chosen = '<setOutcomeValue identifier="OPTION_FEEDBACK"><variable identifier="RESPONSE"/></setOutcomeValue>'
        feedback = "".join(f'<modalFeedback outcomeIdentifier="OPTION_FEEDBACK" showHide="show" identifier="C{i}">'
                           f"{_html(text)}</modalFeedback>" for i, text in enumerate(q.feedback[:len(q.options)])
                           if text.strip())
    else:
        declaration = ('<responseDeclaration identifier="RESPONSE" cardinality="single" baseType="float">'
                       f"<correctResponse><value>{_number(q.answer)}</value></correctResponse></responseDeclaration>")
        interaction = (f"<p>{_html(q.question)}</p>"
                       '<p><textEntryInteraction responseIdentifier="RESPONSE" expectedLength="10"/></p>')
        low, high = q.answer - q.tolerance, q.answer + q.tolerance
        right = ('<and>'
                 f'<gte><variable identifier="RESPONSE"/><baseValue baseType="float">{low!r}</baseValue></gte>'
                 f'<lte><variable identifier="RESPONSE"/><baseValue baseType="float">{high!r}</baseValue></lte>'
                 '</and>')
        chosen = ""
    processing = (f"<responseProcessing><responseCondition><responseIf>{right}{_set('SCORE', '1')}</responseIf>"
                  f"<responseElse>{_set('SCORE', '0')}</responseElse></responseCondition>{chosen}"
                  f"{_set('FEEDBACK', EXPLANATION, 'identifier')}</responseProcessing>")
    return (head + declaration + outcomes + f"<itemBody>{interaction}</itemBody>{processing}{feedback}"
            f'<modalFeedback outcomeIdentifier="FEEDBACK" showHide="show" identifier="{EXPLANATION}">'
            f"{_html(q.explanation)}</modalFeedback></assessmentItem>\n")


TEST_TITLE = {"en": "revformer: graded questions", "zh_CN": "revformer：自动评分题"}
SECTION_TITLE = {"en": "Chapter {chapter}", "zh_CN": "第 {number} 章"}


def _qti_test(items, language: str) -> str:
    """The ``assessmentTest``: one section per chapter, its items in order, SCORE their sum."""
    sections, idents = [], {q.ref: ident for q, ident in items}
    for chapter, group in _by_chapter([q for q, _ in items]):
        title = SECTION_TITLE.get(language, SECTION_TITLE["en"]).format(chapter=chapter, number=int(chapter))
        refs = "".join(f'<assessmentItemRef identifier="{idents[q.ref]}" href="items/{idents[q.ref]}.xml"/>'
                       for q in group)
        sections.append(f'<assessmentSection identifier="chapter-{chapter}" title="{escape(title)}" visible="true">'
                        f"{refs}</assessmentSection>")
    title = TEST_TITLE.get(language, TEST_TITLE["en"])
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<assessmentTest xmlns="{_QTI}" identifier="revformer-test" '
            f'title="{escape(title)}">'
            '<outcomeDeclaration identifier="SCORE" cardinality="single" baseType="float">'
            '<defaultValue><value>0</value></defaultValue></outcomeDeclaration>'
            '<testPart identifier="questions" navigationMode="nonlinear" submissionMode="individual">'
            '<itemSessionControl showFeedback="true"/>'  # the explanations: QTI hides feedback in a test by default
            f'{"".join(sections)}</testPart>'
            '<outcomeProcessing><setOutcomeValue identifier="SCORE"><sum><testVariables variableIdentifier="SCORE"/>'
            "</sum></setOutcomeValue></outcomeProcessing></assessmentTest>\n")


def qti(questions, language: str = "en") -> bytes:
    """An IMS QTI 2.1 content package: ``imsmanifest.xml``, one item file per question and the test of them all."""
    buffer = io.BytesIO()
    resources, items = [], []
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for q in questions:
            ident = "revformer-" + q.ref.replace(" ", "-")
            items.append((q, ident))
            archive.writestr(f"items/{ident}.xml", _qti_item(q, ident, language))
            resources.append(f'<resource identifier="{ident}" type="imsqti_item_xmlv2p1" href="items/{ident}.xml">'
                             f'<file href="items/{ident}.xml"/></resource>')
        archive.writestr("revformer-test.xml", _qti_test(items, language))
        dependencies = "".join(f'<dependency identifierref="{ident}"/>' for _, ident in items)
        resources.insert(0, '<resource identifier="revformer-test-resource" type="imsqti_test_xmlv2p1" '
                            f'href="revformer-test.xml"><file href="revformer-test.xml"/>{dependencies}</resource>')
        archive.writestr("imsmanifest.xml", '<?xml version="1.0" encoding="UTF-8"?>\n'
                         f'<manifest xmlns="{_CP}" identifier="revformer-questions">'
                         "<metadata><schema>QTIv2.1 Package</schema><schemaversion>1.0.0</schemaversion></metadata>"
                         f'<organizations/><resources>{"".join(resources)}</resources></manifest>\n')
    return buffer.getvalue()


def export(fmt: str, language: str = "en", answers: dict | None = None) -> bytes:
    """The graded questions in format ``fmt`` (``FORMATS``), as the bytes of one file."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    questions = graded_questions(language, answers)
    if fmt == "qti":
        return qti(questions, language)
    if fmt == "csv":
        return csv_table(questions).encode("utf-8")
    writer = {"gift": gift, "moodle-xml": moodle_xml}[fmt]
    return writer(questions, language).encode("utf-8")


def write(fmt: str, out: Path, language: str = "en", answers: dict | None = None) -> Path:
    """Export into ``out`` whole or not at all (written beside it, then renamed)."""
    from .files import atomic_path

    data = export(fmt, language, answers)
    with atomic_path(out) as tmp:
        tmp.write_bytes(data)
    return Path(out)
