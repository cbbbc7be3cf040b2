"""Local Sphinx extension of the book.

Links to the published site. A chapter is a page of this site and a Colab
notebook at once, and a relative link to another chapter or to a download
is dead in Colab. So the notebooks link to the published site
(``html_baseurl``, ``_config.yml``'s ``html.baseurl``), which works in Colab
and in a downloaded notebook; this extension turns every such link into a
relative one when it builds the site, so the site works offline and from
``file://``, and fails the build (a warning, with ``-W``) when a link names a
page, a file or an anchor the site does not have.

Sphinx 7.4 registers some inline scripts twice (once with the file name None,
once with ''), so every page declares, for example, ``THEBE_JS_URL`` twice
and a browser reports the second declaration as an error. Sphinx 8 fixed
this upstream; until Jupyter Book 1 moves to it, this handler keeps the first
of each identical script on every page.

The book runs code in Colab, Binder or a local Jupyter, never through Thebe
(``launch_buttons.thebe`` is false), so the Thebe loader and its
configuration, which name a CDN, are left out of the pages altogether.

Hidden code cells (the ``hide-input`` and ``hide-output`` tags) open with a
``<summary>`` that myst-nb labels ``aria-label="Toggle hidden content"``,
while the reader sees "Show code cell source": a screen reader would say one
thing and a voice-control user would have to say the other (WCAG 2.5.3,
axe-core's ``label-content-name-mismatch``). This extension writes the
summary without that label, so its name is the text it shows ("Show code
cell source", "Hide code cell source" once open).

The book has two editions, English and Simplified Chinese (``zh_CN/``, built
by ``tools/translations.py`` from the same executed notebooks). Every page of
either links to the same page of the other: ``edition_link`` gives the header
(``_templates/edition-link.html``, after the launch buttons) the link and
``<head>`` an ``hreflang`` alternate. ``revformer_language`` names the edition
being built; the Chinese one lives in the folder ``zh_CN/`` of the English
site and holds its own copy of the downloads and the model for the browser,
so a link to the English site's root (``revformer_site_root``), such as the
playground's scripts, is pointed at that copy.

Every section has the same anchor in both editions: the English build
records each page's section ids in order (``revformer_section_ids``, a JSON
file), and the Chinese build gives each Chinese section its English twin's id
first (the headings of a page and its translation match one for one: the
catalogue check compares them), so ``#why-the-future-must-be-hidden`` works on
either page, and the edition link carries the reader's current anchor across.

Figures have a dark twin. The build's kernels draw every figure once more for
a dark page (``revformer.plots.dark_chrome``: transparent background, light
texts and axes, the data's colours kept) into the output's metadata, and
``dark_figures`` puts that twin beside each figure with the theme's
``only-light``/``only-dark`` classes, so dark mode shows no white slab.

``revformer.source`` listings are Markdown outputs whose fence the theme
highlights with its accessible light and dark styles;
``_static/revformer-book.css`` sets their head in the theme's muted text
colour, which keeps its contrast in both modes.
"""


import base64
import functools
import hashlib
import html
import json
import posixpath
import re
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)


def _is_thebe(script):
    filename = getattr(script, "filename", None) or ""
    body = (getattr(script, "attributes", {}) or {}).get("body", "")
    return "thebe" in filename or "THEBE_JS_URL" in body


def _script_identity(script):
    attributes = getattr(script, "attributes", {}) or {}
    return (getattr(script, "filename", None) or "",
            tuple(sorted((k, str(v)) for k, v in attributes.items())))


def dedupe_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        identity = _script_identity(script)
        if identity in seen or _is_thebe(script):
            continue
        seen.add(identity)
        unique.append(script)
    scripts[:] = unique


def default_mode_auto(app, config):
    """pydata-sphinx-theme writes ``dataset.mode = stored || ""`` and then logs a
    console error for the empty mode on a reader's first visit; give it a valid
    default instead: ``auto``, the device's own setting (the learner's review: a
    phone in dark mode got the light site)."""
    context = dict(config.html_context or {})
    context.setdefault("default_mode", "auto")
    config.html_context = context


_LINK = re.compile(r'((?:href|src)=")([^"]*)(")')


def relative_site_links(app, pagename, templatename, context, doctree):
    """Rewrite ``href="<html_baseurl>/X"`` (and ``src=``) in the page body into a link relative to the page."""
    base = (app.config.html_baseurl or "").rstrip("/") + "/"
    body = context.get("body")
    if base == "/" or not body:
        return
    here = posixpath.dirname(app.builder.get_target_uri(pagename))
    seen = app.__dict__.setdefault("revformer_site_links", [])  # this build's pages only

    root = app.config.revformer_site_root  # the Chinese edition: the English site, which it mirrors

    def rewrite(match):
        url = html.unescape(match.group(2))
        if root and url.startswith(root) and not url.startswith(base):
            url = base + url[len(root):]  # web/ and downloads/ are copied into the Chinese site too
        if not url.startswith(base):
            return match.group(0)
        target, _, fragment = url[len(base):].partition("#")
        seen.append((pagename, target, fragment))
        relative = posixpath.relpath(target or "index.html", here or ".")
        return match.group(1) + html.escape(relative + (f"#{fragment}" if fragment else "")) + match.group(3)

    context["body"] = _LINK.sub(rewrite, body)


