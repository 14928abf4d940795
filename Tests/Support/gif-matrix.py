#!/usr/bin/env python3
"""Makes the GIF test matrix: GIFs whose every frame is drawn here, each with what thumbd must make of it,
listed in OUT/manifest.json (GIFMatrix in Tests/TestSupport reads it).

    gif-matrix.py OUT

thumbd shows a GIF's first frame composited on a transparent canvas as a browser shows it, passing over
frames that leave the canvas blank (nothing painted, or one flat colour) while the animation has more, up
to 32. Each case is {name, expect ("picture" or the error codes allowed, "a|b"), frame (the composited
frame shown, 0-based), reference (RGBA PNG of the canvas after frames 0..frame), size (the canvas), note}.
Animations of up to 32 frames also list every frame as it plays (`animation`: [{reference, duration}], the
composited canvas after each frame and how long a browser shows it, 100 ms for a delay of 0 or 1) and
`loop` (the NETSCAPE loop count, null without one): what an `"animated": true` variant must keep.
Kinds: static opaque, transparent and interlaced GIFs (Pillow's encoder); animations with local palettes,
a flat or transparent first frame, disposal 2 (restore to transparent) and 3 (restore to previous), frames
overhanging the canvas (this script's encoder, which writes exactly the blocks a case needs); bombs (a
65535x65535 canvas, 500 frames, 10,000 blank frames); damaged files (cut short, no frame, garbage) and
one without its trailer.

The references are composited here in numpy from the frames drawn, as browsers do (disposal 2 clears the
frame's rectangle to transparent, not to the background colour; frames are clipped to the canvas), and
every file is checked: its blocks parsed for the flags a case is about, each frame of this encoder's LZW
decoded alone by Pillow, and Pillow's compositing compared with the reference (where Pillow composites
otherwise, as it does for disposal 2 and overhanging frames, the note says how). Needs numpy and Pillow.
"""

import io
import json
import struct
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image

FRAMES_LOOKED = 32  # GIFSource.framesLooked
MAX_PIXELS = 100_000_000  # thumbd's default pixel limit


# --- writing GIFs ---------------------------------------------------------------------------------------
def lzw(indices, min_size):
    """GIF LZW of a flat sequence of indices: a clear code first, the dictionary cleared when full. Also
    [(bits written, pixels coded)] after each code, to say what a cut file still carries."""
    clear, end = 1 << min_size, (1 << min_size) + 1
    acc = nbits = 0
    out = bytearray()
    marks = []
    done = 0

    def emit(code, width, pixels=0):
        nonlocal acc, nbits, done
        acc |= code << nbits
        nbits += width
        while nbits >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8
        done += pixels
        marks.append((len(out) * 8 + nbits, done))

    def reset():
        return {}, min_size + 1, end + 1

    table, width, next_code = reset()
    emit(clear, width)
    lengths = {i: 1 for i in range(clear)}  # pixels each code stands for
    seq = [int(v) for v in indices]
    prefix = seq[0]
    for c in seq[1:]:
        code = table.get((prefix, c))
        if code is not None:
            prefix = code
            continue
        emit(prefix, width, lengths[prefix])
        if next_code < 4096:
            table[(prefix, c)] = next_code
            lengths[next_code] = lengths[prefix] + 1
            next_code += 1
            if next_code > (1 << width) and width < 12:  # the decoder widens one code later
                width += 1
        else:
            emit(clear, width)
            table, width, next_code = reset()
        prefix = c
    emit(prefix, width, lengths[prefix])
    emit(end, width)
    if nbits:
        out.append(acc & 0xFF)
    return bytes(out), marks


def sub_blocks(data):
    return b"".join(bytes([len(data[i:i + 255])]) + data[i:i + 255] for i in range(0, len(data), 255)) + b"\0"


def colour_table(palette):
    """The palette padded to a power of two (2 at least): (bytes, log2 entries)."""
    bits = max(1, int(np.ceil(np.log2(max(2, len(palette))))))
    table = np.zeros((1 << bits, 3), np.uint8)
    table[:len(palette)] = palette
    return table.tobytes(), bits


