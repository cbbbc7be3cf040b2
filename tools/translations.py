"""The Chinese edition: ``python tools/translations.py init | check | notebooks | build``.

Each page of the book has a catalogue in ``locale/zh_CN/``, named after the
page (``locale/zh_CN/05_causal_mask.json``), and each question file of the
package one in ``code/revformer/questions/zh_CN/``. A catalogue entry holds
the English text it translates beside the translation::

    {"source": "book/05_causal_mask.ipynb",
     "cells": {"cell-000": {"en": "# 5. The causal mask\\n...", "zh": "# 5. 因果 mask\\n..."}}}

A notebook's entries are keyed by the markdown cell's id (a figure's alt text
by ``<cell id>:alt``); a Markdown page
(``book/intro.md``) is split into blocks at blank lines outside code fences,
keyed ``b000``, ``b001``, ... An entry whose ``en`` is no longer the English
text is stale: ``check`` names it, and so do the tests.

``notebooks`` writes the Chinese edition's sources, ``zh_CN/book/``: every
chapter as a notebook without outputs (Colab, Binder and the downloads open
these), its markdown cells translated and its setup cell rendered from
``tools/setup_cell.zh_CN.py.template``, and the Markdown pages. They are
committed, because Colab opens notebooks from the repository; a test fails
when they differ from what this command writes. ``build`` (run by ``make
book`` after the English edition) gives each Chinese notebook the outputs of
its executed English twin (from the English build's Jupyter cache), each output that
``revformer.i18n`` wrote in both languages shown in Chinese, and builds the
site into ``_build/html/zh_CN``: nothing is trained or executed twice, except
the playground's one cell, which draws the model in Chinese.

``init`` adds an entry, with an empty ``zh``, for every English cell or block
that has none, and drops the entries of cells that no longer exist. It never
touches a stale entry's ``en``: a translator updates ``zh``, then copies the
new English into ``en``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
LOCALE = ROOT / "locale" / "zh_CN"
QUESTIONS = ROOT / "code" / "revformer" / "questions"
QUESTION_TEXT = ("question", "explanation", "hint")  # the text fields of a question; options, feedback: lists
PAGES = ("intro.md", "playground.md", "glossary.md", "references.md")


def sources() -> list[Path]:
    """Every English page the Chinese edition translates: the chapters, then the Markdown pages."""
    return sorted(BOOK.glob("*.ipynb")) + [BOOK / name for name in PAGES]


def catalogue_path(source: Path) -> Path:
    return LOCALE / f"{source.stem}.json"


def md_blocks(text: str) -> list[str]:
    """A Markdown page split at blank lines that are outside ``` or ~~~ fences."""
    blocks, current, fence = [], [], None
    for line in text.split("\n"):
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * len(marker.group(1))
            elif stripped.startswith(fence):
                fence = None
        if line.strip() == "" and fence is None:
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def english(source: Path) -> dict[str, str]:
    """The English text of every translatable cell (notebook) or block (Markdown page), by key."""
    if source.suffix == ".ipynb":
        nb = json.loads(source.read_text(encoding="utf-8"))
        texts = {}
        for c in nb["cells"]:
            if c["cell_type"] == "markdown":
                texts[c["id"]] = "".join(c["source"])
            alt = c["metadata"].get("mystnb", {}).get("image", {}).get("alt")
            if alt:  # a figure's text for a reader who cannot see it, keyed "<cell id>:alt"
                texts[f"{c['id']}:alt"] = alt
        return texts
    text = source.read_text(encoding="utf-8")
    front = ""
    if text.startswith("---\n"):  # MyST front matter: not prose
        end = text.index("\n---\n", 4) + 5
        front, text = text[:end], text[end:]
    return {key: block for key, block, prose in page_blocks(text) if prose}


def page_blocks(text: str) -> list[tuple[str, str, bool]]:
    """A Markdown page's blocks: key, text, and whether it is prose (a ``{code-cell}`` is code, shared)."""
    return [(f"b{i:03d}", block, not block.lstrip().startswith(("```{code-cell}", "~~~{code-cell}")))
            for i, block in enumerate(md_blocks(text))]


