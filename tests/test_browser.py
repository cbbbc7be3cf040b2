"""Every built page in headless Chromium with the network cut off: no console
error, math typeset, graded questions give the right feedback."""
import json

import pytest

from book_facts import EDITIONS, address, chapter_files, page

PAGES = ["book/intro", *chapter_files(), "book/playground", "book/glossary"]
# What a graded question says first when wrong and when right, in each edition (revformer.quiz.UI).
SAYS = {"en": ("Not quite", "Correct"), "zh_CN": ("还不对", "正确")}


def open_page(browser, site, name):
    context = browser.new_context()
    tab = context.new_page()
    errors, outside = [], []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        if r.request.url.startswith(site):
            r.continue_()
        else:  # the network is cut: anything outside the site is refused and recorded
            outside.append(r.request.url)
            r.abort()

    tab.route("**/*", route)
    tab.goto(f"{site}/{name}.html", wait_until="load")
    if tab.locator(".math").count():
        tab.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise"
                              " && document.querySelectorAll('mjx-container').length > 0", timeout=20000)
    tab.wait_for_timeout(200)
    return context, tab, errors, outside


@pytest.mark.book
@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("name", PAGES)
def test_page_in_a_browser(browser, site, name, edition):
    assert page(name, edition).exists(), name
    wrong_says, right_says = SAYS[edition]
    context, tab, errors, outside = open_page(browser, site, address(name, edition))
    try:
        maths = tab.locator(".math").count()
        if maths:
            assert tab.locator("mjx-container").count() >= maths, "math left untypeset"
            assert tab.locator("mjx-merror").count() == 0, "MathJax reported a TeX error"
        for quiz in tab.locator(".rf-quiz").all():
            data = json.loads(quiz.locator("script.rf-quiz-data").text_content())
            feedback = quiz.locator(".rf-quiz-feedback")
            check = quiz.locator("button.rf-quiz-check")
            if data["kind"] == "choice":
                wrong = (data["answer"] + 1) % quiz.locator("input[type=radio]").count()
                quiz.locator("input[type=radio]").nth(wrong).check()
                check.click()
                assert "rf-wrong" in feedback.get_attribute("class")
                assert feedback.text_content().startswith(wrong_says)
                quiz.locator("input[type=radio]").nth(data["answer"]).check()
            else:
                quiz.locator("input[type=text]").fill(str(data["answer"] + 10 * data["tolerance"] + 1))
                check.click()
                assert "rf-wrong" in feedback.get_attribute("class")
                quiz.locator("input[type=text]").fill(str(data["answer"]))
            check.click()
            assert "rf-right" in feedback.get_attribute("class")
            assert feedback.text_content().startswith(right_says)
        assert errors == [], f"console errors: {errors}"
        assert outside == [], f"requests outside the site: {outside}"
    finally:
        context.close()



EXPLORER_PAGES = ["book/10_heatmaps", "book/11_mask_off", "book/12_ablations", "book/playground"]


@pytest.mark.book
@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("name", EXPLORER_PAGES)
def test_explorers_run_the_model_in_the_built_page(browser, site, name, edition):
    """The explorer of the built page computes the trained model, offline, and answers the reader."""
    context, tab, errors, outside = open_page(browser, site, address(name, edition))
    try:
        explorer = tab.locator(".rf-playground").first
        explorer.locator("rect.rfp-cell").first.wait_for(timeout=20000)
        assert explorer.locator("rect.rfp-cell").count() == 14 * 14
        digits = explorer.locator("input.rfp-digits")
        digits.fill("123456")
        tab.wait_for_function("el => el.querySelector('td.rfp-tok[data-i=\"0\"]').textContent === '6'",
                              arg=explorer.element_handle(), timeout=20000)
        answer = explorer.locator("td.rfp-tok").all_text_contents()
        assert answer[:6] == list("654321"), answer  # every trained group reverses it
        verdict = explorer.locator(".rfp-verdict").text_content()
        assert verdict.startswith({"en": "Right:", "zh_CN": "正确："}[edition]), verdict  # in the page's language
        assert tab.evaluate("window.revformerModel.generate('four_heads', [1, 2, 3, 4, 5, 6])") == [6, 5, 4, 3, 2, 1, 12]
        digits.fill("12345")
        assert {"en": "six digits", "zh_CN": "六个"}[edition] in explorer.locator(".rfp-error").text_content()
        assert errors == [], f"console errors: {errors}"
        assert outside == [], f"requests outside the site: {outside}"
    finally:
        context.close()