class Frame:
    def __init__(self, pixels, left=0, top=0, palette=None, transparent=None, disposal=0, delay=10, gce=True):
        self.pixels = np.asarray(pixels, np.uint8)
        self.left, self.top = left, top
        self.palette = None if palette is None else np.asarray(palette, np.uint8)
        self.transparent, self.disposal, self.delay, self.gce = transparent, disposal, delay, gce
        self.min_size = max(2, int(self.pixels.max()).bit_length())
        if self.palette is not None:
            self.min_size = max(self.min_size, colour_table(self.palette)[1])
        self.data, self.marks = lzw(self.pixels.ravel(), self.min_size)

    @property
    def size(self):
        return self.pixels.shape[1], self.pixels.shape[0]

    def descriptor(self, left, top, table=b"", table_bits=0):
        flags = 0x80 | (table_bits - 1) if table else 0
        return b"," + struct.pack("<HHHH", left, top, *self.size) + bytes([flags]) + table

    def encode(self):
        out = b""
        if self.gce:
            packed = (self.disposal << 2) | (self.transparent is not None)
            out += b"\x21\xF9\x04" + struct.pack("<BHB", packed, self.delay, self.transparent or 0) + b"\0"
        table, bits = colour_table(self.palette) if self.palette is not None else (b"", 0)
        return out + self.descriptor(self.left, self.top, table, bits) + bytes([self.min_size]) \
            + sub_blocks(self.data)


def gif(size, frames, palette=None, background=0, trailer=True):
    out = b"GIF89a" + struct.pack("<HH", *size)
    if palette is not None:
        table, bits = colour_table(palette)
        out += bytes([0xF0 | (bits - 1), background, 0]) + table
    else:
        out += bytes([0x70, 0, 0])
    if len(frames) > 1:  # loop forever, as animations do
        out += b"\x21\xFF\x0BNETSCAPE2.0\x03\x01\0\0\0"
    out += b"".join(f.encode() for f in frames)
    return out + (b";" if trailer else b"")


# --- reading them back ----------------------------------------------------------------------------------
def parse(data):
    """The blocks, without decompressing: canvas, global table bits, frames (with the byte offset of each
    image descriptor), whether the trailer came, and where the blocks stopped making sense (error)."""
    s = {"canvas": None, "global": None, "frames": [], "trailer": False, "error": None}
    if len(data) < 13 or data[:6] not in (b"GIF87a", b"GIF89a"):
        s["error"] = "no GIF header"
        return s
    s["canvas"] = struct.unpack("<HH", data[6:10])
    i = 13
    if data[10] & 0x80:
        s["global"] = (data[10] & 7) + 1
        i += 3 << s["global"]
    control = {}

    def skip(at):
        while at < len(data):
            n = data[at]
            at += 1 + n
            if n == 0:
                return at
        return None

    while i < len(data):
        if data[i] == 0x3B:
            s["trailer"] = True
            return s
        if data[i] == 0x21 and i + 1 < len(data):
            if data[i + 1] == 0xF9 and i + 7 < len(data) and data[i + 2] == 4:
                control = {"disposal": (data[i + 3] >> 2) & 7,
                           "transparent": data[i + 6] if data[i + 3] & 1 else None}
            nxt = skip(i + 2)
        elif data[i] == 0x2C and i + 10 <= len(data):
            left, top, w, h = struct.unpack("<HHHH", data[i + 1:i + 9])
            flags = data[i + 9]
            f = {"offset": i, "left": left, "top": top, "size": (w, h), "interlace": bool(flags & 0x40),
                 "local": (flags & 7) + 1 if flags & 0x80 else None, "disposal": 0, "transparent": None}
            f.update(control)
            at = i + 10 + (3 << f["local"] if f["local"] else 0)
            f["table"] = data[i + 10:at] if f["local"] else None
            control = {}
            s["frames"].append(f)
            nxt = skip(at + 1)
        else:
            s["error"] = f"no block at byte {i}"
            return s
        if nxt is None:
            s["error"] = f"cut in the block at byte {i}"
            return s
        i = nxt
    s["error"] = "no trailer"
    return s


