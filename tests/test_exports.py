"""The graded questions' exports as a platform reads them (``revformer.exports``).

Each format is parsed with the standard library and checked for what a teacher's import needs: the options
shuffled, each chapter in a question bank (category) of its own, the explanation given once, QTI feedback that a
delivery engine shows, the CSV's answer as a letter under a header that says so.
"""
import csv
import io
import json
import re
import xml.etree.ElementTree as ET
import zipfile
from importlib import resources

import pytest

from revformer.exports import CSV_COLUMNS, chapters, export, graded_questions

RUN = {"16 q2": 3, "17 q1": 1, "19 q2": 2.37}  # answers a build's pages might have computed
LANGUAGES = ["en", "zh_CN"]
QTI = "http://www.imsglobal.org/xsd/imsqti_v2p1"
CP = "http://www.imsglobal.org/xsd/imscp_v1p1"
NS = {"q": QTI, "cp": CP}
CATEGORY = {"en": r"\$course\$/revformer/Chapter (\d\d)", "zh_CN": r"\$course\$/revformer-zh_CN/Chapter (\d\d)"}


def _questions(language):
    return graded_questions(language, RUN)


def _chapters_in_order(language):
    seen = []
    for q in _questions(language):
        if q.ref[:2] not in seen:
            seen.append(q.ref[:2])
    return seen


def test_no_option_names_another_by_its_place_so_shuffling_keeps_every_question_right():
    """The exports shuffle the options: an option such as "both (a) and (b)" or "all of the above" would break."""
    by_place = re.compile(r"\b(all|none|both|neither) of the (above|below|others)\b"
                          r"|\b(options?|answers?) \(?[a-h]\)?(\W|$)|\([a-h]\)|^[a-h]\)|\b(above|below) option", re.I)
    for chapter in chapters():
        bank = json.loads(resources.files("revformer").joinpath("questions", f"{chapter}.json").read_text("utf-8"))
        for key, record in bank.items():
            for option in record.get("options", []):
                assert not by_place.search(option), (chapter, key, option)
    for language in LANGUAGES:  # the translations too
        for q in _questions(language):
            for option in q.options:
                assert not by_place.search(option), (language, q.ref, option)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_choice_is_shuffled_in_moodle_xml_and_in_qti(language):
    quiz = ET.fromstring(export("moodle-xml", language, RUN))
    choices = [q for q in quiz.iter("question") if q.get("type") == "multichoice"]
    assert len(choices) >= 20
    for question in choices:
        assert question.findtext("shuffleanswers").strip().lower() in ("true", "1"), question.findtext("name/text")
    with zipfile.ZipFile(io.BytesIO(export("qti", language, RUN))) as archive:
        interactions = [ET.fromstring(archive.read(name)).find(".//q:choiceInteraction", NS)
                        for name in archive.namelist() if name.startswith("items/")]
    interactions = [i for i in interactions if i is not None]
    assert len(interactions) == len(choices)
    for interaction in interactions:
        assert interaction.get("shuffle") == "true"
        assert all(c.get("fixed", "false") == "false" for c in interaction.findall("q:simpleChoice", NS))


@pytest.mark.parametrize("language", LANGUAGES)
def test_moodle_xml_puts_each_chapters_questions_in_a_category_of_their_own(language):
    current, categories, placed = None, [], {}
    for question in ET.fromstring(export("moodle-xml", language, RUN)).iter("question"):
        if question.get("type") == "category":
            path = question.findtext("category/text")
            assert path.isascii(), path
            found = re.fullmatch(CATEGORY[language], path)
            assert found, path
            current = found.group(1)
            categories.append(current)
            continue
        ref = question.findtext("name/text")
        assert current is not None, f"{ref} comes before any category"
        placed[ref] = current
    assert categories == _chapters_in_order(language), "one category per chapter, each once, in order"
    assert placed == {q.ref: q.ref[:2] for q in _questions(language)}


