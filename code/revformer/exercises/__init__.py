"""Checkers for the chapters' try-it-yourself exercises.

Each checker takes the reader's function, runs it on a few cases against
the package's own implementation, and prints what is right and, for what is
wrong, what the symptom means ("your labels are not shifted: ..."). A checker
never raises on a wrong or unfinished answer, so a chapter that shows the
unfinished exercise still runs top to bottom; it returns True only when
every case passes. A checker may name package functions that are its
exercise's answer (``off_limits``): a reader's function that calls one, however
indirectly, fails with a line that says so, since it would pass without the
reader writing anything.

A report is written in English only: each line is a ``Message`` (an English
template and its fields), rendered in every language when the report is
shown, the Chinese from the package's catalogue (``revformer.i18n``).

Modules, one exercise topic each, add their checkers on ``Checker``.
"""
from __future__ import annotations

import contextlib
import inspect
import sys
import textwrap
import traceback
import unicodedata
from collections.abc import Mapping
from pathlib import Path

from ..i18n import LANGUAGES, Bilingual, Message, render, show_text, tr

# The markers of a report's lines: each a template, padded to MARKER_WIDTH columns.
MARKERS = {"ok": "ok", "WRONG": "WRONG", "TODO": "TODO", "ERROR": "ERROR", "HINT": "HINT"}
MARKER_WIDTH = 6
INDENT = 8


def _columns(char: str) -> int:
    """How many columns ``char`` takes in a monospaced font (a CJK character two)."""
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def width_of(text: str) -> int:
    """The display width of ``text``."""
    return sum(_columns(c) for c in text)


def _wide(text: str) -> bool:
    return any(_columns(c) == 2 for c in text)


_NO_BREAK_BEFORE = set("\uff0c\u3002\uff1a\uff1b\uff09\u3001\uff01\uff1f")  # full-width , . : ; ) and the list comma


def _fold_wide(text: str, width: int, indent: str) -> str:
    """Fold text with CJK characters by display width: break between two wide characters or at a space."""
    units, word = [], ""
    for char in text:  # a unit: a wide character, a run of narrow non-space characters, or a space
        if char == " " or _columns(char) == 2:
            if word:
                units.append(word)
                word = ""
            units.append(char)
        else:
            word += char
    if word:
        units.append(word)
    lines, line = [], ""
    for unit in units:
        if (line.strip() and width_of(line + unit.rstrip()) > width and unit not in _NO_BREAK_BEFORE):
            head, tail = _soft_break(line, len(indent))
            lines.append(head.rstrip())
            line = indent + tail.lstrip()
            if unit == " " and not tail.strip():
                continue
        line += unit
    lines.append(line.rstrip())
    return "\n".join(lines)


_SOFT_REACH = 16  # columns: how far back a fold looks for a punctuation mark or a space (8 Chinese characters)


def _soft_break(line: str, start: int) -> tuple[str, str]:
    """``line`` cut after its last punctuation mark or space within the last ``_SOFT_REACH`` columns (a word is
    not split where a phrase ends near by), or not cut at all."""
    for i in range(len(line) - 1, start, -1):
        if width_of(line[i:]) > _SOFT_REACH:
            break
        if line[i - 1] in _NO_BREAK_BEFORE or line[i - 1] == " ":
            return line[:i], line[i:]
    return line, ""


def fold(text: str, width: int = 76) -> str:
    """Fold a long rendered line so that it reads without scrolling, under its marker.

    English folds at spaces; a line with Chinese characters folds by display
    width (a Chinese character takes two columns), between characters.
    """
    indent = " " * INDENT
    if _wide(text):
        return _fold_wide(text, width, indent)
    return textwrap.fill(text, width=width, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)


def expect(checker: "Checker", condition, good, bad, width: int = 76) -> bool:
    """``checker.expect`` with the line folded to ``width`` columns in every language."""
    return checker.expect(condition, good, bad, width=width)


def not_a_tensor(got) -> Message:
    """The diagnosis of a result that is not a tensor (None: is the `return` missing?)."""
    if got is None:
        return Message("returned {kind}, not a tensor: is the `return` missing?", kind=type(got).__name__)
    return Message("returned {kind}, not a tensor", kind=type(got).__name__)


_SOLUTIONS = str(Path(__file__).resolve().parent / "solutions") + "/"  # the book's solutions, off limits
_SOLUTION_CHECK = False  # True inside the_books_solution()


