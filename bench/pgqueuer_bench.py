"""The pgqueuer side of bench/queue: queue throughput and wake-up latency of pgqueuer on PostgreSQL.

    pgqueuer_bench.py throughput --jobs N [--batch 100] [--dsn DSN]
    pgqueuer_bench.py latency --jobs N [--warmup 20] [--dsn DSN] [--seed S]

Run with bench/setup.sh's virtualenv python (pgqueuer + asyncpg). The DSN is --dsn or DATABASE_URL. Both
modes install pgqueuer's schema when it is missing (Queries.install(), what `pgq install` does, with its
defaults: durability "durable", i.e. logged tables, no table prefix, the search_path's schema) and empty
pgqueuer's queue and log tables (TRUNCATE) before they start. The database should be one of its own:
nothing else is touched, but pgqueuer's tables, trigger and NOTIFY channel are created in it.

Driver and worker, in both modes: one asyncpg connection wrapped in pgqueuer.db.AsyncpgDriver (the
pattern of pgqueuer's own README), a pgqueuer.QueueManager over Queries(driver) with one entrypoint
registered by @qm.entrypoint(...) with the defaults (concurrency_limit=0, i.e. unlimited; on_failure
"delete"), an `async def` that does nothing but what is said below. QueueManager.run()'s other
arguments are left at pgqueuer 1.6.0's defaults: dequeue_timeout 30 s, max_concurrent_tasks None
(unlimited), heartbeat_timeout 30 s, log_aggregation_interval 30 s, shutdown_on_listener_failure
False. LISTEN/NOTIFY is on, as it always is in pgqueuer: the queue table's statement trigger NOTIFYs
the channel on every INSERT/UPDATE/DELETE, and an idle worker waits on that channel (or the
dequeue_timeout) before it dequeues again. The job status log buffer (pgqueuer's own: flushed at
batch_size entries or every ~0.1 s) moves finished jobs from the queue table to pgqueuer_log.

throughput
    Enqueues N jobs for the no-op entrypoint in bulk (Queries.enqueue with lists, in chunks of 10,000;
    not timed), then runs QueueManager.run(batch_size=B, mode=QueueExecutionMode.drain) (B = --batch,
    default 100) and times it with time.perf_counter() from just before run() is called to just after it
    returns: the worker start-up (schema check, LISTEN), every dequeue (SELECT ... FOR UPDATE SKIP
    LOCKED + UPDATE to 'picked', B jobs at a time), one asyncio task per job, the status log writes
    (DELETE from the queue, INSERT into pgqueuer_log) and the final buffer flush. Drain mode returns
    once the queue has no job left for the entrypoint and no task is running. Afterwards it checks that
    the entrypoint ran exactly N times and that the queue table is empty.
    Prints `pgqueuer <version> throughput: jobs=N batch_size=B elapsed_s=<s>` and, as its LAST line,
    `jobs_per_second=<N / elapsed>`.

latency
    Starts one worker (QueueManager.run() in continuous mode with all defaults, batch_size 10) in this
    process, and enqueues from a second asyncpg connection (Queries(AsyncpgDriver(conn2)).enqueue of one
    job, payload = a sequence number) on the same event loop. The entrypoint records time.perf_counter()
    as its first statement, keyed by payload. First --warmup jobs (default 20, one at a time, not
    counted), then 0.3 s for the worker to go idle; then N times: t0 = perf_counter(); enqueue ONE job;
    wait until the entrypoint for that job has started; latency = start - t0; sleep a random 5-20 ms
    (uniform; --seed, default 1) so the worker is idle again. The latency thus includes the enqueue's own
    round trip (INSERT + commit, whose trigger sends the NOTIFY), the notification's delivery, pgqueuer's
    dequeue query and the dispatch of the task. Note that pgqueuer's log buffer flushes a finished job
    ~0.1 s later, and the DELETE's NOTIFY wakes the worker for a dequeue of nothing; a job enqueued then
    waits for that, which is pgqueuer's normal behaviour under sparse load and is part of the figures.
    Percentiles are linear interpolation between the closest ranks (like numpy's default).
    Prints `pgqueuer <version> latency: jobs=N warmup=W mean_ms= p90_ms= max_ms= enqueue_call_p50_ms=`
    (the last: how long the enqueue call itself took to return, a diagnostic) and, as its LAST line,
    `p50_ms=<n> p99_ms=<n>` (milliseconds, 3 decimals).

Any failure exits non-zero.
"""

