# Two commands do all the set-up on a fresh machine: `make run` (the offline
# quickstart) and `make test` (every test). Both fetch Go modules as needed.
GO       ?= go
BIN      := bin/pipeline
# The full build (-tags temporal): the Temporal backend (--backend temporal,
# pipeline worker) and the commands that are servers or need heavy
# libraries (mcp, search, ui). pipeline runs it for them, found beside
# itself or on PATH, so that no local command pays the start-up of the
# Temporal SDK, gRPC, protobuf, the MCP SDK and SQLite.
FLEET_BIN := bin/pipeline-temporal
PKGS     := ./...
FUZZTIME ?= 20s
# The tests that run the real agent CLIs, xmllint and the Temporal dev server
# carry these build tags: go test ./... runs without them on a machine with Go
# alone; make test installs the programs and sets the tags. The temporal tag
# also builds the Temporal backend into cmd/pipeline (pipeline-temporal), so
# that vet and staticcheck with these tags see it; LOCAL_TAGS, without it,
# are for the files of the local build that hand the backend over.
TAGS     := agentclis,xmllint,temporal,browser,jaeger
LOCAL_TAGS := agentclis,xmllint
# The telemetry tests against a real Jaeger (-tags jaeger) start the
# Jaeger built once from the module proxy into .cache/bin by
# scripts/install-jaeger.sh (about 6 minutes of CPU the first time).
# The dashboard's browser tests (internal/ui, -tags browser) drive Debian's
# Chromium, installed by scripts/install-chromium.sh when it is missing.
# The schema generator is a module of its own (its dependencies stay out of
# ours); make test and make lint run its test and checks there.
GEN      := schemas/gen

.PHONY: all build install run test bench lint fuzz schema clean agent-clis xmllint temporal jaeger chromium soak man

all: build

# Static binaries: no libc to load at start-up (pflag pulls in net, which
# would otherwise link cgo). Tests keep cgo: the race detector needs it.
# The lean pipeline is built with Go's classic garbage collector where the
# toolchain still offers it (LEAN_GC): a local command mostly ends before
# any collection, and the Green Tea collector (Go 1.26's default) sets up
# mark bits at the end of every span of small objects as it is first
# allocated in, faulting in a page more of each: 40-45 of the ~520 faults
# of pipeline run of one true step (README, Start-up). pipeline-temporal,
# the servers' build, keeps the default.
build:
	CGO_ENABLED=0 $(LEAN_GC) $(GO) build -o $(BIN) ./cmd/pipeline && $(call settle,$(BIN))
	CGO_ENABLED=0 $(GO) build -tags temporal -o $(FLEET_BIN) ./cmd/pipeline && $(call settle,$(FLEET_BIN))

# The same two, into $(go env GOBIN), or the first of $(go env GOPATH)/bin,
# side by side.
install:
	CGO_ENABLED=0 $(LEAN_GC) $(GO) install ./cmd/pipeline
	@dir=$$($(GO) env GOBIN); [ -n "$$dir" ] || dir=$$($(GO) env GOPATH | cut -d: -f1)/bin; \
	$(call settle,"$$dir/pipeline") && \
	echo "CGO_ENABLED=0 $(GO) build -tags temporal -o $$dir/pipeline-temporal ./cmd/pipeline" && \
	CGO_ENABLED=0 $(GO) build -tags temporal -o "$$dir/pipeline-temporal" ./cmd/pipeline && \
	$(call settle,"$$dir/pipeline-temporal")

# LEAN_GC is GOEXPERIMENT= with the experiments already asked for and
# nogreenteagc, when this go accepts it (go env fails on an experiment it
# does not know); nothing otherwise.
LEAN_GC := $(shell x='$(GOEXPERIMENT)'; x="$${x:+$$x,}nogreenteagc"; \
	GOEXPERIMENT="$$x" $(GO) env GOEXPERIMENT >/dev/null 2>&1 && echo "GOEXPERIMENT=$$x")

