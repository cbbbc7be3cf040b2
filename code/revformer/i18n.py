"""The book's two editions, English and Simplified Chinese, from one executed source.

A chapter is executed once, in English. A cell that writes a sentence from the
run's numbers writes it in both languages at once::

    say(f"In this build the loss is {loss:.3f}.",
        f"本次构建中，loss 为 {loss:.3f}。")

It displays the sentence in the kernel's language (``language()``: the
variable ``REVFORMER_LANGUAGE``, ``en`` unless a Chinese notebook's setup cell
sets ``zh_CN``) and keeps the other one in the output's metadata, under
``revformer_i18n``. The Chinese edition's build (``tools/translations.py``)
swaps the two, so both editions show the same numbers from the same run.
``show`` and ``Both`` do the same for any two displayable objects (the
quizzes, the explorers); ``Bilingual`` is the base of an object that writes
its Markdown in either language (the source listings, the solutions).
"""
from __future__ import annotations

import os

LANGUAGES = ("en", "zh_CN")
ENV = "REVFORMER_LANGUAGE"
METADATA_KEY = "revformer_i18n"


def language() -> str:
    """The language of this kernel's outputs: ``en`` or ``zh_CN``."""
    chosen = os.environ.get(ENV, "") or "en"
    if chosen not in LANGUAGES:
        raise ValueError(f"{ENV} must be one of {', '.join(LANGUAGES)}, got {chosen!r}")
    return chosen


def _bundle(obj) -> dict:
    """The MIME bundle IPython would display for ``obj`` (a str is Markdown)."""
    if isinstance(obj, str):
        return {"text/markdown": obj, "text/plain": obj}
    from IPython.core.formatters import format_display_data

    data, _ = format_display_data(obj)
    return data


def bundles(en, zh) -> tuple[dict, dict]:
    """The shown bundle and its metadata: the kernel's language shown, both kept."""
    shown, other = (en, zh) if language() == "en" else (zh, en)
    return _bundle(shown), {METADATA_KEY: {"en": _bundle(en), "zh_CN": _bundle(zh)}}


class Both:
    """``en`` and ``zh`` as one displayable object: IPython shows the kernel's language, keeping both.

    Every other attribute (``_repr_html_``, ``answer``, ...) is that of the object in the
    kernel's language, so IPython's other formatters add nothing the bundle lacks.
    """

    def __init__(self, en, zh):
        if not isinstance(en, type(zh)) and not isinstance(zh, type(en)):
            raise ValueError(f"one kind of object is needed in both languages, got {type(en).__name__} "
                             f"and {type(zh).__name__}")
        self.en, self.zh = en, zh

    @property
    def shown(self):
        return self.en if language() == "en" else self.zh

    def _repr_mimebundle_(self, include=None, exclude=None):
        return bundles(self.en, self.zh)

    def __getattr__(self, name):  # only for names Both itself lacks
        if name in ("en", "zh") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.shown, name)

    def __repr__(self) -> str:
        return repr(self.shown)


class Bilingual:
    """A displayable whose Markdown comes in either language: a subclass defines ``markdown(language)``.

    It displays the kernel's language and keeps both (the listings, the solutions).
    """

    def markdown(self, language: str) -> str:
        raise NotImplementedError

    def _repr_markdown_(self) -> str:
        return self.markdown(language())

    def _repr_mimebundle_(self, include=None, exclude=None):
        plain = repr(self)
        both = {lang: {"text/markdown": self.markdown(lang), "text/plain": plain} for lang in LANGUAGES}
        return both[language()], {METADATA_KEY: both}


def show(en, zh) -> None:
    """Display ``en`` or ``zh`` (str: Markdown; else any displayable object), keeping both."""
    from IPython.display import display

    data, metadata = Both(en, zh)._repr_mimebundle_()
    display(data, raw=True, metadata=metadata)


def say(en: str, zh: str) -> None:
    """Display a Markdown sentence written from the run, in English and in Chinese."""
    if not isinstance(en, str) or not isinstance(zh, str):
        raise ValueError(f"say needs two strings (English, Chinese), got {type(en).__name__} "
                         f"and {type(zh).__name__}")
    show(en, zh)
