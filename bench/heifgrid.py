"""Writes HEIC files the way phones lay them out: a `grid` item of 512x512 HEVC tiles.

libheif 1.15 (Debian 12's) has no grid encoder, so each tile is encoded on its own (by libheif's x265
encoder, through whatever `encode_tile` the caller gives: bench/images uses Debian's libvips heifsave)
and this module takes the coded tile out of the single-image file libheif writes (its `hvcC` and the
item's data) and writes one file around all of them: ftyp, meta (hdlr, pitm, iinf, iloc, iref, iprp,
idat) and mdat. Standard library only.
"""

import struct


def box(kind, payload):
    return struct.pack(">I", 8 + len(payload)) + kind.encode() + payload


def full_box(kind, version, flags, payload):
    return box(kind, bytes([version]) + flags.to_bytes(3, "big") + payload)


def children(data, start, end):
    """(type, body start, end) of the boxes in data[start:end]."""
    at = start
    while at + 8 <= end:
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        header = 8
        if size == 1:
            size = struct.unpack(">Q", data[at + 8:at + 16])[0]
            header = 16
        elif size == 0:
            size = end - at
        if size < header or at + size > end:
            raise ValueError("broken box")
        yield kind.decode("latin-1"), at + header, at + size
        at += size


def find(data, start, end, kind):
    for k, body, stop in children(data, start, end):
        if k == kind:
            return body, stop
    raise ValueError(f"no {kind} box")


def coded_tile(heif):
    """(hvcC box payload, coded bytes) of the only (primary) image of a single-image HEIF file."""
    meta = find(heif, 0, len(heif), "meta")
    body = meta[0] + 4  # full box
    pitm = find(heif, body, meta[1], "pitm")
    version = heif[pitm[0]]
    primary = struct.unpack(">H" if version == 0 else ">I", heif[pitm[0] + 4:pitm[0] + (6 if version == 0 else 8)])[0]
    # iloc: the primary's extents (construction method 0: file offsets).
    iloc = find(heif, body, meta[1], "iloc")
    at = iloc[0]
    version = heif[at]
    sizes, sizes2 = heif[at + 4], heif[at + 5]
    offset_size, length_size, base_size = sizes >> 4, sizes & 15, sizes2 >> 4
    index_size = sizes2 & 15 if version >= 1 else 0
    at += 6

    def read(n):
        nonlocal at
        value = int.from_bytes(heif[at:at + n], "big") if n else 0
        at += n
        return value

    count = read(2 if version < 2 else 4)
    data = None
    for _ in range(count):
        item = read(2 if version < 2 else 4)
        if version >= 1:
            read(2)
        read(2)
        base = read(base_size)
        extents = []
        for _ in range(read(2)):
            read(index_size)
            offset = read(offset_size)
            length = read(length_size)
            extents.append(heif[base + offset:base + offset + length])
        if item == primary:
            data = b"".join(extents)
    if data is None:
        raise ValueError("the primary image has no data")
    iprp = find(heif, body, meta[1], "iprp")
    ipco = find(heif, iprp[0], iprp[1], "ipco")
    hvcc = [(b, e) for k, b, e in children(heif, ipco[0], ipco[1]) if k == "hvcC"]
    if len(hvcc) != 1:
        raise ValueError("expected one hvcC")
    return heif[hvcc[0][0]:hvcc[0][1]], data


def grid_file(width, height, tiles, tile_size=512, columns=None):
    """A HEIC whose primary item is a width x height grid of `tiles` (single-image HEIF files of
    tile_size x tile_size, row by row). Every tile must share one hvcC."""
    columns = columns or -(-width // tile_size)
    rows = -(-height // tile_size)
    if len(tiles) != rows * columns:
        raise ValueError(f"{rows}x{columns} grid needs {rows * columns} tiles, got {len(tiles)}")
    coded = [coded_tile(t) for t in tiles]
    hvcc = coded[0][0]
    if any(c[0] != hvcc for c in coded):
        raise ValueError("the tiles' hvcC differ")
    grid_id = 1
    tile_ids = list(range(2, 2 + len(coded)))
    descriptor = bytes([0, 0, rows - 1, columns - 1]) + struct.pack(">HH", width, height)

    hdlr = full_box("hdlr", 0, 0, b"\0\0\0\0" + b"pict" + b"\0" * 12 + b"\0")
    pitm = full_box("pitm", 0, 0, struct.pack(">H", grid_id))
    infes = [full_box("infe", 2, 0, struct.pack(">HH", grid_id, 0) + b"grid" + b"\0")]
    infes += [full_box("infe", 2, 1, struct.pack(">HH", i, 0) + b"hvc1" + b"\0") for i in tile_ids]  # hidden
    iinf = full_box("iinf", 0, 0, struct.pack(">H", len(infes)) + b"".join(infes))
    iref = full_box("iref", 0, 0, box("dimg", struct.pack(">HH", grid_id, len(tile_ids))
                                      + b"".join(struct.pack(">H", i) for i in tile_ids)))
    ispe = lambda w, h: full_box("ispe", 0, 0, struct.pack(">II", w, h))  # noqa: E731
    ipco = box("ipco", box("hvcC", hvcc) + ispe(tile_size, tile_size) + ispe(width, height))
    # Properties are 1-based: 1 hvcC (essential), 2 tile ispe, 3 grid ispe.
    entries = [struct.pack(">HB", grid_id, 1) + bytes([3])]
    entries += [struct.pack(">HB", i, 2) + bytes([0x80 | 1, 2]) for i in tile_ids]
    ipma = full_box("ipma", 0, 0, struct.pack(">I", len(entries)) + b"".join(entries))
    iprp = box("iprp", ipco + ipma)
    idat = box("idat", descriptor)

    def iloc(mdat_start):
        # Version 1 (construction methods), 4-byte offsets and lengths, no base offset.
        out = struct.pack(">BB", 0x44, 0x00) + struct.pack(">H", 1 + len(coded))
        out += struct.pack(">HHHHII", grid_id, 1, 0, 1, 0, len(descriptor))  # method 1: idat
        at = mdat_start
        for i, (_, data) in zip(tile_ids, coded):
            out += struct.pack(">HHHHII", i, 0, 0, 1, at, len(data))
            at += len(data)
        return full_box("iloc", 1, 0, out)

    ftyp = box("ftyp", b"heic" + b"\0\0\0\0" + b"mif1" + b"heic")

    def meta(mdat_start):
        return full_box("meta", 0, 0, hdlr + pitm + iloc(mdat_start) + iinf + iref + iprp + idat)

    head = len(ftyp) + len(meta(0)) + 8  # meta's size does not depend on the offsets' values
    payload = b"".join(data for _, data in coded)
    return ftyp + meta(head) + box("mdat", payload)