# settle writes a binary just linked again, with write(2)s of 8 MiB, and
# renames the copy over it: the page cache then holds its pages in 2 MiB
# folios, which exec maps a PMD at a time, where the linker's writes
# (through a memory map: go build, go install) leave 4 KiB folios, mapped
# 16 at a fault and each counted in and out (cp and install(1) leave
# 64 KiB ones). 1.1 ms of CPU off pipeline --version, 1.5 of a one-step run
# here, until the cache lets the pages go (README, Start-up). Linux only.
# The copy's name is the shell's own, so that two makes in one folder do
# not write one copy; a copy that failed is removed.
settle = if [ "$$(uname -s)" = Linux ]; then dd if=$(1) of=$(1).settle$$$$ bs=8M status=none && \
	chmod 755 $(1).settle$$$$ && mv -f $(1).settle$$$$ $(1) || { rm -f $(1).settle$$$$; exit 1; }; fi

# The offline quickstart, in a fresh copy under bin/ (a git repository of
# its own, so that it keeps checkpoints) so that it can run again: a
# scripted agent works on the design, stops at a checkpoint (the session
# pauses, exit 3), and pipeline resume carries it through the
# implementation and the review.
QUICKSTART := bin/quickstart
run: build
	@scripts/quickstart.sh $(BIN) $(QUICKSTART)

