# `make test` and `make run` bootstrap everything on a fresh machine: the venv, the Python
# dependencies (pinned by requirements/constraints.txt) and buf (from npm, pinned in tools/).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
BUF := tools/node_modules/.bin/buf
PROTOS := $(wildcard proto/llmworker/v1/*.proto)
PORT ?= 50051
GOBIN_DIR := $(CURDIR)/.tools/go/bin
PROTOC_GEN_GO := $(GOBIN_DIR)/protoc-gen-go
PROTOC_GEN_GO_GRPC := $(GOBIN_DIR)/protoc-gen-go-grpc
GHZ := $(GOBIN_DIR)/ghz
GHZ_VERSION := v0.120.0
INTEROP_GO := tests/interop/go/bin/interop
INTEROP_NODE := tests/interop/node/node_modules/.package-lock.json
# The TypeScript SDK: its node_modules, and its build (the Node interop checks import it).
SDK_TS_MODULES := sdk/typescript/node_modules/.package-lock.json
SDK_TS_DIST := sdk/typescript/dist/index.js

.PHONY: test lint typecheck imports docs unit proto proto-check buf-lint interop toolchains postgres mcp-conformance bench bench-paused bench-mcp bench-mcp-hop bench-search stress scale-test run clean sdk-go sdk-go-gen sdk-ts sdk-ts-gen polyglot

$(STAMP): pyproject.toml requirements/constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements/constraints.txt -e '.[dev]'
	touch $@

$(BUF): tools/package.json tools/package-lock.json | toolchains
	cd tools && npm ci --no-audit --no-fund --loglevel=error
	test -x $(BUF)

test: lint typecheck imports docs proto-check buf-lint interop polyglot sdk-go sdk-ts $(GHZ) unit mcp-conformance

# The official MCP conformance suite's server scenarios against the MCP front, revisions
# 2025-11-25 and 2026-07-28, with tests/conformance/expected-failures.yml as the baseline.
mcp-conformance: $(STAMP) $(BUF)
	$(BIN)/python -m tests.conformance.run

# Go and Node.js must be on PATH; everything else comes from the module proxy and npm.
toolchains:
	@command -v go >/dev/null || { echo "Go is required for the interop tests and ghz: install Go 1.26+"; exit 1; }
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "Node.js and npm are required for buf and the Node interop tests"; exit 1; }

# PostgreSQL's server binaries, for the tests that start their own cluster (tests/pg_support.py):
# Debian's packages, installed when missing (as root, with apt-get; the lists refreshed only
# when the install fails without it).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q postgresql || { apt-get update -q && apt-get install -y -q postgresql; }; \
	  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
	    || { echo "PostgreSQL is required for the tests: apt-get install -y postgresql"; exit 1; }; }

$(PROTOC_GEN_GO): | toolchains
	GOBIN=$(GOBIN_DIR) go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12

$(PROTOC_GEN_GO_GRPC): | toolchains
	GOBIN=$(GOBIN_DIR) go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

$(GHZ): | toolchains
	GOBIN=$(GOBIN_DIR) go install github.com/bojand/ghz/cmd/ghz@$(GHZ_VERSION)

# The Go interop program (not committed): the Go SDK's checks against Python servers, built
# on sdk/go through its go.mod's replace directive.
$(INTEROP_GO): $(wildcard tests/interop/go/*.go) tests/interop/go/go.mod tests/interop/go/go.sum \
  $(wildcard sdk/go/*/*.go) sdk/go/go.mod sdk/go/go.sum
	cd tests/interop/go && go build -o bin/interop .

# The Node interop checks run through the TypeScript SDK: npm links @llmworker/sdk to
# sdk/typescript (file:), whose own node_modules and dist/ the checks then use.
$(INTEROP_NODE): tests/interop/node/package.json tests/interop/node/package-lock.json $(SDK_TS_MODULES) | toolchains
	cd tests/interop/node && npm ci --no-audit --no-fund --loglevel=error

