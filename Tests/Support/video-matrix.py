#!/usr/bin/env python3
"""Makes the video test matrix with Debian's ffmpeg: short clips of ffmpeg's test patterns in the
containers and codecs phones and cameras write, each with what thumbd must make of it, listed in
OUT/manifest.json (VideoMatrix in Tests/TestSupport reads it).

    video-matrix.py OUT

Every clip is small (a few hundred pixels, a few seconds) so the matrix takes seconds to make. Kinds:
posters that must skip a black start or a white title, rotated and non-square-pixel clips, 10-bit
HEVC (SDR, and HDR: HLG and PQ), VP9, AV1, MPEG-4 Part 2 in 3GP, a flat clip (its best frame), and
files that must fail cleanly (no video stream, a codec thumbd does not decode, cut short before the
index, damaged)."""

import json
import subprocess
import sys
from pathlib import Path

OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
cases = []
PATTERN = "testsrc2=size={size}:rate=25"


def ffmpeg(*args):
    subprocess.run(["ffmpeg", "-v", "error", "-y", *args], check=True, stdin=subprocess.DEVNULL)


def case(name, expect, upright=None, poster_after=None, note=""):
    cases.append({"name": name, "expect": expect, "upright": upright, "poster_after": poster_after,
                  "note": note})


def keys_every(seconds):
    return ["-force_key_frames", f"expr:gte(t,n_forced*{seconds})"]


# A black start (a fade from black, a hand over the lens): 2 s of black, then the picture; a keyframe
# every second. The poster comes after the black.
ffmpeg("-f", "lavfi", "-i", "color=black:size=320x180:rate=25:duration=2",
       "-f", "lavfi", "-i", PATTERN.format(size="320x180") + ":duration=3",
       "-filter_complex", "[0][1]concat=n=2:v=1[v]", "-map", "[v]", *keys_every(1),
       "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(OUT / "h264-black-start.mp4"))
case("h264-black-start.mp4", "poster", upright=[320, 180], poster_after=1.9)

# A title on white for 9 s, the next keyframe only at 9 s: the poster is that keyframe (HEVC).
ffmpeg("-f", "lavfi", "-i", "color=white:size=320x180:rate=25:duration=9",
       "-f", "lavfi", "-i", PATTERN.format(size="320x180") + ":duration=2",
       "-filter_complex", "[0]drawbox=x=120:y=80:w=80:h=12:color=black:t=fill[t];[t][1]concat=n=2:v=1[v]",
       "-map", "[v]", "-c:v", "libx265", "-preset", "ultrafast",
       "-x265-params", "keyint=225:min-keyint=225:scenecut=0:open-gop=0:log-level=error", "-tag:v", "hvc1",
       "-pix_fmt", "yuv420p", str(OUT / "hevc-white-title.mp4"))
case("hevc-white-title.mp4", "poster", upright=[320, 180], poster_after=8.9)

# 10-bit HEVC in a QuickTime file, as iPhones record (SDR here).
ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="320x180") + ":duration=1", "-c:v", "libx265",
       "-preset", "ultrafast", "-x265-params", "log-level=error", "-pix_fmt", "yuv420p10le",
       "-tag:v", "hvc1", str(OUT / "hevc-10bit.mov"))
case("hevc-10bit.mov", "poster", upright=[320, 180])

# HDR 10-bit HEVC, BT.2020, as phones record: HLG, and PQ with HDR10 mastering and light-level SEI.
# zscale makes them from the pattern as BT.2408 does (SDR white at 203 cd/m2: HLG 0.75, PQ 0.58).
HDR10 = ":hdr10=1:master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1)" \
        ":max-cll=1000,400"
for name, trc, extra in [("hevc-hlg.mp4", "arib-std-b67", ""), ("hevc-pq.mp4", "smpte2084", HDR10)]:
    ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="320x180") + ":duration=1",
           "-vf", "setparams=color_primaries=bt709:color_trc=bt709:colorspace=bt709:range=tv,"
                  f"zscale=p=bt2020:t={trc}:m=bt2020nc:r=tv:npl=203,format=yuv420p10le",
           "-c:v", "libx265", "-preset", "ultrafast", "-pix_fmt", "yuv420p10le", "-tag:v", "hvc1",
           "-x265-params", f"colorprim=bt2020:transfer={trc}:colormatrix=bt2020nc:range=limited:log-level=error"
                           + extra,
           "-color_primaries", "bt2020", "-color_trc", trc, "-colorspace", "bt2020nc", "-color_range", "tv",
           str(OUT / name))
    case(name, "poster", upright=[320, 180])

# Held upright: frames stored sideways, the track matrix turning them (-90 degrees, as an iPhone does).
# (Debian's ffmpeg 5.1 writes the matrix from the `rotate` tag only when it copies the stream.)
ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="320x180") + ":duration=1", "-c:v", "libx264",
       "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(OUT / "sideways.mov"))
