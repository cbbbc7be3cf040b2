"""The book's two editions, English and Simplified Chinese, from one executed source.

A chapter's code is written once, in English. A sentence written from the
run's numbers is an English template with named fields::

    say("In this build the loss is {loss:.3f}.", loss=loss)

``say`` looks the template up in the message catalogue of the kernel's
language (``language()``: the variable ``REVFORMER_LANGUAGE``, ``en`` unless
a Chinese notebook's setup cell sets ``zh_CN``), fills in the fields and
displays the sentence. The catalogues are gettext's: the translations live
in ``.po`` files (``locale/zh_CN/`` for the chapters, ``code/revformer/locale``
for the package), compiled into ``revformer/locale/<language>/LC_MESSAGES/
revformer.mo``, which the package ships and the standard library reads.

For the book's build, which executes each chapter once, the output also keeps
the sentence in every other language, in its metadata (``revformer_i18n``); the
Chinese edition's build (``tools/translations.py``) shows those. Figures work
the same way without any change to the plotting code: before a figure is
shown, its texts (titles, axis labels, legends, colour-bar labels, named ticks)
are looked up in the catalogue, exactly or as a template (``clip limit {limit}``
matches ``clip limit 1.0``), and the figure is drawn once more in Chinese.
"""
from __future__ import annotations

import base64
import functools
import gettext
import os
import re
import string
from contextlib import contextmanager
from pathlib import Path

LANGUAGES = ("en", "zh_CN")
ENV = "REVFORMER_LANGUAGE"
METADATA_KEY = "revformer_i18n"
DOMAIN = "revformer"
LOCALEDIR = Path(__file__).resolve().parent / "locale"


def language() -> str:
    """The language of this kernel's outputs: ``en`` or ``zh_CN``."""
    chosen = os.environ.get(ENV, "") or "en"
    if chosen not in LANGUAGES:
        raise ValueError(f"{ENV} must be one of {', '.join(LANGUAGES)}, got {chosen!r}")
    return chosen


def _check_language(lang: str) -> str:
    if lang not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {lang!r}")
    return lang


@functools.lru_cache(maxsize=None)
def catalogue(lang: str) -> gettext.NullTranslations:
    """The compiled catalogue of ``lang`` (English: none, the templates are the English)."""
    if _check_language(lang) == "en":
        return gettext.NullTranslations()
    try:
        return gettext.translation(DOMAIN, LOCALEDIR, languages=[lang])
    except OSError:
        raise ValueError(f"no compiled catalogue for {lang} in {LOCALEDIR} (expected "
                         f"{lang}/LC_MESSAGES/{DOMAIN}.mo: run make translations)") from None


def _fields(template: str) -> set[str]:
    return {name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(template) if name}


def tr(template: str, lang: str | None = None, /, **fields) -> str:
    """``template`` in ``lang`` (the kernel's language by default), its ``{fields}`` filled in."""
    if not isinstance(template, str):
        raise ValueError(f"a template must be a str, got {type(template).__name__}")
    lang = lang or language()
    translated = variant(template, lang, fields)
    if translated is None:
        translated = catalogue(lang).gettext(template)
    # a phrase (Message) or a displayable with Markdown in every language (Bilingual): in this language;
    # so is a field that is English text the catalogue knows (the package's budget line, say)
    # a list of Messages is one line each (the rows of a table)
    fields = {k: v.render(lang) if isinstance(v, (Message, Series)) else v.markdown(lang) if isinstance(v, Bilingual)
              else "\n".join(x.render(lang) for x in v) if _messages(v) else _shape(v) if _is_shape(v)
              else _yes_no(v, lang) for k, v in fields.items()}
    try:
        return translated.format(**fields)
    except (KeyError, IndexError) as error:
        raise ValueError(f"the template {template!r} names the field {error}, which was not given "
                         f"(given: {', '.join(sorted(fields)) or 'none'})") from None


WHEN = "when: "


