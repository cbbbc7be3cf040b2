"""``revformer.source`` listings: Markdown with a fenced block, coloured by whoever shows it."""
import pytest
from IPython.core.formatters import DisplayFormatter
from markdown_it import MarkdownIt

from revformer.attention import MultiHeadSelfAttention, scaled_dot_product_attention
from revformer.exercises import show_solution
from revformer.exercises.solutions import ch06
from revformer.source import SourceListing, code_fence, show_source
from revformer.web import beside, show_model_js


def tokens(markdown):
    """The block tokens CommonMark (Jupyter, Colab and the book's gfm parser alike) makes of it."""
    return MarkdownIt("commonmark").parse(markdown)


def fences(markdown):
    return [(t.info, t.content) for t in tokens(markdown) if t.type == "fence"]


def test_a_listing_is_markdown_with_the_code_in_one_fence():
    listing = show_source(MultiHeadSelfAttention)
    shown = listing._repr_markdown_()
    assert fences(shown) == [("python", listing.text)]
    assert listing.text.startswith("class MultiHeadSelfAttention(")
    head = "".join(t.content for t in tokens(shown) if t.type == "html_block")
    assert (f'<div class="rf-source-head">MultiHeadSelfAttention &mdash; <code>revformer/attention.py</code>, '
            f"lines {listing.first_line}-{listing.last_line}</div>") in head
    assert '<div class="rf-source-code">' in head


def test_a_listing_writes_no_colour_of_its_own():
    """The theme's accessible light and dark styles colour it: no inline style, no HTML output
    (an HTML output would win over the Markdown in the book, in Colab and in Jupyter)."""
    listing = show_source(scaled_dot_product_attention)
    assert "style=" not in listing._repr_markdown_() and "<span" not in listing._repr_markdown_()
    assert not hasattr(listing, "_repr_html_")
    data, _ = DisplayFormatter().format(listing)
    assert set(data) == {"text/markdown", "text/plain"}
    assert data["text/plain"].startswith("# scaled_dot_product_attention, revformer/attention.py, lines ")


def test_a_cut_listing_keeps_its_own_line_numbers():
    whole = show_source(scaled_dot_product_attention)
    part = show_source(scaled_dot_product_attention, "if causal:", "scores = scores.masked_fill")
    assert part.text.startswith("if causal:") and "masked_fill" in part.text.splitlines()[-1]
    assert whole.first_line < part.first_line <= part.last_line < whole.last_line
    assert f"lines {part.first_line}-{part.last_line}</div>" in part._repr_markdown_()
    assert fences(part._repr_markdown_()) == [("python", part.text)]
    with pytest.raises(ValueError, match="contains 'no such line'"):
        show_source(scaled_dot_product_attention, "no such line")


def test_the_fence_outlasts_backticks_in_the_code():
    text = 'doc = """\n```python\nx = 1\n```\n"""\n'
    listing = SourceListing("f", "revformer/x.py", 3, text)
    assert code_fence(text, "python").startswith("````python\n")
    assert fences(listing._repr_markdown_()) == [("python", text)]
    assert fences(code_fence("x = 1", "python")) == [("python", "x = 1\n")]


def test_a_name_or_path_cannot_break_the_markdown():
    listing = SourceListing("Model.__init__<x>", "revformer/a&b.py", 1, "pass\n")
    shown = listing._repr_markdown_()
    assert "Model.__init__&lt;x&gt; &mdash; <code>revformer/a&amp;b.py</code>, lines 1-1" in shown
    assert fences(shown) == [("python", "pass\n")]


def test_solutions_and_side_by_side_listings_stay_markdown():
    solution = show_solution(ch06.my_split_heads, ch06.my_merge_heads)
    shown = solution._repr_markdown_()
    assert [info for info, _ in fences(shown)] == ["python", "python"]
    assert [code for _, code in fences(shown)] == [listing.text for listing in solution.listings]
    blocks = [t.content for t in tokens(shown) if t.type == "html_block"]
    assert blocks[0].startswith('<details class="rf-solution">\n<summary>Show the solution</summary>')
    assert blocks[-1].rstrip().endswith("</details>")

    pair = beside(show_source(scaled_dot_product_attention), show_model_js(function="attention"))
    assert [info for info, _ in fences(pair._repr_markdown_())] == ["python", "javascript"]
    assert pair._repr_markdown_().startswith('<div class="rf-beside"')
    with pytest.raises(ValueError, match="beside takes one or more listings"):
        beside("not a listing")


def test_every_listing_renders_to_balanced_html():
    """Rendered as CommonMark (Colab, Jupyter), each wrapper the Markdown opens is closed, in order."""
    from html.parser import HTMLParser

    class Balance(HTMLParser):
        def __init__(self):
            super().__init__()
            self.open, self.errors = [], []

        def handle_starttag(self, tag, attrs):
            self.open.append(tag)

        def handle_endtag(self, tag):
            if not self.open or self.open.pop() != tag:
                self.errors.append(tag)

    shown = [show_source(MultiHeadSelfAttention), show_solution(ch06.my_split_heads, ch06.my_merge_heads),
             beside(show_source(scaled_dot_product_attention), show_model_js(function="attention"))]
    for item in shown:
        balance = Balance()
        balance.feed(MarkdownIt("commonmark").render(item._repr_markdown_()))
        assert not balance.errors and not balance.open, (type(item).__name__, balance.errors, balance.open)
