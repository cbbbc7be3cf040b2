# make book  : build the HTML book into _build/html, its Chinese edition into _build/html/zh_CN
#              (make book SEED=7: the whole book with seed 7; make book EDITION=student: also the
#              student edition, without solutions or keys, into _build/html-student, and the
#              instructor's key into _build/instructor-key)
# make test  : run every test (the book is built first: the tests check the site too)
# make unit  : the package's tests alone, without the book or a browser, in under a minute
# make bench : the speed benchmark
# Each creates .venv when it is missing and installs what it needs (requirements/*.txt).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Trained models are cached here, so the book and the tests train each group once.
export REVFORMER_CACHE ?= $(CURDIR)/_build/revformer-cache
export REVFORMER_PROGRESS ?= 0
# The seed of the models' initial weights for the whole book (42 is the article's).
SEED ?= 42
# reader: the book with its solutions; student: the reader's edition and the student edition beside it
EDITION ?= reader

.PHONY: book test unit bench clean setup-cells retarget translations chromium cjk

$(PY):
	$(PYTHON) -m venv $(VENV)

# One stamp per requirements file: a target installs what it needs, again when that file changes.
$(VENV)/.book: $(PY) requirements/book.txt requirements/runtime.txt code/pyproject.toml
	$(PY) -m pip install --quiet -r requirements/book.txt
	touch $@

$(VENV)/.test: $(VENV)/.book requirements/test.txt
	$(PY) -m pip install --quiet -r requirements/test.txt
	touch $@

# axe-core, Deque's accessibility rules: tests/test_accessibility.py injects this file into every page,
# from disk (no network at test time). One stamp per pinned version: a new pin installs again.
AXE_VERSION := 4.14.1
AXE_DIR := $(VENV)/axe
$(VENV)/.axe-$(AXE_VERSION): | $(PY)
	@command -v npm >/dev/null 2>&1 || { \
		echo "npm is not installed, and the accessibility test needs it to install axe-core $(AXE_VERSION)."; \
		echo "Install it with: sudo apt-get install -y npm   (or run make unit: no browser)"; \
		exit 2; }
	npm install --no-save --no-audit --no-fund --prefix $(AXE_DIR) axe-core@$(AXE_VERSION)
	test -f $(AXE_DIR)/node_modules/axe-core/axe.min.js
	touch $@

book: $(VENV)/.book cjk
	@case "$(EDITION)" in reader|student) ;; *) echo "EDITION must be reader or student, not $(EDITION)"; exit 2;; esac
	$(PY) tools/book.py build --seed $(SEED)
	@if [ "$(EDITION)" = student ]; then $(PY) tools/student.py build; fi

test: $(VENV)/.test $(VENV)/.axe-$(AXE_VERSION) chromium book
	$(PY) -m pytest

unit: $(VENV)/.test
	$(PY) -m pytest -m "not book and not slow and not browser"

# The browser tests drive Debian's Chromium; without it, say how to get it instead of failing later.
CHROMIUM ?= $(shell command -v chromium 2>/dev/null || echo /usr/bin/chromium)
chromium:
	@test -x "$(CHROMIUM)" || { \
		echo "Chromium is not installed, and the browser tests need it (headless, never a downloaded build)."; \
		echo "Install it with: sudo apt-get install -y chromium chromium-driver   (or run make unit: no browser)"; \
		exit 2; }

# The build draws every figure in Chinese too (a font with Chinese characters) and checks the
# catalogues with gettext's msgfmt; without them, say how to get them instead of failing later.
cjk:
	@fc-list :lang=zh family 2>/dev/null | grep -q . || { \
		echo "No font with Chinese characters is installed, and the Chinese edition's figures need one."; \
		echo "Install it with: sudo apt-get install -y fonts-noto-cjk"; \
		exit 2; }
	@command -v msgfmt >/dev/null 2>&1 || { \
		echo "msgfmt is not installed, and the catalogues' check needs it."; \
		echo "Install it with: sudo apt-get install -y gettext"; \
		exit 2; }

# The speed benchmark (issue figures): reproduction against PyTorch's own layers, training
# steps, the floor, peak memory, the seed sweep, the model in the browser, the book's build times.
# Then the waits of a reader in a fresh Colab-like runtime (tools/colab_runtime.py; the site built above):
# every chapter with the book's runs, and with TRAIN = True the chapters that train runs of their own
# (chapters 2-15 train chapter 1's); copied into bench/ they are chapter 14's table.
bench: $(VENV)/.test book
	$(PY) -m revformer bench --sweep --browser --book --out _build/bench.json
	$(PY) tools/colab_runtime.py bench --chapters all --out _build/colab-waits.json
	$(PY) tools/colab_runtime.py bench --train --chapters 01 16 17 18 19 20 21 --out _build/colab-waits-trained.json

# The Chinese edition's notebooks and pages (zh_CN/book), from the catalogues in locale/zh_CN
# and the English sources: run it after changing either (CONTRIBUTING.md, "The Chinese edition").
translations: $(VENV)/.book
	$(PY) tools/translations.py notebooks

# The repository and the site are named once, in _config.yml; these derive the rest.
setup-cells: $(VENV)/.book
	$(PY) tools/book.py setup-cells

retarget:
	@test -n "$(REPO)" || { echo "usage: make retarget REPO=https://github.com/OWNER/NAME [SITE=URL]"; exit 2; }
	$(PYTHON) tools/book.py retarget "$(REPO)" $(SITE)

clean:
	rm -rf _build
