"""The two editions in headless Chromium: the switch keeps the reader's place, Chinese search finds the book's terms."""
import re

import pytest

from book_facts import HTML, toc_files

pytestmark = [pytest.mark.book, pytest.mark.browser]


def _sections(html: str) -> list[str]:
    """The page's own id, then every section's, then every glossary term's (the glossary has no sections)."""
    return re.findall(r'<section[^>]* id="([^"]+)"', html) + re.findall(r'<dt[^>]* id="(term-[^"]+)"', html)


@pytest.mark.parametrize("name", toc_files())
def test_the_edition_switch_keeps_the_section(browser, site, name):
    """Both editions give every section the same anchor; the link to the other edition carries it across."""
    english = (HTML / f"{name}.html").read_text(encoding="utf-8")
    chinese = (HTML / "zh_CN" / f"{name}.html").read_text(encoding="utf-8")
    sections = _sections(english)[1:]  # the first is the page itself
    assert sections, f"{name}: no section to go to"
    assert all(f'id="{anchor}"' in chinese for anchor in sections), \
        f"{name}: sections of the English page missing from the Chinese one: " \
        f"{[a for a in sections if f'id={chr(34)}{a}{chr(34)}' not in chinese][:5]}"
    anchor = sections[len(sections) // 2]
    context = browser.new_context()
    tab = context.new_page()
    try:
        for start, other in ((f"{name}.html", f"zh_CN/{name}.html"), (f"zh_CN/{name}.html", f"{name}.html")):
            tab.goto(f"{site}/{start}#{anchor}", wait_until="load")
            tab.locator("a.rf-edition").first.click()
            tab.wait_for_load_state("load")
            assert tab.url == f"{site}/{other}#{anchor}", tab.url
            assert tab.evaluate("id => !!document.getElementById(id)", anchor)
        # scrolled there without an anchor in the address: the section read last is carried
        tab.goto(f"{site}/{name}.html", wait_until="load")
        tab.evaluate("id => document.getElementById(id).scrollIntoView()", anchor)
        tab.wait_for_timeout(100)
        tab.locator("a.rf-edition").first.click()
        tab.wait_for_load_state("load")
        assert "#" in tab.url and tab.url.split("#")[1] in sections + [s for s in _sections(chinese)], tab.url
    finally:
        context.close()


@pytest.mark.parametrize("word", ["局部图", "残差流", "掩码", "因果掩码", "教师强制", "反对角线", "注意力权重"])
def test_chinese_search_finds_the_books_terms(browser, site, word):
    context = browser.new_context()
    tab = context.new_page()
    try:
        tab.goto(f"{site}/zh_CN/search.html?q={word}", wait_until="load")
        results = tab.locator("#search-results ul.search li")
        results.first.wait_for(timeout=20000)
        assert results.count() >= 1
        texts = " ".join(results.all_text_contents())
        assert "say(" not in texts and "msgid" not in texts, texts[:300]  # prose, never a template's source
        hrefs = [a.get_attribute("href") or "" for a in tab.locator("#search-results ul.search li a").all()]
        assert hrefs and not any(h.startswith("http") for h in hrefs), hrefs  # the Chinese site, not the English
    finally:
        context.close()
