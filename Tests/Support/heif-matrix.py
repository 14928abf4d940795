#!/usr/bin/env python3
"""Writes a matrix of HEIF files that thumbd's HEVC route is held to libheif on.

Each file is a picture coded by the x265 command line (Debian's, 8/10/12-bit) from a test pattern made
by ffmpeg, in a container written here, so that the boxes say exactly what a case needs: sizes odd and
even, 1xN and Nx1 (a clean aperture over a larger coded picture, since HEVC cannot code one pixel
across), grids whose last row and column of tiles are partial; range, matrix and primaries stated by the
stream's VUI only, by an nclx box only, by both disagreeing, or by neither; 4:2:0, 4:2:2, 4:4:4 and
monochrome; 8 and 10 bit; clap, irot and imir; an alpha plane as an auxiliary image.

Usage: heif-matrix.py OUT_DIR   (writes OUT_DIR/*.heic and OUT_DIR/manifest.json; NAME.reference.heif
beside NAME.heic where libheif 1.15 needs another file to show what HEIF says NAME shows)

The manifest lists, for each file, what it states (for the reader of a failure), not what to expect:
the test compares the route with libheif's own decode of the same file. Standard library only, plus the
`x265` and `ffmpeg` commands.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile


def box(kind, payload):
    return struct.pack(">I", 8 + len(payload)) + kind.encode() + payload


def full_box(kind, version, flags, payload):
    return box(kind, bytes([version]) + flags.to_bytes(3, "big") + payload)


CSP = {"420": ("i420", "yuv420p"), "422": ("i422", "yuv422p"), "444": ("i444", "yuv444p"),
       "400": ("i400", "gray")}
PRIMARIES = {1: "bt709", 5: "bt470bg", 6: "smpte170m", 9: "bt2020"}
MATRIX = {1: "bt709", 5: "bt470bg", 6: "smpte170m", 9: "bt2020nc"}
TRANSFER = {1: "bt709", 6: "smpte170m", 13: "iec61966-2-1", 14: "bt2020-10"}


def encode(width, height, chroma="420", bits=8, vui=None, pattern="testsrc2", seed=0, work=None):
    """Annex B HEVC of one intra picture. vui: None (no colour description, x265's defaults) or a dict
    with range ("full"/"limited"), matrix, primaries, transfer (H.273 numbers)."""
    csp, pix = CSP[chroma]
    if bits > 8:
        pix = pix + ("10le" if bits == 10 else "12le") if chroma != "400" else ("gray10le" if bits == 10 else "gray12le")
    raw = os.path.join(work, f"in-{width}x{height}-{chroma}-{bits}-{seed}.yuv")
    # Made a pixel larger and cut in RGB: ffmpeg's YUV filters round odd sizes to even.
    source = f"{pattern}=size={width + 1}x{height + 1}"
    if pattern == "testsrc2":
        source += f":rate=1,hue=h={seed * 37}"
    source += f",format=rgb24,crop={width}:{height}:0:0"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", source, "-frames:v", "1",
                    "-pix_fmt", pix, "-f", "rawvideo", raw], check=True)
    out = raw[:-4] + f"-{abs(hash(json.dumps(vui, sort_keys=True))) % 10**8}.hevc"
    ctu = 16 if min(width, height) < 64 else 32
    args = ["x265", "--input", raw, "--input-res", f"{width}x{height}", "--fps", "1", "--input-csp", csp,
            "--input-depth", str(bits), "--output-depth", str(bits), "--frames", "1", "--ctu", str(ctu),
            "--min-cu-size", "8", "--preset", "fast", "--crf", "24", "--no-info", "--log-level", "error",
            "-I", "1", "--repeat-headers", "-o", out]
    if vui:
        args += ["--range", vui.get("range", "limited")]
        if "matrix" in vui:
            args += ["--colormatrix", MATRIX[vui["matrix"]]]
        if "primaries" in vui:
            args += ["--colorprim", PRIMARIES[vui["primaries"]]]
        if "transfer" in vui:
            args += ["--transfer", TRANSFER[vui["transfer"]]]
    subprocess.run(args, check=True)
    with open(out, "rb") as f:
        return f.read()


def nal_units(annexb):
    units = []
    at = 0
    starts = []
    while True:
        i = annexb.find(b"\x00\x00\x01", at)
        if i < 0:
            break
        starts.append(i + 3)
        at = i + 3
    for k, s in enumerate(starts):
        end = starts[k + 1] - 3 if k + 1 < len(starts) else len(annexb)
        unit = annexb[s:end]
        while unit.endswith(b"\x00"):
            unit = unit[:-1]
        units.append(unit)
    return units


def hvcc_and_data(annexb, chroma, bits):
    """hvcC payload (parameter sets) and the picture's NAL units behind 4-byte lengths."""
    sets = {32: [], 33: [], 34: []}
    data = b""
    sps = None
    for unit in nal_units(annexb):
        kind = (unit[0] >> 1) & 0x3F
        if kind in sets:
            if unit not in sets[kind]:
                sets[kind].append(unit)
            if kind == 33:
                sps = unit
        elif kind < 32:
            data += struct.pack(">I", len(unit)) + unit
    assert sps is not None
    # profile_tier_level's general part (12 bytes) follows the 2-byte NAL header and a byte of ids, in
    # the unescaped payload (emulation prevention bytes removed).
    raw = bytearray()
    zeros = 0
    for b in sps[2:40]:
        if zeros >= 2 and b == 3:
            zeros = 0
            continue
        raw.append(b)
        zeros = zeros + 1 if b == 0 else 0
    ptl = bytes(raw[1:13])
    chroma_idc = {"400": 0, "420": 1, "422": 2, "444": 3}[chroma]
    payload = bytes([1]) + ptl
    payload += struct.pack(">H", 0xF000)  # min_spatial_segmentation_idc 0
    payload += bytes([0xFC, 0xFC | chroma_idc, 0xF8 | (bits - 8), 0xF8 | (bits - 8)])
    payload += struct.pack(">H", 0)  # avgFrameRate
    # constantFrameRate 0, numTemporalLayers 1, temporalIdNested 1, lengthSizeMinusOne 3
    payload += bytes([(1 << 3) | (1 << 2) | 3])
    arrays = [(k, v) for k, v in sets.items() if v]
    payload += bytes([len(arrays)])
    for kind, units in arrays:
        payload += bytes([0x80 | kind]) + struct.pack(">H", len(units))
        for u in units:
            payload += struct.pack(">H", len(u)) + u
    return payload, data


def ispe(w, h):
    return full_box("ispe", 0, 0, struct.pack(">II", w, h))


def colr_nclx(primaries, transfer, matrix, full):
    return box("colr", b"nclx" + struct.pack(">HHHB", primaries, transfer, matrix, 0x80 if full else 0))


def clap(width, height, full_w, full_h, dx=0, dy=0):
    """A clean aperture of width x height whose centre is offset (dx, dy) from the picture's centre,
    in half pixels so that an odd window in an even picture is exact."""
    # horizOff = (left + (width-1)/2) - (full_w-1)/2 = dx / 2
    return box("clap", struct.pack(">IIIIiIiI", width, 1, height, 1, dx, 2, dy, 2))


def pixi(bits, channels):
    return full_box("pixi", 0, 0, bytes([channels] + [bits] * channels))


class File:
    """Items and properties of one HEIF file, written with `write`."""

    def __init__(self):
        self.items = []  # (id, type, hidden)
        self.properties = []  # box bytes
        self.associations = {}  # id -> [(index, essential)]
        self.data = {}  # id -> bytes (mdat) or ("idat", bytes)
        self.refs = []  # (type, from, [to])
        self.primary = None

    def prop(self, item, payload, essential=False):
        if payload in self.properties:
            index = self.properties.index(payload) + 1
        else:
            self.properties.append(payload)
            index = len(self.properties)
        self.associations.setdefault(item, []).append((index, essential))

    def item(self, kind, hidden=False):
        item_id = len(self.items) + 1
        self.items.append((item_id, kind, hidden))
        return item_id

    def write(self):
        hdlr = full_box("hdlr", 0, 0, b"\0\0\0\0pict" + b"\0" * 12 + b"\0")
        pitm = full_box("pitm", 0, 0, struct.pack(">H", self.primary))
        infes = [full_box("infe", 2, 1 if hidden else 0, struct.pack(">HH", i, 0) + kind.encode() + b"\0")
                 for i, kind, hidden in self.items]
        iinf = full_box("iinf", 0, 0, struct.pack(">H", len(infes)) + b"".join(infes))
        refs = b"".join(box(kind, struct.pack(">HH", a, len(bs)) + b"".join(struct.pack(">H", b) for b in bs))
                        for kind, a, bs in self.refs)
        iref = full_box("iref", 0, 0, refs) if refs else b""
        ipco = box("ipco", b"".join(self.properties))
        entries = b""
        for item_id, props in sorted(self.associations.items()):
            entries += struct.pack(">HB", item_id, len(props))
            entries += bytes((0x80 if e else 0) | i for i, e in props)
        ipma = full_box("ipma", 0, 0, struct.pack(">I", len(self.associations)) + entries)
        iprp = box("iprp", ipco + ipma)
        idat_payload = b"".join(v[1] for v in self.data.values() if isinstance(v, tuple))
        idat = box("idat", idat_payload) if idat_payload else b""

        def iloc(mdat_start):
            out = struct.pack(">BB", 0x44, 0x00) + struct.pack(">H", len(self.data))
            at = mdat_start
            idat_at = 0
            for item_id, value in self.data.items():
                if isinstance(value, tuple):
                    out += struct.pack(">HHHHII", item_id, 1, 0, 1, idat_at, len(value[1]))
                    idat_at += len(value[1])
                else:
                    out += struct.pack(">HHHHII", item_id, 0, 0, 1, at, len(value))
                    at += len(value)
            return full_box("iloc", 1, 0, out)

        ftyp = box("ftyp", b"heic" + b"\0\0\0\0" + b"mif1heicmiaf")

        def meta(start):
            return full_box("meta", 0, 0, hdlr + pitm + iloc(start) + iinf + iref + iprp + idat)

        head = len(ftyp) + len(meta(0)) + 8
        payload = b"".join(v for v in self.data.values() if not isinstance(v, tuple))
        return ftyp + meta(head) + box("mdat", payload)


def make(case, work, tiles_carry_nclx=False):
    """One case's file bytes. case: dict with size (w, h) or grid, chroma, bits, vui, nclx, clap,
    transforms, alpha."""
    f = File()
    chroma = case.get("chroma", "420")
    bits = case.get("bits", 8)
    vui = case.get("vui")
    w, h = case["coded"]
    grid = case.get("grid")  # (columns, rows, output w, output h); tiles are w x h
    tiles = []
    count = grid[0] * grid[1] if grid else 1
    for k in range(count):
        annexb = encode(w, h, chroma, bits, vui, seed=k + case.get("seed", 0), work=work)
        tiles.append(hvcc_and_data(annexb, chroma, bits))
    if grid:
        primary = f.item("grid")
        ids = [f.item("hvc1", hidden=True) for _ in tiles]
        f.refs.append(("dimg", primary, ids))
        columns, rows, out_w, out_h = grid
        f.data[primary] = ("idat", bytes([0, 0, rows - 1, columns - 1]) + struct.pack(">HH", out_w, out_h))
        for i, (hvcc, data) in zip(ids, tiles):
            f.prop(i, box("hvcC", hvcc), essential=True)
            f.prop(i, ispe(w, h))
            if tiles_carry_nclx:
                f.prop(i, colr_nclx(*case["nclx"]))
            f.data[i] = data
        f.prop(primary, ispe(out_w, out_h))
        size = (out_w, out_h)
    else:
        primary = f.item("hvc1")
        f.prop(primary, box("hvcC", tiles[0][0]), essential=True)
        f.prop(primary, ispe(w, h))
        f.data[primary] = tiles[0][1]
        size = (w, h)
    f.primary = primary
    channels = 1 if chroma == "400" else 3
    f.prop(primary, pixi(bits, channels))
    if case.get("nclx"):
        p, t, m, full = case["nclx"]
        f.prop(primary, colr_nclx(p, t, m, full))
    if case.get("clap"):
        cw, ch, dx, dy = case["clap"]
        f.prop(primary, clap(cw, ch, size[0], size[1], dx, dy), essential=True)
    for t in case.get("transforms", []):
        if t[0] == "irot":
            f.prop(primary, box("irot", bytes([t[1]])), essential=True)
        else:
            f.prop(primary, box("imir", bytes([t[1]])), essential=True)
    if case.get("alpha"):
        annexb = encode(w, h, "400", bits, {"range": "full"}, pattern="gradients", work=work)
        hvcc, data = hvcc_and_data(annexb, "400", bits)
        alpha = f.item("hvc1", hidden=True)
        f.prop(alpha, box("hvcC", hvcc), essential=True)
        f.prop(alpha, ispe(w, h))
        f.prop(alpha, pixi(bits, 1))
        f.prop(alpha, full_box("auxC", 0, 0, b"urn:mpeg:hevc:2015:auxid:1\0"))
        f.data[alpha] = data
        f.refs.append(("auxl", alpha, [primary]))
    return f.write()


def cases():
    full709 = {"range": "full", "matrix": 1, "primaries": 1, "transfer": 1}
    out = {}
    # Sizes: even, odd (a conformance window in 4:4:4, a clap in 4:2:0), 1xN and Nx1, small.
    out["even-420"] = {"coded": (96, 64)}
    out["odd-444-window"] = {"coded": (451, 461), "chroma": "444"}
    out["odd-420-clap"] = {"coded": (452, 462), "clap": (451, 461, -1, -1)}
    out["odd-422-clap"] = {"coded": (100, 60), "chroma": "422", "clap": (99, 59, -1, 1)}
    out["1xN-clap"] = {"coded": (16, 96), "chroma": "444", "clap": (1, 96, 0, 0)}
    out["Nx1-clap"] = {"coded": (96, 16), "clap": (96, 1, 0, 1)}
    out["not-a-block-multiple-420"] = {"coded": (70, 38)}
    # Grids with partial last column and row.
    out["grid-partial"] = {"coded": (64, 64), "grid": (3, 2, 150, 100)}
    out["grid-partial-odd"] = {"coded": (64, 64), "grid": (2, 2, 127, 99), "chroma": "444"}
    out["grid-limited-vui"] = {"coded": (64, 64), "grid": (2, 2, 120, 128),
                               "vui": {"range": "limited", "matrix": 1, "primaries": 1}}
    out["grid-nclx-limited"] = {"coded": (64, 64), "grid": (2, 2, 128, 100),
                                "vui": full709, "nclx": (1, 13, 1, False)}
    # Range, matrix, primaries: by the VUI only, the nclx box only, both (disagreeing), neither.
    for m, name in ((6, "601"), (1, "709"), (9, "2020ncl")):
        for rng in ("limited", "full"):
            out[f"vui-only-{name}-{rng}"] = {"coded": (96, 64),
                                             "vui": {"range": rng, "matrix": m, "primaries": 9 if m == 9 else m if m != 6 else 6}}
            out[f"nclx-only-{name}-{rng}"] = {"coded": (96, 64), "nclx": (9 if m == 9 else 1, 13, m, rng == "full")}
    out["vui-range-only-limited"] = {"coded": (96, 64), "vui": {"range": "limited"}}
    out["both-disagree-box-full"] = {"coded": (96, 64), "vui": {"range": "limited", "matrix": 9, "primaries": 9},
                                     "nclx": (1, 13, 1, True)}
    out["both-disagree-box-limited"] = {"coded": (96, 64), "vui": full709, "nclx": (1, 13, 6, False)}
    out["neither"] = {"coded": (96, 64)}
    # Chroma formats and depths.
    for chroma in ("420", "422", "444", "400"):
        for bits in (8, 10):
            out[f"chroma-{chroma}-{bits}bit"] = {"coded": (96, 64), "chroma": chroma, "bits": bits,
                                                 "vui": {"range": "full", "matrix": 1}}
    out["10bit-limited-vui"] = {"coded": (96, 64), "bits": 10, "vui": {"range": "limited", "matrix": 1}}
    # Transforms.
    for angle in (1, 2, 3):
        out[f"irot-{angle}"] = {"coded": (96, 64), "transforms": [("irot", angle)]}
    out["imir-0"] = {"coded": (96, 64), "transforms": [("imir", 0)]}
    out["imir-1"] = {"coded": (96, 64), "transforms": [("imir", 1)]}
    out["irot-imir"] = {"coded": (96, 64), "transforms": [("irot", 1), ("imir", 0)]}
    out["clap-half-pixel-edges"] = {"coded": (96, 64), "clap": (81, 47, 0, 0)}
    out["grid-clap-half"] = {"coded": (64, 64), "grid": (3, 2, 170, 120), "clap": (151, 101, 2, 0)}
    out["grid-irot"] = {"coded": (64, 64), "grid": (3, 2, 170, 120), "transforms": [("irot", 1)]}
    out["clap-irot"] = {"coded": (96, 64), "clap": (81, 47, 3, -5), "transforms": [("irot", 3)]}
    out["grid-clap-irot-limited"] = {"coded": (64, 64), "grid": (3, 2, 170, 120), "clap": (151, 101, 2, 0),
                                     "transforms": [("irot", 1)], "vui": {"range": "limited", "matrix": 1}}
    # Alpha as an auxiliary image.
    out["alpha"] = {"coded": (96, 64), "alpha": True, "vui": full709}
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    target = sys.argv[1]
    os.makedirs(target, exist_ok=True)
    manifest = {}
    with tempfile.TemporaryDirectory() as work:
        for name, case in cases().items():
            data = make(case, work)
            with open(os.path.join(target, name + ".heic"), "wb") as f:
                f.write(data)
            manifest[name] = case
            # libheif 1.15 reads a grid's colour from its tiles, not from the grid's own nclx box as
            # HEIF says: the reference for such a grid is the same file with the box on its tiles too.
            if case.get("grid") and case.get("nclx"):
                with open(os.path.join(target, name + ".reference.heif"), "wb") as f:
                    f.write(make(case, work, tiles_carry_nclx=True))
    with open(os.path.join(target, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, default=list)


if __name__ == "__main__":
    main()
