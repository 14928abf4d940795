"""JPEG: segment writers (APPn, EXIF in APP1, ICC in APP2), the marker parser, and the JPEG mutators.

A mutator takes (data, rng, seed) and returns (bytes, params), or None when it does not apply."""

import struct

from .binary import be16, put16
from .metadata import EXIF_SCENARIOS, ICC_SCENARIOS, bogus_icc, tiff_block


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
