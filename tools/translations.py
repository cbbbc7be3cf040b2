"""The Chinese edition: ``python tools/translations.py update | check | notebooks | build``.

Every catalogue is a gettext ``.po`` file, read and written with ``polib``, so
that a translator opens it in Poedit, Weblate or any gettext tool:

- ``locale/zh_CN/<page>.po`` translates one page of the book. A markdown cell is
  the entry whose ``msgctxt`` is the cell's id (a figure's alt text:
  ``<cell id>:alt``, its caption ``<cell id>:caption``; a block of a Markdown
  page, split at blank lines outside code fences: ``b000``, ``b001``, ...). The page's code speaks through
  entries without a ``msgctxt``: the English templates of its ``say(...)``
  calls (found in its code cells) and the texts of its figures (found when the
  chapter runs), each with a comment saying where it comes from.
- ``code/revformer/locale/zh_CN/LC_MESSAGES/revformer.po``: what the package
  itself says (the checkers' reports, the quizzes' and explorers' words).

An entry whose English changed is gettext's ``fuzzy``, its old English kept as
``#| msgid``; an empty ``msgstr`` is untranslated. ``update`` (``make
translations``) adds and marks them; ``check`` names every untranslated,
stale or damaged one, and runs ``msgfmt --check`` on every file.

``notebooks`` (run by ``make translations``) compiles the code's entries of
every catalogue into ``revformer.mo``, which the package ships and reads with
the standard library's ``gettext`` (``revformer.i18n``), and writes the Chinese
edition's sources, ``zh_CN/book/``: every chapter as a notebook without outputs
(Colab, Binder and the downloads open these), its markdown cells translated and
its setup cell rendered from ``tools/setup_cell.zh_CN.py.template``, and the
Markdown pages. Both are committed; a test fails when they differ from what
this command writes. ``build`` (run by ``make book`` after the English
edition) gives each Chinese notebook the outputs of its executed English twin,
each output that ``revformer.i18n`` wrote in every language (sentences,
figures) shown in Chinese, and builds the site into ``_build/html/zh_CN``.

A third language is a new folder of ``.po`` files beside ``locale/zh_CN``.
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
PAGES = ("intro.md", "playground.md", "glossary.md", "references.md", "teaching.md")


def sources() -> list[Path]:
    """Every English page the Chinese edition translates: the chapters, then the Markdown pages."""
    return sorted(BOOK.glob("*.ipynb")) + [BOOK / name for name in PAGES]


def catalogue_path(source: Path) -> Path:
    return LOCALE / f"{source.stem}.po"


PACKAGE_CATALOGUE = ROOT / "code" / "revformer" / "locale" / "zh_CN" / "LC_MESSAGES" / "revformer.po"
COMPILED = PACKAGE_CATALOGUE.with_suffix(".mo")
HEADER = {"Project-Id-Version": "revformer-book", "PO-Revision-Date": "2026-12-05 00:00+0000",
          "Last-Translator": "revformer translators", "Language-Team": "Simplified Chinese", "Language": "zh_CN",
          "MIME-Version": "1.0", "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit",
          "Plural-Forms": "nplurals=1; plural=0;"}
CODE = "code"  # the extracted comment of a template found in a code cell
FIGURE = "figure"  # ... of a figure's text, found when the chapter ran


def read_po(path: Path):
    """A catalogue (an empty one, with the header, when the file does not exist yet)."""
    import polib

    if path.exists():
        return polib.pofile(str(path), wrapwidth=0)
    po = polib.POFile(wrapwidth=0)
    po.metadata = dict(HEADER)
    return po


def write_po(path: Path, po) -> None:
    """Write a catalogue through a temporary file and a rename: never half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    po.wrapwidth = 0
    _write_text(path, po.__unicode__() + "\n" if not po.__unicode__().endswith("\n") else po.__unicode__())


def is_variant(entry) -> bool:
    """Whether an entry is a template's variant for some values of its fields (msgctxt "when: shared=0",
    revformer.i18n.WHEN)."""
    from revformer.i18n import WHEN

    return bool(entry.msgctxt) and entry.msgctxt.startswith(WHEN)


def markdown_entries(po) -> dict:
    """A page catalogue's entries of markdown cells and blocks, by key (their ``msgctxt``)."""
    return {e.msgctxt: e for e in po if e.msgctxt and not e.obsolete and not is_variant(e)}


