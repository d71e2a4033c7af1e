# Two commands do all the set-up on a fresh machine: `make run` (the offline
# quickstart) and `make test` (every test). Both fetch Go modules as needed.
GO       ?= go
BIN      := bin/pipeline
# The build with the Temporal backend (--backend temporal, pipeline worker):
# pipeline runs it, found beside itself or on PATH, so that no local command
# pays the start-up of the Temporal SDK, gRPC and protobuf.
FLEET_BIN := bin/pipeline-temporal
PKGS     := ./...
FUZZTIME ?= 20s
# The tests that run the real agent CLIs, xmllint and the Temporal dev server
# carry these build tags: go test ./... runs without them on a machine with Go
# alone; make test installs the programs and sets the tags. The temporal tag
# also builds the Temporal backend into cmd/pipeline (pipeline-temporal), so
# that vet and staticcheck with these tags see it; LOCAL_TAGS, without it,
# are for the files of the local build that hand the backend over.
TAGS     := agentclis,xmllint,temporal
LOCAL_TAGS := agentclis,xmllint
# The schema generator is a module of its own (its dependencies stay out of
# ours); make test and make lint run its test and checks there.
GEN      := schemas/gen

.PHONY: all build install run test bench lint fuzz schema clean agent-clis xmllint temporal soak man

all: build

# Static binaries: no libc to load at start-up (pflag pulls in net, which
# would otherwise link cgo). Tests keep cgo: the race detector needs it.
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/pipeline
	CGO_ENABLED=0 $(GO) build -tags temporal -o $(FLEET_BIN) ./cmd/pipeline

# The same two, into $(go env GOBIN), or the first of $(go env GOPATH)/bin,
# side by side.
install:
	CGO_ENABLED=0 $(GO) install ./cmd/pipeline
	@dir=$$($(GO) env GOBIN); [ -n "$$dir" ] || dir=$$($(GO) env GOPATH | cut -d: -f1)/bin; \
	echo "CGO_ENABLED=0 $(GO) build -tags temporal -o $$dir/pipeline-temporal ./cmd/pipeline"; \
	CGO_ENABLED=0 $(GO) build -tags temporal -o "$$dir/pipeline-temporal" ./cmd/pipeline

# The offline quickstart, in a fresh copy under bin/ (a git repository of
# its own, so that it keeps checkpoints) so that it can run again: a
# scripted agent works on the design, stops at a checkpoint (the session
# pauses, exit 3), and pipeline resume carries it through the
# implementation and the review.
QUICKSTART := bin/quickstart
run: build
	@scripts/quickstart.sh $(BIN) $(QUICKSTART)

# Every test, with the race detector; fuzz seed corpora run as ordinary
# tests here. lint runs first so a vet or gofmt problem fails fast. The
# adapters' tests (-tags $(TAGS)) run the real agent CLIs, installed once
# from npm into .cache/npm by scripts/install-agent-clis.sh. The schema
# generator's test checks that schemas/*.json are fresh. The JUnit
# report's test validates it with xmllint, installed (Debian's
# libxml2-utils, with apt-get) when it is missing. The tests of the Temporal
# backend (-tags temporal) start a Temporal dev server, built once from the Go
# module proxy into .cache/bin by scripts/install-temporal.sh (about 6
# minutes of CPU the first time); they build pipeline-temporal beside the
# pipeline they test, which runs it.
AGENT_CLIS := $(CURDIR)/.cache/npm/node_modules/.bin
# The version is the one pinned in scripts/install-temporal.sh.
TEMPORAL_CLI := $(CURDIR)/.cache/bin/temporal-1.5.1/temporal
test: lint agent-clis xmllint temporal
	PIPELINE_AGENT_CLIS=$(AGENT_CLIS) PIPELINE_TEMPORAL_CLI=$(TEMPORAL_CLI) \
		$(GO) test -race -count=1 -tags $(TAGS) $(PKGS)
	$(GO) -C $(GEN) test -race -count=1 ./...

agent-clis:
	./scripts/install-agent-clis.sh