@pytest.mark.parametrize("answer, typed, right", [
    (69709, "69,709", True), (69709, "69709", True), (69709, "69 709", True), (69709, "69.709", False),
    (1234.5, "1,234.5", True), (0.5, "0,5", True), (0.5, ".5", True), (33472, "33,47", False),
    (0.092, "0,092", True), (0.092, "\uff10.\uff10\uff19\uff12", True), (0.092, "0\u3002092", True),
    (0.092, "0\uff0e092", True), (1.234, "1,234", True), (1234, "\uff11\uff0c\uff12\uff13\uff14", True),
])
def test_a_number_is_read_the_way_the_book_prints_it(browser, answer, typed, right):
    """A comma between groups of three digits separates thousands; a lone comma is a decimal comma."""
    from revformer.quiz import number

    context = browser.new_context()
    tab = context.new_page()
    try:
        tab.set_content("<html><body>" + number("How many?", answer, 0.0, "That many.")._repr_html_()
                        + "</body></html>")
        tab.locator(".rf-quiz input[type=text]").fill(typed)
        tab.locator("button.rf-quiz-check").click()
        feedback = tab.locator(".rf-quiz-feedback")
        assert ("rf-right" in feedback.get_attribute("class")) == right, feedback.text_content()
    finally:
        context.close()


@pytest.mark.parametrize("language, says", [
    ("en", "Did you mean 1.234 or 1234? Write it with a point."),
    ("zh_CN", "\u4f60\u662f\u6307 1.234 \u8fd8\u662f 1234\uff1f"),
])
def test_a_comma_that_may_mean_either_is_asked_about(browser, language, says):
    """"1,234" when the answer is near neither 1.234 nor 1234: a question, not "too large"."""
    from revformer.quiz import number

    context = browser.new_context()
    tab = context.new_page()
    try:
        tab.set_content("<html><body>" + number("How much?", 0.5, 0.01, "Half.", language=language)._repr_html_()
                        + "</body></html>")
        tab.locator(".rf-quiz input[type=text]").fill("1,234")
        tab.locator("button.rf-quiz-check").click()
        feedback = tab.locator(".rf-quiz-feedback")
        assert feedback.text_content().startswith(says) and "rf-wrong" in feedback.get_attribute("class")
    finally:
        context.close()


@pytest.mark.parametrize("answer, typed, says", [
    (99.6, "0.996", "Right number, written as a fraction"), (0.996, "99.6", "Right number, written as a percentage"),
    (99.6, "0.5", "Not quite: 0.5 is too small"),
])
def test_a_fraction_for_a_percentage_is_named(browser, answer, typed, says):
    """0.996 typed where the question asks 99.6 (percent): the feedback says which form is asked, not "too small"."""
    from revformer.quiz import number

    context = browser.new_context()
    tab = context.new_page()
    try:
        tab.set_content("<html><body>" + number("What share?", answer, 0.05 if answer > 1 else 0.0005, "So.")
                        ._repr_html_() + "</body></html>")
        tab.locator(".rf-quiz input[type=text]").fill(typed)
        tab.locator("button.rf-quiz-check").click()
        feedback = tab.locator(".rf-quiz-feedback")
        assert feedback.text_content().startswith(says) and "rf-wrong" in feedback.get_attribute("class")
    finally:
        context.close()
