PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo bench install clean mutate

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e ".[all,dev]"
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -n auto -q --timeout=900

# mutation testing of the core modules, each with the tests that cover it (minutes per module on 2 cores);
# MUTATE_ARGS: e.g. "tdx/config.py --max 0" for one module, every site
mutate: $(STAMP)
	$(BIN)/python tools/mutate.py --jobs 2 --max 20 $(MUTATE_ARGS)

demo: $(STAMP)
	$(BIN)/python -m tdx demo

bench: $(STAMP)
	$(BIN)/python bench/dispatch.py

clean:
	rm -rf $(VENV) build *.egg-info