import argparse
import asyncio
import os
import random
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in bench/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import die, log  # noqa: E402

benchlib.PROGRAM = "pgqueuer_bench"
ENTRYPOINT_THROUGHPUT = "thumbd_bench_noop"
ENTRYPOINT_LATENCY = "thumbd_bench_latency"
ENQUEUE_CHUNK = 10_000


def pgqueuer_version():
    import importlib.metadata as md

    return md.version("pgqueuer")


async def prepare(dsn):
    """Installs pgqueuer's schema when missing and empties its queue and log tables."""
    import asyncpg
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.queries import Queries

    conn = await asyncpg.connect(dsn)
    try:
        queries = Queries(AsyncpgDriver(conn))
        if not await queries.schema_is_installed():
            log("pgqueuer_bench: installing pgqueuer's schema")
            await queries.install()
        await queries.clear_queue()
        await queries.clear_queue_log()
    finally:
        await conn.close()


def percentile(sorted_values, q):
    """Linear interpolation between closest ranks (numpy's default), q in [0, 100]."""
    if not sorted_values:
        raise ValueError("no values")
    pos = (len(sorted_values) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


# ------------------------------------------------------------------------------------------ throughput

async def throughput(dsn, jobs, batch):
    import asyncpg
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.qm import QueueManager
    from pgqueuer.queries import Queries
    from pgqueuer.types import QueueExecutionMode

    await prepare(dsn)

    # Enqueue (not timed), on a connection of its own that is closed before the worker starts.
    conn = await asyncpg.connect(dsn)
    try:
        queries = Queries(AsyncpgDriver(conn))
        for start in range(0, jobs, ENQUEUE_CHUNK):
            n = min(ENQUEUE_CHUNK, jobs - start)
            await queries.enqueue([ENTRYPOINT_THROUGHPUT] * n, [None] * n, [0] * n)
        table = queries.qbe.settings.qualified.queue_table
        queued = await conn.fetchval(f"SELECT count(*) FROM {table} WHERE status = 'queued'")
    finally:
        await conn.close()
    if queued != jobs:
        die(f"enqueued {jobs} jobs but pgqueuer counts {queued} queued", 1)

    conn = await asyncpg.connect(dsn)
    try:
        qm = QueueManager(Queries(AsyncpgDriver(conn)))
        ran = 0

        @qm.entrypoint(ENTRYPOINT_THROUGHPUT)
        async def noop(job):
            nonlocal ran
            ran += 1

        t0 = time.perf_counter()
        await qm.run(batch_size=batch, mode=QueueExecutionMode.drain)
        elapsed = time.perf_counter() - t0

        rows = await conn.fetchval(f"SELECT count(*) FROM {table}")
    finally:
        await conn.close()
    if ran != jobs or rows != 0:
        die(f"drain ended with the entrypoint run {ran} times of {jobs} and {rows} rows left in the "
            "queue table", 1)
    print(f"pgqueuer {pgqueuer_version()} throughput: jobs={jobs} batch_size={batch} "
          f"elapsed_s={elapsed:.3f}")
    print(f"jobs_per_second={jobs / elapsed:.1f}", flush=True)


# --------------------------------------------------------------------------------------------- latency

async def latency(dsn, jobs, warmup, seed):
    import asyncpg
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.qm import QueueManager
    from pgqueuer.queries import Queries

    await prepare(dsn)
    rng = random.Random(seed)

    enqueue_s = []  # how long each enqueue call took to return (a diagnostic, not the measure)
    started = {}  # payload -> perf_counter() at the entrypoint's first statement
    waiting = {}  # payload -> asyncio.Event

    worker_conn = await asyncpg.connect(dsn)
    enqueue_conn = await asyncpg.connect(dsn)
    worker = None
    try:
        qm = QueueManager(Queries(AsyncpgDriver(worker_conn)))

        @qm.entrypoint(ENTRYPOINT_LATENCY)
        async def mark(job):
            now = time.perf_counter()
            started[job.payload] = now
            event = waiting.get(job.payload)
            if event is not None:
                event.set()

        worker = asyncio.create_task(qm.run())
        enqueuer = Queries(AsyncpgDriver(enqueue_conn))

        async def one(seq):
            payload = str(seq).encode()
            event = waiting[payload] = asyncio.Event()
            t0 = time.perf_counter()
            await enqueuer.enqueue(ENTRYPOINT_LATENCY, payload)
            enqueue_s.append(time.perf_counter() - t0)
            try:
                await asyncio.wait_for(event.wait(), timeout=30)
            except asyncio.TimeoutError:
                if worker.done():
                    worker.result()  # raises the worker's exception
                die(f"job {seq} did not start within 30 s", 1)
            del waiting[payload]
            return started.pop(payload) - t0

        for seq in range(warmup):
            await one(-1 - seq)
            await asyncio.sleep(rng.uniform(0.005, 0.020))
        await asyncio.sleep(0.3)  # worker idle: buffers flushed, waiting on LISTEN

        samples = []
        for seq in range(jobs):
            samples.append(await one(seq))
            await asyncio.sleep(rng.uniform(0.005, 0.020))
    finally:
        if worker is not None:
            qm.shutdown.set()
            try:
                await asyncio.wait_for(worker, timeout=30)
            except asyncio.TimeoutError:
                worker.cancel()
        await enqueue_conn.close()
        await worker_conn.close()

    ms = sorted(s * 1000 for s in samples)
    enq = sorted(s * 1000 for s in enqueue_s[warmup:])
    print(f"pgqueuer {pgqueuer_version()} latency: jobs={jobs} warmup={warmup} "
          f"mean_ms={sum(ms) / len(ms):.3f} p90_ms={percentile(ms, 90):.3f} max_ms={ms[-1]:.3f} "
          f"enqueue_call_p50_ms={percentile(enq, 50):.3f}")
    print(f"p50_ms={percentile(ms, 50):.3f} p99_ms={percentile(ms, 99):.3f}", flush=True)


# ------------------------------------------------------------------------------------------------ main

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", default=os.environ.get("DATABASE_URL"),
                        help="PostgreSQL URL (default: DATABASE_URL)")
    sub = parser.add_subparsers(dest="mode", required=True)
    t = sub.add_parser("throughput", help="drain N pre-enqueued no-op jobs")
    t.add_argument("--jobs", type=int, required=True)
    t.add_argument("--batch", type=int, default=100, help="QueueManager.run batch_size (default 100)")
    t.add_argument("--dsn", default=argparse.SUPPRESS)
    lat = sub.add_parser("latency", help="enqueue-to-start latency of single jobs on an idle worker")
    lat.add_argument("--jobs", type=int, required=True)
    lat.add_argument("--warmup", type=int, default=20, help="uncounted jobs first (default 20)")
    lat.add_argument("--seed", type=int, default=1, help="seed of the 5-20 ms pauses (default 1)")
    lat.add_argument("--dsn", default=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.dsn:
        die("no DSN: set DATABASE_URL or pass --dsn", 2)
    if args.jobs < 1:
        die("--jobs must be at least 1", 2)

    if args.mode == "throughput":
        if args.batch < 1:
            die("--batch must be at least 1", 2)
        asyncio.run(throughput(args.dsn, args.jobs, args.batch))
    else:
        if args.warmup < 0:
            die("--warmup must not be negative", 2)
        asyncio.run(latency(args.dsn, args.jobs, args.warmup, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
