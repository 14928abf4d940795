#!/usr/bin/env python3
"""The bad-input sweep (issue 16): broken photos of every input format through real thumbd workers.

    scripts/sweep.py --thumbd BIN --out-json FILE [--mutations 5000] [--seeds DIR...] [--seed S]
                     [--workers 2] [--job-timeout 60] [--timeout SECONDS] [--budget 256MiB]
                     [--max-pixels 100000000] [--shared DIR|none] [--findings DIR] [--keep DIR]

Seeds are valid photos of every format thumbd reads: JPEG (baseline, progressive, greyscale with
restart markers, camera files with EXIF), PNG (RGB, RGBA with eXIf and iCCP, palette with tRNS,
16-bit, interlaced grey, 1-bit), WebP (lossy, lossless, extended with alpha, EXIF and ICCP, animated),
HEIC and AVIF (with and without alpha and EXIF). They come from ../shared/corpus when it is there
(orientation/, exif/, heic/) and are otherwise made here, small: JPEG, PNG and WebP by
`thumbd thumbnail` with a spec of our own and by a PNG writer in this file, lossless and alpha WebP by
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
"""

import argparse
import concurrent.futures
import ctypes
import hashlib
import json
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import zlib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERMANENT = {"not_found", "http_error", "too_large", "blocked_source", "unsupported_format", "corrupt_image",
             "over_memory_budget", "invalid_profile"}
IMAGE_ERRORS = {"corrupt_image", "unsupported_format", "too_large", "over_memory_budget"}
TRANSIENT = {"fetch_failed", "timeout", "storage_failed", "storage_refused", "lease_expired", "internal_error"}
VARIANTS = {"large": 1600, "medium": 800, "small": 320, "square": 256}  # the default profile's boxes
FAMILIES = ["jpeg", "png", "webp", "heic", "avif"]
EXTENSIONS = {"jpeg": "jpg", "png": "png", "webp": "webp", "heic": "heic", "avif": "avif"}
LOG_ALARM = re.compile(r"fatal|crash", re.I)


def log(message):
    print(f"sweep {time.strftime('%H:%M:%S')} {message}", flush=True)


def run(*args, check=True, **kwargs):
    result = subprocess.run(list(args), capture_output=True, **kwargs)
    if check and result.returncode != 0:
        err = result.stderr if isinstance(result.stderr, str) else result.stderr.decode(errors="replace")
        raise RuntimeError(f"{' '.join(map(str, args))}: exit {result.returncode}: {err.strip()[-2000:]}")
    return result


