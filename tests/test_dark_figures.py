"""revformer.plots.dark_chrome: a figure drawn for a dark page keeps its data's colours, except the maps that
are white at zero, which would leave a white slab on the page (the look review: figures 4.1, 4.2, 18.1, 18.3)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from revformer.plots import DIFFERENCE_CMAP, dark_chrome  # noqa: E402


def _luminance(rgba) -> float:
    r, g, b = rgba[:3]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_a_white_centred_map_takes_a_dark_twin_and_its_numbers_stay_readable():
    values = np.array([[-1.0, 0.0], [0.0, 1.0]])
    fig, ax = plt.subplots()
    image = ax.imshow(values, cmap=DIFFERENCE_CMAP, vmin=-1, vmax=1)
    bar = fig.colorbar(image, ax=ax)
    zero = ax.text(1, 0, "0.0", color="black", ha="center")  # chosen for the white cell
    title = ax.set_title("scores")
    assert _luminance(image.get_cmap()(0.5)) > 0.9  # white at zero: a slab on a dark page
    with dark_chrome(fig):
        fig.canvas.draw()
        centre = image.get_cmap()(image.norm(0.0))
        assert _luminance(centre) < 0.25, centre  # zero is the page's surface now
        assert _luminance(image.get_cmap()(0.0)) > 0.3 and _luminance(image.get_cmap()(1.0)) > 0.3  # bright ends
        assert zero.get_color() == "white"  # the number on the zero cell, again for its colour
        assert bar.cmap is image.get_cmap()  # the colour bar follows the map
    assert image.get_cmap().name == DIFFERENCE_CMAP and zero.get_color() == "black"  # all put back
    assert title.get_text() == "scores"
    plt.close(fig)


def test_a_map_that_is_dark_at_zero_stays():
    fig, ax = plt.subplots()
    image = ax.imshow(np.eye(3), cmap="cividis")
    with dark_chrome(fig):
        assert image.get_cmap().name == "cividis"
    plt.close(fig)


def test_a_coloured_label_reads_at_four_and_a_half_to_one_on_the_dark_page():
    # matplotlib's own blue, C0, reads at 3.7:1 on the dark page (the tenth Chinese review measured a
    # label of figure 21.1 at 3.3:1); a light hue already readable keeps its colour
    from revformer.plots import DARK_BACKGROUND, contrast

    fig, ax = plt.subplots()
    ax.bar([0, 1], [1, 2], color="C0")
    blue = ax.text(0, 1, "98.5%", color="C0")
    orange = ax.text(1, 2, "100%", color="tab:orange")
    assert contrast(blue.get_color(), DARK_BACKGROUND) < 4.5
    with dark_chrome(fig):
        assert contrast(blue.get_color(), DARK_BACKGROUND) >= 4.5
        assert orange.get_color() == "tab:orange"
        assert ax.patches[0].get_facecolor()[:3] == matplotlib.colors.to_rgba("C0")[:3]  # the data keep theirs
    assert blue.get_color() == "C0"  # put back
    plt.close(fig)