def variant_entries(po) -> list:
    """A catalogue's variants of templates: the translation for some values of the fields ("when: shared=0")."""
    return [e for e in po if is_variant(e) and not e.obsolete]


def variant_problems(entry, templates_in_use) -> list[str]:
    """What is wrong with a variant: a template no code uses, a condition on a field it lacks, fields it adds."""
    import string

    from revformer.i18n import conditions

    if entry.msgid not in templates_in_use:
        return ["a variant of a template no code uses (remove it, or update its msgid)"]
    if "fuzzy" in entry.flags or not entry.msgstr.strip():
        return ["not translated or fuzzy"]
    try:
        wanted = conditions(entry.msgctxt)
        fields = {name for _, name, _, _ in string.Formatter().parse(entry.msgid) if name}
        used = {name for _, name, _, _ in string.Formatter().parse(entry.msgstr) if name}
    except ValueError as error:
        return [str(error)]
    found = [f"the condition names {name!r}, which the template lacks" for name in wanted if name not in fields]
    return found + [f"the variant uses {name!r}, which the template lacks" for name in sorted(used - fields)]


def code_entries(po) -> dict:
    """A catalogue's entries that the code looks up (no ``msgctxt``), by English template."""
    return {e.msgid: e for e in po if not e.msgctxt and not e.obsolete}


def usable(entry) -> bool:
    return entry is not None and entry.translated() and "fuzzy" not in entry.flags


SAY_NAMES = ("say", "tr", "Message")  # revformer.i18n's functions whose first argument is a template


