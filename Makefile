# Two commands do all the set-up on a fresh machine: `make run` (the offline
# quickstart) and `make test` (every test). Both fetch Go modules as needed.
GO       ?= go
BIN      := bin/pipeline
PKGS     := ./...
FUZZTIME ?= 20s

.PHONY: all build run test bench lint fuzz schema clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/pipeline

# The offline quickstart. Until the engine lands it checks the quickstart
# and shows its plan.
run: build
	$(BIN) validate examples/quickstart/phases.yaml
	$(BIN) plan examples/quickstart/phases.yaml

# Every test, with the race detector; fuzz seed corpora run as ordinary
# tests here. lint runs first so a vet or gofmt problem fails fast.
test: lint
	$(GO) test -race -count=1 $(PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# Longer fuzzing of the parsers, by hand: make fuzz FUZZTIME=5m
fuzz:
	$(GO) test ./engine/spec -run '^$$' -fuzz FuzzParsePipeline -fuzztime $(FUZZTIME)
	$(GO) test ./engine/spec -run '^$$' -fuzz FuzzParseSpec -fuzztime $(FUZZTIME)

schema:
	$(GO) generate ./schemas

clean:
	rm -rf bin