def conditions(context: str) -> dict[str, str]:
    """The field values a variant's ``msgctxt`` names: ``when: shared=0, total=6`` -> {shared: 0, total: 6}."""
    if not context.startswith(WHEN):
        raise ValueError(f"a variant's context starts with {WHEN!r}, got {context!r}")
    found = {}
    for part in context[len(WHEN):].split(","):
        name, equals, value = part.strip().partition("=")
        if not equals or not name.strip().isidentifier() or not value.strip():
            raise ValueError(f"a variant's condition is field=value, got {part.strip()!r} in {context!r}")
        found[name.strip()] = value.strip()
    return found


def _holds(value, wanted: str) -> bool:
    if str(value) == wanted:
        return True
    try:
        return type(value).__name__ not in ("bool", "bool_") and float(value) == float(wanted)
    except (TypeError, ValueError):
        return False


@functools.lru_cache(maxsize=None)
def _variants(lang: str) -> dict[str, list[tuple[dict, str]]]:
    """The catalogue's variants by template, the most specific (most conditions) first."""
    found: dict[str, list[tuple[dict, str]]] = {}
    for key, text in getattr(catalogue(lang), "_catalog", {}).items():
        if isinstance(key, str) and key.startswith(WHEN) and "\x04" in key and text:
            context, _, template = key.partition("\x04")
            found.setdefault(template, []).append((conditions(context), text))
    for choices in found.values():
        choices.sort(key=lambda choice: -len(choice[0]))
    return found


def variant(template: str, lang: str, fields: dict) -> str | None:
    """The translation of ``template`` for these field values, where the catalogue has one.

    A language says some cases its own way: "训练集和验证集没有相同的题目" where the English template's
    ``{shared}`` is 0, not "共有 0 道". The translator writes such a case as an entry of the template with
    the context ``when: shared=0`` (several conditions: ``when: weight=6, write=6``); a condition holds
    when the field's value is that number (0, 1 for a share of 100%) or that text.
    """
    for wanted, text in _variants(lang).get(template, ()):
        if all(name in fields and _holds(fields[name], value) for name, value in wanted.items()):
            return text
    return None


def unfilled(template: str, lang: str | None = None, /) -> str:
    """``template`` in ``lang`` with its ``{fields}`` left for a script to fill (the playground's, a quiz's)."""
    return tr(template, lang, **{name: "{" + name + "}" for name in _fields(template)})


def _is_shape(value) -> bool:
    """A tensor's or an array's shape: a ``torch.Size``, or a tuple of ints (NumPy's)."""
    return isinstance(value, tuple) and all(type(n) is int for n in value)  # torch.Size is a tuple


def _shape(value) -> str:
    """A shape in the book's one notation, ``[15,64]`` (as ``[B,T,D]``), not Python's ``(15, 64)``."""
    return "[" + ",".join(map(str, value)) + "]"


def _messages(value) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(x, Message) for x in value)


_CELL_BOOL = re.compile(r"(?<=\| )(True|False)(?= \|)")


def _yes_no(value, lang: str):
    """A bool as the language says yes or no (True/False in English), and so a table cell holding only one;
    any other value as ``_known`` gives it."""
    if lang == "en":
        return value
    if type(value).__name__ in ("bool", "bool_"):  # numpy's too
        return catalogue(lang).gettext(str(bool(value)))
    if isinstance(value, str) and "|" in value:
        value = _CELL_BOOL.sub(lambda m: catalogue(lang).gettext(m.group(1)), value)
    return _known(value, lang)


def _known(value, lang: str):
    """``value`` in ``lang`` when it is English text with a catalogue entry (exact or a template's); else itself."""
    if lang == "en" or type(value) is not str or not needs_translation(value):
        return value
    found = translate(value, lang)
    return value if found is None else found


def _bundle(obj) -> dict:
    """The MIME bundle IPython would display for ``obj`` (a str is Markdown)."""
    if isinstance(obj, str):
        return {"text/markdown": obj, "text/plain": obj}
    from IPython.core.formatters import format_display_data

    data, _ = format_display_data(obj)
    return data


def bundles(en, zh) -> tuple[dict, dict]:
    """The shown bundle and its metadata: the kernel's language shown, both kept."""
    shown = en if language() == "en" else zh
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