# Every check and every test, with the race detector; fuzz seed corpora run
# as ordinary tests here. The adapters' tests (-tags $(TAGS)) run the real
# agent CLIs, installed once from npm into .cache/npm by
# scripts/install-agent-clis.sh. The schema generator's test checks that
# schemas/*.json are fresh. The JUnit report's test validates it with
# xmllint, installed (Debian's libxml2-utils, with apt-get) when it is
# missing. The tests of the Temporal backend (-tags temporal) start a
# Temporal dev server, built once from the Go module proxy into .cache/bin by
# scripts/install-temporal.sh (about 6 minutes of CPU the first time); they
# build pipeline-temporal beside the pipeline they test, which runs it.
#
# Each stage prints a line as it starts and one as it ends, with its time
# and the time since make test started (scripts/stage.sh). lint-src comes
# first (seconds: gofmt, go mod tidy), so that a formatting problem fails
# before anything is built. Then the rest runs side by side (a make -j of
# its own): the installs, the lint that compiles, and the tests, each as
# soon as what it runs is there. (The lint is not niced: on a shared
# machine, or beside busy loops, a niced stage waits for everyone else.)
# cmd/pipeline's tests, the longest, run as three processes of one test
# binary: the tests of its files under the tag agentclis once the agent CLIs
# are installed, those under temporal once the dev server is, and the rest
# at once. The README says how long it takes.
AGENT_CLIS := $(CURDIR)/.cache/npm/node_modules/.bin
# The version is the one pinned in scripts/install-temporal.sh.
TEMPORAL_CLI := $(CURDIR)/.cache/bin/temporal-1.5.1/temporal
# The version is the one pinned in scripts/install-jaeger.sh.
JAEGER := $(CURDIR)/.cache/bin/jaeger-1.76.0/jaeger
STAGE := $(CURDIR)/scripts/stage.sh
# When make started (a sub-make keeps its parent's): each stage's line says
# how long after it.
ifndef STAGE_T0
STAGE_T0 := $(shell date +%s)
endif
export STAGE_T0
# A backstop for a whole test binary (go test's default is 10 minutes,
# which cmd/pipeline's tests passed on a busy machine): each wait inside a
# test ends at testwait.Failsafe, 3 minutes, and says what it awaited.
TEST_TIMEOUT := 30m
TESTBIN := $(CURDIR)/bin/test
# The packages whose tests run an installed program; the others' tests
# start at once.
TOOL_PKGS := cmd/pipeline steps internal/temporaltest engine/temporal internal/ui internal/browsertest internal/jaegertest
# cmd/pipeline's tests in its files under the build tag $(1), as a pattern
# of test names for -test.run and -test.skip.
tests_under = ^($(shell sed -n 's/^func \(Test[A-Za-z0-9_]*\).*/\1/p' $$(grep -l '^//go:build $(1)$$' cmd/pipeline/*_test.go) | paste -sd'|' -))$$
PIPELINE_TESTS = cd cmd/pipeline && $(STAGE) "tests: cmd/pipeline, $(1)" env PIPELINE_TEST_BINARY=$(TESTBIN)/pipeline \
	PIPELINE_AGENT_CLIS=$(AGENT_CLIS) PIPELINE_TEMPORAL_CLI=$(TEMPORAL_CLI) PIPELINE_JAEGER=$(JAEGER) \
	$(TESTBIN)/pipeline.test -test.timeout=$(TEST_TIMEOUT)

.PHONY: lint-src vet vet-tags vet-man vet-gen vet-darwin staticcheck test-stages test-build \
	test-build-race test-build-pipeline test-packages test-pipeline test-pipeline-agents \
	test-pipeline-fleet test-pipeline-jaeger test-steps test-temporaltest test-engine-temporal test-gen test-ui

test:
	@$(STAGE) "make test" sh -c '$(MAKE) --no-print-directory lint-src && $(MAKE) --no-print-directory -j8 test-stages'

test-stages: vet vet-darwin staticcheck test-packages test-pipeline test-pipeline-agents \
	test-pipeline-fleet test-pipeline-jaeger test-steps test-temporaltest test-engine-temporal test-gen test-ui

# cmd/pipeline's test binary, built once for its three runs; and the
# pipeline its tests run (PIPELINE_TEST_BINARY; under go test alone,
# TestMain builds it). Two go commands that compile the same packages at
# once compile them twice: the pipeline is built after vet, which compiled
# what it needs, and the other go commands of the tests after the test
# binary (-race).
test-build: test-build-race test-build-pipeline

test-build-race:
	@$(STAGE) "tests: build cmd/pipeline's test binary (-race)" \
		$(GO) test -race -c -tags $(TAGS) -o $(TESTBIN)/pipeline.test ./cmd/pipeline

test-build-pipeline: | vet-tags
	@$(STAGE) "tests: build the pipeline the tests run" $(GO) build -o $(TESTBIN)/pipeline ./cmd/pipeline
	@$(STAGE) "tests: build pipeline-temporal beside it" $(GO) build -tags temporal -o $(TESTBIN)/pipeline-temporal ./cmd/pipeline

test-packages: test-build-race
	@$(STAGE) "tests: go test -race, the packages that run no installed program" sh -c '\
		$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -tags $(TAGS) \
		$$($(GO) list ./... | grep -v $(TOOL_PKGS:%=-e /%$$))'

test-pipeline: test-build xmllint
	@$(call PIPELINE_TESTS,all but the agent CLIs' and the fleet's and Jaeger's) '-test.skip=$(call tests_under,agentclis)|$(call tests_under,temporal)|$(call tests_under,jaeger)'

test-pipeline-agents: test-build xmllint agent-clis
	@$(call PIPELINE_TESTS,the agent CLIs (-tags agentclis)) '-test.run=$(call tests_under,agentclis)'

test-pipeline-fleet: test-build temporal
	@$(call PIPELINE_TESTS,the fleet on the dev server (-tags temporal)) '-test.run=$(call tests_under,temporal)'

test-pipeline-jaeger: test-build xmllint jaeger chromium
	@$(call PIPELINE_TESTS,telemetry into Jaeger (-tags jaeger)) '-test.run=$(call tests_under,jaeger)'

test-steps: test-build-race agent-clis
	@$(STAGE) "tests: steps (the agent CLIs)" env PIPELINE_AGENT_CLIS=$(AGENT_CLIS) \
		$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -tags $(TAGS) ./steps

test-temporaltest: test-build-race temporal
	@$(STAGE) "tests: internal/temporaltest (the dev server)" env PIPELINE_TEMPORAL_CLI=$(TEMPORAL_CLI) \
		$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -tags $(TAGS) ./internal/temporaltest

test-engine-temporal: test-build-race temporal
	@$(STAGE) "tests: engine/temporal (the workflow, on the dev server too)" env PIPELINE_TEMPORAL_CLI=$(TEMPORAL_CLI) \
		$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -tags $(TAGS) ./engine/temporal

# The dashboard: its API against the pipeline the tests run, and its pages
# in headless Chromium; each page's screenshot goes to bin/ui-screenshots.
test-ui: test-build chromium
	@$(STAGE) "tests: internal/ui (the dashboard, in Chromium) and internal/browsertest" env PIPELINE_TEST_BINARY=$(TESTBIN)/pipeline \
		$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -tags $(TAGS) ./internal/ui ./internal/browsertest

test-gen: | test-build-race
	@$(STAGE) "tests: schemas/gen (the schemas are fresh)" $(GO) -C $(GEN) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

agent-clis:
	@$(STAGE) "install: agent CLIs (npm, once)" ./scripts/install-agent-clis.sh

xmllint:
	@$(STAGE) "install: xmllint (apt-get, when missing)" ./scripts/install-xmllint.sh

chromium:
	@$(STAGE) "install: Chromium (apt-get, when missing)" ./scripts/install-chromium.sh

temporal:
	@$(STAGE) "install: Temporal dev server (once)" env GO=$(GO) ./scripts/install-temporal.sh

jaeger:
	@$(STAGE) "install: Jaeger (once)" env GO=$(GO) ./scripts/install-jaeger.sh

# Every figure of the README's Figures table, each printed beside its peer
# measured in the same run and the machine's load average (a figure taken
# under load says so): the Go benchmarks (the load before and after them),
# then cmd/bench, one line a mode. Its first two lines measure throughput
# against tee and the checkpoint-to-interrupt latency beside bare monitors
# (python3 when present, and one in Go): files in memory (/dev/shm) with
# the shown output to /dev/null, then on the project's disk with the shown
# output to a pipe. Then, on the project's disk: start-up (pipeline
# --version beside a binary of cobra alone, pipeline run of one true step
# beside /bin/true; a process's exit by the threads and memory it holds,
# and what pipeline run and --version hold at theirs); pipeline watch
# (spec written to resumed step, beside go-task's task --watch, built
# once into .cache/bin; idle cost); pipeline
# search (indexing 1 GB of transcripts, queries over it, beside grep -r);
# the dashboard (10,000 sessions: the sessions page in Chromium, a change
# reaching an open page);
# the token account of resume contexts and compaction (the quickstart, and
# a long session of the real Claude Code CLI against the mock); the
# Temporal fleet (100 short pipelines at once on a dev server and two
# workers, against the local engine 8 at a time); the cost of telemetry
# (start-up, one-step runs and throughput with the OTLP export off and on).
# A new mode is a file of its own under cmd/bench, its flag in main.go's
# dispatch, and its line here.
LOADAVG = echo "load average: $$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
bench: build agent-clis temporal chromium
	@echo "make bench: $$(nproc) cores"; $(LOADAVG)
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	@$(LOADAVG)
	$(GO) run ./cmd/bench -pipeline $(BIN)
	$(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -pipe
	$(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -startup
	$(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -exitcost -startup-runs 300
	$(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -run-store -startup-runs 100
	$(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -status
	$(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -sessions
	$(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -watch
	$(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -search
	$(GO) run ./cmd/bench -pipeline $(BIN) -ui
	PIPELINE_AGENT_CLIS=$(AGENT_CLIS) $(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -context
	PIPELINE_TEMPORAL_CLI=$(TEMPORAL_CLI) $(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -fleet
	$(GO) run ./cmd/bench -pipeline $(BIN) -dir $(CURDIR)/bin -telemetry

# gofmt; go.mod and go.sum as go mod tidy leaves them; go vet once per set
# of build tags; for macOS, go vet (test files included) and a
# cross-compiled build of the packages that have files for it; staticcheck
# with the tags: it then sees every file, and does not call unused a helper
# that only the tagged tests use. The same for the schema generator's
# module.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CURDIR)/.cache/bin/staticcheck
# The packages with a file that Linux never compiles (//go:build !linux,
# darwin, ...: the portable fallbacks of _linux.go files): the vet on Linux
# does not see it. Every other package compiles on macOS what it compiles
# on Linux, less its _linux files: keep what a portable file calls out of
# those.
DARWIN_PKGS = $(sort $(patsubst %/,./%,$(dir $(shell grep -lE '^//go:build .*(!linux|darwin)' \
	$$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')))))

lint: lint-src vet vet-darwin staticcheck

lint-src:
	@$(STAGE) "disk: free space for the build cache and temporary files" scripts/diskcheck.sh 2 12
	@$(STAGE) "lint: gofmt" sh -c 'out=$$(gofmt -l $$(git ls-files "*.go" 2>/dev/null || find . -name "*.go")); \
		if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi'
	@$(STAGE) "lint: go mod tidy -diff" sh -c '$(GO) mod tidy -diff && $(GO) -C $(GEN) mod tidy -diff'

# -tags $(TAGS) sees every file but those under a tag of their own (man.go)
# or under the absence of one (//go:build !xmllint): the second vet, with
# the tag man and without the others, sees those (the only ones today).
vet: vet-tags vet-man vet-gen

vet-tags:
	@$(STAGE) "lint: go vet -tags $(TAGS)" $(GO) vet -tags $(TAGS) ./...

vet-man: | vet-tags
	@$(STAGE) "lint: go vet -tags man ./cmd/pipeline" $(GO) vet -tags man ./cmd/pipeline

vet-gen:
	@$(STAGE) "lint: go vet, schemas/gen" $(GO) -C $(GEN) vet ./...

vet-darwin:
	@$(STAGE) "lint: macOS, go vet and build of $(DARWIN_PKGS)" sh -c '\
		GOOS=darwin $(GO) vet -tags $(TAGS) $(DARWIN_PKGS) && \
		GOOS=darwin CGO_ENABLED=0 $(GO) build $(DARWIN_PKGS)'

# After vet, whose compiled packages it reads (go list -export).
staticcheck: $(STATICCHECK) | vet-tags
	@$(STAGE) "lint: staticcheck" $(STATICCHECK) -tags $(TAGS) ./...
	@$(STAGE) "lint: staticcheck, the lean pipeline" $(STATICCHECK) -tags $(LOCAL_TAGS) ./cmd/pipeline
	@$(STAGE) "lint: staticcheck, schemas/gen" sh -c 'cd $(GEN) && $(STATICCHECK) ./...'

# staticcheck, pinned, built once into .cache/bin (gitignored); a version
# bump above builds it again.
$(STATICCHECK): Makefile
	@if ! "$@" -version 2>/dev/null | grep -qF '($(STATICCHECK_VERSION:v%=%))'; then \
		$(STAGE) "install: staticcheck $(STATICCHECK_VERSION) into .cache/bin (once)" \
			env GOBIN=$(CURDIR)/.cache/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); \
	fi
	@touch "$@"

# kill -9 of the runner at random instants, a resume after each kill,
# every file checked: make soak KILLS=1000 (minutes; not part of make test).
KILLS ?= 1000
soak: build
	$(GO) run ./cmd/soak -pipeline $(BIN) -kills $(KILLS)

# Longer fuzzing of the parsers and the tokenizer, by hand: make fuzz FUZZTIME=5m
fuzz:
	$(GO) test ./engine/spec -run '^$$' -fuzz FuzzParsePipeline -fuzztime $(FUZZTIME)
	$(GO) test ./engine/spec -run '^$$' -fuzz FuzzParseSpec -fuzztime $(FUZZTIME)
	$(GO) test ./engine/search -run '^$$' -fuzz FuzzQuery -fuzztime $(FUZZTIME)
	$(GO) test ./engine/search -run '^$$' -fuzz FuzzLineText -fuzztime $(FUZZTIME)
	$(GO) test ./internal/tokens -run '^$$' -fuzz FuzzTokensAreTheLibrarys -fuzztime $(FUZZTIME)

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
