"""Mutating the seeds: the generic mutators (truncate, at structure offsets among others; flip), the
registry of mutators by format (mutators_for) and make_mutations, which draws --mutations files, each from
one seed and one mutator, deterministically from --seed.

A mutator takes (data, rng, seed) and returns (bytes, params), or None when it does not apply."""

import hashlib
import os
import random
import struct
import zlib

from .common import EXTENSIONS, FAMILIES
from .heif import (isobmff_boxes, m_heif_box_size, m_heif_codec_config, m_heif_coded_data, m_heif_exif, m_heif_ftyp,
                   m_heif_grid, m_heif_iinf, m_heif_iloc, m_heif_ipma, m_heif_iref, m_heif_ispe, m_heif_pitm,
                   m_heif_property, parse_iloc)
from .jpeg import (jpeg_segments, m_jpeg_dht, m_jpeg_dqt, m_jpeg_eoi, m_jpeg_exif, m_jpeg_icc, m_jpeg_process,
                   m_jpeg_restart, m_jpeg_scan_flood, m_jpeg_scan_markers, m_jpeg_segment_length, m_jpeg_soi,
                   m_jpeg_sof_dims, m_jpeg_sof_fields, m_jpeg_sos)
from .png import (m_png_ancillary, m_png_chunk_length, m_png_crc, m_png_idat_corrupt, m_png_idat_truncated,
                  m_png_ihdr_fields, m_png_ihdr_size, m_png_layout, m_png_palette, png_chunks)
from .webp import (m_webp_alpha, m_webp_animation, m_webp_canvas, m_webp_chunk_size, m_webp_fourcc,
                   m_webp_frame_size, m_webp_metadata, m_webp_riff_size, m_webp_vp8x_flags, riff_chunks)


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
    elif family == "gif":
        offsets.update((6, 10, 13))
        for at in gif_frames(data):
            offsets.update((at, at + 10))
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


def gif_frames(data):
    """Offsets of the image descriptors (0x2C) found by walking a GIF's blocks."""
    found, i = [], 13
    if len(data) > 10 and data[10] & 0x80:
        i += 3 << ((data[10] & 7) + 1)
    while i < len(data):
        if data[i] == 0x21 and i + 2 < len(data):
            i += 2
        elif data[i] == 0x2C and i + 10 < len(data):
            found.append(i)
            i += 10 + ((3 << ((data[i + 9] & 7) + 1)) if data[i + 9] & 0x80 else 0) + 1
        else:
            break
        while i < len(data) and data[i]:  # data sub-blocks
            i += 1 + data[i]
        i += 1
    return found


def m_gif_canvas(data, rng, seed):
    """The screen descriptor declares another canvas: huge, zero, or smaller than the frames."""
    out = bytearray(data)
    out[6:10] = struct.pack("<HH", *rng.choice([(65535, 65535), (0, 0), (1, 1), (rng.randrange(65536), 1)]))
    return bytes(out), {"how": "canvas"}


def m_gif_frame_rect(data, rng, seed):
    """A frame's position or size runs off the canvas, or is zero."""
    frames = gif_frames(data)
    if not frames:
        return m_gif_canvas(data, rng, seed)
    at = rng.choice(frames)
    out = bytearray(data)
    out[at + 1:at + 9] = struct.pack("<HHHH", *[rng.choice([0, 1, 65535, rng.randrange(65536)]) for _ in range(4)])
    return bytes(out), {"how": "frame rect"}


def m_gif_lzw(data, rng, seed):
    """A frame's LZW minimum code size out of range, or its compressed bytes scrambled."""
    frames = gif_frames(data)
    if not frames:
        return m_gif_canvas(data, rng, seed)
    at = rng.choice(frames)
    start = at + 10 + ((3 << ((data[at + 9] & 7) + 1)) if data[at + 9] & 0x80 else 0)
    out = bytearray(data)
    if rng.random() < 0.4 and start < len(out):
        out[start] = rng.choice([0, 1, 12, 255])
        return bytes(out), {"how": "lzw code size"}
    for _ in range(rng.randint(1, 16)):
        j = rng.randrange(start + 1, len(out)) if start + 1 < len(out) else len(out) - 1
        out[j] = rng.randrange(256)
    return bytes(out), {"how": "lzw bytes"}


def m_gif_block_length(data, rng, seed):
    """A sub-block length byte changed: the blocks after it are read out of step."""
    frames = gif_frames(data)
    out = bytearray(data)
    at = (rng.choice(frames) + 11) if frames else 13
    if at < len(out):
        out[at] = rng.choice([0, 255, rng.randrange(256)])
    return bytes(out), {"how": "sub-block length"}


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
    # MP4, MOV and 3GP are ISO base media files too: their boxes (moov, trak, stsd, stco, ...) get the
    # box-size and brand mutators; Matroska/WebM only the generic ones.
    "video": [("heif_box_size", m_heif_box_size, 2.0), ("heif_ftyp", m_heif_ftyp, 0.6)],
    "gif": [("gif_canvas", m_gif_canvas, 1.0), ("gif_frame_rect", m_gif_frame_rect, 1.0),
            ("gif_lzw", m_gif_lzw, 1.0), ("gif_block_length", m_gif_block_length, 1.0)],
    "jxl": [],
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
