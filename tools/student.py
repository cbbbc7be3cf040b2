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
import os
import re
import shutil
import subprocess
import sys
import tempfile
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
    """Every string in an output (its data and its other languages' data) with its quizzes unkeyed."""
    if isinstance(value, str):
        return QUIZ_DATA.sub(unkeyed_payload, value) if "rf-quiz-data" in value else value
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
    cells = []
    for cell in nb["cells"]:
        text = _text(cell)
        if cell["cell_type"] == "code" and SOLUTION_CALL.search(text):
            if cells and cells[-1]["cell_type"] == "markdown":  # the sentence that announces it
                announced = ANNOUNCEMENT.sub("", _text(cells[-1]))
                if announced.strip():
                    cells[-1]["source"] = announced
                else:
                    cells.pop()
            continue
        if cell["cell_type"] == "markdown" and ANSWER.search(text):
            cell["source"] = ANSWER.sub("", text)
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


def _unkeyed_catalogue(data: bytes) -> bytes:
    import polib

    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.mo"
        source.write_bytes(data)
        catalogue = polib.mofile(str(source))
        for entry in [e for e in catalogue if e.msgctxt and KEY_CONTEXT.match(e.msgctxt)]:
            catalogue.remove(entry)
        target = Path(folder) / "out.mo"
        catalogue.save(str(target))
        return target.read_bytes()


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

                        with tempfile.NamedTemporaryFile(suffix=".mo") as copy:
                            copy.write(wheel.read(name))
                            copy.flush()
                            keys = [e.msgctxt for e in polib.mofile(copy.name) if e.msgctxt and
                                    KEY_CONTEXT.match(e.msgctxt)]
                        if keys:
                            found.append(f"{path.name}: {name} translates {len(keys)} answers ({keys[0]}, ...)")
    return found


def student_page(text: str) -> str:
    """A Markdown page (MyST, with code cells) without the statement that reveals the playground's answers:
    the last of its code cell, ``say("<details><summary>What this build's models do</summary> ...)``."""
    return re.sub(r'say\("<details>' + re.escape(PLAYGROUND_ANSWERS) + r'.*?\)\n(?=```)', "", text, flags=re.S)


def unkey_site(site: Path) -> None:
    """The built pages and notebooks of a student site with every quiz unkeyed (the Markdown pages' quizzes
    are executed in the student build itself, with their keys)."""
    for path in site.rglob("*"):
        if path.suffix == ".html":
            text = path.read_text(encoding="utf-8")
            if "rf-quiz-data" in text:
                path.write_text(QUIZ_DATA.sub(unkeyed_payload, text), encoding="utf-8")
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
    shutil.copy(ROOT / "_toc.yml", source / "_toc.yml")
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    config["execute"]["exclude_patterns"] = ["book/*.ipynb"]  # their outputs are the reader's build's run
    config["sphinx"]["local_extensions"] = {"revformer_book": str(ROOT / "book" / "_ext")}
    extra = work / "site-extra"
    _copy_extra(english_build / "site-extra", extra, ROOT / "book", wheels)
    config["sphinx"]["config"].update(html_extra_path=[str(extra)],
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
    zh_extra = zh_work / "site-extra"
    _copy_extra(english_build / "zh_CN" / "site-extra", zh_extra, translations.ZH / "book", wheels)
    zh_config = yaml.safe_load((zh_source / "_config.yml").read_text(encoding="utf-8"))
    zh_config["sphinx"]["config"].update(html_extra_path=[str(zh_extra)],
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


def write_answers(english_build: Path = BUILD) -> dict:
    """``graded-answers.json`` in the build: its seed and its pages' answers (the exports read it)."""
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
                 "tolerance": "accepted within {tolerance}", "run": "from this build's run"},
          "zh_CN": {"title": "教师答案", "seed": "用种子 {seed} 构建。请勿公开此文件。",
                    "exercise": "练习：本书的解答", "check": "检查题及其答案",
                    "graded": "自动评分题", "answer": "答案", "explanation": "理由",
                    "tolerance": "容差 {tolerance}", "run": "取自本次构建的运行"}}


def key_markdown(language: str, seed: int, answers: dict) -> str:
    """The key in Markdown: per chapter the exercise's solution, the check questions' answers, the graded key."""
    import translations
    from revformer.exports import graded_questions

    words = LABELS[language]
    graded = {}
    for q in graded_questions(language, answers):
        graded.setdefault(q.ref[:2], []).append(q)
    folder = ROOT / "book" if language == "en" else translations.ZH / "book"
    parts = [f"# {words['title']}", words["seed"].format(seed=seed)]
    for path in sorted(folder.glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        chapter = path.name[:2]
        title = next(_text(c).splitlines()[0].lstrip("# ") for c in nb["cells"] if c["cell_type"] == "markdown")
        parts.append(f"## {title}")
        for source in _solution_sources(nb):
            parts += [f"### {words['exercise']}", f"```python\n{source.rstrip()}\n```"]
        checks = [_text(c) for c in nb["cells"] if c["cell_type"] == "markdown" and ANSWER.search(_text(c))]
        if checks:
            parts.append(f"### {words['check']}")
            for text in checks:
                text = re.sub(r"^#+ .*\n", "", text)
                text = re.sub(r"<details>\s*<summary>[^<]*</summary>\s*(.*?)\s*</details>",
                              lambda m: f"> **{words['answer']}.** " + m.group(1).replace("\n", "\n> "), text, flags=re.S)
                parts.append(text.strip())
        if graded.get(chapter):
            parts.append(f"### {words['graded']}")
            for q in graded[chapter]:
                if q.kind == "choice":
                    right = f"({chr(97 + int(q.answer))}) {q.options[int(q.answer)]}"
                    options = "\n".join(f"   - ({chr(97 + i)}) {o}" for i, o in enumerate(q.options))
                    body = f"{options}\n\n   **{words['answer']}:** {right}"
                else:
                    from revformer.exports import _number

                    tolerance = words["tolerance"].format(tolerance=_number(q.tolerance))
                    run = f", {words['run']}" if q.ref in _from_the_run() else ""
                    body = f"   **{words['answer']}:** {_number(q.answer)} ({tolerance}{run})"
                parts.append(f"- **{q.ref}.** {q.question}\n\n{body}\n\n   *{words['explanation']}:* {q.explanation}")
    return "\n\n".join(parts) + "\n"


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
</style></head><body>
{body}
</body></html>
"""


def write_key(english_build: Path = BUILD) -> Path:
    """The instructor's key in both languages, with the graded questions in every export format."""
    from markdown_it import MarkdownIt

    from revformer.exports import FORMATS, SUFFIXES, write

    record = write_answers(english_build)
    seed, answers = record["seed"], record["answers"]
    folder = english_build / "instructor-key"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copy(english_build / "graded-answers.json", folder / "graded-answers.json")
    render = MarkdownIt("commonmark").enable("table")
    for language in ("en", "zh_CN"):
        text = key_markdown(language, seed, answers)
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