def in_languages(make, language: str | None = None):
    """``make(language)`` for one language; for ``None`` every language as one ``Both`` (the kernel's shown).

    The one check of a displayable's ``language`` argument (the playground, the landing page's buttons and map).
    """
    if language not in (None, *LANGUAGES):
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)} (or None for both), got {language!r}")
    return make(language) if language else Both(make("en"), make("zh_CN"))


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


class Message:
    """A template and its fields, rendered later in any language (a checker's report line, a label)."""

    def __init__(self, template: str, /, **fields):
        tr(template, "en", **fields)  # a missing field is an error here, not later
        self.template, self.fields = template, fields

    def render(self, lang: str | None = None) -> str:
        return tr(self.template, lang, **self.fields)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"Message({self.template!r})"


class Series:
    """Items listed in a sentence: ``11, 12`` in English, ``11、12`` in Chinese (a field of ``say`` or ``tr``)."""

    SEPARATORS = {"en": ", ", "zh_CN": "、"}

    def __init__(self, items):
        self.items = list(items)  # str, numbers or Messages (each rendered in the sentence's language)

    def render(self, lang: str | None = None) -> str:
        lang = _check_language(lang or language())
        return self.SEPARATORS[lang].join(render(item, lang) for item in self.items)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"Series({self.items!r})"


class Text(Bilingual):
    """A ``Message`` displayed as Markdown in the kernel's language, every language kept (``say`` shows one)."""

    def __init__(self, template: str, fields: dict):
        self.message = Message(template, **fields)

    def markdown(self, language: str) -> str:
        return self.message.render(language)

    def __repr__(self) -> str:
        return self.message.render()


def _display(every: dict) -> None:
    """Display the bundle of the kernel's language, keeping ``every`` language's; outside IPython, print it."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency of every runtime the book runs in
        get_ipython = lambda: None  # noqa: E731
    if get_ipython() is None:
        print(every[language()]["text/plain"])
        return
    from IPython.display import display

    display(every[language()], raw=True, metadata={METADATA_KEY: every})


def render(text, lang: str | None = None) -> str:
    """``text`` in ``lang``: a ``Message`` rendered, a plain str as it is."""
    return text.render(lang) if isinstance(text, Message) else str(text)


def show_text(make) -> None:
    """Display plain text written by ``make(language)`` in the kernel's language, keeping every language.

    Outside IPython it is printed. The checkers' reports use it: a report is preformatted text.
    """
    _display({lang: {"text/plain": make(lang)} for lang in LANGUAGES})


def show(en, zh) -> None:
    """Display ``en`` or ``zh`` (str: Markdown; else any displayable object), keeping both."""
    from IPython.display import display

    data, metadata = Both(en, zh)._repr_mimebundle_()
    display(data, raw=True, metadata=metadata)


@contextmanager
def refused(call: str):
    """``with refused("generate"): generate(model, full)``: the block must raise ``ValueError``.

    Its message is said as one sentence in the reader's language (the package's messages are
    templates of its catalogue); a block that runs through is an ``AssertionError``.
    """
    try:
        yield
    except ValueError as error:
        say("`{call}` raises `ValueError`: {error}.", call=call, error=str(error))
    else:
        raise AssertionError(f"{call} should have raised ValueError")


def say(template: str, /, **fields) -> None:
    """Display a Markdown sentence written from the run: an English template and its fields.

    Outside IPython (a script, a test) the sentence is printed in the kernel's language.
    """
    if not isinstance(template, str):
        raise ValueError(f"say needs a template string and its fields, got {type(template).__name__}")
    text = Text(template, fields)
    _display({lang: dict.fromkeys(("text/markdown", "text/plain"), text.markdown(lang)) for lang in LANGUAGES})


# ---------------------------------------------------------------------------------------------
# Figures: their texts looked up in the catalogue, the figure drawn in each language.

CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Micro Hei", "WenQuanYi Zen Hei",
             "Noto Sans CJK JP")
_LETTERS = re.compile(r"[A-Za-z]{2,}")
# What a figure may keep in Latin letters in any edition: identifiers (four_heads, L0, H3), tokens (<EOS>).
_KEPT = re.compile(r"<[A-Z]+>|\b\w*(?:_|\d)\w*\b")


# The terms the Chinese edition keeps in Latin letters, as its prose and glossary do ("本书用语").
KEPT_TERMS = re.compile(r"\b(?:tokens?|ID|ids?|loss|batch(?:es)?|mask|query|queries|key|keys|value|heads?|logits?|"
                        r"softmax|embeddings?|LayerNorm|GELU|FFN|Adam|hooks?|lr|KV|cache|Pre-LN|Post-LN|"
                        r"decoder-only|CPU|GPU|Colab|Binder|PyTorch|True|False|None|NaN|inf|margin|logit lens|"
                        r"ignore_index|std|max|min|exp|log|ln|sqrt|argmax|mean|dim|eps)\b")


def needs_translation(text: str) -> bool:
    """Whether a text has words to translate: not only numbers, identifiers, tokens and the kept terms."""
    return bool(_LETTERS.search(KEPT_TERMS.sub(" ", _KEPT.sub(" ", text))))


@functools.lru_cache(maxsize=None)
def _templates(lang: str) -> list[tuple[re.Pattern, str]]:
    """The catalogue's templates with fields, as patterns that match a rendered text."""
    found = []
    for msgid, msgstr in getattr(catalogue(lang), "_catalog", {}).items():
        if not isinstance(msgid, str) or "{" not in msgid or "\x04" in msgid or not msgstr:
            continue
        pattern, names = "", []
        for literal, name, _, _ in string.Formatter().parse(msgid):
            pattern += re.escape(literal)
            if name is not None:
                key = f"f{len(names)}"
                names.append(name)
                pattern += f"(?P<{key}>.+?)"
        # the zh template with each field by position: its format specs drop (the text is already formatted)
        zh = msgstr
        for i, name in enumerate(names):
            zh = re.sub(r"\{" + re.escape(name) + r"(?:![rsa])?(?::[^{}]*)?\}", "{f%d}" % i, zh)
        literal = sum(len(text) for text, _, _, _ in string.Formatter().parse(msgid))
        found.append((literal, re.compile(pattern + r"\Z", re.S), zh))
    # the most specific first: "layer {layer}, head {head}: mask on" before "layer {layer}, head {head}"
    found.sort(key=lambda item: -item[0])
    return [(pattern, zh) for _, pattern, zh in found]


