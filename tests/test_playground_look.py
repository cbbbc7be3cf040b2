"""How the playground looks and answers where a reader sees it: at 390, 1024 and 1440 px, light and dark, in both
editions (the web-design review: browser-default controls, the answer and the heatmap clipped on a phone, a light
slab in dark mode, a heatmap that did not answer the pointer, a landing page without the model)."""
import io

import pytest

from book_facts import EDITIONS, address

pytestmark = [pytest.mark.book, pytest.mark.browser]

WIDTHS = (390, 1024, 1440)
SCHEMES = ("light", "dark")
PLAYGROUND_PAGES = ["book/intro", "book/playground", "book/10_heatmaps", "book/11_mask_off", "book/12_ablations"]
DARK = "localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark');"  # the theme's own switch
DRAWN = ".rf-playground[data-first-draw-ms]"


def height(width: int) -> int:
    return 844 if width < 500 else 900  # a phone's screen, a laptop's


def open_page(browser, site, name, edition, width, scheme="light", touch=False):
    context = browser.new_context(viewport={"width": width, "height": height(width)}, has_touch=touch)
    if scheme == "dark":
        context.add_init_script(DARK)
    tab = context.new_page()
    tab.goto(f"{site}/{address(name, edition)}.html", wait_until="load")
    tab.wait_for_selector(DRAWN, timeout=20000)
    assert tab.evaluate("document.documentElement.dataset.theme") == scheme
    return context, tab


# Every element of each playground that shows past the viewport's edges, unless a scroll container inside the
# playground holds it (the playground itself scrolling sideways is what the review found: clipped on a phone).
# What a parent clips (overflow hidden, a visually hidden table head) does not show, so it does not count.
OUTSIDE = """() => {
  const width = document.documentElement.clientWidth, found = [];
  for (const root of document.querySelectorAll('.rf-playground')) {
    if (root.scrollWidth > root.clientWidth + 1) {
      found.push(`the playground scrolls: ${root.scrollWidth} px in ${root.clientWidth}`);
    }
    for (const e of [root, ...root.querySelectorAll('*')]) {
      const r = e.getBoundingClientRect();
      let left = r.left, right = r.right, held = false;
      for (let p = e.parentElement; p && p !== root.parentElement; p = p.parentElement) {
        const overflow = getComputedStyle(p).overflowX;
        if (p !== root && /auto|scroll/.test(overflow)) { held = true; break; }
        if (/hidden|clip/.test(overflow)) {
          const c = p.getBoundingClientRect();
          left = Math.max(left, c.left); right = Math.min(right, c.right);
        }
      }
      if (held || right - left <= 0 || !r.width || (left >= -1 && right <= width + 1)) continue;
      const name = e.getAttribute('class') || e.tagName;
      found.push(`${name} at x ${Math.round(left)}-${Math.round(right)} of ${width} px`);
    }
  }
  return found;
}"""

# Whether the element shows at its centre, scrolled to the middle of the screen: inside the viewport, not clipped
# by a parent, not covered.
SEEN = """e => {
  e.scrollIntoView({block: 'center', inline: 'nearest'});
  const r = e.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
  const inside = r.width > 0 && r.left >= -1 && r.right <= document.documentElement.clientWidth + 1;
  const top = document.elementFromPoint(x, y);
  return inside && !!top && (top === e || e.contains(top));
}"""

