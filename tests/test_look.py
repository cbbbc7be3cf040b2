"""How the pages look where a reader sees them: the header holds at every width, light and dark, in both editions."""
import pytest

from book_facts import EDITIONS, address

WIDTHS = (1440, 1024, 390)
SCHEMES = ("light", "dark")
HEADER_PAGES = ["book/intro", "book/04_one_head", "book/10_heatmaps", "book/playground", "book/glossary"]
# Each item of the article's header, and the header's own box; what search boxes a reader can see.
MEASURE = """() => {
  const box = e => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, left: r.left,
                                                                   right: r.right}; };
  const header = document.querySelector('.bd-header-article');
  const items = [...header.querySelectorAll('.article-header-buttons > *, .rf-edition')]
    .filter(e => e.offsetParent !== null)
    .map(e => ({name: (e.className || e.tagName).toString().slice(0, 40), ...box(e)}));
  const searches = [...document.querySelectorAll('.search-button-field, form.bd-search')]
    .filter(e => e.offsetParent !== null && e.getBoundingClientRect().width > 0);
  return {header: box(header), items, searches: searches.length, width: window.innerWidth};
}"""


@pytest.mark.book
@pytest.mark.browser
@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("width", WIDTHS)
def test_the_header_holds_its_items(browser, site, edition, width):
    """Every icon and the edition link inside the header's box, scrolled or not; one search box where the sidebar
    shows (the look review: icons half hidden under a top bar, the edition link hanging over the content)."""
    problems = []
    for scheme in SCHEMES:
        context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
        tab = context.new_page()
        for name in HEADER_PAGES:
            tab.goto(f"{site}/{address(name, edition)}.html", wait_until="load")
            for scroll in (0, 2400):
                tab.evaluate(f"window.scrollTo(0, {scroll})")
                tab.wait_for_timeout(100)
                seen = tab.evaluate(MEASURE)
                where = f"{name} ({edition}, {width} px, {scheme}, scrolled {scroll})"
                header = seen["header"]
                if not any(item["name"].startswith("btn rf-edition") for item in seen["items"]):
                    problems.append(f"{where}: no edition link in the header")
                for item in seen["items"]:
                    if (item["top"] < header["top"] - 1 or item["bottom"] > header["bottom"] + 1
                            or item["left"] < -1 or item["right"] > seen["width"] + 1):
                        problems.append(f"{where}: {item['name']!r} at {item['top']:.0f}-{item['bottom']:.0f} px "
                                        f"(x {item['left']:.0f}-{item['right']:.0f}), outside the header "
                                        f"{header['top']:.0f}-{header['bottom']:.0f} px")
                if width >= 960 and seen["searches"] != 1:
                    problems.append(f"{where}: {seen['searches']} search boxes shown, expected one")
        context.close()
    assert not problems, "\n".join(problems[:20])


@pytest.mark.book
@pytest.mark.browser
@pytest.mark.parametrize("edition", EDITIONS)
def test_every_figure_is_sharp_on_a_2x_screen(browser, site, edition):
    """A chapter's figures have at least 1.5 times the pixels they are shown with at 1440 px (the look review:
    100-dpi PNGs, soft on a 2x screen), in both editions; the Chinese figure keeps its own proportions."""
    from book_facts import chapter_files

    context = browser.new_context(viewport={"width": 1440, "height": 900})
    tab = context.new_page()
    soft, seen = [], 0
    for name in chapter_files():
        tab.goto(f"{site}/{address(name, edition)}.html", wait_until="load")
        images = tab.evaluate("""() => [...document.querySelectorAll('.cell_output img')].map(img => ({
            src: img.getAttribute('src'), natural: img.naturalWidth, naturalHeight: img.naturalHeight,
            shown: img.getBoundingClientRect().width, shownHeight: img.getBoundingClientRect().height}))""")
        for image in images:
            if not image["shown"]:
                continue
            seen += 1
            if image["natural"] < 1.5 * image["shown"]:
                soft.append(f"{name}: {image['src']} has {image['natural']} px shown at {image['shown']:.0f}")
            ratio = image["natural"] / image["naturalHeight"], image["shown"] / image["shownHeight"]
            if abs(ratio[0] - ratio[1]) > 0.02 * ratio[0]:
                soft.append(f"{name}: {image['src']} is shown stretched ({ratio[1]:.3f} for {ratio[0]:.3f})")
    context.close()
    assert seen > 20, f"only {seen} figures found"
    assert not soft, "\n".join(soft[:15])