xmllint:
	./scripts/install-xmllint.sh

temporal:
	GO=$(GO) ./scripts/install-temporal.sh

# Go benchmarks, then the side-by-side figures of cmd/bench: throughput
# against tee, checkpoint-to-interrupt latency; then start-up, on the
# project's disk (pipeline --version beside a binary of cobra alone,
# pipeline run of one true step beside /bin/true); then
# pipeline watch (spec written to resumed step, beside go-task's
# task --watch, built once into .cache/bin; idle cost), on the project's disk;
# then pipeline search (indexing 1 GB of transcripts, queries over it), on
# the project's disk too; then the token account of resume contexts and
# compaction (the quickstart, and a long session of the real Claude Code
# CLI against the mock); then the Temporal fleet (100 short pipelines at
# once on a dev server and two workers, against the local engine 8 at a
# time).
bench: build agent-clis temporal
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	$(GO) run ./cmd/bench -pipeline $(BIN)
	$(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -pipe
	$(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -startup
	$(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -watch
	$(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -search
	PIPELINE_AGENT_CLIS=$(AGENT_CLIS) $(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -context
	PIPELINE_TEMPORAL_CLI=$(TEMPORAL_CLI) $(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -fleet

# gofmt; go.mod and go.sum as go mod tidy leaves them; go vet with and
# without the tags of the tests that run real programs; for macOS, a
# cross-compiled build and go vet (test files included); staticcheck with
# the tags: it then sees every file,
# and does not call unused a helper that only the tagged tests use. The
# same for the schema generator's module.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CURDIR)/.cache/bin/staticcheck
lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) -C $(GEN) mod tidy -diff
	$(GO) vet $(PKGS)
	$(GO) vet -tags $(TAGS) $(PKGS)
	$(GO) vet -tags man ./cmd/pipeline
	GOOS=darwin CGO_ENABLED=0 $(GO) build $(PKGS)
	GOOS=darwin $(GO) vet -tags $(TAGS) $(PKGS)
	$(GO) -C $(GEN) vet ./...
	$(STATICCHECK) -tags $(TAGS) $(PKGS)
	$(STATICCHECK) -tags $(LOCAL_TAGS) ./cmd/pipeline
	cd $(GEN) && $(STATICCHECK) ./...

# staticcheck, pinned, built once into .cache/bin (gitignored); a version
# bump above builds it again.
$(STATICCHECK): Makefile
	@if ! "$@" -version 2>/dev/null | grep -qF '($(STATICCHECK_VERSION:v%=%))'; then \
		echo "installing staticcheck $(STATICCHECK_VERSION) into .cache/bin (once)"; \
		GOBIN=$(CURDIR)/.cache/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); \
	fi
	@touch "$@"

# kill -9 of the runner at random instants, a resume after each kill,
# every file checked: make soak KILLS=1000 (minutes; not part of make test).
KILLS ?= 1000
soak: build
	$(GO) run ./cmd/soak -pipeline $(BIN) -kills $(KILLS)

# Longer fuzzing of the parsers, by hand: make fuzz FUZZTIME=5m
fuzz:
	$(GO) test ./engine/spec -run '^$$' -fuzz FuzzParsePipeline -fuzztime $(FUZZTIME)
	$(GO) test ./engine/spec -run '^$$' -fuzz FuzzParseSpec -fuzztime $(FUZZTIME)
	$(GO) test ./engine/search -run '^$$' -fuzz FuzzQuery -fuzztime $(FUZZTIME)
	$(GO) test ./engine/search -run '^$$' -fuzz FuzzLineText -fuzztime $(FUZZTIME)

schema:
	$(GO) generate ./schemas

# The man pages of pipeline and every command, into bin/man (MANDIR=...):
# a build with the man tag holds cobra's generator; the binary people run
# does not. With the temporal tag, pipeline worker's page is the worker's.
MANDIR ?= bin/man
man:
	$(GO) run -tags man,temporal ./cmd/pipeline man $(MANDIR)

clean:
	rm -rf bin
