"""The run: a throwaway PostgreSQL (scripts/pg-temp.sh), the loopback origin (Tests/Support/origin.py),
`thumbd worker --drain` processes, and Run, which enqueues the files and keeps --workers workers going
until the queue is empty, watching for crashes and hangs."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse

from .common import REPO, log, run


class Database:
    def __init__(self, folder):
        self.folder = folder
        self.url = run(os.path.join(REPO, "scripts/pg-temp.sh"), "start", folder, text=True).stdout.strip()

    def sql(self, statement):
        """Rows of one statement (tab-separated fields)."""
        result = run("psql", self.url, "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                     input=statement, text=True)
        return [line.split("\t") for line in result.stdout.splitlines() if line]

    def json(self, statement):
        """The JSON value a statement returns (one row, one column)."""
        rows = self.sql(statement)
        return json.loads(rows[0][0]) if rows and rows[0][0] else None

    def stop(self):
        run(os.path.join(REPO, "scripts/pg-temp.sh"), "stop", self.folder, check=False)


class Origin:
    """Tests/Support/origin.py serving `root`, its output in `folder`/origin.out; `port` once it has
    announced it (within `timeout` seconds, or RuntimeError). Used by the sweep, tools/chaos.py and
    bench/scaling."""

    def __init__(self, root, folder, host=None, timeout=10.0):
        self.out = open(os.path.join(folder, "origin.out"), "w+")
        command = [sys.executable, os.path.join(REPO, "Tests/Support/origin.py"), "--root", root]
        if host:
            command += ["--host", host]
        self.process = subprocess.Popen(command, stdout=self.out, stderr=subprocess.DEVNULL)
        self.pid = self.process.pid
        self.port = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            self.out.seek(0)
            match = re.search(r"PORT (\d+)", self.out.read())
            if match:
                self.port = int(match.group(1))
                break
            time.sleep(0.05)
        if not self.port:
            self.stop()
            raise RuntimeError("origin.py did not announce its port")

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class Worker:
    """One `thumbd worker --drain` process."""

    def __init__(self, n, args, database, storage, folder):
        self.n = n
        self.log_path = os.path.join(folder, f"worker{n}.log")
        env = {
            "PATH": "/usr/bin:/bin", "DATABASE_URL": database.url, "THUMBD_CONCURRENCY": "1",
            "THUMBD_FETCH_TIMEOUT": "20", "THUMBD_LEASE_TTL": str(args.lease_ttl), "THUMBD_RETENTION": "0",
            "THUMBD_LOG_LEVEL": "info", "THUMBD_MEMORY_BUDGET": args.budget, "THUMBD_MAX_PIXELS": str(args.max_pixels),
            "THUMBD_SHUTDOWN_GRACE": "5",
        }
        self.log_file = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [args.thumbd, "worker", "--storage", f"file://{storage}", "--allow-hosts", "127.0.0.1",
             "--http-address", "127.0.0.1:0", "--drain"],
            env=env, stdout=self.log_file, stderr=subprocess.STDOUT)
        self.pid = self.process.pid
        self.started = time.time()
        self.exit = None
        self.killed_for_hang = False

    def log_text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


def describe_exit(code):
    if code is None:
        return "running"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit {code}"


class Run:
    """Enqueues the files, keeps --workers workers going until the queue is empty, watches for crashes
    and hangs."""

    def __init__(self, args, work, database, base_url, storage):
        self.args, self.work, self.db, self.base_url, self.storage = args, work, database, base_url, storage
        self.workers = []
        self.crashes, self.hangs, self.cancelled = [], [], {}
        self.timed_out = False

    def enqueue(self, names):
        urls = [f"{self.base_url}/files/{urllib.parse.quote(name)}" for name in names]
        ids = {}
        for o in range(0, len(urls), 2000):
            batch = urls[o:o + 2000]
            array = ",".join("'" + u.replace("'", "''") + "'" for u in batch)
            rows = self.db.sql(f"SELECT u, thumbs.enqueue(u) FROM unnest(ARRAY[{array}]::text[]) WITH ORDINALITY AS t(u, n) "
                               "ORDER BY n")
            for url, job in rows:
                ids[url] = int(job)
        return {name: ids[url] for name, url in zip(names, urls)}

    def start_worker(self):
        worker = Worker(len(self.workers) + 1, self.args, self.db, self.storage, self.work)
        self.workers.append(worker)
        return worker

    def alive(self):
        return [w for w in self.workers if w.exit is None]

    def held_by(self, worker):
        return self.db.sql(f"SELECT id, source_url FROM thumbs.jobs WHERE state = 'running' "
                           f"AND leased_by LIKE '%:{worker.pid}:%'")

    def cancel(self, job_id, why):
        self.db.sql(f"SELECT thumbs.cancel({int(job_id)})")
        self.cancelled[int(job_id)] = why

    def reap(self):
        for worker in self.alive():
            code = worker.process.poll()
            if code is None:
                continue
            worker.exit = code
            if worker.killed_for_hang:
                continue
            if code != 0:
                held = self.held_by(worker)
                text = worker.log_text()
                self.crashes.append({"worker": worker.n, "pid": worker.pid, "exit": describe_exit(code),
                                     "jobs": [int(j) for j, _ in held], "log_tail": text.splitlines()[-15:]})
                log(f"CRASH worker {worker.n} (pid {worker.pid}): {describe_exit(code)}; "
                    f"it held jobs {[int(j) for j, _ in held]}")
                for job, _ in held:
                    self.cancel(job, "crash")
            else:
                due = int(self.db.sql("SELECT count(*) FROM thumbs.jobs WHERE state = 'queued' AND run_at <= now()")[0][0])
                if due:
                    self.crashes.append({"worker": worker.n, "pid": worker.pid, "exit": "exit 0 while jobs were due",
                                         "due": due, "jobs": [], "log_tail": worker.log_text().splitlines()[-15:]})
                    log(f"CRASH worker {worker.n} (pid {worker.pid}) exited 0 while {due} jobs were due")

    def watch_hangs(self):
        rows = self.db.sql("SELECT id, coalesce(leased_by, ''), extract(epoch FROM now() - started_at) FROM thumbs.jobs "
                           f"WHERE state = 'running' AND started_at < now() - make_interval(secs => {self.args.job_timeout})")
        for job, leased_by, seconds in rows:
            pid = leased_by.split(":")[1] if leased_by.count(":") >= 2 else ""
            worker = next((w for w in self.alive() if str(w.pid) == pid), None)
            self.hangs.append({"job": int(job), "seconds": round(float(seconds), 1), "worker": worker.n if worker else None,
                               "what": f"job ran longer than --job-timeout {self.args.job_timeout} s"})
            log(f"HANG job {job} has run {float(seconds):.0f} s on {leased_by}: killing its worker, cancelling it")
            if worker:
                worker.killed_for_hang = True
                worker.process.kill()
                worker.process.wait()
                worker.exit = worker.process.returncode
            self.cancel(job, "hang")

    def drive(self, total):
        deadline = time.time() + self.args.timeout
        for _ in range(self.args.workers):
            self.start_worker()
        last_report = time.time()
        while True:
            time.sleep(0.5)
            self.reap()
            self.watch_hangs()
            row = self.db.sql(
                "SELECT count(*) FILTER (WHERE state = 'queued' AND run_at <= now()), "
                "count(*) FILTER (WHERE state = 'queued'), count(*) FILTER (WHERE state = 'running'), "
                "count(*) FILTER (WHERE state = 'running' AND lease_expires_at < now()), "
                "count(*) FILTER (WHERE state IN ('succeeded', 'failed', 'cancelled')) FROM thumbs.jobs")[0]
            due, queued, running, expired, done = map(int, row)
            if queued + running == 0:
                break
            if time.time() > deadline:
                self.timed_out = True
                log(f"HANG the run's --timeout ({self.args.timeout:.0f} s) fired with {queued} queued and "
                    f"{running} running jobs")
                break
            alive = len(self.alive())
            if alive < self.args.workers and (due > 0 or expired > 0):
                for _ in range(min(self.args.workers - alive, max(due, expired))):
                    self.start_worker()
            if time.time() - last_report > 15:
                last_report = time.time()
                log(f"{done} of {total} jobs done, {queued} queued, {running} running; "
                    f"{len(self.alive())} workers alive, {len(self.workers)} started")
        # The queue is empty (or the run timed out): drained workers exit by themselves.
        stop_by = time.time() + 30
        while self.alive() and time.time() < stop_by:
            time.sleep(0.2)
            self.reap()
        for worker in self.alive():
            worker.process.send_signal(signal.SIGTERM)
            try:
                worker.exit = worker.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.exit = worker.process.wait()
            if not self.timed_out:
                self.hangs.append({"worker": worker.n, "what": "did not exit by itself after the queue emptied",
                                   "exit": describe_exit(worker.exit)})
