"""The package's own source, shown in a chapter: ``show_source(MultiHeadSelfAttention)``.

A chapter that teaches a piece of the model displays that piece's real code,
read from the installed package when the page runs (``inspect.getsource``),
so the listing can never drift from the code that trains. The listing is
HTML with the colours written inline: it looks the same in the built book,
in Colab and in Jupyter, with no style sheet to load.
"""
from __future__ import annotations

import html
import inspect
import textwrap
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SourceListing:
    """Lines ``first_line``..``first_line + n - 1`` of ``path``: the text of one listing."""

    name: str
    path: str
    first_line: int
    text: str
    language: str = "python"  # the name of a pygments lexer

    @property
    def last_line(self) -> int:
        return self.first_line + self.text.count("\n") - (1 if self.text.endswith("\n") else 0)

    def _highlighted(self) -> str:
        try:
            from pygments import highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import get_lexer_by_name
        except ImportError:  # a bare Python without pygments: plain, still readable
            return f"<pre>{html.escape(self.text)}</pre>"
        formatter = HtmlFormatter(noclasses=True, nowrap=True, style="default")
        code = highlight(self.text, get_lexer_by_name(self.language), formatter)
        return f'<pre style="margin:0;line-height:1.35">{code}</pre>'

    def _repr_html_(self) -> str:
        head = (f"{html.escape(self.name)} &mdash; <code>{html.escape(self.path)}</code>, "
                f"lines {self.first_line}-{self.last_line}")
        return ('<div class="rf-source" style="border:1px solid #c8c8c8;border-radius:6px;margin:.6em 0;'
                'max-width:100%;overflow-x:auto">'
                f'<div class="rf-source-head" style="font:12px system-ui,sans-serif;padding:.3em .7em;'
                f'background:#f3f3f3;border-bottom:1px solid #c8c8c8">{head}</div>'
                '<div class="rf-source-code" style="padding:.4em .7em;background:#fbfbfb;font-size:12.5px">'
                f"{self._highlighted()}</div></div>")

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