# Written into the site after Sphinx, from the chapters it executed: each chapter's figure pack
# (tools/book.py figure-packs); tests/test_student.py checks that every link to one finds it.
WRITTEN_AFTER = ("downloads/figures/",)


def check_site_links(app, exception):
    """Every rewritten link names a file the build wrote, and an anchor that file has."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    texts = {}
    for page, target, fragment in app.__dict__.get("revformer_site_links", []):
        path = out / (target or "index.html")
        if not path.is_file() and not target.startswith(WRITTEN_AFTER):
            logger.warning(f"{page}: link to {target!r} on the site, which the build did not write")
            continue
        if fragment:
            text = texts.setdefault(path, path.read_text(encoding="utf-8", errors="replace"))
            if f'id="{fragment}"' not in text:
                logger.warning(f"{page}: link to {target}#{fragment}, an anchor that page does not have")


def visit_hidden_cell(self, node):
    """myst-nb's ``visit_HideCellInput`` without ``aria-label`` on the summary: its name is its text."""
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="admonition hide {classes}">\n')
    self.body.append("<summary>\n")
    self.body.append(f'<p class="collapsed admonition-title">{html.escape(node["prompt_show"])}</p>\n')
    self.body.append(f'<p class="expanded admonition-title">{html.escape(node["prompt_hide"])}</p>\n')
    self.body.append("</summary>\n")


def depart_hidden_cell(self, node):
    self.body.append("</details>\n")


EDITIONS = {"en": ("zh_CN/", "zh-CN", "中文版", "本页的简体中文版"),
            "zh_CN": ("../", "en", "English", "This page in English")}


VIEWPORT = re.compile(r'\s*<meta name="viewport"[^>]*>')


def edition_link(app, pagename, templatename, context, doctree):
    """The header's link to this page in the other edition, and the ``<head>``'s alternate."""
    prefix, hreflang, text, title = EDITIONS[app.config.revformer_language]
    here = app.builder.get_target_uri(pagename)
    href = posixpath.relpath(prefix + here, posixpath.dirname(here) or ".")
    context.update(revformer_edition_href=href, revformer_edition_hreflang=hreflang,
                   revformer_edition_text=text, revformer_edition_title=title)
    context["metatags"] = context.get("metatags", "") + (
        f'\n<link rel="alternate" hreflang="{hreflang}" href="{html.escape(href)}" />')


def theme_header(app, config):
    """Put the edition link after the launch buttons in every page's header."""
    config.templates_path = list(config.templates_path or []) + [str(TEMPLATES)]
    options = dict(config.html_theme_options or {})
    options.setdefault("article_header_end", ["article-header-buttons.html", "edition-link.html"])
    if config.revformer_language == "zh_CN":  # the theme's own box, which Sphinx's translations leave English
        options["search_bar_text"] = "搜索本书……"
    config.html_theme_options = options


# The theme's own words that its Simplified Chinese catalogue leaves English (or writes in the
# Traditional wording): the Chinese edition's pages get these, as attribute values and as texts.
CHROME_ZH = {"Toggle primary sidebar": "切换主侧栏", "Toggle secondary sidebar": "切换次侧栏",
             "Launch interactive content": "打开交互式内容", "Launch on Binder": "在 Binder 中打开",
             "Launch on Colab": "在 Colab 中打开", "Binder logo": "Binder 标志", "Colab logo": "Colab 标志",
             "Color mode": "颜色模式", "System Settings": "跟随系统", "Light": "浅色", "Dark": "深色",
             "Link to this heading": "链接到此标题", "Link to this image": "链接到此图片",
             "Link to this term": "链接到此术语", "列印成 PDF": "打印为 PDF", "Download this page": "下载本页",
             "Download source file": "下载源文件", "Fullscreen mode": "全屏模式", "Table of contents": "目录",
             "Skip to main content": "跳到主要内容", "Back to top": "回到顶部",
             "Main": "正文", "Page": "本页"}  # the navigation landmarks' labels


def chrome_in_chinese(app, exception):
    """Write the theme's leftover English words of every Chinese page in Chinese."""
    if exception is not None or app.builder.format != "html" or app.config.revformer_language != "zh_CN":
        return
    pattern = re.compile('(="|>\\s*)(' + "|".join(map(re.escape, CHROME_ZH)) + ')(?=\\s*(?:"|<))')
    for path in Path(app.outdir).rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        new = pattern.sub(lambda m: m.group(1) + CHROME_ZH[m.group(2)], text)
        if new != text:
            path.write_text(new, encoding="utf-8")


def _sections(doctree):
    from docutils import nodes

    return [section for section in doctree.findall(nodes.section) if section["ids"]]


