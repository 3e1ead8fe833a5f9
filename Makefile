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

peers:
	cd peers && npm ci --ignore-scripts --no-audit --no-fund

bench: build
	scripts/bench.sh

fuzz:
	scripts/fuzz.sh

demo: build
	scripts/demo.sh

clean:
	rm -rf bin
