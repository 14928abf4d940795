"""Byte helpers: big- and little-endian integers read from and written into bytes at an offset."""

import struct


def be16(b, o):
    return struct.unpack_from(">H", b, o)[0]


def be32(b, o):
    return struct.unpack_from(">I", b, o)[0]


def le32(b, o):
    return struct.unpack_from("<I", b, o)[0]


def le16(b, o):
    return struct.unpack_from("<H", b, o)[0]


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