# The colour a reader sees behind the playground: its own background or the first painted one around it.
BACKDROP = """root => {
  for (let e = root; e; e = e.parentElement) {
    const c = getComputedStyle(e).backgroundColor.match(/[\\d.]+/g).map(Number);
    if (c.length < 4 || c[3] > 0.5) return c.slice(0, 3);
  }
  return [255, 255, 255];
}"""


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("width", WIDTHS)
def test_the_playground_fits_the_screen(browser, site, edition, width):
    """Nothing of a playground reaches past the screen's edge; all seven answer chips and all fourteen columns
    of the heatmap show, in light and in dark mode."""
    problems = []
    for scheme in SCHEMES:
        for name in PLAYGROUND_PAGES:
            context, tab = open_page(browser, site, name, edition, width, scheme)
            where = f"{name} ({edition}, {width} px, {scheme})"
            try:
                problems += [f"{where}: {p}" for p in tab.evaluate(OUTSIDE)[:5]]
                root = tab.locator(DRAWN).first
                chips = root.locator("tr.rfp-chip")
                assert chips.count() == 7, where
                hidden = [i for i in range(7) if not chips.nth(i).evaluate(SEEN)]
                if hidden:
                    problems.append(f"{where}: answer chips {hidden} are not seen")
                columns = [k for k in range(14)
                           if not root.locator(f"rect.rfp-cell[data-q='13'][data-k='{k}']").evaluate(SEEN)]
                if columns:
                    problems.append(f"{where}: heatmap columns {columns} are not seen")
            finally:
                context.close()
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("width", WIDTHS)
def test_no_playground_is_a_light_slab_in_dark_mode(browser, site, edition, width):
    """In dark mode the playground sits on the page's dark background (the theme paints an HTML output light
    unless told otherwise): measured on the screen, at most a tenth of its pixels are near white."""
    from PIL import Image

    slabs = []
    for name in PLAYGROUND_PAGES:
        context, tab = open_page(browser, site, name, edition, width, "dark")
        try:
            root = tab.locator(DRAWN).first
            backdrop = root.evaluate(BACKDROP)
            if sum(backdrop) / 3 > 128:
                slabs.append(f"{name} ({edition}, {width} px): the playground's background is rgb{tuple(backdrop)}")
            root.scroll_into_view_if_needed()
            shot = Image.open(io.BytesIO(root.screenshot())).convert("L")
            white = sum(shot.histogram()[230:]) / (shot.width * shot.height)
            if white > 0.1:
                slabs.append(f"{name} ({edition}, {width} px): {white:.0%} of the playground is near white")
        finally:
            context.close()
    assert not slabs, "\n".join(slabs)


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("width, touch", [(1440, False), (390, True)])
def test_the_heatmap_reads_out_the_cell_under_the_pointer(browser, site, edition, width, touch):
    """Pointing at a cell (a tap on a phone) reads out its query, its key and its weight; clicking or tapping it
    picks its row for the bars, and the query-row list follows."""
    context, tab = open_page(browser, site, "book/playground", edition, width, touch=touch)
    try:
        root = tab.locator(DRAWN).first
        readout = root.locator(".rfp-readout")
        for q, k in ((9, 4), (12, 1), (3, 2)):
            cell = root.locator(f"rect.rfp-cell[data-q='{q}'][data-k='{k}']")
            value = float(cell.get_attribute("data-value"))
            cell.tap() if touch else cell.hover()
            said = readout.text_content()
            assert f"query {q}" in said and f"key {k}" in said and f"{value:.3f}" in said, said
        row = root.locator("rect.rfp-cell[data-q='11'][data-k='2']")
        row.tap() if touch else row.click()
        assert root.locator("select.rfp-row").input_value() == "11"
        assert root.locator(".rfp-note").text_content().lower().startswith("query 11")
        masked = root.locator("rect.rfp-cell[data-q='3'][data-k='9']")  # the future, hatched
        masked.tap() if touch else masked.hover()
        assert readout.text_content().endswith({"en": "masked", "zh_CN": "已屏蔽"}[edition])
        hint = tab.evaluate("e => JSON.parse(e.textContent).text.hint", root.locator(".rfp-options").element_handle())
        if not touch:
            tab.mouse.move(2, 2)  # the pointer leaves the heatmap: the reading goes
            assert readout.text_content() == hint
            root.locator("rect.rfp-cell[data-q='9'][data-k='4']").hover()
            assert readout.text_content() != hint
            tab.mouse.move(2, 2)
        root.locator("input.rfp-digits").fill("987650")  # a new answer: no old cell's reading stays
        assert readout.text_content() == hint
    finally:
        context.close()


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("name", ["book/playground", "book/10_heatmaps"])
def test_a_thumbnail_picks_the_layer_and_head(browser, site, name, edition):
    """A thumbnail for every head of both layers and their mean; clicking one draws it large and sets the lists."""
    context, tab = open_page(browser, site, name, edition, 1024)
    try:
        root = tab.locator(DRAWN).first
        assert root.locator("button.rfp-thumb").count() == 10  # 2 layers x (4 heads + their mean)
        assert root.locator("button.rfp-thumb[aria-pressed='true']").count() == 1
        cells = "els => els.map(e => e.getAttribute('data-value'))"
        before = root.locator("rect.rfp-cell").evaluate_all(cells)
        thumb = root.locator("button.rfp-thumb[data-layer='1'][data-head='2']")
        thumb.click()
        assert thumb.get_attribute("aria-pressed") == "true"
        assert root.locator("button.rfp-thumb[aria-pressed='true']").count() == 1
        assert root.locator("select.rfp-layer").input_value() == "1"
        assert root.locator("select.rfp-head").input_value() == "2"
        assert root.locator("rect.rfp-cell").evaluate_all(cells) != before
        label = root.locator("svg.rfp-heatmap").get_attribute("aria-label")
        assert {"en": "layer 1, head 2", "zh_CN": "第 1 层，头 2"}[edition] in label, label
        thumb.focus()  # the keyboard picks too
        tab.keyboard.press("Shift+Tab")
        tab.keyboard.press("Enter")
        assert root.locator("select.rfp-head").input_value() == "1"
    finally:
        context.close()


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("width", WIDTHS)
def test_the_landing_page_answers_within_the_first_screen(browser, site, edition, width):
    """The introduction's own playground: six digits typed into its box change the answer chips, and the chips
    show without scrolling."""
    context, tab = open_page(browser, site, "book/intro", edition, width)
    try:
        hero = tab.locator(DRAWN).first
        box = hero.locator("input.rfp-digits")
        assert box.evaluate("e => e.getBoundingClientRect().bottom + scrollY") <= height(width)
        box.fill("123456")
        tab.wait_for_function("el => el.dataset.answer === '6 5 4 3 2 1 <EOS>'", arg=hero.element_handle(),
                              timeout=20000)
        assert hero.locator("td.rfp-tok").all_text_contents()[:6] == list("654321")
        bottom = hero.locator("table.rfp-answer tbody").evaluate("e => e.getBoundingClientRect().bottom + scrollY")
        assert bottom <= height(width), f"the answer ends at {bottom:.0f} px, below the first screen"
        assert hero.locator("rect.rfp-cell").count() == 14 * 14  # and layer 0's heatmap
    finally:
        context.close()
