# Entry points for developers and CI. scripts/ builds, installs and runs what the project needs;
# tools/ holds the quality tools (chaos, failover, stop-at-start, the bad-input sweep); bench/ the benchmarks.

SWIFT ?= swift
# Extra arguments for `swift test`, e.g. make test SWIFT_TEST_FLAGS='--filter FetchTests'
SWIFT_TEST_FLAGS ?=

.PHONY: build release test demo chaos failover sweep format lint clean fuzz sql

build:
	$(SWIFT) build

release:
	$(SWIFT) build -c release --product thumbd

# Build first, outside with-postgres.sh, so the database is not kept running through a
# long compile; then the tests run against their own throwaway PostgreSQL and S3 server (moto). One test at a time
# (--no-parallel): the queue tests measure leases, heartbeats and wake-ups in real time and spawn
# worker processes, and on a 2-core machine parallel suites starved each other for seconds.
test:
	scripts/install-deps.sh
	$(SWIFT) build --build-tests
	scripts/with-tmpdir.sh scripts/with-postgres.sh scripts/with-s3.sh scripts/failures-last.sh $(SWIFT) test --skip-build --no-parallel $(SWIFT_TEST_FLAGS)

demo:
	scripts/demo.sh

# A fleet of workers, each in a network namespace of its own, under kills, freezes, cut links, a lossy
# link and PostgreSQL restarts; then the invariants (docs/reliability.md). Root only.
# e.g. make chaos CHAOS_ARGS='--jobs 500 --seconds 120 --seed 7'
CHAOS_ARGS ?=
chaos: release
	scripts/install-deps.sh
	scripts/sample-photos.sh demo/originals 20
	python3 tools/chaos.py --thumbd "$$($(SWIFT) build -c release --show-bin-path)/thumbd" \
	  --photos demo/originals $(CHAOS_ARGS)

# A failover whose primary's host vanishes (no RST, no FIN) under a working fleet: a primary and a
# synchronous standby in network namespaces, two workers with a multi-host URL, the standby promoted 3 s
# after the cut; the time from the promotion to the first job finished on it, and the invariants
# (docs/operations.md, "Failover"). Root only. e.g. make failover FAILOVER_ARGS='--runs 5'
FAILOVER_ARGS ?=
failover: release
	scripts/install-deps.sh
	scripts/sample-photos.sh demo/originals 20
	python3 tools/failover.py --thumbd "$$($(SWIFT) build -c release --show-bin-path)/thumbd" \
	  --photos demo/originals $(FAILOVER_ARGS)

# The bad-input sweep: mutations of valid photos of every input format (and ../shared/corpus/invalid
# when it is there) through real workers; every file must end as a classified error or a correct
# thumbnail (docs/reliability.md). Findings are kept in /tmp/sweep-findings.
# e.g. make sweep SWEEP_ARGS='--mutations 10000 --seed 3'
SWEEP_ARGS ?=
sweep: release
	scripts/install-deps.sh
	python3 tools/sweep.py --thumbd "$$($(SWIFT) build -c release --show-bin-path)/thumbd" \
	  --out-json /tmp/sweep.json $(SWEEP_ARGS)

format:
	$(SWIFT) format -i -r Sources Tests Package.swift

lint:
	$(SWIFT) format lint -r --strict Sources Tests

# Keeps demo/originals: re-downloading the wallpaper packages is the slow part of the demo.
clean:
	rm -rf .build demo/thumbnails demo/worker.log demo/index.html

# Fuzzes ThumbCore's binary parsers with libFuzzer, then merges what it found into the kept corpus
# (docs/fuzzing.md). Never touches .build: it builds under ${TMPDIR:-/tmp}/thumbd-fuzz.
# e.g. make fuzz FUZZ_SECONDS=600 FUZZ_TARGET=exif
fuzz:
	fuzz/run.sh $(or $(FUZZ_SECONDS),300) $(or $(FUZZ_TARGET),all)

# Regenerates Sources/Queue/Generated/Statements.swift from Sources/Queue/SQL/*.sql (commit both).
sql:
	python3 scripts/gen-sql.py