def translate(text: str, lang: str) -> str | None:
    """A figure's ``text`` in ``lang``: by its catalogue entry, a template's, or line by line; None if none."""
    if lang == "en" or not text.strip():
        return text
    table = catalogue(lang)
    exact = getattr(table, "_catalog", {}).get(text)
    if exact:
        return exact
    for pattern, template in _templates(lang):
        match = pattern.match(text)
        # a field holds a number, a name or a token, never words to translate ("head {head}" does not
        # match "head 0 of layer 1, ablated")
        if match and not any(needs_translation(value) for value in match.groupdict().values()):
            return template.format(**match.groupdict())
    if "\n" in text:
        lines = [translate(line, lang) for line in text.split("\n")]
        if all(line is not None for line in lines):
            return "\n".join(lines)
    return None if needs_translation(text) else text


class _NamedTicks:
    """The tick labels of an axis given as a fixed list of names (``set_xticks(positions, labels)``)."""

    def __init__(self, axis, formatter):
        self.axis, self.formatter = axis, formatter

    @property
    def labels(self) -> list[str]:
        if hasattr(self.formatter, "seq"):  # FixedFormatter
            return [str(s) for s in self.formatter.seq]
        return [str(s) for s in self.formatter.func.args[0].values()]  # FuncFormatter over {position: label}

    @labels.setter
    def labels(self, new: list[str]) -> None:
        if hasattr(self.formatter, "seq"):
            self.formatter.seq = list(new)
        else:
            table = self.formatter.func.args[0]
            for key, text in zip(list(table), new):
                table[key] = text