def record_section_ids(app, exception):
    """English build: each page's section ids, in order, into ``revformer_section_ids``."""
    import json

    path = app.config.revformer_section_ids
    if exception is not None or not path or app.config.revformer_language != "en":
        return
    ids = {doc: [s["ids"][0] for s in _sections(app.env.get_doctree(doc))] for doc in sorted(app.env.found_docs)}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(ids, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


_english_ids = {}


def english_section_ids(app, doctree):
    """Chinese build: each section takes its English twin's id first, so both editions share their anchors."""
    import json

    path = app.config.revformer_section_ids
    if not path or app.config.revformer_language == "en":
        return
    if path not in _english_ids:
        _english_ids[path] = json.loads(Path(path).read_text(encoding="utf-8")) if Path(path).exists() else {}
    english = _english_ids[path].get(app.env.docname)
    sections = _sections(doctree)
    if not english or len(english) != len(sections):
        return
    for section, name in zip(sections, english):
        if name not in section["ids"]:
            section["ids"].insert(0, name)
            doctree.ids[name] = section


# A Chinese glossary headword and its English: ``因果 mask（causal mask）``
HEADWORD = re.compile(r"(.+?)（([^（）]+)）")


def english_term_ids(app, doctree):
    """Chinese build: a glossary headword ``因果 mask（causal mask）`` keeps the English page's ``#term-causal-mask``."""
    from docutils import nodes
    from sphinx.util.nodes import _make_id  # how Sphinx's glossary names a term's id (it keeps the case)

    if app.config.revformer_language == "en":
        return
    for term in doctree.findall(nodes.term):
        match = HEADWORD.fullmatch(term.astext().strip())
        if not match or not term["ids"]:
            continue
        name = _make_id("term-" + match.group(2))
        if name not in term["ids"]:
            term["ids"].insert(0, name)
            doctree.ids[name] = term


def term_index_entries(app, doctree):
    """Chinese build: a headword ``贪心解码（greedy decoding）`` is found by search as 贪心解码 and as greedy decoding.

    Sphinx indexes a glossary term by its whole text, and its search takes an index entry only for a query at
    least half the entry's length: each part gets its own entry.
    """
    from docutils import nodes
    from sphinx import addnodes

    if app.config.revformer_language == "en":
        return
    for term in doctree.findall(nodes.term):
        match = HEADWORD.fullmatch(term.astext().strip())
        for index in term.findall(addnodes.index) if match else ():
            extra = [(kind, part, target, main, None) for kind, _, target, main, _ in index["entries"]
                     for part in match.groups()]
            index["entries"].extend(extra)
            # every entry to the term's own anchor (the English one), not the inner span of the Chinese id,
            # where the search found no title and no text to quote
            index["entries"] = [(kind, text, term["ids"][0], main, key) for kind, text, _, main, key in index["entries"]]


def glossary_letters(app, doctree):
    """A row of letters above the glossary, each a link to the first term under it: the English term's first
    letter, or in Chinese the first letter of the headword's pinyin (the order of the Chinese glossary)."""
    from docutils import nodes
    from sphinx import addnodes

    zh = app.config.revformer_language != "en"
    for glossary in list(doctree.findall(addnodes.glossary)):
        first = {}
        for term in glossary.findall(nodes.term):
            text = term.astext().strip()
            if zh:
                from pypinyin import lazy_pinyin

                text = "".join(lazy_pinyin(text.split("\uff08")[0])).strip()
            letter = next((c.upper() for c in text if c.isalpha()), "")
            if letter and term["ids"] and letter not in first:
                first[letter] = term["ids"][0]
        if len(first) < 2:
            continue
        label = "\u6309\u62fc\u97f3\u9996\u5b57\u6bcd" if zh else "Terms by first letter"
        links = "".join(f'<a href="#{target}">{letter}</a>' for letter, target in first.items())
        html = f'<nav class="rf-letters" aria-label="{label}">{links}</nav>'
        glossary.parent.insert(glossary.parent.index(glossary), nodes.raw("", html, format="html"))


def _listed_names(text: str, labels: str) -> list[str]:
    """The names a glossary entry lists after one of ``labels`` (``也称：A、B。``), split at its commas; a line
    ends at a newline or a 。 (a hard line break is no newline in ``astext``)."""
    return [part.strip(" .。") for line in re.findall(rf"(?:{labels})[:：]\s*([^\n。]+)", text)
            for part in re.split(r"[、，,;；]", line) if part.strip(" .。")]


def term_homes(doctree, docname: str) -> dict[str, str]:
    """The chapter each glossary term is taught in (its entry's first link to a chapter), for the search:
    by the term's whole headword, its Chinese and English parts (and each name of a list: EOS) and the other
    names its entry lists."""
    from docutils import nodes

    homes = {}
    for item in doctree.findall(nodes.definition_list_item):
        terms = [t.astext().strip() for t in item.findall(nodes.term)]
        terms += _listed_names(item.astext(), "本书用语|也称|Also called|In this book")
        for ref in item.findall(nodes.reference):
            found = re.search(r"(\d\d_\w+)\.html", ref.get("refuri", ""))
            if found:
                home = posixpath.join(posixpath.dirname(docname), found.group(1))
                for term in terms:
                    match = HEADWORD.fullmatch(term)
                    names = [term, *(match.groups() if match else ())]
                    # and each of an English part's comma-separated names: EOS in 特殊 token（BOS, SEP, EOS）
                    names += [part.strip() for name in names[1:] for part in name.split(",") if part.strip()]
                    homes.update(dict.fromkeys((n.lower() for n in names), home))
                break
    return homes


def term_anchors(doctree) -> dict[str, str]:
    """Every name of a glossary term (its headword, the headword's parts, the English part's comma-separated
    names: EOS in 特殊 token（BOS, SEP, EOS）) -> the term's anchor, for a glossary result found by its text."""
    from docutils import nodes

    anchors = {}
    for term in doctree.findall(nodes.term):
        if not term["ids"]:
            continue
        headword = term.astext().strip()
        match = HEADWORD.fullmatch(headword)
        names = [headword, *(match.groups() if match else ())]
        names += [part.strip() for name in list(names) for part in name.split(",") if part.strip()]
        names += _listed_names(term.parent.astext(), "也称")  # DLA in 直接 logit 归因's 也称 line
        anchors.update({name.lower(): term["ids"][0] for name in names})
    return anchors


def term_aliases(doctree) -> dict[str, list[str]]:
    """A glossary entry's other Chinese names (its 也称 line, and its 原文 line where that is one name), each as
    [the words the chapters write, the entry's headword, its anchor]: 层归一化 is written LayerNorm, 掩码 因果 mask;
    a name with words in brackets, X（Y）, is written Y. The search looks an other name up as the chapters write
    it (scorer.js)."""
    from docutils import nodes

    aliases = {}
    for item in doctree.findall(nodes.definition_list_item):
        term = next(iter(item.findall(nodes.term)), None)
        if term is None or not term["ids"]:
            continue
        headword = term.astext().strip()
        match = HEADWORD.fullmatch(headword)
        written = match.group(1) if match else headword
        # the article's name, where it is a name (数字 Token 准确率, 梯度范数裁剪), not a sentence
        # a line of the entry ends at a newline or a 。 (a hard line break is no newline in astext)
        for line in re.findall(r"原文[:：]\s*([^\n。]+)", item.astext()):
            name = line.strip().rstrip("。. ")
            # a name, not a remark about one (未涉及, 用到但未命名, 沿用英文)
            if (re.fullmatch(r"[\u4e00-\u9fff][\u4e00-\u9fffA-Za-z ]{1,15}", name) and name != written
                    and not re.search(r"^(?:未|没有|沿用|不|用到)|命名", name)):
                aliases[name.lower()] = [written, written, term["ids"][0]]
        for name in _listed_names(item.astext(), "也称"):
            own = HEADWORD.fullmatch(name)
            name, words = (own.group(1), own.group(2)) if own else (name, written)
            # a one-character word (头) would match inside others (从头, 开头): such a name is searched as written
            if (re.search(r"[\u3400-\u9fff]", name) and name != words
                    and not re.fullmatch(r"[\u3400-\u9fff]", words)):
                aliases[name.lower()] = [words, written, term["ids"][0]]
    return aliases


def all_homes(app) -> dict[str, str]:
    """``term_homes`` of the glossary's resolved doctree, once per build (whether or not the glossary is written)."""
    if getattr(app, "_revformer_homes", None) is None:
        # set first: resolving the glossary emits doctree-resolved again
        app._revformer_homes, app._revformer_aliases, app._revformer_anchors = {}, {}, {}
        for docname in sorted(app.env.found_docs):
            if docname.endswith("glossary"):
                doctree = app.env.get_and_resolve_doctree(docname, app.builder)
                app._revformer_homes.update(term_homes(doctree, docname))
                app._revformer_aliases.update(term_aliases(doctree))
                app._revformer_anchors.update(term_anchors(doctree))
    return app._revformer_homes


def home_index_entries(app, doctree, docname):
    """Search: every name of a glossary term is an index entry of the chapter that teaches it, so a query for a
    name the chapter's prose does not use (因果掩码, where the prose says 因果 mask) still finds it."""
    from sphinx import addnodes

    if app.builder.format != "html" or docname.endswith("glossary"):
        return
    names = sorted(name for name, home in all_homes(app).items() if home == docname)
    if names:
        doctree.append(addnodes.index(entries=[("single", name, "", "main", None) for name in names]))


def write_homes(app, exception):
    """``_static/revformer-homes.js``: every glossary term's home chapter, every other name's written words and
    every name's anchor, for the search scorer."""
    if exception is None and app.builder.format == "html":
        homes = all_homes(app)
        tables = {"REVFORMER_HOMES": homes, "REVFORMER_ALIASES": app._revformer_aliases,
                  "REVFORMER_ANCHORS": app._revformer_anchors}
        out = Path(app.outdir) / "_static" / "revformer-homes.js"
        out.write_text("".join(f"window.{name} = {json.dumps(table, ensure_ascii=False, sort_keys=True)};\n"
                               for name, table in tables.items()), encoding="utf-8")


def search_scorer(app, config):
    """The book's search scorer (_search/scorer.js): home chapters first, snippets from prose."""
    if not config.html_search_scorer:
        config.html_search_scorer = str(Path(__file__).parent / "_search" / "scorer.js")


def search_skips_code(app, config):
    """The search index holds a page's prose, not its code: "logit lens" found every page with ``len(`` (the
    English stemmer makes lens len), and a snippet could only be cut from prose anyway (scorer.js). Sphinx 7.4
    has no way to leave a node out of the index (Sphinx 8 reads the class "no-search"), so the collector of a
    page's words gets a copy of the page without its code cells and code blocks."""
    from docutils import nodes
    from sphinx.search import IndexBuilder

    collect = IndexBuilder._word_collector
    if getattr(collect, "skips_code", False):
        return

    def code(node) -> bool:
        return isinstance(node, nodes.literal_block) or (
            isinstance(node, nodes.Element) and "cell_input" in node.get("classes", ()))

    def _word_collector(self, doctree):
        prose = doctree.deepcopy()
        for node in list(prose.findall(code)):
            if node.parent is not None:
                node.parent.remove(node)
        store = collect(self, prose)
        app = getattr(self.env, "app", None)
        terms = [term for term in all_homes(app) if PHRASE.fullmatch(term)] if app is not None else []
        store.words.extend(phrase_keys(prose.astext(), terms))
        store.title_words.extend(key for title, _ in store.titles for key in phrase_keys(title, terms))
        return store

    _word_collector.skips_code = True
    IndexBuilder._word_collector = _word_collector


# A glossary term of two or three Latin words (logit lens, kv cache, sign-flip test)
PHRASE = re.compile(r"[a-z0-9]+(?:[ -][a-z0-9]+){1,2}")
# a hyphened word of the prose (Pre-LN, Post-LN, decoder-only), two or three parts
HYPHENED = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+){1,2}(?![A-Za-z0-9_-])")


