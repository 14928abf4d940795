#!/usr/bin/env python3
"""Makes "motion" photos with Debian's ffmpeg and libheif's heif-enc: stills that carry a short clip in
each layout phones write, Live Photo halves, and damaged or lying variants that must render as plain
stills, each with what thumbd must make of it, listed in OUT/manifest.json (MotionSamples in
Tests/TestSupport reads it).

    motion-samples.py OUT

Clips are 3 s of a moving testsrc2 pattern, 640x480, 30 fps, a keyframe every second; stills are a
1600x1200 frame of the pattern. Files:

- clip-h264.mp4, clip-hevc.mp4            the clips alone (no manifest entries)
- plain.jpg, plain.heic                   the stills alone (controls)
- google-container.jpg                    Motion Photo 1.0: XMP Container directory (attributes), clip at the end
- google-container-elements.jpg           the same, the XMP in element form
- google-microvideo.jpg                   the older MicroVideo XMP (MicroVideoOffset from the end)
- samsung-trailer.jpg                     Samsung's SEF trailer (MotionPhoto_Data block, SEFH..SEFT)
- samsung-trailer-lying-xmp.jpg           the trailer, and a container XMP with a wrong length: the trailer wins
- samsung-mpvd.heic                       One UI 6: a top-level `mpvd` box holding the HEVC clip at the end
- live.mov                                a Live Photo's video: QuickTime, content identifier in mdta keys
- live-still.jpg                          a Live Photo's still: Apple MakerNote tag 0x11 with the identifier
Still, no motion (damaged or lying):
- google-container-too-long.jpg           Item:Length larger than the file
- google-container-cut.jpg                cut inside the clip: file size - Length lands inside the JPEG
- microvideo-{zero,negative,huge,garbage}.jpg   MicroVideoOffset "0", "-5", Int64.max, "12abc"
- samsung-trailer-bad-offset.jpg          the entry's offset reaches before the file's start
- samsung-trailer-bad-size.jpg            the entry's size larger than its offset
- samsung-trailer-no-seft.jpg             the trailer's last 4 bytes (SEFT) cut off
- mpvd-too-long.heic, mpvd-tiny.heic      an mpvd box larger than the rest of the file; an empty one
- not-a-clip.jpg                          a container XMP pointing at 4096 random bytes

Writes OUT/manifest.json: [{"name", "layout", "expect": "motion"|"still"|"video", "offset", "length"
(the clip's first byte and byte count; null for stills), "duration_ms", "codec", "still_us" (the
timestamp the XMP states, null when none), "live_photo_id", "note"}]."""

import json
import random
import struct
import subprocess
import sys
from pathlib import Path

OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
LIVE_ID = "8A1D4B6E-2F1C-4E0B-9C7D-3B5A6F0E1D22"
PATTERN = "testsrc2=size={size}:rate=30"
cases = []


def run(*args):
    return subprocess.run(args, check=True, stdin=subprocess.DEVNULL, capture_output=True, text=True).stdout


def ffmpeg(*args):
    run("ffmpeg", "-v", "error", "-y", *args)


def probe(path):
    """(duration in ms, codec) as ffprobe reads them."""
    info = json.loads(run("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                          "format=duration:stream=codec_name", "-of", "json", str(path)))
    return round(float(info["format"]["duration"]) * 1000), info["streams"][0]["codec_name"]


def case(name, data, layout, expect, offset=None, length=None, clip=None, still_us=None, live_photo_id=None,
         note=""):
    (OUT / name).write_bytes(data)
    duration, codec = probe(OUT / clip) if clip else (None, None)
    cases.append({"name": name, "layout": layout, "expect": expect, "offset": offset, "length": length,
                  "duration_ms": duration, "codec": codec, "still_us": still_us, "live_photo_id": live_photo_id,
                  "note": note})


# The parts: the clips, a keyframe every second; the stills.
ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="640x480") + ":duration=3", "-c:v", "libx264",
       "-preset", "veryfast", "-crf", "28", "-pix_fmt", "yuv420p", "-g", "30", "-an", str(OUT / "clip-h264.mp4"))
ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="640x480") + ":duration=3", "-c:v", "libx265",
       "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-tag:v", "hvc1",
       "-x265-params", "keyint=30:min-keyint=30:scenecut=0:crf=30:log-level=error", "-an",
       str(OUT / "clip-hevc.mp4"))
ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="1600x1200"), "-frames:v", "1", "-q:v", "3",
       str(OUT / "plain.jpg"))
