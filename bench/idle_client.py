#!/usr/bin/env python3
"""bench/job's backend for --idle: enqueues one upload at a time, as a photo backend would, and waits for
each to end before the next.

    idle_client.py DATABASE_URL REST_SECONDS < urls

A backend enqueues from a connection it keeps open (its pool's), so this does too: one connection,
opened before the first upload, enqueues every URL with `SELECT thumbs.enqueue(url)`. A fresh psql
for each upload would count its backend's start (cold catalog caches, about 6 ms here) in the wait it
measures. A second connection LISTENs on thumbs_events, where the outcome's transaction notifies, and
looks at the job when notified (and every 0.1 s besides), so that the wait is not spent polling.

Prints one JSON list: per upload an object with its state and, in ms, from the job row: to_thumbnails
(created_at to finished_at), to_lease (created_at to started_at), and render (decode, resize and
encode), fetch and store (stage_ms).
Needs psycopg 3 (bench/setup.sh puts it in its virtualenvs).
"""
import json
import sys
import time

import psycopg
from psycopg.rows import dict_row

FINAL = ("succeeded", "failed", "cancelled")
ROW = """SELECT state,
       extract(epoch FROM finished_at - created_at)::float * 1000 AS to_thumbnails,
       extract(epoch FROM started_at - created_at)::float * 1000 AS to_lease,
       coalesce((stage_ms->>'decode')::float, 0) + coalesce((stage_ms->>'resize')::float, 0)
         + coalesce((stage_ms->>'encode')::float, 0) AS render,
       coalesce((stage_ms->>'fetch')::float, 0) AS fetch, coalesce((stage_ms->>'store')::float, 0) AS store
  FROM thumbs.jobs WHERE id = %s"""


def main():
    database_url, rest = sys.argv[1], float(sys.argv[2])
    urls = [line.strip() for line in sys.stdin if line.strip()]
    measured = []
    with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as backend, \
            psycopg.connect(database_url, autocommit=True) as listener:
        listener.execute("LISTEN thumbs_events")
        backend.execute("SELECT 1")  # connected and warm before the first upload, as a pool's would be
        for url in urls:
            job_id = backend.execute("SELECT thumbs.enqueue(%s) AS id", (url,)).fetchone()["id"]
            deadline = time.monotonic() + 60
            while True:
                row = backend.execute(ROW, (job_id,)).fetchone()
                if row["state"] in FINAL:
                    break
                if time.monotonic() > deadline:
                    sys.exit(f"idle_client: job {job_id} ({url}) not ended within 60 s: {row['state']}")
                for _ in listener.notifies(timeout=0.1, stop_after=1):
                    pass
            measured.append(row)
            time.sleep(rest)  # the worker idle again before the next upload
    json.dump(measured, sys.stdout)


if __name__ == "__main__":
    main()