def page_body(source: Path) -> str:
    text = source.read_text(encoding="utf-8")
    return text[len(front_matter(source)):]


def front_matter(source: Path) -> str:
    text = source.read_text(encoding="utf-8")
    return text[: text.index("\n---\n", 4) + 5] if text.startswith("---\n") else ""


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def save(path: Path, data: dict) -> None:
    """Write JSON through a temporary file and a rename: a catalogue is never half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    os.replace(temporary, path)


def question_english(number: str) -> dict:
    return json.loads((QUESTIONS / f"{number}.json").read_text(encoding="utf-8"))


def question_texts(question: dict) -> dict:
    """The translatable text of one question: its text fields, options and feedback."""
    out = {field: question[field] for field in QUESTION_TEXT if field in question}
    for field in ("options", "feedback"):
        if field in question:
            out[field] = list(question[field])
    return out


def init() -> int:
    added = 0
    for source in sources():
        path = catalogue_path(source)
        data = load(path)
        cells = data.get("cells", {})
        now = english(source)
        merged = {}
        for key, text in now.items():
            entry = cells.get(key)
            if entry is None:
                entry, added = {"en": text, "zh": ""}, added + 1
            merged[key] = entry
        save(path, {"source": str(source.relative_to(ROOT)), "language": "zh_CN", "cells": merged})
    for english_file in sorted(QUESTIONS.glob("*.json")):
        path = QUESTIONS / "zh_CN" / english_file.name
        data = load(path)
        merged = {}
        for name, question in question_english(english_file.stem).items():
            old = data.get(name, {})
            entry = {}
            for field, text in question_texts(question).items():
                if isinstance(text, list):
                    have = old.get(field, [])
                    entry[field] = [have[i] if i < len(have) else {"en": t, "zh": ""} for i, t in enumerate(text)]
                else:
                    entry[field] = old.get(field, {"en": text, "zh": ""})
            merged[name] = entry
        save(path, merged)
    print(f"{added} new entries")
    return 0


# What a translation keeps exactly as the English has it: code spans, math, link targets, HTML tags,
# MyST roles and directives, and the heading structure.
KEPT = {
    "code span": re.compile(r"(?<!`)`[^`\n]+`(?!`)"),
    "math": re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.S),
    "link target": re.compile(r"\]\(([^)\s]+)\)"),
    "HTML tag": re.compile(r"</?[a-zA-Z][^>]*>"),
    "MyST role": re.compile(r"\{[a-z]+\}(?=`)"),
    "directive": re.compile(r"^\s*(?::::*|```+)\{[a-z-]+\}.*$", re.M),
    "code fence": re.compile(r"^\s*(?:```+|~~~+).*$", re.M),
}
HAN = re.compile(r"[\u4e00-\u9fff]")


ROLE = re.compile(r"\{([a-z]+)\}`([^`]*)`")


def _unroled(text: str) -> str:
    """MyST roles as their target alone: ``{term}`因果 mask <causal mask>` `` -> ``{term}`causal mask` ``."""
    return ROLE.sub(lambda m: "{%s}`%s`" % (m.group(1), re.sub(r"^.*<([^<>]*)>$", r"\1", m.group(2))), text)


def _untexted(math: str) -> str:
    """Math without its \\text{...} words (translated, and so reordered): its symbols, as a sorted multiset."""
    if "\\text{" not in math:
        return math
    return "".join(sorted(re.sub(r"\\text\{[^{}]*\}|\s", "", math)))


def _headings(text: str) -> list[str]:
    lines, fence, out = text.split("\n"), False, []
    for line in lines:
        if re.match(r"\s*(```|~~~)", line):
            fence = not fence
        elif not fence and re.match(r"#{1,6} ", line):
            out.append(line.split(" ")[0])
    return out


def entry_problems(en: str, zh: str) -> list[str]:
    """What a translation lost or changed of what it must keep (empty: none)."""
    if not zh.strip():
        return ["not translated"]
    found = []
    if not HAN.search(zh) and HAN.search(en) is None and len(re.sub(r"`[^`]*`|\$[^$]*\$|<[^>]*>|\(http[^)]*\)", "", en).split()) > 3:
        found.append("no Chinese in the translation")
    for name, pattern in KEPT.items():
        want, have = sorted(pattern.findall(_unroled(en))), sorted(pattern.findall(_unroled(zh)))
        if name == "math":  # words inside \text{...} are prose, translated; the rest of the math is kept
            want, have = sorted(map(_untexted, want)), sorted(map(_untexted, have))
        if name == "HTML tag":  # added anchors may keep an English heading's link target; none may go
            anchor = re.compile(r'<a id="[\w-]+">|</a>')
            if not set(filter(anchor.fullmatch, want)) <= set(filter(anchor.fullmatch, have)):
                found.append("an anchor (<a id>) of the English is missing")
            want = [t for t in want if not anchor.fullmatch(t)]
            have = [t for t in have if not anchor.fullmatch(t)]
        if name == "code span":  # a translation may repeat or drop a code span, never invent one
            extra = sorted(set(have) - set(want))
            if extra:
                found.append(f"{name}s not in the English: {extra[:5]}")
            continue
        if want != have:
            missing = sorted(set(want) - set(have))
            extra = sorted(set(have) - set(want))
            found.append(f"{name}s differ: missing {missing[:5]}, not in the English {extra[:5]}"
                         if missing or extra else f"{name}s differ in count")
    if _headings(en) != _headings(zh):
        found.append(f"headings differ: {_headings(en)} in English, {_headings(zh)} here")
    return found


def problems(paths=None) -> list[str]:
    """Every untranslated, stale or damaged entry of the catalogues, named by file and key."""
    found = []
    chosen = {Path(p).resolve() for p in paths} if paths else None
    for source in sources():
        path = catalogue_path(source)
        if chosen and path.resolve() not in chosen:
            continue
        name = path.relative_to(ROOT)
        if not path.exists():
            found.append(f"{name}: missing (run python tools/translations.py init)")
            continue
        cells = load(path).get("cells", {})
        for key, text in english(source).items():
            entry = cells.get(key)
            if entry is None:
                found.append(f"{name} {key}: no entry for this {source.name} cell")
            elif entry["en"] != text:
                found.append(f"{name} {key}: stale: {source.name} changed this cell since it was translated")
            else:
                found += [f"{name} {key}: {p}" for p in entry_problems(entry["en"], entry["zh"])]
    for english_file in sorted(QUESTIONS.glob("*.json")):
        path = QUESTIONS / "zh_CN" / english_file.name
        if chosen and path.resolve() not in chosen:
            continue
        name, data = path.relative_to(ROOT), load(path)
        for qname, question in question_english(english_file.stem).items():
            entry = data.get(qname)
            if entry is None:
                found.append(f"{name} {qname}: no entry")
                continue
            for field, text in question_texts(question).items():
                items = entry.get(field)
                pairs = (list(zip(text, items or [])) if isinstance(text, list) else [(text, items)])
                if items is None or (isinstance(text, list) and len(items) != len(text)):
                    found.append(f"{name} {qname}.{field}: missing or a different number of items")
                    continue
                for i, (want, item) in enumerate(pairs):
                    label = f"{name} {qname}.{field}" + (f"[{i}]" if isinstance(text, list) else "")
                    if item["en"] != want:
                        found.append(f"{label}: stale: the English changed since it was translated")
                    elif want.strip() and not item["zh"].strip():
                        found.append(f"{label}: not translated")
                    elif want.strip():
                        found += [f"{label}: {p}" for p in entry_problems(want, item["zh"]) if "code span" in p]
    return found


ZH = ROOT / "zh_CN"  # committed: the Chinese notebooks and pages that Colab and Binder open
ZH_TEMPLATE = ROOT / "tools" / "setup_cell.zh_CN.py.template"
TITLE = "反转数字：手写一个 Transformer"
CAPTIONS = {"The task and the data": "任务与数据", "Attention, written by hand": "手写注意力",
            "Training and generation": "训练与生成", "Looking inside": "看看模型内部",
            "Practice": "实践", "Going further": "更进一步", "Reference": "参考"}


def _book():
    sys.path.insert(0, str(ROOT / "tools"))
    import book  # tools/book.py: the one reader of _config.yml

    return book


def zh_setup_cell() -> str:
    from string import Template

    book = _book()
    repo, site = book.named()
    return Template(ZH_TEMPLATE.read_text(encoding="utf-8")).substitute(
        version=book.package_version(), site_url=site, repo_url=repo).rstrip("\n")


def zh_links(text: str) -> str:
    """Links into the English site and the English notebooks, pointed at their Chinese twins."""
    repo, site = _book().named()
    text = re.sub(re.escape(site) + r"(?!zh_CN/)", site + "zh_CN/", text)
    text = re.sub(r"(colab\.research\.google\.com/github/[^)\s\"]*?/blob/[^/]+/)book/", r"\1zh_CN/book/", text)
    text = re.sub(r"(/blob/[^/]+/)book/(\d\d_[a-z_]+\.ipynb)", r"\1zh_CN/book/\2", text)
    return text


def translation(source: Path) -> tuple[dict[str, str], list[str]]:
    """Each cell's or block's Chinese text (English where there is none yet) and the keys left English."""
    cells = load(catalogue_path(source)).get("cells", {})
    out, english_left = {}, []
    for key, text in english(source).items():
        entry = cells.get(key)
        if entry and entry["en"] == text and entry["zh"].strip():
            out[key] = _outside_code(entry["zh"], zh_links)  # a listing shows the code as it runs
        else:
            out[key] = text
            english_left.append(key)
    return out, english_left


def zh_notebook(source: Path) -> tuple[dict, list[str]]:
    nb = json.loads(source.read_text(encoding="utf-8"))
    texts, left = translation(source)
    setup_done = False
    for cell in nb["cells"]:
        if f"{cell['id']}:alt" in texts:
            cell["metadata"]["mystnb"]["image"]["alt"] = texts[f"{cell['id']}:alt"]
        if cell["cell_type"] == "markdown":
            cell["source"] = texts[cell["id"]].splitlines(keepends=True)
        elif cell["cell_type"] == "code" and not setup_done:
            cell["source"] = zh_setup_cell().splitlines(keepends=True)
            setup_done = True
    nb["metadata"]["language_info"] = dict(nb["metadata"].get("language_info", {}))
    nb["metadata"]["revformer"] = {"language": "zh_CN", "translates": f"book/{source.name}"}
    return nb, left


def zh_page(source: Path) -> tuple[str, list[str]]:
    texts, left = translation(source)
    blocks = [texts[key] if prose else block for key, block, prose in page_blocks(page_body(source))]
    return front_matter(source) + "\n" * bool(front_matter(source)) + "\n\n".join(blocks) + "\n", left


def zh_files() -> tuple[dict[Path, str], dict[str, list[str]]]:
    """Every file of ``zh_CN/`` as ``notebooks`` writes it, and the keys still in English, by page."""
    files, left = {}, {}
    for source in sources():
        if source.suffix == ".ipynb":
            nb, keys = zh_notebook(source)
            files[ZH / "book" / source.name] = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
        else:
            files[ZH / "book" / source.name], keys = zh_page(source)
        if keys:
            left[source.name] = keys
    return files, left


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, path)


def write_notebooks() -> int:
    files, left = zh_files()
    for path, text in files.items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            _write_text(path, text)
    for old in (ZH / "book").glob("*"):
        if old not in files:
            old.unlink()
    for name, keys in left.items():
        print(f"zh_CN/book/{name}: {len(keys)} cells or blocks still in English ({', '.join(keys[:4])}...)")
    print(f"wrote {len(files)} files into zh_CN/book")
    return 0


def outdated_notebooks() -> list[str]:
    """The files of ``zh_CN/`` that differ from what ``notebooks`` would write."""
    files, _ = zh_files()
    found = [f"{p.relative_to(ROOT)}: differs from its catalogue and English source (run make translations)"
             for p, text in files.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
    found += [f"{p.relative_to(ROOT)}: has no English source" for p in (ZH / "book").glob("*") if p not in files]
    return found


def _outside_code(text: str, change) -> str:
    """``change`` applied to ``text`` except inside fenced code (a listing shows the code as it runs)."""
    parts = re.split(r"(^(`{3,}|~{3,})[^\n]*\n.*?^\2[ \t]*$)", text, flags=re.M | re.S)
    out = []
    for i, part in enumerate(parts):
        if i % 3 == 0:
            out.append(change(part))
        elif i % 3 == 1:
            out.append(part)
    return "".join(out)


def zh_outputs(nb: dict, executed: dict) -> dict:
    """``nb`` with the outputs of its executed English twin, bilingual outputs shown in Chinese."""
    from revformer.i18n import METADATA_KEY

    runs = {c["id"]: c for c in executed["cells"] if c["cell_type"] == "code"}
    first = True
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        twin = runs.get(cell["id"])
        if twin is None or (not first and "".join(twin["source"]) != "".join(cell["source"])):
            raise SystemExit(f"{nb['metadata']['revformer']['translates']} {cell['id']}: the Chinese notebook's "
                             "code differs from the executed English one (run make translations)")
        first = False
        cell["execution_count"] = twin.get("execution_count")
        cell["outputs"] = []
        for output in twin.get("outputs", []):
            output = json.loads(json.dumps(output))
            both = output.get("metadata", {}).get(METADATA_KEY)
            if both:
                output["data"] = both["zh_CN"]
            if "data" in output:
                for kind in ("text/markdown", "text/html"):
                    if kind in output["data"]:
                        value = output["data"][kind]
                        value = "".join(value) if isinstance(value, list) else value
                        output["data"][kind] = _outside_code(value, zh_links)
            cell["outputs"].append(output)
    return nb


def executed(english_build: Path, notebook: Path) -> dict:
    """The English notebook with its outputs, as the English build's Jupyter cache holds them.

    From the cache itself, not from ``_build/jupyter_execute``: myst-nb merges a cell's
    streams into the first one in place before it writes that copy, and keeps the rest,
    so a cell that printed twice would print its lines twice there.
    """
    import nbformat
    from jupyter_cache import get_cache

    cache = get_cache(english_build / ".jupyter_cache")
    try:
        _, merged = cache.merge_match_into_notebook(nbformat.read(notebook, as_version=4))
    except KeyError:
        raise SystemExit(f"{notebook.relative_to(ROOT)} is not in the English build's cache: build the English "
                         "edition first (make book)") from None
    return json.loads(nbformat.writes(merged))


def search_terms() -> list[str]:
    """The book's Chinese terms, for jieba: the search then finds 教师强制 as one word, not only 教师 and 强制.

    Every Chinese term the glossary gives (its 原文 and 本书用语 lines), split at the
    punctuation between terms; words of two to eight Chinese characters.
    """
    entries = load(catalogue_path(BOOK / "glossary.md")).get("cells", {})
    terms = set()
    for entry in entries.values():
        for line in re.findall(r"\*\*(?:原文|本书用语)\*\*：([^\n]*)", entry["zh"]):
            for piece in re.split(r"[、，；：。（）()/“”\s]|也作|又称|沿用|合称", line):
                if re.fullmatch(r"[\u4e00-\u9fff]{2,8}", piece) and not re.search("原文|本书|没有|说明|并|即|但", piece):
                    terms.add(piece)
    return sorted(terms)


def zh_config(build: Path) -> dict:
    """The Chinese edition's ``_config.yml``: the English one, in Chinese, built from ``build``."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    _, site = _book().named()
    config["title"] = TITLE
    config["author"] = "revformer 的作者们"
    config["execute"]["exclude_patterns"] = ["book/*.ipynb"]  # their outputs are the English run's
    config["repository"]["path_to_book"] = "zh_CN"
    config["html"]["baseurl"] = site + "zh_CN/"
    config["sphinx"]["local_extensions"] = {"revformer_book": str(ROOT / "book" / "_ext")}
    extra = config["sphinx"]["config"]
    terms = build / "search-terms.txt"  # jieba's user dictionary: one word and its weight per line
    _write_text(terms, "".join(f"{term} 100000\n" for term in search_terms()))
    extra.update(language="zh_CN", revformer_language="zh_CN", revformer_site_root=site,
                 html_search_options={"dict": str(terms)}, html_extra_path=[str(build / "site-extra")],
                 nb_code_prompt_show="显示代码", nb_code_prompt_hide="隐藏代码")
    return config


