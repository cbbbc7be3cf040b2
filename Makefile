# make book : build the HTML book into _build/html
# make test : run the test suite (and everything it needs)
# Both create .venv and install requirements.txt into it when needed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Trained models are cached here, so the book and the tests train each group once.
export REVFORMER_CACHE ?= $(CURDIR)/_build/revformer-cache
export REVFORMER_PROGRESS ?= 0
# The seed of the models' initial weights for the whole book: make book SEED=7.
SEED ?= 42

.PHONY: book test bench install clean setup-cells retarget

install: $(STAMP)

$(STAMP): requirements.txt code/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

DOWNLOADS := _build/site-extra/downloads
# Chapter outputs are cached by notebook content; a change to the package must
# re-execute them, so the cache is dropped when the package's fingerprint (the
# one in the trained models' cache keys) or the installed requirements change.
book: $(STAMP)
	@mkdir -p _build
	@hash="seed $(SEED) $$($(PY) -m revformer.fingerprint) $$(cat requirements.txt code/pyproject.toml | sha256sum | cut -c1-16)"; \
	if [ "$$(cat _build/.package-hash 2>/dev/null)" != "$$hash" ]; then \
		echo "revformer changed: executing every chapter afresh"; \
		rm -rf _build/.jupyter_cache _build/.doctrees _build/jupyter_execute _build/html; echo "$$hash" > _build/.package-hash; fi
	$(PY) -m revformer reproduce --out $(DOWNLOADS) --seed $(SEED) --quiet
	rm -f $(DOWNLOADS)/revformer-*.whl
	$(PY) -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir $(DOWNLOADS) ./code
	mkdir -p $(DOWNLOADS)/notebooks
	cp book/*.ipynb $(DOWNLOADS)/notebooks/
	REVFORMER_SEED=$(SEED) REVFORMER_STATIC_BUILD=1 $(VENV)/bin/jupyter-book build . -W -n --keep-going

# The tests check the built site too, so the book is built first.
test: book
	$(PY) -m pytest

# The speed benchmark (issue figures): reproduction against PyTorch's own
# layers, training steps, the book's build times, the floor, peak memory.
bench: $(STAMP)
	$(PY) -m revformer bench --book --out _build/bench.json

# The repository and the site are named once, in _config.yml; these derive the rest.
setup-cells:
	$(PYTHON) tools/book.py setup-cells

retarget:
	@test -n "$(REPO)" || { echo "usage: make retarget REPO=https://github.com/OWNER/NAME [SITE=URL]"; exit 2; }
	$(PYTHON) tools/book.py retarget "$(REPO)" $(SITE)

clean:
	rm -rf _build
