#!/usr/bin/env python3
"""contact-sheet.py: one HTML page showing what a thumbd run made, to look at in a browser.

Every job is a row: its original beside its variants, each labelled with its size and bytes, the
ThumbHash placeholder drawn next to them, and where the job's time went; failed jobs come first, with
their error. `make demo` writes demo/index.html with it; it works on any database whose storage is a
local directory.

  contact-sheet.py --storage DIR --out FILE [--originals URL_PREFIX=DIR ...] [--limit N]

The database is DATABASE_URL (read with psql). Images are linked by paths relative to FILE, so the
folder can be moved or served as it is. --originals maps source URLs that start with URL_PREFIX to
files under DIR (the demo serves its originals from a loopback origin that is gone when the page is
opened); other originals are linked by their URL. The page needs no network and no server: the
ThumbHash decoder is the small script below.
"""

import argparse
import html
import json
import os
import subprocess
import sys
import urllib.parse

# One JSON document: the run's totals and every job (newest last), with variants, attempts and the
# original's row. Read by name, so a column added to the schema changes nothing here.
QUERY = r"""
SELECT json_build_object(
  'totals', (SELECT json_build_object(
      'jobs', count(*),
      'succeeded', count(*) FILTER (WHERE state = 'succeeded'),
      'failed', count(*) FILTER (WHERE state = 'failed'),
      'other', count(*) FILTER (WHERE state NOT IN ('succeeded', 'failed')),
      'reused', count(*) FILTER (WHERE reused_from IS NOT NULL),
      'first_created', min(created_at), 'last_finished', max(finished_at),
      'wall_seconds', extract(epoch FROM max(finished_at) - min(started_at)))
    FROM (SELECT * FROM thumbs.jobs ORDER BY id DESC LIMIT :limit) j),
  'variant_totals', (SELECT json_build_object('count', count(*), 'bytes', coalesce(sum(v.bytes), 0))
    FROM thumbs.variants v
    WHERE v.job_id IN (SELECT id FROM thumbs.jobs ORDER BY id DESC LIMIT :limit)),
  'jobs', coalesce((SELECT json_agg(row_to_json(x) ORDER BY x.state <> 'failed', x.id) FROM (
    SELECT j.id, j.source_url, j.profile, j.state, j.attempts, j.max_attempts, j.error_code,
           j.last_error, j.thumbhash, j.reused_from, j.stage_ms, j.media,
           extract(epoch FROM j.finished_at - j.started_at) AS run_seconds,
           extract(epoch FROM j.started_at - j.created_at) AS wait_seconds,
           o.bytes AS original_bytes, o.width AS original_width, o.height AS original_height,
           o.format AS original_format,
           coalesce((SELECT json_agg(json_build_object('name', v.name, 'width', v.width,
                        'height', v.height, 'format', v.format, 'bytes', v.bytes,
                        'storage_key', v.storage_key) ORDER BY greatest(v.width, v.height) DESC, v.name)
                       FROM thumbs.variants v WHERE v.job_id = j.id), '[]') AS variants
      FROM (SELECT * FROM thumbs.jobs ORDER BY id DESC LIMIT :limit) j
      LEFT JOIN thumbs.originals o ON o.url = j.source_url) x), '[]')
)
"""

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; background: #fafafa; }
h1 { font-size: 20px; margin: 0 0 4px; }
.summary { color: #555; margin-bottom: 20px; }
.job { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-end; background: #fff; border: 1px solid #ddd;
       border-radius: 6px; padding: 12px; margin-bottom: 12px; }
.job.failed { border-color: #d33; background: #fff5f5; align-items: flex-start; }
figure { margin: 0; flex: none; text-align: center; }
figure img, figure canvas, figure video { display: block; height: 112px; width: auto; margin: 0 auto 4px;
                           box-shadow: 0 0 0 1px #ccc; background: #eee; }
figure a.unshown { display: flex; align-items: center; justify-content: center; height: 112px;
                   width: 112px; margin: 0 auto 4px; background: #eee; color: #555; }
figcaption { font-size: 12px; color: #555; white-space: nowrap; }
figcaption b { color: #222; }
.meta { flex: none; width: 220px; font-size: 12px; color: #444; align-self: stretch; }
.meta .url { word-break: break-all; font-family: ui-monospace, monospace; }
.meta table { border-collapse: collapse; margin-top: 6px; }
.meta td { padding: 0 8px 0 0; }
.meta td.n { text-align: right; font-variant-numeric: tabular-nums; }
.error { font-family: ui-monospace, monospace; color: #a00; white-space: pre-wrap; }
"""

# Draws each <canvas data-thumbhash> from its hash: the inverse of the encoder in
# Sources/ThumbCore/ThumbHash.swift (the published ThumbHash layout). Written for this page.
SCRIPT = r"""
function thumbHashToRGBA(bytes, w, h) {
  const h24 = bytes[0] | bytes[1] << 8 | bytes[2] << 16, h16 = bytes[3] | bytes[4] << 8;
  const lDC = (h24 & 63) / 63, pDC = (h24 >> 6 & 63) / 31.5 - 1, qDC = (h24 >> 12 & 63) / 31.5 - 1;
  const lScale = (h24 >> 18 & 31) / 31, hasAlpha = (h24 >> 23) !== 0;
  const pScale = (h16 >> 3 & 63) / 63, qScale = (h16 >> 9 & 63) / 63, landscape = (h16 >> 15) !== 0;
  const limit = hasAlpha ? 5 : 7, stored = h16 & 7;
  const lx = Math.max(3, landscape ? limit : stored), ly = Math.max(3, landscape ? stored : limit);
  let aDC = 1, aScale = 0;
  if (hasAlpha) { aDC = (bytes[5] & 15) / 15; aScale = (bytes[5] >> 4) / 15; }
  let nibble = 0; const start = hasAlpha ? 6 : 5;
  function channel(nx, ny, scale) {
    const terms = [];
    for (let cy = 0; cy < ny; cy++)
      for (let cx = cy ? 0 : 1; cx * ny < nx * (ny - cy); cx++, nibble++) {
        const q = (bytes[start + (nibble >> 1)] >> ((nibble & 1) << 2)) & 15;
        terms.push([cx, cy, (q / 7.5 - 1) * scale]);
      }
    return terms;
  }
  const L = channel(lx, ly, lScale), P = channel(3, 3, pScale), Q = channel(3, 3, qScale);
  const A = hasAlpha ? channel(5, 5, aScale) : [];
  // The encoder keeps mean(value * cos * cos): a term with both frequencies non-zero carries a quarter
  // of its amplitude, a term with one a half.
  function at(terms, dc, x, y) {
    let v = dc;
    for (const [cx, cy, f] of terms)
      v += f * (cx && cy ? 4 : 2) * Math.cos(Math.PI / w * cx * (x + 0.5)) * Math.cos(Math.PI / h * cy * (y + 0.5));
    return v;
  }
  const rgba = new Uint8ClampedArray(w * h * 4);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) {
    const l = at(L, lDC, x, y), p = at(P, pDC, x, y), q = at(Q, qDC, x, y);
    const b = l - 2 / 3 * p, r = (3 * l - b + q) / 2, g = r - q, i = (x + y * w) * 4;
    rgba[i] = 255 * r; rgba[i + 1] = 255 * g; rgba[i + 2] = 255 * b;
    rgba[i + 3] = 255 * (hasAlpha ? at(A, aDC, x, y) : 1);
  }
  return rgba;
}
for (const canvas of document.querySelectorAll('canvas[data-thumbhash]')) {
  const bytes = Uint8Array.from(atob(canvas.dataset.thumbhash), c => c.charCodeAt(0));
  const ctx = canvas.getContext('2d');
  ctx.putImageData(new ImageData(thumbHashToRGBA(bytes, canvas.width, canvas.height), canvas.width, canvas.height), 0, 0);
}
"""


def fail(message):
    print(f"contact-sheet: {message}", file=sys.stderr)
    sys.exit(1)


def load(database_url, limit):
    query = QUERY.replace(":limit", str(limit))
    try:
        out = subprocess.run(
            ["psql", database_url, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", query],
            check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        fail("psql is not installed (Debian: postgresql-client)")
    except subprocess.CalledProcessError as error:
        fail(f"psql failed: {error.stderr.strip()}")
    return json.loads(out)


def size(n):
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000


def ms(seconds):
    return "" if seconds is None else f"{seconds * 1000:,.0f} ms" if seconds >= 0.01 else f"{seconds * 1000:.1f} ms"


class Sheet:
    def __init__(self, out, storage, originals):
        self.base = os.path.dirname(os.path.abspath(out))
        self.storage = os.path.abspath(storage)
        self.originals = originals

    def link(self, path):
        """A path relative to the page, percent-encoded for an src attribute."""
        return urllib.parse.quote(os.path.relpath(path, self.base))

    def original_src(self, url):
        for prefix, directory in self.originals:
            if url.startswith(prefix):
                name = urllib.parse.unquote(url[len(prefix):].split("?", 1)[0])
                path = os.path.normpath(os.path.join(directory, name))
                if path.startswith(os.path.abspath(directory) + os.sep) and os.path.isfile(path):
                    return self.link(path)
        return url

    def job(self, job):
        e = html.escape
        rows = [("attempts", f"{job['attempts']} of {job['max_attempts']}")]
        if job["wait_seconds"] is not None:
            rows.append(("queued for", ms(job["wait_seconds"])))
        if job["run_seconds"] is not None:
            rows.append(("ran for", ms(job["run_seconds"])))
        stages = job["stage_ms"] or {}  # jsonb keeps its keys in its own order: put them in the pipeline's
        for stage in ("fetch", "decode", "resize", "encode", "store"):
            if stage in stages:
                rows.append((stage, ms(stages[stage] / 1000)))
        media = job["media"] or {}
        if media:  # a video's facts: what its poster was taken from
            facts = [f'{media["duration_seconds"]:.1f} s' if media.get("duration_seconds") else None,
                     media.get("codec"), f'{media["bit_depth"]}-bit' if media.get("bit_depth") else None,
                     media.get("dynamic_range")]
            rows.append(("video", " · ".join(str(f) for f in facts if f)))
        table = "".join(f'<tr><td>{e(k)}</td><td class="n">{e(v)}</td></tr>' for k, v in rows)
        meta = (f'<div class="meta"><div><b>job {job["id"]}</b> · {e(job["profile"])} · {e(job["state"])}'
                + (f' · reused job {job["reused_from"]}\'s variants' if job["reused_from"] else "")
                + f'</div><div class="url">{e(job["source_url"])}</div><table>{table}</table></div>')
        if job["state"] == "failed":
            error = f'<div class="error"><b>{e(job["error_code"] or "")}</b>: {e(job["last_error"] or "")}</div>'
            return f'<section class="job failed" data-job="{job["id"]}">{meta}{error}</section>'

        figures = []
        media = job["media"] or {}
        ow, oh = job["original_width"] or media.get("width"), job["original_height"] or media.get("height")
        dims = f"{ow}×{oh}" if ow and oh else "size unknown"
        src = e(self.original_src(job["source_url"]))
        caption = (f'<figcaption><b>original</b> {dims} · {e(job["original_format"] or "")} · '
                   f'{size(job["original_bytes"])}</figcaption>')
        if job["original_format"] == "video":
            # Played where the browser has the codec; its thumbnails are the poster frame beside it.
            shown = f'<video src="{src}" muted loop controls preload="metadata"></video>'
        elif job["original_format"] in ("heif", "jxl"):
            # Formats most browsers do not show: a link to the file.
            shown = f'<a class="unshown" href="{src}">{e(job["original_format"])} file</a>'
        else:
            shown = f'<img src="{src}" loading="eager" alt="original of job {job["id"]}">'
        figures.append(f'<figure class="original">{shown}{caption}</figure>')
        largest = job["variants"][0] if job["variants"] else None
        if job["thumbhash"] and largest:
            # The placeholder at the variants' aspect ratio, 32 pixels on its long side, drawn by SCRIPT.
            scale = 32 / max(largest["width"], largest["height"])
            w, h = max(1, round(largest["width"] * scale)), max(1, round(largest["height"] * scale))
            figures.append(
                f'<figure class="placeholder"><canvas data-thumbhash="{e(job["thumbhash"])}" width="{w}"'
                f' height="{h}"></canvas><figcaption><b>ThumbHash</b> '
                f'{len(job["thumbhash"])} chars</figcaption></figure>')
        for variant in job["variants"]:
            path = os.path.join(self.storage, variant["storage_key"])
            figures.append(
                f'<figure class="variant" data-variant="{e(variant["name"])}">'
                f'<img src="{e(self.link(path))}" width="{variant["width"]}" height="{variant["height"]}"'
                f' alt="{e(variant["name"])} of job {job["id"]}"><figcaption><b>{e(variant["name"])}</b>'
                f' {variant["width"]}×{variant["height"]} · {e(variant["format"])} · '
                f'{size(variant["bytes"])}</figcaption></figure>')
        return f'<section class="job" data-job="{job["id"]}">{meta}{"".join(figures)}</section>'

    def page(self, data):
        t, v = data["totals"], data["variant_totals"]
        wall = f" in {t['wall_seconds']:.1f} s" if t["wall_seconds"] else ""
        summary = (f"{t['jobs']} jobs: {t['succeeded']} succeeded ({t['reused']} reusing an earlier job's "
                   f"variants), {t['failed']} failed, {t['other']} not finished{wall}; "
                   f"{v['count']} variants, {size(v['bytes'])}.")
        jobs = "\n".join(self.job(job) for job in data["jobs"])
        return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
                f'<title>thumbd contact sheet</title><style>{STYLE}</style></head>\n<body>'
                f'<h1>thumbd contact sheet</h1><div class="summary">{html.escape(summary)}</div>\n'
                f'{jobs}\n<script>{SCRIPT}</script></body></html>\n')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--storage", required=True, help="the worker's --storage directory (file://... or a path)")
    parser.add_argument("--out", required=True, help="where to write the page")
    parser.add_argument("--originals", action="append", default=[], metavar="URL_PREFIX=DIR",
                        help="show originals whose URL starts with URL_PREFIX from files under DIR")
    parser.add_argument("--limit", type=int, default=500, help="the newest N jobs (default 500)")
    args = parser.parse_args()
    database_url = os.environ.get("DATABASE_URL") or fail("DATABASE_URL is not set")
    storage = args.storage.removeprefix("file://")
    if not os.path.isdir(storage):
        fail(f"--storage {args.storage}: not a directory (the sheet shows local storage only)")
    originals = []
    for mapping in args.originals:
        prefix, sep, directory = mapping.partition("=")
        if not sep or not os.path.isdir(directory):
            fail(f"--originals {mapping}: want URL_PREFIX=DIR with an existing DIR")
        originals.append((prefix, os.path.abspath(directory)))
    sheet = Sheet(args.out, storage, originals)
    page = sheet.page(load(database_url, args.limit))
    with open(args.out, "w", encoding="utf-8") as out:
        out.write(page)
    print(os.path.abspath(args.out))


if __name__ == "__main__":
    main()
