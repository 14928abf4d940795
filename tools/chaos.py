#!/usr/bin/env python3
"""make chaos: a fleet of thumbd workers, each a host of its own, under fire; then the invariants.

    tools/chaos.py --thumbd BIN --photos DIR [--workers 4] [--jobs 300] [--seconds 90]
                     [--lease-ttl 6] [--budget 192MiB] [--json FILE] [--keep DIR]

Needs root (network namespaces). The core host is this machine's own namespace: a throwaway PostgreSQL
(scripts/pg-temp.sh), a PgBouncer in transaction mode (deploy/pgbouncer/pgbouncer.ini), and an origin
(Tests/Support/origin.py) serving DIR's JPEGs, all on a bridge at 10.77.0.1. Each worker runs in its
own namespace (10.77.0.1N), joined to the bridge by a veth pair; the last half of the fleet goes
through PgBouncer with --prepared-statements off. The jobs mix plain downloads, flaky and slow routes,
shares of one photo under several URLs, a 404 and a corrupt upload, and some are scheduled later so
that work continues through every fault. While they run, the driver:

  - SIGKILLs a random worker every few seconds and starts it again;
  - SIGSTOPs one worker for twice its lease TTL, then SIGCONTs it (its jobs are rescued meanwhile:
    what it writes afterwards must be refused);
  - cuts one worker's link for twice its lease TTL, then restores it;
  - shapes another worker's link (tbf rate limit) and drops a share of its packets (iptables): this
    kernel has no netem (`tc qdisc ... netem` answers "Specified qdisc kind is unknown");
  - restarts PostgreSQL once, and stops it for 15 s once;
  - forgets photos every few seconds (thumbs.forget_external, thumbs.forget; finished, queued and
    running ones, shares of one photo among them), and halfway through changes the default profile's
    spec and re-renders its photos (thumbs.rerender); the workers collect with a short grace;
  - at the end, SIGKILLs one worker and starts it again, and sends every worker SIGTERM a moment
    (0-1.5 s, by seed) after the new one has taken SIGTERM over.

At the end every worker gets SIGTERM, and the driver prints each invariant with its figure:

  every job terminal, with the outcome its URL calls for (permanent codes only for failures);
  no job with more attempts than allowed, or with variant rows other than its profile's;
  every object a current thumbnail names exists, hashes to its key, and decodes at its row's size (djpeg);
  zombie writes refused: leases lost (from /metrics) and lease_lost log lines, at least one;
  no worker's peak RSS (VmHWM) above its budget plus an idle worker's size;
  no worker exited by itself, and each ended with exit 0 on SIGTERM, the one restarted a moment before
  the SIGTERM included (it gets it while its start-up, first rescue and housekeeping may still run);
  no object a current thumbnail names was ever missing (sampled every second through the run, each
  miss checked again before it counts);
  no object of a forgotten photo outlives the grace plus one collection pass (checked that long, plus a
  killed collector's claim, after the last forget, the end of the last fault and the last job's end),
  and every forget ended in its `forgotten` events.

It exits 0 when all hold. --json writes the figures (docs/reliability.md reports them).
"""

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

from sweeplib.common import parse_size, wait_until_sigterm_caught  # tools/ is on the path: its folder
from sweeplib.run import Origin  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BRIDGE = "thumbd-chaos0"
CORE = "10.77.0.1"
PERMANENT = {"not_found", "http_error", "corrupt_image", "unsupported_format", "too_large", "blocked_source"}
VARIANTS = 4  # the default profile's
ERASE_GRACE = 4  # seconds: the workers' --erase-grace
GC_INTERVAL = 2  # seconds: the workers' --gc-interval


def log(message):
    print(f"chaos {time.strftime('%H:%M:%S')} {message}", flush=True)


def run(*args, check=True, quiet=False, **kwargs):
    result = subprocess.run(list(args), capture_output=True, text=True, **kwargs)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {result.returncode}: {result.stderr.strip()}")
    return result


