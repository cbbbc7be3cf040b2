"""The Chinese edition's catalogues and notebooks (tools/translations.py, CONTRIBUTING.md)."""
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import translations  # noqa: E402


def test_every_prose_cell_block_and_question_is_translated_and_current():
    """One line per untranslated, stale or damaged entry, naming its file and cell."""
    found = translations.problems()
    assert not found, f"{len(found)} entries of the Chinese catalogues need work:\n" + "\n".join(found[:40])


def test_the_chinese_notebooks_are_what_the_catalogues_make():
    """zh_CN/book is committed (Colab opens it from the repository) and derives from the catalogues."""
    found = translations.outdated_notebooks()
    assert not found, "\n".join(found) + "\nrun: make translations"


@pytest.mark.parametrize("source", translations.sources()[:21], ids=lambda p: p.stem)
def test_a_chinese_notebook_shares_every_code_cell_but_its_setup_cell(source):
    english = json.loads(source.read_text(encoding="utf-8"))
    chinese = json.loads((translations.ZH / "book" / source.name).read_text(encoding="utf-8"))
    assert [c["id"] for c in chinese["cells"]] == [c["id"] for c in english["cells"]]
    code = [(e, z) for e, z in zip(english["cells"], chinese["cells"]) if e["cell_type"] == "code"]
    (setup_en, setup_zh), rest = code[0], code[1:]
    assert "".join(setup_zh["source"]) == translations.zh_setup_cell()
    assert 'os.environ["REVFORMER_LANGUAGE"] = "zh_CN"\n' in setup_zh["source"]  # its outputs in Chinese
    for e, z in rest:
        assert z["source"] == e["source"], f"{source.name} {e['id']}: the code differs between the editions"
    assert all(not c.get("outputs") for c in chinese["cells"] if c["cell_type"] == "code")
    assert chinese["metadata"]["revformer"] == {"language": "zh_CN", "translates": f"book/{source.name}"}


def _po(path: Path, entries) -> None:
    """A catalogue with ``entries`` (msgctxt, msgid, msgstr[, flags])."""
    import polib

    po = polib.POFile()
    po.metadata = dict(translations.HEADER)
    for ctxt, msgid, msgstr, *flags in entries:
        po.append(polib.POEntry(msgctxt=ctxt, msgid=msgid, msgstr=msgstr, flags=flags[0] if flags else []))
    translations.write_po(path, po)