@pytest.mark.parametrize("language", LANGUAGES)
def test_gift_puts_each_chapters_questions_in_a_category_of_their_own(language):
    text = export("gift", language, RUN).decode()
    current, categories, placed = None, [], {}
    for block in text.strip().split("\n\n"):
        if block.startswith("$CATEGORY:"):
            assert "\n" not in block, "a category line stands alone"
            found = re.fullmatch(r"\$CATEGORY: " + CATEGORY[language], block)
            assert found and block.isascii(), block
            current = found.group(1)
            categories.append(current)
        else:
            ref = re.match(r"::(.+?)::", block).group(1)
            assert current is not None, f"{ref} comes before any category"
            placed[ref] = current
    assert categories == _chapters_in_order(language)
    assert placed == {q.ref: q.ref[:2] for q in _questions(language)}


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_numerical_question_gives_its_explanation_once_as_general_feedback(language):
    from revformer.exports import _html

    explanations = {q.ref: _html(q.explanation) for q in _questions(language)}
    numerical = [q for q in ET.fromstring(export("moodle-xml", language, RUN)).iter("question")
                 if q.get("type") == "numerical"]
    assert len(numerical) >= 10
    for question in numerical:
        ref = question.findtext("name/text")
        assert question.findtext("generalfeedback/text") == explanations[ref]
        texts = [t.text or "" for t in question.iter("text")]
        assert texts.count(explanations[ref]) == 1, ref
        assert all(not (f.findtext("text") or "").strip() for f in question.findall("answer/feedback")), ref
    gift = export("gift", language, RUN).decode()
    for block in gift.split("\n\n"):
        if re.search(r"\n\t#[-\d]", block):  # a numerical question: its answer line, then the explanation once
            lines = block.splitlines()
            assert re.fullmatch(r"\t#[-\d.e]+:[\d.e-]+", lines[1]), block
            assert block.count("####") == 1, block


def _local(element) -> str:
    return element.tag.rsplit("}", 1)[-1]


def _respond(item, response):
    """The outcomes after ``item``'s responseProcessing on ``response`` (the QTI 2.1 rules and expressions the
    exports write, evaluated as the specification says), and the identifiers of the modalFeedback a delivery
    engine shows: those whose outcome matches their identifier (showHide="show"), or does not ("hide")."""
    declaration = item.find("q:responseDeclaration", NS)
    float_response = declaration.get("baseType") == "float"
    correct = declaration.findtext("q:correctResponse/q:value", namespaces=NS)
    outcomes = {}
    for outcome in item.findall("q:outcomeDeclaration", NS):
        default = outcome.findtext("q:defaultValue/q:value", namespaces=NS)
        outcomes[outcome.get("identifier")] = None if default is None else (
            float(default) if outcome.get("baseType") == "float" else default)

    def value(e):
        tag = _local(e)
        if tag == "variable":
            name = e.get("identifier")
            return response if name == "RESPONSE" else outcomes[name]
        if tag == "correct":
            return float(correct) if float_response else correct
        if tag == "baseValue":
            return float(e.text) if e.get("baseType") == "float" else e.text
        operands = [value(child) for child in e]
        if any(v is None for v in operands):
            return None  # QTI: an operator on NULL is NULL
        if tag == "match":
            return operands[0] == operands[1]
        if tag == "gte":
            return operands[0] >= operands[1]
        if tag == "lte":
            return operands[0] <= operands[1]
        if tag == "and":
            return all(operands)
        raise AssertionError(f"the exports write no <{tag}>")

    def run(rule):
        tag = _local(rule)
        if tag == "setOutcomeValue":
            outcomes[rule.get("identifier")] = value(rule[0])
        elif tag == "responseCondition":
            for branch in rule:
                if _local(branch) == "responseElse":
                    body = list(branch)
                elif value(branch[0]) is True:
                    body = list(branch)[1:]
                else:
                    continue
                for inner in body:
                    run(inner)
                break
        else:
            raise AssertionError(f"the exports write no <{tag}>")

    processing = item.find("q:responseProcessing", NS)
    assert processing.get("template") is None, "the rules are written out, so that they set FEEDBACK too"
    for rule in processing:
        run(rule)
    shown = [f.get("identifier") for f in item.findall("q:modalFeedback", NS)
             if (outcomes.get(f.get("outcomeIdentifier")) == f.get("identifier")) == (f.get("showHide") == "show")]
    return outcomes, shown


