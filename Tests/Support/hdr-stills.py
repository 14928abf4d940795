#!/usr/bin/env python3
"""Makes HDR still images (HEIC, AVIF, JPEG XL) whose right SDR rendering is known, to hold an HDR->SDR
tone map of stills to.

    hdr-stills.py OUT SOURCE_IMAGE

The SDR picture is SOURCE_IMAGE (a phone photograph, EXIF orientation applied) cut to 1200x800. The HDR
stills are made FROM it as ITU-R BT.2408 makes HDR from an SDR photograph (display-referred: the sRGB
curve to light, BT.709 -> BT.2020 primaries, SDR reference white at 203 cd/m2; PQ by SMPTE ST 2084, HLG
by BT.2100 with the inverse OOTF of a 1000 cd/m2 display, gamma 1.2), so sdr.png is the ground truth for
an SDR rendering of every one of them. Writes to OUT:

  sdr.png                 the SDR picture (8-bit RGB)
  pq-signal.png           the PQ and HLG R'G'B' signals, 16-bit RGB PNG (0..65535 = E' 0..1, BT.2020,
  hlg-signal.png          no colour chunk): what the files below were encoded from
  pq.heic, hlg.heic       10-bit HEVC 4:2:0, full range, nclx 9/16/9 (PQ) or 9/18/9 (HLG) in a colr box
                          and the same in the stream's VUI
  pq.avif, hlg.avif       10-bit AV1 4:2:0, full range, nclx likewise (avifenc)
  pq.jxl                  16-bit lossy JPEG XL tagged Rec.2100 PQ (cjxl), when libjxl's tools are there
  manifest.json           the stills; for each, how far its decoded signal, mapped back by the exact
                          inverse math, is from sdr.png (roundtrip_mad: must be < 3) and how far its
                          "untouched" rendering is (code values shown as if sRGB: untouched_mad,
                          untouched_colour_ratio). mad: mean |a-b| over pixels and channels, 0..255;
                          colour ratio: colourfulness (mean max-min of R,G,B) against sdr.png's.

Why the HEIC is not made by heif-enc: Debian 12's heif-enc (libheif 1.15.1) ignores --colour_primaries,
--transfer_characteristic, --matrix_coefficients and --full_range_flag: it converts RGB with BT.601
full-range, writes VUI matrix 6 with no primaries or transfer and no colr box; and `heif-enc -A` of a
16-bit PNG aborts inside libaom. So the Y'CbCr is made here in numpy (BT.2020 NCL, full range), coded by
ffmpeg's libx265 with the VUI set, and put in a minimal HEIF (ftyp, meta with hvcC/ispe/colr/pixi, mdat)
written here; AVIF comes from avifenc (libavif-bin), JXL from cjxl (libjxl-tools). Full range everywhere,
as phones write their HEIC and AVIF and as heif-enc and avifenc default to (libheif 1.15 reads 10-bit
limited range right too, but nothing here needs it).

Each file is checked with heif-info -d / jxlinfo (nclx and bit depth), decoded back with heif-convert /
djxl, and its round trip must land within mad 3 of sdr.png. Needs numpy, Pillow and the commands ffmpeg,
heif-info and heif-convert (libheif-examples), avifenc (libavif-bin), cjxl/djxl/jxlinfo (libjxl-tools,
optional).
"""

import json
import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps

W, H = 1200, 800
MAX_ROUNDTRIP_MAD = 3.0

# H.273 code points: colour primaries 9 (BT.2020), transfer 16 (PQ) / 18 (HLG), matrix 9 (BT.2020 NCL)
NCLX = {"pq": (9, 16, 9), "hlg": (9, 18, 9)}
FULL_RANGE = True
X265_TRC = {"pq": "smpte2084", "hlg": "arib-std-b67"}
HEVC_CRF = 10        # libx265, preset medium
AVIF_CQ_LEVEL = 10   # libaom end-usage=q, speed 6
JXL_DISTANCE = 0.5   # cjxl butteraugli distance (VarDCT)
JXL_COLOUR_SPACE = "RGB_D65_202_Rel_PeQ"  # cjxl 0.7's description of Rec.2100 PQ


