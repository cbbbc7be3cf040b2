"""The package's own source, shown in a chapter: ``show_source(MultiHeadSelfAttention)``.

A chapter that teaches a piece of the model displays that piece's real code,
read from the installed package when the page runs (``inspect.getsource``),
so the listing can never drift from the code that trains.

The listing is Markdown (``_repr_markdown_``): a one-line title (the name, the
file, the lines) and a fenced code block. Whoever shows it colours the code
with its own highlighting: the book (myst-nb renders a Markdown output through
MyST, and Sphinx highlights the fence) with the theme's accessible light and
dark styles, which follow the reader's mode; Colab and Jupyter with theirs.
No colour is written into the listing, so none can clash with the page's
background.
"""
from __future__ import annotations

import ast
import html
import inspect
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from .i18n import Bilingual, tr

# The listing's head, in English; each edition's language from the catalogue (revformer.i18n).
LINES = "{path}, lines {first}-{last}"
# The head of a listing of several pieces (``show_together``).
TOGETHER = "{paths}, docstrings left out"


def code_fence(text: str, language: str) -> str:
    """``text`` as a fenced Markdown code block, its fence longer than any run of backticks inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{language}\n{body}{fence}"


@dataclass(frozen=True)
class SourceListing(Bilingual):
    """Lines ``first_line``..``first_line + n - 1`` of ``path``: the text of one listing."""

    name: str
    path: str
    first_line: int
    text: str
    language: str = "python"  # the name of a pygments lexer, also the fence's info string

    @property
    def last_line(self) -> int:
        return self.first_line + self.text.count("\n") - (1 if self.text.endswith("\n") else 0)

    def markdown(self, language: str) -> str:
        # Raw HTML blocks around the fence: the head, and classes a page can style
        # (a blank line ends an HTML block, so the fence between them is Markdown).
        where = tr(LINES, language, path=f"<code>{html.escape(self.path)}</code>", first=self.first_line,
                   last=self.last_line)
        head = f"{html.escape(self.name)} &mdash; {where}"
        return ('<div class="rf-source">\n'
                f'<div class="rf-source-head">{head}</div>\n'
                '<div class="rf-source-code">\n\n'
                f"{code_fence(self.text, self.language)}\n\n"
                "</div>\n</div>\n")

    def __repr__(self) -> str:  # what a plain console shows
        return f"# {self.name}, {self.path}, lines {self.first_line}-{self.last_line}\n{self.text}"


def _package_path(file: str) -> str:
    """``.../site-packages/revformer/model.py`` -> ``revformer/model.py``."""
    parts = Path(file).resolve().parts
    return "/".join(parts[len(parts) - 1 - parts[::-1].index("revformer"):]) if "revformer" in parts else file


def cut_lines(lines: list[str], first: str | None, last: str | None, name: str,
              begin: int = 0, end: int | None = None) -> tuple[int, int]:
    """``(begin, end)`` of the lines from the first containing ``first`` to the next containing ``last``.

    Without ``first`` or ``last`` the given ``begin`` or ``end`` stays (by
    default the whole of ``lines``); ``name`` says what was searched in an error.
    """
    end = len(lines) if end is None else end
    if first is not None:
        begin = next((i for i, line in enumerate(lines) if first in line), None)
        if begin is None:
            raise ValueError(f"no line of {name} contains {first!r}")
    if last is not None:
        stop = next((i for i, line in enumerate(lines) if i >= begin and last in line), None)
        if stop is None:
            raise ValueError(f"no line of {name} from {first!r} on contains {last!r}")
        end = stop + 1
    return begin, end


def show_source(obj, first: str | None = None, last: str | None = None) -> SourceListing:
    """The source of a function, class or method of the package, ready to display.

    ``first`` and ``last`` cut the listing to a part: from the first line that
    contains ``first`` to the first line after it that contains ``last``
    (both included), for example the embedding lines of a forward pass.
    """
    obj = inspect.unwrap(obj)  # a decorated function: its own source, not the decorator's wrapper
    try:
        lines, start = inspect.getsourcelines(obj)
        file = inspect.getsourcefile(obj)
    except (TypeError, OSError) as error:
        raise ValueError(f"no source to show for {obj!r}: {error}") from None
    name = getattr(obj, "__qualname__", getattr(obj, "__name__", repr(obj)))
    begin, end = cut_lines(lines, first, last, name)
    # a method or a part of a body, shifted left as a whole: its own indentation stays
    text = textwrap.dedent("".join(lines[begin:end]))
    return SourceListing(name, _package_path(file), start + begin, text)


def _without_docstrings(text: str) -> str:
    """``text`` (one function or class, dedented) without the docstring lines of it
    and of every function or class inside it."""
    drop = set()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            drop.update(range(body[0].lineno, body[0].end_lineno + 1))
    lines = text.splitlines(keepends=True)
    kept = "".join(line for number, line in enumerate(lines, start=1) if number not in drop)
    return re.sub(r"^(class .*:\n)\n", r"\1", kept, flags=re.MULTILINE)


@dataclass(frozen=True)
class TogetherListing(Bilingual):
    """Several listings in one code block, in the order given, without docstrings."""

    parts: tuple  # SourceListing, each

    @property
    def text(self) -> str:
        return "\n\n".join(_without_docstrings(part.text).rstrip("\n")
                            for part in self.parts) + "\n"

    def markdown(self, language: str) -> str:
        paths = ", ".join(dict.fromkeys(f"<code>{html.escape(part.path)}</code>"
                                        for part in self.parts))
        head = tr(TOGETHER, language, paths=paths)
        return ('<div class="rf-source">\n'
                f'<div class="rf-source-head">{head}</div>\n'
                '<div class="rf-source-code">\n\n'
                f"{code_fence(self.text, 'python')}\n\n"
                "</div>\n</div>\n")

    def __repr__(self) -> str:
        return self.text


def show_together(*objs) -> TogetherListing:
    """Several functions and classes of the package as one listing, in the order
    given, their docstrings left out: the whole model on one screen."""
    if not objs:
        raise ValueError("show_together needs at least one function or class")
    return TogetherListing(tuple(show_source(obj) for obj in objs))
