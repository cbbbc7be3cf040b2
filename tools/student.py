"""The student edition and the instructor's key: ``make book EDITION=student``.

The student edition is the reader's edition, built from the same run, without what gives an
answer away: no solution cell, no "Show the answer" under a check question, no key in a graded
question's page data, and a package wheel without ``revformer/exercises/solutions`` whose
question files and catalogue keep the questions but not their answers, explanations, hints or
feedback. The exercises' checkers still work: they compare behaviour, not text. Both languages
go to ``_build/html-student`` (Chinese under ``zh_CN/``), a site a course publishes in place of
the reader's edition.

The instructor's key goes beside it, to ``_build/instructor-key``, never into it: every
exercise's solution, every check question's answer, and the graded questions with their answers
and explanations for the build's seed, in both languages, with the graded questions in the
formats learning platforms import (``revformer.exports``).

``python tools/student.py build`` (after ``make book``); ``python tools/student.py scan DIR``
names every solution or key left in a built student site, its notebooks or its wheel.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import html
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from book import read, write  # noqa: E402  (the build's notebook files, one format)
BUILD = ROOT / "_build"
SOLUTION_CALL = re.compile(r"^book_solution\(", re.M)
# A check question's answer, collapsed under it, in either language.
ANSWER = re.compile(r"\n*<details>\s*<summary>(?:Show the answer|显示答案)</summary>.*?</details>", re.S)
# The playground's answers to its "What to try" list, which a code cell of playground.md writes.
PLAYGROUND_ANSWERS = "<summary>What this build's models do</summary>"
REVEALED = re.compile(r"<summary>(?:Show the answer|显示答案|What this build's models do|本次构建的模型做了什么)</summary>")
# The sentence before a solution cell that announces the solution (its last sentence, in either language).
ANNOUNCEMENT = re.compile(r"\s*(?:One solution|The solutions, collapsed below|下面是一种解法|下面折叠着|"
                          r"下方折叠的参考解答)[^\n]*(?:\n[^\n]+)*\Z")
QUIZ_DATA = re.compile(r'(<script type="application/json" class="rf-quiz-data">)(.*?)(</script>)', re.S)
KEY_CONTEXT = re.compile(r"^\d\d q\w+ (?:explanation|hint|feedback)(?: \d+)?$")


# Sentences of the reader's edition that point at an answer the student edition leaves out, or at the launch
# buttons it does not have (book/_ext: revformer_edition), and what the student edition says instead
# (English, then Chinese); a space matches any run of white space, as pages wrap.
POINTERS = (
    ("questions whose answers you reveal, and at least one the page grades for you.",
     "questions to answer before you read on; your course collects the answers."),
    ("the check questions work in the page itself, with no Python and no network.",
     "the check questions are on the page itself, with no Python needed to read them."),
    ("Try each, then open what this build's models do on the test set. They are one build's models",
     "Try each, and write down what you see. The models are one build's"),
    ("then the answer: it links to the chapter that teaches the idea.", "and check your answer against it."),
    ("use the rocket button at the top of a chapter and choose Colab.",
     "download the chapter's notebook with the link under its title and open it there (File, Upload notebook)."),
    ("一些可以点开查看答案的问题，以及至少一个由页面为你评分的问题。", "一些问题，请在读下去之前作答；答案由你的课程收取。"),
    ("检查题可以直接在页面里作答，不需要 Python，也不需要联网。", "检查题就在页面上，读题不需要 Python。"),
    ("每一项都试过之后，再展开下面的内容，看看本次构建的模型在测试集上的表现。它们只是",
     "每一项都试一试，记下你看到的结果。这些模型只是"),
    ("最后打开答案：答案会链接到讲授相关概念的那一章。", "用它检验你的答案。"),
    ("点击章节顶部的火箭按钮，选择 Colab。", "用章节标题下的链接下载本章的 notebook，再在 Colab 中打开它（文件 → 上传笔记本）。"),
    # chapters 1-3: the questions the reader's page grades itself; chapter 14: the launch buttons
    ("The page grades the next two questions itself.", "Your course grades the next two questions."),
    ("The page grades the next three questions itself.", "Your course grades the next three questions."),
    ("The page grades the next four questions itself.", "Your course grades the next four questions."),
    ("下面两个问题由本页自动评分。", "下面两个问题由你的课程评分。"),
    ("下面三个问题由本页自动评分。", "下面三个问题由你的课程评分。"),
    ("下面四个问题由本页自动评分。", "下面四个问题由你的课程评分。"),
    ("press **Run this chapter in Colab** (or choose **Colab** under the rocket button at the top of the page).",
     "download the chapter's notebook with the link there and upload it with **File > Upload notebook**."),
    ("点击 **在 Colab 中运行本章**（也可以在页面顶部的火箭按钮下选择 **Colab**）。",
     "用那里的链接下载本章的 notebook，再用 **File > Upload notebook**（文件 > 上传笔记本）上传。"),
    ("The rocket's **Binder** entry opens", "**Binder** opens"),
    ("火箭按钮里的 **Binder** 会在", "**Binder** 会在"),
    ("Open any chapter from the rocket button in Colab,", "Open any chapter's notebook in Colab,"),
    ("通过火箭按钮在 Colab 中打开任意一章，", "在 Colab 中打开任意一章的 notebook，"),
)
# Links that open the repository's notebooks (which keep the answers): the landing page's "Run chapter 1 in Colab".
LAUNCH = re.compile(r'<a\b[^>]*href="https://(?:colab\.research\.google\.com|mybinder\.org)/[^"]*"[^>]*>.*?</a>', re.S)


def _pointer(sentence: str) -> re.Pattern:
    return re.compile(r"\s+".join(re.escape(word) for word in sentence.split(" ")))


def student_text(text: str) -> str:
    """Markdown of the reader's edition with the sentences that point at removed answers rewritten."""
    for old, new in POINTERS:
        text = _pointer(old).sub(new, text)
    return text