def templates(source: Path) -> dict[str, list[str]]:
    """The English templates of a chapter's ``say(...)`` calls, with the ids of the cells that use them.

    A template must be a string literal (or a conditional between literals): an f-string
    cannot be looked up in a catalogue, and is an error here.
    """
    import ast

    if source.suffix == ".ipynb":
        cells = [c for c in json.loads(source.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    else:  # a MyST page's {code-cell} blocks, named by their block key
        cells = [{"id": key, "source": re.sub(r"\A(?::[\w-]+:.*\n)+", "", block.split("\n", 1)[1].rsplit("\n", 1)[0])}
                 for key, block, prose in page_blocks(page_body(source)) if not prose]
    found: dict[str, list[str]] = {}
    for cell in cells:
        try:
            tree = ast.parse("".join(cell["source"]))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SAY_NAMES:
                for text in _literals(node.args[0] if node.args else None, f"{source.name} {cell['id']}"):
                    found.setdefault(text, []).append(cell["id"])
    return found


PACKAGE_NAMES = ("Message", "tr", "unfilled", "say")  # the package's calls whose first argument is a template


def package_templates() -> dict[str, list[str]]:
    """The English templates of the package's own code (a literal first argument of ``Message``, ``tr``, ...),
    with the modules that use them."""
    import ast

    found: dict[str, list[str]] = {}
    package = ROOT / "code" / "revformer"
    for path in sorted(package.rglob("*.py")):
        if "solutions" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and node.args:
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                first = node.args[0]
                if name in PACKAGE_NAMES and isinstance(first, ast.Constant) and isinstance(first.value, str):
                    found.setdefault(first.value, []).append(path.relative_to(package).as_posix())
    return found


def _literals(node, where: str) -> list[str]:
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _literals(node.body, where) + _literals(node.orelse, where)
    raise SystemExit(f"{where}: say's first argument must be a template string with named fields "
                     f"(say(\"... {{x}} ...\", x=x)), not {ast.unparse(node) if node is not None else 'nothing'}")


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
            caption = c["metadata"].get("mystnb", {}).get("figure", {}).get("caption")
            if caption:  # the caption under a figure, keyed "<cell id>:caption"
                texts[f"{c['id']}:caption"] = caption
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


def question_english(number: str) -> dict:
    return json.loads((QUESTIONS / f"{number}.json").read_text(encoding="utf-8"))


def question_fields() -> dict[str, str]:
    """Every translatable text of the graded questions, by its context in ``questions.po`` (``05 q1 options 2``)."""
    out = {}
    for english_file in sorted(QUESTIONS.glob("*.json")):
        for name, question in question_english(english_file.stem).items():
            for field, text in question_texts(question).items():
                items = list(enumerate(text)) if isinstance(text, list) else [(None, text)]
                for i, item in items:
                    if item.strip():
                        out[f"{english_file.stem} {name} {field}" + ("" if i is None else f" {i}")] = item
    return out


def question_texts(question: dict) -> dict:
    """The translatable text of one question: its text fields, options and feedback."""
    out = {field: question[field] for field in QUESTION_TEXT if field in question}
    for field in ("options", "feedback"):
        if field in question:
            out[field] = list(question[field])
    return out


def _merge(po, key: str | None, text: str, comment: str) -> int:
    """Add ``text`` to ``po`` (1) or, where its key's English changed, mark the entry fuzzy (0)."""
    import polib

    found = markdown_entries(po).get(key) if key else code_entries(po).get(text)
    if found is None:
        po.append(polib.POEntry(msgctxt=key, msgid=text, msgstr="", comment=comment,
                                flags=[] if key else ["python-brace-format"]))
        return 1
    if found.msgid != text:
        found.previous_msgid, found.msgid = found.msgid, text
        if "fuzzy" not in found.flags:
            found.flags.append("fuzzy")
    found.comment = comment
    return 0


def update(only=None) -> int:
    """Every English cell, block and template of the book into its catalogue; gone ones made obsolete."""
    added = 0
    for source in sources():
        if only and source.stem not in only and source.name not in only and source.stem[:2] not in only:
            continue
        path = catalogue_path(source)
        po = read_po(path)
        keys = english(source)
        for key, text in keys.items():
            added += _merge(po, key, text, "")
        used = templates(source)
        for text, cells in used.items():
            added += _merge(po, None, text, f"{CODE}: say() in cell {', '.join(dict.fromkeys(cells))}")
        for entry in po:
            variant = is_variant(entry)
            gone = (entry.msgctxt and not variant and entry.msgctxt not in keys) or (
                not entry.msgctxt and entry.comment.startswith(CODE) and entry.msgid not in used) or (
                variant and entry.msgid not in used)
            if gone:
                entry.obsolete = True
        active = {(e.msgctxt, e.msgid) for e in po if not e.obsolete}
        for entry in [e for e in po if e.obsolete and (e.msgctxt, e.msgid) in active]:
            po.remove(entry)  # an old copy of a message in use again: msgfmt refuses a message defined twice
        write_po(path, po)
    if not only:
        path = PACKAGE_CATALOGUE.parent / "questions.po"
        po = read_po(path)
        fields = question_fields()
        for ctxt, text in fields.items():
            added += _merge(po, ctxt, text, "")
        for entry in po:
            if entry.msgctxt and entry.msgctxt not in fields:
                entry.obsolete = True
        write_po(path, po)
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


def template_problems(en: str, zh: str) -> list[str]:
    """What a translated template lost of what it must keep: its fields, its code spans."""
    import string

    def fields(text):
        return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name is not None)

    found = []
    try:
        want, have = fields(en), fields(zh)
    except ValueError as error:
        return [f"not a template: {error}"]
    if want != have:
        found.append(f"fields differ: {want} in English, {have} here")
    return found + [p for p in entry_problems(en, zh) if "code span" in p or "HTML tag" in p]


def msgfmt_problems(path: Path) -> list[str]:
    """What gettext's own ``msgfmt --check`` says is wrong with a catalogue."""
    import shutil
    import subprocess

    if shutil.which("msgfmt") is None:
        raise SystemExit("msgfmt is not installed (it comes with gettext: sudo apt-get install -y gettext)")
    done = subprocess.run(["msgfmt", "--check", "-o", os.devnull, str(path)], capture_output=True, text=True)
    return [] if done.returncode == 0 else [f"{path.relative_to(ROOT)}: msgfmt --check: {line}"
                                            for line in done.stderr.strip().splitlines()]


def problems(paths=None) -> list[str]:
    """Every untranslated, stale or damaged entry of the catalogues, named by file and key."""
    found = []
    chosen = {Path(p).resolve() for p in paths} if paths else None
    for path in [catalogue_path(source) for source in sources()] + [PACKAGE_CATALOGUE]:
        if path.exists() and not (chosen and path.resolve() not in chosen):
            found += msgfmt_problems(path)
    for source in sources():
        path = catalogue_path(source)
        if chosen and path.resolve() not in chosen:
            continue
        name = path.relative_to(ROOT)
        if not path.exists():
            found.append(f"{name}: missing (run make translations)")
            continue
        po = read_po(path)
        cells, code = markdown_entries(po), code_entries(po)
        for key, text in english(source).items():
            entry = cells.get(key)
            if entry is None:
                found.append(f"{name} {key}: no entry for this {source.name} cell (run make translations)")
            elif entry.msgid != text or "fuzzy" in entry.flags:
                found.append(f"{name} {key}: stale (fuzzy): {source.name} changed this cell since it was translated")
            else:
                found += [f"{name} {key}: {p}" for p in entry_problems(entry.msgid, entry.msgstr)]
        for text, cells_using in templates(source).items():
            entry = code.get(text)
            label = f"{name} say() in {cells_using[0]} {text[:50]!r}"
            if entry is None:
                found.append(f"{label}: no entry (run make translations)")
            elif "fuzzy" in entry.flags:
                found.append(f"{label}: stale (fuzzy)")
            elif not entry.msgstr.strip():
                found.append(f"{label}: not translated")
            else:
                found += [f"{label}: {p}" for p in template_problems(text, entry.msgstr)]
        in_use = templates(source)
        for entry in variant_entries(po):
            found += [f"{name} {entry.msgctxt} {entry.msgid[:50]!r}: {p}" for p in variant_problems(entry, in_use)]
        for entry in code.values():
            if entry.comment.startswith(FIGURE) and (not entry.msgstr.strip() or "fuzzy" in entry.flags):
                found.append(f"{name} figure text {entry.msgid[:50]!r}: not translated")
    if PACKAGE_CATALOGUE.exists() and not chosen:
        entries = {}
        in_package = package_templates()
        for path in sorted(PACKAGE_CATALOGUE.parent.glob("*.po")):
            for entry in read_po(path):
                if is_variant(entry) and not entry.obsolete:
                    found += [f"{path.relative_to(ROOT)} {entry.msgctxt} {entry.msgid[:50]!r}: {p}"
                              for p in variant_problems(entry, in_package)]
                if entry.obsolete or entry.msgctxt:
                    continue
                entries[entry.msgid] = entry
                if entry.msgstr == "" or "fuzzy" in entry.flags:  # a space can be a translation (" is ")
                    found.append(f"{path.relative_to(ROOT)} {entry.msgid[:50]!r}: not translated or fuzzy")
                elif "{" in entry.msgid:
                    found += [f"{path.relative_to(ROOT)} {entry.msgid[:50]!r}: {p}"
                              for p in template_problems(entry.msgid, entry.msgstr)]
        for text, modules in package_templates().items():
            if text not in entries:
                found.append(f"revformer/{modules[0]}: {text[:60]!r} has no entry in the package's catalogues")
    questions = PACKAGE_CATALOGUE.parent / "questions.po"
    if not chosen or questions.resolve() in chosen:
        entries = {e.msgctxt: e for e in read_po(questions) if e.msgctxt and not e.obsolete}
        name = questions.relative_to(ROOT)
        for ctxt, text in question_fields().items():
            entry = entries.get(ctxt)
            if entry is None:
                found.append(f"{name} {ctxt}: no entry (run make translations)")
            elif entry.msgid != text or "fuzzy" in entry.flags:
                found.append(f"{name} {ctxt}: stale (fuzzy): the English changed since it was translated")
            elif not entry.msgstr.strip():
                found.append(f"{name} {ctxt}: not translated")
            else:
                found += [f"{name} {ctxt}: {p}" for p in entry_problems(text, entry.msgstr) if "code span" in p]
    return found


ZH = ROOT / "zh_CN"  # committed: the Chinese notebooks and pages that Colab and Binder open
ZH_TEMPLATE = ROOT / "tools" / "setup_cell.zh_CN.py.template"
TITLE = "反转数字：手写一个 Transformer"
CAPTIONS = {"The task and the data": "任务与数据", "Attention, written by hand": "手写注意力",
            "Training and generation": "训练与生成", "Looking inside": "看看模型内部",
            "Practice": "实践", "Going further": "更进一步", "Reference": "参考"}


def _book():
    """``tools/site_config.py``, the one reader of ``_config.yml`` (never ``tools/book.py``, which imports this)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import site_config

    return site_config


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
    cells = markdown_entries(read_po(catalogue_path(source)))
    out, english_left = {}, []
    for key, text in english(source).items():
        entry = cells.get(key)
        if usable(entry) and entry.msgid == text:
            out[key] = _outside_code(entry.msgstr, zh_links)  # a listing shows the code as it runs
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
        if f"{cell['id']}:caption" in texts:
            cell["metadata"]["mystnb"]["figure"]["caption"] = texts[f"{cell['id']}:caption"]
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
    if source.name == "glossary.md":
        blocks = glossary_by_pinyin(blocks)
    text = "\n\n".join(blocks) + "\n"
    return front_matter(source) + "\n" * bool(front_matter(source)) + zh_terms(text), left


def glossary_by_pinyin(blocks: list[str]) -> list[str]:
    """The Chinese glossary's entries ordered by the pinyin of their (Chinese) headwords, not by code point.

    An entry is a block whose first line is its headword (``消融（ablation）``) and the indented
    blocks after it. Sphinx's own ``:sorted:`` would order Chinese by code point, so it goes.
    Headwords compare syllable by syllable, as a dictionary orders them, so one that begins
    another comes first (注意力 before 注意力权重).
    """
    from pypinyin import lazy_pinyin

    start = next(i for i, b in enumerate(blocks) if b.lstrip().startswith(":::{glossary}"))
    end = next(i for i in range(start + 1, len(blocks)) if blocks[i].rstrip().endswith("\n:::")
               or blocks[i].strip() == ":::")
    head = blocks[start].replace("\n:sorted:", "")
    entries: list[list[str]] = []
    for block in blocks[start + 1:end + 1]:
        closing = block.rstrip().endswith("\n:::")
        body = block.rstrip()[: -len("\n:::")] if closing else block
        if not body.startswith((" ", "\t")):
            entries.append([body])
        else:
            entries[-1].append(body)
    def key(entry):  # the headword's Chinese part (before "（"), syllable by syllable: 注意力 before 注意力权重
        headword = entry[0].split("\n")[0]
        syllables = [s.strip().lower() for s in lazy_pinyin(headword.split("（")[0])]
        return [s for s in syllables if re.search(r"\w", s)], headword

    entries.sort(key=key)
    ordered = ["\n\n".join(entry) for entry in entries]
    ordered[-1] += "\n:::"
    return blocks[:start] + [head] + ordered + blocks[end + 1:]


def glossary_headwords() -> dict[str, str]:
    """Each English glossary term (lower case) and the Chinese edition's headword for it."""
    out = {}
    for entry in markdown_entries(read_po(catalogue_path(BOOK / "glossary.md"))).values():
        en, zh = entry.msgid.split("\n")[0], entry.msgstr.split("\n")[0]
        if en and not en.startswith((" ", ":", "#")) and zh and entry.msgid.startswith(en + "\n  "):
            out[en.lower()] = zh
    return out


def zh_terms(text: str) -> str:
    """``{term}`` roles pointed at the Chinese glossary's headwords (``<causal mask>`` -> ``<因果 mask（causal mask）>``)."""
    words = glossary_headwords()

    def point(match):
        shown, target = match.group(1), match.group(2) or match.group(1)
        zh = words.get(target.strip().lower())
        return match.group(0) if zh is None else "{term}`%s <%s>`" % (shown.strip(), zh)

    return re.sub(r"\{term\}`([^`<]*?)(?:\s*<([^`>]*)>)?`", point, text)


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


def untranslated_figure_texts(nb: dict) -> list[str]:
    """The texts of an executed notebook's figures that no catalogue entry translated, in order, once each."""
    from revformer.i18n import METADATA_KEY

    found = []
    for cell in nb["cells"]:
        for output in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            found += output.get("metadata", {}).get(METADATA_KEY, {}).get("untranslated", [])
    return list(dict.fromkeys(found))


def compiled_messages() -> dict[str, str]:
    """What the code looks up, msgid to msgstr: the package's catalogue and every page's code entries."""
    messages, origin = {}, {}
    for path in sorted(PACKAGE_CATALOGUE.parent.glob("*.po")) + [catalogue_path(source) for source in sources()]:
        if not path.exists():
            continue
        po = read_po(path)
        keyed = dict(code_entries(po))
        keyed.update({f"{e.msgctxt}\x04{e.msgid}": e for e in variant_entries(po)})  # the variants of templates
        if path.parent == PACKAGE_CATALOGUE.parent:  # the package's entries with a context (the questions)
            keyed.update({f"{e.msgctxt}\x04{e.msgid}": e for e in po if e.msgctxt and not e.obsolete})
        for text, entry in keyed.items():
            if not usable(entry):
                continue
            if text in messages and messages[text] != entry.msgstr:
                raise SystemExit(f"{path.relative_to(ROOT)}: {text[:60]!r} is translated otherwise in "
                                 f"{origin[text].relative_to(ROOT)}: one English text, one translation")
            messages[text], origin[text] = entry.msgstr, path
    return messages


def compile_mo() -> Path:
    """``revformer.mo``, the package's compiled catalogue (written only when its messages changed)."""
    import polib

    messages = compiled_messages()
    if COMPILED.exists() and compiled_now() == messages:
        return COMPILED
    po = polib.POFile()
    po.metadata = dict(HEADER)
    for text, translated in sorted(messages.items()):
        context, _, msgid = text.rpartition("\x04")
        po.append(polib.POEntry(msgctxt=context or None, msgid=msgid, msgstr=translated))
    COMPILED.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=COMPILED.parent, prefix=".revformer.", suffix=".mo.tmp")
    os.close(handle)
    po.save_as_mofile(temporary)
    os.replace(temporary, COMPILED)
    return COMPILED