def parse_size(text):
    match = re.fullmatch(r"(\d+)\s*(MiB|GiB|KiB|)", text)
    if not match:
        raise ValueError(f"size {text!r}: want e.g. 256MiB")
    return int(match.group(1)) * {"": 1, "KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30}[match.group(2)]


# ---------------------------------------------------------------------------------------------------
# Byte helpers


def be16(b, o):
    return struct.unpack_from(">H", b, o)[0]


def be32(b, o):
    return struct.unpack_from(">I", b, o)[0]


def le32(b, o):
    return struct.unpack_from("<I", b, o)[0]


def put16(buf, o, v):
    struct.pack_into(">H", buf, o, v & 0xFFFF)


def put32(buf, o, v):
    struct.pack_into(">I", buf, o, v & 0xFFFFFFFF)


def putle32(buf, o, v):
    struct.pack_into("<I", buf, o, v & 0xFFFFFFFF)


def putle24(buf, o, v):
    buf[o:o + 3] = struct.pack("<I", v & 0xFFFFFF)[:3]


def read_uint(b, o, size):
    if size == 0:
        return 0
    return int.from_bytes(b[o:o + size], "big") if o + size <= len(b) else None


def write_uint(buf, o, size, value):
    if size:
        buf[o:o + size] = (value % (1 << (8 * size))).to_bytes(size, "big")


def sniff(data):
    """The format family of a file by its bytes, as thumbd sniffs it (roughly), or None."""
    if data[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if data[:8] == PNG_SIGNATURE:
        return "png"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data[4:8] == b"ftyp" and len(data) >= 16:
        size = min(be32(data, 0), len(data))
        brands = [data[8:12]] + [data[o:o + 4] for o in range(16, size - 3, 4)]
        if brands[0] in (b"avif", b"avis"):
            return "avif"
        if brands[0] in HEIF_BRANDS:
            return "heic"
        for brand in brands[1:]:
            if brand in (b"avif", b"avis"):
                return "avif"
            if brand in HEIF_BRANDS:
                return "heic"
    return None


HEIF_BRANDS = {b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"hevm", b"hevs", b"mif1", b"msf1"}


# ---------------------------------------------------------------------------------------------------
# Writers for seeds: pictures, PNG, EXIF (TIFF), ICC, JPEG segments, WebP containers


def pattern(width, height):
    """A deterministic picture with gradients, edges and texture (no photo needed): RGB bytes."""
    rng = random.Random(7)
    noise = [rng.randrange(24) for _ in range(4096)]
    out = bytearray(width * height * 3)
    for y in range(height):
        for x in range(width):
            n = noise[(x * 31 + y * 17) & 4095]
            ring = ((x - width // 3) ** 2 + (y - height // 2) ** 2) // 97 % 2
            o = (y * width + x) * 3
            out[o] = (x * 255 // max(1, width - 1) + n) & 255
            out[o + 1] = (y * 255 // max(1, height - 1) + (60 if ring else 0)) & 255
            out[o + 2] = ((x + y) * 2 + n * 3) & 255
    return bytes(out)


def read_ppm(data):
    """(width, height, RGB bytes) of a binary PPM (P6) or PGM (P5, turned into RGB), as djpeg writes."""
    fields, i = [], 0
    while len(fields) < 4:
        while data[i:i + 1].isspace():
            i += 1
        if data[i:i + 1] == b"#":
            while data[i:i + 1] not in (b"\n", b""):
                i += 1
            continue
        j = i
        while not data[j:j + 1].isspace():
            j += 1
        fields.append(data[i:j])
        i = j
    i += 1
    width, height = int(fields[1]), int(fields[2])
    pixels = data[i:]
    if fields[0] == b"P5":
        pixels = bytes(v for v in pixels[:width * height] for _ in range(3))
    return width, height, bytes(pixels[:width * height * 3])


def downscale(rgb, width, height, new_width):
    """Nearest-neighbour downscale of RGB bytes (seeds only need to be small, not pretty)."""
    new_height = max(1, height * new_width // width)
    out = bytearray()
    for y in range(new_height):
        sy = y * height // new_height
        for x in range(new_width):
            sx = x * width // new_width
            o = (sy * width + sx) * 3
            out += rgb[o:o + 3]
    return bytes(out), new_width, new_height


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_chunk(kind, payload):
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def png_filter(raw_rows, bpp, cycle=True):
    """Scanlines filtered with each of the five filters in turn (so all of them are exercised)."""
    out = bytearray()
    previous = bytes(len(raw_rows[0])) if raw_rows else b""
    for n, row in enumerate(raw_rows):
        kind = n % 5 if cycle else 0
        filtered = bytearray(len(row))
        for i, value in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b = previous[i]
            c = previous[i - bpp] if i >= bpp else 0
            if kind == 0:
                predictor = 0
            elif kind == 1:
                predictor = a
            elif kind == 2:
                predictor = b
            elif kind == 3:
                predictor = (a + b) >> 1
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                predictor = a if pa <= pb and pa <= pc else b if pb <= pc else c
            filtered[i] = (value - predictor) & 255
        out.append(kind)
        out += filtered
        previous = row
    return bytes(out)


def png_encode(width, height, pixels, color_type, bit_depth, interlace=False, palette=None, trns=None,
               ancillary=()):
    """A PNG of `pixels` (one int sample list per pixel, row-major), filtered, optionally Adam7."""
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color_type]
    bpp = max(1, channels * bit_depth // 8)

    def pack_row(row_pixels):
        if bit_depth >= 8:
            out = bytearray()
            for px in row_pixels:
                for sample in px:
                    out += sample.to_bytes(bit_depth // 8, "big")
            return bytes(out)
        bits, out, acc, count = bit_depth, bytearray(), 0, 0
        for px in row_pixels:
            acc = (acc << bits) | px[0]
            count += bits
            if count == 8:
                out.append(acc)
                acc, count = 0, 0
        if count:
            out.append(acc << (8 - count))
        return bytes(out)

    if not interlace:
        data = png_filter([pack_row(pixels[y * width:(y + 1) * width]) for y in range(height)], bpp)
    else:
        data = b""
        for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4),
                               (1, 0, 2, 2), (0, 1, 1, 2)):
            rows = [pack_row([pixels[y * width + x] for x in range(x0, width, dx)])
                    for y in range(y0, height, dy)]
            rows = [r for r in rows if r] if x0 < width else []
            if rows:
                data += png_filter(rows, bpp)
    chunks = [png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0,
                                              1 if interlace else 0))]
    chunks += [png_chunk(kind, payload) for kind, payload in ancillary]
    if palette is not None:
        chunks.append(png_chunk(b"PLTE", palette))
    if trns is not None:
        chunks.append(png_chunk(b"tRNS", trns))
    compressed = zlib.compress(data, 9)
    for o in range(0, len(compressed), 8192):  # several IDAT chunks, as many writers do
        chunks.append(png_chunk(b"IDAT", compressed[o:o + 8192]))
    chunks.append(png_chunk(b"IEND", b""))
    return PNG_SIGNATURE + b"".join(chunks)


TIFF_TYPES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 7: 1, 9: 4, 10: 8}


def tiff_block(scenario="valid", rng=None, orientation=6, little=True):
    """An EXIF TIFF block: IFD0 (Make, Orientation, XResolution, Exif and GPS pointers), IFD1 (a
    thumbnail's offset and length), the Exif IFD (a date, a maker note) and the GPS IFD, then patched
    for `scenario` (see EXIF_SCENARIOS). Returns the bytes."""
    rng = rng or random.Random(0)
    e = "<" if little else ">"
    entries = {
        "ifd0": [(0x010F, 2, b"Sweep\0"), (0x0112, 3, struct.pack(e + "H", orientation)),
                 (0x011A, 5, struct.pack(e + "II", 72, 1)), (0x8769, 4, "exif"), (0x8825, 4, "gps")],
        "ifd1": [(0x0103, 3, struct.pack(e + "H", 6)), (0x0201, 4, "thumb"), (0x0202, 4, struct.pack(e + "I", 64))],
        "exif": [(0x9003, 2, b"2024:01:01 00:00:00\0"), (0x927C, 7, bytes(range(16)))],
        "gps": [(0x0001, 2, b"N\0"), (0x0002, 5, struct.pack(e + "IIIIII", 48, 1, 51, 1, 30, 1))],
    }
    order = ["ifd0", "ifd1", "exif", "gps"]
    # Layout: header, the IFDs one after another, then their out-of-line values, then a thumbnail.
    at, ifd_at = 8, {}
    for name in order:
        ifd_at[name] = at
        at += 2 + 12 * len(entries[name]) + 4
    values_at = at
    out = bytearray((b"II" if little else b"MM") + struct.pack(e + "HI", 42, 8))
    out += bytes(values_at - 8)
    positions = {}
    heap = bytearray()
    thumb_at = None
    for name in order:
        o = ifd_at[name]
        struct.pack_into(e + "H", out, o, len(entries[name]))
        positions[(name, "count")] = o
        for n, (tag, kind, value) in enumerate(entries[name]):
            p = o + 2 + 12 * n
            if isinstance(value, str):
                if value == "thumb":
                    thumb_at = p + 8
                    struct.pack_into(e + "HHII", out, p, tag, kind, 1, 0)
                else:
                    struct.pack_into(e + "HHII", out, p, tag, kind, 1, ifd_at[value])
            else:
                size = TIFF_TYPES[kind]
                count = len(value) // size
                if len(value) <= 4:
                    struct.pack_into(e + "HHI", out, p, tag, kind, count)
                    out[p + 8:p + 8 + len(value)] = value
                else:
                    struct.pack_into(e + "HHII", out, p, tag, kind, count, values_at + len(heap))
                    heap += value + (b"\0" if len(value) % 2 else b"")
            positions[(name, tag)] = p
        positions[(name, "next")] = o + 2 + 12 * len(entries[name])
        struct.pack_into(e + "I", out, positions[(name, "next")], ifd_at["ifd1"] if name == "ifd0" else 0)
    out += heap
    struct.pack_into(e + "I", out, thumb_at, len(out))
    out += b"\xff\xd8\xff\xd9" + bytes(60)  # the "thumbnail": not a real one, only bytes in range

    def put(o, fmt, *v):
        struct.pack_into(e + fmt, out, o, *v)

    huge = rng.choice([0xFFFFFFFF, 0xFFFFFFF0, 0x7FFFFFFF, len(out) + 1, len(out) - 2])
    if scenario == "valid":
        pass
    elif scenario == "ifd_count_huge":
        put(positions[("ifd0", "count")], "H", rng.choice([0xFFFF, 0x8000, 0x1000, 200]))
    elif scenario == "ifd0_outside":
        put(4, "I", huge)
    elif scenario == "ifd0_in_header":
        put(4, "I", rng.choice([0, 2, 4, 7]))
    elif scenario == "value_outside":
        tag = rng.choice([0x010F, 0x011A])
        put(positions[("ifd0", tag)] + 8, "I", huge)
    elif scenario == "orientation_type":
        p = positions[("ifd0", 0x0112)]
        put(p + 2, "H", rng.choice([0, 1, 4, 5, 7, 12, 13, 0xFFFF]))
        put(p + 4, "I", rng.choice([0, 1, 2, 0xFFFF, 0x40000000, 0xFFFFFFFF]))
    elif scenario == "orientation_value":
        put(positions[("ifd0", 0x0112)] + 8, "H", rng.choice([0, 9, 255, 0x8001, 0xFFFF]))
    elif scenario == "ifd_loop":
        which = rng.choice(["ifd0", "ifd1"])
        put(positions[(which, "next")], "I", ifd_at[rng.choice(["ifd0", which])])
    elif scenario == "subifd_loop":
        tag = rng.choice([0x8769, 0x8825])
        put(positions[("ifd0", tag)] + 8, "I", ifd_at[rng.choice(["ifd0", "exif", "gps"])])
    elif scenario == "pointer_outside":
        tag = rng.choice([0x8769, 0x8825])
        put(positions[("ifd0", tag)] + 8, "I", huge)
    elif scenario == "count_overflow":
        p = positions[("ifd0", rng.choice([0x010F, 0x011A]))]
        put(p + 4, "I", rng.choice([0x20000000, 0x40000000, 0x80000000, 0xFFFFFFFF]))
    elif scenario == "thumbnail_outside":
        put(thumb_at, "I", huge)
        put(positions[("ifd1", 0x0202)] + 8, "I", rng.choice([0xFFFFFFFF, 0x7FFFFFFF, 0]))
    elif scenario == "bad_byte_order":
        out[0:2] = rng.choice([b"XX", b"IM", b"\0\0", b"MI"])
    elif scenario == "bad_magic":
        put(2, "H", rng.choice([0, 43, 0xFFFF, 0x2A00]))
    elif scenario == "truncated":
        del out[rng.randrange(0, len(out)):]
    elif scenario == "deep_chain":
        # Hundreds of IFDs chained by their next pointers, each with one entry.
        count = rng.choice([200, 1000, 5000])
        base = len(out)
        put(positions[("ifd1", "next")], "I", base)
        for n in range(count):
            o = base + n * 18  # each IFD: count, one entry, next pointer
            out += struct.pack(e + "HHHI", 1, 0x0112, 3, 1) + struct.pack(e + "HH", orientation, 0) + struct.pack(
                e + "I", o + 18 if n + 1 < count else 0)
    elif scenario == "many_entries":
        count = rng.choice([1000, 4000])
        base = len(out)
        put(positions[("ifd1", "next")], "I", base)
        out += struct.pack(e + "H", count)
        for n in range(count):
            out += struct.pack(e + "HHI", 0x0112 if n % 7 == 0 else 0x9000 + n % 4000, 3, 1) + struct.pack(
                e + "HH", orientation, 0)
        out += struct.pack(e + "I", 0)
    else:
        raise ValueError(scenario)
    return bytes(out)


EXIF_SCENARIOS = ["valid", "ifd_count_huge", "ifd0_outside", "ifd0_in_header", "value_outside", "orientation_type",
                  "orientation_value", "ifd_loop", "subifd_loop", "pointer_outside", "count_overflow",
                  "thumbnail_outside", "bad_byte_order", "bad_magic", "truncated", "deep_chain", "many_entries"]


def s15(x):
    return struct.pack(">i", round(x * 65536))


def icc_profile(description=b"thumbd sweep RGB"):
    """A small, valid ICC v2 RGB display profile (sRGB primaries, gamma 2.2) that does not say sRGB, so
    thumbd converts through it. Returns (bytes, {tag: (table entry offset, data offset)})."""
    def xyz(x, y, z):
        return b"XYZ \0\0\0\0" + s15(x) + s15(y) + s15(z)

    desc = (b"desc\0\0\0\0" + struct.pack(">I", len(description) + 1) + description + b"\0" + bytes(4 + 4 + 2 + 1 + 67))
    curve = b"curv\0\0\0\0" + struct.pack(">IH", 1, 0x0233) + b"\0\0"
    tags = [(b"desc", desc), (b"cprt", b"text\0\0\0\0public domain\0"), (b"wtpt", xyz(0.9642, 1.0, 0.8249)),
            (b"rXYZ", xyz(0.4361, 0.2225, 0.0139)), (b"gXYZ", xyz(0.3851, 0.7169, 0.0971)),
            (b"bXYZ", xyz(0.1431, 0.0606, 0.7141)), (b"rTRC", curve), (b"gTRC", None), (b"bTRC", None)]
    table_size = 4 + 12 * len(tags)
    at = 128 + table_size
    body, table, where, curve_at = b"", b"", {}, None
    for n, (sig, payload) in enumerate(tags):
        if payload is None:  # gTRC and bTRC share rTRC's data, as many real profiles do
            offset, size = curve_at, len(curve)
        else:
            while (at + len(body)) % 4:
                body += b"\0"
            offset, size = at + len(body), len(payload)
            body += payload
            if sig == b"rTRC":
                curve_at = offset
        table += sig + struct.pack(">II", offset, size)
        where[sig] = (128 + 4 + 12 * n, offset)
    total = 128 + table_size + len(body)
    header = (struct.pack(">I", total) + b"lcms" + struct.pack(">I", 0x02100000) + b"mntrRGB XYZ "
              + struct.pack(">6H", 2024, 1, 1, 0, 0, 0) + b"acsp" + b"APPL" + bytes(4) + bytes(4) + bytes(4)
              + bytes(8) + bytes(4) + s15(0.9642) + s15(1.0) + s15(0.8249) + b"swp " + bytes(16) + bytes(28))
    assert len(header) == 128
    return header + struct.pack(">I", len(tags)) + table + body, where


def bogus_icc(rng, scenario):
    """The valid profile above, broken as `scenario` says (see ICC_SCENARIOS)."""
    profile, where = icc_profile()
    buf = bytearray(profile)
    huge = rng.choice([0xFFFFFFFF, 0x7FFFFFFF, 0xFFFFFFF0, len(buf) + 1])
    if scenario == "valid":
        pass
    elif scenario == "size_huge":
        put32(buf, 0, huge)
    elif scenario == "size_small":
        put32(buf, 0, rng.choice([0, 4, 127, 128]))
    elif scenario == "tag_count_huge":
        put32(buf, 128, rng.choice([0xFFFFFFFF, 0x10000000, 0x1555555, 1000]))
    elif scenario == "tag_offset_outside":
        entry, _ = where[rng.choice(list(where))]
        put32(buf, entry + 4, huge)
    elif scenario == "tag_size_huge":
        entry, _ = where[rng.choice(list(where))]
        put32(buf, entry + 8, huge)
    elif scenario == "curve_count_huge":
        put32(buf, where[b"rTRC"][1] + 8, rng.choice([0xFFFFFFFF, 0x7FFFFFFF, 0x10000, 2]))
    elif scenario == "wrong_space":
        buf[16:20] = rng.choice([b"CMYK", b"GRAY", b"Lab ", b"\0\0\0\0", b"5CLR"])
    elif scenario == "bad_signature":
        buf[36:40] = b"xxxx"
    elif scenario == "version_huge":
        put32(buf, 8, rng.choice([0xFF000000, 0x05000000, 0]))
    elif scenario == "tags_overlap_header":
        for entry, _ in where.values():
            put32(buf, entry + 4, rng.choice([0, 16, 128]))
    elif scenario == "truncated":
        del buf[rng.randrange(1, len(buf)):]
    elif scenario == "flipped":
        for _ in range(8):
            buf[rng.randrange(len(buf))] ^= rng.randrange(1, 256)
    else:
        raise ValueError(scenario)
    return bytes(buf)


ICC_SCENARIOS = ["valid", "size_huge", "size_small", "tag_count_huge", "tag_offset_outside", "tag_size_huge",
                 "curve_count_huge", "wrong_space", "bad_signature", "version_huge", "tags_overlap_header",
                 "truncated", "flipped"]


def jpeg_marker_segment(marker, payload, length=None):
    return b"\xff" + bytes([marker]) + struct.pack(">H", (len(payload) + 2) if length is None else length) + payload


def jpeg_insert_after_headers(data, segments_bytes, drop=None):
    """`segments_bytes` inserted after SOI and any APP0; segments for which `drop(segment, data)` holds
    are removed first."""
    segs = jpeg_segments(data)
    out = bytearray(data)
    for s in reversed(segs):
        if drop and isinstance(s["marker"], int) and drop(s, data):
            del out[s["off"]:s["end"]]
    data = bytes(out)
    segs = jpeg_segments(data)
    at = 2
    for s in segs[1:]:
        if s["marker"] == 0xE0:
            at = s["end"]
        else:
            break
    return data[:at] + segments_bytes + data[at:]


def is_exif_segment(s, data):
    return s["marker"] == 0xE1 and data[s["len_off"] + 2:s["len_off"] + 8] == b"Exif\0\0"


def is_icc_segment(s, data):
    return s["marker"] == 0xE2 and data[s["len_off"] + 2:s["len_off"] + 14] == b"ICC_PROFILE\0"


def icc_app2_segments(profile, chunk=60000):
    parts = [profile[o:o + chunk] for o in range(0, len(profile), chunk)] or [b""]
    return b"".join(jpeg_marker_segment(0xE2, b"ICC_PROFILE\0" + bytes([n + 1, len(parts)]) + part)
                    for n, part in enumerate(parts))


def riff(chunks, size=None):
    body = b"WEBP"
    for fourcc, payload in chunks:
        body += fourcc + struct.pack("<I", len(payload)) + payload + (b"\0" if len(payload) % 2 else b"")
    return b"RIFF" + struct.pack("<I", len(body) if size is None else size) + body


def vp8x_payload(flags, width, height):
    return bytes([flags, 0, 0, 0]) + struct.pack("<I", width - 1)[:3] + struct.pack("<I", height - 1)[:3]


# ---------------------------------------------------------------------------------------------------
# Encoders through ctypes (optional): libwebp and libheif, the libraries thumbd links


class LibWebP:
    def __init__(self):
        self.lib = None
        for name in ("libwebp.so.7", "libwebp.so"):
            try:
                self.lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        if self.lib:
            for fn in ("WebPEncodeLosslessRGB", "WebPEncodeRGBA", "WebPEncodeLosslessRGBA"):
                getattr(self.lib, fn).restype = ctypes.c_size_t

    def encode(self, pixels, width, height, channels, lossless, quality=80.0):
        out = ctypes.POINTER(ctypes.c_uint8)()
        buffer = (ctypes.c_uint8 * len(pixels)).from_buffer_copy(pixels)
        if lossless and channels == 3:
            size = self.lib.WebPEncodeLosslessRGB(buffer, width, height, width * 3, ctypes.byref(out))
        elif lossless:
            size = self.lib.WebPEncodeLosslessRGBA(buffer, width, height, width * 4, ctypes.byref(out))
        else:
            size = self.lib.WebPEncodeRGBA(buffer, width, height, width * 4, ctypes.c_float(quality),
                                           ctypes.byref(out))
        if not size:
            raise RuntimeError("libwebp could not encode")
        data = ctypes.string_at(out, size)
        self.lib.WebPFree(out)
        return data


class HeifError(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("subcode", ctypes.c_int), ("message", ctypes.c_char_p)]


class LibHeif:
    def __init__(self):
        self.lib = None
        try:
            self.lib = ctypes.CDLL("libheif.so.1")
        except OSError:
            return
        for fn in ("heif_context_get_encoder_for_format", "heif_image_create", "heif_image_add_plane",
                   "heif_context_encode_image", "heif_context_write_to_file", "heif_encoder_set_lossy_quality",
                   "heif_context_add_exif_metadata"):
            getattr(self.lib, fn).restype = HeifError
        self.lib.heif_image_get_plane.restype = ctypes.POINTER(ctypes.c_uint8)
        self.lib.heif_context_alloc.restype = ctypes.c_void_p
        self.lib.heif_init(None)

    def check(self, error, what):
        if error.code != 0:
            raise RuntimeError(f"libheif {what}: {error.message.decode(errors='replace')}")

    def encode(self, path, pixels, width, height, channels, av1, exif=None, quality=60):
        lib = self.lib
        context = ctypes.c_void_p(lib.heif_context_alloc())
        encoder = ctypes.c_void_p()
        self.check(lib.heif_context_get_encoder_for_format(context, 4 if av1 else 1, ctypes.byref(encoder)),
                   "no encoder")
        lib.heif_encoder_set_lossy_quality(encoder, quality)
        image = ctypes.c_void_p()
        self.check(lib.heif_image_create(width, height, 1, 10 if channels == 3 else 11, ctypes.byref(image)),
                   "image")
        self.check(lib.heif_image_add_plane(image, 10, width, height, 8), "plane")
        stride = ctypes.c_int()
        plane = lib.heif_image_get_plane(image, 10, ctypes.byref(stride))
        base = ctypes.addressof(plane.contents)
        for y in range(height):
            row = pixels[y * width * channels:(y + 1) * width * channels]
            ctypes.memmove(base + y * stride.value, row, len(row))
        handle = ctypes.c_void_p()
        self.check(lib.heif_context_encode_image(context, image, encoder, None, ctypes.byref(handle)), "encode")
        if exif:
            self.check(lib.heif_context_add_exif_metadata(context, handle, exif, len(exif)), "exif")
        self.check(lib.heif_context_write_to_file(context, path.encode()), "write")
        lib.heif_image_handle_release(handle)
        lib.heif_image_release(image)
        lib.heif_encoder_release(encoder)
        lib.heif_context_free(context)


# ---------------------------------------------------------------------------------------------------
# Seeds


def make_seeds(args, folder):
    """Valid photos of every format, small. Returns (seeds, skipped): seeds as dicts with name, family,
    kind, path, bytes, weight, origin; skipped as {what: why}."""
    os.makedirs(folder)
    seeds, skipped = [], {}

    def add(name, family, kind, data, origin, weight=1.0):
        path = os.path.join(folder, name)
        with open(path, "wb") as out:
            out.write(data)
        found = sniff(data)
        if found != family:
            raise RuntimeError(f"seed {name}: made as {family}, sniffed as {found}")
        seeds.append({"name": name, "family": family, "kind": kind, "path": path, "bytes": len(data),
                      "sha256": hashlib.sha256(data).hexdigest(), "weight": weight, "origin": origin})

    shared = args.shared
    # The picture the made seeds show: a real photo (through thumbd and djpeg) or a drawn pattern.
    work = os.path.join(folder, "_made")
    os.makedirs(work)
    if shared:
        source = os.path.join(shared, "orientation/Landscape_1.jpg")
    else:
        width, height = 480, 360
        raw = pattern(width, height)
        source = os.path.join(work, "pattern.png")
        with open(source, "wb") as out:
            out.write(png_encode(width, height, [tuple(raw[i:i + 3]) for i in range(0, len(raw), 3)], 2, 8))
    spec = {"variants": [
        {"name": "baseline", "width": 640, "height": 640, "format": "jpeg", "quality": 85},
        {"name": "progressive", "width": 640, "height": 640, "format": "jpeg", "quality": 85, "progressive": True},
        {"name": "progressive444", "width": 400, "height": 400, "format": "jpeg", "quality": 90,
         "progressive": True, "subsampling": "4:4:4"},
        {"name": "rgb", "width": 360, "height": 360, "format": "png"},
        {"name": "lossy", "width": 640, "height": 640, "format": "webp", "quality": 80},
    ]}
    spec_path = os.path.join(work, "seeds.json")
    with open(spec_path, "w") as out:
        json.dump(spec, out)
    run(args.thumbd, "thumbnail", "--out", work, "--profile", spec_path, source)
    stem = os.path.splitext(os.path.basename(source))[0]

    def made(variant, ext):
        with open(os.path.join(work, f"{stem}_{variant}.{ext}"), "rb") as f:
            return f.read()

    origin = "thumbd thumbnail of " + ("shared orientation/Landscape_1.jpg" if shared else "a drawn pattern")
    baseline = made("baseline", "jpg")
    width, height, rgb = read_ppm(run("djpeg", "-pnm", os.path.join(work, f"{stem}_baseline.jpg")).stdout)
    small, sw, sh = downscale(rgb, width, height, 320)

    # JPEG
    add("jpeg-baseline.jpg", "jpeg", "jpeg-baseline", baseline, origin)
    add("jpeg-progressive.jpg", "jpeg", "jpeg-progressive", made("progressive", "jpg"), origin)
    add("jpeg-progressive-444.jpg", "jpeg", "jpeg-progressive", made("progressive444", "jpg"), origin, 0.5)
    exif = b"Exif\0\0" + tiff_block("valid", orientation=6, little=False)
    add("jpeg-exif-icc.jpg", "jpeg", "jpeg-baseline",
        jpeg_insert_after_headers(baseline, jpeg_marker_segment(0xE1, exif) + icc_app2_segments(icc_profile()[0])),
        origin + " with an EXIF block (orientation 6, GPS) and an ICC profile added")
    if shutil.which("cjpeg"):
        ppm = os.path.join(work, "small.ppm")
        with open(ppm, "wb") as out:
            out.write(b"P6\n%d %d\n255\n" % (sw, sh) + small)
        grey = run("cjpeg", "-grayscale", "-restart", "2", "-quality", "85", ppm).stdout
        add("jpeg-grey-restart.jpg", "jpeg", "jpeg-baseline", grey, "cjpeg -grayscale -restart 2", 0.5)
        grey_progressive = run("cjpeg", "-grayscale", "-progressive", "-quality", "85", ppm).stdout
        add("jpeg-grey-progressive.jpg", "jpeg", "jpeg-progressive", grey_progressive, "cjpeg -grayscale -progressive",
            0.5)
    else:
        skipped["jpeg-greyscale"] = "cjpeg is not installed"
    if shared:
        for name, weight in (("exif/DSCN0010.jpg", 1.0), ("exif/Canon_40D.jpg", 0.5),
                             ("orientation/Portrait_5.jpg", 0.5)):
            with open(os.path.join(shared, name), "rb") as f:
                add("shared-" + os.path.basename(name), "jpeg", "jpeg-baseline", f.read(), "shared " + name, weight)

    # PNG: thumbd's own, and ours in every colour type
    add("png-rgb.png", "png", "png", made("rgb", "png"), origin)
    pw, ph = 200, max(1, sh * 200 // sw)
    tiny, _, _ = downscale(small, sw, sh, pw)
    px = [tuple(tiny[i:i + 3]) for i in range(0, len(tiny), 3)]
    alpha = [min(255, 40 + 215 * (1 - abs(2 * (i % pw) / pw - 1))) for i in range(len(px))]
    rgba = [p + (int(a),) for p, a in zip(px, alpha)]
    text_chunks = [(b"eXIf", tiff_block("valid", orientation=6)), (b"iCCP", b"sweep\0\0" + zlib.compress(icc_profile()[0]))]
    add("png-rgba-exif-icc.png", "png", "png", png_encode(pw, ph, rgba, 6, 8, ancillary=text_chunks),
        "ours: RGBA 8-bit, eXIf orientation 6, iCCP")
    palette = bytes(v for r in range(6) for g in range(6) for b in range(6) for v in (r * 51, g * 51, b * 51))
    indices = [(p[0] * 6 // 256) * 36 + (p[1] * 6 // 256) * 6 + p[2] * 6 // 256 for p in px]
    add("png-palette-trns.png", "png", "png",
        png_encode(pw, ph, [(i,) for i in indices], 3, 8, palette=palette, trns=bytes(range(0, 256, 8))),
        "ours: palette 8-bit with tRNS", 0.7)
    grey16 = [(min(65535, (p[0] * 77 + p[1] * 150 + p[2] * 29) * 257 // 256 + (i % 7)),) for i, p in enumerate(px)]
    add("png-grey16-interlaced.png", "png", "png", png_encode(pw, ph, grey16, 0, 16, interlace=True),
        "ours: grey 16-bit, Adam7 interlaced", 0.7)
    rgb16 = [tuple(v * 257 for v in p) for p in px[:pw * (ph // 2)]]
    add("png-rgb16.png", "png", "png", png_encode(pw, ph // 2, rgb16, 2, 16), "ours: RGB 16-bit", 0.5)
    grey1 = [(1 if p[1] > 127 else 0,) for p in px]
    add("png-grey1.png", "png", "png", png_encode(pw, ph, grey1, 0, 1), "ours: grey 1-bit", 0.4)

    # WebP
    lossy = made("lossy", "webp")
    add("webp-lossy.webp", "webp", "webp-lossy", lossy, origin)
    webp = LibWebP()
    if webp.lib:
        add("webp-lossless.webp", "webp", "webp-lossless", webp.encode(small, sw, sh, 3, True), "libwebp lossless")
        small_rgba = bytes(v for i in range(sw * sh) for v in (small[3 * i], small[3 * i + 1], small[3 * i + 2],
                                                                 min(255, 30 + (i % sw) * 255 // sw)))
        with_alpha = webp.encode(small_rgba, sw, sh, 4, False)
        chunks = riff_chunks(with_alpha)
        # libwebp's own VP8X + ALPH + VP8, with EXIF and ICCP chunks added (flags set to match).
        parts = [(c["fourcc"], with_alpha[c["data"]:c["data"] + c["size"]]) for c in chunks]
        parts = [(k, vp8x_payload(0x10 | 0x20 | 0x08, sw, sh) if k == b"VP8X" else v) for k, v in parts]
        parts.insert(1, (b"ICCP", icc_profile()[0]))
        parts.append((b"EXIF", tiff_block("valid", orientation=3)))
        add("webp-extended.webp", "webp", "webp-extended", riff(parts), "libwebp lossy with alpha, EXIF, ICCP")
        lossless_alpha = webp.encode(small_rgba, sw, sh, 4, True)
        add("webp-lossless-alpha.webp", "webp", "webp-lossless", lossless_alpha, "libwebp lossless with alpha", 0.5)
    else:
        skipped["webp-lossless"] = "libwebp.so.7 is not loadable (ctypes)"
        skipped["webp-extended"] = "libwebp.so.7 is not loadable (ctypes)"
    vp8 = [c for c in riff_chunks(lossy) if c["fourcc"] == b"VP8 "]
    if vp8:
        frame = lossy[vp8[0]["data"]:vp8[0]["data"] + vp8[0]["size"]]
        fw, fh = struct.unpack_from("<HH", frame, 6)
        fw, fh = fw & 0x3FFF, fh & 0x3FFF
        anmf = [(b"ANMF", putframe(0, 0, fw, fh, 100) + b"VP8 " + struct.pack("<I", len(frame)) + frame
                 + (b"\0" if len(frame) % 2 else b"")) for _ in range(2)]
        add("webp-animated.webp", "webp", "webp-extended",
            riff([(b"VP8X", vp8x_payload(0x02, fw, fh)), (b"ANIM", bytes(4) + struct.pack("<H", 0))] + anmf),
            "ours: two ANMF frames of thumbd's lossy WebP", 0.4)

    # HEIC and AVIF: the shared files, and small ones made with libheif
    heif = LibHeif()
    if shared:
        for name, family in (("heic/IMG_5195.HEIC", "heic"), ("heic/example.heic", "heic"), ("heic/example.avif", "avif")):
            with open(os.path.join(shared, name), "rb") as f:
                data = f.read()
            add("shared-" + os.path.basename(name), family, family, data, "shared " + name,
                min(1.0, 120000 / len(data)))
    small_rgba = bytes(v for i in range(sw * sh) for v in (small[3 * i], small[3 * i + 1], small[3 * i + 2],
                                                             255 if (i // sw) % 40 < 30 else 90))
    for family in ("heic", "avif"):
        if not heif.lib:
            skipped[f"{family}-made"] = "libheif.so.1 is not loadable (ctypes)"
            continue
        for channels, exif_data, suffix in ((3, tiff_block("valid", orientation=1, little=False), "exif"),
                                            (4, None, "alpha")):
            path = os.path.join(work, f"{family}-{suffix}.{family}")
            try:
                heif.encode(path, small if channels == 3 else small_rgba, sw, sh, channels, family == "avif",
                            exif=exif_data)
            except RuntimeError as error:
                skipped[f"{family}-{suffix}"] = str(error)
                continue
            with open(path, "rb") as f:
                add(f"{family}-{suffix}.{family}", family, family, f.read(),
                    f"libheif {'AV1' if family == 'avif' else 'HEVC'} {sw}x{sh}"
                    + (" with EXIF" if exif_data else " with alpha"))

    for folder_name in args.seeds or []:
        for name in sorted(os.listdir(folder_name)):
            path = os.path.join(folder_name, name)
            if not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                data = f.read()
            family = sniff(data)
            if not family:
                continue
            if len(data) > 1_500_000 and family in ("jpeg", "png", "webp"):
                data = shrink(args, work, path, family, data)
            kind = family
            if family == "jpeg":
                kind = "jpeg-progressive" if any(s["marker"] == 0xC2 for s in jpeg_segments(data)) else "jpeg-baseline"
            elif family == "webp":
                first = data[12:16]
                kind = {b"VP8 ": "webp-lossy", b"VP8L": "webp-lossless"}.get(first, "webp-extended")
            add("extra-" + name, family, kind, data, path, min(1.0, 200000 / len(data)))
    for family in FAMILIES:
        if not any(s["family"] == family for s in seeds):
            skipped[family] = skipped.get(family, "no seed of this format")
    return seeds, skipped


def putframe(x, y, width, height, duration, flags=0):
    """An ANMF header: X/2, Y/2, width-1, height-1, duration (24 bits each) and flags."""
    return (struct.pack("<I", x // 2)[:3] + struct.pack("<I", y // 2)[:3] + struct.pack("<I", width - 1)[:3]
            + struct.pack("<I", height - 1)[:3] + struct.pack("<I", duration)[:3] + bytes([flags]))


def shrink(args, work, path, family, data):
    """A large extra seed, downscaled by thumbd into the same format (1024 px box)."""
    spec = {"variants": [{"name": "small", "width": 1024, "height": 1024, "quality": 85,
                          "format": {"jpeg": "jpeg", "png": "png", "webp": "webp"}[family]}]}
    if family == "jpeg" and any(s["marker"] == 0xC2 for s in jpeg_segments(data)):
        spec["variants"][0]["progressive"] = True
    spec_path = os.path.join(work, "shrink.json")
    with open(spec_path, "w") as out:
        json.dump(spec, out)
    result = run(args.thumbd, "thumbnail", "--out", work, "--profile", spec_path, path, check=False)
    stem = os.path.splitext(os.path.basename(path))[0]
    made = os.path.join(work, f"{stem}_small.{EXTENSIONS[family]}")
    if result.returncode != 0 or not os.path.exists(made):
        return data
    with open(made, "rb") as f:
        return f.read()


# ---------------------------------------------------------------------------------------------------
# Structure parsers


def is_sof(marker):
    return isinstance(marker, int) and 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC)


def jpeg_segments(data):
    """A JPEG's markers in file order, as dicts: off (of the 0xFF), marker, len_off (of the length
    field, or None), length, end; each scan's entropy-coded data as marker "scan"."""
    segs, n = [], len(data)
    if n < 2 or data[:2] != b"\xff\xd8":
        return segs
    segs.append({"off": 0, "marker": 0xD8, "len_off": None, "length": 0, "end": 2})
    i = 2
    while i + 1 < n:
        if data[i] != 0xFF:
            i += 1
            continue
        j = i
        while j < n and data[j] == 0xFF:
            j += 1
        if j >= n:
            break
        m = data[j]
        if m == 0x00:
            i = j + 1
            continue
        if m in (0xD8, 0xD9, 0x01) or 0xD0 <= m <= 0xD7:
            segs.append({"off": j - 1, "marker": m, "len_off": None, "length": 0, "end": j + 1})
            i = j + 1
            if m == 0xD9:
                break
            continue
        if j + 2 >= n:
            break
        length = be16(data, j + 1)
        end = min(n, j + 1 + length)
        segs.append({"off": j - 1, "marker": m, "len_off": j + 1, "length": length, "end": end})
        i = max(end, j + 1)
        if m == 0xDA:
            k = i
            while k + 1 < n and not (data[k] == 0xFF and data[k + 1] not in (0x00, 0xFF)
                                     and not 0xD0 <= data[k + 1] <= 0xD7):
                k += 1
            k = n if k + 1 >= n else k
            segs.append({"off": i, "marker": "scan", "len_off": None, "length": k - i, "end": k})
            i = k
    return segs


def png_chunks(data):
    """A PNG's chunks: off, length, type, data (offset), crc (offset)."""
    chunks = []
    if data[:8] != PNG_SIGNATURE:
        return chunks
    i = 8
    while i + 8 <= len(data):
        length = be32(data, i)
        kind = bytes(data[i + 4:i + 8])
        chunks.append({"off": i, "length": length, "type": kind, "data": i + 8, "crc": i + 8 + length})
        if kind == b"IEND" or i + 12 + length > len(data):
            break
        i += 12 + length
    return chunks


def png_parts(data):
    """(type, payload) of each whole chunk, for rebuilding."""
    return [(c["type"], data[c["data"]:c["crc"]]) for c in png_chunks(data) if c["crc"] + 4 <= len(data)]


def png_fix_crc(buf, chunk):
    end = chunk["data"] + chunk["length"]
    if end + 4 <= len(buf):
        put32(buf, end, zlib.crc32(bytes(buf[chunk["off"] + 4:end])))


def riff_chunks(data, start=12, end=None):
    """A WebP's chunks: off, fourcc, size, data (offset)."""
    chunks = []
    end = len(data) if end is None else end
    if start == 12 and (data[:4] != b"RIFF" or data[8:12] != b"WEBP"):
        return chunks
    i = start
    while i + 8 <= end:
        size = le32(data, i + 4)
        chunks.append({"off": i, "fourcc": bytes(data[i:i + 4]), "size": size, "data": i + 8})
        i += 8 + size + (size & 1)
    return chunks


CONTAINERS = {b"moov", b"trak", b"mdia", b"minf", b"stbl", b"dinf", b"iprp", b"ipco", b"grpl", b"edts"}


def isobmff_boxes(data, start=0, end=None, depth=0, parent=None, out=None):
    """Every box of an ISOBMFF file, depth first: off, size, hdr, type, start (payload), end, depth,
    parent type. Descends into meta, iinf, iref, dref and the plain containers."""
    out = [] if out is None else out
    end = len(data) if end is None else end
    i = start
    while i + 8 <= end:
        size, kind, hdr = be32(data, i), bytes(data[i + 4:i + 8]), 8
        if size == 1:
            if i + 16 > end:
                break
            size, hdr = struct.unpack_from(">Q", data, i + 8)[0], 16
        elif size == 0:
            size = end - i
        if size < hdr or i + size > end:
            break
        box = {"off": i, "size": size, "hdr": hdr, "type": kind, "start": i + hdr, "end": i + size,
               "depth": depth, "parent": parent}
        out.append(box)
        skip = None
        if kind in CONTAINERS:
            skip = 0
        elif kind in (b"meta", b"iref"):
            skip = 4
        elif kind == b"dref":
            skip = 8
        elif kind == b"iinf" and box["start"] < end:
            skip = 4 + (2 if data[box["start"]] == 0 else 4)
        if skip is not None:
            isobmff_boxes(data, box["start"] + skip, box["end"], depth + 1, kind, out)
        i += size
    return out


def parse_iloc(data, box):
    """iloc's fields and their offsets, or None when it does not parse."""
    try:
        p = box["start"]
        version = data[p]
        p += 4
        offset_size, length_size = data[p] >> 4, data[p] & 15
        base_size = data[p + 1] >> 4
        index_size = data[p + 1] & 15 if version in (1, 2) else 0
        sizes_at = p
        p += 2
        count_at = p
        if version < 2:
            count, p = be16(data, p), p + 2
        else:
            count, p = be32(data, p), p + 4
        items = []
        for _ in range(count):
            item = {"id_at": p}
            if version < 2:
                item["id"], p = be16(data, p), p + 2
            else:
                item["id"], p = be32(data, p), p + 4
            item["method"], item["method_at"] = 0, None
            if version in (1, 2):
                item["method"], item["method_at"] = be16(data, p) & 15, p
                p += 2
            p += 2  # data_reference_index
            item["base_at"], item["base"] = p, read_uint(data, p, base_size)
            p += base_size
            item["count_at"], extent_count = p, be16(data, p)
            p += 2
            item["extents"] = []
            for _ in range(extent_count):
                p += index_size
                extent = {"off_at": p, "off": read_uint(data, p, offset_size)}
                p += offset_size
                extent["len_at"], extent["len"] = p, read_uint(data, p, length_size)
                p += length_size
                if extent["off"] is None or extent["len"] is None:
                    return None
                item["extents"].append(extent)
            if p > box["end"]:
                return None
            items.append(item)
        return {"version": version, "offset_size": offset_size, "length_size": length_size, "base_size": base_size,
                "sizes_at": sizes_at, "count_at": count_at, "items": items}
    except (IndexError, struct.error):
        return None


def parse_items(data, boxes):
    """item id -> {type, type_at} from the infe boxes."""
    items = {}
    for box in boxes:
        if box["type"] != b"infe" or box["end"] - box["start"] < 12:
            continue
        p = box["start"]
        version = data[p]
        if version < 2:
            continue
        if version == 2:
            item_id, q = be16(data, p + 4), p + 6
        else:
            item_id, q = be32(data, p + 4), p + 8
        items[item_id] = {"type": bytes(data[q + 2:q + 6]), "type_at": q + 2, "box": box}
    return items


def heif_item_data(data, boxes, kind):
    """(offset, length) of the first item of type `kind` stored in the file itself (construction 0), or
    in idat (construction 1); None when there is none."""
    iloc = [b for b in boxes if b["type"] == b"iloc"]
    idat = [b for b in boxes if b["type"] == b"idat"]
    if not iloc:
        return None
    parsed = parse_iloc(data, iloc[0])
    items = parse_items(data, boxes)
    if not parsed:
        return None
    for item in parsed["items"]:
        if items.get(item["id"], {}).get("type") != kind or not item["extents"]:
            continue
        extent = item["extents"][0]
        base = item["base"] or 0
        if item["method"] == 0:
            at = base + extent["off"]
        elif item["method"] == 1 and idat:
            at = idat[0]["start"] + base + extent["off"]
        else:
            continue
        length = extent["len"] or (len(data) - at)
        if 0 <= at < len(data):
            return at, min(length, len(data) - at)
    return None


def structure_offsets(family, data):
    """Offsets where a format's structures begin: markers, chunks, boxes, extents."""
    offsets = set()
    if family == "jpeg":
        for s in jpeg_segments(data):
            offsets.update((s["off"], s["end"]))
            if s["len_off"]:
                offsets.add(s["len_off"] + 2)
    elif family == "png":
        offsets.add(8)
        for c in png_chunks(data):
            offsets.update((c["off"], c["data"], c["crc"]))
    elif family == "webp":
        offsets.update((8, 12))
        for c in riff_chunks(data):
            offsets.update((c["off"], c["data"], c["data"] + c["size"]))
    else:
        boxes = isobmff_boxes(data)
        for b in boxes:
            offsets.update((b["off"], b["start"], b["end"]))
        for b in boxes:
            if b["type"] == b"iloc":
                parsed = parse_iloc(data, b)
                for item in (parsed or {}).get("items", []):
                    for e in item["extents"]:
                        offsets.update((e["off"], e["off"] + (e["len"] or 0)))
    return sorted(o for o in offsets if 0 < o < len(data))


# ---------------------------------------------------------------------------------------------------
# Mutators: each takes (data, rng, seed) and returns (bytes, params), or None when it does not apply


def m_truncate(data, rng, seed):
    mode = rng.choice(["header", "boundary", "boundary", "body", "tail", "tiny"])
    n = len(data)
    if mode == "header":
        at = rng.randrange(1, max(2, min(n, 640)))
    elif mode == "boundary":
        offsets = structure_offsets(seed["family"], data)
        if not offsets:
            return None
        at = rng.choice(offsets) + rng.choice([-2, -1, 0, 0, 1, 2, 4])
    elif mode == "body":
        at = int(n * rng.uniform(0.1, 0.98))
    elif mode == "tail":
        at = n - rng.randrange(1, 33)
    else:
        at = rng.randrange(0, 17)
    at = max(0, min(n - 1, at))
    return data[:at], {"mode": mode, "at": at, "of": n}


def m_flip(data, rng, seed):
    count = rng.choice([1, 4, 32])
    region = rng.choice(["anywhere", "header"])
    limit = len(data) if region == "anywhere" else min(len(data), 2048)
    buf = bytearray(data)
    flips = []
    for _ in range(count):
        at = rng.randrange(limit)
        value = rng.choice([1 << rng.randrange(8), rng.randrange(1, 256)])
        buf[at] ^= value
        flips.append([at, value])
    return bytes(buf), {"count": count, "region": region, "flips": flips}


# JPEG


def jpeg_pick(data, rng, want):
    segs = [s for s in jpeg_segments(data) if isinstance(s["marker"], int) and want(s)]
    return rng.choice(segs) if segs else None


def m_jpeg_sof_dims(data, rng, seed):
    s = jpeg_pick(data, rng, lambda s: is_sof(s["marker"]) and s["length"] >= 8 and s["end"] >= s["len_off"] + 7)
    if not s:
        return None
    buf = bytearray(data)
    field = rng.choice(["height", "width", "both"])
    value = rng.choice([0, 0, 1, 65535, 65535, 65500, 32768, 20000, 10000])
    if field in ("height", "both"):
        put16(buf, s["len_off"] + 3, value)
    if field in ("width", "both"):
        put16(buf, s["len_off"] + 5, value)
    return bytes(buf), {"field": field, "value": value}


def m_jpeg_sof_fields(data, rng, seed):
    s = jpeg_pick(data, rng, lambda s: is_sof(s["marker"]) and s["end"] >= s["len_off"] + 11)
    if not s:
        return None
    buf = bytearray(data)
    p = s["len_off"]
    field = rng.choice(["precision", "components", "sampling", "quant_table", "component_id"])
    if field == "precision":
        value = rng.choice([0, 1, 7, 12, 16, 255])
        buf[p + 2] = value
    elif field == "components":
        value = rng.choice([0, 2, 4, 5, 255])
        buf[p + 7] = value
    elif field == "sampling":
        value = rng.choice([0x00, 0x01, 0x10, 0x44, 0x55, 0xFF, 0x31])
        buf[p + 9 + 3 * rng.randrange(max(1, min(3, data[p + 7])))] = value
    elif field == "quant_table":
        value = rng.choice([3, 4, 7, 255])
        buf[p + 10 + 3 * rng.randrange(max(1, min(3, data[p + 7])))] = value
    else:
        value = rng.choice([0, 1, 2, 255])
        buf[p + 8 + 3 * rng.randrange(max(1, min(3, data[p + 7])))] = value
    return bytes(buf), {"field": field, "value": value}


def m_jpeg_process(data, rng, seed):
    """A SOF marker for another coding process (lossless, arithmetic, hierarchical) or DHT as DAC."""
    s = jpeg_pick(data, rng, lambda s: is_sof(s["marker"]) or s["marker"] == 0xC4)
    if not s:
        return None
    buf = bytearray(data)
    if s["marker"] == 0xC4:
        value = 0xCC
    else:
        value = rng.choice([m for m in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF)
                            if m != s["marker"]])
    buf[s["off"] + 1] = value
    return bytes(buf), {"from": hex(s["marker"]), "to": hex(value)}


def segment_length_value(rng, s, data):
    return rng.choice([0, 1, 2, 3, 0xFFFF, 0xFFFE, max(0, s["length"] - 1), s["length"] + 1,
                       max(0, s["length"] - rng.randrange(2, 20)), s["length"] + rng.randrange(2, 300),
                       len(data)])


def m_jpeg_dht(data, rng, seed):
    s = jpeg_pick(data, rng, lambda s: s["marker"] == 0xC4 and s["end"] >= s["len_off"] + 19)
    if not s:
        return None
    buf = bytearray(data)
    p = s["len_off"]
    field = rng.choice(["length", "length", "class_id", "counts_overflow", "counts_zero", "symbols"])
    if field == "length":
        value = segment_length_value(rng, s, data)
        put16(buf, p, value)
    elif field == "class_id":
        value = rng.choice([0x02, 0x04, 0x14, 0x1F, 0x20, 0xFF])
        buf[p + 2] = value
    elif field == "counts_overflow":
        value = rng.choice([0xFF, 0x80, 0x11])
        for i in range(16):
            buf[p + 3 + i] = value
    elif field == "counts_zero":
        value = 0
        for i in range(16):
            buf[p + 3 + i] = 0
    else:
        value = rng.choice([0xFF, 0xEE, 0x00])
        for i in range(p + 19, min(s["end"], p + 19 + 12)):
            buf[i] = value
    return bytes(buf), {"field": field, "value": value}


def m_jpeg_dqt(data, rng, seed):
    s = jpeg_pick(data, rng, lambda s: s["marker"] == 0xDB and s["end"] >= s["len_off"] + 67)
    if not s:
        return None
    buf = bytearray(data)
    p = s["len_off"]
    field = rng.choice(["length", "length", "precision_id", "all_zero", "all_max"])
    if field == "length":
        value = segment_length_value(rng, s, data)
        put16(buf, p, value)
    elif field == "precision_id":
        value = rng.choice([0x04, 0x0F, 0x10, 0x13, 0x20, 0xF0, 0xFF])
        buf[p + 2] = value
    elif field == "all_zero":
        value = 0
        buf[p + 3:p + 67] = bytes(64)
    else:
        value = 255
        buf[p + 3:p + 67] = b"\xff" * 64
    return bytes(buf), {"field": field, "value": value}


def m_jpeg_sos(data, rng, seed):
    s = jpeg_pick(data, rng, lambda s: s["marker"] == 0xDA and s["end"] >= s["len_off"] + 6)
    if not s:
        return None
    buf = bytearray(data)
    p = s["len_off"]
    ns = data[p + 2]
    field = rng.choice(["count", "count", "component", "tables", "spectral", "length"])
    if field == "count":
        value = rng.choice([0, 2, 4, 5, 255] if ns != 2 else [0, 1, 4, 5, 255])
        buf[p + 2] = value
    elif field == "component":
        value = rng.choice([0, 5, 0x77, 255])
        buf[p + 3] = value
    elif field == "tables":
        value = rng.choice([0x22, 0x33, 0x44, 0xFF, 0x0F])
        buf[p + 4] = value
    elif field == "spectral":
        q = p + 3 + 2 * ns
        if q + 3 > s["end"]:
            return None
        which = rng.randrange(3)
        value = rng.choice([0, 63, 64, 0xFF, 0x0F, 0xF0, 0xDD])
        buf[q + which] = value
        field = ["Ss", "Se", "AhAl"][which]
    else:
        value = segment_length_value(rng, s, data)
        put16(buf, p, value)
    return bytes(buf), {"field": field, "value": value, "components": ns}


def m_jpeg_segment_length(data, rng, seed):
    """Any segment's length (APPn, COM, DRI, SOF...), wrong."""
    s = jpeg_pick(data, rng, lambda s: s["len_off"] is not None)
    if not s:
        return None
    buf = bytearray(data)
    value = segment_length_value(rng, s, data)
    put16(buf, s["len_off"], value)
    return bytes(buf), {"marker": hex(s["marker"]), "length": s["length"], "value": value}


def m_jpeg_eoi(data, rng, seed):
    if data[-2:] != b"\xff\xd9":
        return None
    how = rng.choice(["removed", "removed", "garbage_after", "soi_instead", "twice", "early"])
    if how == "removed":
        return data[:-2], {"how": how}
    if how == "garbage_after":
        return data[:-2] + bytes(rng.randrange(256) for _ in range(rng.choice([1, 7, 100, 4096]))), {"how": how}
    if how == "soi_instead":
        return data[:-2] + b"\xff\xd8", {"how": how}
    if how == "twice":
        return data + b"\xff\xd9", {"how": how}
    scans = [s for s in jpeg_segments(data) if s["marker"] == "scan" and s["length"] > 8]
    if not scans:
        return None
    s = rng.choice(scans)
    at = s["off"] + rng.randrange(1, s["length"])
    return data[:at] + b"\xff\xd9" + data[at:], {"how": how, "at": at}


def m_jpeg_soi(data, rng, seed):
    segs = jpeg_segments(data)
    where = rng.choice(["after_soi", "before_sos", "middle", "header_copy", "missing"])
    if where == "missing":
        return data[2:], {"where": where}
    if where == "after_soi":
        at = 2
    elif where == "before_sos":
        sos = [s for s in segs if s["marker"] == 0xDA]
        if not sos:
            return None
        at = sos[0]["off"]
    elif where == "middle":
        at = rng.randrange(2, len(data))
    else:
        # The whole header again after SOI: two of each table, two frames.
        sos = [s for s in segs if s["marker"] == 0xDA]
        if not sos:
            return None
        return data[:sos[0]["off"]] + data[:sos[0]["off"]] + data[sos[0]["off"]:], {"where": where}
    return data[:at] + b"\xff\xd8" + data[at:], {"where": where, "at": at}


def m_jpeg_scan_markers(data, rng, seed):
    """Markers inside entropy-coded data: restarts, tables, stray 0xFF, a second frame."""
    scans = [s for s in jpeg_segments(data) if s["marker"] == "scan" and s["length"] > 16]
    if not scans:
        return None
    s = rng.choice(scans)
    at = s["off"] + rng.randrange(1, s["length"])
    insert = rng.choice([b"\xff\xd0", b"\xff\xd7", b"\xff\xc4", b"\xff\xdb", b"\xff\xc0", b"\xff", b"\xff\xff\xff",
                         b"\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00", b"\xff\x01", b"\xff\xdd\x00\x04\x00\x01"])
    return data[:at] + insert + data[at:], {"at": at, "inserted": insert.hex()}


def m_jpeg_restart(data, rng, seed):
    """A restart interval (DRI) that does not match the scan: 1, huge, or 0 where RSTs are present."""
    value = rng.choice([0, 1, 2, 7, 0xFFFF])
    segs = jpeg_segments(data)
    dri = [s for s in segs if s["marker"] == 0xDD]
    buf = bytearray(data)
    if dri and dri[0]["end"] >= dri[0]["len_off"] + 4:
        put16(buf, dri[0]["len_off"] + 2, value)
        return bytes(buf), {"dri": "changed", "value": value}
    sos = [s for s in segs if s["marker"] == 0xDA]
    if not sos:
        return None
    at = sos[0]["off"]
    return data[:at] + jpeg_marker_segment(0xDD, struct.pack(">H", value)) + data[at:], {"dri": "added", "value": value}


def m_jpeg_scan_flood(data, rng, seed):
    """One scan repeated hundreds or thousands of times (the progressive CPU-exhaustion attack)."""
    segs = jpeg_segments(data)
    pairs = [(segs[i], segs[i + 1]) for i in range(len(segs) - 1)
             if segs[i]["marker"] == 0xDA and segs[i + 1]["marker"] == "scan"]
    if not pairs:
        return None
    header, scan = rng.choice(pairs[1:] or pairs) if rng.random() < 0.7 else pairs[-1]
    unit = data[header["off"]:scan["end"]]
    count = rng.choice([50, 400, 600, 2000, 10000])
    count = max(2, min(count, 6_000_000 // max(1, len(unit))))
    eoi = [s for s in segs if s["marker"] == 0xD9]
    at = eoi[-1]["off"] if eoi else len(data)
    return data[:at] + unit * count + data[at:], {"scans_added": count, "scan_bytes": len(unit)}


def m_jpeg_exif(data, rng, seed):
    scenario = rng.choice(EXIF_SCENARIOS[1:] * 3 + ["valid"])
    tiff = tiff_block(scenario, rng, orientation=rng.randrange(1, 9), little=rng.random() < 0.5)
    segment_form = rng.choice(["normal"] * 6 + ["no_exif_header", "length_overrun", "length_tiny", "two_segments",
                                                 "split_over_limit"])
    payload = b"Exif\0\0" + tiff
    if len(payload) > 65533:
        payload = payload[:65533]
    if segment_form == "no_exif_header":
        segment = jpeg_marker_segment(0xE1, tiff[:65533])
    elif segment_form == "length_overrun":
        segment = jpeg_marker_segment(0xE1, payload, length=min(0xFFFF, len(payload) + 2 + rng.choice([1, 100, 60000])))
    elif segment_form == "length_tiny":
        segment = jpeg_marker_segment(0xE1, payload, length=rng.choice([2, 3, 6, 8]))
    elif segment_form == "two_segments":
        segment = jpeg_marker_segment(0xE1, payload) + jpeg_marker_segment(
            0xE1, b"Exif\0\0" + tiff_block("valid", orientation=rng.randrange(1, 9)))
    else:
        segment = jpeg_marker_segment(0xE1, payload)
    return jpeg_insert_after_headers(data, segment, drop=is_exif_segment), {
        "scenario": scenario, "segment": segment_form, "tiff_bytes": len(tiff)}


def m_jpeg_icc(data, rng, seed):
    scenario = rng.choice(ICC_SCENARIOS)
    profile = bogus_icc(rng, scenario)
    chunking = rng.choice(["one", "split", "seq_zero", "seq_over_count", "count_zero", "duplicate_seq",
                           "missing_chunk", "many_chunks", "length_overrun", "length_tiny", "empty_chunks"])
    parts = [profile]
    if chunking in ("split", "seq_zero", "seq_over_count", "duplicate_seq", "missing_chunk", "count_zero"):
        cut = sorted(rng.sample(range(1, len(profile)), 2))
        parts = [profile[:cut[0]], profile[cut[0]:cut[1]], profile[cut[1]:]]
    elif chunking == "many_chunks":
        size = max(1, len(profile) // 200)
        parts = [profile[o:o + size] for o in range(0, len(profile), size)][:255]
    elif chunking == "empty_chunks":
        parts = [b""] * rng.choice([1, 3, 255])
    count = len(parts)
    segments = b""
    for n, part in enumerate(parts):
        seq, total = n + 1, count
        if chunking == "seq_zero" and n == 0:
            seq = 0
        elif chunking == "seq_over_count" and n == count - 1:
            seq = rng.choice([count + 1, 255])
        elif chunking == "count_zero":
            total = 0
        elif chunking == "duplicate_seq" and n == 1:
            seq = 1
        elif chunking == "missing_chunk" and n == 1:
            continue
        payload = b"ICC_PROFILE\0" + bytes([seq & 255, total & 255]) + part
        length = None
        if chunking == "length_overrun":
            length = 0xFFFF
        elif chunking == "length_tiny":
            length = rng.choice([2, 3, 14, 15])
        segments += jpeg_marker_segment(0xE2, payload, length=length)
    return jpeg_insert_after_headers(data, segments, drop=is_icc_segment), {
        "profile": scenario, "chunking": chunking, "chunks": count, "profile_bytes": len(profile)}


# PNG


def png_pick(data, rng, want):
    chunks = [c for c in png_chunks(data) if want(c)]
    return rng.choice(chunks) if chunks else None


def m_png_chunk_length(data, rng, seed):
    c = png_pick(data, rng, lambda c: True)
    if not c:
        return None
    buf = bytearray(data)
    value = rng.choice([0, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, c["length"] + 1, max(0, c["length"] - 1),
                        c["length"] + rng.randrange(2, 5000), len(data), 13 if c["type"] != b"IHDR" else 12])
    put32(buf, c["off"], value)
    return bytes(buf), {"chunk": c["type"].decode("latin-1"), "length": c["length"], "value": value}


def m_png_ihdr_size(data, rng, seed):
    c = png_pick(data, rng, lambda c: c["type"] == b"IHDR" and c["length"] >= 13)
    if not c:
        return None
    buf = bytearray(data)
    field = rng.choice(["width", "height", "both"])
    value = rng.choice([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 65535, 100000, 20000, 9000, 1 << 24])
    if field in ("width", "both"):
        put32(buf, c["data"], value)
    if field in ("height", "both"):
        put32(buf, c["data"] + 4, value)
    crc = rng.random() < 0.8
    if crc:
        png_fix_crc(buf, c)
    return bytes(buf), {"field": field, "value": value, "crc_fixed": crc}


def m_png_ihdr_fields(data, rng, seed):
    c = png_pick(data, rng, lambda c: c["type"] == b"IHDR" and c["length"] >= 13)
    if not c:
        return None
    buf = bytearray(data)
    field = rng.choice(["bit_depth", "colour_type", "combination", "compression", "filter", "interlace"])
    p = c["data"] + 8
    if field == "bit_depth":
        value = rng.choice([0, 3, 5, 7, 12, 32, 255])
        buf[p] = value
    elif field == "colour_type":
        value = rng.choice([1, 5, 7, 8, 255])
        buf[p + 1] = value
    elif field == "combination":
        value = rng.choice([(16, 3), (1, 2), (2, 6), (4, 4), (1, 3), (2, 0), (8, 3), (16, 0), (16, 6)])
        buf[p], buf[p + 1] = value
        value = list(value)
    elif field == "compression":
        value = rng.choice([1, 8, 255])
        buf[p + 2] = value
    elif field == "filter":
        value = rng.choice([1, 64, 255])
        buf[p + 3] = value
    else:
        value = rng.choice([1 - data[p + 4], 2, 255])
        buf[p + 4] = value
    png_fix_crc(buf, c)
    return bytes(buf), {"field": field, "value": value}


def m_png_crc(data, rng, seed):
    c = png_pick(data, rng, lambda c: c["crc"] + 4 <= len(data))
    if not c:
        return None
    buf = bytearray(data)
    buf[c["crc"] + rng.randrange(4)] ^= rng.randrange(1, 256)
    return bytes(buf), {"chunk": c["type"].decode("latin-1")}


def png_rebuild(parts):
    return PNG_SIGNATURE + b"".join(png_chunk(kind, payload) for kind, payload in parts)


def m_png_idat_truncated(data, rng, seed):
    parts = png_parts(data)
    idat = [i for i, (kind, _) in enumerate(parts) if kind == b"IDAT"]
    if not idat:
        return None
    how = rng.choice(["data_cut", "data_cut", "last_removed", "all_removed", "no_iend", "first_only"])
    if how == "data_cut":
        stream = b"".join(parts[i][1] for i in idat)
        keep = int(len(stream) * rng.uniform(0.0, 0.99))
        rest = [p for i, p in enumerate(parts) if i not in idat]
        at = idat[0]
        parts = rest[:at] + [(b"IDAT", stream[:keep])] + rest[at:]
        return png_rebuild(parts), {"how": how, "kept": keep, "of": len(stream)}
    if how == "last_removed":
        if len(idat) < 2:
            how = "data_cut_end"
            i = idat[0]
            parts[i] = (b"IDAT", parts[i][1][:-rng.randrange(1, 9)])
        else:
            del parts[idat[-1]]
    elif how == "all_removed":
        parts = [p for i, p in enumerate(parts) if i not in idat]
    elif how == "no_iend":
        parts = [p for p in parts if p[0] != b"IEND"]
    else:
        parts = [p for i, p in enumerate(parts) if i not in idat[1:]]
    return png_rebuild(parts), {"how": how}


def m_png_idat_corrupt(data, rng, seed):
    """Damage inside the zlib stream, with valid CRCs so that the chunk layer lets it through."""
    parts = png_parts(data)
    idat = [i for i, (kind, _) in enumerate(parts) if kind == b"IDAT"]
    if not idat:
        return None
    stream = bytearray(b"".join(parts[i][1] for i in idat))
    how = rng.choice(["flip", "flip", "zlib_header", "adler", "filter_bytes", "trailing_garbage"])
    params = {"how": how}
    if how == "flip" and len(stream) > 2:
        for _ in range(rng.choice([1, 4, 32])):
            stream[rng.randrange(2, len(stream))] ^= rng.randrange(1, 256)
    elif how == "zlib_header":
        stream[0:2] = rng.choice([b"\x78\x00", b"\x08\x1d", b"\xf8\x9c", b"\x78\xbb", b"\x00\x00", b"\x7f\xff"])
        params["header"] = stream[0:2].hex()
    elif how == "adler":
        stream[-4:] = bytes(4) if rng.random() < 0.5 else bytes(v ^ 0x5A for v in stream[-4:])
    elif how == "trailing_garbage":
        stream += bytes(rng.randrange(256) for _ in range(rng.choice([1, 64, 5000])))
    else:
        try:
            raw = bytearray(zlib.decompress(bytes(stream)))
        except zlib.error:
            return None
        ihdr = parts[0][1]
        width, _, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", ihdr[:13])
        channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(colour, 1)
        stride = 1 + (width * channels * depth + 7) // 8
        rows = list(range(0, len(raw), stride)) if not interlace else [0]
        picked = rng.sample(rows, min(len(rows), rng.choice([1, 3, 50])))
        value = rng.choice([5, 6, 127, 255])
        for r in picked:
            raw[r] = value
        stream = bytearray(zlib.compress(bytes(raw), 6))
        params.update(rows=len(picked), value=value)
    rest = [p for i, p in enumerate(parts) if i not in idat]
    at = idat[0]
    return png_rebuild(rest[:at] + [(b"IDAT", bytes(stream))] + rest[at:]), params


def m_png_layout(data, rng, seed):
    """Valid but unusual chunk layouts: IDAT in one-byte chunks, empty IDATs, chunks after IEND, IHDR twice
    or late, PLTE after IDAT, an unknown critical chunk."""
    parts = png_parts(data)
    idat = [i for i, (kind, _) in enumerate(parts) if kind == b"IDAT"]
    if not idat:
        return None
    how = rng.choice(["tiny_idats", "empty_idats", "after_iend", "ihdr_twice", "ihdr_late", "plte_late",
                      "unknown_critical", "unknown_ancillary"])
    stream = b"".join(parts[i][1] for i in idat)
    rest = [p for i, p in enumerate(parts) if i not in idat]
    at = idat[0]
    if how == "tiny_idats":
        size = rng.choice([1, 7, 100])
        chunks = [(b"IDAT", stream[o:o + size]) for o in range(0, len(stream), size)][:60000]
        parts = rest[:at] + chunks + rest[at:]
    elif how == "empty_idats":
        parts = rest[:at] + [(b"IDAT", b"")] * 3 + [(b"IDAT", stream), (b"IDAT", b"")] + rest[at:]
    elif how == "after_iend":
        parts = parts + [(b"IDAT", stream[:100]), (b"tEXt", b"k\0v")]
    elif how == "ihdr_twice":
        ihdr = bytearray(parts[0][1])
        put32(ihdr, 0, rng.choice([1, 65535, be32(ihdr, 0)]))
        parts = parts[:1] + [(b"IHDR", bytes(ihdr))] + parts[1:]
    elif how == "ihdr_late":
        parts = parts[1:at + 1] + parts[:1] + parts[at + 1:]
    elif how == "plte_late":
        palette = [p for p in parts if p[0] == b"PLTE"] or [(b"PLTE", bytes(range(48)))]
        parts = [p for p in parts if p[0] != b"PLTE"]
        parts.insert(len(parts) - 1, palette[0])
    elif how == "unknown_critical":
        parts.insert(1, (rng.choice([b"ABCD", b"QxIF", b"IDAX"]), b"\0" * rng.choice([0, 4, 100])))
    else:
        parts.insert(at, (b"prVt", bytes(rng.randrange(256) for _ in range(rng.choice([0, 10, 1000])))))
    return png_rebuild(parts), {"how": how}


def m_png_palette(data, rng, seed):
    parts = png_parts(data)
    plte = [i for i, (kind, _) in enumerate(parts) if kind == b"PLTE"]
    if not plte:
        return None
    how = rng.choice(["removed", "two_entries", "too_long", "not_multiple_of_3", "empty", "trns_too_long",
                      "trns_removed"])
    i = plte[0]
    if how == "removed":
        del parts[i]
    elif how == "two_entries":
        parts[i] = (b"PLTE", parts[i][1][:6])
    elif how == "too_long":
        parts[i] = (b"PLTE", parts[i][1] + bytes(800))
    elif how == "not_multiple_of_3":
        parts[i] = (b"PLTE", parts[i][1][:-1])
    elif how == "empty":
        parts[i] = (b"PLTE", b"")
    elif how == "trns_too_long":
        parts = [(k, v + bytes(300) if k == b"tRNS" else v) for k, v in parts]
    else:
        parts = [p for p in parts if p[0] != b"tRNS"]
    return png_rebuild(parts), {"how": how}


def m_png_ancillary(data, rng, seed):
    """Ancillary chunks that are bombs or nonsense: iCCP and zTXt bombs, huge or many tEXt, bogus eXIf and
    iCCP, sPLT and a dozen iCCP chunks."""
    parts = png_parts(data)
    if not parts:
        return None
    how = rng.choice(["iccp_bomb", "ztxt_bomb", "huge_text", "many_text", "exif_bogus", "exif_bogus",
                      "iccp_bogus", "iccp_bogus", "iccp_many", "iccp_not_zlib"])
    params = {"how": how}
    added = []
    if how == "iccp_bomb":
        size = rng.choice([20 << 20, 200 << 20])
        added = [(b"iCCP", b"bomb\0\0" + zlib.compress(bytes(size), 9))]
        params["inflates_to"] = size
    elif how == "ztxt_bomb":
        size = rng.choice([20 << 20, 100 << 20])
        added = [(b"zTXt", b"Comment\0\0" + zlib.compress(bytes(size), 9))]
        params["inflates_to"] = size
    elif how == "huge_text":
        added = [(b"tEXt", b"Comment\0" + b"A" * rng.choice([1 << 20, 5 << 20]))]
    elif how == "many_text":
        added = [(b"tEXt", b"k%d\0v" % n) for n in range(rng.choice([1000, 20000]))]
    elif how == "exif_bogus":
        scenario = rng.choice(EXIF_SCENARIOS)
        added = [(b"eXIf", tiff_block(scenario, rng, orientation=rng.randrange(1, 9), little=rng.random() < 0.5))]
        params["scenario"] = scenario
        parts = [p for p in parts if p[0] != b"eXIf"]
    elif how == "iccp_bogus":
        scenario = rng.choice(ICC_SCENARIOS)
        added = [(b"iCCP", b"bogus\0\0" + zlib.compress(bogus_icc(rng, scenario)))]
        params["scenario"] = scenario
        parts = [p for p in parts if p[0] != b"iCCP"]
    elif how == "iccp_many":
        added = [(b"iCCP", b"p%d\0\0" % n + zlib.compress(icc_profile()[0])) for n in range(12)]
    else:
        added = [(b"iCCP", b"raw\0\0" + icc_profile()[0])]
    parts = parts[:1] + added + parts[1:]
    return png_rebuild(parts), params


# WebP


def webp_pick(data, rng, want):
    chunks = [c for c in riff_chunks(data) if want(c)]
    for c in list(chunks):
        if c["fourcc"] == b"ANMF":
            chunks += [f for f in riff_chunks(data, c["data"] + 16, min(len(data), c["data"] + c["size"])) if want(f)]
    return rng.choice(chunks) if chunks else None


def m_webp_riff_size(data, rng, seed):
    if data[:4] != b"RIFF":
        return None
    buf = bytearray(data)
    actual = len(data) - 8
    value = rng.choice([0, 4, 12, actual - 1, actual - rng.randrange(2, 200), actual + 1, actual + rng.randrange(2, 5000),
                        0xFFFFFFFF, 0xFFFFFFF6, 0x7FFFFFFF, actual + 2])
    putle32(buf, 4, max(0, value))
    return bytes(buf), {"actual": actual, "value": max(0, value)}


def m_webp_chunk_size(data, rng, seed):
    c = webp_pick(data, rng, lambda c: True)
    if not c:
        return None
    buf = bytearray(data)
    value = rng.choice([0, 1, 9, 0xFFFFFFFF, 0x7FFFFFFF, 0xFFFFFFF0, c["size"] + 1, max(0, c["size"] - 1),
                        c["size"] + rng.randrange(2, 10000), len(data)])
    putle32(buf, c["off"] + 4, value)
    return bytes(buf), {"chunk": c["fourcc"].decode("latin-1"), "size": c["size"], "value": value}


def webp_image_parts(data):
    """The chunks of a WebP as (fourcc, payload), and its size from the bitstream (or VP8X)."""
    parts = [(c["fourcc"], data[c["data"]:c["data"] + c["size"]]) for c in riff_chunks(data)]
    width = height = None
    for fourcc, payload in parts:
        if fourcc == b"VP8X" and len(payload) >= 10:
            width = 1 + int.from_bytes(payload[4:7], "little")
            height = 1 + int.from_bytes(payload[7:10], "little")
        elif fourcc == b"VP8 " and len(payload) >= 10 and width is None:
            width, height = le16(payload, 6) & 0x3FFF, le16(payload, 8) & 0x3FFF
        elif fourcc == b"VP8L" and len(payload) >= 5 and width is None:
            bits = le32(payload, 1)
            width, height = 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    return parts, width, height


def le16(b, o):
    return struct.unpack_from("<H", b, o)[0]


def m_webp_canvas(data, rng, seed):
    parts, width, height = webp_image_parts(data)
    if width is None:
        return None
    value = rng.choice([(1 << 24, 1 << 24), (1 << 24, height), (width, 1 << 24), (1, 1), (16384, 16384),
                        (width * 2, height * 2), (100000, 100000), (width, 1)])
    if any(k == b"VP8X" for k, _ in parts):
        parts = [(k, v[:4] + struct.pack("<I", value[0] - 1)[:3] + struct.pack("<I", value[1] - 1)[:3] + v[10:]
                  if k == b"VP8X" else v) for k, v in parts]
        how = "changed"
    else:
        alpha = 0x10 if any(k == b"VP8L" for k, _ in parts) else 0
        parts = [(b"VP8X", vp8x_payload(alpha, *value))] + parts
        how = "added"
    return riff(parts), {"vp8x": how, "canvas": list(value), "image": [width, height]}


def m_webp_frame_size(data, rng, seed):
    c = webp_pick(data, rng, lambda c: c["fourcc"] in (b"VP8 ", b"VP8L") and c["size"] >= 10)
    if not c:
        return None
    buf = bytearray(data)
    p = c["data"]
    if c["fourcc"] == b"VP8 ":
        field = rng.choice(["width", "height", "both", "scale", "start_code", "partition"])
        if field == "start_code":
            buf[p + 3:p + 6] = b"\x9d\x01\x2b"
            value = "9d012b"
        elif field == "partition":
            # The first partition's size (19 bits of the frame tag), past the chunk.
            value = rng.choice([0x7FFFF, 0, c["size"]])
            tag = (buf[p] & 0x1F) | (value << 5)
            buf[p:p + 3] = struct.pack("<I", tag)[:3]
        else:
            value = rng.choice([0, 1, 16383, 0x3FFF, 8000])
            if field in ("width", "both"):
                struct.pack_into("<H", buf, p + 6, (le16(buf, p + 6) & 0xC000) | value)
            if field in ("height", "both"):
                struct.pack_into("<H", buf, p + 8, (le16(buf, p + 8) & 0xC000) | value)
            if field == "scale":
                value = 0xC000
                struct.pack_into("<H", buf, p + 6, le16(buf, p + 6) | 0xC000)
    else:
        field = rng.choice(["width", "height", "both", "version", "signature"])
        bits = le32(buf, p + 1)
        if field == "signature":
            value = rng.choice([0x00, 0x2E, 0xFF])
            buf[p] = value
        elif field == "version":
            value = rng.choice([1, 7])
            putle32(buf, p + 1, (bits & 0x1FFFFFFF) | (value << 29))
        else:
            value = rng.choice([0, 0x3FFF, 8000, 1])
            if field in ("width", "both"):
                bits = (bits & ~0x3FFF) | value
            if field in ("height", "both"):
                bits = (bits & ~(0x3FFF << 14)) | (value << 14)
            putle32(buf, p + 1, bits)
    return bytes(buf), {"chunk": c["fourcc"].decode("latin-1"), "field": field, "value": value}


def m_webp_vp8x_flags(data, rng, seed):
    parts, width, height = webp_image_parts(data)
    if width is None:
        return None
    flags = rng.choice([0xFF, 0x02, 0x10, 0x20, 0x08, 0x04, 0x3E, 0x01, 0xC0, 0x00])
    if any(k == b"VP8X" for k, _ in parts):
        parts = [(k, bytes([flags]) + v[1:] if k == b"VP8X" else v) for k, v in parts]
    else:
        parts = [(b"VP8X", vp8x_payload(flags, width, height))] + parts
    return riff(parts), {"flags": flags}


def m_webp_fourcc(data, rng, seed):
    chunks = riff_chunks(data)
    if not chunks:
        return None
    buf = bytearray(data)
    where = rng.choice(["chunk", "chunk", "riff", "webp"])
    if where == "riff":
        value = rng.choice([b"RIFX", b"RIFF"[:3] + b"\0", b"FFIR"])
        buf[0:4] = value
    elif where == "webp":
        value = rng.choice([b"WEBQ", b"WAVE", b"webp"])
        buf[8:12] = value
    else:
        c = rng.choice(chunks)
        value = rng.choice([b"VP8L", b"VP8 ", b"VP8X", b"ALPH", b"ANMF", b"ICCP", b"EXIF", b"vp8 ", b"\0\0\0\0"])
        if value == c["fourcc"]:
            value = b"XXXX"
        buf[c["off"]:c["off"] + 4] = value
        where = c["fourcc"].decode("latin-1")
    return bytes(buf), {"where": where, "value": value.decode("latin-1")}


def m_webp_alpha(data, rng, seed):
    c = webp_pick(data, rng, lambda c: c["fourcc"] == b"ALPH" and c["size"] >= 2)
    if not c:
        return None
    buf = bytearray(data)
    how = rng.choice(["header", "header", "flip", "truncated_vp8l", "empty"])
    p = c["data"]
    if how == "header":
        value = rng.choice([0x02, 0x03, 0x0C, 0x30, 0xC0, 0xFF, 0x01, 0x00])
        buf[p] = value
        return bytes(buf), {"how": how, "value": value}
    if how == "flip":
        for _ in range(rng.choice([1, 4, 32])):
            buf[p + 1 + rng.randrange(c["size"] - 1)] ^= rng.randrange(1, 256)
        return bytes(buf), {"how": how}
    parts = [(k, v) for k, v in webp_image_parts(data)[0]]
    if how == "empty":
        parts = [(k, b"" if k == b"ALPH" else v) for k, v in parts]
    else:
        parts = [(k, (bytes([0x01]) + v[1:max(2, len(v) // 3)]) if k == b"ALPH" else v) for k, v in parts]
    return riff(parts), {"how": how}


def m_webp_metadata(data, rng, seed):
    parts, width, height = webp_image_parts(data)
    if width is None:
        return None
    which = rng.choice(["EXIF", "ICCP", "both"])
    params = {"which": which}
    parts = [p for p in parts if p[0] not in (b"EXIF", b"ICCP")]
    if which in ("ICCP", "both"):
        scenario = rng.choice(ICC_SCENARIOS)
        params["icc"] = scenario
        parts.insert(1 if parts and parts[0][0] == b"VP8X" else 0, (b"ICCP", bogus_icc(rng, scenario)))
    if which in ("EXIF", "both"):
        scenario = rng.choice(EXIF_SCENARIOS)
        params["exif"] = scenario
        tiff = tiff_block(scenario, rng, orientation=rng.randrange(1, 9), little=rng.random() < 0.5)
        parts.append((b"EXIF", (b"Exif\0\0" + tiff) if rng.random() < 0.3 else tiff))
    flags = 0x20 | 0x08 | (0x10 if any(k == b"ALPH" or k == b"VP8L" for k, _ in parts) else 0)
    if any(k == b"VP8X" for k, _ in parts):
        parts = [(k, bytes([v[0] | flags]) + v[1:] if k == b"VP8X" else v) for k, v in parts]
    else:
        parts = [(b"VP8X", vp8x_payload(flags, width, height))] + parts
    return riff(parts), params


def m_webp_animation(data, rng, seed):
    """An animation made of the image's bitstream, with frames that do not fit: offsets and sizes past
    the canvas, a frame size that disagrees with its bitstream, no frames, ANMF sizes too short."""
    parts, width, height = webp_image_parts(data)
    if width is None:
        return None
    frames = [(k, v) for k, v in parts if k in (b"ALPH", b"VP8 ", b"VP8L")]
    if not any(k != b"ALPH" for k, _ in frames):
        frames = []
        for k, v in parts:
            if k == b"ANMF":
                frames = [(c["fourcc"], v[c["data"]:c["data"] + c["size"]]) for c in riff_chunks(v, 16, len(v))]
                break
    if not frames:
        return None
    body = b"".join(k + struct.pack("<I", len(v)) + v + (b"\0" if len(v) % 2 else b"") for k, v in frames)
    how = rng.choice(["offset_outside", "frame_larger", "frame_mismatch", "no_frames", "anmf_short", "many_frames",
                      "zero_canvas"])
    canvas = (width, height)
    anmf = [(b"ANMF", putframe(0, 0, width, height, 80) + body)]
    if how == "offset_outside":
        anmf.append((b"ANMF", putframe(rng.choice([width, 1 << 24, 2 * width]), rng.choice([0, height, 1 << 24]),
                                       width, height, 80) + body))
    elif how == "frame_larger":
        anmf = [(b"ANMF", putframe(0, 0, width * 4, height * 4, 80) + body)]
    elif how == "frame_mismatch":
        anmf = [(b"ANMF", putframe(0, 0, max(1, width // 2), max(1, height // 3), 80) + body)]
    elif how == "no_frames":
        anmf = []
    elif how == "anmf_short":
        anmf = [(b"ANMF", putframe(0, 0, width, height, 80)[:rng.choice([0, 8, 15])])] + anmf
    elif how == "many_frames":
        anmf = anmf * rng.choice([50, 400])
    else:
        canvas = (1, 1)
    return riff([(b"VP8X", vp8x_payload(0x02 | 0x10, *canvas)), (b"ANIM", bytes(4) + struct.pack("<H", 0))] + anmf), {
        "how": how}


# HEIF and AVIF


def heif_pick(data, rng, kinds=None):
    boxes = [b for b in isobmff_boxes(data) if kinds is None or b["type"] in kinds]
    return rng.choice(boxes) if boxes else None


def m_heif_box_size(data, rng, seed):
    box = heif_pick(data, rng)
    if not box:
        return None
    buf = bytearray(data)
    how = rng.choice(["zero", "one_largesize", "one_in_place", "past_file", "past_file", "under_header", "minus",
                      "plus"])
    params = {"box": box["type"].decode("latin-1"), "depth": box["depth"], "size": box["size"], "how": how}
    if how == "zero":
        put32(buf, box["off"], 0)
    elif how == "one_largesize":
        large = rng.choice([(1 << 64) - 1, 1 << 63, 2 * len(data), 8, 15, box["size"] + 8 + 1])
        put32(buf, box["off"], 1)
        buf[box["off"] + 8:box["off"] + 8] = struct.pack(">Q", large)
        params["largesize"] = large
    elif how == "one_in_place":
        put32(buf, box["off"], 1)
    elif how == "past_file":
        value = rng.choice([len(data) + 1, 0xFFFFFFFF, 0x7FFFFFFF, len(data) - box["off"] + 1, box["size"] + 1000])
        put32(buf, box["off"], value)
        params["value"] = value
    elif how == "under_header":
        value = rng.choice([2, 4, 7, 8 if box["hdr"] == 8 and box["size"] > 8 else 9])
        put32(buf, box["off"], value)
        params["value"] = value
    elif how == "minus":
        value = max(0, box["size"] - rng.choice([1, 2, 4, 8, 9]))
        put32(buf, box["off"], value)
        params["value"] = value
    else:
        value = box["size"] + rng.choice([1, 4, 8])
        put32(buf, box["off"], value)
        params["value"] = value
    return bytes(buf), params


def m_heif_ftyp(data, rng, seed):
    box = heif_pick(data, rng, {b"ftyp"})
    if not box or box["size"] < 16:
        return None
    buf = bytearray(data)
    how = rng.choice(["major", "major", "compatible_cleared", "all_cleared", "renamed", "minor", "size_8",
                      "swap_family"])
    value = None
    if how == "major":
        value = rng.choice([b"mp41", b"avis", b"heix", b"msf1", b"xxxx", b"\0\0\0\0", b"isom", b"jpeg", b"mif2"])
        buf[box["start"]:box["start"] + 4] = value
    elif how == "compatible_cleared":
        for o in range(box["start"] + 8, box["end"], 4):
            buf[o:o + 4] = b"\0\0\0\0"
    elif how == "all_cleared":
        buf[box["start"]:box["end"]] = bytes(box["end"] - box["start"])
    elif how == "renamed":
        value = rng.choice([b"free", b"ftyq", b"styp"])
        buf[box["off"] + 4:box["off"] + 8] = value
    elif how == "minor":
        put32(buf, box["start"] + 4, 0xFFFFFFFF)
    elif how == "size_8":
        del buf[box["start"]:box["end"]]
        put32(buf, box["off"], 8)
    else:
        value = b"avif" if seed["family"] == "heic" else b"heic"
        buf[box["start"]:box["start"] + 4] = value
        for o in range(box["start"] + 8, box["end"], 4):
            if buf[o:o + 4] in (b"avif", b"heic", b"heix", b"mif1", b"miaf"):
                buf[o:o + 4] = value
    return bytes(buf), {"how": how, "value": value.decode("latin-1") if value else None}


def m_heif_ispe(data, rng, seed):
    boxes = [b for b in isobmff_boxes(data) if b["type"] == b"ispe" and b["end"] - b["start"] >= 12]
    if not boxes:
        return None
    buf = bytearray(data)
    which = rng.choice(["one", "all"])
    targets = boxes if which == "all" else [rng.choice(boxes)]
    field = rng.choice(["width", "height", "both"])
    value = rng.choice([0, 1, 65535, 32769, 100000, 0xFFFFFFFF, 0x80000000, 20000])
    for box in targets:
        if field in ("width", "both"):
            put32(buf, box["start"] + 4, value)
        if field in ("height", "both"):
            put32(buf, box["start"] + 8, value)
    return bytes(buf), {"which": which, "boxes": len(targets), "field": field, "value": value}


def m_heif_iloc(data, rng, seed):
    boxes = isobmff_boxes(data)
    iloc = [b for b in boxes if b["type"] == b"iloc"]
    if not iloc:
        return None
    parsed = parse_iloc(data, iloc[0])
    if not parsed or not parsed["items"]:
        return None
    buf = bytearray(data)
    item = rng.choice(parsed["items"])
    how = rng.choice(["offset_outside", "offset_outside", "length_huge", "length_zero", "extent_count",
                      "item_count", "base_offset", "sizes", "version", "method", "item_id"])
    params = {"how": how, "item": item["id"], "items": len(parsed["items"])}
    extents = item["extents"]
    if how in ("offset_outside", "length_huge", "length_zero") and not extents:
        how = "extent_count"
    if how == "offset_outside":
        e = rng.choice(extents)
        value = rng.choice([len(data), len(data) + 1, len(data) - 1, 0xFFFFFFF0, (1 << (8 * parsed["offset_size"])) - 1, 0])
        write_uint(buf, e["off_at"], parsed["offset_size"], value)
        params["value"] = value
    elif how == "length_huge":
        e = rng.choice(extents)
        value = rng.choice([len(data), 0xFFFFFFFF, 0x7FFFFFFF, (e["len"] or 0) + 1, (e["len"] or 0) + 10000])
        write_uint(buf, e["len_at"], parsed["length_size"], value)
        params["value"] = value
    elif how == "length_zero":
        e = rng.choice(extents)
        write_uint(buf, e["len_at"], parsed["length_size"], 0)
    elif how == "extent_count":
        value = rng.choice([0, 2, 0xFFFF, 100])
        put16(buf, item["count_at"], value)
        params["value"] = value
    elif how == "item_count":
        value = rng.choice([0, 0xFFFF, len(parsed["items"]) + 1, 1000])
        if parsed["version"] < 2:
            put16(buf, parsed["count_at"], value)
        else:
            put32(buf, parsed["count_at"], value)
        params["value"] = value
    elif how == "base_offset":
        if parsed["base_size"]:
            value = rng.choice([len(data), 0xFFFFFFFF, 0xFFFFFFF0])
            write_uint(buf, item["base_at"], parsed["base_size"], value)
        else:
            value = rng.choice([0x48, 0x84, 0x88])
            buf[parsed["sizes_at"] + 1] = value  # base_offset_size and index_size now claim bytes that are not there
        params["value"] = value
    elif how == "sizes":
        value = rng.choice([0x88, 0x44, 0x33, 0xFF, 0x08, 0x80, 0x00])
        buf[parsed["sizes_at"]] = value
        params["value"] = value
    elif how == "version":
        value = rng.choice([1, 2, 3, 255])
        buf[iloc[0]["start"]] = value
        params["value"] = value
    elif how == "method":
        if item["method_at"] is None:
            return None
        value = rng.choice([1, 2, 7, 0xF])
        put16(buf, item["method_at"], value)
        params["value"] = value
    else:
        value = rng.choice([0, 0xFFFF, parsed["items"][0]["id"]])
        put16(buf, item["id_at"], value) if parsed["version"] < 2 else put32(buf, item["id_at"], value)
        params["value"] = value
    return bytes(buf), params


def m_heif_pitm(data, rng, seed):
    box = heif_pick(data, rng, {b"pitm"})
    if not box or box["end"] - box["start"] < 6:
        return None
    boxes = isobmff_boxes(data)
    items = parse_items(data, boxes)
    buf = bytearray(data)
    current = be16(data, box["start"] + 4) if data[box["start"]] == 0 else be32(data, box["start"] + 4)
    choices = [0, 0xFFFF, current + 1000] + [i for i in items if i != current]
    value = rng.choice(choices)
    if data[box["start"]] == 0:
        put16(buf, box["start"] + 4, value)
    else:
        put32(buf, box["start"] + 4, value)
    return bytes(buf), {"from": current, "to": value, "to_type": items.get(value, {}).get("type", b"").decode("latin-1")}


def m_heif_ipma(data, rng, seed):
    box = heif_pick(data, rng, {b"ipma"})
    if not box or box["end"] - box["start"] < 10:
        return None
    buf = bytearray(data)
    version, flags = data[box["start"]], data[box["start"] + 3]
    p = box["start"] + 4
    how = rng.choice(["entry_count", "assoc_count", "index_outside", "index_zero", "large_flag", "essential_all"])
    params = {"how": how}
    if how == "entry_count":
        value = rng.choice([0, 0xFFFFFFFF, 0x10000, be32(data, p) + 1])
        put32(buf, p, value)
        params["value"] = value
        return bytes(buf), params
    if how == "large_flag":
        buf[box["start"] + 3] = flags ^ 1
        return bytes(buf), params
    entries, q = be32(data, p), p + 4
    positions = []
    for _ in range(min(entries, 10000)):
        q += 2 if version < 1 else 4
        if q >= box["end"]:
            break
        count_at, count = q, data[q]
        q += 1
        assocs = []
        for _ in range(count):
            assocs.append(q)
            q += 2 if flags & 1 else 1
        positions.append((count_at, assocs))
    if not positions:
        return None
    count_at, assocs = rng.choice(positions)
    if how == "assoc_count":
        value = rng.choice([0, 255, data[count_at] + 1])
        buf[count_at] = value
        params["value"] = value
    elif not assocs:
        return None
    elif how == "index_outside":
        a = rng.choice(assocs)
        value = rng.choice([0x7F, 0xFF, 0x40])
        if flags & 1:
            put16(buf, a, 0x7FFF | (0x8000 if value & 0x80 else 0))
        else:
            buf[a] = value
        params["value"] = value
    elif how == "index_zero":
        a = rng.choice(assocs)
        if flags & 1:
            put16(buf, a, 0x8000)
        else:
            buf[a] = 0x80
    else:
        for a in assocs:
            buf[a] |= 0x80
    return bytes(buf), params


def m_heif_iinf(data, rng, seed):
    boxes = isobmff_boxes(data)
    iinf = [b for b in boxes if b["type"] == b"iinf"]
    items = parse_items(data, boxes)
    if not iinf:
        return None
    buf = bytearray(data)
    how = rng.choice(["entry_count", "item_type", "item_type", "infe_version", "hidden"])
    params = {"how": how}
    if how == "entry_count" or not items:
        box = iinf[0]
        value = rng.choice([0, 0xFFFF, 1, 50])
        if data[box["start"]] == 0:
            put16(buf, box["start"] + 4, value)
        else:
            put32(buf, box["start"] + 4, value)
        params["value"] = value
        return bytes(buf), params
    item_id = rng.choice(sorted(items))
    item = items[item_id]
    params["item"] = item_id
    params["type"] = item["type"].decode("latin-1")
    if how == "item_type":
        value = rng.choice([b"hvc1", b"av01", b"grid", b"iden", b"iovl", b"mime", b"Exif", b"jpeg", b"xxxx", b"unci"])
        buf[item["type_at"]:item["type_at"] + 4] = value
        params["value"] = value.decode("latin-1")
    elif how == "infe_version":
        value = rng.choice([0, 1, 4, 255])
        buf[item["box"]["start"]] = value
        params["value"] = value
    else:
        buf[item["box"]["start"] + 3] |= 1  # flags: hidden item
    return bytes(buf), params


def m_heif_iref(data, rng, seed):
    boxes = isobmff_boxes(data)
    refs = [b for b in boxes if b["parent"] == b"iref" and b["end"] - b["start"] >= 6]
    if not refs:
        return None
    iref = [b for b in boxes if b["type"] == b"iref"][0]
    wide = data[iref["start"]] != 0
    size = 4 if wide else 2
    ref = rng.choice(refs)
    buf = bytearray(data)
    p = ref["start"]
    from_id = read_uint(data, p, size)
    count_at = p + size
    count = be16(data, count_at)
    how = rng.choice(["self", "count_huge", "count_zero", "to_missing", "type"])
    params = {"how": how, "ref": ref["type"].decode("latin-1"), "from": from_id}
    if how == "self" and count:
        write_uint(buf, count_at + 2, size, from_id)
    elif how == "count_huge":
        put16(buf, count_at, rng.choice([0xFFFF, count + 1, 1000]))
    elif how == "count_zero":
        put16(buf, count_at, 0)
    elif how == "to_missing" and count:
        write_uint(buf, count_at + 2 + size * rng.randrange(count), size, rng.choice([0, 0xFFFF, 4242]))
    else:
        value = rng.choice([b"dimg", b"thmb", b"auxl", b"cdsc", b"base", b"xxxx"])
        buf[ref["off"] + 4:ref["off"] + 8] = value
        params["to"] = value.decode("latin-1")
    return bytes(buf), params


def m_heif_codec_config(data, rng, seed):
    box = heif_pick(data, rng, {b"hvcC", b"av1C"})
    if not box:
        return None
    buf = bytearray(data)
    p, n = box["start"], box["end"] - box["start"]
    params = {"box": box["type"].decode("latin-1")}
    if box["type"] == b"av1C":
        how = rng.choice(["marker_version", "profile_level", "chroma", "config_obus"])
        if how == "marker_version" and n >= 1:
            buf[p] = rng.choice([0x00, 0x02, 0xFF])
        elif how == "profile_level" and n >= 2:
            buf[p + 1] = rng.choice([0xFF, 0xE0, 0x1F])
        elif how == "chroma" and n >= 3:
            buf[p + 2] = rng.choice([0xFF, 0x00, 0x1E])
        elif n >= 4:
            buf[p + 4:p + 4] = b"\x0a\xff\xff\xff\xff\x0f"  # a sequence header OBU claiming ~4 GB
        params["how"] = how
        return bytes(buf), params
    if n < 23:
        return None
    how = rng.choice(["length_size", "array_count", "nal_length", "nal_count", "chroma_bitdepth", "version"])
    params["how"] = how
    if how == "length_size":
        value = rng.choice([0, 1, 2])
        buf[p + 21] = (buf[p + 21] & 0xFC) | value
        params["value"] = value + 1
    elif how == "array_count":
        buf[p + 22] = rng.choice([0, 255, data[p + 22] + 1])
    elif how == "version":
        buf[p] = rng.choice([0, 2, 255])
    elif how == "chroma_bitdepth":
        buf[p + 16 + rng.randrange(3)] = rng.choice([0xFF, 0xFC, 0xFB])
    else:
        # The first array's first NAL unit: its count or its length.
        q = p + 23
        if q + 5 > box["end"]:
            return None
        if how == "nal_count":
            put16(buf, q + 1, rng.choice([0, 0xFFFF, 200]))
        else:
            put16(buf, q + 3, rng.choice([0, 0xFFFF, be16(data, q + 3) + 1, be16(data, q + 3) * 4]))
    return bytes(buf), params


def m_heif_property(data, rng, seed):
    """irot, imir, clap, colr, pixi, auxC: values out of range, zero denominators, bogus profiles; added
    to ipco when the file has none (then associated with nothing, or, for irot, with the primary)."""
    boxes = isobmff_boxes(data)
    props = [b for b in boxes if b["parent"] == b"ipco" and b["type"] in (b"irot", b"imir", b"clap", b"colr",
                                                                          b"pixi", b"auxC", b"pasp")]
    buf = bytearray(data)
    if props and rng.random() < 0.7:
        box = rng.choice(props)
        p, kind = box["start"], box["type"]
        params = {"property": kind.decode("latin-1")}
        if kind == b"irot":
            buf[p] = rng.choice([1, 2, 3, 0xFF])
        elif kind == b"imir":
            buf[p] = rng.choice([1, 0xFF])
        elif kind == b"clap" and box["end"] - p >= 32:
            which = rng.randrange(8)
            value = rng.choice([0, 0xFFFFFFFF, 0x80000000, 1])
            put32(buf, p + 4 * which, value)
            params.update(field=which, value=value)
        elif kind == b"colr" and box["end"] - p >= 4:
            if data[p:p + 4] == b"nclx" and box["end"] - p >= 11:
                field = rng.randrange(4)
                value = rng.choice([0, 2, 3, 16, 18, 255, 0xFFFF])
                put16(buf, p + 4 + 2 * field, value) if field < 3 else buf.__setitem__(p + 10, value & 0xFF)
                params.update(field=["primaries", "transfer", "matrix", "range"][field], value=value)
            else:
                scenario = rng.choice(ICC_SCENARIOS)
                profile = bogus_icc(rng, scenario)[:box["end"] - p - 4]
                buf[p + 4:p + 4 + len(profile)] = profile
                params["icc"] = scenario
        elif kind == b"pixi" and box["end"] - p >= 5:
            how = rng.choice(["channels", "bits"])
            if how == "channels":
                buf[p + 4] = rng.choice([0, 2, 255])
            else:
                buf[p + 5:box["end"]] = bytes([rng.choice([0, 16, 255])]) * (box["end"] - p - 5)
            params["field"] = how
        elif kind == b"auxC":
            text = b"urn:mpeg:hevc:2015:auxid:9\0" if rng.random() < 0.5 else b"\xff" * (box["end"] - p - 4)
            buf[p + 4:box["end"]] = text[:box["end"] - p - 4].ljust(box["end"] - p - 4, b"\0")
        elif kind == b"pasp" and box["end"] - p >= 8:
            put32(buf, p + rng.choice([0, 4]), 0)
        else:
            return None
        return bytes(buf), params
    # None of those there: add one to ipco (its size and its parents' sizes grow, offsets after shift).
    ipco = [b for b in boxes if b["type"] == b"ipco"]
    if not ipco:
        return None
    kind = rng.choice([b"clap", b"irot", b"colr"])
    if kind == b"clap":
        payload = struct.pack(">8I", *[rng.choice([0, 1, 0xFFFFFFFF, 100]) for _ in range(8)])
    elif kind == b"irot":
        payload = bytes([rng.choice([1, 3, 255])])
    else:
        payload = b"prof" + bogus_icc(rng, rng.choice(ICC_SCENARIOS))
    new = struct.pack(">I", 8 + len(payload)) + kind + payload
    at = ipco[0]["end"]
    buf[at:at] = new
    for b in boxes:
        if b["off"] < at <= b["end"] and b["hdr"] == 8:
            put32(buf, b["off"], b["size"] + len(new))
    # Shift iloc's absolute offsets (construction 0) by what was inserted before them.
    iloc = [b for b in boxes if b["type"] == b"iloc"]
    parsed = parse_iloc(data, iloc[0]) if iloc else None
    if parsed:
        for item in parsed["items"]:
            if item["method"] != 0:
                continue
            for e in item["extents"]:
                if (item["base"] or 0) + e["off"] >= at and parsed["offset_size"]:
                    write_uint(buf, e["off_at"], parsed["offset_size"], e["off"] + len(new))
    return bytes(buf), {"property": kind.decode("latin-1"), "added": True}


def m_heif_grid(data, rng, seed):
    boxes = isobmff_boxes(data)
    where = heif_item_data(data, boxes, b"grid")
    if not where or where[1] < 8:
        return None
    at, length = where
    buf = bytearray(data)
    field = rng.choice(["rows", "columns", "width", "height", "version", "flags"])
    large = data[at + 1] & 1
    if field == "rows":
        value = rng.choice([0, 255, data[at + 2] + 1])
        buf[at + 2] = value
    elif field == "columns":
        value = rng.choice([0, 255, data[at + 3] + 1])
        buf[at + 3] = value
    elif field in ("width", "height"):
        size = 4 if large else 2
        o = at + 4 + (size if field == "height" else 0)
        value = rng.choice([0, 1, (1 << (8 * size)) - 1, 40000])
        write_uint(buf, o, size, value)
    elif field == "version":
        value = rng.choice([1, 255])
        buf[at] = value
    else:
        value = data[at + 1] ^ 1
        buf[at + 1] = value
    return bytes(buf), {"field": field, "value": value}


def m_heif_coded_data(data, rng, seed):
    """The primary image's coded data: a NAL unit's length prefix (HEVC) or an OBU's header and size
    (AV1), wrong."""
    boxes = isobmff_boxes(data)
    kind = b"av01" if seed["family"] == "avif" else b"hvc1"
    where = heif_item_data(data, boxes, kind)
    if not where or where[1] < 8:
        return None
    at, length = where
    buf = bytearray(data)
    if kind == b"hvc1":
        # Walk the NAL units (4-byte lengths) and pick one.
        nals, q = [], at
        while q + 4 <= at + length and len(nals) < 64:
            nals.append(q)
            q += 4 + be32(data, q)
        q = rng.choice(nals)
        value = rng.choice([0, 1, 0xFFFFFFFF, 0x7FFFFFFF, be32(data, q) + 1, be32(data, q) * 2])
        put32(buf, q, value)
        if rng.random() < 0.3:
            buf[q + 4] = rng.choice([0x7E, 0x40, 0x42, 0x44, 0xFE])  # the NAL unit type: VPS/SPS/PPS/reserved
            value = [value, buf[q + 4]]
        return bytes(buf), {"nal": nals.index(q), "nals": len(nals), "value": value}
    how = rng.choice(["size_huge", "size_zero", "type_reserved", "forbidden_bit", "no_size_field"])
    if how == "size_huge":
        if data[at] & 0x02:
            buf[at + 1:at + 1] = b"\xff\xff\xff\xff\x0f"
        else:
            buf[at] |= 0x02
    elif how == "size_zero":
        if data[at] & 0x02:
            buf[at + 1] = 0
    elif how == "type_reserved":
        buf[at] = (data[at] & 0x87) | (rng.choice([0, 9, 10, 14]) << 3)
    elif how == "forbidden_bit":
        buf[at] |= 0x80
    else:
        buf[at] &= ~0x02 & 0xFF
    return bytes(buf), {"how": how}


def m_heif_exif(data, rng, seed):
    boxes = isobmff_boxes(data)
    where = heif_item_data(data, boxes, b"Exif")
    if not where or where[1] < 12:
        return None
    at, length = where
    scenario = rng.choice(EXIF_SCENARIOS)
    tiff = tiff_block(scenario, rng, orientation=rng.randrange(1, 9), little=rng.random() < 0.5)
    how = rng.choice(["tiff", "tiff", "offset_huge"])
    buf = bytearray(data)
    if how == "offset_huge":
        put32(buf, at, rng.choice([0xFFFFFFFF, length, length - 3]))
    else:
        room = length - 4
        buf[at + 4:at + 4 + room] = tiff[:room].ljust(room, b"\0")
    return bytes(buf), {"how": how, "scenario": scenario}


GENERIC = [("truncate", m_truncate, 3.0), ("flip", m_flip, 3.0)]
SPECIFIC = {
    "jpeg": [("jpeg_sof_dims", m_jpeg_sof_dims, 1.0), ("jpeg_sof_fields", m_jpeg_sof_fields, 0.7),
             ("jpeg_process", m_jpeg_process, 0.4), ("jpeg_dht", m_jpeg_dht, 1.0), ("jpeg_dqt", m_jpeg_dqt, 0.8),
             ("jpeg_sos", m_jpeg_sos, 1.0), ("jpeg_segment_length", m_jpeg_segment_length, 0.8),
             ("jpeg_eoi", m_jpeg_eoi, 0.6), ("jpeg_soi", m_jpeg_soi, 0.6),
             ("jpeg_scan_markers", m_jpeg_scan_markers, 0.6), ("jpeg_restart", m_jpeg_restart, 0.4),
             ("jpeg_scan_flood", m_jpeg_scan_flood, 0.3), ("jpeg_exif", m_jpeg_exif, 1.2),
             ("jpeg_icc", m_jpeg_icc, 1.0)],
    "png": [("png_chunk_length", m_png_chunk_length, 1.0), ("png_ihdr_size", m_png_ihdr_size, 1.0),
            ("png_ihdr_fields", m_png_ihdr_fields, 1.0), ("png_crc", m_png_crc, 0.8),
            ("png_idat_truncated", m_png_idat_truncated, 1.0), ("png_idat_corrupt", m_png_idat_corrupt, 1.0),
            ("png_layout", m_png_layout, 0.7), ("png_palette", m_png_palette, 0.5),
            ("png_ancillary", m_png_ancillary, 0.8)],
    "webp": [("webp_riff_size", m_webp_riff_size, 1.0), ("webp_chunk_size", m_webp_chunk_size, 1.0),
             ("webp_canvas", m_webp_canvas, 1.0), ("webp_frame_size", m_webp_frame_size, 1.0),
             ("webp_vp8x_flags", m_webp_vp8x_flags, 0.7), ("webp_fourcc", m_webp_fourcc, 0.6),
             ("webp_alpha", m_webp_alpha, 0.6), ("webp_metadata", m_webp_metadata, 0.8),
             ("webp_animation", m_webp_animation, 0.6)],
    "heif": [("heif_box_size", m_heif_box_size, 1.5), ("heif_ftyp", m_heif_ftyp, 0.8), ("heif_ispe", m_heif_ispe, 1.0),
             ("heif_iloc", m_heif_iloc, 1.5), ("heif_pitm", m_heif_pitm, 0.4), ("heif_ipma", m_heif_ipma, 0.7),
             ("heif_iinf", m_heif_iinf, 0.6), ("heif_iref", m_heif_iref, 0.5),
             ("heif_codec_config", m_heif_codec_config, 0.8), ("heif_property", m_heif_property, 0.7),
             ("heif_grid", m_heif_grid, 0.5), ("heif_coded_data", m_heif_coded_data, 0.8),
             ("heif_exif", m_heif_exif, 0.4)],
}


def mutators_for(family):
    specific = SPECIFIC["heif" if family in ("heic", "avif") else family]
    return GENERIC + specific


def weighted(rng, items, weight):
    total = sum(weight(i) for i in items)
    x = rng.uniform(0, total)
    for item in items:
        x -= weight(item)
        if x <= 0:
            return item
    return items[-1]


def make_mutations(args, seeds, folder):
    """--mutations files, each from a seed and a mutator; the formats get equal shares. Returns records."""
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(args.seed)
    families = [f for f in FAMILIES if any(s["family"] == f for s in seeds)]
    data_of = {}
    for s in seeds:
        with open(s["path"], "rb") as f:
            data_of[s["name"]] = f.read()
    seen = {hashlib.sha256(d).digest() for d in data_of.values()}
    records, tries, skipped_same = [], 0, 0
    while len(records) < args.mutations and tries < args.mutations * 30:
        tries += 1
        family = families[len(records) % len(families)]
        seed = weighted(rng, [s for s in seeds if s["family"] == family], lambda s: s["weight"])
        name, mutator, _ = weighted(rng, mutators_for(family), lambda m: m[2])
        sub = random.Random(rng.getrandbits(64))
        try:
            result = mutator(data_of[seed["name"]], sub, seed)
        except (IndexError, struct.error, ValueError, zlib.error):
            result = None  # a mutator that cannot read this seed's structure: draw again
        if result is None:
            continue
        data, params = result
        digest = hashlib.sha256(data).digest()
        if digest in seen:
            skipped_same += 1
            continue
        seen.add(digest)
        n = len(records) + 1
        file_name = f"m{n:05d}-{os.path.splitext(seed['name'])[0]}-{name}.{EXTENSIONS[family]}"
        with open(os.path.join(folder, file_name), "wb") as out:
            out.write(data)
        records.append({"file": file_name, "family": family, "kind": seed["kind"], "seed": seed["name"],
                        "mutator": name, "params": params, "bytes": len(data)})
    return records, skipped_same


# ---------------------------------------------------------------------------------------------------
# The run: PostgreSQL, origin, workers


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
    def __init__(self, root, folder):
        self.out = open(os.path.join(folder, "origin.out"), "w+")
        self.process = subprocess.Popen([sys.executable, os.path.join(REPO, "Tests/Support/origin.py"), "--root", root],
                                        stdout=self.out, stderr=subprocess.DEVNULL)
        self.port = None
        for _ in range(200):
            self.out.seek(0)
            match = re.search(r"PORT (\d+)", self.out.read())
            if match:
                self.port = int(match.group(1))
                break
            time.sleep(0.05)
        if not self.port:
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


# ---------------------------------------------------------------------------------------------------
# Checks


def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, max(0, int(round(p / 100 * len(values) + 0.5)) - 1))]


def check_variants(storage, variants, jobs_succeeded, workers):
    """Each succeeded job has its 4 rows; each row's file exists, hashes to its key and decodes with djpeg at
    its row's size. Returns (problems, objects checked)."""
    problems = []
    by_job = {}
    for v in variants:
        by_job.setdefault(v["job_id"], []).append(v)
    for job in jobs_succeeded:
        names = sorted(v["name"] for v in by_job.get(job, []))
        if names != sorted(VARIANTS):
            problems.append(f"job {job}: variant rows {names}")
    for job, rows in by_job.items():
        if job not in jobs_succeeded:
            problems.append(f"job {job}: {len(rows)} variant rows but not succeeded")
    objects = {}
    for v in variants:
        objects[v["storage_key"]] = v

    def one(v):
        path = os.path.join(storage, v["storage_key"])
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return f"{v['storage_key']}: missing"
        if len(data) != v["bytes"] or hashlib.sha256(data).hexdigest() != os.path.basename(v["storage_key"]).split(".")[0]:
            return f"{v['storage_key']}: bytes or hash differ"
        if v["format"] != "jpeg":
            return f"{v['storage_key']}: format {v['format']}"
        if v["width"] > VARIANTS[v["name"]] or v["height"] > VARIANTS[v["name"]]:
            return f"{v['storage_key']}: {v['width']}x{v['height']} over the {v['name']} box"
        decoded = subprocess.run(["djpeg", "-pnm", path], capture_output=True)
        header = decoded.stdout[:32].split()
        if decoded.returncode != 0 or len(header) < 3 or (int(header[1]), int(header[2])) != (v["width"], v["height"]):
            return f"{v['storage_key']}: does not decode at {v['width']}x{v['height']} (djpeg exit {decoded.returncode})"
        return None

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        problems += [p for p in pool.map(one, objects.values()) if p]
    return problems, len(objects)


def save_finding(args, kind, record, source_folder, detail):
    """The file of a finding, with what made it and how to reproduce it, in --findings."""
    os.makedirs(args.findings, exist_ok=True)
    name = record["file"]
    target = os.path.join(args.findings, name)
    shutil.copyfile(os.path.join(source_folder, name), target)
    repro = f"{args.thumbd} thumbnail --out /tmp/x {target}"
    try:
        result = subprocess.run([args.thumbd, "thumbnail", "--out", tempfile.mkdtemp(prefix="sweep-repro-"), target],
                                capture_output=True, text=True, timeout=max(30, args.job_timeout))
        reproduced = f"{describe_exit(result.returncode)}: {(result.stderr or result.stdout).strip()[-600:]}"
    except subprocess.TimeoutExpired:
        reproduced = f"thumbd thumbnail did not finish in {max(30, args.job_timeout)} s"
    entry = dict(record, finding=kind, detail=detail, reproduce=repro, thumbnail_result=reproduced)
    with open(target + ".json", "w") as out:
        json.dump(entry, out, indent=2)
    return entry


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

        jobs = database.json(
            "SELECT json_agg(json_build_object('id', id, 'state', state, 'error_code', error_code, "
            "'last_error', left(last_error, 400), 'attempts', attempts, "
            "'ms', round(extract(epoch FROM finished_at - started_at) * 1000), 'attempt_log', attempt_log)) "
            "FROM thumbs.jobs") or []
        variants = database.json(
            "SELECT json_agg(json_build_object('job_id', job_id, 'name', name, 'width', width, 'height', height, "
            "'format', format, 'bytes', bytes, 'storage_key', storage_key)) FROM thumbs.variants") or []
        by_id = {j["id"]: j for j in jobs}
        for r in everything:
            j = by_id[r["job"]]
            r.update(state=j["state"], error_code=j["error_code"], last_error=j["last_error"], attempts=j["attempts"],
                     ms=j["ms"], earlier_codes=[a.get("error_code") for a in j["attempt_log"] if a.get("error_code")])
            if r["job"] in sweep.cancelled:
                r["state"] = f"cancelled ({sweep.cancelled[r['job']]})"

        results = {}

        def verdict(name, held, figure):
            results[name] = {"held": bool(held), "figure": figure}
            log(f"{'ok  ' if held else 'FAIL'} {name}: {figure}")

        def outcome(r):
            return "succeeded" if r["state"] == "succeeded" else (r["error_code"] or r["state"])

        def table(rows, key):
            out = {}
            for r in rows:
                out.setdefault(key(r), {})
                o = outcome(r)
                out[key(r)][o] = out[key(r)].get(o, 0) + 1
            return {k: dict(sorted(v.items())) for k, v in sorted(out.items())}

        by_format = {f: sum(1 for r in records if r["family"] == f) for f in FAMILIES if any(r["family"] == f for r in records)}
        by_kind = {}
        by_mutator = {}
        for r in records:
            by_kind[r["kind"]] = by_kind.get(r["kind"], 0) + 1
            by_mutator[r["mutator"]] = by_mutator.get(r["mutator"], 0) + 1
        outcomes = {}
        for r in records:
            outcomes[outcome(r)] = outcomes.get(outcome(r), 0) + 1
        log("files by format: " + ", ".join(f"{k} {v}" for k, v in by_format.items())
            + "; by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items())))
        log("files by mutator: " + ", ".join(f"{k} {v}" for k, v in sorted(by_mutator.items())))
        log("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
        for family, counts in table(records, lambda r: r["family"]).items():
            log(f"  {family}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))

        # Crashes: worker exits, and log lines.
        alarms = []
        for worker in sweep.workers:
            for line in worker.log_text().splitlines():
                if LOG_ALARM.search(line):
                    alarms.append(f"worker {worker.n}: {line[:300]}")
        crashes = len(sweep.crashes) + len(alarms)
        verdict("no crashes", crashes == 0,
                f"{len(sweep.crashes)} worker crashes, {len(alarms)} fatal/crash log lines; "
                f"{len(sweep.workers)} worker processes, "
                + ", ".join(f"{describe_exit(w.exit)} {sum(1 for x in sweep.workers if describe_exit(x.exit) == describe_exit(w.exit))}"
                            for w in {describe_exit(w.exit): w for w in sweep.workers}.values()))

        left = [r for r in everything if r["state"] in ("queued", "running")]
        hangs = len(sweep.hangs) + len(left) + (1 if sweep.timed_out else 0)
        verdict("no hangs", hangs == 0,
                f"{len(sweep.hangs)} jobs or workers past their time, {len(left)} jobs left queued or running, "
                f"run timeout {'fired' if sweep.timed_out else 'not reached'}")

        terminal = sum(1 for r in everything if r["state"] in ("succeeded", "failed"))
        verdict("every job ended", terminal == len(everything),
                f"{terminal} of {len(everything)} succeeded or failed; {len(sweep.cancelled)} cancelled by the sweep")

        failed = [r for r in everything if r["state"] == "failed"]
        transient = [r for r in everything if (r["state"] == "failed" and r["error_code"] not in PERMANENT)
                     or any(c in TRANSIENT for c in r["earlier_codes"])]
        verdict("every failure permanent", not transient,
                f"{len(failed)} failed, {len(transient)} with a transient code now or in an earlier attempt"
                + (f" ({'; '.join(r['file'] + ': ' + str(r['error_code']) for r in transient[:5])})" if transient else ""))
        misclassified = [r for r in failed if r["error_code"] not in IMAGE_ERRORS and r not in transient]
        verdict("every failure an image error", not misclassified,
                f"{len(failed) - len(misclassified)} of {len(failed)} are corrupt_image, unsupported_format, "
                f"too_large or over_memory_budget"
                + (f" ({'; '.join(r['file'] + ': ' + str(r['error_code']) for r in misclassified[:5])})" if misclassified else ""))
        retried = [r for r in everything if (r["attempts"] or 0) > 1]

        succeeded = {r["job"] for r in everything if r["state"] == "succeeded"}
        problems, objects = check_variants(storage, variants, succeeded, args.workers)
        verdict("every succeeded job has 4 variants that decode at their size", not problems,
                f"{len(succeeded)} jobs, {len(variants)} rows, {objects} files checked with djpeg, {len(problems)} problems"
                + (f" ({'; '.join(problems[:5])})" if problems else ""))

        finished = [r for r in everything if r["ms"] is not None and r["state"] in ("succeeded", "failed")]
        durations = [r["ms"] for r in finished]
        longest = max(finished, key=lambda r: r["ms"]) if finished else None
        p99 = percentile(durations, 99)
        p50 = percentile(durations, 50)
        log(f"job time: p50 {p50} ms, p99 {p99} ms, longest {longest['ms'] if longest else None} ms"
            + (f" ({longest['file']}, {outcome(longest)})" if longest else ""))

        for r in invalid:
            log(f"invalid/{r['name']}: {outcome(r)}" + (f" ({r['last_error']})" if r["last_error"] else ""))

        # Findings: the files of crashes, hangs and transient failures.
        findings = []
        record_by_job = {r["job"]: r for r in everything}
        source = served
        for crash in sweep.crashes:
            for job in crash["jobs"]:
                findings.append(save_finding(args, "crash", record_by_job[job], source,
                                             {"exit": crash["exit"], "log_tail": crash["log_tail"]}))
        for hang in sweep.hangs:
            if hang.get("job") in record_by_job:
                findings.append(save_finding(args, "hang", record_by_job[hang["job"]], source, hang))
        for r in left:
            findings.append(save_finding(args, "left_" + r["state"], r, source, {}))
        for r in transient + misclassified:
            logged = [line for w in sweep.workers for line in w.log_text().splitlines() if f"job.id={r['job']} " in line]
            findings.append(save_finding(args, "transient" if r in transient else "misclassified", r, source,
                                         {"log": logged[-10:]}))
        for f in findings:
            log(f"FINDING {f['finding']}: {f['file']} ({f['mutator']} {json.dumps(f['params'])[:200]}); "
                f"kept as {os.path.join(args.findings, f['file'])}; thumbd thumbnail: {f['thumbnail_result'][:200]}")

        wall = time.time() - started
        summary = {
            "seed": args.seed, "mutations_asked": args.mutations, "workers": args.workers, "thumbd": args.thumbd,
            "shared_corpus": args.shared, "job_timeout_seconds": args.job_timeout, "run_timeout_seconds": args.timeout,
            "budget": args.budget, "max_pixels": args.max_pixels,
            "seeds": [{k: v for k, v in s.items() if k != "path"} for s in seeds],
            "formats_covered": list(by_format), "formats_skipped": [f for f in FAMILIES if f not in by_format],
            "skipped": skipped, "files": len(records), "invalid_files": len(invalid),
            "by_format": by_format, "by_kind": dict(sorted(by_kind.items())), "by_mutator": dict(sorted(by_mutator.items())),
            "outcomes": dict(sorted(outcomes.items())),
            "outcomes_by_format": table(records, lambda r: r["family"]),
            "outcomes_by_kind": table(records, lambda r: r["kind"]),
            "outcomes_by_mutator": table(records, lambda r: r["mutator"]),
            "crashes": crashes, "crash_details": sweep.crashes, "crash_log_lines": alarms[:50],
            "hangs": hangs, "hang_details": sweep.hangs + [{"job": r["job"], "what": "left " + r["state"]} for r in left],
            "run_timed_out": sweep.timed_out,
            "transient_failures": len(transient), "misclassified_failures": len(misclassified),
            "retried_jobs": len(retried), "succeeded": len(succeeded), "failed": len(failed),
            "variant_rows": len(variants), "objects_checked": objects, "variant_problems": problems[:100],
            "worker_processes": len(sweep.workers), "worker_exits": [describe_exit(w.exit) for w in sweep.workers],
            "p50_job_ms": p50, "p99_job_ms": p99, "longest_job_ms": longest["ms"] if longest else None,
            "longest_job": {k: longest[k] for k in ("file", "mutator", "params", "state", "error_code")} if longest else None,
            "run_seconds": round(run_seconds, 1), "wall_seconds": round(wall, 1),
            "invalid_corpus": [{"name": r["name"], "outcome": outcome(r), "last_error": r["last_error"]} for r in invalid],
            "findings": [{k: f[k] for k in ("finding", "file", "mutator", "params", "state", "error_code",
                                            "thumbnail_result", "reproduce")} for f in findings],
            "checks": results,
            "records": everything,
        }
        with open(args.out_json, "w") as out:
            json.dump(summary, out, indent=1)
        ok = crashes == 0 and hangs == 0 and not transient
        log(f"{len(records)} mutated files and {len(invalid)} invalid/ files in {wall:.0f} s "
            f"({run_seconds:.0f} s of workers): crashes {crashes}, hangs {hangs}, transient failures {len(transient)}; "
            + ("all held" if ok and all(r["held"] for r in results.values()) else
               "FAILED: " + ", ".join(n for n, r in results.items() if not r["held"])))
        return 0 if ok else 1
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
