"""HEIF and AVIF (ISOBMFF): the box, iloc and item parsers, an item's data, and the HEIF/AVIF mutators.

A mutator takes (data, rng, seed) and returns (bytes, params), or None when it does not apply."""

import struct

from .binary import be16, be32, put16, put32, read_uint, write_uint
from .metadata import EXIF_SCENARIOS, ICC_SCENARIOS, bogus_icc, tiff_block

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