def composite(size, frames, palette):
    """The canvas (RGBA, straight, transparent pixels 0) after each frame, as browsers composite."""
    w, h = size
    canvas = np.zeros((h, w, 4), np.uint8)
    saved, pending, shown = None, None, []
    for f in frames:
        if pending and pending[0] == 2:  # restore to transparent, the frame's rectangle only
            x0, y0, x1, y1 = pending[1]
            canvas[y0:y1, x0:x1] = 0
        elif pending and pending[0] == 3:  # restore to previous
            canvas = saved.copy()
        if f.disposal == 3:
            saved = canvas.copy()
        x0, y0 = min(f.left, w), min(f.top, h)
        x1, y1 = min(f.left + f.size[0], w), min(f.top + f.size[1], h)  # clipped to the canvas
        idx = f.pixels[:y1 - y0, :x1 - x0]
        pal = f.palette if f.palette is not None else palette
        painted = idx != f.transparent if f.transparent is not None else np.ones(idx.shape, bool)
        region = canvas[y0:y1, x0:x1]
        region[painted, :3] = pal[idx[painted]]
        region[painted, 3] = 255
        pending = (f.disposal, (x0, y0, x1, y1))
        shown.append(canvas.copy())
        if len(shown) == FRAMES_LOOKED:
            break
    return shown