def _items(language):
    with zipfile.ZipFile(io.BytesIO(export("qti", language, RUN))) as archive:
        return {name: ET.fromstring(archive.read(name)) for name in archive.namelist() if name.startswith("items/")}


@pytest.mark.parametrize("language", LANGUAGES)
def test_qti_feedback_hangs_on_identifier_outcomes_that_response_processing_sets(language):
    keys = {q.ref: q for q in _questions(language)}
    items = _items(language)
    assert len(items) == len(keys)
    for name, item in items.items():
        q = keys[item.get("title")]
        declared = {o.get("identifier"): o for o in item.findall("q:outcomeDeclaration", NS)}
        explanation_outcome = declared["FEEDBACK"]
        assert explanation_outcome.get("baseType") == "identifier" and explanation_outcome.get("cardinality") == "single"
        for feedback in item.findall("q:modalFeedback", NS):
            outcome = declared[feedback.get("outcomeIdentifier")]  # declared, and an identifier: SCORE never matched
            assert outcome.get("baseType") == "identifier", (name, outcome.get("identifier"))
        explanation = [f for f in item.findall("q:modalFeedback", NS) if f.get("outcomeIdentifier") == "FEEDBACK"]
        assert len(explanation) == 1
        assert "".join(explanation[0].itertext()) == q.explanation.replace("`", ""), name
        if q.kind == "choice":
            choices = [c.get("identifier") for c in item.findall(".//q:simpleChoice", NS)]
            assert len(choices) == len(q.options)
            for i, choice in enumerate(choices):
                outcomes, shown = _respond(item, choice)
                assert outcomes["SCORE"] == (1.0 if i == q.answer else 0.0), (name, choice)
                own = [choice] if i < len(q.feedback) and q.feedback[i].strip() else []
                assert shown == own + ["EXPLANATION"], (name, choice, shown)
            outcomes, shown = _respond(item, None)  # no option chosen
            assert outcomes["SCORE"] == 0.0 and shown == ["EXPLANATION"], name
        else:
            for response, score in [(float(q.answer), 1.0), (q.answer + 0.999 * q.tolerance, 1.0),
                                    (q.answer - 0.999 * q.tolerance, 1.0), (q.answer + 2 * q.tolerance + 1, 0.0),
                                    (q.answer - 2 * q.tolerance - 1, 0.0), (None, 0.0)]:
                outcomes, shown = _respond(item, response)
                assert outcomes["SCORE"] == score, (name, response)
                assert shown == ["EXPLANATION"], (name, response, shown)