class Network:
    """The bridge on the core host and one namespace per worker, removed again at exit."""

    def __init__(self, count):
        self.count = count
        self.cleanup()
        run("ip", "link", "add", BRIDGE, "type", "bridge")
        run("ip", "addr", "add", f"{CORE}/24", "dev", BRIDGE)
        run("ip", "link", "set", BRIDGE, "up")
        for i in range(1, count + 1):
            ns, host, inner = self.names(i)
            run("ip", "netns", "add", ns)
            run("ip", "link", "add", host, "type", "veth", "peer", "name", inner)
            run("ip", "link", "set", inner, "netns", ns)
            run("ip", "link", "set", host, "master", BRIDGE)
            run("ip", "link", "set", host, "up")
            run("ip", "-n", ns, "link", "set", "lo", "up")
            run("ip", "-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", inner)
            run("ip", "-n", ns, "link", "set", inner, "up")

    @staticmethod
    def names(i):
        return f"thumbd-w{i}", f"thw{i}h", f"thw{i}n"

    @staticmethod
    def address(i):
        return f"10.77.0.{10 + i}"

    def cleanup(self):
        for i in range(1, 33):
            ns, host, _ = self.names(i)
            run("ip", "netns", "del", ns, check=False)
            run("ip", "link", "del", host, check=False)
        run("ip", "link", "del", BRIDGE, check=False)

    def cut(self, i):
        run("ip", "link", "set", self.names(i)[1], "down")

    def restore(self, i):
        run("ip", "link", "set", self.names(i)[1], "up")

    def degrade(self, i, loss):
        """A slow, lossy link: a rate limit on both sides (queueing delay under load) and random drops."""
        ns, host, inner = self.names(i)
        run("tc", "qdisc", "replace", "dev", host, "root", "tbf", "rate", "8mbit", "burst", "32kbit",
            "latency", "300ms")
        run("ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", inner, "root", "tbf", "rate",
            "8mbit", "burst", "32kbit", "latency", "300ms")
        dropped = False
        if shutil.which("iptables"):
            for chain in ("INPUT", "OUTPUT"):
                result = run("ip", "netns", "exec", ns, "iptables", "-A", chain, "-m", "statistic",
                             "--mode", "random", "--probability", str(loss), "-j", "DROP", check=False)
                dropped = dropped or result.returncode == 0
        return dropped