$(SDK_TS_DIST): $(SDK_TS_MODULES) sdk/typescript/tsconfig.json $(shell find sdk/typescript/src -name '*.ts')
	cd sdk/typescript && npx tsc -p tsconfig.json

interop: $(INTEROP_GO) $(INTEROP_NODE) $(SDK_TS_DIST)

# The Java and Rust clients of tests/polyglot (not committed; docs/java-rust.md): Maven from
# Maven Central, Cargo from crates.io; Java 17+, Maven and Rust must be on PATH. buf is for the
# test that runs the page's buf template.
polyglot: $(BUF)
	bash tests/polyglot/build.sh

# The Go SDK (sdk/go): its generated package must be what proto/ gives now (a wire change
# without `make sdk-go-gen` fails here), then go vet, and its tests with the race detector
# against the demo server (started by the tests with this venv's Python).
sdk-go: $(STAMP) $(BUF) $(PROTOC_GEN_GO) $(PROTOC_GEN_GO_GRPC)
	rm -rf build/sdk-go-check && mkdir -p build/sdk-go-check
	sed 's|out: sdk/go/llmworkerv1|out: build/sdk-go-check|' buf.gen.sdk-go.yaml > build/sdk-go-check.yaml
	$(BUF) generate --template build/sdk-go-check.yaml
	diff -r build/sdk-go-check sdk/go/llmworkerv1 || { echo "sdk/go/llmworkerv1 is stale: run make sdk-go-gen"; exit 1; }
	cd sdk/go && go vet ./... && test -z "$$(gofmt -l .)" && go test -race -count=1 ./...

sdk-go-gen: $(BUF) $(PROTOC_GEN_GO) $(PROTOC_GEN_GO_GRPC)
	$(BUF) generate --template buf.gen.sdk-go.yaml

# The TypeScript SDK (sdk/typescript): its generated code must be what proto/ gives now,
# then tsc --strict builds dist/, and its tests run against the demo server (the packed
# tarball is installed in an empty directory by tests/sdk, in `make unit`).
$(SDK_TS_MODULES): sdk/typescript/package.json sdk/typescript/package-lock.json | toolchains
	cd sdk/typescript && npm ci --no-audit --no-fund --loglevel=error

sdk-ts: $(STAMP) $(BUF) $(SDK_TS_MODULES)
	rm -rf build/sdk-ts-check && mkdir -p build/sdk-ts-check
	sed 's|out: sdk/typescript/src/gen|out: build/sdk-ts-check|' buf.gen.sdk-ts.yaml > build/sdk-ts-check.yaml
	$(BUF) generate --template build/sdk-ts-check.yaml
	diff -r build/sdk-ts-check sdk/typescript/src/gen || { echo "sdk/typescript/src/gen is stale: run make sdk-ts-gen"; exit 1; }
	cd sdk/typescript && rm -rf dist && npx tsc -p tsconfig.json && npm test

sdk-ts-gen: $(BUF) $(SDK_TS_MODULES)
	$(BUF) generate --template buf.gen.sdk-ts.yaml

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy
	$(BIN)/pyright

# The layers of docs/design.md (import-linter contracts in pyproject.toml): a new cycle or a
# reach into a private module fails with the import that does it.
imports: $(STAMP)
	$(BIN)/lint-imports

# The documentation site, in strict mode: a broken link or a page left out of the nav fails.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir build/site

unit: $(STAMP) postgres
	$(BIN)/pytest -q

# Regenerate the committed Python code from proto/ (protoc from grpcio-tools, mypy-protobuf).
proto: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m grpc_tools.protoc -Iproto \
	  --python_out=. --grpc_python_out=. --mypy_out=. --mypy_grpc_out=only_async:. $(PROTOS)

# Fail when the committed generated code is not what `make proto` produces.
proto-check: $(STAMP)
	rm -rf build/proto-check && mkdir -p build/proto-check
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m grpc_tools.protoc -Iproto \
	  --python_out=build/proto-check --grpc_python_out=build/proto-check \
	  --mypy_out=build/proto-check --mypy_grpc_out=only_async:build/proto-check $(PROTOS)
	diff -r -x __pycache__ -x __init__.py build/proto-check/llmworker/v1 llmworker/v1 \
	  || { echo "generated code in llmworker/v1 is stale: run 'make proto' and commit"; exit 1; }

