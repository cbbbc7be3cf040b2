"""The built HTML book (`make book` writes _build/html; `make test` builds it first)."""
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from book_facts import (FIGURE_CHAPTERS, HTML, REPO_URL, chapter_files, chapter_number, page, toc_files)

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


def test_every_toc_page_was_built():
    for name in toc_files():
        assert page(name).exists(), name


@pytest.mark.parametrize("name", CHAPTERS)
def test_launch_links(name):
    owner_repo = urlsplit(REPO_URL).path.strip("/")
    hrefs = [a.get("href", "") for t, a in tags(page(name)) if t == "a"]
    assert f"https://colab.research.google.com/github/{owner_repo}/blob/main/{name}.ipynb" in hrefs
    assert any(h.startswith(f"https://mybinder.org/v2/gh/{owner_repo}/main") and name in unquote(h)
               for h in hrefs)


@pytest.mark.parametrize("name", CHAPTERS)
def test_check_section_hidden_answers_and_graded_question(name):
    html = page(name).read_text(encoding="utf-8")
    start = html.index('id="check-your-understanding"')
    section = html[start:]
    assert section.count("<details") >= 3 and "<details open" not in section
    assert 'class="rf-quiz"' in section and "rf-quiz-data" in section


@pytest.mark.parametrize("name", CHAPTERS)
def test_figures_have_alt_text(name):
    images = [a for t, a in tags(page(name)) if t == "img" and "_images/" in a.get("src", "")]
    if chapter_number(name) in FIGURE_CHAPTERS:
        assert images, "this chapter must show a figure"
    for attrs in images:
        assert len(attrs.get("alt", "").strip()) > 20, f"figure {attrs['src']} lacks alt text"


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_error_stderr_or_frozen_widget(name):
    html = page(name).read_text(encoding="utf-8")
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


def test_downloads_are_linked_from_the_introduction():
    hrefs = {a.get("href") for t, a in tags(page("book/intro")) if t == "a"}
    for name in DOWNLOADS:
        assert f"../downloads/{name}" in hrefs, name
        assert (HTML / "downloads" / name).stat().st_size > 0
    for name in CHAPTERS:
        notebook = f"../downloads/notebooks/{name.split('/')[-1]}.ipynb"
        assert notebook in hrefs and (HTML / notebook[3:]).exists()
    import revformer

    wheel = f"../downloads/revformer-{revformer.__version__}-py3-none-any.whl"  # what the setup cells install
    assert wheel in hrefs and (HTML / wheel[3:]).stat().st_size > 0


@pytest.mark.parametrize("name", ["book/10_heatmaps", "book/11_mask_off", "book/12_ablations", "book/playground"])
def test_explorers_run_the_model_from_the_site_itself(name):
    """Each explorer loads the exported model from the site's own /web/ folder, relatively."""
    html = page(name).read_text(encoding="utf-8")
    assert 'class="rf-playground"' in html
    sources = {a.get("src") for t, a in tags(page(name)) if t == "script" and a.get("src")}
    assert {"../web/revformer-weights.js", "../web/revformer-model.js"} <= sources
    for script in ("revformer-weights.js", "revformer-model.js"):
        assert (HTML / "web" / script).stat().st_size > 0
    size = sum(p.stat().st_size for p in (HTML / "web").iterdir())
    assert size <= 1_500_000, f"the model for the browser adds {size:,} bytes to the site"


def test_the_playground_says_what_each_try_shows_and_grades_a_question():
    html = page("book/playground").read_text(encoding="utf-8")
    assert "What this build’s models do" in html or "What this build's models do" in html
    assert 'class="rf-quiz"' in html


def _listings():
    """Chapter -> the package code it must show (issue: the reader reads the model)."""
    from revformer.attention import MultiHeadSelfAttention, causal_mask, scaled_dot_product_attention
    from revformer.data import split_inputs_labels
    from revformer.generate import generate, score
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
        9: [(generate, "for _ in range(SEQ_LEN + 1)", "tokens = torch.cat"), (score,)],  # the loop; the cache is chapter 20's
    }


def _listing_texts(html: str) -> list[str]:
    """The text of every source listing on a page, as a reader would copy it."""
    import html as html_lib

    codes = re.findall(r'<div class="rf-source-code"[^>]*>(.*?)</div>', html, re.S)
    return [html_lib.unescape(re.sub(r"<[^>]+>", "", code)) for code in codes]


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
