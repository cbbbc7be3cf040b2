"""Notebook hygiene: what every chapter must be before it is built."""
import ast
import re

import pytest

from book_facts import (CONFIG, EXERCISE_CHAPTERS, REPO_URL, ROOT, book_tool, chapter_files, chapter_number, load_notebook,
                        python_of, revformer_public_names, source, toc_files)

CHAPTERS = chapter_files()


def test_toc_lists_the_chapters_in_order():
    """Fifteen chapters follow the article's sections; six more go further."""
    assert [chapter_number(f) for f in CHAPTERS] == list(range(1, 22))
    for name in toc_files():
        assert (ROOT / f"{name}.ipynb").exists() or (ROOT / f"{name}.md").exists(), name
    assert "book/glossary" in toc_files() and toc_files()[0] == "book/intro"


def test_every_chapter_notebook_is_listed():
    on_disk = {f"book/{p.stem}" for p in (ROOT / "book").glob("*.ipynb")}
    assert on_disk == set(CHAPTERS)


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_committed_outputs(name):
    for cell in load_notebook(name)["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, source(cell)[:80]


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_cell_has_its_own_id(name):
    """nbformat 4.5 cell ids: without them nbformat warns while the book builds (a warning fails it)."""
    ids = [cell.get("id") for cell in load_notebook(name)["cells"]]
    assert all(isinstance(i, str) and re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", i) for i in ids), ids
    assert len(set(ids)) == len(ids), "two cells share an id"


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_chapter_repeats_a_heading(name):
    """A heading met twice is a stale draft left beside its rewrite (chapter 15 once asked its question 6 twice)."""
    headings = [line.strip() for cell in load_notebook(name)["cells"] if cell["cell_type"] == "markdown"
                for line in re.sub(r"```.*?```", "", source(cell), flags=re.S).splitlines() if re.match(r"#{1,6} ", line)]
    assert len(headings) == len(set(headings)), sorted({h for h in headings if headings.count(h) > 1})


@pytest.mark.parametrize("name", CHAPTERS)
def test_colab_metadata_and_setup_cell(name):
    nb = load_notebook(name)
    assert nb["metadata"]["accelerator"] == "GPU"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    assert source(first) == book_tool.setup_cell_source(), "the setup cell is not the rendered template"
    assert "remove-cell" in first["metadata"].get("tags", [])


def test_every_place_names_the_repository_and_site_of_the_config():
    assert book_tool.problems() == []
    repo, site = book_tool.named()
    assert repo == REPO_URL and site == CONFIG["html"]["baseurl"]


@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_uses_revformer_and_redefines_none_of_it(name):
    public = revformer_public_names()
    defined, imports = set(), False
    for cell in load_notebook(name)["cells"]:
        if cell["cell_type"] != "code":
            continue
        tree = ast.parse(python_of(cell))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                defined.add(node.name)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                imports |= any(m.startswith("revformer") for m in mods)
    assert imports, "a chapter imports revformer"
    assert not defined & public, f"redefines revformer names: {sorted(defined & public)}"


@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_shape(name):
    cells = load_notebook(name)["cells"]
    first = source(cells[0])
    number = chapter_number(name)
    assert cells[0]["cell_type"] == "markdown" and first.startswith(f"# {number}. ")
    assert "After this chapter you can" in first
    text = [source(c) for c in cells]
    check = next(i for i, c in enumerate(cells)
                 if c["cell_type"] == "markdown" and "## Check your understanding" in source(c))
    after = cells[check:]
    answers = sum(source(c).count("<summary>") for c in after if c["cell_type"] == "markdown")
    assert answers >= 3, "at least three questions with hidden answers"
    graded = [c for c in after if c["cell_type"] == "code" and re.search(r"\bask\(", source(c))]
    assert graded and all("remove-input" in c["metadata"].get("tags", []) for c in graded)
    for c in cells:
        if c["cell_type"] == "code" and "plt.show()" in source(c):
            assert c["metadata"].get("mystnb", {}).get("image", {}).get("alt"), "a figure without alt text"
            assert c["metadata"]["mystnb"].get("figure", {}).get("caption"), f"{c['id']}: a figure without a caption"
    if number in EXERCISE_CHAPTERS:
        assert any("## Try it yourself" in t for t in text)
        assert any(re.search(r"\bcheck_\w+\(", t) for t in text)


@pytest.mark.parametrize("name", ["book/16_seeds", "book/17_learning_curves"])
def test_the_seed_chapters_compare_groups_by_pairs_and_run_their_controls(name):
    """Issue 21: groups are compared seed by seed (revformer.stats.paired), not by overlapping ranges;
    chapter 16 trains the batch-order and data-draw control that chapter 17 loads, and 17 the temperature control."""
    text = "\n".join(source(c) for c in load_notebook(name)["cells"])
    assert "paired(" in text and "paired_table(" in text
    for criterion in ("within the spread", "def verdict(", "**separated**"):  # the min-max criterion's words
        assert criterion not in text, criterion
    assert "order_and_draw(exp.config)" in text
    if name.endswith("17_learning_curves"):
        assert "scaled_scores(exp.config, 2.0, steps=100)" in text and "scaled_scores(exp.config, 0.5, steps=100)" in text


def _shown_say_lines(nb) -> tuple[int, int]:
    """(lines inside say(...) calls, non-blank lines) of the code a page shows (no hide/remove tag)."""
    said = shown = 0
    for cell in nb["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] != "code" or any(t in tags for t in ("hide-input", "remove-input", "remove-cell")):
            continue
        text = source(cell)
        shown += sum(1 for line in text.splitlines() if line.strip())
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        said += sum(n.end_lineno - n.lineno + 1 for n in ast.walk(tree)
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "say")
    return said, shown


def test_the_code_a_page_shows_computes_more_than_it_reports():
    """The look review: a fifth to a third of the shown code wrote the sentences printed below it (say(...)).
    A report sits in its own collapsed cell under the computation it reports: at most a quarter of a chapter's
    shown code lines, and a sixth of the book's, are inside say(...)."""
    totals = [0, 0]
    for name in CHAPTERS:
        said, shown = _shown_say_lines(load_notebook(name))
        assert said <= 0.25 * shown, f"{name}: {said} of {shown} shown code lines are inside say(...)"
        totals[0] += said
        totals[1] += shown
    assert totals[0] <= totals[1] / 6, totals