sys.path.insert(0, str(Path(__file__).resolve().parent))
from hdrmath import (  # noqa: E402
    BT709_TO_2020, K2020, REF_WHITE, colour_ratio, hlg_from_display, hlg_to_display, mad, pq_eotf,
    pq_inverse_eotf, srgb_eotf, srgb_inverse_eotf)


TO_DISPLAY = {"pq": lambda e: 10000 * pq_eotf(e), "hlg": hlg_to_display}
INVERSE_709 = np.linalg.inv(BT709_TO_2020)


def back_to_sdr(signal, transfer):
    """R'G'B' E' 0..1 (BT.2020, PQ or HLG) -> sdr 8-bit by the exact inverse of the generator."""
    lin = TO_DISPLAY[transfer](np.clip(signal, 0, 1)) / REF_WHITE
    return to8(srgb_inverse_eotf(lin @ INVERSE_709.T))


def to8(rgb01):
    return np.clip(np.round(rgb01 * 255), 0, 255).astype(np.uint8)


# --- R'G'B' -> Y'CbCr ---------------------------------------------------------------------------------
def rgb_to_yuv420_full(rgb, k, bits):
    """R'G'B' 0..1 (H, W, 3) -> full-range planar Y, Cb, Cr (H.273: Y = (2^n-1) E'Y, C = (2^n-1) E'C +
    2^(n-1); chroma 2x2 averaged), rounded, clipped."""
    kr, kb = k
    y = rgb @ np.array([kr, 1 - kr - kb, kb])
    cb = (rgb[..., 2] - y) / (2 * (1 - kb))
    cr = (rgb[..., 0] - y) / (2 * (1 - kr))
    top = (1 << bits) - 1
    half = lambda c: c.reshape(c.shape[0] // 2, 2, c.shape[1] // 2, 2).mean(axis=(1, 3))
    q = lambda v, off: np.clip(np.round(top * v + off), 0, top).astype(np.uint16)
    return q(y, 0), q(half(cb), 1 << (bits - 1)), q(half(cr), 1 << (bits - 1))


# --- tools ---------------------------------------------------------------------------------------------
def run(cmd, what, **kw):
    if "input" not in kw:
        kw["stdin"] = subprocess.DEVNULL
    r = subprocess.run([str(c) for c in cmd], capture_output=True, **kw)
    if r.returncode:
        err = r.stderr.decode(errors="replace") if isinstance(r.stderr, bytes) else r.stderr
        sys.exit(f"{what} failed ({r.returncode}): {' '.join(map(str, cmd))}\n{err.strip()[-2000:]}")
    return r


def write_png16(path, rgb16):
    """(H, W, 3) uint16 -> 16-bit RGB PNG (Pillow cannot write one; ffmpeg writes rgb48be)."""
    run(["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb48le", "-s", f"{W}x{H}", "-i", "-",
         "-frames:v", "1", path], f"writing {path}", input=rgb16.astype("<u2").tobytes())


def read_png16(path):
    """Any PNG -> (H, W, 3) uint16 as stored (8-bit files come back scaled by 257, by ffmpeg)."""
    r = run(["ffmpeg", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "rgb48le", "-"], f"reading {path}")
    a = np.frombuffer(r.stdout, "<u2")
    assert a.size == W * H * 3, f"{path}: expected {W}x{H} RGB, got {a.size} samples"
    return a.reshape(H, W, 3)


def png_depth(path):
    with open(path, "rb") as f:
        head = f.read(33)
    return head[24]  # IHDR bit depth


# --- HEVC in HEIF --------------------------------------------------------------------------------------
def nal_units(stream):
    """Annex B byte stream -> NAL units (without start codes)."""
    starts = [m.end() for m in re.finditer(b"\x00\x00\x01", stream)]
    units = []
    for i, s in enumerate(starts):
        e = starts[i + 1] - 3 if i + 1 < len(starts) else len(stream)
        units.append(stream[s:e].rstrip(b"\x00") if i + 1 < len(starts) else stream[s:e])
    return units


def nal_type(nal):
    return (nal[0] >> 1) & 0x3F


def box(kind, payload):
    return struct.pack(">I4s", 8 + len(payload), kind.encode()) + payload


def full_box(kind, version, flags, payload):
    return box(kind, bytes([version]) + flags.to_bytes(3, "big") + payload)


def hvcc(vps, sps, pps, bits):
    """HEVCDecoderConfigurationRecord (ISO/IEC 14496-15) from the stream's parameter sets."""
    rbsp = re.sub(b"\x00\x00\x03", b"\x00\x00", sps[2:])  # drop emulation prevention bytes
    sub_layers = ((rbsp[0] >> 1) & 7) + 1
    nested = rbsp[0] & 1
    ptl = rbsp[1:13]  # profile space/tier/idc, 32 compatibility flags, 48 constraint flags, level
    record = bytes([1]) + ptl + struct.pack(
        ">HBBBBHB", 0xF000, 0xFC, 0xFC | 1, 0xF8 | (bits - 8), 0xF8 | (bits - 8), 0,
        (sub_layers << 3) | (nested << 2) | 3)
    arrays = b"".join(bytes([0x80 | t]) + struct.pack(">HH", 1, len(n)) + n
                      for t, n in ((32, vps), (33, sps), (34, pps)))
    return box("hvcC", record + bytes([3]) + arrays)


def heif_from_hevc(stream, nclx, full_range, bits):
    """A single-image HEIF: ftyp, meta (hdlr, pitm, iloc, iinf, iprp: hvcC, ispe, colr nclx, pixi), mdat."""
    units = nal_units(stream)
    first = lambda t: next(n for n in units if nal_type(n) == t)
    vcl = [n for n in units if nal_type(n) < 32]
    assert vcl, "no picture in the HEVC stream"
    data = b"".join(struct.pack(">I", len(n)) + n for n in vcl)
    cp, tc, mc = nclx
    ipco = box("ipco", hvcc(first(32), first(33), first(34), bits)
               + full_box("ispe", 0, 0, struct.pack(">II", W, H))
               + box("colr", b"nclx" + struct.pack(">HHHB", cp, tc, mc, 0x80 if full_range else 0))
               + full_box("pixi", 0, 0, bytes([3, bits, bits, bits])))
    ipma = full_box("ipma", 0, 0, struct.pack(">IHB", 1, 1, 4) + bytes([0x81, 0x02, 0x03, 0x04]))
    ftyp = box("ftyp", b"heic" + struct.pack(">I", 0) + b"mif1heicmiaf")

    def meta(offset):
        return full_box("meta", 0, 0,
                        full_box("hdlr", 0, 0, bytes(4) + b"pict" + bytes(12) + b"\x00")
                        + full_box("pitm", 0, 0, struct.pack(">H", 1))
                        + full_box("iloc", 0, 0, bytes([0x44, 0x00]) + struct.pack(">HHHHII", 1, 1, 0, 1, offset, len(data)))
                        + full_box("iinf", 0, 0, struct.pack(">H", 1)
                                   + full_box("infe", 2, 0, struct.pack(">HH", 1, 0) + b"hvc1\x00"))
                        + box("iprp", ipco + ipma))

    offset = len(ftyp) + len(meta(0)) + 8
    return ftyp + meta(offset) + box("mdat", data)


def encode_heic(path, signal, transfer, work):
    """R'G'B' signal -> BT.2020 full-range 10-bit Y'CbCr (numpy) -> libx265 -> HEIF written here."""
    planes = rgb_to_yuv420_full(signal, K2020, 10)
    stream = work / f"{transfer}.hevc"
    trc = X265_TRC[transfer]
    run(["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "yuv420p10le", "-s", f"{W}x{H}", "-i", "-",
         "-frames:v", "1", "-c:v", "libx265", "-preset", "medium", "-crf", str(HEVC_CRF),
         "-x265-params", f"colorprim=bt2020:transfer={trc}:colormatrix=bt2020nc:range=full:info=0:log-level=error",
         "-color_primaries", "bt2020", "-color_trc", trc, "-colorspace", "bt2020nc", "-color_range", "pc",
         "-f", "hevc", stream], f"libx265 ({transfer})",
        input=b"".join(p.astype("<u2").tobytes() for p in planes))
    vui = run(["ffprobe", "-v", "error", "-show_entries",
               "stream=pix_fmt,color_range,color_space,color_transfer,color_primaries", "-of", "compact=p=0",
               stream], "ffprobe").stdout.decode().strip()
    path.write_bytes(heif_from_hevc(stream.read_bytes(), NCLX[transfer], FULL_RANGE, 10))
    return f"HEVC VUI (ffprobe): {vui}"


def encode_avif(path, png, transfer):
    cp, tc, mc = NCLX[transfer]
    run(["avifenc", "-j", "all", "-s", "6", "-d", "10", "-y", "420", "-r", "full" if FULL_RANGE else "limited",
         "--cicp", f"{cp}/{tc}/{mc}", "--ignore-icc", "--min", "0", "--max", "63",
         "-a", "end-usage=q", "-a", f"cq-level={AVIF_CQ_LEVEL}", png, path], f"avifenc ({transfer})")


def check_heif(path, transfer):
    """heif-info: an nclx colr box with the wanted numbers, 10 bits (pixi, hvcC/av1C)."""
    info = run(["heif-info", path], "heif-info").stdout.decode()
    dump = run(["heif-info", "-d", path], "heif-info -d").stdout.decode()
    fields = {k: int(v) for k, v in re.findall(
        r"(colour_primaries|transfer_characteristics|matrix_coefficients|full_range_flag): (\d+)", dump)}
    want = dict(zip(("colour_primaries", "transfer_characteristics", "matrix_coefficients"), NCLX[transfer]),
                full_range_flag=int(FULL_RANGE))
    depth = re.search(r"bits_per_channel: ([\d,]+)", dump)
    lines = [l.strip() for l in info.splitlines() if "color profile" in l]
    lines += [l.strip("| ").strip() for l in dump.splitlines()
              if re.search(r"colour_type|colour_primaries|transfer_char|matrix_coeff|full_range|bits_per_channel"
                           r"|bit_depth_luma|high_bitdepth|twelve_bit", l)]
    assert "color profile: nclx" in info, f"{path.name}: heif-info sees no nclx profile:\n{info}"
    assert fields == want, f"{path.name}: colr says {fields}, wanted {want}"
    assert depth and depth.group(1) == "10,10,10", f"{path.name}: pixi says {depth and depth.group(1)}"
    return lines


def decode_heif(path, work):
    """heif-convert -> 16-bit PNG; libheif 1.15 stores a 10-bit sample v as v << 6. Returns the 10-bit
    code values (H, W, 3)."""
    out = work / f"{path.stem}-{path.suffix[1:]}-decoded.png"
    run(["heif-convert", "--quiet", path, out], f"heif-convert {path.name}")
    assert png_depth(out) == 16, f"{out.name} is not 16-bit"
    v = read_png16(out)
    assert not np.any(v & 63), f"{out.name}: samples are not 10-bit values shifted by 6"
    return v >> 6


def check_jxl(path):
    info = run(["jxlinfo", path], "jxlinfo").stdout.decode()
    assert "16-bit RGB" in info, f"{path.name}: jxlinfo: {info}"
    assert "Rec.2100 primaries, PQ transfer function" in info, f"{path.name}: jxlinfo: {info}"
    return [l.strip() for l in info.splitlines() if l.strip()]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out, source = Path(sys.argv[1]), sys.argv[2]
    out.mkdir(parents=True, exist_ok=True)
    work = out / "work"
    work.mkdir(exist_ok=True)
    started = time.monotonic()
    lap = [started]

    def timed(what):
        now = time.monotonic()
        print(f"  [{now - lap[0]:5.1f} s] {what}")
        lap[0] = now

    for tool in ("ffmpeg", "ffprobe", "heif-info", "heif-convert", "avifenc"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing (Debian: ffmpeg, libheif-examples, libavif-bin)")
    jxl_tools = all(shutil.which(t) for t in ("cjxl", "djxl", "jxlinfo"))

    img = ImageOps.exif_transpose(Image.open(source)).convert("RGB")
    sdr = np.asarray(ImageOps.fit(img, (W, H), Image.LANCZOS))
    Image.fromarray(sdr).save(out / "sdr.png")
    v = sdr.astype(np.float64) / 255

    # BT.2408: SDR display light by the sRGB curve, BT.709 -> BT.2020 primaries, white at 203 cd/m2.
    fd = REF_WHITE * (srgb_eotf(v) @ BT709_TO_2020.T)
    grey = hlg_from_display(np.full((1, 3), REF_WHITE))[0, 0]
    print(f"check: {REF_WHITE:g} cd/m2 white -> HLG E' {grey:.4f} (want ~0.75), "
          f"PQ E' {pq_inverse_eotf(REF_WHITE / 10000):.4f} (0.58)")
    assert abs(grey - 0.75) < 0.005
    signals = {"pq": pq_inverse_eotf(fd / 10000), "hlg": hlg_from_display(fd)}
    timed("sdr.png and the HDR signals")

    pngs = {}
    for transfer, signal in signals.items():
        rgb16 = np.clip(np.round(signal * 65535), 0, 65535).astype(np.uint16)
        pngs[transfer] = out / f"{transfer}-signal.png"
        write_png16(pngs[transfer], rgb16)
        assert png_depth(pngs[transfer]) == 16 and np.array_equal(read_png16(pngs[transfer]), rgb16), \
            f"{pngs[transfer]} does not read back as written"
        sanity = mad(back_to_sdr(rgb16 / 65535, transfer), sdr)
        print(f"{transfer}: {pngs[transfer].name} 16-bit, reads back exactly; inverse math on it: mad {sanity:.3f}")
        assert sanity < 1, f"{transfer}: the generator's inverse is {sanity:.3f} from sdr.png"
    timed("16-bit signal PNGs")

    stills = []

    def record(path, transfer, fmt, signal01, untouched, checks):
        rt = mad(back_to_sdr(signal01, transfer), sdr)
        entry = {"name": path.name, "transfer": transfer, "format": fmt,
                 "untouched_mad": round(mad(untouched, sdr), 3),
                 "untouched_colour_ratio": round(colour_ratio(untouched, sdr), 4),
                 "roundtrip_mad": round(rt, 3), "bytes": path.stat().st_size}
        stills.append(entry)
        print(f"{path.name}: {entry['bytes']} bytes; round trip (decoded, inverse math) mad {rt:.3f}; "
              f"untouched mad {entry['untouched_mad']} colour ratio {entry['untouched_colour_ratio']}")
        for line in checks:
            print(f"    {line}")
        assert rt < MAX_ROUNDTRIP_MAD, f"{path.name}: decoded and mapped back it is {rt:.3f} from sdr.png"

    for transfer in ("pq", "hlg"):
        heic = out / f"{transfer}.heic"
        vui = encode_heic(heic, signals[transfer], transfer, work)
        checks = check_heif(heic, transfer) + [vui]
        code = decode_heif(heic, work)
        # untouched: libheif's own 10 -> 8 bit step (a shift, no rounding), code values as if sRGB
        record(heic, transfer, "heif", code / 1023, (code >> 2).astype(np.uint8), checks)
        timed(heic.name)

        avif = out / f"{transfer}.avif"
        encode_avif(avif, pngs[transfer], transfer)
        checks = check_heif(avif, transfer)
        code = decode_heif(avif, work)
        record(avif, transfer, "avif", code / 1023, (code >> 2).astype(np.uint8), checks)
        timed(avif.name)

    if jxl_tools:
        jxl = out / "pq.jxl"
        run(["cjxl", pngs["pq"], jxl, "-x", f"color_space={JXL_COLOUR_SPACE}", "-d", str(JXL_DISTANCE),
             "--quiet"], "cjxl")
        checks = check_jxl(jxl)
        deep = work / "pq-jxl-decoded.png"
        run(["djxl", jxl, deep, "--bits_per_sample=16", "--quiet"], "djxl")
        assert png_depth(deep) == 16, f"{deep.name} is not 16-bit"
        decoded = read_png16(deep) / 65535  # in the file's own colour encoding (PQ): it carries a cICP chunk
        # untouched: rounded to 8 bits here (djxl 0.7's --bits_per_sample=8 still writes a 16-bit PNG,
        # and not the same picture)
        record(jxl, "pq", "jxl", decoded, to8(decoded), checks)
        timed(jxl.name)
    else:
        print("cjxl/djxl/jxlinfo missing (Debian: libjxl-tools): pq.jxl skipped")

    manifest = {"width": W, "height": H, "sdr": "sdr.png",
                "signals": {t: p.name for t, p in pngs.items()},
                "range": "full" if FULL_RANGE else "limited", "stills": stills}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    shutil.rmtree(work)
    print(f"wrote {out} in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
