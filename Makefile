# storecrawl: Go → WebAssembly Cloudflare Worker.
#   make dev    install, build, migrate, seed, run the simulators, the cron driver + wrangler dev
#   make test   everything: native Go tests, then integration tests under wrangler dev
#   make schema migrations/schema.sql: the D1 schema after every migration, for reading
#   make build  build/app.wasm + build/wasm_exec.js (what shim/ imports)
#   make bench  pacing table (simulator), request-path, size and cold-start benchmarks,
#               segments on the living simulator, live fidelity (prints figures;
#               writes docs/measurements.md)

SHELL := /bin/bash
# wrangler 4 needs Node >= 22.12: the pinned `node` devDependency provides it.
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
export WRANGLER_SEND_METRICS := false

GO ?= go
GOROOT_WASM := $(shell $(GO) env GOROOT)/lib/wasm
# TinyGo users: `make build GO=tinygo` (smaller module; not used by the tests).
ifeq ($(notdir $(GO)),tinygo)
WASM_BUILD = GOOS=js GOARCH=wasm tinygo build -o build/app.wasm -no-debug -target wasm ./cmd/worker
WASM_EXEC = $(shell tinygo env TINYGOROOT)/targets/wasm_exec.js
else
# nojsonv2 keeps encoding/json v1 should the toolchain (go.mod) reach Go 1.27,
# where v2 becomes the default and adds ~240 KB gzip to the module; on 1.26 it
# is already the default.
WASM_BUILD = GOOS=js GOARCH=wasm GOEXPERIMENT=nojsonv2 $(GO) build -trimpath -ldflags="-s -w" -o build/app.wasm ./cmd/worker
WASM_EXEC = $(GOROOT_WASM)/wasm_exec.js
endif

DEV_PORT ?= 8787
SIM_ADDR ?= 127.0.0.1:8790
# The analyst's OpenAI-compatible LLM simulator (cmd/llm-sim).
LLM_SIM_ADDR ?= 127.0.0.1:8791
SEED_APPS ?= 2000
# Share of simulated store pages in the current (2025) markup; the rest are legacy.
SIM_CURRENT_MARKUP_PCT ?= 50

.PHONY: all install build dev dev-prepare test test-go test-integration bench clean seed migrate-local chromium schema

all: build

# npm ci installs exactly package-lock.json and never rewrites it.
node_modules/.stamp: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

install: node_modules/.stamp
	$(GO) mod download

# Go sources and the files they embed (worker/api/dashboard.html, worker/api/explorer/).
GO_SOURCES := $(shell find cmd worker durable \( -name '*.go' -not -name '*_test.go' \) -o -name '*.html' -o -path 'worker/api/explorer/*') go.mod go.sum

# uPlot (npm `uplot`), embedded in the Worker for the explorer's charts:
# copied from node_modules at build time, never committed.
UPLOT := worker/api/explorer/lib/uPlot.iife.min.js worker/api/explorer/lib/uPlot.min.css
worker/api/explorer/lib/uPlot.%: node_modules/.stamp
	cp node_modules/uplot/dist/uPlot.$* $@

build/app.wasm: $(GO_SOURCES) $(UPLOT)
	@mkdir -p build
	$(WASM_BUILD)

build/wasm_exec.js: $(WASM_EXEC)
	@mkdir -p build
	cp $(WASM_EXEC) $@

build: build/app.wasm build/wasm_exec.js

.dev.vars:
	cp .dev.vars.example .dev.vars

migrate-local: install .dev.vars
	wrangler d1 migrations apply DB --local

# migrations/schema.sql: the schema after every numbered migration, for
# reading; worker/d1/d1test's test fails when it is out of date.
schema:
	$(GO) run ./cmd/schema > migrations/schema.sql

seed: migrate-local
	$(GO) run ./cmd/seed -apps $(SEED_APPS) > build/seed.sql
	wrangler d1 execute DB --local --file build/seed.sql

# dev-prepare is everything make dev does before it starts the servers; CI runs
# it to check that make dev leaves the tree clean.
dev-prepare: install build .dev.vars seed

# wrangler dev never fires cron triggers: cmd/dev-cron fires wrangler.jsonc's
# crons once when /health answers, then on their schedule (DEV_CRON_SPEEDUP=10
# in the environment or on make's command line: a */5 cron every 30 s).
dev: dev-prepare
	@echo "starting upstream simulator on $(SIM_ADDR), the cron driver and wrangler dev on :$(DEV_PORT)"
	$(GO) build -o build/upstream-sim ./cmd/upstream-sim
	$(GO) build -o build/llm-sim ./cmd/llm-sim
	$(GO) build -o build/dev-cron ./cmd/dev-cron
	@build/dev-cron -port $(DEV_PORT) -check
	@build/upstream-sim -addr $(SIM_ADDR) -apps $(SEED_APPS) -current-markup-pct $(SIM_CURRENT_MARKUP_PCT) & SIM=$$!; \
	build/llm-sim -addr $(LLM_SIM_ADDR) & LLMSIM=$$!; \
	build/dev-cron -port $(DEV_PORT) & CRON=$$!; \
	trap "kill $$SIM $$LLMSIM $$CRON 2>/dev/null" EXIT INT TERM; \
	wrangler dev --port $(DEV_PORT) --ip 127.0.0.1 --test-scheduled \
		--var UPSTREAM_API_BASE:http://$(SIM_ADDR) --var UPSTREAM_STORE_BASE:http://$(SIM_ADDR) \
		--var UPSTREAM_HINTS_BASE:http://$(SIM_ADDR) \
		--var LLM_BASE_URL:http://$(LLM_SIM_ADDR)/v1 --var ALLOW_LOOPBACK_WEBHOOKS:1