def blank(canvas, sampled):
    """Nearly one colour everywhere (FrameContent.isMostlyOneColour: fewer than 2% of the pixels differ
    from the most common colour, every transparent pixel one colour); `sampled` samples as it does."""
    px = np.where(canvas[..., 3:] == 0, 0, canvas).reshape(-1, 4)
    if sampled:
        px = px[::max(1, len(px) // 4096)]
    _, counts = np.unique(px, axis=0, return_counts=True)
    return bool(len(px) - counts.max() < 0.02 * len(px))


def shown_frame(canvases, count, sampled):
    """The frame thumbd shows: the first not blank, else the last looked at."""
    for k, c in enumerate(canvases):
        if count == 1 or k == count - 1 or not blank(c, sampled):
            return k
    return len(canvases) - 1


def pillow_canvas(path, frame):
    with Image.open(path) as im:
        im.seek(frame)
        return np.array(im.convert("RGBA"))


def differences(ref, got):
    """How Pillow's canvas differs from the reference ("" when it does not; colour under alpha 0 ignored)."""
    if got.shape != ref.shape:
        return f"Pillow's canvas is {got.shape[1]}x{got.shape[0]}, not {ref.shape[1]}x{ref.shape[0]}"
    alpha = int((got[..., 3] != ref[..., 3]).sum())
    both = (got[..., 3] > 0) & (ref[..., 3] > 0)
    colour = int((np.abs(got[..., :3].astype(int) - ref[..., :3]).max(axis=-1)[both] > 0).sum())
    return f"alpha differs at {alpha} pixels, colour at {colour}" if alpha or colour else ""


# --- the matrix -----------------------------------------------------------------------------------------
OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
started = time.monotonic()
cases, checked = [], {}
TEST_PALETTE = np.stack([np.arange(256), 255 - np.arange(256), np.full(256, 77)], axis=1)


def check_lzw(f):
    """This encoder's data of one frame, decoded alone by Pillow, must give back its indices."""
    key = (f.size, f.min_size, f.data)
    if key in checked:
        return
    alone = gif(f.size, [], TEST_PALETTE, trailer=False) + f.descriptor(0, 0) + bytes([f.min_size]) \
        + sub_blocks(f.data) + b";"
    with Image.open(io.BytesIO(alone)) as im:
        got = np.array(im)
    assert im.mode == "P" and (got == f.pixels).all(), f"the LZW of a {f.size} frame does not decode back"
    checked[key] = True


def shown_ms(delay):
    """How long a browser shows a frame of `delay` hundredths of a second (AnimationFrame.shownDuration)."""
    return 100 if delay <= 1 else delay * 10


def animation_entry(name, canvases, delays):
    """Every frame as it plays: its composited canvas, written beside the GIF, and its shown duration."""
    played = []
    for k, (canvas, delay) in enumerate(zip(canvases, delays)):
        reference = name.rsplit(".", 1)[0] + f".play{k}.png"
        Image.fromarray(canvas, "RGBA").save(OUT / reference)
        played.append({"reference": reference, "duration": shown_ms(delay)})
    return played


def case(name, data, expect, frame=None, reference=None, note="", pillow=None, flags=None, animation=None,
         loop=None):
    """Writes NAME and its reference. `pillow`: why Pillow composites it otherwise (else it must agree);
    `flags(structure)`: what the blocks must say."""
    path = OUT / name
    path.write_bytes(data)
    s = parse(data)
    if flags:
        assert flags(s), f"{name}: the blocks do not say what the case is about: {s['frames'][:4]}"
    entry = {"name": name, "expect": expect, "frame": frame, "reference": None,
             "size": list(s["canvas"]) if s["canvas"] else None, "note": note, "animation": animation,
             "loop": loop}
    if reference is not None:
        entry["reference"] = name.rsplit(".", 1)[0] + ".reference.png"
        Image.fromarray(reference, "RGBA").save(OUT / entry["reference"])
        try:
            diff = differences(reference, pillow_canvas(path, frame))
        except Exception as e:  # reported, not raised
            diff = f"Pillow fails: {e}"
        if pillow is None:
            assert not diff, f"{name}: Pillow differs from the reference: {diff}"
        else:
            if diff:
                entry["note"] += f" Pillow composites it otherwise ({pillow}): {diff}."
            print(f"{name}: Pillow {'differs, ' + diff if diff else 'now agrees'} ({pillow})")
    else:
        try:
            with Image.open(path) as im:
                im.load()
            pillow_says = "Pillow opens it"
        except Exception as e:
            pillow_says = f"Pillow: {type(e).__name__}: {e}"
        print(f"{name}: {pillow_says}")
    cases.append(entry)


def drawn(name, size, frames, palette=None, expect_frame=0, note="", pillow=None, flags=None, **kw):
    """A GIF of this encoder's frames, its reference composited here. The frame expected must be the one
    thumbd's rule picks, whether it samples the canvas as GIFSource does or looks at every pixel."""
    for f in frames:
        check_lzw(f)
    canvases = composite(size, frames, None if palette is None else np.asarray(palette, np.uint8))
    for sampled in (True, False):
        assert shown_frame(canvases, len(frames), sampled) == expect_frame, f"{name}: the rule picks another frame"
    played = None
    if 1 < len(frames) <= FRAMES_LOOKED:
        played = animation_entry(name, canvases, [f.delay if f.gce else 0 for f in frames])
    case(name, gif(size, frames, palette, **kw), "picture", expect_frame, canvases[expect_frame], note,
         pillow, flags, played, 0 if len(frames) > 1 else None)


def ramp(n, a, b):
    t = np.linspace(0, 1, n)[:, None]
    return np.round(np.array(a) * (1 - t) + np.array(b) * t).astype(np.uint8)


def bands(w, h, n, dx=6, dy=4, offset=0):
    y, x = np.mgrid[0:h, 0:w]
    return ((x // dx + y // dy + offset) % n).astype(np.uint8)


def rings(w, h, n, transparent=None):
    """Concentric rings in n colours; outside the inscribed disc, the index `transparent` (when given)."""
    y, x = np.mgrid[0:h, 0:w]
    r = np.hypot(x - (w - 1) / 2, y - (h - 1) / 2)
    idx = (r // 3 % n).astype(np.uint8)
    if transparent is not None:
        idx[r > min(w, h) / 2 - 1] = transparent
    return idx


def disc(w, h):
    """Rings in colours 3.. of PAL, the corners outside the disc of its transparent index 2."""
    return np.where(rings(w, h, 29, transparent=255) == 255, 2, rings(w, h, 29) + 3)


def full(frame_index, w, h):  # the frame covers the canvas
    return lambda s: s["frames"][frame_index]["size"] == (w, h) and s["frames"][frame_index]["left"] == 0


def overhang(s, k):  # the frame runs past the canvas's right and bottom edges
    f = s["frames"][k]
    return f["left"] + f["size"][0] > s["canvas"][0] and f["top"] + f["size"][1] > s["canvas"][1]


# 1. A static photograph-like picture (gradients, soft blobs, a hard edge) quantised to 256 colours, as
# Pillow writes it, not interlaced.
y, x = np.mgrid[0:200, 0:300] / np.array([199.0, 299.0])[:, None, None]
rgb = np.stack([0.25 + 0.6 * x, 0.2 + 0.5 * y * (1 - x), 0.7 - 0.5 * y], axis=-1)
for cx, cy, r, colour in [(0.3, 0.4, 0.15, (1.0, 0.8, 0.3)), (0.75, 0.6, 0.2, (0.1, 0.5, 0.3))]:
    rgb += np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * r * r))[..., None] * (np.array(colour) - rgb) * 0.8
rgb[(np.abs(x - 0.55) < 0.05) & (y > 0.7)] = (0.1, 0.1, 0.15)
photo = Image.fromarray(np.round(np.clip(rgb, 0, 1) * 255).astype(np.uint8)).quantize(
    256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
photo.save(OUT / "static-opaque.gif", interlace=False)
case("static-opaque.gif", (OUT / "static-opaque.gif").read_bytes(), "picture", 0, np.array(photo.convert("RGBA")),
     "300x200, 256 colours (Pillow's encoder).",
     flags=lambda s: len(s["frames"]) == 1 and s["global"] == 8 and not s["frames"][0]["interlace"]
     and s["frames"][0]["transparent"] is None)
photo_indices, photo_palette = np.array(photo), np.array(photo.getpalette()[:768], np.uint8).reshape(-1, 3)

# 2. A shape (rings in 31 colours) on a transparent background; the transparent index is magenta.
idx = rings(160, 120, 31, transparent=31)
shape = Image.fromarray(idx, "P")
shape.putpalette(np.concatenate([ramp(31, (250, 200, 40), (40, 60, 200)), [[255, 0, 255]]]).ravel().tolist())
shape.save(OUT / "static-transparent.gif", transparency=31, interlace=False)
ref = np.array(shape.convert("RGBA"))
ref[idx == 31] = 0
case("static-transparent.gif", (OUT / "static-transparent.gif").read_bytes(), "picture", 0, ref,
     "Rings on a transparent canvas (Pillow's encoder).",
     flags=lambda s: len(s["frames"]) == 1 and s["frames"][0]["transparent"] is not None)

# 3. Interlaced: every row a different colour, so rows put in the wrong pass show; 157 rows (not a
# multiple of 8: the last group of each pass is short).
wheel = np.round(255 * (0.5 + 0.5 * np.cos(np.linspace(0, 2 * np.pi, 128, endpoint=False)[:, None]
                                           - np.array([0, 2.09, 4.19])))).astype(np.uint8)
striped = Image.fromarray(((np.arange(157)[:, None] * 5 + np.arange(240)[None, :] // 20) % 128).astype(np.uint8),
                          "P")
striped.putpalette(wheel.ravel().tolist())
striped.save(OUT / "interlaced.gif", interlace=True)
data = (OUT / "interlaced.gif").read_bytes()
case("interlaced.gif", data, "picture", 0, np.array(striped.convert("RGBA")),
     "240x157, interlaced (Pillow's encoder): rows come in 4 passes.",
     flags=lambda s: len(s["frames"]) == 1 and s["frames"][0]["interlace"]
     and data[s["frames"][0]["offset"] + 9] & 0x40 == 0x40)

# 4. Three full-canvas frames, each with its own local palette (reds, greens, blues) over a grey global
# one that no frame uses.
frames = [Frame(bands(120, 90, 16, offset=k), palette=ramp(16, a, b), disposal=1)
          for k, (a, b) in enumerate([((60, 0, 0), (255, 120, 120)), ((0, 60, 0), (150, 255, 150)),
                                      ((0, 0, 60), (140, 140, 255))])]
drawn("local-palettes.gif", (120, 90), frames, palette=ramp(16, (0, 0, 0), (255, 255, 255)), expect_frame=0,
      note="3 frames, each with a local palette; the first is shown.",
      flags=lambda s: len(s["frames"]) == 3 and all(f["local"] == 4 for f in s["frames"])
      and len({f["table"] for f in s["frames"]}) == 3 and full(0, 120, 90)(s))

# 5. A flat first frame (a background drawn first), then a patch of content over it.
PAL = np.concatenate([[[30, 60, 200], [250, 220, 40], [0, 0, 0]], ramp(29, (200, 30, 30), (30, 200, 90))])
frames = [Frame(np.zeros((90, 120)), disposal=1),
          Frame(bands(60, 40, 29) + 3, left=30, top=25, disposal=1),
          Frame(np.ones((20, 20)), left=5, top=5)]
drawn("flat-first-frame.gif", (120, 90), frames, PAL, expect_frame=1,
      note="Frame 0 one flat colour over the canvas: frame 1 (a patch over it) is shown.",
      flags=lambda s: full(0, 120, 90)(s) and s["frames"][1]["size"] == (60, 40))

# 6. A fully transparent first frame: a 1x1 frame of the transparent index on a 200x200 canvas; and a
# full-canvas frame all of the transparent index.
frames = [Frame(np.zeros((1, 1)), transparent=0, disposal=1), Frame(bands(200, 200, 29, 10, 10) + 3, disposal=1)]
drawn("transparent-pixel-first.gif", (200, 200), frames, PAL, expect_frame=1,
      note="Frame 0 is one transparent pixel: frame 1 (opaque, full canvas) is shown.",
      flags=lambda s: s["frames"][0]["size"] == (1, 1) and s["frames"][0]["transparent"] == 0)

frames = [Frame(np.full((100, 100), 2), transparent=2, disposal=1),
          Frame(disc(60, 60), left=20, top=20, transparent=2, disposal=1)]
drawn("transparent-first.gif", (100, 100), frames, PAL, expect_frame=1,
      note="Frame 0 covers the canvas with the transparent index: frame 1 (a disc) is shown.",
      flags=lambda s: full(0, 100, 100)(s) and s["frames"][0]["transparent"] == 2)

# 7. Disposal 2, restore to the background: browsers clear the frame's rectangle to transparent (not to
# the background colour). Frame 0 is flat (passed over) and cleared; frame 1 a disc with transparent
# corners: the canvas is transparent around and under them. Then the same for part of the canvas only.
frames = [Frame(np.zeros((90, 120)), disposal=2), Frame(disc(50, 40), left=20, top=15, transparent=2)]
drawn("dispose-background.gif", (120, 90), frames, PAL, expect_frame=1,
      note="Frame 0 (flat, opaque, no transparent index) is disposed of by clearing to transparent; "
           "frame 1 (a disc) on a transparent canvas is shown.",
      pillow="disposal 2 without a transparent index fills with the background colour",
      flags=lambda s: s["frames"][0]["disposal"] == 2 and s["frames"][0]["transparent"] is None)
frames = [Frame(np.zeros((90, 120)), disposal=1), Frame(np.zeros((30, 40)), left=10, top=10, disposal=2),
          Frame(bands(40, 30, 29) + 3, left=70, top=50)]
drawn("dispose-background-part.gif", (120, 90), frames, PAL, expect_frame=2,
      note="Frames 0 and 1 leave the canvas one flat colour; frame 1 (40x30 at 10,10) is disposed of by "
           "clearing its rectangle only: frame 2 shows that hole, transparent, and a patch at 70,50.",
      pillow="disposal 2 without a transparent index fills with the background colour",
      flags=lambda s: s["frames"][1]["disposal"] == 2 and s["frames"][1]["size"] == (40, 30))

# 8. Disposal 3, restore to previous: frame 0 flat blue (kept), frame 1 flat yellow over all (blank too,
# restored away), frame 2 rings with transparent corners: they show blue beneath (yellow if disposal 3
# were ignored, transparent if taken for 2).
frames = [Frame(np.zeros((90, 120)), disposal=1), Frame(np.ones((90, 120)), disposal=3),
          Frame(disc(50, 40), left=35, top=25, transparent=2)]
drawn("dispose-previous.gif", (120, 90), frames, PAL, expect_frame=2,
      note="Frame 1 (flat yellow) is restored away to frame 0's flat blue; frame 2 (a disc) over blue.",
      flags=lambda s: s["frames"][1]["disposal"] == 3 and full(1, 120, 90)(s))

# 9. A frame overhanging the canvas right and bottom (80x60 at 60,40 on 100x80): clipped. Not the first
# frame, which all browsers clip; then the first frame overhanging, which Chrome (Skia's and Wuffs' GIF
# readers) shows by growing the canvas to hold it, and Firefox clips (it resizes only for a first frame
# larger than the screen).
frames = [Frame(np.zeros((80, 100)), disposal=1), Frame(bands(80, 60, 29) + 3, left=60, top=40)]
drawn("overhang.gif", (100, 80), frames, PAL, expect_frame=1,
      note="Frame 1 (80x60 at 60,40) overhangs the 100x80 canvas: clipped, over frame 0's flat blue.",
      pillow="it grows the canvas to hold the frame", flags=lambda s: overhang(s, 1))
drawn("overhang-first-frame.gif", (100, 80), [Frame(bands(80, 60, 29) + 3, left=60, top=40, gce=False)], PAL,
      note="The only frame (80x60 at 60,40) overhangs the 100x80 canvas: clipped, transparent elsewhere "
           "(as Firefox; Chrome grows the canvas to 140x100 for a first frame).",
      pillow="it grows the canvas and fills what the frame leaves with colour 0",
      flags=lambda s: overhang(s, 0))

# 10. Bombs. A 65535x65535 canvas declared for a 1x1 frame: over the pixel limit before anything is
# decompressed.
case("huge-canvas.gif", gif((65535, 65535), [Frame(np.ones((1, 1)), gce=False)], PAL[:4]), "too_large",
     note="A 65535x65535 canvas (4.3 Gpixel) for one 1x1 frame.",
     flags=lambda s: s["canvas"] == (65535, 65535) and len(s["frames"]) == 1)
# 500 frames: the first (full canvas) is shown, the other 499 (an 8x8 square moving) never decoded.
frames = [Frame(rings(60, 60, 29) + 3, disposal=1)] + \
    [Frame(np.full((8, 8), 1 + k % 2), left=(k * 7) % 52, top=(k * 3) % 52, disposal=1, delay=2) for k in range(499)]
drawn("500-frames.gif", (60, 60), frames, PAL, expect_frame=0, note="500 frames; the first is shown.",
      flags=lambda s: len(s["frames"]) == 500)
# A first frame that paints one pixel on a transparent canvas: nearly blank, passed over for the second.
frames = [Frame(np.full((1, 1), 1), left=10, top=10, disposal=1), Frame(rings(64, 64, 30) + 3, disposal=1)]
drawn("one-pixel-first.gif", (64, 64), frames, PAL, expect_frame=1,
      note="the first frame paints one pixel of 64x64: nearly one colour, so the second is shown.")
# 10,000 frames, each one transparent pixel: all blank; thumbd looks at 32 and shows the last of those.
frames = [Frame(np.zeros((1, 1)), left=k % 16, top=k // 16 % 16, transparent=0, delay=1) for k in range(10_000)]
drawn("10000-blank-frames.gif", (16, 16), frames, PAL[:4], expect_frame=FRAMES_LOOKED - 1,
      note="10,000 frames of one transparent pixel on 16x16: all blank; the 32nd (the last looked at) is "
           "shown, a transparent canvas.",
      flags=lambda s: len(s["frames"]) == 10_000 and all(f["transparent"] == 0 for f in s["frames"]))

# 11. Damaged. The photograph of case 1 (this encoder's LZW) cut in the middle of its data, inside a
# sub-block: a browser shows the rows that arrived; giflib gets only whole sub-blocks.
whole = Frame(photo_indices, gce=False)
data = gif((300, 200), [whole], photo_palette)
start = parse(data)["frames"][0]["offset"] + 11  # the first sub-block's length byte
cut = start + len(whole.data) // 2
cut += 7 if (cut - start) % 256 == 0 else 0
carried = cut - start - 1 - (cut - start) // 256  # LZW bytes before the cut
in_whole = 255 * ((cut - start) // 256)  # of those, in whole sub-blocks
rows = lambda nbytes: max([p for bit, p in whole.marks if bit <= 8 * nbytes], default=0) // 300
check_lzw(whole)
case("cut-in-first-frame.gif", data[:cut], "picture|corrupt_image", 0,
     note=f"The only frame cut at byte {cut} of {len(data)}, inside a sub-block: the bytes carry its first "
          f"{rows(carried)} rows whole ({rows(in_whole)} in whole sub-blocks); a picture shows those over "
          "transparent.",
     flags=lambda s: len(s["frames"]) == 1 and s["error"] and s["error"].startswith("cut"))
case("no-frame.gif", gif((40, 30), [], PAL[:4]), "corrupt_image",
     note="Header, screen, global palette and trailer: no frame.",
     flags=lambda s: not s["frames"] and s["trailer"] and not s["error"])
rng = np.random.default_rng(7)
garbage = rng.integers(0, 256, 400, dtype=np.uint8).tobytes()
data = b"GIF89a" + struct.pack("<HH", 40, 30) + garbage
case("garbage.gif", data, "corrupt_image",
     note="GIF89a, a 40x30 canvas, then 400 random bytes.",
     flags=lambda s: not s["frames"] and s["error"])
data = b"GIF89a" + garbage
canvas = struct.unpack("<HH", garbage[:4])
case("garbage-canvas.gif", data, "corrupt_image|too_large" if canvas[0] * canvas[1] > MAX_PIXELS else "corrupt_image",
     note=f"GIF89a then 400 random bytes, which declare a {canvas[0]}x{canvas[1]} canvas.",
     flags=lambda s: not s["frames"] and s["error"])
# No trailer: the file ends after the frame's data, as many writers leave it. Shown as it is.
frames = [Frame(rings(64, 48, 29) + 3, gce=False)]
drawn("no-trailer.gif", (64, 48), frames, PAL, note="One frame, no trailer.", trailer=False,
      flags=lambda s: len(s["frames"]) == 1 and not s["trailer"] and s["error"] == "no trailer")

# 12. Motion as an animation tool writes it (Pillow, which crops each frame to what changed): a ball
# crossing a 240x135 scene, 24 frames of 40, 80 and 0 ms (shown as 100), played 3 times (NETSCAPE loop 2).
scene = []
for k in range(24):
    y, x = np.mgrid[0:135, 0:240]
    picture = np.stack([20 + x // 4, 30 + y // 3, np.full_like(x, 90)], axis=-1)
    picture[(x - 20 - 8 * k) ** 2 + (y - 70) ** 2 < 25 ** 2] = (250, 200, 40)
    picture[y >= 120] = (40, 160, 80)
    scene.append(Image.fromarray(picture.astype(np.uint8)).quantize(64, dither=Image.Dither.NONE))
delays = [4] * 10 + [8] * 10 + [0] * 4
scene[0].save(OUT / "motion.gif", save_all=True, append_images=scene[1:], duration=[d * 10 for d in delays],
              loop=2)
data = (OUT / "motion.gif").read_bytes()
with Image.open(OUT / "motion.gif") as im:
    played_canvases = []
    for k in range(im.n_frames):
        im.seek(k)
        played_canvases.append(np.array(im.convert("RGBA")))
assert len(played_canvases) == 24
for k, canvas in enumerate(played_canvases):  # Pillow's compositing of its own file shows what was drawn
    assert np.abs(canvas[..., :3].astype(int) - np.array(scene[k].convert("RGB"))).mean() < 1, f"motion frame {k}"
case("motion.gif", data, "picture", 0, played_canvases[0],
     "A ball crossing a 240x135 scene in 24 frames (Pillow's encoder: frames cropped to what changed); "
     "delays of 40, 80 and 0 ms; NETSCAPE loop 2.",
     flags=lambda s: len(s["frames"]) == 24 and any(f["size"] != (240, 135) for f in s["frames"][1:]),
     animation=animation_entry("motion.gif", played_canvases, delays), loop=2)

(OUT / "manifest.json").write_text(json.dumps(cases, indent=1))
for c in cases:
    print(f"{c['name']:28} {(OUT / c['name']).stat().st_size:7} B  {c['expect']:22} frame {c['frame']}")
print(f"wrote {len(cases)} GIFs to {OUT} in {time.monotonic() - started:.1f} s")
