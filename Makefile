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
export MPLBACKEND ?= Agg

.PHONY: book test install clean

install: $(STAMP)

$(STAMP): requirements.txt code/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

book: $(STAMP)
	$(PY) -m revformer reproduce --out _build/artifacts --quiet
	$(VENV)/bin/jupyter-book build . -W -n --keep-going

test: $(STAMP)
	$(PY) -m pytest

clean:
	rm -rf _build