ffmpeg("-f", "lavfi", "-i", PATTERN.format(size="1600x1200"), "-frames:v", "1", str(OUT / "still.png"))
run("heif-enc", "-q", "60", str(OUT / "still.png"), "-o", str(OUT / "plain.heic"))
(OUT / "still.png").unlink()
H264 = (OUT / "clip-h264.mp4").read_bytes()
HEVC = (OUT / "clip-hevc.mp4").read_bytes()
JPEG = (OUT / "plain.jpg").read_bytes()
HEIC = (OUT / "plain.heic").read_bytes()
case("plain.jpg", JPEG, "none", "still", note="the still alone")
case("plain.heic", HEIC, "none", "still", note="the still alone")


def with_app1(payload, jfif=True):
    """The still with an APP1 segment after its SOI, or after its JFIF APP0 when `jfif` (else APP0 is
    dropped, as EXIF files have none)."""
    assert JPEG[:4] == b"\xff\xd8\xff\xe0"
    app0_end = 4 + struct.unpack(">H", JPEG[4:6])[0]
    segment = b"\xff\xe1" + struct.pack(">H", 2 + len(payload)) + payload
    return JPEG[:app0_end] + segment + JPEG[app0_end:] if jfif else JPEG[:2] + segment + JPEG[app0_end:]


XMP_HEAD = ('<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
            '<rdf:Description rdf:about="" xmlns:GCamera="http://ns.google.com/photos/1.0/camera/"'
            ' xmlns:Container="http://ns.google.com/photos/1.0/container/"'
            ' xmlns:Item="http://ns.google.com/photos/1.0/container/item/"')
XMP_TAIL = "</rdf:Description></rdf:RDF></x:xmpmeta>"


def xmp(body):
    return with_app1(b"http://ns.adobe.com/xap/1.0/\0" + (XMP_HEAD + body + XMP_TAIL).encode())


def container(length, elements=False):
    """A still with a Motion Photo 1.0 XMP whose video item states `length` (attributes, as Pixels write
    it, or elements)."""
    if not elements:
        return xmp(' GCamera:MotionPhoto="1" GCamera:MotionPhotoVersion="1"'
                   ' GCamera:MotionPhotoPresentationTimestampUs="1500000"><Container:Directory><rdf:Seq>'
                   '<rdf:li rdf:parseType="Resource"><Container:Item Item:Mime="image/jpeg" Item:Semantic="Primary"'
                   ' Item:Length="0" Item:Padding="0"/></rdf:li><rdf:li rdf:parseType="Resource"><Container:Item'
                   f' Item:Mime="video/mp4" Item:Semantic="MotionPhoto" Item:Length="{length}"/></rdf:li>'
                   '</rdf:Seq></Container:Directory>')
    item = "<rdf:li rdf:parseType=\"Resource\"><Container:Item rdf:parseType=\"Resource\">{}</Container:Item></rdf:li>"
    return xmp("><GCamera:MotionPhoto>1</GCamera:MotionPhoto><GCamera:MotionPhotoVersion>1</GCamera:MotionPhotoVersion>"
               "<GCamera:MotionPhotoPresentationTimestampUs>1500000</GCamera:MotionPhotoPresentationTimestampUs>"
               "<Container:Directory><rdf:Seq>"
               + item.format("<Item:Mime>image/jpeg</Item:Mime><Item:Semantic>Primary</Item:Semantic>"
                             "<Item:Length>0</Item:Length><Item:Padding>0</Item:Padding>")
               + item.format("<Item:Mime>video/mp4</Item:Mime><Item:Semantic>MotionPhoto</Item:Semantic>"
                             f"<Item:Length>{length}</Item:Length>")
               + "</rdf:Seq></Container:Directory>")


