"""The built HTML book (`make book` writes _build/html; `make test` builds it first)."""
import html as html_module
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from book_facts import (CONFIG, EDITIONS, FIGURE_CHAPTERS, HTML, REPO_URL, chapter_files, chapter_number, page,
                        toc_files)

pytestmark = pytest.mark.book

CHAPTERS = chapter_files()
DOWNLOADS = ["config.json", "losses_full.csv", "losses_ablation.csv", "ablation.csv", "predictions.csv",
             "attention_sample0.npz", "head_stats.csv", "mask_toggle.json", "seeds.csv", "learning_curves.csv"]


@pytest.fixture(scope="module", autouse=True)
def _built():
    if not (HTML / "index.html").exists():
        pytest.fail("no built book in _build/html: run `make book` first (`make test` does)")


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def tags(path: Path):
    parser = Tags()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.tags


def all_pages():
    return sorted(p for p in HTML.rglob("*.html") if "_static" not in p.parts)


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_toc_page_was_built(edition):
    for name in toc_files():
        assert page(name, edition).exists(), name


def _in(edition, name):
    """A chapter's path in the repository: the Chinese notebooks are in zh_CN/ (tools/translations.py)."""
    return name if edition == "en" else f"{edition}/{name}"


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("name", CHAPTERS)
def test_launch_links(name, edition):
    """Colab and Binder open this edition's notebook: a Chinese page opens the Chinese one."""
    owner_repo = urlsplit(REPO_URL).path.strip("/")
    hrefs = [a.get("href", "") for t, a in tags(page(name, edition)) if t == "a"]
    assert f"https://colab.research.google.com/github/{owner_repo}/blob/main/{_in(edition, name)}.ipynb" in hrefs
    assert any(h.startswith(f"https://mybinder.org/v2/gh/{owner_repo}/main") and _in(edition, name) in unquote(h)
               for h in hrefs)
    downloads = [a.get("href", "") for t, a in tags(page(name, edition))
                 if t == "a" and "btn-download-source-button" in a.get("class", "")]
    assert downloads == [f"../_sources/{name}.ipynb"], downloads  # the download button: this edition's notebook
    notebook = json.loads((page(name, edition).parent / downloads[0]).resolve().read_text(encoding="utf-8"))
    assert notebook["metadata"].get("revformer", {}).get("language", "en") == edition


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_numbered_figure_is_a_picture(edition):
    """A cell with a figure's caption shows only its figure: a sentence printed in the same cell became an empty
    "Figure 10.2" with the caption of 10.1, and every later number shifted (the fifth Chinese review)."""
    from bs4 import BeautifulSoup

    empty = []
    for name in CHAPTERS:
        soup = BeautifulSoup(page(name, edition).read_text(encoding="utf-8"), "html.parser")
        for figure in soup.select("article figure"):
            if figure.select_one(".rf-figure-number") and not figure.select_one("img"):
                empty.append(f"{name}: {figure.select_one('.rf-figure-number').get_text()}")
    assert not empty, empty


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("name", CHAPTERS)
def test_a_chapter_shows_its_run_buttons_under_its_title(name, edition):
    """The look review: the way to run a chapter was the header's rocket icon only. Under the title, the same
    Colab and Binder links the header has, in the page's language."""
    text = page(name, edition).read_text(encoding="utf-8")
    article = re.split(r'title="[^"]*">#</a></h1>', text, maxsplit=1)  # the article's title (the print copy has no link)
    assert len(article) == 2, f"{name}: no title"
    badge = re.match(r'\s*<p class="rf-run">(.*?)</p>', article[1], re.S)
    assert badge, f"{name}: no run buttons right under the title"
    links = dict(re.findall(r'<a class="rf-run-(\w+)" href="([^"]+)"', badge.group(1)))
    header = {a.get("href", "") for t, a in tags(page(name, edition)) if t == "a"}
    assert set(links) == {"colab", "binder"} and all(html_module.unescape(u) in header for u in links.values()), links
    words = re.sub(r"<[^>]+>", "", badge.group(1))
    assert bool(re.search(r"[\u4e00-\u9fff]", words)) == (edition != "en"), words


