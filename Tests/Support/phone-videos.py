#!/usr/bin/env python3
"""Makes phone-sized video clips with Debian's ffmpeg, one of each kind phones record, for the video
cost model (bench/video-memory, VideoCostTests) and the worker's default-settings trial.

    phone-videos.py OUT [--kinds a,b,...] [--seconds N]

Each clip is a second of black, then a moving test pattern with grain (so that keyframes are as large
as a camera's), a keyframe every second, the index at the end as a camera app writes it: its poster is
its second keyframe. Kinds (file names):

- 1080p-h264.mp4        1920x1080 H.264 8-bit, 30 fps
- 1080p240-h264.mp4     1920x1080 H.264 8-bit, 240 fps (slow motion)
- 4k-hevc8.mov          3840x2160 HEVC 8-bit SDR
- 4k-hevc10.mov         3840x2160 HEVC 10-bit SDR (hvc1, as iPhones write it)
- 4k-hevc10-hlg.mov     3840x2160 HEVC 10-bit HLG, BT.2020
- 4k60-hevc10.mov       3840x2160 HEVC 10-bit, 60 fps
- 4k-portrait-hevc10.mov  3840x2160 stored, turned by the track matrix (-90 degrees, held upright)
- 8k-h264.mp4           7680x4320 H.264 8-bit (level 6.1)
- 8k-hevc10.mp4         7680x4320 HEVC 10-bit
- 4k-vp9.webm           3840x2160 VP9 8-bit
- 4k-av1.mp4            3840x2160 AV1 8-bit (SVT-AV1)

Writes OUT/manifest.json: [{"name", "kind", "width", "height", "upright": [w, h]}]. Existing files are
kept (making the 8K ones takes a minute)."""

import argparse
import json
import subprocess
from pathlib import Path

HLG = ("setparams=color_primaries=bt709:color_trc=bt709:colorspace=bt709:range=tv,"
       "zscale=p=bt2020:t=arib-std-b67:m=bt2020nc:r=tv:npl=203,format=yuv420p10le")
X265 = "keyint={k}:min-keyint={k}:scenecut=0:log-level=error"

KINDS = {
    "1080p-h264.mp4": dict(size=(1920, 1080), rate=30, codec=["-c:v", "libx264", "-preset", "veryfast",
                                                              "-pix_fmt", "yuv420p"]),
    "1080p240-h264.mp4": dict(size=(1920, 1080), rate=240, codec=["-c:v", "libx264", "-preset", "ultrafast",
                                                                  "-pix_fmt", "yuv420p"]),
    "4k-hevc8.mov": dict(size=(3840, 2160), rate=30, codec=["-c:v", "libx265", "-preset", "ultrafast",
                                                            "-pix_fmt", "yuv420p", "-tag:v", "hvc1"], x265=True),
    "4k-hevc10.mov": dict(size=(3840, 2160), rate=30, codec=["-c:v", "libx265", "-preset", "ultrafast",
                                                             "-pix_fmt", "yuv420p10le", "-tag:v", "hvc1"], x265=True),
    "4k-hevc10-hlg.mov": dict(size=(3840, 2160), rate=30, filter=HLG, x265=True, x265_extra=(
        ":colorprim=bt2020:transfer=arib-std-b67:colormatrix=bt2020nc:range=limited"),
        codec=["-c:v", "libx265", "-preset", "ultrafast", "-pix_fmt", "yuv420p10le", "-tag:v", "hvc1",
               "-color_primaries", "bt2020", "-color_trc", "arib-std-b67", "-colorspace", "bt2020nc",
               "-color_range", "tv"]),
    "4k60-hevc10.mov": dict(size=(3840, 2160), rate=60, codec=["-c:v", "libx265", "-preset", "ultrafast",
                                                               "-pix_fmt", "yuv420p10le", "-tag:v", "hvc1"], x265=True),
    "4k-portrait-hevc10.mov": dict(size=(3840, 2160), rate=30, rotate=90, codec=[
        "-c:v", "libx265", "-preset", "ultrafast", "-pix_fmt", "yuv420p10le", "-tag:v", "hvc1"], x265=True),
    "8k-h264.mp4": dict(size=(7680, 4320), rate=30, codec=["-c:v", "libx264", "-preset", "ultrafast",
                                                           "-pix_fmt", "yuv420p", "-level", "6.1", "-b:v", "80M", "-maxrate", "100M", "-bufsize", "100M"]),
    "8k-hevc10.mp4": dict(size=(7680, 4320), rate=30, codec=["-c:v", "libx265", "-preset", "ultrafast",
                                                             "-pix_fmt", "yuv420p10le", "-tag:v", "hvc1"], x265=True),
    "4k-vp9.webm": dict(size=(3840, 2160), rate=30, codec=["-c:v", "libvpx-vp9", "-deadline", "realtime",
                                                           "-cpu-used", "8", "-b:v", "40M", "-row-mt", "1"]),
    "4k-av1.mp4": dict(size=(3840, 2160), rate=30, codec=["-c:v", "libsvtav1", "-preset", "12",
                                                          "-pix_fmt", "yuv420p"]),
}


def make(out: Path, name: str, seconds: float):
    spec = KINDS[name]
    w, h = spec["size"]
    rate = spec["rate"]
    path = out / name
    if path.exists() and path.stat().st_size > 0:
        return
    # The pattern drawn at a quarter of the size and scaled up, with grain: cheap to draw, and its
    # keyframes as large as a camera's. The first second is black, as when a phone starts recording in
    # a pocket: the poster is the second keyframe, after one that was decoded and passed over.
    source = (f"testsrc2=size={w // 4}x{h // 4}:rate={rate}:duration={seconds},"
              f"scale={w}:{h}:flags=bilinear,noise=alls=10:allf=t,fade=t=in:st=0.9:d=0.05")
    filters = source + ("," + spec["filter"] if "filter" in spec else "")
    codec = list(spec["codec"])
    if spec.get("x265"):
        codec += ["-x265-params", X265.format(k=rate) + spec.get("x265_extra", "")]
    else:
        codec += ["-g", str(rate)]
    target = out / ("unturned-" + name) if spec.get("rotate") else path
    tmp = target.with_suffix(".part" + target.suffix)
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", filters, *codec, "-an", str(tmp)],
                   check=True, stdin=subprocess.DEVNULL)
    tmp.rename(target)
    if spec.get("rotate"):
        # Debian's ffmpeg 5.1 writes a track matrix from the `rotate` tag only when it copies.
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(target), "-c", "copy",
                        "-metadata:s:v:0", f"rotate={spec['rotate']}", str(path)],
                       check=True, stdin=subprocess.DEVNULL)
        target.unlink()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--seconds", type=float, default=2)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    manifest = []
    for name in args.kinds.split(","):
        make(out, name, args.seconds)
        w, h = KINDS[name]["size"]
        upright = [h, w] if KINDS[name].get("rotate") else [w, h]
        manifest.append({"name": name, "width": w, "height": h, "upright": upright})
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
