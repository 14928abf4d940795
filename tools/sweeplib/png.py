"""PNG: the signature and the chunk writer, the chunk parser, and the PNG mutators.

A mutator takes (data, rng, seed) and returns (bytes, params), or None when it does not apply."""

import struct
import zlib

from .binary import be32, put32
from .metadata import EXIF_SCENARIOS, ICC_SCENARIOS, bogus_icc, icc_profile, tiff_block

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_chunk(kind, payload):
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


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
