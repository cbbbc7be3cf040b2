import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest
import torch

from revformer.config import DataConfig, ExperimentConfig, TrainConfig


@pytest.fixture(autouse=True)
def _deterministic():
    torch.manual_seed(0)
    yield


@pytest.fixture
def wrong_report(capsys):
    """Read what an exercise checker printed, after asserting it reported a mistake.

    Returns the output with runs of white space made single, so that a
    diagnosis is found however the report was wrapped.
    """
    def read() -> str:
        out = " ".join(capsys.readouterr().out.split())
        assert "not yet" in out and "WRONG" in out, out
        return out
    return read


def pytest_collection_modifyitems(items):
    """Marks by what a test needs: the full reproduction trains the full models on an
    empty cache (slow); the ``browser`` fixture drives Chromium (browser)."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if {"reproduction", "reproduction_cache"} & fixtures:
            item.add_marker(pytest.mark.slow)
        if "browser" in fixtures:
            item.add_marker(pytest.mark.browser)


@pytest.fixture
def small_config():
    """A configuration small enough to train in a couple of seconds."""
    return ExperimentConfig(
        train=TrainConfig(steps=100, eval_every=25),
        data=DataConfig(train_size=1024, val_size=256, test_size=64),
    )


@pytest.fixture(scope="session")
def reproduction_cache(tmp_path_factory):
    """$REVFORMER_CACHE when the Makefile sets it (shared with the book build)."""
    return os.environ.get("REVFORMER_CACHE") or tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def reproduction(tmp_path_factory, reproduction_cache):
    """The full reproduction, once per test session; trained models come from
    the cache when it holds them."""
    from revformer.artifacts import reproduce

    out = tmp_path_factory.mktemp("reproduce")
    experiment = reproduce(out, device="cpu", cache_dir=reproduction_cache, progress=False)
    return experiment, out


CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (Debian's, never a downloaded one), one for each test module."""
    if not CHROMIUM.exists() and not shutil.which("chromium"):
        pytest.fail("Chromium is not installed (/usr/bin/chromium): the browser tests cannot run. "
                    "Install it with `apt-get install -y chromium` (.ci/run does this).")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM if CHROMIUM.exists() else shutil.which("chromium")),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run"])
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def site():
    """The built site, served on 127.0.0.1 from a thread, for the browser tests."""
    from book_facts import HTML

    if not (HTML / "index.html").exists():
        pytest.fail("no built book in _build/html: run `make book` first (`make test` does)")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(HTML))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