def _key_fields() -> tuple:
    from revformer.quiz import KEY_FIELDS

    return KEY_FIELDS


def unkeyed_payload(match: re.Match) -> str:
    """A quiz's page data without its key: the page then says the course grades the question."""
    data = json.loads(match.group(2))
    for field in _key_fields():
        data.pop(field, None)
    payload = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")
    return match.group(1) + payload + match.group(3)


def _strip(value):
    """Every string in an output (its data and its other languages' data) with its quizzes unkeyed and no
    link to Colab or Binder."""
    if isinstance(value, str):
        value = QUIZ_DATA.sub(unkeyed_payload, value) if "rf-quiz-data" in value else value
        return LAUNCH.sub("", value)  # the landing page's "Run chapter 1 in Colab", in an executed page's output
    if isinstance(value, list):
        return [_strip(v) for v in value]
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items()}
    return value


def _text(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def student_notebook(nb: dict) -> dict:
    """``nb`` (with or without outputs) as the student edition shows it."""
    nb = json.loads(json.dumps(nb))
    cells, after_solution = [], False
    for cell in nb["cells"]:
        text = _text(cell)
        if cell["cell_type"] == "code" and SOLUTION_CALL.search(text):
            if cells and cells[-1]["cell_type"] == "markdown":  # the sentence that announces it
                announced = ANNOUNCEMENT.sub("", _text(cells[-1]))
                if announced.strip():
                    cells[-1]["source"] = announced
                else:
                    cells.pop()
            after_solution = True
            continue
        if cell["cell_type"] == "markdown":
            if after_solution and re.search(r"^#", text, re.M):  # a remark on the solution, before the next heading
                text = re.sub(r"\A(?:(?!^#).*\n)*", "", text, flags=re.M)
            text = student_text(ANSWER.sub("", text))
            cell["source"] = text
        after_solution = False
        if cell["cell_type"] == "code":
            cell["outputs"] = _strip(cell.get("outputs", []))
        cells.append(cell)
    nb["cells"] = cells
    return nb


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _unkeyed_questions(data: bytes) -> bytes:
    bank = json.loads(data)
    keys = set(_key_fields()) | {"from_the_run"}
    bank = {key: {f: v for f, v in record.items() if f not in keys} for key, record in bank.items()}
    return (json.dumps(bank, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _keyed_entries(catalogue) -> list:
    """The entries of a compiled catalogue that translate a key (an explanation, a hint, a feedback)."""
    return [e for e in catalogue if e.msgctxt and KEY_CONTEXT.match(e.msgctxt)]


def _unkeyed_catalogue(data: bytes) -> bytes:
    import polib

    catalogue = polib.mofile(data)  # polib reads a catalogue's bytes as well as its path
    for entry in _keyed_entries(catalogue):
        catalogue.remove(entry)
    return catalogue.to_binary()


def student_wheel(wheel: Path, folder: Path) -> Path:
    """The package's wheel without its solutions and its questions' keys, into ``folder``; its RECORD anew."""
    folder.mkdir(parents=True, exist_ok=True)
    files, record = {}, None
    with zipfile.ZipFile(wheel) as source:
        for name in source.namelist():
            if "/exercises/solutions/" in name:
                continue
            if name.endswith(".dist-info/RECORD"):
                record = name
                continue
            data = source.read(name)
            if re.fullmatch(r"revformer/questions/\d\d\.json", name):
                data = _unkeyed_questions(data)
            elif name.endswith(".mo"):
                data = _unkeyed_catalogue(data)
            files[name] = data
    if record is None:
        raise ValueError(f"{wheel} has no RECORD: it is not a wheel")
    target = folder / wheel.name
    with zipfile.ZipFile(target.with_suffix(".tmp"), "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in files.items():
            out.writestr(name, data)
        lines = [_record_line(name, data) for name, data in files.items()] + [f"{record},,"]
        out.writestr(record, "\n".join(lines) + "\n")
    os.replace(target.with_suffix(".tmp"), target)
    return target


# What may not appear anywhere in the student edition: a solution, a revealed answer, a key.
def leaks(text: str) -> list[str]:
    """The solutions or keys in ``text`` (a page, a notebook, a script), named."""
    found = []
    if 'class="rf-solution"' in text or "revformer.exercises.solutions" in text or SOLUTION_CALL.search(text):
        found.append("a solution")
    if ANSWER.search(text) or REVEALED.search(text):
        found.append("a check question's answer")
    if LAUNCH.search(text):
        found.append("a link that opens the repository's notebooks in Colab or Binder")
    for old, _ in POINTERS:
        if _pointer(old).search(text):
            found.append(f"a sentence the student edition rewrites ({old[:40]}...)")
    for match in QUIZ_DATA.finditer(text):
        data = json.loads(match.group(2))
        shown = sorted(set(data) & set(_key_fields()))
        if shown:
            found.append(f"the key of question {data.get('ref', '?')} ({', '.join(shown)})")
    return found


def strings(value) -> list[str]:
    """Every text in a notebook's JSON: a list of lines joined, as Jupyter joins them."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        if value and all(isinstance(v, str) for v in value):
            return ["".join(value)]
        return [s for v in value for s in strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    return []


def scan(site: Path) -> list[str]:
    """Every solution or key in a student site (pages, scripts, notebooks) and its wheels, by file."""
    found = []
    for path in sorted(site.rglob("*")):
        if not path.is_file():
            continue
        if path.suffix in (".html", ".js", ".ipynb", ".json", ".txt"):
            text = path.read_text(encoding="utf-8", errors="replace")
            if path.suffix == ".ipynb":  # every source and output as the notebook's reader gets it
                text = "\n".join(strings(json.loads(text)))
            found += [f"{path.relative_to(site)}: {what}" for what in leaks(text)]
        elif path.suffix == ".whl":
            with zipfile.ZipFile(path) as wheel:
                for name in wheel.namelist():
                    if "/exercises/solutions/" in name:
                        found.append(f"{path.name}: {name}")
                    elif re.fullmatch(r"revformer/questions/\d\d\.json", name):
                        for key, record in json.loads(wheel.read(name)).items():
                            if set(record) & set(_key_fields()):
                                found.append(f"{path.name}: {name} {key} keeps its key")
                    elif name.endswith(".mo"):
                        import polib

                        keys = [e.msgctxt for e in _keyed_entries(polib.mofile(wheel.read(name)))]
                        if keys:
                            found.append(f"{path.name}: {name} translates {len(keys)} answers ({keys[0]}, ...)")
    return found


def student_page(text: str) -> str:
    """A Markdown page (MyST, with code cells) without the statement that reveals the playground's answers:
    the last of its code cell, ``say("<details><summary>What this build's models do</summary> ...)``."""
    text = re.sub(r'say\("<details>' + re.escape(PLAYGROUND_ANSWERS) + r'.*?\)\n(?=```)', "", text, flags=re.S)
    return student_text(text)


def unkey_site(site: Path) -> None:
    """The built pages and notebooks of a student site with every quiz unkeyed (the Markdown pages' quizzes
    are executed in the student build itself, with their keys) and no link to Colab or Binder."""
    for path in site.rglob("*"):
        if path.suffix == ".html":
            text = path.read_text(encoding="utf-8")
            changed = LAUNCH.sub("", QUIZ_DATA.sub(unkeyed_payload, text))
            if changed != text:
                path.write_text(changed, encoding="utf-8")
        elif path.suffix == ".ipynb":
            write(path, student_notebook(read(path)))


# The build.
def _copy_extra(source: Path, target: Path, notebooks: Path, wheel_folder: Path) -> None:
    """The site's downloads for the student edition: its wheel and its notebooks in place of the reader's."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    downloads = target / "downloads"
    for old in downloads.glob("revformer-*.whl"):
        old.unlink()
    for wheel in wheel_folder.glob("revformer-*.whl"):
        shutil.copy(wheel, downloads / wheel.name)
    for path in sorted(notebooks.glob("*.ipynb")):
        write(downloads / "notebooks" / path.name, student_notebook(read(path)))


TEACHERS_PAGE = "book/teaching"


def without_teachers_page(toc: Path, source: Path) -> None:
    """``source``'s table of contents (from ``toc``) and pages without the teacher's page: it is for teachers."""
    text = toc.read_text(encoding="utf-8")
    entry = f"  - file: {TEACHERS_PAGE}\n"
    if entry not in text:
        raise SystemExit(f"{toc} does not list {TEACHERS_PAGE} as the student build expects")
    (source / "_toc.yml").write_text(text.replace(entry, ""), encoding="utf-8")
    (source / f"{TEACHERS_PAGE}.md").unlink()


def _jupyter_book(source: Path, output: Path, env: dict) -> None:
    command = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()", "build", str(source),
               "--path-output", str(output), "-W", "-n", "--keep-going"]
    print("+", " ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, env=env, check=True)


def build(english_build: Path = BUILD, env=None) -> int:
    """The student edition of the built book (both languages) into ``<build>/html-student``, and the key."""
    import yaml

    import translations

    env = dict(env or os.environ)
    work = english_build / "student"
    shutil.rmtree(work, ignore_errors=True)
    wheels = work / "wheel"
    for wheel in (english_build / "site-extra" / "downloads").glob("revformer-*.whl"):
        student_wheel(wheel, wheels)
    if not list(wheels.glob("*.whl")):
        raise SystemExit("no wheel in the build's downloads: build the book first (make book)")
    # English: the executed notebooks of the reader's build, as the student edition shows them
    source = work / "src"
    shutil.copytree(ROOT / "book", source / "book", ignore=shutil.ignore_patterns("_ext", "_build", "*.ipynb"))
    for path in translations.sources():
        if path.suffix == ".ipynb":
            write(source / "book" / path.name, student_notebook(translations.executed(english_build, path)))
    for page in (source / "book").glob("*.md"):
        page.write_text(student_page(page.read_text(encoding="utf-8")), encoding="utf-8")
    without_teachers_page(ROOT / "_toc.yml", source)
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    config["execute"]["exclude_patterns"] = ["book/*.ipynb"]  # their outputs are the reader's build's run
    config["sphinx"]["local_extensions"] = {"revformer_book": str(ROOT / "book" / "_ext")}
    extra = work / "site-extra"
    _copy_extra(english_build / "site-extra", extra, ROOT / "book", wheels)
    config["sphinx"]["config"].update(html_extra_path=[str(extra)], revformer_edition="student",
                                      revformer_section_ids=str(work / "section-ids.json"))
    (source / "_config.yml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
    _jupyter_book(source, work, env)
    # Chinese: the Chinese edition's sources with their outputs, the same way
    zh_work, zh_source = work / "zh_CN", work / "zh_CN" / "src"
    shutil.copytree(english_build / "zh_CN" / "src", zh_source)
    for page in (zh_source / "book").glob("*.md"):
        page.write_text(student_page(page.read_text(encoding="utf-8")), encoding="utf-8")
    for path in sorted((zh_source / "book").glob("*.ipynb")):
        write(path, student_notebook(read(path)))
    without_teachers_page(zh_source / "_toc.yml", zh_source)
    zh_extra = zh_work / "site-extra"
    _copy_extra(english_build / "zh_CN" / "site-extra", zh_extra, translations.ZH / "book", wheels)
    zh_config = yaml.safe_load((zh_source / "_config.yml").read_text(encoding="utf-8"))
    zh_config["sphinx"]["config"].update(html_extra_path=[str(zh_extra)], revformer_edition="student",
                                         revformer_section_ids=str(work / "section-ids.json"))
    (zh_source / "_config.yml").write_text(yaml.safe_dump(zh_config, allow_unicode=True, sort_keys=False),
                                           encoding="utf-8")
    _jupyter_book(zh_source, zh_work, dict(env, REVFORMER_LANGUAGE="zh_CN"))
    site = english_build / "html-student"
    shutil.rmtree(site, ignore_errors=True)
    shutil.copytree(work / "_build" / "html", site)
    shutil.copytree(zh_work / "_build" / "html", site / "zh_CN")
    unkey_site(site)
    found = scan(site)
    if found:
        raise SystemExit("the student edition still gives answers away:\n" + "\n".join(found))
    print(f"the student edition is in {site}")
    key = write_key(english_build)
    print(f"the instructor's key is in {key}")
    return 0


# The instructor's key.
def graded_answers(english_build: Path) -> dict:
    """Every graded question's answer as the build's pages asked it, by reference ("16 q2")."""
    import translations

    answers = {}
    for path in translations.sources():
        if path.suffix != ".ipynb":
            continue
        text = "\n".join(strings(translations.executed(english_build, path)["cells"]))
        for match in QUIZ_DATA.finditer(text):
            data = json.loads(match.group(2))
            if data.get("ref") and "answer" in data:
                answers[data["ref"]] = data["answer"]
    return answers


def playground_question(english_build: Path) -> dict:
    """The playground's graded question as the built pages ask it, in both languages, for the key (its answer
    comes from the run, and the page computes it itself, so it is not in the package's question files)."""
    from bs4 import BeautifulSoup

    found = {}
    for language, page in (("en", "html/book/playground.html"), ("zh_CN", "html/zh_CN/book/playground.html")):
        soup = BeautifulSoup((english_build / page).read_text(encoding="utf-8"), "html.parser")
        quiz = soup.select_one('.rf-quiz[data-kind="number"]')
        if quiz is None:
            raise SystemExit(f"{page} has no graded question: the key expects the playground's")
        question = quiz.select_one("p.rf-quiz-q")
        question.strong.decompose()
        data = json.loads(quiz.select_one("script.rf-quiz-data").string)
        found[language] = {"question": question.get_text().strip(), "answer": data["answer"],
                           "explanation": data["explanation"]}
    return found


def write_answers(english_build: Path = BUILD) -> dict:
    """``graded-answers.json`` in the build: its seed and its pages' answers (the exports read them)."""
    from revformer.files import write_json

    stamp = (english_build / ".package-hash").read_text()
    record = {"seed": int(re.match(r"seed (-?\d+)", stamp).group(1)), "answers": graded_answers(english_build)}
    write_json(english_build / "graded-answers.json", record)
    return record


def _solution_sources(nb: dict) -> list[str]:
    import importlib
    import inspect

    sources = []
    for cell in nb["cells"]:
        for chapter, names in re.findall(r'book_solution\("(\d\d)", (\([^)]*\)|"[^"]+")', _text(cell)):
            module = importlib.import_module(f"revformer.exercises.solutions.ch{chapter}")
            for name in re.findall(r'"(\w+)"', names):
                sources.append(inspect.getsource(getattr(module, name)))
    return sources


LABELS = {"en": {"title": "Instructor's key", "seed": "Built with seed {seed}. Do not publish this file.",
                 "exercise": "Exercise: the book's solution", "check": "Check questions and their answers",
                 "graded": "Graded questions", "answer": "Answer", "explanation": "Why",
                 "tolerance": "accepted within {tolerance}", "run": "from this build's run",
                 "playground": "The model in your browser (the playground)"},
          "zh_CN": {"title": "教师答案", "seed": "用种子 {seed} 构建。请勿公开此文件。",
                    "exercise": "练习：本书的解答", "check": "检查题及其答案",
                    "graded": "自动评分题", "answer": "答案", "explanation": "理由",
                    "tolerance": "容差 {tolerance}", "run": "取自本次构建的运行",
                    "playground": "浏览器里的模型"}}


# A check question in the key: a numbered question (a list item, "**1.** ...", or chapter 15's "#### 9. ..."), what
# belongs to it up to its answer, then the answer; the section's other lines speak to the page's reader only.
PAGE_ONLY = re.compile(r" ?(?:The folded cell below[^.\n]*\.|下面折叠起来的单元格[^。\n]*。)")  # it points at the page
QUESTION = re.compile(r"^(?:#{3,4} |\*\*)?(\d+)\.(?:\*\*)? ")
BLOCKS = re.compile(r"(<details>.*?</details>|^[ \t]*```.*?^[ \t]*```[ \t]*$)", re.S | re.M)


def check_questions(nb: dict, answer_label: str) -> list[str]:
    """A chapter's check questions and their answers, as the key shows them: from the section's heading
    (the last ``##`` heading before the first answer) to the last answer, questions and answers only."""
    text = "\n\n".join(_text(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    answers = list(ANSWER.finditer(text))
    if not answers:
        return []
    headings = [m.start() for m in re.finditer(r"^## ", text[:answers[0].start()], re.M)]
    text = text[headings[-1] if headings else 0:answers[-1].end()]
    kept, open_question = [], False
    for part in BLOCKS.split(text):
        if part.startswith("<details>"):
            inner = re.sub(r"<details>\s*<summary>[^<]*</summary>\s*(.*?)\s*</details>", r"\1", part, flags=re.S)
            if not open_question:
                raise ValueError(f"an answer without its question: {inner[:80]!r}")
            kept[-1] += f"\n\n> **{answer_label}.** " + PAGE_ONLY.sub("", inner).replace("\n", "\n> ")
            open_question = False
            continue
        blocks = [part] if "```" in part else re.split(r"\n\s*\n", part)
        for block in blocks:
            if not block.strip():
                continue
            question = QUESTION.match(block.strip())
            if question:
                kept.append(f"**{question.group(1)}.** " + block.strip()[question.end():])
                open_question = True
            elif open_question:
                kept[-1] += "\n\n" + block.strip("\n")
    return kept


def key_markdown(language: str, seed: int, answers: dict, playground: dict | None = None) -> str:
    """The key in Markdown: per chapter the exercise's solution, the check questions' answers, the graded key;
    the playground's graded question last, as the build's page asked it."""
    import translations
    from revformer.exports import _number, graded_questions

    words = LABELS[language]
    graded = {}
    for q in graded_questions(language, answers):
        graded.setdefault(q.ref[:2], []).append(q)
    run_refs = _from_the_run()
    folder = ROOT / "book" if language == "en" else translations.ZH / "book"
    chapters, parts = [], []
    for path in sorted(folder.glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        chapter = path.name[:2]
        title = next(_text(c).splitlines()[0].lstrip("# ") for c in nb["cells"] if c["cell_type"] == "markdown")
        chapters.append(f"[{title}](#ch-{chapter})")
        parts.append(f'<a id="ch-{chapter}"></a>\n\n## {title}')
        for source in _solution_sources(nb):
            parts += [f"### {words['exercise']}", f"```python\n{source.rstrip()}\n```"]
        checks = check_questions(nb, words["answer"])
        if checks:
            parts.append(f"### {words['check']}")
            parts += checks
        if graded.get(chapter):
            parts.append(f"### {words['graded']}")
        for q in graded.get(chapter, []):
            if q.kind == "choice":
                right = f"({chr(97 + int(q.answer))}) {q.options[int(q.answer)]}"
                options = "\n".join(f"   - ({chr(97 + i)}) {o}" for i, o in enumerate(q.options))
                body = f"{options}\n\n   **{words['answer']}:** {right}"
            else:
                tolerance = words["tolerance"].format(tolerance=_number(q.tolerance))
                run = f", {words['run']}" if q.ref in run_refs else ""
                body = f"   **{words['answer']}:** {key_number(q.answer, q.tolerance)} ({tolerance}{run})"
            parts.append(f"- **{q.ref}.** {q.question}\n\n{body}\n\n   *{words['explanation']}:* {q.explanation}")
    if playground:
        chapters.append(f"[{words['playground']}](#playground)")
        parts += ['<a id="playground"></a>\n\n## ' + words["playground"], f"### {words['graded']}",
                  f"- **playground.** {html.escape(playground['question'], quote=False)}\n\n"
                  f"   **{words['answer']}:** {_number(playground['answer'])} ({words['run']})\n\n"
                  f"   *{words['explanation']}:* {html.escape(playground['explanation'], quote=False)}"]
    contents = "\n".join(f"- {link}" for link in chapters)
    return "\n\n".join([f"# {words['title']}", words["seed"].format(seed=seed), contents] + parts) + "\n"


def key_number(value: float, tolerance: float) -> str:
    """``value`` as a teacher reads it in the key: to the decimal the tolerance asks for (0.092 within
    0.002), where the exports keep every digit a grader's software compares."""
    from revformer.exports import _number

    if tolerance <= 0 or float(value).is_integer():
        return _number(value)
    return f"{float(value):.{max(0, -math.floor(math.log10(tolerance)))}f}"


def _from_the_run() -> set:
    from revformer.exports import chapters
    from revformer.quiz import _bank

    return {f"{c} {k}" for c in chapters() for k, r in _bank(f"{c}.json").items() if r.get("from_the_run")}


_PAGE = """<!DOCTYPE html>
<html lang="{lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>
body{{font:16px/1.6 system-ui,sans-serif;max-width:52em;margin:2em auto;padding:0 1em;color:#1b1b1b;background:#fff}}
pre{{background:#f4f4f4;padding:.8em;overflow-x:auto}}code{{font-size:.92em}}blockquote{{border-left:3px solid #2a6f4e;
margin:.5em 0;padding:.1em 1em;background:#f3f8f5}}h2{{border-top:1px solid #ccc;padding-top:1em}}
@media (prefers-color-scheme: dark){{body{{color:#e6e6e6;background:#161616}}pre{{background:#242424}}
blockquote{{background:#1d2a23}}}}
</style>
<script defer src="tex-chtml.js"></script></head><body>
{body}
</body></html>
"""


def _math(content: str, options: dict) -> str:
    """A formula as MathJax reads it from the page: \\(...\\) inline, \\[...\\] displayed."""
    content = html.escape(content, quote=False)
    return f'<div class="math">\\[{content}\\]</div>' if options.get("display_mode") else \
        f'<span class="math">\\({content}\\)</span>'


def write_key(english_build: Path = BUILD) -> Path:
    """The instructor's key in both languages, with the graded questions in every export format."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    from revformer.exports import FORMATS, SUFFIXES, write

    record = write_answers(english_build)
    seed, answers = record["seed"], record["answers"]
    playground = playground_question(english_build)  # both editions' pages: built by now, unlike at write_answers
    folder = english_build / "instructor-key"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copy(english_build / "graded-answers.json", folder / "graded-answers.json")
    render = MarkdownIt("commonmark").use(dollarmath_plugin, renderer=_math).enable("table")
    mathjax = english_build / "html" / "_static" / "mathjax"  # the site's own copy: the key works offline too
    shutil.copy(mathjax / "tex-chtml.js", folder / "tex-chtml.js")
    shutil.copytree(mathjax / "output" / "chtml" / "fonts", folder / "output" / "chtml" / "fonts")
    for language in ("en", "zh_CN"):
        text = key_markdown(language, seed, answers, playground[language])
        suffix = "" if language == "en" else ".zh_CN"
        (folder / f"key{suffix}.md").write_text(text, encoding="utf-8")
        page = _PAGE.format(lang="zh-CN" if language == "zh_CN" else "en", title=html.escape(LABELS[language]["title"]),
                            body=render.render(text))
        (folder / f"key{suffix}.html").write_text(page, encoding="utf-8")
        for fmt in FORMATS:
            write(fmt, folder / f"questions-{seed}-{language}{SUFFIXES[fmt]}", language, answers)
    return folder


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/student.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    builder = commands.add_parser("build", help="the student edition and the key, from the built book")
    builder.add_argument("--build", type=Path, default=BUILD, help="the reader's build's folder")
    scanner = commands.add_parser("scan", help="name every solution or key in a built student site")
    scanner.add_argument("site", type=Path)
    commands.add_parser("key", help="only the instructor's key, from the built book")
    commands.add_parser("answers", help="the build's graded answers, for the exports (make book writes them)")
    args = parser.parse_args(argv)
    if args.command == "build":
        return build(args.build)
    if args.command == "answers":
        record = write_answers()
        print(f"{len(record['answers'])} graded answers of seed {record['seed']} in {BUILD / 'graded-answers.json'}")
        return 0
    if args.command == "key":
        print(write_key())
        return 0
    found = scan(args.site)
    print("\n".join(found) if found else f"no solution and no key in {args.site}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
