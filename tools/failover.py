#!/usr/bin/env python3
"""make failover: a PostgreSQL failover whose primary's host vanishes, under a working fleet.

    tools/failover.py --thumbd BIN --photos DIR [--runs 5] [--workers 2] [--jobs 120] [--json FILE]

Needs root (network namespaces). Hosts on a bridge at 10.78.0.1 (this machine's namespace: the origin,
a webhook receiver, the driver): a primary PostgreSQL in a namespace of its own (10.78.0.2), a standby
streaming from it in another (10.78.0.3, synchronous: a commit the primary acknowledged is on the
standby), and two workers, each in its own namespace, with the multi-host URL
`postgresql://postgres@10.78.0.2:5432,10.78.0.3:5432/thumbd?target_session_attrs=read-write`, their
default database settings, webhooks on and collection with a short grace.

Each run: the workers drain a first share of the jobs; then the primary's host vanishes (its bridge
port goes down: no RST, no FIN, its packets go nowhere, as when a machine dies or a cloud network drops
it), 3 s later the standby is promoted (pg_ctl promote, as Patroni or a managed database does), and
new jobs and a forget are written to it. The figure is how long after the promotion the first job
finished on the new primary. Then the queue drains and the invariants are checked on the new primary:
every job terminal and succeeded (the photos are good); no job with more attempts than allowed; one set
of variant rows per succeeded job; every object a current thumbnail names in storage; every event
delivered to the webhook receiver; every worker exits 0 on SIGTERM. It exits 0 when every run held them
and every run's figure is under 30 s.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweeplib.run import Origin  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BRIDGE = "thumbd-fo0"
CORE = "10.78.0.1"
HOSTS = {"db1": "10.78.0.2", "db2": "10.78.0.3"}
SECRET = "whsec_ZmFpbG92ZXIta2V5LWZhaWxvdmVyLWtleS0wMTIzNDU="
VARIANTS = 4


def log(message):
    print(f"failover: {time.strftime('%H:%M:%S')} {message}", flush=True)


def run(*args, check=True, **kwargs):
    result = subprocess.run(list(args), capture_output=True, text=True, **kwargs)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {result.stderr.strip()}")
    return result


def pg_bin():
    versions = sorted((d for d in os.listdir("/usr/lib/postgresql") if d.isdigit()), key=int)
    return f"/usr/lib/postgresql/{versions[-1]}/bin"


class Network:
    """The bridge and one namespace per host (names: thumbd-fo-NAME), removed again at exit."""

    def __init__(self, names):
        self.names = names
        self.cleanup()
        run("ip", "link", "add", BRIDGE, "type", "bridge")
        run("ip", "addr", "add", f"{CORE}/24", "dev", BRIDGE)
        run("ip", "link", "set", BRIDGE, "up")
        for name, address in names.items():
            ns, outer, inner = self.parts(name)
            run("ip", "netns", "add", ns)
            run("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
            run("ip", "link", "set", inner, "netns", ns)
            run("ip", "link", "set", outer, "master", BRIDGE)
            run("ip", "link", "set", outer, "up")
            run("ip", "-n", ns, "link", "set", "lo", "up")
            run("ip", "-n", ns, "addr", "add", f"{address}/24", "dev", inner)
            run("ip", "-n", ns, "link", "set", inner, "up")

    @staticmethod
    def parts(name):
        return f"thumbd-fo-{name}", f"tfo{name}h", f"tfo{name}n"

    def cleanup(self):
        for name in list(self.names) + ["db1", "db2", "w1", "w2", "w3", "w4"]:
            ns, outer, _ = self.parts(name)
            run("ip", "netns", "del", ns, check=False)
            run("ip", "link", "del", outer, check=False)
        run("ip", "link", "del", BRIDGE, check=False)

    def vanish(self, name):
        run("ip", "link", "set", self.parts(name)[1], "down")


class Server:
    """One PostgreSQL in a host's namespace, on port 5432 of its address."""

    def __init__(self, name, folder):
        self.name, self.address = name, HOSTS[name]
        self.folder = os.path.join(folder, name)
        self.data = os.path.join(self.folder, "data")
        os.makedirs(self.folder)
        shutil.chown(self.folder, "postgres")

    def as_postgres(self, *args, namespace=True):
        prefix = ["ip", "netns", "exec", Network.parts(self.name)[0]] if namespace else []
        return run(*prefix, "runuser", "-u", "postgres", "--", *args, cwd="/")

    def init_primary(self):
        self.as_postgres(f"{pg_bin()}/initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8",
                         "--locale=C.UTF-8", "--no-sync")
        with open(os.path.join(self.data, "pg_hba.conf"), "a") as hba:
            hba.write("host all all 10.78.0.0/24 trust\nhost replication all 10.78.0.0/24 trust\n")

    def init_standby(self, primary):
        self.as_postgres(f"{pg_bin()}/pg_basebackup", "-h", primary.address, "-U", "postgres", "-D", self.data,
                         "-R", "-X", "stream", "--no-sync")

    def start(self, synchronous=False):
        options = (f"-c listen_addresses={self.address} -c port=5432 -c unix_socket_directories={self.folder} "
                   "-c max_connections=100 -c fsync=off -c full_page_writes=off -c wal_level=replica "
                   "-c max_wal_senders=5 -c hot_standby=on -c cluster_name=" + self.name)
        if synchronous:
            options += " -c synchronous_standby_names=*"
        self.as_postgres(f"{pg_bin()}/pg_ctl", "-D", self.data, "-l", os.path.join(self.folder, "server.log"),
                         "-w", "-t", "60", "-s", "start", "-o", options)

    def promote(self):
        self.as_postgres(f"{pg_bin()}/pg_ctl", "-D", self.data, "-w", "-s", "promote", namespace=False)

    def stop(self):
        self.as_postgres(f"{pg_bin()}/pg_ctl", "-D", self.data, "-m", "immediate", "-s", "stop", namespace=False,
                         ) if os.path.exists(os.path.join(self.data, "postmaster.pid")) else None

    def url(self, database="thumbd"):
        return f"postgresql://postgres@{self.address}:5432/{database}"

    def sql(self, statement, *params):
        args = ["psql", self.url(), "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1"]
        for i, value in enumerate(params):
            args += ["-v", f"p{i + 1}={value}"]
        result = run(*args, input=statement)
        return [line.split("\t") for line in result.stdout.splitlines() if line]