@contextlib.contextmanager
def the_books_solution():
    """Check the book's own solution: inside this block, running it is not refused.

    The chapters' solution cells use it to show that the solution passes;
    anywhere else a function that runs ``revformer.exercises.solutions``
    fails its exercise.
    """
    global _SOLUTION_CHECK
    before, _SOLUTION_CHECK = _SOLUTION_CHECK, True
    try:
        yield
    finally:
        _SOLUTION_CHECK = before


class Unfinished(Exception):
    """The reader's function still raises ``NotImplementedError``."""


class Line:
    """One line of a report: its marker (``ok``, ``WRONG``, ``TODO``, ``ERROR``, ``HINT``) and its text.

    The text is a ``Message`` (or a plain str, identifiers only), rendered in
    each language when the report is shown; ``width`` folds it, at 76 columns
    unless a checker asks for another (a line of 88 characters at most, marker
    included).
    """

    def __init__(self, marker: str, text, width: int | None = None):
        width = width or 76
        if marker not in MARKERS:
            raise ValueError(f"a line's marker is one of {', '.join(MARKERS)}, got {marker!r}")
        self.marker, self.text, self.width = marker, text, width

    def render(self, lang: str | None = None) -> str:
        label = tr(MARKERS[self.marker], lang)
        pad = max(1, MARKER_WIDTH - width_of(label))
        prefix, text = "  " + label + " " * pad, render(self.text, lang)
        if self.marker == "HINT":  # a hint folds with its marker; a case's text folds under it
            return fold(prefix + text, self.width)
        return prefix + fold(text, self.width)

    def __str__(self) -> str:
        return self.render("en")

    def __contains__(self, part: str) -> bool:
        return part in str(self)

    def __repr__(self) -> str:
        return f"Line({self.marker!r}, {self.text!r})"