@pytest.mark.parametrize("edition", EDITIONS)
def test_a_markdown_page_offers_no_launch_that_cannot_run(edition):
    """The playground is a Markdown page: Colab and Binder cannot open its source, so it has no launch buttons
    (the look review: its Colab and Binder buttons opened playground.md); chapters keep theirs."""
    hrefs = [a.get("href", "") for t, a in tags(page("book/playground", edition)) if t == "a"]
    assert not any("colab.research.google.com" in h or "mybinder.org" in h for h in hrefs), hrefs
    hrefs = [a.get("href", "") for t, a in tags(page("book/10_heatmaps", edition)) if t == "a"]
    assert any("colab.research.google.com" in h for h in hrefs)


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("name", CHAPTERS)
def test_check_section_hidden_answers_and_graded_question(name, edition):
    html = page(name, edition).read_text(encoding="utf-8")
    start = html.index('id="check-your-understanding"' if edition == "en" else "<h2>检查你的理解<")
    section = html[start:]
    assert section.count("<details") >= 3 and "<details open" not in section
    assert 'class="rf-quiz"' in section and "rf-quiz-data" in section


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("name", CHAPTERS)
def test_figures_have_alt_text(name, edition):
    images = [a for t, a in tags(page(name, edition)) if t == "img" and "_images/" in a.get("src", "")]
    if chapter_number(name) in FIGURE_CHAPTERS:
        assert images, "this chapter must show a figure"
    for attrs in images:
        assert len(attrs.get("alt", "").strip()) > 20, f"figure {attrs['src']} lacks alt text"


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("name", CHAPTERS)
def test_figures_are_numbered_and_the_prose_cites_only_figures_that_exist(name, edition):
    """Every figure of a chapter sits in a <figure> whose caption starts "Figure 10.1." (Chinese: "图 10.1"),
    numbered in order; a "Figure 10.2" the prose names is a figure of that chapter (the look review: no figure
    numbered or captioned)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page(name, edition).read_text(encoding="utf-8"), "html.parser")
    number, word = chapter_number(name), ("Figure" if edition == "en" else "图")
    figures = soup.select("figure")
    for image in soup.select(".cell_output img"):
        assert image.find_parent("figure"), f"{image.get('src')}: a figure without a caption"
    labels = [f.select_one("figcaption .rf-figure-number") for f in figures]
    doubled = [c.get_text(" ", strip=True)[:30] for c in soup.select("figcaption") if c.select_one(".caption-number")]
    assert not doubled, f"a second number (Sphinx's numfig) before the chapter's own: {doubled}"
    assert [label.get_text() if label else None for label in labels] == [
        f"Figure {number}.{k}." if edition == "en" else f"图 {number}.{k}" for k in range(1, len(figures) + 1)]
    article = soup.select_one("article") or soup
    for caption in article.select("figcaption"):
        caption.decompose()
    for chapter, k in re.findall(rf"{word} ?(\d+)\.(\d+)", article.get_text()):
        assert int(chapter) != number or 1 <= int(k) <= len(figures), f"{word} {chapter}.{k} is not on the page"


CODE_WIDTH = 88


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("name", toc_files())
def test_no_code_line_is_wider_than_88_characters(name, edition):
    """The code a reader sees (cells, collapsed ones too, and the package's listings) reads without scrolling
    sideways (the look review: 123 lines over 88 characters on one page, 30-47 sideways boxes on a phone)."""
    from bs4 import BeautifulSoup

    import unicodedata

    def columns(line):  # a Chinese character takes two columns of a monospaced font
        return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)

    soup = BeautifulSoup(page(name, edition).read_text(encoding="utf-8"), "html.parser")
    cells = soup.select(".cell_input pre, .rf-source-code pre")
    long = [line for block in cells for line in block.get_text().splitlines() if columns(line) > CODE_WIDTH]
    assert not long, f"{len(long)} code lines over {CODE_WIDTH} columns, e.g. {long[:3]}"


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("name", CHAPTERS)
def test_no_error_stderr_or_frozen_widget(name, edition):
    html = page(name, edition).read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" not in html
    for marker in ('class="output stderr"', 'class="output traceback"', "output_error",
                   "application/vnd.jupyter.widget-view+json", "widget-view"):
        assert marker not in html, marker


def test_nothing_is_loaded_from_outside_the_site():
    for path in all_pages():
        for tag, attrs in tags(path):
            urls = []
            if tag in ("script", "img", "iframe", "source", "video", "audio", "embed"):
                urls.append(attrs.get("src"))
            if tag == "link" and attrs.get("rel") not in ("canonical",):
                urls.append(attrs.get("href"))
            for url in filter(None, urls):
                assert not re.match(r"^(https?:)?//", url), f"{path.name} loads {url}"
        text = path.read_text(encoding="utf-8")
        assert "THEBE_JS_URL" not in text and "sphinx-thebe.js" not in text, path.name
        assert not re.search(r"@import\s+url\(['\"]?(https?:)?//", text), path.name
    assert (HTML / "_static" / "mathjax" / "tex-chtml.js").exists()


def test_every_local_link_resolves():
    for path in all_pages():
        for tag, attrs in tags(path):
            url = attrs.get("href") if tag in ("a", "link") else attrs.get("src") if tag in ("img", "script") else None
            if not url or re.match(r"^([a-z]+:|//|#)", url):
                continue
            target = (path.parent / unquote(urlsplit(url).path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            assert target.exists(), f"{path.relative_to(HTML)} links to missing {url}"


@pytest.mark.parametrize("edition", EDITIONS)
def test_downloads_are_linked_from_the_introduction(edition):
    root = HTML if edition == "en" else HTML / edition
    hrefs = {a.get("href") for t, a in tags(page("book/intro", edition)) if t == "a"}
    for name in DOWNLOADS:
        assert f"../downloads/{name}" in hrefs, name
        assert (root / "downloads" / name).stat().st_size > 0
    for name in CHAPTERS:
        notebook = f"../downloads/notebooks/{name.split('/')[-1]}.ipynb"
        assert notebook in hrefs and (root / notebook[3:]).exists()
        language = json.loads((root / notebook[3:]).read_text(encoding="utf-8"))["metadata"].get("revformer", {})
        assert language.get("language", "en") == edition, f"{notebook} of the {edition} site is not in its language"
    import revformer

    wheel = f"../downloads/revformer-{revformer.__version__}-py3-none-any.whl"  # what the setup cells install
    assert wheel in hrefs and (root / wheel[3:]).stat().st_size > 0


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("name", ["book/10_heatmaps", "book/11_mask_off", "book/12_ablations", "book/playground"])
def test_explorers_run_the_model_from_the_site_itself(name, edition):
    """Each explorer loads the exported model from the site's own /web/ folder, relatively."""
    root = HTML if edition == "en" else HTML / edition
    html = page(name, edition).read_text(encoding="utf-8")
    assert 'class="rf-playground"' in html
    sources = {a.get("src") for t, a in tags(page(name, edition)) if t == "script" and a.get("src")}
    assert {"../web/revformer-weights.js", "../web/revformer-model.js"} <= sources
    for script in ("revformer-weights.js", "revformer-model.js"):
        assert (root / "web" / script).stat().st_size > 0
    size = sum(p.stat().st_size for p in (root / "web").iterdir())
    assert size <= 1_500_000, f"the model for the browser adds {size:,} bytes to the site"


def test_the_playground_says_what_each_try_shows_and_grades_a_question():
    html = page("book/playground").read_text(encoding="utf-8")
    assert "What this build’s models do" in html or "What this build's models do" in html
    assert 'class="rf-quiz"' in html


def _listings():
    """Chapter -> the package code it must show (issue: the reader reads the model)."""
    from revformer.attention import MultiHeadSelfAttention, causal_mask, scaled_dot_product_attention
    from revformer.data import split_inputs_labels
    from revformer.generate import generate, greedy, score
    from revformer.model import FeedForward, ReversalTransformer, TransformerBlock, init_weights
    from revformer.train import answer_loss, evaluate_loss, train_model

    return {
        2: [(split_inputs_labels,), (answer_loss,)],
        3: [(ReversalTransformer.forward, "positions =", "x = self.token_embedding")],
        4: [(scaled_dot_product_attention,)],
        5: [(causal_mask,), (scaled_dot_product_attention, "if causal:", "scores = scores.masked_fill")],
        6: [(MultiHeadSelfAttention, "def split_heads"), (MultiHeadSelfAttention, None, "self.out_proj =")],
        7: [(FeedForward,), (TransformerBlock,), (ReversalTransformer.forward,), (init_weights,)],
        8: [(train_model,), (evaluate_loss,)],
        # the loop, and what generate hands it; the cache is chapter 20's
        9: [(generate, "def next_logits", "return greedy("),
            (greedy, "for _ in range(SEQ_LEN + 1)", "tokens = torch.cat"), (score,)],
    }


def _listing_texts(html: str) -> list[str]:
    """The text of every source listing on a page, as a reader would copy it."""
    import html as html_lib

    codes = re.findall(r'<div class="rf-source-code"[^>]*>(.*?)</div>', html, re.S)
    return [html_lib.unescape(re.sub(r"<[^>]+>", "", code)) for code in codes]


def test_chapter_7_shows_the_whole_model_in_one_listing():
    """Issue 32: one listing holds every class of the model, as minGPT's file does, read from the package."""
    from revformer.attention import (MultiHeadSelfAttention, causal_mask, scaled_dot_product_attention,
                                     softmax_over_keys)
    from revformer.model import FeedForward, ReversalTransformer, TransformerBlock
    from revformer.source import show_together

    whole = show_together(causal_mask, softmax_over_keys, scaled_dot_product_attention, MultiHeadSelfAttention,
                          FeedForward, TransformerBlock, ReversalTransformer).text
    assert '"""' not in whole and "class ReversalTransformer" in whole and len(whole.splitlines()) < 130
    name = next(c for c in CHAPTERS if chapter_number(c) == 7)
    shown = _listing_texts(page(name).read_text(encoding="utf-8"))
    assert any(whole.strip() == listing.strip() for listing in shown), "chapter 7 lacks the whole-model listing"


@pytest.mark.parametrize("chapter", sorted(_listings()))
def test_each_concept_chapter_shows_the_real_source_it_teaches(chapter):
    from revformer.source import show_source

    def flat(text):  # a method inside its class listing is indented once more: compare line by line
        return "\n".join(line.strip() for line in text.strip().splitlines())

    name = next(c for c in CHAPTERS if chapter_number(c) == chapter)
    shown = [flat(listing) for listing in _listing_texts(page(name).read_text(encoding="utf-8"))]
    for args in _listings()[chapter]:
        text = flat(show_source(*args).text)
        assert any(text in listing for listing in shown), \
            f"{name} does not show the package's source of {args[0].__qualname__}"


def test_every_exercise_shows_its_solution_collapsed():
    """A solution is a cell's output: a solution call that is not displayed leaves the page without it."""
    from book_facts import EXERCISE_CHAPTERS

    for name in chapter_files():
        html = page(name).read_text()
        shown = html.count('<details class="rf-solution">')
        if chapter_number(name) in EXERCISE_CHAPTERS:
            assert shown >= 1, f"{name}: the exercise's solution is not on the page (display(show_solution(...)))"
            assert "Show the solution" in html
        else:
            assert shown == 0, f"{name} shows a solution but is not in EXERCISE_CHAPTERS"


def test_every_page_links_to_the_same_page_in_the_other_edition():
    """The header of every page, in either edition, links to its counterpart, which exists."""
    zh_root = HTML / "zh_CN"
    # index.html is a redirect to the introduction; the index and search pages have the link too
    pages = [p for p in all_pages() if p.relative_to(HTML).as_posix() not in ("index.html", "zh_CN/index.html")]
    assert len([p for p in pages if zh_root in p.parents]) >= len(toc_files())
    for path in pages:
        chinese = zh_root in path.parents
        links = [a for t, a in tags(path) if t == "a" and "rf-edition" in a.get("class", "")]
        assert len(links) == 1, f"{path.relative_to(HTML)} has {len(links)} edition links"
        href = links[0]["href"]
        target = (path.parent / href).resolve()
        twin = (HTML / path.relative_to(zh_root)) if chinese else (zh_root / path.relative_to(HTML))
        assert target == twin.resolve() and target.exists(), f"{path.relative_to(HTML)} links to {href}"
        assert links[0]["hreflang"] == ("en" if chinese else "zh-CN")


def test_the_chinese_edition_is_written_and_searchable_in_chinese():
    """Chinese pages declare their language, and Sphinx's search index (split by jieba) has Chinese words."""
    for name in toc_files():
        html = page(name, "zh_CN").read_text(encoding="utf-8")
        assert re.search(r'<html[^>]* lang="zh-CN"', html), name
        text = re.sub(r"<[^>]+>", "", html)
        assert len(re.findall(r"[\u4e00-\u9fff]", text)) > 200, f"{name}: little Chinese on the Chinese page"
        for english in ("Launch on Colab", "Toggle primary sidebar", "Link to this heading", "Search this book",
                        "列印成"):  # the theme's words too
            assert english not in html, f"{name}: {english!r} on the Chinese page"
    index = (HTML / "zh_CN" / "searchindex.js").read_text(encoding="utf-8")
    terms = json.loads(index[len("Search.setIndex("):index.rindex(")")])["terms"]
    chinese = [t for t in terms if re.fullmatch(r"[\u4e00-\u9fff]{2,}", t)]
    assert len(chinese) > 500, "the Chinese search index holds few Chinese words (is jieba installed?)"
    for word in ("注意力", "教师", "消融", "反转", "教师强制", "反转对齐", "局部图", "残差流", "掩码", "因果掩码"):
        assert word in terms, word


@pytest.mark.parametrize("name", CHAPTERS)
def test_the_chinese_page_prints_what_the_english_page_prints(name):
    """One executed source: every printed output and every figure of a chapter is the same in both editions."""
    def printed(edition):
        html = page(name, edition).read_text(encoding="utf-8")
        blocks = re.findall(r'<div class="output stream[^"]*">(?:<div class="highlight">)?\s*<pre>(.*?)</pre>',
                            html, re.S)
        return blocks, re.findall(r'<img [^>]*src="(\.\./_images/[^"]+)"', html)

    (en_text, en_images), (zh_text, zh_images) = printed("en"), printed("zh_CN")
    assert zh_text == en_text, f"{name}: the Chinese page prints other text than the English one"
    # What is printed (not said) is the same on both pages, so it holds no English sentence: names, shapes,
    # numbers and tokens only. PyTorch's and the package's error messages stay as Python shows them.
    for block in zh_text:
        for line in html_module.unescape(re.sub(r"<[^>]+>", "", block)).splitlines():
            if re.search(r"Error\b|Warning\b", line):
                break  # an error message, and the lines it wraps onto
            # two words in a row ("largest difference", "test sample"): a phrase, not a name
            assert not re.search(r"(?<![\w.])[A-Za-z][a-z]{2,} [a-z]{3,}(?![\w(])", line), \
                f"{name}: English words printed on the Chinese page: {line!r}"
    assert len(zh_images) == len(en_images)
    # the figures are drawn from the same run in each language (revformer.i18n.figure_bundle): a figure
    # with words differs; tests/test_catalogues.py checks that each of them has its Chinese


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_page_names_itself_for_shared_links_and_has_an_icon(edition):
    """A description, a preview card that the site serves (1200x630) and a favicon on every page of the table of
    contents, each description the page's own words in the page's language (the look review: no favicon, no
    page description, no preview image)."""
    from PIL import Image

    site = CONFIG["html"]["baseurl"].rstrip("/") + "/" + ("" if edition == "en" else f"{edition}/")
    root = HTML if edition == "en" else HTML / edition
    descriptions = {}
    for name in toc_files():
        path = page(name, edition)
        found = tags(path)
        meta = {(a.get("name") or a.get("property")): a.get("content") for t, a in found if t == "meta"}
        icons = [a["href"] for t, a in found if t == "link" and a.get("rel") == "icon"]
        assert icons and (path.parent / icons[0]).resolve().is_file(), f"{name}: no favicon the site serves"
        # an SVG icon and a PNG one for browsers without SVG icons, and a home-screen icon (the look review)
        touch = [a["href"] for t, a in found if t == "link" and a.get("rel") == "apple-touch-icon"]
        pngs = [i for i in icons if i.endswith(".png")] + touch
        assert len(pngs) == 2 and all((path.parent / i).resolve().is_file() for i in pngs), f"{name}: {pngs}"
        viewports = [a for t, a in found if t == "meta" and a.get("name") == "viewport"]
        assert len(viewports) == 1, f"{name}: {len(viewports)} viewport tags, expected one"
        assert meta.get("og:image") == site + "_static/revformer-card.png", name
        assert meta.get("og:description") == meta.get("description") and len(meta["description"]) >= 40, name
        assert len(meta["description"]) <= 161, name
        assert meta.get("og:url") == site + name + ".html", name
        assert meta.get("twitter:card") == "summary_large_image", name
        cjk = re.search(r"[\u4e00-\u9fff]", meta["description"])
        assert bool(cjk) == (edition != "en"), f"{name}: description in the other language: {meta['description']}"
        descriptions[name] = meta["description"]
    assert len(set(descriptions.values())) > len(descriptions) - 3, "pages share one description"
    for name in toc_files():  # the tab says the book's title once (the landing page said "T — T")
        title = html_module.unescape(re.search(r"<title>(.*?)</title>", page(name, edition).read_text(
            encoding="utf-8"), re.S).group(1))
        parts = [part.strip() for part in title.split("\u2014")]
        assert len(parts) == len(set(parts)), f"{name}: the tab's title repeats itself: {title}"
    with Image.open(root / "_static" / "revformer-card.png") as card:
        assert card.size == (1200, 630)


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_glossary_opens_on_its_letters(edition):
    """A row of letters above the glossary, each linking to the first term under it, in the glossary's own order:
    A-Z in English, the headwords' pinyin in Chinese (the fifth Chinese review: 58 entries and no way in)."""
    text = page("book/glossary", edition).read_text(encoding="utf-8")
    nav = re.search(r'<nav class="rf-letters"[^>]*>(.*?)</nav>', text, re.S)
    assert nav, "no letters above the glossary"
    links = re.findall(r'<a href="#([^"]+)">([A-Z])</a>', nav.group(1))
    letters = [letter for _, letter in links]
    assert len(links) >= 10 and letters == sorted(letters), letters
    terms = re.findall(r'<dt[^>]* id="(term-[^"]+)"', text)
    positions = [terms.index(target) for target, _ in links]  # KeyError: a letter to no term
    assert positions == sorted(positions) and positions[0] == 0, positions