class Worker:
    def __init__(self, index, thumbd, url, storage, origin_port, receiver_port, folder):
        self.log_path = os.path.join(folder, f"worker{index}.log")
        environment = dict(
            PATH=os.environ.get("PATH", "/usr/bin:/bin"), DATABASE_URL=url, THUMBD_STORAGE=f"file://{storage}",
            THUMBD_ALLOW_HOSTS=CORE, THUMBD_CONCURRENCY="2", THUMBD_WORKER_ID=f"fo-w{index}",
            THUMBD_WEBHOOK_URL=f"http://{CORE}:{receiver_port}/hook", THUMBD_WEBHOOK_SECRET=SECRET,
            THUMBD_WEBHOOK_ALLOW_HOSTS=CORE, THUMBD_ERASE_GRACE="2", THUMBD_GC_INTERVAL="2",
            THUMBD_HTTP_ADDRESS="off", THUMBD_LOG_FORMAT="text")
        self.process = subprocess.Popen(
            ["ip", "netns", "exec", Network.parts(f"w{index}")[0], thumbd, "worker"], env=environment,
            stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT)

    def stop(self, timeout=40):
        self.process.send_signal(15)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return "hung"


def received(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_received", timeout=5) as answer:
        return json.load(answer)


def wait_until(condition, timeout, step=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


def one_run(args, number, photos):
    work = tempfile.mkdtemp(prefix="thumbd-failover-")
    os.chmod(work, 0o755)
    names = dict(HOSTS, **{f"w{i}": f"10.78.0.{10 + i}" for i in range(1, args.workers + 1)})
    network = Network(names)
    primary, standby = Server("db1", work), Server("db2", work)
    origin = receiver = None
    workers = []
    result = {"run": number}
    try:
        primary.init_primary()
        primary.start(synchronous=True)
        standby.init_standby(primary)
        standby.start()
        run(f"{pg_bin()}/createdb", "-h", primary.address, "-U", "postgres", "thumbd")
        run(args.thumbd, "migrate", env=dict(os.environ, DATABASE_URL=primary.url()))
        origin = Origin(photos, work, host=CORE, timeout=5)
        receiver = subprocess.Popen(
            [os.path.expanduser(args.venv) + "/bin/python", os.path.join(REPO, "Tests/Support/webhook-receiver.py"),
             "--secret", SECRET, "--port", "0", "--schemas", os.path.join(REPO, "docs/schemas")],
            stdout=subprocess.PIPE, text=True)
        receiver_port = int(receiver.stdout.readline().split()[1])
        # The receiver listens on loopback; the workers reach it through a forwarder on the bridge.
        forward = subprocess.Popen(
            [sys.executable, os.path.join(REPO, "Tests/Support/freeze-proxy.py"), "--listen", CORE,
             "--target", f"127.0.0.1:{receiver_port}"], stdout=subprocess.PIPE, text=True)
        hook_port = int(forward.stdout.readline().split()[1])
        storage = os.path.join(work, "thumbnails")
        os.makedirs(storage)
        url = (f"postgresql://postgres@{HOSTS['db1']}:5432,{HOSTS['db2']}:5432/thumbd"
               "?target_session_attrs=read-write")
        names_of_photos = sorted(os.listdir(photos))
        first = args.jobs * 2 // 3
        for i in range(first):
            photo = names_of_photos[i % len(names_of_photos)]
            primary.sql("SELECT thumbs.enqueue(:'p1', external_id => :'p2')",
                        f"http://{CORE}:{origin.port}/files/{photo}?r={number}&i={i}", f"p{number}-{i}")
        workers = [Worker(i, args.thumbd, url, storage, origin.port, hook_port, work)
                   for i in range(1, args.workers + 1)]
        # Cut while work is under way: a third of the first share done.
        wait_until(lambda: int(primary.sql("SELECT count(*) FROM thumbs.jobs WHERE state = 'succeeded'")[0][0])
                   >= first // 3, 120)
        network.vanish("db1")
        cut = time.time()
        log(f"run {number}: the primary's host vanished")
        time.sleep(3)
        standby.promote()
        promoted = time.time()
        log(f"run {number}: the standby was promoted")
        for i in range(first, args.jobs):
            photo = names_of_photos[i % len(names_of_photos)]
            standby.sql("SELECT thumbs.enqueue(:'p1', external_id => :'p2')",
                        f"http://{CORE}:{origin.port}/files/{photo}?r={number}&i={i}", f"p{number}-{i}")
        standby.sql("SELECT thumbs.forget_external(:'p1')", f"p{number}-0")

        def first_finished():
            rows = standby.sql("SELECT extract(epoch FROM min(finished_at)) FROM thumbs.jobs "
                               "WHERE state = 'succeeded' AND finished_at > to_timestamp(:p1)", promoted)
            return float(rows[0][0]) if rows and rows[0] and rows[0][0] else None
        wait_until(lambda: first_finished() is not None, 120)
        finished = first_finished()
        result["first_job_after_promotion_s"] = round(finished - promoted, 2) if finished else None
        result["cut_to_promotion_s"] = round(promoted - cut, 2)
        log(f"run {number}: first job on the new primary {result['first_job_after_promotion_s']} s after the promotion")

        drained = wait_until(lambda: standby.sql(
            "SELECT count(*) FROM thumbs.jobs WHERE state IN ('queued', 'running')")[0][0] == "0", 300, 1)
        events = {f"evt_{r[0]}" for r in standby.sql("SELECT id FROM thumbs.events")}
        delivered = wait_until(lambda: events <= {a["id"] for a in received(receiver_port)["accepted"]}, 120, 1)
        held = {}
        held["queue drained"] = drained
        states = dict(standby.sql("SELECT state, count(*) FROM thumbs.jobs GROUP BY 1"))
        held["every job succeeded (or forgotten)"] = set(states) <= {"succeeded", "forgotten"}
        held["no job over its attempts"] = standby.sql(
            "SELECT count(*) FROM thumbs.jobs WHERE attempts > max_attempts")[0][0] == "0"
        held["one set of variant rows per succeeded job"] = standby.sql(
            "SELECT count(*) FROM thumbs.jobs j WHERE (SELECT count(*) FROM thumbs.variants v WHERE v.job_id = j.id)"
            f" <> CASE WHEN j.state = 'succeeded' THEN {VARIANTS} ELSE 0 END")[0][0] == "0"
        current = [r[0] for r in standby.sql("SELECT DISTINCT storage_key FROM thumbs.photo_variants")]
        held["every current thumbnail in storage"] = all(os.path.exists(os.path.join(storage, k)) for k in current)
        held["every event delivered, each valid"] = delivered and not received(receiver_port)["invalid"]
        codes = [w.stop() for w in workers]
        workers = []
        held["every worker exits 0 on SIGTERM"] = all(code == 0 for code in codes)
        result["jobs"] = states
        result["held"] = held
        result["ok"] = all(held.values())
        for name, ok in held.items():
            log(f"run {number}: {'held' if ok else 'BROKEN'}: {name}")
        forward.kill()
    finally:
        for worker in workers:
            worker.process.kill()
        if receiver:
            receiver.kill()
        if origin:
            origin.stop()
        for server in (primary, standby):
            try:
                server.stop()
            except RuntimeError:
                pass
        network.cleanup()
        if args.keep:
            log(f"run {number}: kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--thumbd", required=True)
    parser.add_argument("--photos", required=True, help="a folder of JPEG photos")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=120)
    parser.add_argument("--venv", default=os.environ.get("THUMBD_TEST_VENV", "~/.cache/thumbd/test-venv"))
    parser.add_argument("--json")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("failover: needs root (network namespaces)")
    photos = os.path.abspath(args.photos)
    results = [one_run(args, n, photos) for n in range(1, args.runs + 1)]
    figures = [r["first_job_after_promotion_s"] for r in results if r.get("first_job_after_promotion_s")]
    summary = {"runs": results, "median_first_job_after_promotion_s": statistics.median(figures) if figures else None}
    log(f"first job after the promotion: {figures} s, median {summary['median_first_job_after_promotion_s']} s")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(summary, out, indent=2)
    ok = all(r.get("ok") for r in results) and len(figures) == len(results) and max(figures) < 30
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
