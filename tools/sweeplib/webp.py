"""WebP: RIFF container, VP8X and ANMF header writers, the chunk parser, and the WebP mutators.

A mutator takes (data, rng, seed) and returns (bytes, params), or None when it does not apply."""

import struct

from .binary import le16, le32, putle32
from .metadata import EXIF_SCENARIOS, ICC_SCENARIOS, bogus_icc, tiff_block


def riff(chunks, size=None):
    body = b"WEBP"
    for fourcc, payload in chunks:
        body += fourcc + struct.pack("<I", len(payload)) + payload + (b"\0" if len(payload) % 2 else b"")
    return b"RIFF" + struct.pack("<I", len(body) if size is None else size) + body


def vp8x_payload(flags, width, height):
    return bytes([flags, 0, 0, 0]) + struct.pack("<I", width - 1)[:3] + struct.pack("<I", height - 1)[:3]


def putframe(x, y, width, height, duration, flags=0):
    """An ANMF header: X/2, Y/2, width-1, height-1, duration (24 bits each) and flags."""
    return (struct.pack("<I", x // 2)[:3] + struct.pack("<I", y // 2)[:3] + struct.pack("<I", width - 1)[:3]
            + struct.pack("<I", height - 1)[:3] + struct.pack("<I", duration)[:3] + bytes([flags]))


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