def _fake_book(tmp_path, monkeypatch, english_text, translated, code="x = 1", code_entries=()):
    """A one-chapter book with its catalogue, for the checker: ``translated`` is (English, Chinese) of its cell."""
    book, locale = tmp_path / "book", tmp_path / "locale" / "zh_CN"
    book.mkdir()
    nb = {"cells": [{"cell_type": "markdown", "id": "cell-000", "metadata": {}, "source": [english_text]},
                    {"cell_type": "code", "id": "cell-001", "metadata": {}, "source": [code],
                     "outputs": [], "execution_count": None}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (book / "01_task.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    for name in translations.PAGES:
        (book / name).write_text("# A page\n", encoding="utf-8")
    _po(locale / "01_task.po", [("cell-000", *translated), *code_entries])
    for name in translations.PAGES:
        _po(locale / f"{Path(name).stem}.po", [("b000", "# A page", "# 一页")])
    package = tmp_path / "code" / "revformer" / "locale" / "zh_CN" / "LC_MESSAGES" / "revformer.po"
    _po(package, [])
    monkeypatch.setattr(translations, "ROOT", tmp_path)
    monkeypatch.setattr(translations, "BOOK", book)
    monkeypatch.setattr(translations, "LOCALE", locale)
    monkeypatch.setattr(translations, "PACKAGE_CATALOGUE", package)
    monkeypatch.setattr(translations, "QUESTIONS", tmp_path / "questions")
    (tmp_path / "questions").mkdir()


def test_a_changed_english_cell_becomes_fuzzy_and_is_named(tmp_path, monkeypatch):
    _fake_book(tmp_path, monkeypatch, "The loss is `0.3`.", ("The loss was `0.3`.", "loss 是 `0.3`。"))
    stale = ["locale/zh_CN/01_task.po cell-000: stale (fuzzy): 01_task.ipynb changed this cell since it was translated"]
    assert translations.problems() == stale  # named before the catalogue is updated, and after
    translations.update()  # gettext's way: the entry keeps its translation, marked fuzzy, its old English kept
    (entry,) = [e for e in translations.read_po(tmp_path / "locale/zh_CN/01_task.po") if e.msgctxt == "cell-000"]
    assert "fuzzy" in entry.flags and entry.previous_msgid == "The loss was `0.3`."
    assert entry.msgid == "The loss is `0.3`." and entry.msgstr == "loss 是 `0.3`。"
    assert translations.problems() == stale


@pytest.mark.parametrize("zh, problem", [
    ("", "not translated"),
    ("loss 是 0.3。", "code spans"),
    ("loss 是 `0.3`，见[第 2 章](https://example.org/)。", "link targets differ"),
    ("## loss 是 `0.3`。", "headings differ"),
])
def test_the_checker_names_what_a_translation_lost(tmp_path, monkeypatch, zh, problem):
    english = "The loss is `0.3`, see [chapter 2](https://revformer.github.io/x.html)."
    if problem == "headings differ" or problem == "code spans":
        english = "The loss is `0.3`."
    if problem == "code spans":  # a code span the English does not have
        zh = "loss 是 `0.4`。"
    _fake_book(tmp_path, monkeypatch, english, (english, zh))
    (found,) = translations.problems()
    assert found.startswith("locale/zh_CN/01_task.po cell-000: ") and problem in found, found


def test_glossary_roles_and_added_anchors_are_allowed(tmp_path, monkeypatch):
    english = "## Downloads\n\nSee {term}`causal mask`."
    zh = '<a id="downloads"></a>\n\n## 下载\n\n见 {term}`因果 mask <causal mask>`。'
    _fake_book(tmp_path, monkeypatch, english, (english, zh))
    assert translations.problems() == []


def test_a_say_template_must_be_a_literal_and_translated_with_its_fields(tmp_path, monkeypatch):
    code = 'say("The loss is {loss:.3f}." if ok else "No loss.", loss=0.3)'
    _fake_book(tmp_path, monkeypatch, "Text.", ("Text.", "文字。"), code=code)
    assert translations.templates(translations.BOOK / "01_task.ipynb") == {
        "The loss is {loss:.3f}.": ["cell-001"], "No loss.": ["cell-001"]}
    found = translations.problems()
    assert len(found) == 2 and all("no entry (run make translations)" in line for line in found), found
    translations.update()
    assert all("not translated" in line for line in translations.problems())
    po = translations.read_po(tmp_path / "locale/zh_CN/01_task.po")
    for entry in po:
        if entry.msgid == "The loss is {loss:.3f}.":
            assert "python-brace-format" in entry.flags and entry.comment == "code: say() in cell cell-001"
            entry.msgstr = "loss 为 {los:.3f}。"  # a field misspelt
        elif entry.msgid == "No loss.":
            entry.msgstr = "没有 loss。"
    translations.write_po(tmp_path / "locale/zh_CN/01_task.po", po)
    found = translations.problems()
    assert any("fields differ: ['loss'] in English, ['los'] here" in line for line in found), found
    assert any("msgfmt --check" in line and "'los:.3f'" in line for line in found), found  # gettext's own check


def test_an_f_string_template_is_refused_by_name(tmp_path, monkeypatch):
    _fake_book(tmp_path, monkeypatch, "Text.", ("Text.", "文字。"), code='say(f"The loss is {loss}.")')
    with pytest.raises(SystemExit, match="01_task.ipynb cell-001: say's first argument must be a template string"):
        translations.templates(translations.BOOK / "01_task.ipynb")


def test_every_catalogue_passes_msgfmt_check():
    paths = [translations.catalogue_path(s) for s in translations.sources()]
    paths += sorted(translations.PACKAGE_CATALOGUE.parent.glob("*.po"))
    found = [line for path in paths for line in translations.msgfmt_problems(path)]
    assert not found, "\n".join(found)


def test_the_chinese_glossary_is_in_chinese_ordered_by_pinyin():
    from pypinyin import lazy_pinyin

    text, _ = translations.zh_page(translations.BOOK / "glossary.md")
    body = text[text.index(":::{glossary}"):]
    assert ":sorted:" not in body
    heads = [line for line in body.split("\n")[1:] if line and not line.startswith((" ", ":::"))]
    assert len(heads) >= 50
    # syllable by syllable, as a dictionary orders them: a headword that begins another comes first
    keys = [[s.strip().lower() for s in lazy_pinyin(h.split("（")[0]) if re.search(r"\w", s)] for h in heads]
    assert keys == sorted(keys)
    assert heads.index("注意力（attention）") < heads.index("注意力权重（attention weight）")
    chinese = [h for h in heads if translations.HAN.search(h)]
    assert len(chinese) >= 0.7 * len(heads)  # identifiers such as softmax or hook keep their name
    assert "因果 mask（causal mask）" in heads and "注意力权重（attention weight）" in heads
    for term in ("局部图", "残差流", "因果掩码", "掩码"):
        assert term in translations.search_terms(), term
    playground, _ = translations.zh_page(translations.BOOK / "playground.md")
    assert "{term}`因果 mask <因果 mask（causal mask）>`" in playground


def test_outputs_come_from_the_english_run_shown_in_chinese():
    from revformer.i18n import METADATA_KEY

    site = translations._book().named()[1]
    nb = {"metadata": {"revformer": {"translates": "book/x.ipynb"}},
          "cells": [{"cell_type": "code", "id": "c0", "source": ["setup"], "outputs": []},
                    {"cell_type": "code", "id": "c1", "source": ["say(...)"], "outputs": []}]}
    said = {"output_type": "display_data", "data": {"text/markdown": "loss 0.3"},
            "metadata": {METADATA_KEY: {"en": {"text/markdown": "loss 0.3"},
                                        "zh_CN": {"text/markdown": f"loss 为 0.3，见[第 2 章]({site}book/02.html)"}}}}
    printed = {"output_type": "stream", "name": "stdout", "text": "0.3\n"}
    executed = {"cells": [{"cell_type": "code", "id": "c0", "source": ["english setup"], "outputs": []},
                          {"cell_type": "code", "id": "c1", "source": ["say(...)"], "execution_count": 2,
                           "outputs": [printed, said]}]}
    out = translations.zh_outputs(json.loads(json.dumps(nb)), executed)
    (stream, shown) = out["cells"][1]["outputs"]
    assert stream == printed and out["cells"][1]["execution_count"] == 2
    assert shown["data"] == {"text/markdown": f"loss 为 0.3，见[第 2 章]({site}zh_CN/book/02.html)"}
    executed["cells"][1]["source"] = ["changed"]
    with pytest.raises(SystemExit, match="c1: the Chinese notebook's code differs"):
        translations.zh_outputs(json.loads(json.dumps(nb)), executed)


def test_links_point_at_the_chinese_twins():
    repo, site = translations._book().named()
    text = (f"[ch 2]({site}book/02_shifted_labels.html#x) [file]({site}downloads/seeds.csv) "
            f"[colab](https://colab.research.google.com/github/o/r/blob/main/book/02_shifted_labels.ipynb)")
    assert translations.zh_links(text) == (
        f"[ch 2]({site}zh_CN/book/02_shifted_labels.html#x) [file]({site}zh_CN/downloads/seeds.csv) "
        f"[colab](https://colab.research.google.com/github/o/r/blob/main/zh_CN/book/02_shifted_labels.ipynb)")
    assert translations.zh_links(translations.zh_links(text)) == translations.zh_links(text)


def test_a_variant_is_checked_against_the_template_it_varies():
    """A variant ("when: shared=0") names a field its template has, uses no field the template lacks, and
    belongs to a template the code still uses; update() keeps it while the template is used."""
    import polib

    template = "`{a}` and `{b}` share {shared} questions."
    used = {template: ["cell-024"]}

    def entry(context, text, msgid=template):
        return polib.POEntry(msgctxt=context, msgid=msgid, msgstr=text, flags=["no-python-brace-format"])

    assert translations.variant_problems(entry("when: shared=0", "{a}和{b}没有相同的题目。"), used) == []
    assert "lacks" in translations.variant_problems(entry("when: total=0", "{a}和{b}没有相同的题目。"), used)[0]
    assert "lacks" in translations.variant_problems(entry("when: shared=0", "{a}和{c}没有。"), used)[0]
    assert "no code uses" in translations.variant_problems(entry("when: shared=0", "没有。", "gone {shared}"), used)[0]
    assert translations.variant_problems(entry("when: shared", "没有。"), used)  # not field=value
    assert translations.variant_problems(entry("when: shared=0", ""), used) == ["not translated or fuzzy"]
    # the book's variants are all current, and compiled with their context
    compiled = translations.compiled_messages()
    assert any(key.startswith("when: shared=0\x04") for key in compiled)
