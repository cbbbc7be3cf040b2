"""Each notebook reads well in Colab too: plain CommonMark and HTML, no MyST-only syntax.

Colab renders markdown, HTML and ``$...$`` / ``$$...$$`` math, not MyST
directives, roles or labels. Every markdown cell is rendered here as plain
CommonMark with dollar math (markdown-it-py, the parser MyST itself builds
on); whatever MyST syntax is left over shows up as literal text in that
rendering, and the test names the cell.
"""
import ast
import re
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from book_facts import CONFIG, chapter_files, load_notebook, python_of, source

CHAPTERS = chapter_files()
SITE = CONFIG["html"]["baseurl"].rstrip("/") + "/"
LEFTOVERS = {
    "a colon fence (:::)": re.compile(r"^\s*:::", re.M),
    "a MyST directive (```{name})": re.compile(r"`{3,}\s*\{[a-z-]+\}"),
    "a MyST role ({name}`...`)": re.compile(r"\{[a-z:-]+\}`"),
    "a MyST label ((name)=)": re.compile(r"^\s*\([A-Za-z0-9_-]+\)=\s*$", re.M),
    "a directive option (:class:)": re.compile(r"^\s*:[a-z-]+:\s", re.M),
}


class _Balance(HTMLParser):
    VOID = {"br", "hr", "img", "input", "meta", "link", "wbr"}

    def __init__(self):
        super().__init__()
        self.open, self.errors = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        if not self.open or self.open[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.open[-1] if self.open else 'nothing'}")
        else:
            self.open.pop()


def _markdown_cells(name):
    return [(i, source(c)) for i, c in enumerate(load_notebook(name)["cells"]) if c["cell_type"] == "markdown"]


@pytest.mark.parametrize("name", CHAPTERS)
def test_markdown_is_plain_commonmark(name):
    md = MarkdownIt("commonmark").use(dollarmath_plugin)
    for index, text in _markdown_cells(name):
        rendered = md.render(text)
        for what, pattern in LEFTOVERS.items():
            match = pattern.search(rendered)
            assert not match, f"cell {index} of {name} leaves {what} in Colab: {match.group(0)!r}"
        balance = _Balance()
        balance.feed(rendered)
        assert not balance.errors and not balance.open, f"cell {index} of {name}: unbalanced HTML {balance.errors or balance.open}"


@pytest.mark.parametrize("name", CHAPTERS)
def test_links_work_in_colab_and_in_the_book(name):
    """Links to chapters and downloads point to the published site (the build makes them relative)."""
    for index, cell in enumerate(load_notebook(name)["cells"]):
        text = source(cell)
        for url in re.findall(r'\]\(([^)\s]+)\)|href=\\?"([^"\\]+)', text):
            url = next(u for u in url if u)
            if url.startswith(("http://", "https://", "mailto:")):
                continue
            pytest.fail(f"cell {index} of {name} links to {url!r}, which is dead in Colab: "
                        f"link to {SITE}... instead (the build turns it into a relative link)")


@pytest.mark.parametrize("name", CHAPTERS)
def test_answers_and_solutions_are_collapsed_in_colab_too(name):
    """Colab ignores cell tags: a solution or an answer key in a cell would show in plain view."""
    for index, cell in enumerate(load_notebook(name)["cells"]):
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(ast.parse(python_of(cell))):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("my_"):
                body = [n for n in node.body if not isinstance(n, ast.Expr) or not isinstance(n.value, ast.Constant)]
                unfinished = len(body) == 1 and isinstance(body[0], ast.Raise)
                assert unfinished, (f"cell {index} of {name} holds a solution of {node.name}: show it with "
                                    "revformer.exercises.show_solution, collapsed in Colab too")
        if re.search(r"\b(choice|number)\(", source(cell)):
            pytest.fail(f"cell {index} of {name} writes its answer key into the cell: ask the question "
                        "from the package (revformer.quiz.ask) instead")