class Core:
    """PostgreSQL, PgBouncer and the origin, on the core host."""

    def __init__(self, work, photos):
        self.work = work
        self.pgdir = os.path.join(work, "pg")
        env = dict(os.environ, PG_TEMP_LISTEN=f"127.0.0.1,{CORE}")
        self.local_url = run(os.path.join(REPO, "scripts/pg-temp.sh"), "start", self.pgdir, env=env).stdout.strip()
        self.port = int(urllib.parse.urlsplit(self.local_url).port)
        self.fleet_url = f"postgresql://postgres@{CORE}:{self.port}/thumbd"
        self.bouncer = self.start_bouncer()
        self.bouncer_url = f"postgresql://postgres@{CORE}:{self.bouncer_port}/thumbd"
        self.origin = Origin(photos, work, host=CORE, timeout=5)

    def start_bouncer(self):
        folder = os.path.join(self.work, "pgbouncer")
        os.makedirs(folder)
        self.bouncer_port = free_port()
        overrides = {
            "listen_addr": CORE, "listen_port": str(self.bouncer_port), "auth_type": "trust",
            "auth_file": os.path.join(folder, "userlist.txt"), "logfile": os.path.join(folder, "pgbouncer.log"),
            "pidfile": os.path.join(folder, "pgbouncer.pid"), "unix_socket_dir": "",
            "default_pool_size": "4", "reserve_pool_size": "0",
        }
        lines, section = [], ""
        with open(os.path.join(REPO, "deploy/pgbouncer/pgbouncer.ini")) as deployed:
            for line in deployed.read().split("\n"):
                if line.startswith("["):
                    section = line
                    lines.append(line)
                    if section == "[databases]":
                        lines.append(f"thumbd = host=127.0.0.1 port={self.port} dbname=thumbd")
                    continue
                key = line.split("=")[0].strip()
                if section == "[databases]" and key and not line.startswith(";"):
                    continue  # the example's database
                lines.append(f"{key} = {overrides[key]}" if key in overrides else line)
        with open(os.path.join(folder, "pgbouncer.ini"), "w") as ini:
            ini.write("\n".join(lines))
        with open(os.path.join(folder, "userlist.txt"), "w") as users:
            users.write('"postgres" ""\n')
        run("chown", "-R", "postgres", folder)
        process = subprocess.Popen(["/usr/sbin/pgbouncer", "-u", "postgres", os.path.join(folder, "pgbouncer.ini")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        if process.poll() is not None:
            raise RuntimeError("pgbouncer exited at start; see " + os.path.join(folder, "pgbouncer.log"))
        self.bouncer_process = process
        return process

    def sql(self, statement, *params):
        """One statement through psql on the core host; rows as lists of strings."""
        args = ["psql", self.local_url, "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1"]
        for i, value in enumerate(params):
            args += ["-v", f"p{i + 1}={value}"]
        result = run(*args, input=statement, check=True)  # variables are interpolated from stdin, not -c
        return [line.split("\t") for line in result.stdout.splitlines() if line]

    def pause(self):
        run(os.path.join(REPO, "scripts/pg-temp.sh"), "pause", self.pgdir)

    def resume(self):
        run(os.path.join(REPO, "scripts/pg-temp.sh"), "resume", self.pgdir)

    def stop(self):
        self.origin.stop()
        bouncer = getattr(self, "bouncer_process", None)
        if bouncer and bouncer.poll() is None:
            bouncer.kill()
            bouncer.wait()
        run(os.path.join(REPO, "scripts/pg-temp.sh"), "stop", self.pgdir, check=False)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Worker:
    """One host's thumbd worker; started again after each SIGKILL (a new incarnation, a new log)."""

    def __init__(self, index, args, core, work):
        self.index, self.args, self.core, self.work = index, args, core, work
        self.through_bouncer = index > args.workers // 2
        self.incarnations = []  # dicts: pid, log, metrics (last scrape), hwm_kib, exit, killed
        self.lock = threading.Lock()

    @property
    def current(self):
        return self.incarnations[-1] if self.incarnations else None

    def start(self):
        ns = Network.names(self.index)[0]
        n = len(self.incarnations) + 1
        path = os.path.join(self.work, f"worker{self.index}-{n}.log")
        env = {
            "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
            "DATABASE_URL": self.core.bouncer_url if self.through_bouncer else self.core.fleet_url,
            "THUMBD_STORAGE": f"file://{self.args.storage}", "THUMBD_ALLOW_HOSTS": CORE,
            "THUMBD_CONCURRENCY": "2", "THUMBD_MEMORY_BUDGET": self.args.budget,
            "THUMBD_LEASE_TTL": str(self.args.lease_ttl), "THUMBD_FETCH_TIMEOUT": "20",
            "THUMBD_HTTP_ADDRESS": f"{Network.address(self.index)}:9464", "THUMBD_LOG_LEVEL": "info",
            "THUMBD_SHUTDOWN_GRACE": "5", "THUMBD_ERASE_GRACE": str(ERASE_GRACE),
            "THUMBD_GC_INTERVAL": str(GC_INTERVAL),
        }
        if self.through_bouncer:
            env["THUMBD_PREPARED_STATEMENTS"] = "off"
        out = open(path, "w")
        process = subprocess.Popen(["ip", "netns", "exec", ns, self.args.thumbd, "worker"], env=env,
                                   stdout=out, stderr=subprocess.STDOUT)
        with self.lock:
            self.incarnations.append({"process": process, "pid": process.pid, "log": path, "metrics": {},
                                      "hwm_kib": 0, "exit": None, "signalled": None, "started": time.time()})
        return process

    def signal(self, sig):
        incarnation = self.current
        if incarnation and incarnation["process"].poll() is None:
            incarnation["signalled"] = incarnation["signalled"] or sig
            incarnation["process"].send_signal(sig)

    def kill_and_restart(self):
        incarnation = self.current
        self.signal(signal.SIGKILL)
        incarnation["process"].wait()
        self.start()

    def sample(self):
        """VmHWM and /metrics of the live incarnation (a cut or frozen host simply misses a sample)."""
        incarnation = self.current
        if not incarnation or incarnation["process"].poll() is not None:
            return
        try:
            with open(f"/proc/{incarnation['pid']}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        incarnation["hwm_kib"] = max(incarnation["hwm_kib"], int(line.split()[1]))
        except OSError:
            pass
        try:
            with urllib.request.urlopen(f"http://{Network.address(self.index)}:9464/metrics", timeout=0.5) as r:
                incarnation["metrics"] = parse_metrics(r.read().decode())
        except Exception:
            pass


def parse_metrics(text):
    """Sums of each family's samples, by name (labels dropped), plus leases lost."""
    sums = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name = re.split(r"[{ ]", line, 1)[0]
        try:
            value = float(line.rsplit(" ", 1)[1])
        except ValueError:
            continue
        sums[name] = sums.get(name, 0) + value
    return sums


def enqueue_jobs(core, args, photos):
    """The jobs, each with the outcome its URL calls for. Some are due later, so work continues
    through the faults."""
    rng = random.Random(args.seed)
    base = f"http://{CORE}:{core.origin.port}"
    expected = {}
    names = sorted(photos)
    for n in range(args.jobs):
        name = urllib.parse.quote(names[n % len(names)])
        roll = rng.random()
        if roll < 0.55:
            url, outcome = f"{base}/files/{name}?job={n}", "succeeded"
        elif roll < 0.70:
            url, outcome = f"{base}/flaky/2/{name}?job={n}", "succeeded"
        elif roll < 0.78:
            url, outcome = f"{base}/slow/{name}?chunk=262144&delay=0.05&job={n}", "succeeded"
        elif roll < 0.90:
            # The same photo under many URLs: a share, rendered once and reused.
            url, outcome = f"{base}/files/{urllib.parse.quote(names[0])}?share={n}", "succeeded"
        elif roll < 0.95:
            url, outcome = f"{base}/status/404?job={n}", "not_found"
        else:
            url, outcome = f"{base}/files/corrupt.jpg?job={n}", "corrupt_image"
        delay = rng.uniform(0, args.seconds * 0.9) if rng.random() < 0.6 else 0
        if n % 2 == 0:
            rows = core.sql("SELECT thumbs.enqueue(:'p1', run_at => now() + make_interval(secs => :p2), "
                            "external_id => :'p3')", url, f"{delay:.2f}", f"photo-{n}")
        else:
            rows = core.sql("SELECT thumbs.enqueue(:'p1', run_at => now() + make_interval(secs => :p2))",
                            url, f"{delay:.2f}")
        expected[int(rows[0][0])] = outcome
    return expected


class Eraser:
    """Forgets photos while the faults go on, and changes the default profile's spec and re-renders
    once. Remembers what each forget's photo named, to check later that it went."""

    def __init__(self, core, seed):
        self.core = core
        self.rng = random.Random(seed)
        self.forgets = []  # {"at": time, "keys": set, "jobs": set}
        self.rerender_calls = []
        self.skipped = 0  # the database was away
        self.missing = []  # named objects found missing (and still missing and named when checked again)
        self.samples = 0

    def photos_to_forget(self):
        """Mostly one photo: a random job's, most often a finished one. Sometimes every photo of one
        original (all the URLs serving the same file): then their shared objects go too, while jobs
        of that original scheduled later render and store them again."""
        if self.rng.random() < 0.3:
            name = self.rng.choice(self.core.sql(
                "SELECT DISTINCT split_part(split_part(source_url, '/files/', 2), '?', 1) FROM thumbs.jobs "
                "WHERE state = 'succeeded' AND source_url LIKE '%/files/%'") or [[""]])[0]
            if name:
                return self.core.sql("SELECT id, coalesce(external_id, ''), coalesce(source_key, '') "
                                     "FROM thumbs.jobs WHERE state <> 'forgotten' AND source_url LIKE :'p1'",
                                     f"%/{name}?%"), "original"
        state = self.rng.choice(["succeeded", "succeeded", "succeeded", "queued", "running"])
        return self.core.sql("SELECT id, coalesce(external_id, ''), coalesce(source_key, '') FROM thumbs.jobs "
                             "WHERE state = :'p1' ORDER BY random() LIMIT 1", state), state

    def forget_one(self):
        rows, what = self.photos_to_forget()
        if not rows:
            return
        # Recorded before the forgets run: the database may go away between two of them.
        record = {"at": time.time(), "keys": set(), "jobs": set(), "state": what, "photos": len(rows)}
        self.forgets.append(record)
        keys, jobs = record["keys"], record["jobs"]
        for job, external, source in rows:
            if external:
                photo = "j.external_id = :'p1'"
                current = "SELECT storage_key FROM thumbs.current_variants WHERE external_id = :'p1'"
                key = external
            else:
                photo = "j.source_key = :'p1' AND j.external_id IS NULL"
                current = ("SELECT storage_key FROM thumbs.current_variants "
                           "WHERE external_id IS NULL AND source_url = :'p1'")
                key = source
            keys |= {r[0] for r in self.core.sql(
                f"{current} UNION SELECT v.storage_key FROM thumbs.variants v JOIN thumbs.jobs j ON j.id = v.job_id "
                f"WHERE {photo}", key)}
            jobs |= {int(r[0]) for r in self.core.sql(f"SELECT j.id FROM thumbs.jobs j WHERE {photo}", key)}
            jobs.add(int(job))
            record["at"] = time.time()
            if external:
                self.core.sql("SELECT thumbs.forget_external(:'p1')", external)
            else:
                self.core.sql("SELECT thumbs.forget(:p1)", job)

    def rerender(self):
        if not self.rerender_calls:
            self.core.sql("UPDATE thumbs.profiles SET spec = jsonb_set(spec, '{variants,2,quality}', '79') "
                          "WHERE name = 'default'")
        self.rerender_calls.append(int(self.core.sql("SELECT thumbs.rerender('default', 25)")[0][0]))

    def check_named_objects(self, storage):
        """Every object a current thumbnail names must be in storage (the job history keeps none alive:
        an edit's or a re-render's superseded objects are collected). A miss is looked at again half a
        second later: it counts only if the object is still named and still missing then."""
        named = [r[0] for r in self.core.sql("SELECT DISTINCT storage_key FROM thumbs.photo_variants")]
        self.samples += 1
        gone = [k for k in named if not os.path.exists(os.path.join(storage, k))]
        if not gone:
            return
        time.sleep(0.5)
        still = {r[0] for r in self.core.sql(
            "SELECT storage_key FROM thumbs.photo_variants WHERE storage_key = ANY (string_to_array(:'p1', ','))",
            ",".join(gone))}
        self.missing += [k for k in gone if k in still and not os.path.exists(os.path.join(storage, k))]

    def run(self, until, storage, rerender_at):
        next_forget = time.time() + 3
        while time.time() < until:
            try:
                if time.time() >= next_forget:
                    self.forget_one()
                    next_forget = time.time() + self.rng.uniform(1.5, 4)
                if time.time() >= rerender_at and (not self.rerender_calls or self.rerender_calls[-1] > 0):
                    self.rerender()
                self.check_named_objects(storage)
            except RuntimeError:
                self.skipped += 1  # PostgreSQL is being restarted or stopped
            time.sleep(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--thumbd", required=True)
    parser.add_argument("--photos", required=True, help="a folder of JPEG photos to serve")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=90, help="how long the faults go on")
    parser.add_argument("--lease-ttl", type=float, default=6)
    parser.add_argument("--budget", default="192MiB")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--restart-stop-delay", type=float, default=None,
                        help="seconds between the restarted worker owning SIGTERM and the final SIGTERM "
                             "(default: 0-1.5 s, by seed)")
    parser.add_argument("--json")
    parser.add_argument("--keep", help="keep the run's folder (logs) here instead of deleting it")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("chaos: needs root (network namespaces)")
    if args.workers < 4:
        sys.exit("chaos: --workers must be at least 4 (one frozen, one cut, one degraded, one killed)")
    args.thumbd = os.path.abspath(args.thumbd)
    if args.restart_stop_delay is None:
        args.restart_stop_delay = random.Random(args.seed + 2).choice([0, random.Random(args.seed).uniform(0, 1.5)])
    photos = [f for f in os.listdir(args.photos) if f.lower().endswith((".jpg", ".jpeg"))]
    if not photos:
        sys.exit(f"chaos: no JPEG photos in {args.photos}")

    work = tempfile.mkdtemp(prefix="thumbd-chaos-")
    os.chmod(work, 0o755)
    served = os.path.join(work, "photos")
    os.makedirs(served)
    for name in photos:
        os.symlink(os.path.abspath(os.path.join(args.photos, name)), os.path.join(served, name))
    with open(os.path.join(served, "corrupt.jpg"), "wb") as corrupt:
        corrupt.write(b"\xff\xd8\xff\xe0" + os.urandom(3000))
    args.storage = os.path.join(work, "thumbnails")
    os.makedirs(args.storage)
    log(f"seed {args.seed}; {args.workers} workers, {args.jobs} jobs, faults for {args.seconds:.0f} s; in {work}")

    network = Network(args.workers)
    core = None
    workers = []
    faults = {"sigkill": 0, "sigstop": 0, "link_cut": 0, "degraded_link": 0, "packet_loss": 0,
              "postgres_restart": 0, "postgres_stop_15s": 0}
    back = {}  # when each fault ended
    held = {}  # jobs the frozen and the cut worker held when their fault began
    try:
        core = Core(work, served)
        run(args.thumbd, "migrate", env=dict(os.environ, DATABASE_URL=core.local_url,
                                             THUMBD_MIGRATIONS=os.path.join(REPO, "migrations")))
        workers = [Worker(i, args, core, work) for i in range(1, args.workers + 1)]
        # An idle worker's size, for the memory invariant: the first one, before any job exists.
        workers[0].start()
        idle_kib = wait_idle_rss(workers[0])
        for worker in workers[1:]:
            worker.start()
        expected = enqueue_jobs(core, args, photos)
        log(f"enqueued {len(expected)} jobs; idle worker RSS {idle_kib // 1024} MiB")

        stop_sampling = threading.Event()

        def sampler():
            while not stop_sampling.is_set():
                for worker in workers:
                    worker.sample()
                stop_sampling.wait(0.5)

        sampling = threading.Thread(target=sampler, daemon=True)
        sampling.start()

        eraser = Eraser(core, args.seed + 3)
        erasing = threading.Thread(
            target=eraser.run, args=(time.time() + args.seconds, args.storage, time.time() + args.seconds / 2),
            daemon=True)
        erasing.start()

        rng = random.Random(args.seed + 1)
        # The degraded link is the last worker's for the whole run. The worker to freeze and the one to
        # cut off are picked when their turn comes, among the busy ones, so that each strands a job.
        degraded = workers[-1]
        frozen = cut = None  # never killed: their faults must play out
        faults["packet_loss"] = 1 if network.degrade(degraded.index, 0.03) else 0
        faults["degraded_link"] = 1
        ttl = args.lease_ttl
        start = time.time()
        plan = [
            (0.10, "freeze"), (0.25, "cut"), (0.45, "pg-restart"), (0.65, "pg-stop"), (1.0, "end"),
        ]
        next_kill = start + 3
        for at, what in plan:
            # Until the next fault is due (or the window ends), a random worker is killed every few seconds.
            due = start + at * args.seconds
            while time.time() < due:
                if time.time() >= next_kill:
                    victim = rng.choice([w for w in workers if w not in (frozen, cut)])
                    log(f"SIGKILL worker {victim.index}, then start it again")
                    victim.kill_and_restart()
                    faults["sigkill"] += 1
                    next_kill = time.time() + rng.uniform(4, 9)
                time.sleep(0.2)
            if what == "freeze":
                frozen, held["frozen"] = pick_busy(workers[:-1], rng)
                log(f"SIGSTOP worker {frozen.index} for {2 * ttl:.0f} s, holding {held['frozen']} jobs")
                frozen.signal(signal.SIGSTOP)
                frozen.current["signalled"] = None  # a pause, not an end
                threading.Timer(2 * ttl, lambda: (frozen.current["process"].send_signal(signal.SIGCONT),
                                                  log(f"SIGCONT worker {frozen.index}"))).start()
                faults["sigstop"] += 1
            elif what == "cut":
                cut, held["cut"] = pick_busy([w for w in workers[:-1] if w is not frozen], rng)
                log(f"cut worker {cut.index}'s link for {2 * ttl:.0f} s, holding {held['cut']} jobs")
                network.cut(cut.index)

                def restore():
                    network.restore(cut.index)
                    back["link_cut"] = time.time()
                    log(f"restored worker {cut.index}'s link")
                threading.Timer(2 * ttl, restore).start()
                faults["link_cut"] += 1
            elif what == "pg-restart":
                log("restart PostgreSQL")
                core.pause()
                core.resume()
                back["postgres_restart"] = time.time()
                faults["postgres_restart"] += 1
            elif what == "pg-stop":
                log("stop PostgreSQL for 15 s")
                core.pause()
                time.sleep(15)
                core.resume()
                log("PostgreSQL is back")
                back["postgres_stop_15s"] = time.time()
                faults["postgres_stop_15s"] += 1
        erasing.join()
        log(f"faults over; {len(eraser.forgets)} forgets, re-render calls {eraser.rerender_calls}; "
            "waiting for every job to end")
        deadline = time.time() + 300  # jobs that met a fault may be waiting out a backoff
        while time.time() < deadline:
            left = int(core.sql("SELECT count(*) FROM thumbs.jobs WHERE state IN ('queued', 'running')")[0][0])
            if left == 0:
                break
            time.sleep(1)
        drained_after = time.time() - start
        # Collection: a forgotten photo's objects go within the grace plus one pass of the last of: its
        # forget, the end of the last fault (no pass runs while the database is away) and the last job's
        # end (a job of a forgotten photo, or one refused for naming an object being deleted, makes what
        # it uploaded a candidate when its outcome is written), plus a claim (a collector killed or cut
        # off mid-pass holds its objects that long). Every forget, fault and job has ended by now.
        claim = max(ttl, 10)  # CollectionSettings.fit: a lease TTL, at least 10 s on local storage
        time.sleep(ERASE_GRACE + claim + GC_INTERVAL * 1.1 + 5)
        eraser.check_named_objects(args.storage)
        for worker in workers:
            worker.sample()
        stop_sampling.set()
        sampling.join()
        # A worker stopped a moment after it restarted: SIGTERM reaches it while its start-up, its first
        # rescue and housekeeping may still run, and the others stop at the same time.
        restarted = rng.choice(workers)
        log(f"SIGKILL worker {restarted.index}, start it again, and SIGTERM every worker "
            f"{args.restart_stop_delay:.2f} s after it owns SIGTERM")
        restarted.kill_and_restart()
        faults["sigterm_after_restart"] = 1 if wait_until_sigterm_caught(restarted.current["pid"]) is not None else 0
        time.sleep(args.restart_stop_delay)
        for worker in workers:
            worker.signal(signal.SIGTERM)
        for worker in workers:
            for incarnation in worker.incarnations:
                try:
                    incarnation["exit"] = incarnation["process"].wait(timeout=30)
                except subprocess.TimeoutExpired:
                    incarnation["process"].kill()
                    incarnation["exit"] = "hung"
        results = check(core, args, expected, workers, idle_kib, held, eraser)
        recovery = {fault: time_to_progress(core, at) for fault, at in back.items()}
        summary = {
            "seed": args.seed, "workers": args.workers, "jobs": len(expected), "fault_seconds": args.seconds,
            "lease_ttl": ttl, "drained_after_seconds": round(drained_after, 1), "faults": faults,
            "recovery_seconds": recovery, "held_jobs": held, "invariants": results,
            "forgets": len(eraser.forgets), "rerender_calls": eraser.rerender_calls,
            "outcomes": dict(core.sql("SELECT coalesce(error_code, state), count(*) FROM thumbs.jobs GROUP BY 1")),
        }
        print(json.dumps(summary, indent=2))
        if args.json:
            with open(args.json, "w") as out:
                json.dump(summary, out, indent=2)
        failed = [name for name, result in results.items() if not result["held"]]
        log("all invariants held" if not failed else f"FAILED: {', '.join(failed)}")
        return 0 if not failed else 1
    finally:
        for worker in workers:
            for incarnation in worker.incarnations:
                if incarnation["process"].poll() is None:
                    incarnation["process"].send_signal(signal.SIGCONT)
                    incarnation["process"].kill()
                    incarnation["process"].wait()
        if core:
            core.stop()
        network.cleanup()
        if args.keep:
            shutil.copytree(work, args.keep, dirs_exist_ok=True, symlinks=True)
        shutil.rmtree(work, ignore_errors=True)


def wait_idle_rss(worker):
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://{Network.address(worker.index)}:9464/readyz", timeout=0.5) as r:
                if r.status == 200:
                    break
        except Exception:
            pass
        time.sleep(0.2)
    time.sleep(0.5)
    with open(f"/proc/{worker.current['pid']}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS for the idle worker")


def pick_busy(candidates, rng, timeout=15):
    """A worker that runs a job now (waiting up to `timeout` for one), so that its fault strands work;
    a random one if none does. Returns it and the number of jobs it runs."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        busy = []
        for worker in candidates:
            worker.sample()
            running = int(worker.current["metrics"].get("thumbd_jobs_running", 0))
            if running >= 1:
                busy.append((worker, running))
        if busy:
            return rng.choice(busy)
        time.sleep(0.1)
    return rng.choice(candidates), 0


def time_to_progress(core, since):
    """Seconds from `since` to the first job that finished after it: how long the fleet took to make
    progress again after a fault ended (None: no job finished after it)."""
    rows = core.sql("SELECT extract(epoch FROM min(finished_at)) FROM thumbs.jobs WHERE finished_at > to_timestamp(:p1)",
                    f"{since:.3f}")
    return round(float(rows[0][0]) - since, 2) if rows and rows[0][0] else None


def check(core, args, expected, workers, idle_kib, held, eraser):
    results = {}

    def verdict(name, held, figure):
        results[name] = {"held": bool(held), "figure": figure}
        log(f"{'ok  ' if held else 'FAIL'} {name}: {figure}")

    rows = core.sql("SELECT id, state, coalesce(error_code, ''), attempts, max_attempts, rerender FROM thumbs.jobs")
    forgotten = set().union(*[f["jobs"] for f in eraser.forgets]) if eraser.forgets else set()
    wrong = []
    for id_, state, code, attempts, max_attempts, rerender in rows:
        want = expected.get(int(id_), "succeeded" if rerender == "t" else None)
        got = "succeeded" if state == "succeeded" else code if state == "failed" else state
        # A job of a forgotten photo ends forgotten (or, finished before the forget, as it was).
        if state == "forgotten" and (int(id_) in forgotten or rerender == "t"):
            continue
        if got != want:
            wrong.append(f"job {id_}: {state}/{code or '-'} (wanted {want}, {attempts} attempts)")
    expected_count = len(expected) + sum(1 for r in rows if r[5] == "t")
    terminal = sum(1 for r in rows if r[1] in ("succeeded", "failed", "forgotten"))
    non_permanent = [r for r in rows if r[1] == "failed" and r[2] not in PERMANENT]
    verdict("every job terminal with its expected outcome", not wrong and terminal == expected_count,
            f"{terminal} of {expected_count} terminal, {len(wrong)} unexpected"
            + (f" ({'; '.join(wrong[:5])})" if wrong else "")
            + (f", {len(non_permanent)} failed with a transient code" if non_permanent else ""))

    over = core.sql("SELECT count(*) FROM thumbs.jobs WHERE attempts > max_attempts")[0][0]
    verdict("no job with more attempts than allowed", over == "0",
            f"{over} over; most attempts {core.sql('SELECT max(attempts) FROM thumbs.jobs')[0][0]}")

    bad_sets = core.sql(
        "SELECT count(*) FROM thumbs.jobs j WHERE (SELECT count(*) FROM thumbs.variants v WHERE v.job_id = j.id) "
        f"<> CASE WHEN j.state = 'succeeded' THEN {VARIANTS} ELSE 0 END")[0][0]
    verdict("one set of variant rows per succeeded job, none for others", bad_sets == "0",
            f"{bad_sets} jobs with another count")

    objects = core.sql("SELECT DISTINCT storage_key, width, height, bytes FROM thumbs.photo_variants")
    broken = []
    for key, width, height, size in objects:
        path = os.path.join(args.storage, key)
        try:
            data = open(path, "rb").read()
        except OSError:
            broken.append(f"{key}: missing")
            continue
        if len(data) != int(size) or hashlib.sha256(data).hexdigest() != os.path.basename(key).split(".")[0]:
            broken.append(f"{key}: bytes or hash differ")
            continue
        decoded = subprocess.run(["djpeg", "-pnm", path], capture_output=True)
        header = decoded.stdout[:32].split()
        if decoded.returncode != 0 or len(header) < 3 or (int(header[1]), int(header[2])) != (int(width), int(height)):
            broken.append(f"{key}: does not decode at {width}x{height}")
    verdict("every object exists, hashes to its key and decodes at its row's size", not broken and objects,
            f"{len(objects)} objects checked, {len(broken)} broken" + (f" ({'; '.join(broken[:3])})" if broken else ""))

    # A worker frozen or cut off while it held jobs may find them taken by another worker when it comes
    # back: its late heartbeat and its late completion must be refused (the fencing on lease_token).
    # Refusals are counted in thumbd_leases_lost_total and in the jobs.lease_lost of its last log line.
    # An accepted zombie write would be a job recorded as succeeded twice: each worker logs
    # "job succeeded" only when the database took its write.
    lost = 0
    accepted = {}
    for w in workers:
        for i in w.incarnations:
            text = open(i["log"]).read()
            logged = re.findall(r"jobs\.lease_lost=(\d+)", text)
            lost += max(int(i["metrics"].get("thumbd_leases_lost_total", 0)), int(logged[-1]) if logged else 0)
            for job in re.findall(r"job\.id=(\d+)[^\n]*\] job succeeded$", text, re.M):
                accepted[job] = accepted.get(job, 0) + 1
    twice = sorted(job for job, n in accepted.items() if n > 1)
    stranded = held.get("frozen", 0) + held.get("cut", 0)
    succeeded = int(core.sql("SELECT count(*) FROM thumbs.jobs WHERE state = 'succeeded'")[0][0])
    # Every succeeded job's success is in some log, except one whose worker was killed right after its
    # write: if far fewer are found, the log lines were not understood and nothing was checked.
    verdict("zombie writes refused", not twice and len(accepted) >= succeeded * 0.8,
            f"{lost} stale writes refused (leases lost), {len(twice)} jobs recorded as succeeded twice "
            f"({len(accepted)} of {succeeded} successes found in the logs); "
            f"the frozen and the cut worker ran {stranded} jobs when stopped")

    budget_kib = parse_size(args.budget) // 1024
    peak = max(i["hwm_kib"] for w in workers for i in w.incarnations)
    verdict("no worker's peak RSS above budget + idle size", peak <= budget_kib + idle_kib,
            f"peak {peak // 1024} MiB, limit {budget_kib // 1024} + {idle_kib // 1024} MiB")

    unexpected = []
    for w in workers:
        for n, i in enumerate(w.incarnations, 1):
            if i["signalled"] == signal.SIGKILL:
                continue
            if i["signalled"] is None:  # it was gone before the final SIGTERM: it ended by itself
                unexpected.append(f"worker {w.index} incarnation {n}: ended by itself, exit {i['exit']}")
            elif i["exit"] != 0:
                unexpected.append(f"worker {w.index} incarnation {n}: exit {i['exit']} after SIGTERM")
    incarnations = sum(len(w.incarnations) for w in workers)
    verdict("no worker exited by itself; every SIGTERM ended in exit 0", not unexpected,
            f"{incarnations} worker processes, {len(unexpected)} unexpected ends"
            + (f" ({'; '.join(unexpected[:3])})" if unexpected else ""))

    verdict("no object that something live names was ever missing", not eraser.missing and eraser.samples > 0,
            f"{eraser.samples} samples of every named object, {len(eraser.missing)} missing"
            + (f" ({'; '.join(sorted(set(eraser.missing))[:3])})" if eraser.missing else ""))

    named = {r[0] for r in core.sql("SELECT storage_key FROM thumbs.photo_variants")}
    forgotten_keys = set().union(*[f["keys"] for f in eraser.forgets]) if eraser.forgets else set()
    left = sorted(k for k in forgotten_keys - named if os.path.exists(os.path.join(args.storage, k)))
    open_erasures = core.sql("SELECT count(*) FROM thumbs.erasures")[0][0]
    events = core.sql("SELECT count(*) FROM thumbs.events WHERE kind = 'forgotten'")[0][0]
    # What collection knows of the keys left and of the open erasures' undecided keys, for a failure's
    # diagnosis.
    undecided = [r[0] for r in core.sql(
        "SELECT k.storage_key FROM thumbs.erasure_keys k WHERE k.outcome IS NULL ORDER BY 1 LIMIT 3")]
    diagnosis = [
        f"{k}: " + " ".join("|".join(r) for r in core.sql(
            "SELECT coalesce(state, 'none'), coalesce(reason, '-'), to_char(queued_at, 'HH24:MI:SS.MS'), "
            "coalesce(to_char(fenced_at, 'HH24:MI:SS.MS'), '-'), "
            "coalesce(to_char(deleted_at, 'HH24:MI:SS.MS'), '-'), coalesce(claimed_by, '-'), "
            "coalesce(to_char(claim_expires_at, 'HH24:MI:SS.MS'), '-'), attempts::text, "
            "coalesce(last_error, '-') FROM thumbs.gc_objects WHERE storage_key = :'p1'", k) or [["no gc row"]])
        + (f" (file written {time.strftime('%H:%M:%S', time.localtime(os.path.getmtime(os.path.join(args.storage, k))))})"
           if os.path.exists(os.path.join(args.storage, k)) else "")
        for k in (left[:3] + undecided)]
    states = {}
    for f in eraser.forgets:
        states[f["state"]] = states.get(f["state"], 0) + f["photos"]
    photos = sum(f["photos"] for f in eraser.forgets)
    verdict("no object of a forgotten photo outlives the grace plus one collection pass",
            not left and open_erasures == "0" and len(eraser.forgets) > 0,
            f"{photos} photos forgotten in {len(eraser.forgets)} calls "
            f"({', '.join(f'{n} {s}' for s, n in sorted(states.items()))}), "
            f"{len(forgotten_keys)} keys they named, {len(forgotten_keys & named)} still named by other photos, "
            f"{len(left)} left in storage; {events} forgotten events, {open_erasures} erasures open"
            + (f" ({'; '.join(diagnosis)})" if diagnosis else ""))
    return results


if __name__ == "__main__":
    sys.exit(main())