@functools.cache
def _phrase_pattern(term: str) -> re.Pattern:
    words = re.split(r"[ -]", term)
    return re.compile(r"(?<![a-z0-9])" + r"[\s\-]+".join(map(re.escape, words)) + r"(?:e?s)?(?![a-z0-9])")


def phrase_key(words) -> str:
    """One index word for a phrase: logit lens is ``logit_lens_`` (no stemmer, Python's or the page's, changes a
    word that ends in an underscore, and the search's query splitter keeps underscores)."""
    return "_".join(word.lower() for word in words) + "_"


def phrase_keys(text: str, terms) -> list[str]:
    """The phrases ``text`` holds, as index words: every hyphened word and every one of ``terms`` (spaces or
    hyphens between the words, a plural ending allowed). The search joins a query's words the same way
    (_search/scorer.js), so logit lens finds the pages that say logit lens, not every page with lens or len
    (PROMPT_LEN: the stemmer makes lens len) and Pre-LN the pages that say Pre-LN, not every word with pre."""
    keys = {phrase_key(match.group(0).split("-")) for match in HYPHENED.finditer(text)}
    low = text.lower()
    keys.update(phrase_key(re.split(r"[ -]", term)) for term in terms if _phrase_pattern(term).search(low))
    return sorted(keys)


