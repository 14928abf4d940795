#!/usr/bin/env python3
"""The bad-input sweep (issue 16): broken photos of every input format through real thumbd workers.

    tools/sweep.py --thumbd BIN --out-json FILE [--mutations 5000] [--seeds DIR...] [--seed S]
                     [--workers 2] [--job-timeout 60] [--timeout SECONDS] [--budget 256MiB]
                     [--max-pixels 100000000] [--shared DIR|none] [--findings DIR] [--keep DIR]

Seeds are valid photos of every format thumbd reads: JPEG (baseline, progressive, greyscale with
restart markers, camera files with EXIF), PNG (RGB, RGBA with eXIf and iCCP, palette with tRNS,
16-bit, interlaced grey, 1-bit), WebP (lossy, lossless, extended with alpha, EXIF and ICCP, animated),
HEIC and AVIF (with and without alpha and EXIF). They come from ../shared/corpus when it is there
(orientation/, exif/, heic/) and are otherwise made here, small: JPEG, PNG and WebP by
`thumbd thumbnail` with a spec of our own and by a PNG writer in sweeplib/seeds.py, lossless and alpha WebP by
libwebp, HEIC and AVIF by libheif (both through ctypes; a format whose library or encoder is missing is
skipped, and the summary says so). --seeds adds the photos of other folders (format sniffed).

Each mutated file comes from one seed and one mutator, chosen deterministically from --seed; the
mutator and its parameters are recorded with the file. Mutators: truncation (inside headers, at marker,
chunk and box boundaries, mid-scan, near the end) and byte flips (1, 4 or 32) for every format, and per
format: JPEG SOF sizes 0/65535, precision, components and sampling, DHT and DQT lengths and tables, SOS
component counts and spectral bytes, process markers (lossless, arithmetic), removed EOI, duplicated
SOI, markers in the scan, restart intervals, a flood of repeated scans, bogus APP1/EXIF (huge IFD counts,
offsets outside, loops, overflowing counts) and bogus APP2/ICC (sequence numbers, chunk lengths, huge
sizes and tag tables); PNG chunk lengths, IHDR sizes and fields, CRCs, IDAT truncated, corrupted (with
valid CRCs: zlib header, adler, filter bytes) or re-split, palettes, ancillary bombs (iCCP, zTXt),
bogus eXIf and iCCP, unknown critical chunks; WebP RIFF and chunk sizes, VP8X canvas and flags, VP8
and VP8L frame sizes, FourCCs, ALPH headers, bogus EXIF and ICCP, animations with bad frames;
HEIF/AVIF box sizes (0, 1 with a huge largesize, past the file, under 8), ftyp brands, ispe sizes,
iloc offsets, extents and counts, pitm, ipma, iinf, iref, hvcC/av1C, irot/clap/colr/pixi, grids and
the coded data's NAL and OBU lengths.

Every mutated file, and every file of ../shared/corpus/invalid, is served by Tests/Support/origin.py
and enqueued once (one INSERT ... SELECT thumbs.enqueue(...) FROM unnest(...)) on a throwaway
PostgreSQL (scripts/pg-temp.sh); then --workers `thumbd worker --drain --concurrency 1` run until the
queue is empty. A worker that exits by a signal or with a non-zero code, or exits 0 while jobs are due,
is a crash: its running job is cancelled (so it does not crash every worker in turn), its file kept as
a finding, and a new worker started. A job running longer than --job-timeout is a hang: its worker is
killed, the job cancelled and kept as a finding. The whole run has --timeout; a job still queued or
running at the end is a hang too. Worker log lines with "fatal" or "crash" count as crashes.

Then each check is printed with its figure:

  every job terminal (no job queued, running or cancelled for a hang);
  crashes = 0 (worker exits, log lines);
  hangs = 0;
  every failure permanent (no fetch_failed, timeout, internal_error, lease_expired, also not in an
  earlier attempt) and classified as an image error (corrupt_image, unsupported_format, too_large,
  over_memory_budget);
  every succeeded job has its 4 variant rows, whose files exist, hash to their key and decode with
  djpeg at their row's size;

and the files by format and mutator, the outcomes (by format and by mutator), the longest job and the
p99 (finished_at - started_at), the wall time, and each invalid/ file with its outcome. Findings (a
crash's, a hang's or a transient failure's file, with its mutator, the log lines and a
`thumbd thumbnail` reproduction) go to --findings. Exit 0 when there are no crashes, no hangs and every
failure is permanent; --out-json writes every figure and one record per file.

This file is the entry point (the arguments, main); the code is in tools/sweeplib/, one module per
concern (seeds, each format's parsers and mutators, the run, the checks; sweeplib/__init__.py lists them).
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

from sweeplib.checks import report
from sweeplib.common import REPO, log, parse_size, run
from sweeplib.mutate import make_mutations
from sweeplib.run import Database, Origin, Run
from sweeplib.seeds import make_seeds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--thumbd", required=True)
    parser.add_argument("--out-json", required=True)
    parser.add_argument("--mutations", type=int, default=5000)
    parser.add_argument("--seeds", nargs="+", help="folders of more seed photos (format sniffed)")
    parser.add_argument("--seed", type=int, default=1, help="the mutations' random seed")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--job-timeout", type=float, default=60, help="a job running longer is a hang")
    parser.add_argument("--timeout", type=float, help="the whole run's (default 180 s + 0.6 s a file)")
    parser.add_argument("--lease-ttl", type=int, default=15)
    parser.add_argument("--budget", default="256MiB")
    parser.add_argument("--max-pixels", type=int, default=100_000_000)
    parser.add_argument("--shared", default=os.environ.get("THUMBD_SHARED_CORPUS",
                                                           os.path.join(os.path.dirname(REPO), "shared/corpus")),
                        help="the shared corpus ('none': as if absent)")
    parser.add_argument("--findings", default="/tmp/sweep-findings")
    parser.add_argument("--keep", help="keep the run's folder (files, logs, thumbnails) here")
    args = parser.parse_args()
    args.thumbd = os.path.abspath(args.thumbd)
    if args.shared == "none" or not os.path.isdir(args.shared):
        args.shared = None
    if not shutil.which("djpeg"):
        sys.exit("sweep: djpeg is needed to check the thumbnails (apt-get install libjpeg-turbo-progs)")
    parse_size(args.budget)

    started = time.time()
    work = tempfile.mkdtemp(prefix="thumbd-sweep-")
    os.chmod(work, 0o755)  # PostgreSQL runs as postgres under root and must reach its folder
    served = os.path.join(work, "files")
    storage = os.path.join(work, "thumbnails")
    os.makedirs(storage)
    database = origin = None
    sweep = None
    try:
        seeds, skipped = make_seeds(args, os.path.join(work, "seeds"))
        log(f"seed {args.seed}; {len(seeds)} seeds: " + ", ".join(f"{s['name']} ({s['bytes']} B)" for s in seeds))
        if skipped:
            log("skipped: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
        records, duplicates = make_mutations(args, seeds, served)
        invalid = []
        if args.shared and os.path.isdir(os.path.join(args.shared, "invalid")):
            for name in sorted(os.listdir(os.path.join(args.shared, "invalid"))):
                target = f"invalid-{name}"
                shutil.copyfile(os.path.join(args.shared, "invalid", name), os.path.join(served, target))
                invalid.append({"file": target, "name": name, "family": "invalid", "kind": "invalid",
                                "seed": None, "mutator": "none", "params": {},
                                "bytes": os.path.getsize(os.path.join(served, target))})
        log(f"{len(records)} mutated files ({duplicates} duplicate mutations drawn again), "
            f"{len(invalid)} files of invalid/; in {work}")

        args.timeout = args.timeout or 180 + 0.6 * (len(records) + len(invalid))
        database = Database(os.path.join(work, "pg"))
        run(args.thumbd, "migrate", "--dir", os.path.join(REPO, "migrations"), env=dict(os.environ, DATABASE_URL=database.url))
        origin = Origin(served, work)
        sweep = Run(args, work, database, f"http://127.0.0.1:{origin.port}", storage)
        everything = records + invalid
        ids = sweep.enqueue([r["file"] for r in everything])
        for r in everything:
            r["job"] = ids[r["file"]]
        run_started = time.time()
        log(f"enqueued {len(ids)} jobs; {args.workers} workers, job timeout {args.job_timeout:.0f} s, "
            f"run timeout {args.timeout:.0f} s")
        sweep.drive(len(everything))
        run_seconds = time.time() - run_started

        return report(args, seeds, skipped, records, invalid, everything, database, sweep, storage, served, started,
                      run_seconds)
    finally:
        if sweep:
            for worker in sweep.workers:
                if worker.process.poll() is None:
                    worker.process.kill()
                    worker.process.wait()
        if origin:
            origin.stop()
        if database:
            database.stop()
        if args.keep:
            shutil.copytree(work, args.keep, dirs_exist_ok=True, symlinks=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