buf-lint: $(BUF)
	$(BUF) lint
	BUF=$(BUF) bash .ci/buf-breaking

# ghz against the floor and the server, scenario by scenario (see BENCHMARKS.md).
bench: $(STAMP) $(GHZ) postgres
	$(BIN)/python -m bench.run
	$(BIN)/python -m bench.paused
	$(BIN)/python -m bench.mcp
	$(BIN)/python -m bench.mcp_hop
	$(BIN)/python -m bench.search

# Pause + resume round trips on each --state store (memory, SQLite, a throw-away PostgreSQL
# from tests/pg_support.py), then 10,000 held batches: store size, ListPausedBatches pages,
# start-up; written to bench/results/paused-DATE.json (see BENCHMARKS.md).
bench-paused: $(STAMP) postgres
	$(BIN)/python -m bench.paused

# tools/call echo over MCP: llmworker's --mcp-address, the MCP SDK's own MCPServer with the
# same tool, and llmworker's gRPC CallTool, alternating rounds; bench/results/mcp-DATE.json.
bench-mcp: $(STAMP)
	$(BIN)/python -m bench.mcp

# A call of an imported MCP tool: the SDK's client straight to an MCP server, against gRPC
# through llmworker (--mcp-server), 1 and 16 callers; bench/results/mcp-hop-DATE.json.
bench-mcp-hop: $(STAMP)
	$(BIN)/python -m bench.mcp_hop

# SearchTools' ranking in process at 1,000 and 10,000 tools: the first search (indexing),
# query p50/p99, a search after one tool was added; bench/results/search-DATE.json.
bench-search: $(STAMP)
	$(BIN)/python -m bench.search

# SIGTERM under ghz load (lost calls), a blocked tool at shutdown, huge invalid requests
# (stall, RSS), 10,000 registrations; written to bench/results/stress-DATE.json.
stress: $(STAMP) $(GHZ)
	$(BIN)/python -m bench.stress

# Three replicas behind nginx and client-side balancing: one SIGKILLed, one drained, the Go
# provider killed, each restarted, under ghz and Python load (~30 s; installs nginx from the
# Debian packages when missing, as root); written to bench/results/scale-DATE.json.
scale-test: $(STAMP) $(GHZ) $(INTEROP_GO)
	$(BIN)/python -m bench.scale

# The server with the demo tools on 127.0.0.1:$(PORT), until Ctrl-C.
run: $(STAMP)
	@echo "llmworker-server with the demo tools on 127.0.0.1:$(PORT). Try, from another shell:"
	@echo "  grpcurl -plaintext 127.0.0.1:$(PORT) list"
	@echo "  grpcurl -plaintext -d '{\"name\":\"echo\",\"input_json\":\"{\\\"text\\\":\\\"hi\\\"}\"}' 127.0.0.1:$(PORT) llmworker.v1.ToolService/CallTool"
	@echo "  grpcurl -plaintext 127.0.0.1:$(PORT) llmworker.v1.ToolService/ListDefinitionsSorted"
	@echo "  $(GHZ) --insecure --call llmworker.v1.ToolService/CallTool -d '{\"name\":\"echo\",\"input_json\":\"{\\\"text\\\":\\\"hi\\\"}\"}' -n 2000 -c 16 127.0.0.1:$(PORT)"
	@echo "  (grpcurl: go install github.com/fullstorydev/grpcurl/cmd/grpcurl@latest; ghz: make bench installs it)"
	$(BIN)/llmworker-server --demo --port $(PORT)

clean:
	rm -rf $(VENV) build .tools tools/node_modules tests/interop/go/bin \
	  tests/interop/node/node_modules sdk/typescript/node_modules sdk/typescript/dist \
  .mypy_cache .pytest_cache .ruff_cache