LETTER_WORD = re.compile(r"(?<![A-Za-z0-9_])([A-Za-z]) ?([\u4e00-\u9fff]{1,2})")


def chinese_search_keeps_characters(app, config):
    """Chinese build: the search index holds the compounds jieba splits (训练集, 学习率, 输出层) and keeps single
    characters, which Sphinx's Chinese splitter drops; the scorer looks a word the index still lacks up as its
    pieces."""
    from sphinx.search import languages
    from sphinx.search.zh import SearchChinese

    han = re.compile(r"[\u3400-\u9fff]+")

    class BookChinese(SearchChinese):
        def split(self, input: str) -> list[str]:
            """jieba's words; each two- or three-character word with the first character of the next (训练 +
            集上 gives 训练集, in 在训练集上, which jieba never yields as one word); and the beginnings of a long
            word (反转对齐权重 holds 反转对齐, 自回归生成 holds 自回归), which a search asks for alone."""
            words = super().split(input)
            joined = [a + b[0] for a, b in zip(words, words[1:])
                      if 2 <= len(a) <= 3 and han.fullmatch(a) and han.match(b)]
            # two two-character words as one (符号 + 翻转: 符号翻转, which jieba keeps whole only in 符号翻转检验)
            joined += [a + b for a, b in zip(words, words[1:])
                       if len(a) == len(b) == 2 and han.fullmatch(a) and han.fullmatch(b)]
            # a character and the two-character word after it (自 + 回归: 自回归, in 自回归训练)
            joined += [a + b for a, b in zip(words, words[1:])
                       if len(a) == 1 and len(b) == 2 and han.fullmatch(a) and han.fullmatch(b)]
            starts = [w[:n] for w in words if len(w) >= 5 and han.fullmatch(w) for n in range(3, len(w))]
            # a letter and the Chinese word after it (p 值, t 分布): the index keeps no one-letter word
            lettered = [a.lower() + b[:n] for a, b in LETTER_WORD.findall(input) for n in {1, len(b)}]
            return words + joined + starts + lettered

        def word_filter(self, stemmed_word: str) -> bool:
            return len(stemmed_word) > 1 or bool(han.fullmatch(stemmed_word))

    if config.revformer_language == "zh_CN":
        languages["zh"] = BookChinese