def _fixed_formatters(fig):
    import functools as _functools

    from matplotlib.ticker import FixedFormatter, FuncFormatter

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            formatter = axis.get_major_formatter()
            func = getattr(formatter, "func", None)
            if isinstance(formatter, FixedFormatter) or (
                    isinstance(formatter, FuncFormatter) and isinstance(func, _functools.partial)
                    and getattr(func.func, "__name__", "") == "_format_with_dict" and func.args
                    and isinstance(func.args[0], dict)):
                yield axis, _NamedTicks(axis, formatter)


def _texts(fig):
    """The figure's own texts: titles, labels, legends, annotations (tick labels come from formatters)."""
    from matplotlib.text import Text as TextArtist

    ticks = {id(t) for ax in fig.axes for tick in ax.xaxis.get_major_ticks() + ax.yaxis.get_major_ticks()
             + ax.xaxis.get_minor_ticks() + ax.yaxis.get_minor_ticks() for t in (tick.label1, tick.label2)}
    return [t for t in fig.findobj(TextArtist) if id(t) not in ticks and t.get_text()]


def figure_texts(fig) -> list[str]:
    """Every text of ``fig`` that a reader reads, in order (tick labels named by a fixed list included)."""
    found = [t.get_text() for t in _texts(fig)]
    for _axis, ticks in _fixed_formatters(fig):
        found += ticks.labels
    return found


@functools.lru_cache(maxsize=None)
def cjk_font() -> str | None:
    """The name of an installed font that has Chinese characters, or None.

    A font installed after matplotlib cached its list of fonts is found too (and added to it).
    """
    from matplotlib import font_manager

    names = {f.name for f in font_manager.fontManager.ttflist}
    found = next((name for name in CJK_FONTS if name in names), None)
    if found is None:
        for path in font_manager.findSystemFonts():
            if re.search(r"CJK|wqy|SourceHanSans|NotoSansSC", Path(path).name, re.I):
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError):
                    continue
        names = {f.name for f in font_manager.fontManager.ttflist}
        found = next((name for name in CJK_FONTS if name in names), None)
    return found


class _Translated:
    """``fig`` with its texts in ``lang`` while inside; ``restore=False`` keeps them (the kernel's language)."""

    def __init__(self, fig, lang: str, restore: bool = True):
        self.fig, self.lang, self.restore = fig, lang, restore
        self.untranslated: list[str] = []

    def _font(self, artist):
        """Give ``artist`` a font with Chinese characters after its own (matplotlib falls back glyph by glyph);
        before it where the text holds a full-width ？ or ！, which DejaVu Sans draws half-width."""
        font = cjk_font()
        family = list(artist.get_fontfamily())
        if font and font not in family:
            self.saved.append((artist.set_fontfamily, family))
            wide = re.search("[\uff01\uff1f]", artist.get_text() or "")
            artist.set_fontfamily([font] + family if wide else family + [font])

    def __enter__(self):
        self.saved = []
        for artist in _texts(self.fig):
            old = artist.get_text()
            new = translate(old, self.lang)
            if new is None:
                self.untranslated.append(old)
            elif new != old:
                self.saved.append((artist.set_text, old))
                artist.set_text(new)
                self._font(artist)
        for axis, ticks in _fixed_formatters(self.fig):
            old = ticks.labels
            new = [translate(s, self.lang) for s in old]
            self.untranslated += [s for s, n in zip(old, new) if n is None]
            if any(n is not None and n != s for s, n in zip(old, new)):
                self.saved.append((lambda labels, t=ticks: setattr(t, "labels", labels), old))
                ticks.labels = [n if n is not None else s for s, n in zip(old, new)]
                for tick in axis.get_major_ticks():
                    self._font(tick.label1)
                    self._font(tick.label2)
        return self

    def __exit__(self, *exc):
        if self.restore:
            for setter, old in reversed(self.saved):
                setter(old)
        return False


_warned_font = False