def compiled_now() -> dict[str, str]:
    """The messages of the committed ``revformer.mo``, as the standard library reads them."""
    import gettext

    with COMPILED.open("rb") as handle:
        table = gettext.GNUTranslations(handle)
    return {k: v for k, v in table._catalog.items() if k}


def write_notebooks() -> int:
    update()
    compile_mo()
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
    if not COMPILED.exists() or compiled_now() != compiled_messages():
        found.append(f"{COMPILED.relative_to(ROOT)}: differs from the catalogues (run make translations)")
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
            both = output.get("metadata", {}).get(METADATA_KEY) or {}
            if "zh_CN" in both:  # a sentence or a figure written in every language: the Chinese one
                output["data"] = {**output.get("data", {}), **both["zh_CN"]}
                if "zh_CN" in both.get("sizes", {}):  # a figure at twice the pixels: shown at its own size
                    output.setdefault("metadata", {})["image/png"] = both["sizes"]["zh_CN"]
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
    entries = markdown_entries(read_po(catalogue_path(BOOK / "glossary.md")))
    terms = set()
    for entry in entries.values():
        lines = re.findall(r"\*\*(?:原文|本书用语|也称)\*\*：([^\n]*)", entry.msgstr)
        lines += re.findall(r"\A([^\n（]+)（", entry.msgstr)  # the headword's Chinese part
        for line in lines:
            for piece in re.split(r"[、，；：。（）()/“”\s]|也作|又称|沿用|合称", line):
                if re.fullmatch(r"[\u4e00-\u9fff]{2,8}", piece) and not re.search("原文|本书|没有|说明|并|即|但", piece):
                    terms.add(piece)
    # and the words the chapters set in bold where they introduce them (**置零**), two to six characters
    for source in sources():
        for entry in read_po(catalogue_path(source)):
            terms.update(word for word in re.findall(r"\*\*([\u4e00-\u9fff]{2,6})\*\*", entry.msgstr)
                         if not re.search("的|了|是|在|并且|之前|每一", word))
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
                 revformer_section_ids=str(build.parent / "section-ids.json"),
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
    updater = commands.add_parser("update", help="add every new cell, block and template; mark the changed ones fuzzy")
    updater.add_argument("pages", nargs="*", help="only these pages (05, 05_causal_mask or intro.md)")
    commands.add_parser("compile", help="compile the code's entries of every catalogue into revformer.mo")
    texts = commands.add_parser("figure-texts", help="the figure texts an executed notebook left untranslated")
    texts.add_argument("notebook", type=Path)
    checker = commands.add_parser("check", help="name every untranslated, stale or damaged entry")
    checker.add_argument("catalogues", nargs="*", help="only these catalogue files")
    commands.add_parser("notebooks", help="write zh_CN/book from the catalogues and the English sources")
    builder = commands.add_parser("build", help="the Chinese site from the built English one (make book)")
    builder.add_argument("--build", type=Path, default=ROOT / "_build", help="the English build's folder")
    args = parser.parse_args(argv)
    if args.command in ("update", "init"):
        return update(getattr(args, "pages", None))
    if args.command == "compile":
        print(compile_mo().relative_to(ROOT))
        return 0
    if args.command == "figure-texts":
        for text in untranslated_figure_texts(json.loads(args.notebook.read_text(encoding="utf-8"))):
            print(repr(text))
        return 0
    if args.command == "notebooks":
        return write_notebooks()
    if args.command == "build":
        return build(args.build)
    found = problems(args.catalogues)
    print("\n".join(found) if found else "every entry is translated and current")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