STATIC = Path(__file__).parent / "_static"
TEMPLATES = Path(__file__).parent / "_templates"


# A figure as the HTML writer writes it: an image shown at another size is a link to its full-size file.
IMAGE = re.compile(r'(?:<a class="reference internal image-reference" href="(?P<href>[^"]*)">)?'
                   r'<img (?P<attrs>[^>]*?)src="(?P<src>(?:\.\./)*_images/(?P<sha>[0-9a-f]{64})\.png)"'
                   r'(?P<rest>[^>]*)>(?(href)\s*</a>)')


def executed_notebook(app, pagename: str) -> dict | None:
    """The page's notebook with its outputs: myst-nb's copy in ``jupyter_execute``, or, where that copy has no
    outputs (a page read again from the Jupyter cache), the cache's own record."""
    copy = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    notebook = json.loads(copy.read_text(encoding="utf-8")) if copy.is_file() else None
    if notebook and any(c.get("outputs") for c in notebook["cells"]):
        return notebook
    cache, source = Path(app.outdir).parent / ".jupyter_cache", Path(app.env.doc2path(pagename))
    if not (cache.is_dir() and source.suffix == ".ipynb"):
        return notebook
    import nbformat
    from jupyter_cache import get_cache

    try:
        _, merged = get_cache(cache).merge_match_into_notebook(nbformat.read(source, as_version=4))
    except KeyError:
        return notebook
    return json.loads(nbformat.writes(merged))


def dark_twins(notebook: dict | None, language: str) -> dict[str, bytes]:
    """The dark twins of a page's figures, by the SHA-256 of the figure the page shows (myst-nb's file name)."""
    if not notebook:
        return {}
    twins = {}
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            dark = output.get("metadata", {}).get("revformer_i18n", {}).get("dark")
            shown = output.get("data", {}).get("image/png")
            if dark and shown:
                shown = "".join(shown) if isinstance(shown, list) else shown
                sha = hashlib.sha256(base64.b64decode(shown)).hexdigest()
                twins[sha] = base64.b64decode(dark.get(language) or dark["en"])
    return twins


def dark_figures(app, pagename, templatename, context, doctree):
    """Give every figure of a chapter its dark twin (only one of the two shows, by the theme's mode); the twin
    links to its own full-size file, as the figure does (a phone, a closer look)."""
    body = context.get("body")
    if not body or "_images/" not in body:
        return
    twins = dark_twins(executed_notebook(app, pagename), app.config.language or "en")
    if not twins:
        return
    images = Path(app.outdir) / "_images"

    def drawn(src, match, mode):
        image = f'<img class="{mode}" {match["attrs"]}src="{src}"{match["rest"]}>'
        if match["href"] is None:
            return image
        return f'<a class="reference internal image-reference {mode}" href="{src}">{image}</a>'

    def twin(match):
        sha, src = match["sha"], match["src"]
        if sha not in twins:
            return match[0]
        images.mkdir(parents=True, exist_ok=True)
        (images / f"{sha}-dark.png").write_bytes(twins[sha])
        return drawn(src, match, "only-light") + drawn(src[:-len(".png")] + "-dark.png", match, "only-dark")

    context["body"] = IMAGE.sub(twin, body)


FIGURE_LABEL = {"en": "Figure {chapter}.{number}.", "zh_CN": "图 {chapter}.{number}"}


def number_figures(app, doctree):
    """A chapter's captioned figures are numbered in order, "Figure 10.1." (the caption is the cell's
    ``mystnb.figure.caption``, translated like its alt text), so the prose can refer to them by number."""
    from docutils import nodes

    found = re.match(r"(?:.*/)?(\d\d)_", app.env.docname)
    if not found:
        return
    label = FIGURE_LABEL.get(app.config.revformer_language, FIGURE_LABEL["en"])
    captions = [c for c in doctree.findall(nodes.caption) if isinstance(c.parent, nodes.figure)]
    for number, caption in enumerate(captions, start=1):
        text = label.format(chapter=int(found.group(1)), number=number)
        caption.insert(0, nodes.strong(text, text, classes=["rf-figure-number"]))
        caption.insert(1, nodes.Text(" " if app.config.revformer_language == "en" else "\u3000"))


