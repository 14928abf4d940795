#!/usr/bin/env python3
"""Makes HDR video clips whose right SDR poster is known, to hold an HDR->SDR tone map to.

    hdr-clips.py OUT SOURCE_IMAGE

The SDR frame is SOURCE_IMAGE (a phone photograph, EXIF orientation applied) cut to 1280x720. The HDR
clips are made FROM it as ITU-R BT.2408 makes HDR from SDR (display-referred, SDR reference white at
203 cd/m2), so the SDR frame is the ground truth for a poster of them. Writes to OUT:

  sdr.png, sdr.mp4        the SDR frame, and as an H.264 BT.709 clip
  hlg.mp4, pq.mp4         10-bit HEVC, BT.2020, HLG (BT.2100, 1000 cd/m2 display) and PQ (HDR10)
  ffmpeg-hlg.png, ...     what ffmpeg's zscale + tonemap=hable chain (as Immich runs it) makes of each
  manifest.json           the clips and how far ffmpeg's reference and the untone-mapped code values
                          are from sdr.png (mad: mean |a-b| in 0..255; colour ratio: colourfulness
                          against sdr.png's)

All colour conversions are done here in numpy and raw Y'CbCr goes to and from ffmpeg, so no swscale
step guesses a matrix or range. A sanity check decodes the generated Y'CbCr back to SDR by the exact
inverse math (it must land within mad 3 of sdr.png: 4:2:0 chroma of a detailed photograph costs 1-2). Needs numpy, Pillow and the ffmpeg command.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps

W, H, FPS, SECONDS = 1280, 720, 25, 2

TONEMAP = ("zscale=t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,tonemap=tonemap=hable:desat=0,"
           "zscale=t=bt709:m=bt709:r=tv,format=yuv420p")
ZSCALE_IN = {"hlg": "tin=arib-std-b67:min=bt2020nc:pin=bt2020:rin=limited",
             "pq": "tin=smpte2084:min=bt2020nc:pin=bt2020:rin=limited"}

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hdrmath import (  # noqa: E402
    BT709_TO_2020, K709, K2020, REF_WHITE, colour_ratio, hlg_from_display, hlg_to_display, mad,
    pq_eotf, pq_inverse_eotf)


# --- Y'CbCr <-> R'G'B' ---------------------------------------------------------------------------------
def rgb_to_yuv420(rgb, k, bits):
    """R'G'B' 0..1 (H, W, 3) -> limited-range planar Y, Cb, Cr (chroma 2x2 averaged), rounded, clipped."""
    kr, kb = k
    y = rgb @ np.array([kr, 1 - kr - kb, kb])
    cb = (rgb[..., 2] - y) / (2 * (1 - kb))
    cr = (rgb[..., 0] - y) / (2 * (1 - kr))
    s = 1 << (bits - 8)
    half = lambda c: c.reshape(c.shape[0] // 2, 2, c.shape[1] // 2, 2).mean(axis=(1, 3))
    q = lambda v, lo, span: np.clip(np.round((lo + span * v) * s), 0, (1 << bits) - 1).astype(np.uint16)
    return q(y, 16, 219), q(half(cb), 128, 224), q(half(cr), 128, 224)


def yuv420_to_rgb(planes, k, bits):
    """Limited-range planar Y, Cb, Cr (nearest-neighbour chroma) -> R'G'B' 0..1, unclipped."""
    kr, kb = k
    s = float(1 << (bits - 8))
    y = (planes[0] / s - 16) / 219
    up = lambda c: np.repeat(np.repeat(c / s - 128, 2, axis=0), 2, axis=1) / 224
    cb, cr = up(planes[1]), up(planes[2])
    r = y + 2 * (1 - kr) * cr
    b = y + 2 * (1 - kb) * cb
    g = (y - kr * r - kb * b) / (1 - kr - kb)
    return np.stack([r, g, b], axis=-1)


def pack(planes, bits):
    dtype = "<u2" if bits > 8 else np.uint8
    return b"".join(p.astype(dtype).tobytes() for p in planes)


def unpack(raw, bits):
    dtype = np.dtype("<u2") if bits > 8 else np.dtype(np.uint8)
    a = np.frombuffer(raw, dtype).astype(np.float64)
    n, c = W * H, W * H // 4
    assert a.size == n + 2 * c, f"expected one {W}x{H} 4:2:0 frame, got {a.size} samples"
    return a[:n].reshape(H, W), a[n:n + c].reshape(H // 2, W // 2), a[n + c:].reshape(H // 2, W // 2)


def to8(rgb01):
    return np.clip(np.round(rgb01 * 255), 0, 255).astype(np.uint8)


# --- ffmpeg ------------------------------------------------------------------------------------------------
def encode(path, planes, bits, args):
    pix = "yuv420p10le" if bits > 8 else "yuv420p"
    p = subprocess.Popen(["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", pix, "-s", f"{W}x{H}",
                          "-r", str(FPS), "-i", "-", *args, str(path)], stdin=subprocess.PIPE)
    frame = pack(planes, bits)
    for _ in range(FPS * SECONDS):
        p.stdin.write(frame)
    p.stdin.close()
    if p.wait():
        sys.exit(f"ffmpeg failed writing {path}")


def first_frame(path, vf=None):
    """The first frame of `path`, raw, after `vf` if given; (raw bytes, None) or (None, stderr)."""
    cmd = ["ffmpeg", "-v", "error", "-i", str(path)] + (["-vf", vf] if vf else []) + \
          ["-frames:v", "1", "-f", "rawvideo", "-"]
    r = subprocess.run(cmd, capture_output=True, stdin=subprocess.DEVNULL)
    return (r.stdout, None) if r.returncode == 0 and r.stdout else (None, r.stderr.decode(errors="replace"))


def main():
    out, source = Path(sys.argv[1]), sys.argv[2]
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()

    img = ImageOps.exif_transpose(Image.open(source)).convert("RGB")
    sdr = np.asarray(ImageOps.fit(img, (W, H), Image.LANCZOS))
    Image.fromarray(sdr).save(out / "sdr.png")
    v = sdr.astype(np.float64) / 255

    encode(out / "sdr.mp4", rgb_to_yuv420(v, K709, 8), 8,
           ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-preset", "fast", "-crf", "14",
            "-color_primaries", "bt709", "-color_trc", "bt709", "-colorspace", "bt709", "-color_range", "tv"])

    # BT.2408: SDR display light (BT.1886, black 0), BT.709 -> BT.2020 primaries, white at 203 cd/m2.
    fd = REF_WHITE * (np.power(v, 2.4) @ BT709_TO_2020.T)
    grey = hlg_from_display(np.full((1, 3), REF_WHITE))[0, 0]
    print(f"check: {REF_WHITE:g} cd/m2 grey -> HLG E' {grey:.4f} (want ~0.75), "
          f"PQ E' {pq_inverse_eotf(REF_WHITE / 10000):.4f} (0.58)")
    assert abs(grey - 0.75) < 0.005

    master = ("hdr10=1:master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)"
              "L(10000000,1):max-cll=1000,400")
    hdr = {"hlg": (hlg_from_display(fd), "arib-std-b67", "", lambda e: hlg_to_display(e)),
           "pq": (pq_inverse_eotf(fd / 10000), "smpte2084", ":" + master, lambda e: 10000 * pq_eotf(e))}
    inverse_709 = np.linalg.inv(BT709_TO_2020)

    def back_to_sdr(planes, to_display):  # exact inverse of the generator, no tone compression
        lin = to_display(np.clip(yuv420_to_rgb(planes, K2020, 10), 0, 1)) / REF_WHITE
        return to8(np.power(np.clip(lin @ inverse_709.T, 0, 1), 1 / 2.4))

    clips = []
    for name, (signal, trc, extra, to_display) in hdr.items():
        planes = rgb_to_yuv420(signal, K2020, 10)
        clip = out / f"{name}.mp4"
        encode(clip, planes, 10,
               ["-c:v", "libx265", "-pix_fmt", "yuv420p10le", "-tag:v", "hvc1", "-preset", "fast", "-crf", "14",
                "-x265-params", f"colorprim=bt2020:transfer={trc}:colormatrix=bt2020nc:range=limited:"
                                f"log-level=error{extra}",
                "-color_primaries", "bt2020", "-color_trc", trc, "-colorspace", "bt2020nc",
                "-color_range", "tv"])

        sanity = mad(back_to_sdr(planes, to_display), sdr)
        raw, _ = first_frame(clip)
        decoded = unpack(raw, 10)
        sanity_clip = mad(back_to_sdr(decoded, to_display), sdr)
        untouched = to8(yuv420_to_rgb(decoded, K2020, 10))  # code values shown as if sRGB: no tone map

        raw, err = first_frame(clip, TONEMAP)
        zscale_note = "frame tags"
        if raw is None:  # zscale did not take the input's properties from the frame: state them
            print(f"{name}: zscale failed on the frame's own tags: {err.strip()[:300]}")
            stated = TONEMAP.replace("zscale=t=linear", f"zscale={ZSCALE_IN[name]}:t=linear", 1)
            raw, err = first_frame(clip, stated)
            zscale_note = ZSCALE_IN[name]
            if raw is None:
                sys.exit(f"{name}: zscale failed again: {err}")
        reference = to8(np.clip(yuv420_to_rgb(unpack(raw, 8), K709, 8), 0, 1))
        Image.fromarray(reference).save(out / f"ffmpeg-{name}.png")
        Image.fromarray(untouched).save(out / f"untouched-{name}.png")

        entry = {"name": clip.name, "transfer": name, "ffmpeg": f"ffmpeg-{name}.png",
                 "ffmpeg_mad": round(mad(reference, sdr), 3),
                 "ffmpeg_colour_ratio": round(colour_ratio(reference, sdr), 4),
                 "untouched_mad": round(mad(untouched, sdr), 3),
                 "untouched_colour_ratio": round(colour_ratio(untouched, sdr), 4)}
        clips.append(entry)
        print(f"{name}: sanity mad {sanity:.3f} (generated Y'CbCr), {sanity_clip:.3f} (decoded clip); "
              f"ffmpeg ({zscale_note}) mad {entry['ffmpeg_mad']} colour ratio {entry['ffmpeg_colour_ratio']}; "
              f"untouched mad {entry['untouched_mad']} colour ratio {entry['untouched_colour_ratio']}")
        assert sanity < 3, f"{name}: the generator's inverse is {sanity:.3f} from sdr.png"

    manifest = {"width": W, "height": H, "sdr": "sdr.png", "sdr_clip": "sdr.mp4", "clips": clips}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"wrote {out} in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