class Checker:
    """Collects the result of each case of one exercise and shows a report in the kernel's language."""

    def __init__(self, title, off_limits=()):
        self.title = title  # a Message, or a str (a checker's name)
        self.lines: list[Line] = []
        self.passed = True
        # the code objects of the package functions that are this exercise's answer
        self.off_limits = {inspect.unwrap(f).__code__: f for f in off_limits}
        self.called: set[str] = set()  # the ones already reported

    def expect(self, condition: bool, good, bad, width: int | None = None) -> bool:
        """Record one case: ``good`` when ``condition`` holds, else the diagnosis ``bad`` (Messages)."""
        condition = bool(condition)
        self.lines.append(Line("ok" if condition else "WRONG", good if condition else bad, width))
        self.passed &= condition
        return condition

    def hint(self, text, width: int | None = None) -> None:
        """Add a ``HINT`` line (a Message) under the last one."""
        self.lines.append(Line("HINT", text, width))

    def call(self, fn, *args, **kwargs):
        """Run the reader's ``fn``; an exception becomes a recorded failure and ``Unfinished``."""
        try:
            return self._watched(fn, *args, **kwargs)
        except NotImplementedError:
            self.passed = False
            self.lines.append(Line("TODO", Message("the function still raises NotImplementedError: fill it in.")))
            raise Unfinished from None
        except Exception as error:  # the reader's bug, reported rather than raised
            self.passed = False
            where = traceback.extract_tb(error.__traceback__)[-1]
            self.lines.append(Line("ERROR", Message("{kind}: {error} (line {line})", kind=type(error).__name__,
                                                    error=str(error), line=where.lineno)))
            raise Unfinished from None

    def _watched(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)``, failing the exercise if it runs an off-limits function.

        A profile function sees every Python call made while ``fn`` runs, so a
        reader's function that wraps the package's answer, or assigns it, is
        caught as surely as one that calls it directly.
        """
        seen = []

        def watch(frame, event, arg):
            if event != "call":
                return
            if frame.f_code in self.off_limits:
                seen.append(self.off_limits[frame.f_code])
            elif not _SOLUTION_CHECK and frame.f_code.co_filename.startswith(_SOLUTIONS):
                seen.append(frame.f_code)

        previous = sys.getprofile()
        sys.setprofile(watch)
        try:
            return fn(*args, **kwargs)
        finally:
            sys.setprofile(previous)
            for function in seen:
                if inspect.iscode(function):  # a solution module's function
                    module = Path(function.co_filename).stem
                    qualname = function.co_qualname.split(".<")[0]  # a comprehension: its function's name
                    name = f"revformer.exercises.solutions.{module}.{qualname}"
                    message = Message("your function runs `{name}`, the book's solution to this "
                                      "exercise: write your own.", name=name)
                elif function.__module__.startswith("revformer"):
                    name = f"{function.__module__}.{function.__qualname__}"
                    message = Message("your function calls `{name}`, the package's own answer to "
                                      "this exercise: write it without it.", name=name)
                else:  # a library's ready-made answer
                    name = f"{function.__module__}.{function.__qualname__}"
                    message = Message("your function calls `{name}`, which builds this exercise's "
                                      "answer for you: write it yourself.", name=name)
                if name not in self.called:
                    self.called.add(name)
                    self.expect(False, None, message)

    def text(self, lang: str | None = None) -> str:
        """The whole report in ``lang``: the title and verdict, then the lines."""
        verdict = (Message("all checks passed") if self.passed
                   else Message("not yet: see the lines marked below"))
        head = tr("{title}: {verdict}", lang, title=render(self.title, lang), verdict=verdict.render(lang))
        return "\n".join([head] + [line.render(lang) for line in self.lines])

    def report(self) -> bool:
        show_text(self.text)
        return self.passed


def run(title, body, off_limits=()) -> bool:
    """Run ``body(checker)``, stop at an unfinished or crashing answer, show the report.

    ``off_limits``: package functions the reader's function must not call.
    """
    checker = Checker(title, off_limits)
    try:
        body(checker)
    except Unfinished:
        pass
    return checker.report()


def run_cases(title, cases, check_case, fn, off_limits=()) -> bool:
    """Run ``check_case(checker, fn, case, seed)`` for each case, stopping at the
    first that fails (later cases would only repeat the diagnosis)."""
    def body(checker):
        for seed, case in enumerate(cases):
            if not check_case(checker, fn, case, seed):
                return

    return run(title, body, off_limits)


class _InEachLanguage(Mapping):
    """A template rendered in each language, read as ``{language: text}``."""

    def __init__(self, template: str):
        self.template = template

    def __getitem__(self, lang: str) -> str:
        if lang not in LANGUAGES:
            raise KeyError(lang)
        return tr(self.template, lang)

    def __iter__(self):
        return iter(LANGUAGES)

    def __len__(self) -> int:
        return len(LANGUAGES)


class Solution(Bilingual):
    """Listings of solution functions, collapsed until the reader opens them (``_repr_markdown_``).

    Markdown, like the listings inside it (``revformer.source``): the fences
    are highlighted by whoever shows them, the book, Colab or Jupyter.
    """

    SUMMARY = _InEachLanguage("Show the solution")

    def __init__(self, listings):
        self.listings = listings

    def markdown(self, language: str) -> str:
        body = "\n".join(listing.markdown(language) for listing in self.listings)
        summary = self.SUMMARY[language]
        return f'<details class="rf-solution">\n<summary>{summary}</summary>\n\n{body}\n</details>\n'

    def __repr__(self) -> str:
        return "\n\n".join(repr(listing) for listing in self.listings)


def show_solution(*functions):
    """The source of solution ``functions`` (from ``revformer.exercises.solutions``), collapsed.

    In the book, in Colab and in Jupyter alike the solution stays hidden
    until the reader clicks "Show the solution" (in the Chinese edition its
    translation from the package's catalogue: ``Solution`` is
    ``revformer.i18n.Bilingual``).
    """
    from ..source import show_source

    if not functions:
        raise ValueError("show_solution needs at least one function")
    return Solution([show_source(f) for f in functions])


def book_solution(chapter: str, names, check, *args) -> None:
    """A chapter's solution cell: the book's solution to its exercise, shown collapsed, then checked.

    ``names`` are the solution's functions in ``revformer.exercises.solutions.chNN`` (one name or
    several); ``check`` is the exercise's checker, called with them and then ``args``, or a tuple of
    checkers, one per function. The check runs inside ``the_books_solution()``: anywhere else a
    checker refuses the book's solution. The student edition's package has no solutions; there the
    cell says so in one line, and the notebook runs on.
    """
    import importlib

    from IPython.display import display

    names = (names,) if isinstance(names, str) else tuple(names)
    try:
        module = importlib.import_module(f"{__name__}.solutions.ch{chapter}")
    except ModuleNotFoundError as error:
        if error.name not in (f"{__name__}.solutions", f"{__name__}.solutions.ch{chapter}"):
            raise
        show_text(lambda lang: tr("This is the student edition of the package: it has no solutions "
                                  "(your teacher has them).", lang))
        return
    functions = [getattr(module, name) for name in names]
    display(show_solution(*functions))
    with the_books_solution():
        if isinstance(check, tuple):
            if len(check) != len(functions):
                raise ValueError(f"one checker per function: {len(functions)} names, {len(check)} checkers")
            passed = all(one(function, *args) for one, function in zip(check, functions))
        else:
            passed = check(*functions, *args)
    if not passed:
        raise AssertionError(f"the book's solution to chapter {chapter}'s exercise fails its checker")
