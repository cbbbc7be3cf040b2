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


DARK = "localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark');"  # the theme's own switch


@pytest.mark.book
@pytest.mark.browser
@pytest.mark.parametrize("edition", EDITIONS)
def test_no_figure_is_a_white_slab_in_dark_mode(browser, site, edition):
    """In dark mode every figure shows its dark twin (revformer.plots.dark_chrome): measured on the screen, its
    background is dark (the look review: every figure a white slab in dark mode; the theme also backs output
    images with its light text colour there)."""
    import io

    from PIL import Image

    from book_facts import chapter_files

    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.add_init_script(DARK)
    tab = context.new_page()
    slabs, seen = [], 0
    for name in chapter_files():
        tab.goto(f"{site}/{address(name, edition)}.html", wait_until="load")
        assert tab.evaluate("document.documentElement.dataset.theme") == "dark"
        for image in tab.query_selector_all(".cell_output img"):
            if not image.is_visible():
                continue
            seen += 1
            src = image.get_attribute("src")
            if "only-dark" not in (image.get_attribute("class") or ""):
                slabs.append(f"{name}: {src} has no dark twin")
                continue
            image.scroll_into_view_if_needed()
            shot = Image.open(io.BytesIO(image.screenshot())).convert("L")
            # the frame of the figure is its background (a colour map may well be light inside): dark, as the
            # page is; a white slab, or the theme's light backing of output images, is light there
            width, height = shot.size
            frame = sorted([shot.getpixel((x, y)) for x in range(width) for y in (1, height - 2)]
                           + [shot.getpixel((x, y)) for y in range(height) for x in (1, width - 2)])
            if frame[len(frame) // 2] > 90:
                slabs.append(f"{name}: {src} has a light background in dark mode "
                             f"(median {frame[len(frame) // 2]} of 255 around its edge)")
            # inside, no colour map white at zero (RdBu, Reds) filling the figure: figures 4.1, 4.2, 18.1 and
            # 18.3 were mostly white in dark mode (the second look review)
            counts = shot.histogram()  # 256 bins of grey levels
            light = sum(counts[216:]) / sum(counts)
            if light > 0.3:
                slabs.append(f"{name}: {src} is {light:.0%} near-white inside in dark mode")
    context.close()
    assert seen > 20, f"only {seen} figures found"
    assert not slabs, "\n".join(slabs[:15])


def _figure_facts(edition: str) -> dict[str, dict]:
    """What the build's kernels recorded about each figure (revformer.i18n.figure_bundle), by the SHA-256 of
    the image a page of this edition shows (myst-nb's file name)."""
    import base64
    import hashlib
    import json

    from book_facts import ROOT

    from book_facts import book_tool

    folder = ROOT / "_build" / ("jupyter_execute" if edition == "en" else f"{edition}/_build/jupyter_execute")
    facts = {}
    for notebook in folder.rglob("*.ipynb"):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        if edition == "en" and not any(c.get("outputs") for c in cells):  # read again from the Jupyter cache
            source = ROOT / notebook.relative_to(folder)
            cells = book_tool._translations().executed(ROOT / "_build", source)["cells"]
        for cell in cells:
            for output in cell.get("outputs", []):
                shown = output.get("data", {}).get("image/png")
                recorded = output.get("metadata", {}).get("revformer_i18n")
                if shown and recorded:
                    shown = "".join(shown) if isinstance(shown, list) else shown
                    facts[hashlib.sha256(base64.b64decode(shown)).hexdigest()] = recorded
    return facts


@pytest.mark.book
@pytest.mark.browser
@pytest.mark.parametrize("edition", EDITIONS)
def test_every_figure_text_is_at_least_11_px_at_1440(browser, site, edition):
    """The smallest text of every figure, as displayed at 1440 px: its height at the figure's dpi, scaled by
    the width the figure is shown at (the look review: labels about 5 px tall in chapter 10's heatmaps)."""
    import re

    from book_facts import chapter_files

    facts = _figure_facts(edition)
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    tab = context.new_page()
    small, seen = [], 0
    for name in chapter_files():
        tab.goto(f"{site}/{address(name, edition)}.html", wait_until="load")
        images = tab.evaluate("""() => [...document.querySelectorAll('.cell_output img')].map(img => ({
            src: img.getAttribute('src'), natural: img.naturalWidth, shown: img.getBoundingClientRect().width}))""")
        for image in images:
            found = re.search(r"([0-9a-f]{64})\.png$", image["src"])
            if not image["shown"] or not found:
                continue
            seen += 1
            smallest = facts.get(found.group(1), {}).get("smallest_text_px")
            if smallest is None:
                small.append(f"{name}: {image['src']} has no record of its text sizes")
                continue
            displayed = smallest * image["shown"] / (image["natural"] / 2)  # the PNG holds twice the pixels
            if displayed < 11:
                small.append(f"{name}: {image['src'][-20:]}: smallest text {displayed:.1f} px "
                             f"({smallest:.1f} px at 1x, shown at {image['shown'] / (image['natural'] / 2):.2f})")
    context.close()
    assert seen > 20, f"only {seen} figures found"
    assert not small, f"{len(small)} figures:\n" + "\n".join(small)


# Every element of the page that shows past the viewport's edges, unless a scroll container holds it (a code
# box, a wide table, display math) or a parent clips it.
WIDER = """() => {
  const width = document.documentElement.clientWidth, found = [];
  if (document.documentElement.scrollWidth > width + 1) {
    found.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px in ${width}`);
  }
  for (const e of document.querySelectorAll('.bd-header-article *, article.bd-article *')) {
    const r = e.getBoundingClientRect();
    if (!r.width || (r.left >= -1 && r.right <= width + 1)) continue;
    let left = r.left, right = r.right, held = false;
    for (let p = e.parentElement; p; p = p.parentElement) {
      const overflow = getComputedStyle(p).overflowX;
      if (/auto|scroll/.test(overflow)) { held = true; break; }
      if (/hidden|clip/.test(overflow)) {
        const c = p.getBoundingClientRect();
        left = Math.max(left, c.left); right = Math.min(right, c.right);
      }
    }
    if (held || right - left <= 0 || (left >= -1 && right <= width + 1)) continue;
    found.push(`${(e.getAttribute('class') || e.tagName).toString().slice(0, 40)} at x ${Math.round(left)}-` +
               `${Math.round(right)} of ${width} px`);
  }
  return found;
}"""
NARROW_PAGES = ["book/intro", "book/04_one_head", "book/10_heatmaps", "book/18_which_heads", "book/playground",
                "book/glossary"]


@pytest.mark.book
@pytest.mark.browser
@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("width", (320, 390))
def test_nothing_is_wider_than_a_phone(browser, site, edition, width):
    """On a phone nothing shows past the screen's edge outside a scroll container: the header, the prose, the
    figures, the maps of the landing page (the look review: a 320-px header that overflowed, clipped display math)."""
    problems = []
    context = browser.new_context(viewport={"width": width, "height": 844})
    tab = context.new_page()
    for name in NARROW_PAGES:
        tab.goto(f"{site}/{address(name, edition)}.html", wait_until="load")
        tab.wait_for_timeout(200)
        problems += [f"{name} ({edition}, {width} px): {p}" for p in tab.evaluate(WIDER)[:5]]
    context.close()
    assert not problems, "\n".join(problems[:20])


@pytest.mark.book
@pytest.mark.browser
@pytest.mark.parametrize("edition", EDITIONS)
def test_the_landing_page_shows_the_way_in_and_the_parts(browser, site, edition):
    """The three ways in on the first screen, above the live model; under it six cards, one a part, each with its
    picture, each opening a page the site has; on a phone a card is at most a third of the screen tall."""
    for width in (1440, 390):
        context = browser.new_context(viewport={"width": width, "height": 844})
        tab = context.new_page()
        tab.goto(f"{site}/{address('book/intro', edition)}.html", wait_until="load")
        seen = tab.evaluate("""() => ({
          buttons: [...document.querySelectorAll('.rfl-button')].map(a => [a.href, a.getBoundingClientRect().height]),
          cards: [...document.querySelectorAll('.rfl-card')].map(a => ({href: a.href,
            height: a.getBoundingClientRect().height, picture: a.querySelector('svg.rfl-pic') !== null})),
          model: document.querySelector('.rf-playground').getBoundingClientRect().top,
          map: document.querySelector('.rfl-map').getBoundingClientRect().top,
          ways: document.querySelector('.rfl-buttons').getBoundingClientRect().bottom})""")
        where = f"{edition}, {width} px"
        assert len(seen["buttons"]) == 3 and all(h >= 44 for _, h in seen["buttons"]), where
        assert "colab.research.google.com" in seen["buttons"][2][0], where
        assert len(seen["cards"]) == 6 and all(c["picture"] for c in seen["cards"]), where
        assert seen["model"] < seen["map"], f"{where}: the map comes before the live model"
        assert seen["ways"] < seen["model"], f"{where}: the ways in come after the live model"
        if width > 1000:
            assert seen["ways"] <= 800, f"{where}: the ways in end at {seen['ways']:.0f} px, below the first screen"
        if width < 500:
            assert all(c["height"] <= 844 / 3 for c in seen["cards"]), f"{where}: {seen['cards']}"
        for href, _ in seen["buttons"][:2]:
            assert tab.request.get(href).ok, f"{where}: {href}"
        for card in seen["cards"]:
            assert tab.request.get(card["href"]).ok, f"{where}: {card['href']}"
        context.close()


@pytest.mark.book
@pytest.mark.browser
@pytest.mark.parametrize("edition", EDITIONS)
def test_the_graded_chapters_show_their_key_picture_in_the_first_screens(browser, site, edition):
    """The look review: chapter 4's first figure was 4,369 px down, chapter 10's 2,886 and chapter 18's answer
    (its figure 18.1) 6,339. At 1440 px the first figure or explorer of each starts within 2,100 px (two and a
    bit screens): chapter 4 opens on an explorer of the head it computes, chapter 10 on the whole grid, chapter
    18 on what taking a head out costs."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    tab = context.new_page()
    found = {}
    for name in ("book/04_one_head", "book/10_heatmaps", "book/18_which_heads"):
        tab.goto(f"{site}/{address(name, edition)}.html", wait_until="load")
        found[name] = tab.evaluate("""() => {
          const shown = [...document.querySelectorAll('article .cell_output img, article .rf-playground')]
            .filter(e => e.getBoundingClientRect().height > 150);
          return shown.length ? Math.round(shown[0].getBoundingClientRect().top + window.scrollY) : -1;
        }""")
    context.close()
    late = {name: top for name, top in found.items() if not 0 <= top <= 2100}
    assert not late, f"{edition}: first figure or explorer at {late} px"


@pytest.mark.book
@pytest.mark.browser
@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("width", (1440, 390))
def test_a_figure_opens_at_full_size(browser, site, edition, width):
    """A tap on a figure opens it over the page at its full size, where its labels are as large as they are drawn
    (on a phone the column shrinks chapter 10's eight-panel figure to 5-px labels: the look review); the caption
    says so where it is needed, and Escape closes it and gives the focus back."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    tab = context.new_page()
    try:
        tab.goto(f"{site}/{address('book/10_heatmaps', edition)}.html", wait_until="load")
        link = tab.locator(".cell_output figure a.rf-zoomable:visible").first
        shown = link.locator("img").bounding_box()["width"]
        hint = tab.locator(".cell_output figure .rf-zoom-hint").first
        assert hint.is_visible() == (width < 768)
        link.click()
        dialog = tab.locator(".rf-zoom[role=dialog]")
        dialog.wait_for(timeout=5000)
        big = dialog.locator("img").evaluate("img => ({width: img.getBoundingClientRect().width,"
                                             " natural: img.naturalWidth})")
        # at least its drawn size (half its 2x pixels), wider where the screen allows, never past its pixels
        assert big["natural"] / 2 - 1 <= big["width"] <= big["natural"] + 1, big
        if width >= 1440:
            assert big["width"] >= 1.5 * shown, (big, shown)  # larger than in the column
        if width < 768:
            assert big["width"] >= 1.8 * shown, (big, shown)
        words = dialog.locator("p").inner_text()  # the caption, without the permalink's "#" or the tap hint
        assert words.startswith(("Figure 10.1.", "图 10.1")) and "#" not in words and "Tap" not in words, words
        tab.keyboard.press("Escape")
        assert dialog.count() == 0
        assert tab.evaluate("() => document.activeElement.classList.contains('rf-zoomable')")
    finally:
        context.close()


@pytest.mark.book
@pytest.mark.browser
@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("width", (390, 320))
def test_the_header_icons_are_a_fingers_size_on_a_phone(browser, site, edition, width):
    """On a phone every icon and the edition link of the header is at least 40 px wide and tall (the look review
    measured 27-30 px), and they still fit the screen (the header test above)."""
    context = browser.new_context(viewport={"width": width, "height": 844})
    tab = context.new_page()
    try:
        tab.goto(f"{site}/{address('book/04_one_head', edition)}.html", wait_until="load")
        seen = tab.evaluate(MEASURE)
        small = [i for i in seen["items"] if i["right"] - i["left"] < 39.5 or i["bottom"] - i["top"] < 39.5]
        assert seen["items"] and not small, small
    finally:
        context.close()
