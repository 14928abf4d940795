"""EXIF (TIFF) blocks and ICC profiles, valid or broken in a named way (EXIF_SCENARIOS, ICC_SCENARIOS): in
the seeds, and put into mutated files of every format by the format mutators."""

import random
import struct

from .binary import put32

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