def zh_toc() -> dict:
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    for part in toc["parts"]:
        if part["caption"] not in CAPTIONS:
            raise SystemExit(f"_toc.yml's part {part['caption']!r} has no Chinese caption in tools/translations.py")
        part["caption"] = CAPTIONS[part["caption"]]
    return toc


def build(english_build: Path, python: str = sys.executable, env=None) -> int:
    """The Chinese edition of the built English book, into ``<english_build>/html/zh_CN``."""
    import shutil
    import subprocess

    import yaml

    import time

    started = time.perf_counter()
    found = outdated_notebooks()
    if found:
        raise SystemExit("\n".join(found))
    work = english_build / "zh_CN"
    source = work / "src"
    shutil.rmtree(source, ignore_errors=True)
    # Built afresh every time (a minute): the playground's cached run must not outlive a seed or a package change.
    shutil.rmtree(work / "_build", ignore_errors=True)
    (source / "book").mkdir(parents=True)
    for path in sorted((ZH / "book").glob("*")):
        if path.suffix == ".ipynb":
            nb = zh_outputs(json.loads(path.read_text(encoding="utf-8")), executed(english_build, BOOK / path.name))
            _write_text(source / "book" / path.name, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        else:
            shutil.copy(path, source / "book" / path.name)
    extra = work / "site-extra"
    shutil.rmtree(extra, ignore_errors=True)
    shutil.copytree(english_build / "site-extra", extra)
    for path in (ZH / "book").glob("*.ipynb"):  # the downloads: the Chinese notebooks, without outputs
        shutil.copy(path, extra / "downloads" / "notebooks" / path.name)
    _write_text(source / "_config.yml", yaml.safe_dump(zh_config(work), allow_unicode=True, sort_keys=False))
    _write_text(source / "_toc.yml", yaml.safe_dump(zh_toc(), allow_unicode=True, sort_keys=False))
    env = dict(env or os.environ, REVFORMER_LANGUAGE="zh_CN")
    command = [python, "-c", "from jupyter_book.cli.main import main; main()", "build", str(source),
               "--path-output", str(work), "-W", "-n", "--keep-going"]
    print("+", " ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, env=env, check=True)
    target = english_build / "html" / "zh_CN"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(work / "_build" / "html", target)
    print(f"the Chinese edition is in {target} ({time.perf_counter() - started:.0f} s)")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/translations.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("init", help="add an empty entry for every untranslated cell, block and question")
    checker = commands.add_parser("check", help="name every untranslated, stale or damaged entry")
    checker.add_argument("catalogues", nargs="*", help="only these catalogue files")
    commands.add_parser("notebooks", help="write zh_CN/book from the catalogues and the English sources")
    builder = commands.add_parser("build", help="the Chinese site from the built English one (make book)")
    builder.add_argument("--build", type=Path, default=ROOT / "_build", help="the English build's folder")
    args = parser.parse_args(argv)
    if args.command == "init":
        return init()
    if args.command == "notebooks":
        return write_notebooks()
    if args.command == "build":
        return build(args.build)
    found = problems(args.catalogues)
    print("\n".join(found) if found else "every entry is translated and current")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