def no_launch_for_pages(app, pagename, templatename, context, doctree):
    """A Markdown page (the playground, the landing page) gets no launch buttons: Colab and Binder would open
    its ``.md`` source, which they cannot run (the look review). Its model runs in the page itself."""
    if context.get("sourcename", "").endswith((".md", ".md.txt")) and "header_buttons" in context:
        context["header_buttons"] = [b for b in context["header_buttons"] if b.get("label") != "launch-buttons"]


RUN_BADGE = {"en": ("Run this chapter in {name}", "or in {name}"), "zh_CN": ("在 {name} 中运行本章", "或在 {name} 中运行")}


# The student edition (tools/student.py) has no launch buttons: Colab and Binder would open the repository's
# notebooks, which keep the answers; its chapters link to their own notebooks in the site's downloads instead.
STUDENT_BADGE = {"en": "Download this chapter's notebook, then open it in Colab (File, Upload notebook) or Jupyter",
                 "zh_CN": "下载本章的 notebook，再在 Colab（文件 → 上传笔记本）或 Jupyter 中打开"}


def run_badges(app, pagename, templatename, context, doctree):
    """Under a chapter's title, the header's launch links as buttons a reader sees (the look review: the way
    to run a chapter was a rocket icon in the header only): Colab first, then Binder."""
    body = context.get("body")
    student = app.config.revformer_edition == "student"
    if student and "header_buttons" in context:
        context["header_buttons"] = [b for b in context["header_buttons"] if b.get("label") != "launch-buttons"]
    if not body or not context.get("sourcename", "").endswith((".ipynb", ".ipynb.txt")) or "</h1>" not in body:
        return
    if student:
        notebook = context["pathto"](f"downloads/notebooks/{pagename.rsplit('/', 1)[-1]}.ipynb", 1)
        wording = STUDENT_BADGE["zh_CN" if app.config.revformer_language == "zh_CN" else "en"]
        context["body"] = body.replace("</h1>", f'</h1>\n<p class="rf-run"><a class="rf-run-download" download '
                                       f'href="{html.escape(notebook, quote=True)}">{html.escape(wording)}</a></p>', 1)
        return
    links = {b.get("text"): b for group in context.get("header_buttons", []) if group.get("label") == "launch-buttons"
             for b in group.get("buttons", [])}
    first, then = RUN_BADGE["zh_CN" if app.config.revformer_language == "zh_CN" else "en"]
    badges = []
    for name, wording in (("Colab", first), ("Binder", then)):
        link = links.get(name)
        if link:
            icon = context["pathto"](link["icon"], 1)
            badges.append(f'<a class="rf-run-{name.lower()}" href="{html.escape(link["url"], quote=True)}">'
                          f'<img src="{html.escape(icon, quote=True)}" alt="" width="18" height="18" />'
                          f'{html.escape(wording.format(name=name))}</a>')
    if badges:
        context["body"] = body.replace("</h1>", "</h1>\n<p class=\"rf-run\">" + "".join(badges) + "</p>", 1)


DESCRIPTION = {"en": "A two-layer Transformer written by hand in PyTorch learns to reverse six digits: every "
                     "number inside it printed, every chapter a notebook you can run.",
               "zh_CN": "一个用 PyTorch 手写的两层 Transformer 学习把六个数字倒过来：模型里的每个数都打印出来，"
                        "每一章都是可以运行的 notebook。"}
CARD = "revformer-card.png"


def _first_paragraph(doctree, limit: int = 160) -> str:
    """The page's first paragraph as plain text, cut at a word (or, in Chinese, a character) near ``limit``."""
    from docutils import nodes

    for paragraph in doctree.findall(nodes.paragraph):
        if not isinstance(paragraph.parent, (nodes.section, nodes.document)):  # not a list item, a note, a cell
            continue
        text = " ".join(paragraph.astext().split())
        if len(text) >= 40:
            if len(text) <= limit:
                return text
            cut = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
            return cut.rstrip(",;:，；：") + "…"
    return ""


def page_meta(app, pagename, templatename, context, doctree):
    """A description and a preview card for shared links (``og:`` and ``twitter:``), and the favicon's type."""
    language = app.config.revformer_language
    site = (app.config.html_baseurl or "").rstrip("/") + "/"
    described = (_first_paragraph(doctree) if doctree is not None and pagename != app.config.root_doc else "")
    description = html.escape(described or DESCRIPTION[language], quote=True)
    title = html.escape(context.get("title", "") or app.config.html_title or "", quote=True)
    url = site + app.builder.get_target_uri(pagename)
    # the basic layout writes the viewport tag; the copy an extension adds to metatags would be a second
    context["metatags"] = VIEWPORT.sub("", context.get("metatags", "")) + "".join(
        f'\n<meta {attribute}="{name}" content="{value}" />' for attribute, name, value in (
            ("name", "description", description), ("property", "og:title", title),
            ("property", "og:description", description), ("property", "og:type", "website"),
            ("property", "og:url", html.escape(url, quote=True)),
            ("property", "og:image", html.escape(site + "_static/" + CARD, quote=True)),
            ("property", "og:image:width", "1200"), ("property", "og:image:height", "630"),
            ("name", "twitter:card", "summary_large_image")))
    # the SVG favicon (html_favicon) for browsers that take one, a PNG for the rest, and a home-screen icon
    static = context["pathto"]("_static/", 1)
    context["metatags"] += (f'\n<link rel="icon" type="image/png" sizes="32x32" '
                            f'href="{static}revformer-icon-32.png" />'
                            f'\n<link rel="apple-touch-icon" href="{static}revformer-icon-180.png" />')


