#!/usr/bin/env python3
"""A worker stopped at every point of its start: SIGTERM must end it with exit 0 within the grace period.

    tools/stop-at-start.py --thumbd BIN --photos DIR [--tries 200] [--seed N] [--json FILE] [--keep DIR]

A throwaway PostgreSQL, the loopback origin and a feeder that keeps enqueueing jobs (plain, flaky and slow
downloads, shares of one photo, some due later), while two workers stay busy on the queue. Each try starts
one more worker (the subject) and sends it SIGTERM at one point of its start, chosen in turn:

  - the moment the process has taken SIGTERM over (its SigCgt mask in /proc shows it), and a random
    delay after that (0 to 2.5 s), before or after it announces itself;
  - just after a line of its log: the storage check, the database reached, "worker started", its first
    rescue or housekeeping;
  - while a notification arrives (a job enqueued right before the signal);
  - while PostgreSQL has just come back (stopped before the subject starts, started again after);
  - just after the subject's predecessor was SIGKILLed holding jobs (its leases expire under the new one).

The subject must exit 0 within its grace period plus a margin; then the next try begins. At the end every
job must reach a terminal state (none lost), with no job run past its attempts. Exits 0 when every try
passed; otherwise prints each failure with its subject's log tail (and keeps the logs with --keep).
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweeplib.common import REPO, wait_until_sigterm_caught  # noqa: E402
from sweeplib.run import Database, Origin  # noqa: E402

GRACE = 3.0
MARGIN = 4.0  # start-up checks, the hand-back write and process exit on a loaded 2-core machine
POINTS = [
    "signals owned", "delay", "storage is writable", "database reached", "worker started", "rescued", "housekeeping",
    "notification", "postgres back", "predecessor killed",
]


def log(message):
    print(f"stop-at-start {time.strftime('%H:%M:%S')} {message}", flush=True)


class Fleet:
    def __init__(self, args, work):
        self.args, self.work = args, work
        self.db = Database(os.path.join(work, "pg"))
        self.origin = Origin(args.photos, work)
        self.storage = os.path.join(work, "thumbnails")
        os.makedirs(self.storage)
        subprocess.run([args.thumbd, "migrate"], check=True, capture_output=True,
                       env=dict(os.environ, DATABASE_URL=self.db.url,
                                THUMBD_MIGRATIONS=os.path.join(REPO, "migrations")))
        self.photos = sorted(f for f in os.listdir(args.photos) if f.lower().endswith((".jpg", ".jpeg")))
        self.serial = 0
        self.lock = threading.Lock()

    def env(self):
        return {
            "PATH": "/usr/bin:/bin", "DATABASE_URL": self.db.url, "THUMBD_STORAGE": f"file://{self.storage}",
            "THUMBD_ALLOW_HOSTS": "127.0.0.1", "THUMBD_CONCURRENCY": "2", "THUMBD_LEASE_TTL": "4",
            "THUMBD_POLL_INTERVAL": "0.5", "THUMBD_MEMORY_BUDGET": "256MiB", "THUMBD_SHUTDOWN_GRACE": str(GRACE),
            "THUMBD_HTTP_ADDRESS": "127.0.0.1:0", "THUMBD_LOG_LEVEL": "info",
        }

    def spawn(self, name):
        path = os.path.join(self.work, f"{name}.log")
        out = open(path, "w")
        process = subprocess.Popen([self.args.thumbd, "worker"], env=self.env(), stdout=out,
                                   stderr=subprocess.STDOUT)
        return process, path

    def enqueue(self, rng, count):
        base = f"http://127.0.0.1:{self.origin.port}"
        values = []
        with self.lock:
            for _ in range(count):
                self.serial += 1
                n = self.serial
                name = urllib.parse.quote(self.photos[n % len(self.photos)])
                roll = rng.random()
                if roll < 0.6:
                    url = f"{base}/files/{name}?job={n}"
                elif roll < 0.75:
                    url = f"{base}/flaky/2/{name}?job={n}"
                elif roll < 0.85:
                    url = f"{base}/slow/{name}?chunk=262144&delay=0.05&job={n}"
                else:
                    url = f"{base}/files/{urllib.parse.quote(self.photos[0])}?share={n}"
                delay = rng.uniform(0, 3) if rng.random() < 0.3 else 0
                values.append(f"('{url}', {delay:.2f})")
        self.db.sql("SELECT thumbs.enqueue(u, run_at => now() + make_interval(secs => d)) "
                    f"FROM (VALUES {','.join(values)}) AS t(u, d)")

    def pause_postgres(self):
        subprocess.run([os.path.join(REPO, "scripts/pg-temp.sh"), "pause", self.db.folder], check=True,
                       capture_output=True)

    def resume_postgres(self):
        subprocess.run([os.path.join(REPO, "scripts/pg-temp.sh"), "resume", self.db.folder], check=True,
                       capture_output=True)

    def stop(self):
        self.origin.stop()
        self.db.stop()


def wait_for_line(path, needle, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(path, errors="replace") as f:
            if needle in f.read():
                return True
        time.sleep(0.005)
    return False


def one_try(fleet, rng, point, index):
    """Starts a subject, signals it at `point`; returns None when it exited 0 in time, else a failure."""
    predecessor = None
    if point == "predecessor killed":
        predecessor, _ = fleet.spawn(f"try{index}-predecessor")
        time.sleep(rng.uniform(1.5, 3.0))
        predecessor.kill()
        predecessor.wait()
    if point == "postgres back":
        fleet.pause_postgres()
    subject, path = fleet.spawn(f"try{index}")
    started = time.time()
    owned = wait_until_sigterm_caught(subject.pid)
    if point == "signals owned":
        pass
    elif point == "delay":
        time.sleep(rng.uniform(0, 2.5))
    elif point == "postgres back":
        time.sleep(rng.uniform(0.2, 1.5))
        fleet.resume_postgres()
        time.sleep(rng.uniform(0, 1.0))
    elif point == "notification":
        wait_for_line(path, "worker started", 10)
        time.sleep(rng.uniform(0, 0.3))
        fleet.enqueue(rng, 3)
    elif point == "predecessor killed":
        time.sleep(rng.uniform(0, 2.0))
    else:
        needle = {"rescued": "rescued jobs", "housekeeping": "expired stale worker"}.get(point, point)
        if not wait_for_line(path, needle, 8):
            needle = "worker started"
            wait_for_line(path, needle, 8)
        time.sleep(rng.uniform(0, 0.05))
    signalled = time.time()
    subject.send_signal(signal.SIGTERM)
    try:
        code = subject.wait(timeout=GRACE + MARGIN)
    except subprocess.TimeoutExpired:
        code = None
        subject.kill()
        subject.wait()
    took = time.time() - signalled
    if code == 0:
        return None, (took, owned)
    with open(path, errors="replace") as f:
        tail = f.read().splitlines()[-25:]
    return {"try": index, "point": point, "after_start_s": round(signalled - started, 3),
            "exit": "hung" if code is None else code, "log": path, "tail": tail}, (took, owned)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--thumbd", required=True)
    parser.add_argument("--photos", required=True, help="a folder of JPEG photos to serve")
    parser.add_argument("--tries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--json")
    parser.add_argument("--keep", help="keep the run's folder (logs) here")
    args = parser.parse_args()
    args.thumbd = os.path.abspath(args.thumbd)
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="thumbd-stop-")
    os.chmod(work, 0o755)
    fleet = busy = None
    failures, times, owning = [], [], []
    feeding = threading.Event()
    try:
        fleet = Fleet(args, work)
        busy = [fleet.spawn(f"busy{n}")[0] for n in (1, 2)]
        fleet.enqueue(rng, 40)

        def feeder():
            feed_rng = random.Random(args.seed + 1)
            while not feeding.wait(0.4):
                try:
                    fleet.enqueue(feed_rng, 2)
                except Exception:
                    pass  # PostgreSQL is down for a try: the next round enqueues again

        threading.Thread(target=feeder, daemon=True).start()
        log(f"seed {args.seed}; {args.tries} tries; grace {GRACE} s, margin {MARGIN} s; in {work}")
        for index in range(args.tries):
            point = POINTS[index % len(POINTS)]
            failure, (took, owned) = one_try(fleet, rng, point, index)
            times.append(took)
            if owned is not None:
                owning.append(owned)
            if failure:
                failures.append(failure)
                log(f"FAIL try {index} ({point}, signalled {failure['after_start_s']} s after start): "
                    f"{failure['exit']}")
                for line in failure["tail"]:
                    print("    " + line)
            elif index % 10 == 9:
                log(f"{index + 1} tries, {len(failures)} failed")
        feeding.set()
        for process in busy:
            process.send_signal(signal.SIGTERM)
        busy_exits = [process.wait(timeout=GRACE + MARGIN + 10) for process in busy]
        # Nothing lost: the busy workers are gone; draining workers finish what is left. A killed
        # predecessor's leases may still be live and backoffs may fall due meanwhile: drain again until
        # nothing due is left (a drain leaves jobs whose lease has not expired, and jobs not yet due).
        deadline = time.time() + 120
        while True:
            drain = subprocess.run([args.thumbd, "worker", "--drain"],
                                   env=dict(fleet.env(), THUMBD_HTTP_ADDRESS="off"), capture_output=True, timeout=600)
            left = fleet.db.sql("SELECT count(*) FILTER (WHERE state NOT IN ('succeeded', 'failed', 'cancelled') "
                                "AND run_at <= now()), count(*) FILTER (WHERE attempts > max_attempts), count(*) "
                                "FROM thumbs.jobs")[0]
            if drain.returncode != 0 or int(left[0]) == 0 or time.time() > deadline:
                break
            time.sleep(1)
        times.sort()
        owning.sort()
        summary = {
            "seed": args.seed, "tries": args.tries, "failed": len(failures),
            "exit_seconds": {"median": round(times[len(times) // 2], 3), "max": round(times[-1], 3)},
            "sigterm_owned_after_seconds": {"median": round(owning[len(owning) // 2], 3) if owning else None,
                                            "max": round(owning[-1], 3) if owning else None},
            "busy_workers_exit": busy_exits, "drain_exit": drain.returncode,
            "jobs": int(left[2]), "jobs_left_due": int(left[0]), "jobs_over_attempts": int(left[1]),
            "failures": failures,
        }
        print(json.dumps({k: v for k, v in summary.items() if k != "failures"}, indent=2))
        if args.json:
            with open(args.json, "w") as out:
                json.dump(summary, out, indent=2)
        ok = (not failures and busy_exits == [0, 0] and drain.returncode == 0 and summary["jobs_left_due"] == 0
              and summary["jobs_over_attempts"] == 0)
        print(f"{args.tries - len(failures)} passed, {len(failures)} failed")
        return 0 if ok else 1
    finally:
        feeding.set()
        for process in busy or []:
            if process.poll() is None:
                process.kill()
        if fleet:
            fleet.stop()
        if args.keep:
            shutil.copytree(work, args.keep, dirs_exist_ok=True, symlinks=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
