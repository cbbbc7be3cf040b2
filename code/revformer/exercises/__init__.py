"""Checkers for the chapters' try-it-yourself exercises.

Each checker takes the reader's function, runs it on a few cases against
the package's own implementation, and prints what is right and, for what is
wrong, what the symptom means ("your labels are not shifted: ..."). A checker
never raises on a wrong or unfinished answer, so a chapter that shows the
unfinished exercise still runs top to bottom; it returns True only when
every case passes.

Modules, one exercise topic each, add their checkers on ``Checker``.
"""
from __future__ import annotations

import textwrap
import traceback

from ..i18n import Bilingual


def fold(text: str, width: int = 76) -> str:
    """Fold a long diagnosis so that it reads without scrolling, under its marker."""
    return textwrap.fill(text, width=width, subsequent_indent=" " * 8, break_long_words=False,
                         break_on_hyphens=False)


def expect(checker: "Checker", condition, good: str, bad: str, width: int = 76) -> bool:
    """``checker.expect`` with both texts folded to ``width`` columns."""
    return checker.expect(condition, fold(good, width), fold(bad, width))


class Unfinished(Exception):
    """The reader's function still raises ``NotImplementedError``."""


class Checker:
    """Collects the result of each case of one exercise and prints a report."""

    def __init__(self, title: str):
        self.title = title
        self.lines: list[str] = []
        self.passed = True

    def expect(self, condition: bool, good: str, bad: str) -> bool:
        """Record one case: ``good`` when ``condition`` holds, else the diagnosis ``bad``."""
        condition = bool(condition)
        self.lines.append(("  ok    " if condition else "  WRONG ") + (good if condition else bad))
        self.passed &= condition
        return condition

    def call(self, fn, *args, **kwargs):
        """Run the reader's ``fn``; an exception becomes a recorded failure and ``Unfinished``."""
        try:
            return fn(*args, **kwargs)
        except NotImplementedError:
            self.passed = False
            self.lines.append("  TODO  the function still raises NotImplementedError: fill it in.")
            raise Unfinished from None
        except Exception as error:  # the reader's bug, reported rather than raised
            self.passed = False
            where = traceback.extract_tb(error.__traceback__)[-1]
            self.lines.append(f"  ERROR {type(error).__name__}: {error} (line {where.lineno})")
            raise Unfinished from None

    def report(self) -> bool:
        verdict = "all checks passed" if self.passed else "not yet: see the lines marked below"
        print(f"{self.title}: {verdict}")
        print("\n".join(self.lines))
        return self.passed


def run(title: str, body) -> bool:
    """Run ``body(checker)``, stop at an unfinished or crashing answer, print the report."""
    checker = Checker(title)
    try:
        body(checker)
    except Unfinished:
        pass
    return checker.report()


def run_cases(title: str, cases, check_case, fn) -> bool:
    """Run ``check_case(checker, fn, case, seed)`` for each case, stopping at the
    first that fails (later cases would only repeat the diagnosis)."""
    def body(checker):
        for seed, case in enumerate(cases):
            if not check_case(checker, fn, case, seed):
                return

    return run(title, body)


class Solution(Bilingual):
    """Listings of solution functions, collapsed until the reader opens them (``_repr_markdown_``).

    Markdown, like the listings inside it (``revformer.source``): the fences
    are highlighted by whoever shows them, the book, Colab or Jupyter.
    """

    SUMMARY = {"en": "Show the solution", "zh_CN": "显示参考答案"}

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
    until the reader clicks "Show the solution" (显示参考答案 in the Chinese
    edition: ``Solution`` is ``revformer.i18n.Bilingual``).
    """
    from ..source import show_source

    if not functions:
        raise ValueError("show_solution needs at least one function")
    return Solution([show_source(f) for f in functions])