test: install build test-go test-integration

# Test logs (.test-output/ is ignored by git): the whole -v output, and a
# summary printed after it.
TEST_OUTPUT := .test-output

test-go:
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet ./...
	@mkdir -p $(TEST_OUTPUT)
	@set -o pipefail; $(GO) test ./... 2>&1 | tee $(TEST_OUTPUT)/go.log; status=$$?; \
	echo "slowest packages:"; grep -E '^ok ' $(TEST_OUTPUT)/go.log | sort -t$$'\t' -k3 -rn | head -5; exit $$status

# The e2e tests run side by side, but for the ones that measure rates (no
# t.Parallel: Go runs them first, alone). Each stack mostly waits on its
# simulator and alarms: on 2 cores, 6 at once ran the suite in 4m50s, 4 at
# once in 5m38s, with the same per-test times give or take a few seconds.
E2E_PARALLEL ?= 6
# e2e-summary prints each test's line (--- PASS/FAIL/SKIP with its seconds)
# and the run's totals from the -v log; for a failed test, its own output.
# After a panic (go test's -timeout), it prints the tests go test names as
# still running, then the last lines each of them logged, last of all so
# that a log's tail shows them.
define e2e-summary
awk 'FNR == NR { if ($$1 == "---" && $$2 == "FAIL:") failed[$$3] = 1; \
		if (/^panic:/) inpanic = 1; else if (inpanic && /^goroutine /) inpanic = 0; \
		else if (inpanic && /^\t\tTest/) running[$$1] = 1; next } \
	dumped { if (/^(ok|FAIL|PASS)([ \t]|$$)/) print; next } \
	panicked && /^goroutine / { dumped = 1; next } \
	panicked { print; next } \
	$$1 == "===" { cur = $$3; next } \
	/^panic:/ { print; panicked = 1; next } \
	$$1 == "---" || /^(ok|FAIL|PASS)([ \t]|$$)/ { print; next } \
	(cur in failed) { print; next } \
	(cur in running) { logged[cur, n[cur]++ % $(E2E_HUNG_LINES)] = $$0 } \
	END { for (t in running) { print "--- still running at the timeout: " t ", its last lines:"; \
		for (i = (n[t] > $(E2E_HUNG_LINES) ? n[t] - $(E2E_HUNG_LINES) : 0); i < n[t]; i++) \
			print logged[t, i % $(E2E_HUNG_LINES)] } }' $(1) $(1)
endef
# E2E_HUNG_LINES is how many of its last lines the summary prints for each
# test still running at the timeout.
E2E_HUNG_LINES ?= 20

test-integration: install build chromium
	@mkdir -p $(TEST_OUTPUT)
	@echo "e2e: go test -v -tags integration -parallel $(E2E_PARALLEL) ./worker/e2e/... > $(TEST_OUTPUT)/e2e.log"
	@status=0; $(GO) test -count=1 -v -tags integration -parallel $(E2E_PARALLEL) -timeout 30m ./worker/e2e/... \
		> $(TEST_OUTPUT)/e2e.log 2>&1 || status=$$?; \
	$(call e2e-summary,$(TEST_OUTPUT)/e2e.log); \
	echo "e2e: $$(grep -c '^--- PASS' $(TEST_OUTPUT)/e2e.log) passed, $$(grep -c '^--- FAIL' $(TEST_OUTPUT)/e2e.log) failed, $$(grep -c '^--- SKIP' $(TEST_OUTPUT)/e2e.log) skipped (full log: $(TEST_OUTPUT)/e2e.log)"; \
	exit $$status

# The dashboard's browser test drives Debian's Chromium (/usr/bin/chromium) with
# playwright-core; Playwright's own browser download does not work offline.
CHROMIUM ?= /usr/bin/chromium
chromium:
	@if [ -x $(CHROMIUM) ]; then echo "chromium: $$($(CHROMIUM) --version 2>/dev/null)"; \
	else echo "installing Debian's chromium (needs root and the Debian mirror)"; \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends chromium && \
		$(CHROMIUM) --version; fi

# The live-fidelity run (9 minutes of the real controller against the
# simulator's stepped limit, next to cmd/simulate's prediction) is the e2e
# test tagged fidelity: it prints the comparison and checks its bounds.
bench: install build
	$(GO) run ./cmd/simulate -scenario all
	$(GO) run ./cmd/bench -fidelity=false -md docs/measurements.md
	$(GO) run ./cmd/bench -only-segments
	$(GO) test -count=1 -v -tags 'integration fidelity' -run '^TestLivePacingAgainstTheSimulatorsPrediction$$' -timeout 20m ./worker/e2e/

clean:
	rm -rf build .wrangler
