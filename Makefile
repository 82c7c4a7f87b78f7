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

# worksteal: a worker left without tests takes half of another's queue, so the suite does not end with one worker
# running the slow program tests alone. compileall first: the suite starts a Python with tdx a few hundred times, and
# where PYTHONDONTWRITEBYTECODE is set none of them would keep the bytecode it compiled
test: $(STAMP)
	$(BIN)/python -m compileall -q tdx tests bench
	$(BIN)/python -m pytest -n auto --dist worksteal -q --timeout=900

# mutation testing of the core modules, each with the tests that cover it (minutes per module on 2 cores);
# MUTATE_ARGS: e.g. "tdx/config.py --max 0" for one module, every site
mutate: $(STAMP)
	$(BIN)/python tools/mutate.py --jobs 2 --max 20 $(MUTATE_ARGS)

demo: $(STAMP)
	$(BIN)/python -m tdx demo

# tables (stamped: machine, date, command, min/median/max) and PNG plots into bench/results/, ~4 minutes;
# the training step is separate (~15 minutes here): $(BIN)/python bench/train.py --configs S M --steps 12 --warmup 2 --rss-steps 3
BENCH_OUT := bench/results
bench: $(STAMP)
	$(BIN)/python bench/dispatch.py --repeats 7 --number 4000 --out $(BENCH_OUT)
	$(BIN)/python bench/interop.py --max-size 256M --roundtrips 1000 --out $(BENCH_OUT)
	$(BIN)/python bench/sdpa.py --lengths 256,512,1024,2048 --dims 64 --repeat 5 --budget 2 --min-time 0.2 --long 0 --out $(BENCH_OUT)

clean:
	rm -rf $(VENV) build *.egg-info
