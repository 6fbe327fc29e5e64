# Quick start: `make run` (set up, run the default suite, reports in results/report/)
#              `make test` (set up, lint, run the whole test suite)
VENV ?= .venv
PY := $(VENV)/bin/python
CORES ?= $(shell nproc)
# pytest-xdist workers for `make test`; tests/conftest.py groups the tests that must share one
TEST_WORKERS ?= 2
SNAKEMAKE := $(VENV)/bin/snakemake

.PHONY: setup system run run-cross run-special dry-run gpu-proof test lint bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[torch,dev]'
	touch $@

system:  ## Debian packages: a CJK font for the Chinese plots (and Slurm with SLURM=1); needs root
	bash scripts/setup-system.sh $(if $(SLURM),--slurm)

run: setup system
	$(SNAKEMAKE) --cores $(CORES)
	@echo "reports: results/report/report.{en,zh}.{md,html}"

run-cross: setup system  ## every installable framework side by side (each in its own environment)
	$(SNAKEMAKE) --cores $(CORES) --config suite=config/cross-framework.yaml
	@echo "reports: results/report/report.{en,zh}.{md,html}"

run-special: setup system  ## DLPerf's special cases (W&D, InsightFace, GPT) at toy sizes on a CPU
	$(SNAKEMAKE) --cores $(CORES) --config suite=config/special.yaml
	@echo "reports: results/report/report.{en,zh}.{md,html}"

dry-run: setup
	$(SNAKEMAKE) -n --cores $(CORES)

PROOF_OUT ?= gpu-proof
gpu-proof: setup  ## one GPU: the GPU suite (config/gpu.yaml) and its plain-loop references, 9 min
	$(PY) -m dlperf gpu-proof --out $(PROOF_OUT)

test: setup
	SLURM=1 $(MAKE) system
	$(MAKE) lint
	$(PY) -m pytest -q -ra -n $(TEST_WORKERS) --dist loadgroup

lint: setup
	$(VENV)/bin/ruff check src tests workflow benchmarks scripts
	$(VENV)/bin/ruff format --check src tests workflow benchmarks scripts
	$(VENV)/bin/mypy src/dlperf
	$(SNAKEMAKE) --lint --cores 1
	$(VENV)/bin/snakefmt --check Snakefile rules

bench: setup
	$(PY) benchmarks/harness.py

clean:  ## results and Snakemake's state; the framework environments (.dlperf/envs) are kept
	rm -rf results .snakemake
