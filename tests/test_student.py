"""The student edition, the instructor's key and the exports (issue 34).

The student edition leaves out what gives an answer away (tools/student.py): a notebook loses its
solution cell, the sentence that announces it and every "Show the answer"; a graded question's page
data loses its key; the wheel loses its solutions and its questions' keys, in both languages, and
its checkers still work. The exports carry every graded question with the key the pages use.
"""
import csv
import io
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import student  # noqa: E402

from revformer.exports import FORMATS, export, graded_questions  # noqa: E402
from revformer.quiz import KEY_FIELDS, ask  # noqa: E402

BUILD = ROOT / "_build"


def _quiz_html(chapter="02", key="q3"):
    return ask(chapter, key)._repr_mimebundle_()


def _notebook():
    data, metadata = _quiz_html()
    return {"cells": [
        {"cell_type": "markdown", "id": "a", "metadata": {}, "source": "Write `my_encode`. Then the checker.\n"},
        {"cell_type": "markdown", "id": "b", "metadata": {},
         "source": "One solution, collapsed until you open it; the page runs the same checker on it:"},
        {"cell_type": "code", "id": "c", "metadata": {}, "execution_count": 1, "outputs": [
            {"output_type": "display_data", "data": {"text/html": '<details class="rf-solution">x</details>'},
             "metadata": {}}],
         "source": 'from revformer.exercises import book_solution\n\nbook_solution("01", "my_encode", check_encode)'},
        {"cell_type": "markdown", "id": "d", "metadata": {},
         "source": "To see a diagnosis, delete a line of the solution.\n\n## Check your understanding\n\n1. Why?\n\n"
                   "<details>\n<summary>Show the answer</summary>\n\n"
                   "Because.\n\n</details>\n\n2. How?\n\n<details>\n<summary>显示答案</summary>\n\n因为。\n</details>"},
        {"cell_type": "code", "id": "e", "metadata": {}, "execution_count": 2, "source": 'ask("02", "q3")',
         "outputs": [{"output_type": "display_data", "data": data, "metadata": metadata}]},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_a_student_notebook_keeps_the_questions_and_loses_every_answer():
    before = _notebook()
    text_before = "\n".join(student.strings(before))
    assert len(set(student.leaks(text_before))) == 3, student.leaks(text_before)  # the test finds what it must
    nb = student.student_notebook(before)
    text = "\n".join(student.strings(nb))
    assert student.leaks(text) == []
    assert [c["id"] for c in nb["cells"]] == ["a", "d", "e"]  # the solution and its announcement gone
    assert "1. Why?" in text and "2. How?" in text and "Because." not in text and "因为。" not in text
    assert "To see a diagnosis" not in text and nb["cells"][1]["source"].startswith("## Check")  # a remark on it
    payloads = [json.loads(m.group(2)) for m in student.QUIZ_DATA.finditer(text)]
    assert payloads and all(p["ref"] == "02 q3" and p["kind"] == "choice" for p in payloads)
    assert all(not set(p) & set(KEY_FIELDS) for p in payloads)
    assert all(p["ui"]["graded"].startswith("Your course grades this question") for p in payloads[:1])
    assert before["cells"][1]["source"].startswith("One solution")  # the input is not changed


def test_an_announcement_inside_a_longer_paragraph_is_cut_and_the_rest_kept():
    nb = _notebook()
    nb["cells"][1]["source"] = ("A WRONG line names the mistake. One solution is\ncollapsed below; the page runs the "
                                "same checker on it.")
    out = student.student_notebook(nb)
    assert out["cells"][1]["source"] == "A WRONG line names the mistake."
    nb["cells"][1]["source"] = "“错误”行会指出错误。下面折叠着一种解法；本页用同一个检查器检验它。"
    assert student.student_notebook(nb)["cells"][1]["source"] == "“错误”行会指出错误。"


@pytest.fixture(scope="module")
def reader_wheel(tmp_path_factory):
    """The package's wheel, built from a copy (setuptools writes build/ into the folder it builds)."""
    import shutil

    folder = tmp_path_factory.mktemp("wheel")
    source = folder / "code"
    shutil.copytree(ROOT / "code", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(folder), str(source)], check=True, cwd=folder)
    return next(folder.glob("revformer-*.whl"))


def test_the_student_wheel_has_no_solution_and_no_key_and_its_record_is_whole(reader_wheel, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    reader = site / reader_wheel.name
    reader.write_bytes(reader_wheel.read_bytes())
    found = student.scan(site)
    assert any("exercises/solutions" in f for f in found) and any("keeps its key" in f for f in found)
    assert any("translates" in f and "answers" in f for f in found), found
    reader.unlink()
    wheel = student.student_wheel(reader_wheel, site)
    assert student.scan(site) == []
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        record = next(n for n in names if n.endswith("RECORD"))
        rows = [line.split(",") for line in archive.read(record).decode().splitlines()]
        assert {r[0] for r in rows} == set(names)
        for name, digest, size in rows:
            if name != record:
                data = archive.read(name)
                assert student._record_line(name, data) == f"{name},{digest},{size}"
        bank = json.loads(archive.read("revformer/questions/08.json"))
    assert bank and all(set(r) >= {"kind", "question"} for r in bank.values())


def test_the_student_package_asks_without_keys_hides_the_solution_and_still_checks(reader_wheel, tmp_path):
    wheel = student.student_wheel(reader_wheel, tmp_path / "student")
    installed = tmp_path / "installed"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(installed)
    script = r"""
import json, re
from revformer.i18n import Both
from revformer.quiz import ask
from revformer.exercises import book_solution
from revformer.exercises.sequences import check_encode

for chapter, key in (("02", "q3"), ("16", "q2")):
    both = ask(chapter, key, answer=3) if key == "q2" else ask(chapter, key)
    for one in (both.en, both.zh):
        page = one._repr_html_()
        data = json.loads(re.search(r'class="rf-quiz-data">(.*?)</script>', page).group(1))
        assert "answer" not in data and "explanation" not in data and "feedback" not in data, data
        assert data["ref"] == f"{chapter} {key}"
print(both.zh._repr_html_().count("rf-quiz"))
book_solution("01", "my_encode", check_encode)

from revformer.data import BOS, EOS, SEP

def my_encode(digits):  # a reader's own answer: the checker compares behaviour, not text
    digits = [int(d) for d in digits]
    return [BOS] + digits + [SEP] + digits[::-1] + [EOS]

assert check_encode(my_encode)
assert not check_encode(lambda digits: [BOS] + list(digits) + [SEP] + list(digits) + [EOS])
"""
    env = {"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin", "REVFORMER_PROGRESS": "0"}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "student edition of the package: it has no solutions" in run.stdout


def _gift_keys(text):
    """A reader of the GIFT this package writes: the reference and the right option's index, or the number.

    (No maintained GIFT parser exists on PyPI: pygiftparser 1.1, of 2017, imports pkg_resources and an old
    Markdown, and fails on Python 3.11 without setuptools.)"""
    keys = {}
    for block in re.split(r"\n\n(?=::|\$CATEGORY:)", text.strip()):
        if block.startswith("$CATEGORY:"):
            continue
        ref = re.match(r"::(.+?)::", block).group(1)
        body = block[block.index("{") + 1:block.rindex("}")]
        lines = [line.strip() for line in body.strip().splitlines() if not line.strip().startswith("####")]
        if lines[0].startswith("#"):
            value, tolerance = lines[0][1:].split(":")
            keys[ref] = (float(value), float(tolerance))
        else:
            assert all(line[0] in "=~" for line in lines), block
            assert sum(line[0] == "=" for line in lines) == 1, block
            keys[ref] = next(i for i, line in enumerate(lines) if line[0] == "=")
    return keys


def _xml_keys(text):
    keys = {}
    for question in ET.fromstring(text).iter("question"):
        if question.get("type") == "category":
            continue
        ref = question.find("name/text").text
        answers = question.findall("answer")
        if question.get("type") == "numerical":
            keys[ref] = (float(answers[0].find("text").text), float(answers[0].find("tolerance").text))
        else:
            keys[ref] = next(i for i, a in enumerate(answers) if a.get("fraction") == "100")
            assert [a.get("fraction") for a in answers].count("100") == 1
    return keys


def _qti_keys(data):
    keys = {}
    ns = {"q": "http://www.imsglobal.org/xsd/imsqti_v2p1"}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        manifest = ET.fromstring(archive.read("imsmanifest.xml"))
        hrefs = [r.get("href") for r in manifest.iter("{http://www.imsglobal.org/xsd/imscp_v1p1}resource")
                 if r.get("type") == "imsqti_item_xmlv2p1"]
        for href in hrefs:
            item = ET.fromstring(archive.read(href))
            value = item.find("q:responseDeclaration/q:correctResponse/q:value", ns).text
            ref = item.get("title")
            if value.startswith("C"):
                keys[ref] = int(value[1:])
            else:
                low = float(item.find(".//q:gte/q:baseValue", ns).text)
                keys[ref] = (float(value), float(value) - low)
    return keys


def _csv_keys(text):
    """The answer column by position (its header describes it): a choice's letter as its index, else the number."""
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    answer, tolerance = header.index(next(h for h in header if h.startswith("answer"))), \
        header.index(next(h for h in header if h.startswith("tolerance")))
    keys = {}
    for row in rows[1:]:
        if row[1] == "choice":
            assert re.fullmatch(r"[a-z]", row[answer]), row
            keys[row[0]] = ord(row[answer]) - ord("a")
        else:
            keys[row[0]] = (float(row[answer]), float(row[tolerance]))
    return keys


def _book_keys(answers):
    """The key as the package states it, the run's answers filled in."""
    keys = {}
    for q in graded_questions("en", answers):
        keys[q.ref] = int(q.answer) if q.kind == "choice" else (float(q.answer), q.tolerance)
    return keys


RUN = {"16 q2": 3, "17 q1": 1, "19 q2": 2.37}  # answers a build's pages might have computed


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_every_export_parses_and_carries_the_books_key(language):
    keys = _book_keys(RUN)
    assert len(keys) >= 60 and keys["16 q2"] == (3.0, 0.0) and keys["19 q2"][0] == 2.37
    parsed = {"gift": _gift_keys(export("gift", language, RUN).decode()),
              "moodle-xml": _xml_keys(export("moodle-xml", language, RUN).decode()),
              "qti": _qti_keys(export("qti", language, RUN)),
              "csv": _csv_keys(export("csv", language, RUN).decode())}
    assert set(parsed) == set(FORMATS)
    for fmt, found in parsed.items():
        assert found.keys() == keys.keys(), fmt
        for ref, key in keys.items():
            if isinstance(key, tuple):
                assert found[ref] == pytest.approx(key), (fmt, ref)
            else:
                assert found[ref] == key, (fmt, ref)


def test_an_export_refuses_a_missing_run_answer_and_another_seeds_build(tmp_path):
    from revformer.exports import read_answers

    with pytest.raises(ValueError, match="16 q2, 17 q1, 19 q2 come from the build's run"):
        export("gift", "en", {})
    record = tmp_path / "graded-answers.json"
    record.write_text(json.dumps({"seed": 42, "answers": RUN}))
    assert read_answers(record, 42) == RUN
    with pytest.raises(ValueError, match="used seed 42, not 7"):
        read_answers(record, 7)
    with pytest.raises(ValueError, match="build the book first"):
        read_answers(tmp_path / "none.json", 42)
    run = subprocess.run([sys.executable, "-m", "revformer", "questions", "export", "--format", "moodle-xml",
                          "--seed", "42", "--answers", str(record), "--out", str(tmp_path / "q.xml")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert _xml_keys((tmp_path / "q.xml").read_text()).keys() == _book_keys(RUN).keys()


@pytest.mark.book
@pytest.mark.slow  # builds both languages again (about three minutes)
def test_the_student_edition_builds_and_gives_nothing_away():
    """make book EDITION=student on the built book: the pages, the notebooks, the served scripts, the wheel."""
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "student.py"), "build"], capture_output=True,
                         text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    site = BUILD / "html-student"
    assert student.scan(site) == []
    assert student.scan(BUILD / "html"), "the scan finds nothing in the reader's edition: it cannot fail"
    pages = sorted(site.glob("book/*.html")) + sorted(site.glob("zh_CN/book/*.html"))
    assert len(pages) >= 2 * 21
    quizzes = sum(page.read_text().count('class="rf-quiz"') for page in pages)
    reader = sum(page.read_text().count('class="rf-quiz"') for page in sorted((BUILD / "html").rglob("book/*.html")))
    assert quizzes == reader, "the student edition lost questions, not only their keys"
    assert "Check your understanding" in (site / "book" / "08_training.html").read_text()
    assert list((site / "downloads").glob("revformer-*.whl")) and list((site / "zh_CN" / "downloads").glob("*.whl"))
    key = BUILD / "instructor-key"
    english, chinese = (key / "key.html").read_text(), (key / "key.zh_CN.html").read_text()
    assert "def my_train_step" in english and "def my_train_step" in chinese
    answers = json.loads((BUILD / "graded-answers.json").read_text())["answers"]
    assert len(answers) == len(_book_keys(answers)), "a graded question the pages never asked"
    for ref, value in answers.items():  # the pages ask what the package's key says
        key_value = _book_keys(answers)[ref]
        assert (key_value[0] if isinstance(key_value, tuple) else key_value) == pytest.approx(value), ref
    for language in ("en", "zh_CN"):
        assert (key / f"questions-{json.loads((BUILD / 'graded-answers.json').read_text())['seed']}-{language}"
                f".moodle.xml").exists()
    assert (BUILD / "html" / "book" / "teaching.html").exists()
    assert not list(site.rglob("teaching.html")), "the teacher's page is for teachers"
    for chapter in (site / "book" / "08_training.html", site / "zh_CN" / "book" / "08_training.html"):
        page = chapter.read_text()
        assert "rf-run-colab" not in page and "colab.research.google.com" not in page  # the repository's notebooks
        link = re.search(r'class="rf-run-download" download href="([^"]+)"', page).group(1)
        assert (chapter.parent / link).resolve().is_file(), link
        assert "book_solution(" not in (chapter.parent / link).read_text()
    for language, suffix in (("en", ""), ("zh_CN", ".zh_CN")):
        text = (key / f"key{suffix}.md").read_text()
        questions = re.findall(r"^\*\*\d+\.\*\* ", text, re.M)
        answers = re.findall(r"^> \*\*(?:Answer|答案)\.\*\* ", text, re.M)
        assert len(questions) == len(answers) >= 21 * 2, (language, len(questions), len(answers))
        assert not re.search(r"^## (?:Check your understanding|检查你的理解)", text, re.M)
        assert "#playground" in text and 'src="tex-chtml.js"' in (key / f"key{suffix}.html").read_text()
    assert (key / "tex-chtml.js").is_file()


def test_the_teachers_page_names_the_questions_that_change_with_the_seed():
    from revformer.exports import chapters
    from revformer.quiz import _bank

    from_the_run = {f"{c} {k}" for c in chapters() for k, r in _bank(f"{c}.json").items() if r.get("from_the_run")}
    ordinal = {"q1": "first", "q2": "second", "q3": "third", "q4": "fourth", "q5": "fifth"}
    page = " ".join((ROOT / "book" / "teaching.md").read_text().split())
    found = re.search(r"(\w+) take their answer from the build's run and can change with the seed: (.*?)\. "
                      r"The other (\d+) are the same", page)
    count, named, others = found.groups()
    assert sorted(re.findall(r"chapter (\d\d)'s (\w+)", named)) == sorted(
        (ref[:2], ordinal[ref[3:]]) for ref in from_the_run)
    assert "the playground's" in named  # its answer comes from the run too, and only the key holds it
    numbers = {"three": 3, "four": 4, "five": 5}
    assert numbers[count.lower()] == len(from_the_run) + 1
    assert int(others) == sum(len(_bank(f"{c}.json")) for c in chapters()) - len(from_the_run)


@pytest.mark.book
def test_every_figure_pack_the_teachers_page_links_holds_the_chapters_figures_in_both_languages():
    import zipfile

    page = (ROOT / "book" / "teaching.md").read_text()
    linked = re.findall(r"downloads/figures/(\d\d)\.zip", page)
    site = BUILD / "html" / "downloads" / "figures"
    assert sorted(p.stem for p in site.glob("*.zip")) == sorted(linked)
    said = re.search(r"Chapters ([\d, and]+) have no numbered figure", page).group(1)
    without = {f"{int(n):02d}" for n in re.findall(r"\d+", said)}
    chapters = {p.name[:2] for p in (ROOT / "book").glob("[0-9][0-9]_*.ipynb")}
    assert without == chapters - set(linked)
    for number in linked:
        html = (BUILD / "html" / "book").glob(f"{number}_*.html")
        shown = next(html).read_text().count('class="rf-figure-number"')
        with zipfile.ZipFile(site / f"{number}.zip") as archive:
            names = archive.namelist()
            english = [n for n in names if n.startswith("en/figure-")]
            chinese = [n for n in names if n.startswith("zh_CN/")and n.endswith(".png")]
            assert len(english) == len(chinese) == shown, (number, names, shown)
            assert archive.read(english[0])[:8] == b"\x89PNG\r\n\x1a\n"
            assert len(archive.read("zh_CN/captions.txt").decode().splitlines()) == shown
    assert (BUILD / "html" / "zh_CN" / "downloads" / "figures" / f"{linked[0]}.zip").exists()


def test_the_playground_keeps_its_code_and_loses_its_revealed_answers():
    import ast

    for path in (ROOT / "book" / "playground.md", ROOT / "zh_CN" / "book" / "playground.md"):
        text = path.read_text(encoding="utf-8")
        assert student.leaks(text), f"{path}: the scan does not see the playground's answers"
        page = student.student_page(text)
        assert student.leaks(page) == [] and page.count("{code-cell}") == text.count("{code-cell}")
        for code in re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```\n", page, flags=re.M | re.S):
            ast.parse("\n".join(line for line in code.splitlines() if not line.startswith(":")))


def test_the_keys_check_questions_pair_each_question_with_its_answer_and_drop_what_speaks_to_the_page():
    nb = {"cells": [
        {"cell_type": "markdown", "source": "## Try it yourself\n\nWrite it."},
        {"cell_type": "markdown", "source": "A remark on the solution.\n\n## Check your understanding\n\n"
                                            "The page grades the next two questions itself.\n\n1. Why?\n\n"
                                            "   ```python\n   x = 1\n\n   y = 2\n   ```\n\n<details>\n<summary>"
                                            "Show the answer</summary>\n\nBecause $a_i$.\n\nThe folded cell below "
                                            "measures what that costs.\n\n</details>"},
        {"cell_type": "code", "source": "evidence()"},
        {"cell_type": "markdown", "source": "#### 2. How?\n\nThe evidence: a table."},
        {"cell_type": "markdown", "source": "<details>\n<summary>显示答案</summary>\n\nSo.\n</details>\n\n"
                                            "**3.** Which?\n\n<details>\n<summary>Show the answer</summary>\n\n"
                                            "That.\n</details>\n\n## Summary\n\nDone."}]}
    found = student.check_questions(nb, "Answer")
    assert [q.split("\n")[0] for q in found] == ["**1.** Why?", "**2.** How?", "**3.** Which?"]
    assert "y = 2" in found[0] and "> **Answer.** Because $a_i$." in found[0] and "folded cell" not in found[0]
    assert "The evidence: a table." in found[1] and found[1].endswith("> **Answer.** So.")
    text = "\n".join(found)
    assert "remark" not in text and "grades the next" not in text and "Summary" not in text
    nb["cells"][1]["source"] = nb["cells"][1]["source"].replace("1. Why?", "Why?")
    with pytest.raises(ValueError, match="an answer without its question"):
        student.check_questions(nb, "Answer")


def test_every_sentence_the_student_edition_rewrites_is_on_a_page_and_is_rewritten_there():
    pages = [ROOT / "book" / "intro.md", ROOT / "book" / "playground.md", ROOT / "zh_CN" / "book" / "intro.md",
             ROOT / "zh_CN" / "book" / "playground.md"]
    chapter = [folder / name for folder in (ROOT / "book", ROOT / "zh_CN" / "book")
               for name in ("01_task.ipynb", "02_shifted_labels.ipynb", "03_embeddings.ipynb", "14_colab.ipynb",
                            "15_check_questions.ipynb")]
    texts = [p.read_text(encoding="utf-8") for p in pages] + [
        "\n".join(student.strings(json.loads(p.read_text(encoding="utf-8")))) for p in chapter]
    for old, new in student.POINTERS:
        assert any(student._pointer(old).search(t) for t in texts), f"no page says {old!r} any more"
    for path in pages:
        rewritten = student.student_page(path.read_text(encoding="utf-8"))
        assert not any(student._pointer(old).search(rewritten) for old, _ in student.POINTERS), path
    for path in chapter:
        rewritten = "\n".join(student.strings(student.student_notebook(json.loads(path.read_text(encoding="utf-8")))))
        assert not student.leaks(rewritten), path


def test_the_student_site_loses_every_link_that_opens_the_repositorys_notebooks(tmp_path):
    page = tmp_path / "intro.html"
    page.write_text('<p><a class="rf-landing-run" href="https://colab.research.google.com/github/o/n/blob/main/book/'
                    '01_task.ipynb"><img src="x.svg" alt="">Run chapter 1 in Colab</a> <a href="book/01_task.html">'
                    'Read chapter 1</a></p>', encoding="utf-8")
    assert student.leaks(page.read_text()) == ["a link that opens the repository's notebooks in Colab or Binder"]
    student.unkey_site(tmp_path)
    text = page.read_text()
    assert "colab" not in text and "Read chapter 1" in text and student.leaks(text) == []


def test_an_executed_pages_output_loses_its_colab_link_too():
    """The introduction is executed: its landing buttons are an output of its notebook in the site's _sources."""
    link = '<a class="rfl-button" href="https://mybinder.org/v2/gh/o/n/main?urlpath=tree/book/01_task.ipynb">Run</a>'
    nb = {"cells": [{"cell_type": "code", "id": "a", "metadata": {}, "execution_count": 1, "source": "buttons()",
                     "outputs": [{"output_type": "display_data", "metadata": {},
                                  "data": {"text/html": link + '<a href="book/01_task.html">Read</a>'}}]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    assert student.leaks("\n".join(student.strings(nb)))
    text = "\n".join(student.strings(student.student_notebook(nb)))
    assert student.leaks(text) == [] and "Read" in text and "mybinder" not in text


def test_the_key_writes_a_number_to_the_decimal_its_tolerance_asks_for():
    assert student.key_number(0.09174475714285714, 0.002) == "0.092"   # chapter 2's loss, within 0.002
    assert student.key_number(0.09174475714285714, 0.01) == "0.09"
    assert student.key_number(12.34, 0.5) == "12.3"
    assert student.key_number(3.0, 0.002) == "3"                       # a count stays whole
    assert student.key_number(0.125, 0) == "0.125"                     # exact: every digit
