#!/usr/bin/env python3
"""bench/job's backend for --idle: enqueues one upload at a time, as a photo backend would, and waits for
each to end before the next.

    idle_client.py DATABASE_URL REST_SECONDS < urls

A backend enqueues from a connection it keeps open (its pool's), so this does too: one connection,
opened before the first upload, enqueues every URL with `SELECT thumbs.enqueue(url)`. A fresh psql
for each upload would count its backend's start (cold catalog caches, about 6 ms here) in the wait it
measures. A second connection LISTENs on thumbs_events, where the outcome's transaction notifies, and
looks at the job when notified (and every 0.1 s besides), so that the wait is not spent polling.

Prints one JSON list: per upload [state, to thumbnails, to the lease, render, fetch, store], in ms,
from the job row: created_at to finished_at, created_at to started_at, and stage_ms.
Needs psycopg 3 (bench/setup.sh puts it in its virtualenvs).
"""
import json
import sys
import time

import psycopg

FINAL = ("succeeded", "failed", "cancelled")
ROW = """SELECT state,
       extract(epoch FROM finished_at - created_at) * 1000,
       extract(epoch FROM started_at - created_at) * 1000,
       coalesce((stage_ms->>'decode')::float, 0) + coalesce((stage_ms->>'resize')::float, 0)
         + coalesce((stage_ms->>'encode')::float, 0),
       coalesce((stage_ms->>'fetch')::float, 0), coalesce((stage_ms->>'store')::float, 0)
  FROM thumbs.jobs WHERE id = %s"""


def main():
    database_url, rest = sys.argv[1], float(sys.argv[2])
    urls = [line.strip() for line in sys.stdin if line.strip()]
    measured = []
    with psycopg.connect(database_url, autocommit=True) as backend, \
            psycopg.connect(database_url, autocommit=True) as listener:
        listener.execute("LISTEN thumbs_events")
        backend.execute("SELECT 1")  # connected and warm before the first upload, as a pool's would be
        for url in urls:
            job_id = backend.execute("SELECT thumbs.enqueue(%s)", (url,)).fetchone()[0]
            deadline = time.monotonic() + 60
            while True:
                row = backend.execute(ROW, (job_id,)).fetchone()
                if row[0] in FINAL:
                    break
                if time.monotonic() > deadline:
                    sys.exit(f"idle_client: job {job_id} ({url}) not ended within 60 s: {row[0]}")
                for _ in listener.notifies(timeout=0.1, stop_after=1):
                    pass
            measured.append([row[0]] + [float(v) if v is not None else None for v in row[1:]])
            time.sleep(rest)  # the worker idle again before the next upload
    json.dump(measured, sys.stdout)


if __name__ == "__main__":
    main()