ffmpeg("-i", str(OUT / "sideways.mov"), "-c", "copy", "-metadata:s:v:0", "rotate=90",
       str(OUT / "h264-rotated.mov"))
(OUT / "sideways.mov").unlink()
case("h264-rotated.mov", "poster", upright=[180, 320])

# Non-square pixels: 320x240 stored, 4:3 pixels, shown 427x240.
ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="320x240") + ":duration=1", "-vf", "setsar=4/3",
       "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(OUT / "h264-anamorphic.mp4"))
case("h264-anamorphic.mp4", "poster", upright=[427, 240])

# The index (moov) first, as streaming writers put it.
ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="320x180") + ":duration=1", "-c:v", "libx264",
       "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-movflags", "+faststart", str(OUT / "h264-faststart.mp4"))
case("h264-faststart.mp4", "poster", upright=[320, 180])

ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="320x180") + ":duration=1", "-c:v", "libvpx-vp9",
       "-deadline", "realtime", "-cpu-used", "8", "-b:v", "300k", str(OUT / "vp9.webm"))
case("vp9.webm", "poster", upright=[320, 180])

ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="320x180") + ":duration=1", "-c:v", "libaom-av1",
       "-cpu-used", "8", "-b:v", "300k", "-row-mt", "1", str(OUT / "av1.mp4"))
case("av1.mp4", "poster", upright=[320, 180])

ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="176x144") + ":duration=1", "-c:v", "mpeg4",
       "-q:v", "5", str(OUT / "mpeg4.3gp"))
case("mpeg4.3gp", "poster", upright=[176, 144])

# Nothing but a flat grey: no frame is worth showing, the best one is taken.
ffmpeg("-f", "lavfi", "-i", "color=gray:size=320x180:rate=25:duration=2", *keys_every(1), "-c:v", "libx264",
       "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(OUT / "flat.mp4"))
case("flat.mp4", "poster", upright=[320, 180], note="flat")

# Files that must fail cleanly.
ffmpeg("-f", "lavfi", "-i", "sine=duration=1", "-c:a", "aac", "-f", "mp4", str(OUT / "audio-only.mp4"))
case("audio-only.mp4", "unsupported_format")
ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="320x180") + ":duration=1", "-c:v", "mpeg2video",
       "-f", "mp4", str(OUT / "mpeg2.mp4"))
case("mpeg2.mp4", "unsupported_format")
ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="320x180") + ":duration=2", "-c:v", "libx264",
       "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(OUT / "whole.mp4"))
whole = (OUT / "whole.mp4").read_bytes()
(OUT / "whole.mp4").unlink()
# The index at the end, and the file cut in half: no index.
(OUT / "cut-before-index.mp4").write_bytes(whole[: len(whole) // 2])
case("cut-before-index.mp4", "unsupported_format|corrupt_image")
# Damaged picture data: every 97th byte of the second half flipped. Renders what decodes, or fails.
damaged = bytearray(whole)
for i in range(len(damaged) // 4, len(damaged) * 3 // 4, 97):
    damaged[i] ^= 0xFF
(OUT / "damaged.mp4").write_bytes(bytes(damaged))
case("damaged.mp4", "poster|unsupported_format|corrupt_image")

# Long enough to be read by ranges (well over the 256 KB head): 20 s of a noisy pattern at 2 Mbit/s, a
# keyframe a second, the index at the end as camera apps write it, and the same with the index first.
ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="640x360") + ":duration=20", "-vf", "noise=alls=12:allf=t",
       *keys_every(1), "-c:v", "libx264", "-preset", "ultrafast", "-b:v", "2M", "-pix_fmt", "yuv420p",
       str(OUT / "long-index-at-end.mp4"))
case("long-index-at-end.mp4", "poster", upright=[640, 360])
ffmpeg("-i", str(OUT / "long-index-at-end.mp4"), "-c", "copy", "-movflags", "+faststart",
       str(OUT / "long-index-first.mp4"))
case("long-index-first.mp4", "poster", upright=[640, 360])

# What phone editors export: a keyframe a second and a slow start from black (here 3 s of black, then a
# 1 s fade in), long enough to be read by ranges. The first keyframes a ranged read takes are all black:
# the poster search must read more of them to find the one a whole read finds.
ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="640x360") + ":duration=12",
       "-vf", "noise=alls=12:allf=t,fade=t=in:st=3:d=1", *keys_every(1), "-c:v", "libx264",
       "-preset", "ultrafast", "-b:v", "2M", "-pix_fmt", "yuv420p", str(OUT / "slow-fade-in.mp4"))
case("slow-fade-in.mp4", "poster", upright=[640, 360], poster_after=3.9)

(OUT / "manifest.json").write_text(json.dumps(cases, indent=1))
