"""The seeds: valid photos of every format, small, made here (by `thumbd thumbnail`, cjpeg, the PNG
encoder below, libwebp and libheif) or taken from ../shared/corpus and --seeds. Also the format sniffer, a
drawn picture, a PPM reader and a downscaler, and the libwebp and libheif encoders through ctypes."""

import ctypes
import hashlib
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import zlib

from .binary import be32
from .common import EXTENSIONS, FAMILIES, run
from .jpeg import icc_app2_segments, jpeg_insert_after_headers, jpeg_marker_segment, jpeg_segments
from .metadata import icc_profile, tiff_block
from .png import PNG_SIGNATURE, png_chunk
from .webp import putframe, riff, riff_chunks, vp8x_payload

HEIF_BRANDS = {b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"hevm", b"hevs", b"mif1", b"msf1"}


def sniff(data):
    """The format family of a file by its bytes, as thumbd sniffs it (roughly), or None."""
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if data[:2] == b"\xff\x0a" or data[:12] == b"\x00\x00\x00\x0cJXL \r\n\x87\n":
        return "jxl"
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
        if any(brand in VIDEO_BRANDS for brand in brands):
            return "video"
    if data[:4] == b"\x1a\x45\xdf\xa3" or data[4:8] in (b"moov", b"mdat", b"wide", b"free", b"skip", b"pnot"):
        return "video"
    return None


# ImageFormat.videoBrands: MP4, QuickTime, M4V, 3GPP and their relatives.
VIDEO_BRANDS = {b"isom", b"iso2", b"iso3", b"iso4", b"iso5", b"iso6", b"mp41", b"mp42", b"avc1", b"qt  ", b"M4V ",
                b"M4VH", b"M4VP", b"3gp4", b"3gp5", b"3gp6", b"3gp7", b"3g2a", b"3g2b", b"3g2c", b"mmp4", b"MSNV",
                b"dash", b"f4v ", b"XAVC", b"hvc1"}


# ---------------------------------------------------------------------------------------------------
# Writers for seeds: a picture, PPM, PNG


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

    # The HEVC route's inputs: grids with partial edge tiles, colour stated by the VUI or an nclx box,
    # odd sizes through the conformance window, 4:2:2 and 4:4:4 (Tests/Support/heif-matrix.py, which
    # codes them with the x265 command line).
    matrix_script = os.path.join(os.path.dirname(__file__), "..", "..", "Tests", "Support", "heif-matrix.py")
    if shutil.which("x265") and shutil.which("ffmpeg") and os.path.exists(matrix_script):
        matrix = os.path.join(work, "heif-matrix")
        subprocess.run([sys.executable, matrix_script, matrix], check=True, capture_output=True)
        for name in ("grid-limited-vui", "grid-partial-odd", "odd-444-window", "vui-only-709-limited",
                     "both-disagree-box-full", "chroma-422-8bit", "irot-1", "odd-420-clap", "10bit-limited-vui"):
            with open(os.path.join(matrix, name + ".heic"), "rb") as f:
                add(f"matrix-{name}.heic", "heic", "heic", f.read(), "heif-matrix.py " + name, 0.5)
    else:
        skipped["heic-matrix"] = "x265 or ffmpeg is not installed"

    # Videos: the generated matrix's clips that render (Tests/Support/video-matrix.py, ffmpeg) and the
    # shared corpus's three real ones.
    video_script = os.path.join(os.path.dirname(__file__), "..", "..", "Tests", "Support", "video-matrix.py")
    if shutil.which("ffmpeg") and os.path.exists(video_script):
        videos = os.path.join(work, "video-matrix")
        subprocess.run([sys.executable, video_script, videos], check=True, capture_output=True)
        for name in ("h264-black-start.mp4", "hevc-white-title.mp4", "hevc-10bit.mov", "h264-rotated.mov",
                     "h264-anamorphic.mp4", "h264-faststart.mp4", "vp9.webm", "av1.mp4", "mpeg4.3gp"):
            with open(os.path.join(videos, name), "rb") as f:
                add("matrix-" + name, "video", "video", f.read(), "video-matrix.py " + name, 0.5)
    else:
        skipped["video-matrix"] = "ffmpeg is not installed"
    if shared:
        for name in ("video/sample_iPod.m4v", "video/with-gps.mov", "video/sample.3gp"):
            with open(os.path.join(shared, name), "rb") as f:
                data = f.read()
            add("shared-" + os.path.basename(name), "video", "video", data, "shared " + name,
                min(1.0, 120000 / len(data)))

    # GIFs: the generated matrix's pictures (Tests/Support/gif-matrix.py: static, transparent, interlaced,
    # animated with local palettes and each disposal; it needs numpy and Pillow, from the test
    # virtualenv) and the shared corpus's two.
    gif_script = os.path.join(os.path.dirname(__file__), "..", "..", "Tests", "Support", "gif-matrix.py")
    venv = os.environ.get("THUMBD_TEST_VENV") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "thumbd", "test-venv")
    venv_python = os.path.join(venv, "bin", "python")
    if os.access(venv_python, os.X_OK) and os.path.exists(gif_script):
        gifs = os.path.join(work, "gif-matrix")
        subprocess.run([venv_python, gif_script, gifs], check=True, capture_output=True)
        for name in ("static-opaque.gif", "static-transparent.gif", "interlaced.gif", "local-palettes.gif",
                     "flat-first-frame.gif", "dispose-background-part.gif", "dispose-previous.gif", "overhang.gif",
                     "500-frames.gif"):
            with open(os.path.join(gifs, name), "rb") as f:
                add("matrix-" + name, "gif", "gif", f.read(), "gif-matrix.py " + name, 0.5)
    else:
        skipped["gif-matrix"] = "the test virtualenv (scripts/install-deps.sh) is missing"
    if shared:
        for name in ("stills/mspaint-10x10.gif", "stills/photoshop-8x12-32colors-alpha.gif"):
            with open(os.path.join(shared, name), "rb") as f:
                add("shared-" + os.path.basename(name), "gif", "gif", f.read(), "shared " + name)

    # JPEG XL: the shared corpus's photograph, and cjxl's lossy and lossless codings of the PNG seed.
    if shared:
        with open(os.path.join(shared, "stills/8bit-sRGB.jxl"), "rb") as f:
            data = f.read()
        add("shared-8bit-sRGB.jxl", "jxl", "jxl", data, "shared stills/8bit-sRGB.jxl", min(1.0, 120000 / len(data)))
    if shutil.which("cjxl"):
        png_seed = os.path.join(work, f"{stem}_rgb.png")
        for kind, flags in (("jxl-lossy", ["-d", "1.5"]), ("jxl-lossless", ["-d", "0"])):
            out = os.path.join(work, kind + ".jxl")
            subprocess.run(["cjxl", png_seed, out, *flags], check=True, capture_output=True)
            with open(out, "rb") as f:
                add(kind + ".jxl", "jxl", kind, f.read(), "cjxl " + " ".join(flags) + " of the PNG seed")
    else:
        skipped["jxl-made"] = "cjxl (libjxl-tools) is not installed"

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
