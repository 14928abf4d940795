"""The peer of bench/job: the thumbnail worker a team would write instead of thumbd, in Python.

    <bench/setup.sh virtualenv python> bench/peer_worker.py DATABASE_URL OUTDIR

One process renders one job at a time; bench/job starts one per core. The queue is a plain table
(SCHEMA, created by bench/job in the same PostgreSQL as thumbd's) worked the usual way: each job is
one transaction that locks its row for as long as the job takes,

    BEGIN;
    SELECT id, source_url FROM peer_jobs WHERE state = 'queued' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED;
    -- download the original (urllib), render it (pyvips), write the files
    UPDATE peer_jobs SET state = 'done', variants = ..., finished_at = clock_timestamp() WHERE id = ...;
    COMMIT;

and the process exits 0 once the SELECT finds no job. A job whose download or render fails is marked
`failed` with the error, in the same transaction (bench/job then reports it).

The render is bench/contenders.py's libvips contender (vips_render), so that the peer does the same
work as thumbd's `default` profile and nothing else:
- the original is decoded once: thumbnail_buffer to fit `large`, with shrink-on-load (a JPEG's DCT
  scaling), upright by its EXIF orientation (HEIF: libheif applies irot/imir), converted to sRGB when it
  embeds a colour profile other than sRGB (Display P3 and the like), as thumbd converts it;
- medium, small and square are resized from that decode in thumbd's cascade (bench/plan.py asks thumbd
  which earlier result each comes from), with the same boxes, fit and centre crop;
- each is a JPEG at the profile's quality, 4:2:0, optimised Huffman tables, no metadata, as thumbd
  writes them, and is written as thumbd's local storage writes a file: a temporary file, fsync, rename,
  so that a job marked done has its files on disk.

Standard library only at the top: bench/job imports SCHEMA from here without pyvips or psycopg.
"""

import json
import os
import sys
import urllib.request

SCHEMA = """
CREATE TABLE peer_jobs (
    id bigserial PRIMARY KEY,
    source_url text NOT NULL,
    state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'done', 'failed')),
    variants jsonb,
    error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE INDEX peer_jobs_queued ON peer_jobs (id) WHERE state = 'queued';
"""

LEASE = ("SELECT id, source_url FROM peer_jobs WHERE state = 'queued' ORDER BY id LIMIT 1 "
         "FOR UPDATE SKIP LOCKED")


def icc_description(profile):
    """The description of an ICC profile (v2 `desc`, v4 `mluc`'s first record), or "" when unreadable."""
    try:
        for k in range(int.from_bytes(profile[128:132], "big")):
            entry = profile[132 + 12 * k:144 + 12 * k]
            if entry[:4] != b"desc":
                continue
            offset, size = int.from_bytes(entry[4:8], "big"), int.from_bytes(entry[8:12], "big")
            tag = profile[offset:offset + size]
            if tag[:4] == b"desc":
                return tag[12:12 + int.from_bytes(tag[8:12], "big")].rstrip(b"\0").decode("latin-1")
            if tag[:4] == b"mluc":
                length, start = int.from_bytes(tag[20:24], "big"), int.from_bytes(tag[24:28], "big")
                return tag[start:start + length].decode("utf-16-be").rstrip("\0")
    except (IndexError, ValueError, UnicodeDecodeError):
        pass
    return ""


def write_durably(path, data):
    """The file at `path` with `data`, whole or not at all, and on disk before the job is marked done."""
    temporary = f"{path}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(temporary, path)


def main():
    database_url, outdir = sys.argv[1:3]
    sys.dont_write_bytecode = True  # no __pycache__ in bench/
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import psycopg
    import contenders  # noqa: E402  bench/contenders.py: the libvips contender of bench/images

    pyvips, save_opts = contenders.vips_setup()

    def render(job_id, data):
        head = pyvips.Image.new_from_buffer(data, "", access="sequential")
        # To sRGB from an embedded profile that is not sRGB already, as thumbd converts. Not otherwise:
        # libvips would then take the pixels through an sRGB-to-sRGB transform in float, which thumbd skips.
        convert = {}
        if head.get_typeof("icc-profile-data") and "srgb" not in icc_description(head.get("icc-profile-data")).lower():
            convert["export_profile"] = "srgb"

        def decode(width, height):
            return pyvips.Image.thumbnail_buffer(data, width, height=height, size="down", **convert)

        def save(name, image, quality, opts):
            write_durably(os.path.join(outdir, f"{job_id}_{name}.jpg"), image.jpegsave_buffer(Q=quality, **opts))

        return contenders.vips_render(head, decode, save, save_opts)

    with psycopg.connect(database_url, autocommit=True) as conn:
        while True:
            with conn.transaction():
                job = conn.execute(LEASE).fetchone()
                if job is None:
                    return 0
                job_id, source_url = job
                try:
                    with urllib.request.urlopen(source_url, timeout=60) as response:
                        data = response.read()
                    sizes = render(job_id, data)
                except Exception as error:  # the job fails; the worker goes on, as a real one would
                    conn.execute("UPDATE peer_jobs SET state = 'failed', error = %s, finished_at = clock_timestamp() "
                                 "WHERE id = %s", (f"{type(error).__name__}: {error}", job_id))
                    continue
                conn.execute("UPDATE peer_jobs SET state = 'done', variants = %s, finished_at = clock_timestamp() "
                             "WHERE id = %s", (json.dumps(sizes), job_id))


if __name__ == "__main__":
    sys.exit(main())