def social_card(app, exception):
    """The preview image of shared links: the book's title over layer 0's reversal pattern, 1200x630 px."""
    if exception is not None or app.builder.format != "html":
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from revformer.i18n import cjk_font

    title = app.config.html_title or app.config.project
    fig = plt.figure(figsize=(12, 6.3), dpi=100)
    fig.patch.set_facecolor("#0b3d4a")
    grid = np.zeros((7, 8))
    for row in range(6):
        grid[row, 6 - row] = 1.0  # query 7 + row reads key 6 - row: the anti-diagonal
    grid[6, 0] = 0.35
    ax = fig.add_axes((0.62, 0.14, 0.33, 0.72))
    ax.imshow(grid, cmap="cividis", vmin=0, vmax=1)
    ax.set_axis_off()
    family = [cjk_font()] if app.config.revformer_language == "zh_CN" and cjk_font() else None
    font = {"family": family} if family else {}
    # the text keeps to the left 55 % (x < 660 px), clear of the picture that starts at x = 744 px
    fig.text(0.06, 0.62, "\n".join(_wrapped(title, 18 if family else 21)), color="white", fontsize=38,
             fontweight="bold", va="center", **font)
    fig.text(0.06, 0.2, "3 1 4 2 0 5 \u2192 5 0 2 4 1 3", color="#ffd75e", fontsize=26, family="monospace")
    out = Path(app.outdir) / "_static" / CARD
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100, facecolor=fig.get_facecolor())
    plt.close(fig)


def _wrapped(text: str, width: int) -> list[str]:
    if " " not in text:  # Chinese: by characters
        return [text[i:i + width // 2] for i in range(0, len(text), width // 2)]
    import textwrap

    return textwrap.wrap(text, width)


def set_favicon(app, config):
    config.html_favicon = str(STATIC / "revformer-icon.svg")


def own_figure_numbers(app, config):
    """Figures are numbered per chapter by ``number_figures``; Jupyter Book turns Sphinx's numfig on whatever
    ``_config.yml`` says, which would put "Fig. 16" before "Figure 10.3." (the Chinese reader's review)."""
    config.numfig = False


def add_static(app):
    app.config.html_static_path.append(str(STATIC))


def setup(app):
    from myst_nb.sphinx_ import HideCodeCellNode

    app.setup_extension("myst_nb")  # registers HideCodeCellNode first, so the visitor below replaces its own
    app.add_node(HideCodeCellNode, override=True, html=(visit_hidden_cell, depart_hidden_cell))
    app.connect("builder-inited", add_static)
    app.add_css_file("revformer-book.css")
    app.add_config_value("revformer_language", "en", "html", [str])
    app.add_config_value("revformer_site_root", "", "html", [str])
    app.add_config_value("revformer_edition", "reader", "html", [str])  # or "student" (tools/student.py)
    app.add_config_value("revformer_section_ids", "", "env", [str])
    app.connect("doctree-read", english_section_ids, priority=400)
    app.connect("doctree-read", english_term_ids, priority=400)
    app.connect("doctree-read", term_index_entries, priority=410)
    app.connect("doctree-read", glossary_letters, priority=420)
    app.connect("doctree-read", number_figures)
    app.connect("build-finished", write_homes)
    app.connect("doctree-resolved", home_index_entries)
    app.connect("config-inited", search_scorer)
    app.connect("config-inited", chinese_search_keeps_characters)
    app.connect("config-inited", search_skips_code)
    app.add_js_file("revformer-homes.js")
    app.add_js_file("revformer-page.js")
    app.connect("build-finished", record_section_ids)
    app.connect("config-inited", default_mode_auto)
    app.connect("config-inited", theme_header)
    app.connect("html-page-context", edition_link)
    app.connect("html-page-context", page_meta)
    app.connect("build-finished", social_card)
    app.connect("config-inited", set_favicon)
    app.connect("config-inited", own_figure_numbers, priority=900)
    app.connect("html-page-context", dark_figures)
    app.connect("html-page-context", no_launch_for_pages, priority=600)  # after the theme's (501)
    app.connect("html-page-context", run_badges, priority=610)
    app.connect("html-page-context", dedupe_scripts, priority=900)
    app.connect("html-page-context", relative_site_links, priority=950)
    app.connect("build-finished", check_site_links)
    app.connect("build-finished", chrome_in_chinese)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