def figure_bundle(fig):
    """IPython's mime-bundle formatter for a figure: the figure in the kernel's language, the others kept.

    In an English kernel (the book's build) the figure is drawn once more with its texts in
    every other language, into the output's metadata. In a Chinese kernel (a Chinese
    notebook in Colab) its texts are put in Chinese before IPython draws it; without a
    font that has Chinese characters they stay English, and one line says so.
    """
    global _warned_font
    shown = language()
    metadata = {}
    if shown != "en":
        if cjk_font() is None:
            if not _warned_font:
                _warned_font = True
                print(tr("This runtime has no font with Chinese characters: the figures keep their English text.",
                         shown))
            return {}, {}
        with _Translated(fig, shown, restore=False) as done:
            pass
        if done.untranslated:
            metadata = {METADATA_KEY: {"untranslated": done.untranslated}}
        return {}, metadata
    from IPython.core.pylabtools import retina_figure

    others, sizes, untranslated = {}, {}, []
    for lang in LANGUAGES[1:]:
        if cjk_font() is None:
            if not os.environ.get("REVFORMER_STATIC_BUILD"):
                return {}, {}  # a reader's English notebook: nobody needs the other languages
            raise RuntimeError("the book's build draws its figures in Chinese too and needs a font with Chinese "
                               "characters (sudo apt-get install -y fonts-noto-cjk)")
        with _Translated(fig, lang) as done:
            if done.saved:  # at twice the pixels, as the build's kernels show figures (STARTUP)
                image, sizes[lang] = retina_figure(fig, bbox_inches="tight")
                others[lang] = {"image/png": base64.b64encode(image).decode("ascii")}
        untranslated += done.untranslated
    # kept even when nothing changed: the build's tests read which texts each figure had
    kept = {**others, "sizes": sizes, "untranslated": untranslated, "texts": figure_texts(fig),
            "smallest_text_px": smallest_text_px(fig)}
    if os.environ.get("REVFORMER_STATIC_BUILD"):  # the site's dark mode shows these (book/_ext)
        kept["dark"] = dark_variants(fig, [lang for lang in LANGUAGES if lang == "en" or lang in others])
    return {}, {METADATA_KEY: kept}


def smallest_text_px(fig) -> float | None:
    """The height in pixels, at the figure's own dpi (1x), of its smallest visible text (ticks included):
    the site's tests scale it by the width the figure is shown at."""
    from matplotlib.text import Text as TextArtist

    sizes = [t.get_fontsize() for t in fig.findobj(TextArtist) if t.get_visible() and t.get_text().strip()
             and (t.axes is None or t.axes.get_visible())]
    return round(min(sizes) * fig.dpi / 72, 2) if sizes else None


def dark_variants(fig, languages) -> dict[str, str]:
    """``fig`` drawn for a dark page (``plots.dark_chrome``) in each of ``languages``: base64 PNGs at 2x."""
    from contextlib import nullcontext

    from IPython.core.pylabtools import retina_figure

    from .plots import dark_chrome

    drawn = {}
    for lang in languages:
        with nullcontext() if lang == "en" else _Translated(fig, lang), dark_chrome(fig):
            image, _size = retina_figure(fig, bbox_inches="tight")
        drawn[lang] = base64.b64encode(image).decode("ascii")
    return drawn


STARTUP = """# Written by revformer.i18n.startup_folder: the book's build draws every figure in every language.
import revformer.i18n
revformer.i18n.watch_figures()
"""
# and at twice the pixels: sharp on a 2x screen, shown at the figure's own size (figure_bundle's other
# languages likewise)
KERNEL_CONFIG = """# Written by revformer.i18n.startup_folder: the book's figures at twice the pixels.
c.InlineBackend.figure_formats = {"retina"}
"""


def startup_folder(ipython_dir) -> Path:
    """An IPython folder (``IPYTHONDIR``) for the build's kernels: ``watch_figures`` at start, figures at 2x.

    The chapters' own code stays plain: ``plt.show()`` is all a figure needs.
    """
    startup = Path(ipython_dir) / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-revformer-figures.py").write_text(STARTUP, encoding="utf-8")
    (startup.parent / "ipython_kernel_config.py").write_text(KERNEL_CONFIG, encoding="utf-8")
    return Path(ipython_dir)


def watch_figures() -> bool:
    """Register ``figure_bundle`` with this IPython kernel (once); False outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    shell.display_formatter.mimebundle_formatter.for_type_by_name("matplotlib.figure", "Figure", figure_bundle)
    return True
