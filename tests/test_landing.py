"""The landing page's way in (``revformer.landing``): start buttons and a map of the parts, in both editions."""
import re
from types import SimpleNamespace

import numpy as np
import pytest

from book_facts import CONFIG, REPO_URL, TOC

SITE = CONFIG["html"]["baseurl"].rstrip("/") + "/"
from revformer.landing import PARTS, landing_buttons, landing_map


def _experiment(runs=("four_heads", "one_head", "no_mask")):
    """What the map reads of an experiment: each run's history and curve, and layer 0's attention of sample 0."""
    weights = np.full((2, 4, 14, 14), 0.01)
    for q in range(7, 13):
        weights[0, 2, q, 13 - q] = 0.95  # head 2 reverses
    made = {name: SimpleNamespace(history=[(0, 2.6, 2.5), (50, 0.4, 0.3), (600, 0.01, 0.002)],
                                  curve=[(10, 2.0 + i, 0.0), (100, 0.1, 1.0), (200, 0.01, 1.0), (300, 0.001, 1.0)])
            for i, name in enumerate(runs)}
    return SimpleNamespace(runs=made, run=made.__getitem__, attention=lambda: weights)


def test_the_parts_are_the_books_parts_in_order():
    """Each card names a part of ``_toc.yml`` (Reference aside) and opens its first chapter."""
    parts = [p for p in TOC["parts"] if p["caption"] != "Reference"]
    assert [title for title, *_ in PARTS] == [p["caption"] for p in parts]
    assert [f"book/{first}" for _, _, first, _ in PARTS] == [p["chapters"][0]["file"] for p in parts]
    for (_, chapters, _, _), part in zip(PARTS, parts):
        numbers = [int(c["file"][5:7]) for c in part["chapters"] if c["file"][5:7].isdigit()]
        assert chapters == f"{min(numbers)}-{max(numbers)}"


def test_the_map_links_every_part_and_the_buttons_the_three_ways_in():
    shown, buttons = landing_map(_experiment()), landing_buttons()
    en, zh = shown.en._repr_html_(), shown.zh._repr_html_()
    for page, ways, prefix in ((en, buttons.en._repr_html_(), ""), (zh, buttons.zh._repr_html_(), "zh_CN/")):
        cards = re.findall(r'<a class="rfl-card" href="([^"]+)">', page)
        assert [c.rsplit("/", 1)[1] for c in cards] == [f"{first}.html" for _, _, first, _ in PARTS]
        assert all(c.startswith(f"{SITE}{prefix}book/") for c in cards)
        links = re.findall(r'<a class="rfl-button[^"]*" href="([^"]+)">', ways)
        assert links[:2] == [f"{SITE}{prefix}book/01_task.html",
                             f"{SITE}{prefix}book/playground.html"]
        repo = REPO_URL.removeprefix("https://github.com/")
        assert links[2] == f"https://colab.research.google.com/github/{repo}/blob/main/{prefix}book/01_task.ipynb"
        assert page.count('<svg class="rfl-pic"') == 6 and page.count('role="img" aria-label="') == 6
    assert "The task and the data" in en and "任务与数据" in zh
    for page in (zh, buttons.zh._repr_html_()):
        words = re.sub(r"<[^>]+>", " ", page.split("</style>", 1)[1])  # the Chinese page's visible words
        assert not re.search(r"\b(?:The|the|and|Chapters|Start|Open|Run)\b", words), words


def test_the_pictures_come_from_the_run():
    """The loss curve follows the run's history; the masked map leaves the future empty; the heads' tiles are as
    bright as each head's weight on the reversal keys."""
    experiment = _experiment()
    page = landing_map(experiment, language="en")._repr_html_()
    experiment.run("four_heads").history = [(0, 2.6, 2.5), (50, 0.4, 1.0), (600, 0.01, 0.2)]
    assert landing_map(experiment, language="en")._repr_html_() != page
    pictures = re.findall(r'<svg class="rfl-pic".*?</svg>', page)
    masked, heads = pictures[1], pictures[5]
    assert masked.count("<rect") == 14 * 15 // 2  # the cells up to the diagonal (the frame is a path)
    colours = re.findall(r'fill="(#[0-9a-f]{6})"', heads)
    assert len(colours) == 8 and len(set(colours)) == 2  # head 2 of layer 0 reverses, the rest do not
    assert colours[2] != colours[0] == colours[3] == colours[4]


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="language must be one of"):
        landing_map(_experiment(), language="fr")
    with pytest.raises(ValueError, match="draws four_heads; loaded: one_head"):
        landing_map(_experiment(runs=("one_head",)))
    with pytest.raises(ValueError, match="language must be one of"):
        landing_buttons(language="de")