def test_the_qti_response_evaluator_tells_a_float_outcome_from_an_identifier_one():
    """The check above can fail: the old items' modalFeedback hung on SCORE (a float), which never matches."""
    old = ET.fromstring(
        f'<assessmentItem xmlns="{QTI}"><responseDeclaration identifier="RESPONSE" cardinality="single" '
        'baseType="identifier"><correctResponse><value>C1</value></correctResponse></responseDeclaration>'
        '<outcomeDeclaration identifier="SCORE" cardinality="single" baseType="float"><defaultValue><value>0</value>'
        '</defaultValue></outcomeDeclaration><responseProcessing><responseCondition><responseIf><match>'
        '<variable identifier="RESPONSE"/><correct identifier="RESPONSE"/></match><setOutcomeValue identifier="SCORE">'
        '<baseValue baseType="float">1</baseValue></setOutcomeValue></responseIf></responseCondition>'
        '</responseProcessing><modalFeedback outcomeIdentifier="SCORE" showHide="show" identifier="FEEDBACK">Why'
        "</modalFeedback></assessmentItem>")
    for response in ("C0", "C1"):
        outcomes, shown = _respond(old, response)
        assert shown == [], "a float SCORE never equals the identifier FEEDBACK"
    assert _respond(old, "C1")[0]["SCORE"] == 1.0


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_qti_text_entry_sits_inside_a_paragraph(language):
    entries = 0
    for name, item in _items(language).items():
        body = item.find("q:itemBody", NS)
        parents = {child: parent for parent in body.iter() for child in parent}
        for entry in body.iter(f"{{{QTI}}}textEntryInteraction"):
            entries += 1
            assert _local(parents[entry]) == "p", name
        for child in body:  # the itemBody holds blocks only
            assert _local(child) in ("p", "div", "choiceInteraction"), (name, _local(child))
    assert entries >= 10


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_qti_package_has_a_test_with_a_section_per_chapter_listing_every_item(language):
    with zipfile.ZipFile(io.BytesIO(export("qti", language, RUN))) as archive:
        manifest = ET.fromstring(archive.read("imsmanifest.xml"))
        resources_ = manifest.findall("cp:resources/cp:resource", NS)
        ids = [r.get("identifier") for r in resources_] + [manifest.get("identifier")]
        assert len(ids) == len(set(ids)), "identifiers are XML ids: unique in the manifest"
        items = {r.get("identifier"): r.get("href") for r in resources_ if r.get("type") == "imsqti_item_xmlv2p1"}
        tests = [r for r in resources_ if r.get("type") == "imsqti_test_xmlv2p1"]
        assert len(tests) == 1
        test_href = tests[0].get("href")
        assert [f.get("href") for f in tests[0].findall("cp:file", NS)] == [test_href]
        assert [d.get("identifierref") for d in tests[0].findall("cp:dependency", NS)] == list(items)
        for href in [*items.values(), test_href]:
            assert href in archive.namelist(), href
        test = ET.fromstring(archive.read(test_href))
        assert _local(test) == "assessmentTest" and test.get("identifier") and test.get("title")
        parts = test.findall("q:testPart", NS)
        assert len(parts) == 1 and parts[0].get("navigationMode") and parts[0].get("submissionMode")
        sections = parts[0].findall("q:assessmentSection", NS)
        assert [s.get("identifier") for s in sections] == [f"chapter-{c}" for c in _chapters_in_order(language)]
        listed = []
        for section in sections:
            assert section.get("title") and section.get("visible") == "true"
            for ref in section.findall("q:assessmentItemRef", NS):
                assert items[ref.get("identifier")] == ref.get("href")
                item = ET.fromstring(archive.read(ref.get("href")))
                assert item.get("identifier") == ref.get("identifier")
                assert section.get("identifier") == f"chapter-{item.get('title')[:2]}"
                listed.append(ref.get("identifier"))
        assert listed == list(items), "every item, once, in the book's order"


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_csv_gives_a_choices_answer_as_a_letter_and_says_so_in_its_header(language):
    rows = list(csv.reader(io.StringIO(export("csv", language, RUN).decode())))
    header = rows[0]
    assert tuple(header) == CSV_COLUMNS
    answer = next(i for i, h in enumerate(header) if h.startswith("answer"))
    tolerance = next(i for i, h in enumerate(header) if h.startswith("tolerance"))
    assert "letter" in header[answer] and "a | b | c" in header[header.index(next(h for h in header
                                                                                  if h.startswith("options")))]
    keys = {q.ref: q for q in _questions(language)}
    assert [r[0] for r in rows[1:]] == list(keys)
    for row in rows[1:]:
        q = keys[row[0]]
        if q.kind == "choice":
            assert row[answer] == "abcdefgh"[int(q.answer)], row
            assert row[tolerance] == ""
            assert len(row[3].split(" | ")) == len(q.options)
        else:
            assert float(row[answer]) == pytest.approx(float(q.answer)) and float(row[tolerance]) == q.tolerance