def microvideo(offset):
    return xmp(f' GCamera:MicroVideo="1" GCamera:MicroVideoVersion="1" GCamera:MicroVideoOffset="{offset}"'
               ' GCamera:MicroVideoPresentationTimestampUs="1000000">')


# Google: the clip at the end of the file, its length in the XMP.
for name, elements in [("google-container.jpg", False), ("google-container-elements.jpg", True)]:
    data = container(len(H264), elements) + H264
    case(name, data, "google-container", "motion", len(data) - len(H264), len(H264), "clip-h264.mp4", 1500000,
         note="element-form XMP" if elements else "attribute-form XMP, as Pixels write it")
data = microvideo(len(H264)) + H264
case("google-microvideo.jpg", data, "google-microvideo", "motion", len(data) - len(H264), len(H264),
     "clip-h264.mp4", 1000000, note="MicroVideoOffset counts from the end of the file")

# The length states more than the file holds (the XMP's digits count in the file's size: iterate).
length = 0
while length != len(container(length)) + len(H264) + 1000:
    length = len(container(length)) + len(H264) + 1000
case("google-container-too-long.jpg", container(length) + H264, "google-container", "still", still_us=1500000,
     note="Item:Length = file size + 1000")
# Cut so that file size - Length lands in the middle of the JPEG (at least half the clip kept).
head = container(len(H264))
kept = max(len(H264) // 2, len(H264) - len(head) // 2)
case("google-container-cut.jpg", head + H264[:kept], "google-container", "still", still_us=1500000,
     note=f"cut after {kept} of the clip's {len(H264)} bytes")
for name, offset in [("zero", "0"), ("negative", "-5"), ("huge", "9223372036854775807"), ("garbage", "12abc")]:
    case(f"microvideo-{name}.jpg", microvideo(offset) + H264, "google-microvideo", "still", still_us=1000000,
         note=f'MicroVideoOffset="{offset}", the clip appended')
junk = random.Random(5195).randbytes(4096)
case("not-a-clip.jpg", container(len(junk)) + junk, "google-container", "still", still_us=1500000,
     note="the MotionPhoto item is 4096 random bytes")


def sef(still, clip, noff_extra=0, size_extra=0):
    """`still` + Samsung's SEF trailer: a MotionPhoto_Data block holding `clip`, then the SEFH directory
    (one entry: its type, its distance back to the block, its size) and SEFT. Returns (file, offset of the
    clip)."""
    name = b"MotionPhoto_Data"
    block = b"\0\0" + struct.pack("<HI", 0x0A30, len(name)) + name + clip
    noff, size = len(block) + noff_extra, len(block) + size_extra
    directory = b"SEFH" + struct.pack("<II", 106, 1) + b"\0\0" + struct.pack("<HII", 0x0A30, noff, size)
    return still + block + directory + struct.pack("<I", len(directory)) + b"SEFT", len(still) + 8 + len(name)


data, offset = sef(JPEG, H264)
case("samsung-trailer.jpg", data, "samsung-trailer", "motion", offset, len(H264), "clip-h264.mp4",
     note="SEF trailer, no XMP")
data, offset = sef(container(len(H264) + 4096), H264)
case("samsung-trailer-lying-xmp.jpg", data, "samsung-trailer", "motion", offset, len(H264), "clip-h264.mp4",
     1500000, note="container XMP states the clip's length + 4096: the trailer wins (still_us is the XMP's)")
data, offset = sef(JPEG, H264, noff_extra=len(JPEG) + 100)
case("samsung-trailer-bad-offset.jpg", data, "samsung-trailer", "still",
     note="noff 100 bytes more than the directory's position")
data, offset = sef(JPEG, H264, size_extra=100)
case("samsung-trailer-bad-size.jpg", data, "samsung-trailer", "still", note="size = noff + 100")
data, offset = sef(JPEG, H264)
case("samsung-trailer-no-seft.jpg", data[:-4], "samsung-trailer", "still", note="SEFT cut off")

# Samsung HEIC (One UI 6): a top-level mpvd box after the still's boxes.
data = HEIC + struct.pack(">I", 8 + len(HEVC)) + b"mpvd" + HEVC
case("samsung-mpvd.heic", data, "samsung-mpvd", "motion", len(HEIC) + 8, len(HEVC), "clip-hevc.mp4",
     note="mpvd box at the end")
data = HEIC + struct.pack(">I", 8 + len(HEVC) + 1000) + b"mpvd" + HEVC
case("mpvd-too-long.heic", data, "samsung-mpvd", "still", note="mpvd size 1000 bytes past the end of the file")
case("mpvd-tiny.heic", HEIC + struct.pack(">I", 8) + b"mpvd", "samsung-mpvd", "still", note="empty mpvd box")
for name in ["samsung-mpvd.heic", "mpvd-too-long.heic", "mpvd-tiny.heic"]:
    run("heif-info", str(OUT / name))  # libheif still reads the still

# Live Photo: the video, its identifier in the QuickTime metadata (mdta keys; ffmpeg puts the meta box in
# moov/udta, iPhones in moov). Without -map_metadata -1 and bitexact, the MP4's brands and the encoder
# would be written as mdta keys too.
ffmpeg("-i", str(OUT / "clip-h264.mp4"), "-c", "copy", "-map_metadata", "-1", "-fflags", "+bitexact",
       "-f", "mov", "-movflags", "use_metadata_tags",
       "-metadata", f"com.apple.quicktime.content.identifier={LIVE_ID}", str(OUT / "live.mov"))
tags = json.loads(run("ffprobe", "-v", "error", "-show_format", "-of", "json", str(OUT / "live.mov")))
assert tags["format"]["tags"]["com.apple.quicktime.content.identifier"] == LIVE_ID, tags
data = (OUT / "live.mov").read_bytes()
case("live.mov", data, "live-photo", "video", 0, len(data), "live.mov", live_photo_id=LIVE_ID,
     note="the whole file is the clip; mdta key com.apple.quicktime.content.identifier in moov/udta/meta")


def exif_with_maker_note():
    """EXIF (big-endian TIFF): IFD0 with Orientation 1 and the Exif IFD, which holds ExifVersion and an
    Apple MakerNote: "Apple iOS\\0", version 1, "MM", an IFD at 14 whose offsets count from the note's
    start (as in iPhone files), tag 0x11 the Live Photo identifier."""
    def ifd(entries):  # entries: (tag, type, count, 4 value bytes); the next-IFD offset is 0
        return struct.pack(">H", len(entries)) + b"".join(
            struct.pack(">HHI", *e[:3]) + e[3] for e in entries) + b"\0\0\0\0"

    uuid = LIVE_ID.encode() + b"\0"
    note_ifd_size = 2 + 12 * 2 + 4
    note = b"Apple iOS\0" + b"\0\x01" + b"MM" + ifd([
        (0x0001, 9, 1, struct.pack(">i", 12)), (0x0011, 2, len(uuid), struct.pack(">I", 14 + note_ifd_size))]) + uuid
    exif_at = 8 + 2 + 12 * 2 + 4
    note_at = exif_at + 2 + 12 * 2 + 4
    ifd0 = ifd([(0x0112, 3, 1, struct.pack(">HH", 1, 0)), (0x8769, 4, 1, struct.pack(">I", exif_at))])
    exif = ifd([(0x9000, 7, 4, b"0232"), (0x927C, 7, len(note), struct.pack(">I", note_at))])
    return b"Exif\0\0" + b"MM\0*" + struct.pack(">I", 8) + ifd0 + exif + note


# ... and the still, the same identifier in its MakerNote.
case("live-still.jpg", with_app1(exif_with_maker_note(), jfif=False), "live-photo", "still",
     live_photo_id=LIVE_ID, note="Apple MakerNote tag 0x11 (content identifier), Orientation 1")

(OUT / "manifest.json").write_text(json.dumps(cases, indent=1))
