"""The reader's budget: words a reader reads on each built page, outside code and printed output.

Counted as the reviewers count them: the page's article, without code input,
printed output (``<pre>``), the run's tables (a cell's output table: printed before the
chapters spoke the reader's language), listings, scripts, styles, forms and drawings.
"""
import re

import pytest
from bs4 import BeautifulSoup

from book_facts import page, toc_files

pytestmark = pytest.mark.book

PAGE_BUDGET = 3200  # a numbered chapter
SITE_BUDGET = 70000  # the developers' guide: the introduction, the chapters, the playground, glossary, references
# a hidden cell's toggle ("Show code cell source" / "Hide code cell source") is a control, not prose
# an explorer's labels and readouts (revformer.web) are controls too, read while using it, like a form's;
# so are a graded question's label, answer box and Check button (revformer.quiz): its question and options count
NOT_READ = ("div.cell_input", "pre", "div.cell_output table", "script", "style", "div.highlight", "form", "svg",
            "details.hide > summary", ".rf-playground", ".rf-quiz-q > strong:first-child", ".rf-quiz label:has(input[type=text])",
            "button.rf-quiz-check")


def words(name: str) -> int:
    soup = BeautifulSoup(page(name).read_text(), "html.parser")
    body = soup.select_one("article") or soup.select_one("main")
    for selector in NOT_READ:
        for element in body.select(selector):
            element.decompose()
    return len(body.get_text(" ").split())


COUNTS = {name: words(name) for name in toc_files()} if page(toc_files()[0]).exists() else {}


def test_words_are_counted_outside_code_and_output(tmp_path, monkeypatch):
    import book_facts

    (tmp_path / "x.html").write_text("<main><article><p>one two three</p><pre>not read</pre>"
                                     "<div class='cell_input'>x = 1</div><div class='highlight'>y</div>"
                                     "<script>var z</script><details class='hide'><summary><p>Show code cell "
                                     "source</p></summary></details></article></main>")
    monkeypatch.setattr(book_facts, "HTML", tmp_path)
    assert words("x") == 3


@pytest.mark.parametrize("name", [n for n in toc_files() if re.match(r"book/\d\d_", n)])
def test_no_chapter_runs_over_its_budget(name):
    assert COUNTS, "the book is not built: run make book first"
    assert COUNTS[name] <= PAGE_BUDGET, f"{name} has {COUNTS[name]:,} words; the budget is {PAGE_BUDGET:,}"


def test_the_whole_site_stays_within_its_budget():
    assert COUNTS, "the book is not built: run make book first"
    total = sum(COUNTS.values())
    biggest = ", ".join(f"{n} {c:,}" for n, c in sorted(COUNTS.items(), key=lambda kv: -kv[1])[:3])
    assert total <= SITE_BUDGET, f"the site has {total:,} words (budget {SITE_BUDGET:,}); the longest: {biggest}"
