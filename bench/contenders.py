"""One contender of bench/images, run as its own child process over a list of files.

    contenders.py vips|vips-baseline|pillow|pillow-baseline|decode|decode-rgb|vips-animated|pillow-animated
                  OUTDIR FILE...

vips    libvips through pyvips, one thread: Image.thumbnail (shrink-on-load, autorotate) for `large`, the
        smaller variants by thumbnail_image from an earlier result (thumbd's cascade), jpegsave with no
        metadata, 4:2:0 and optimize_coding=True (optimized Huffman tables, as thumbd writes them).
vips-baseline  the same with optimize_coding=False (bench/jpegsize).
pillow  Pillow: draft() to thumbd's DCT scale, exif_transpose, LANCZOS resize in thumbd's cascade and to
        thumbd's exact sizes, save with 4:2:0 and optimize=True.
pillow-baseline  the same with optimize=False (bench/images --default-tables).
decode  the decode floor: TurboJPEG (libturbojpeg.so.0, through ctypes) decoding each file at the DCT
        scale thumbd chooses to YCbCr planes (tjDecompressToYUVPlanes, as thumbd does), and nothing
        else. Writes nothing.
decode-rgb  the same decode to interleaved RGB (tjDecompress2): the floor of a pipeline that works in RGB.
vips-animated, pillow-animated  an animated GIF's every frame into one animated WebP in a 480x480 box
        (bench/images --stills).

The last line on stdout is JSON: {"mode", "files", "inner_s" (time after imports), "denominators"}.
Any failure exits non-zero.
"""

import json
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in bench/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plan  # noqa: E402


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def choose(step, made, fallback):
    return made[step["source"]] if step["source"] is not None else fallback


def vips_setup(optimize=True):
    """pyvips on one thread with no operation cache, and jpegsave's options: no metadata, 4:2:0, baseline,
    optimised Huffman tables unless `optimize` is False. Also used by bench/peer_worker.py."""
    os.environ.setdefault("VIPS_CONCURRENCY", "1")
    import pyvips

    pyvips.cache_set_max(0)
    pyvips.concurrency_set(1)
    save_opts = {"optimize_coding": optimize, "subsample_mode": "on", "interlace": False}
    if (pyvips.version(0), pyvips.version(1)) >= (8, 15):
        save_opts["keep"] = "none"
    else:
        save_opts["strip"] = True
    return pyvips, save_opts


def vips_render(head, decode, save, save_opts):
    """The default profile's variants of one original, in thumbd's cascade. `head` is the original opened
    lazily (only its header is read: the plan needs the upright size); `decode(w, h)` decodes it once,
    with shrink-on-load and autorotation, to fit that box; `save(name, image, quality, save_opts)` writes a
    variant. Returns {variant name: (width, height)}. Also used by bench/peer_worker.py."""
    w, h = head.width, head.height
    orientation = head.get("orientation") if head.get_typeof("orientation") else 1
    upright = (h, w) if orientation in (5, 6, 7, 8) else (w, h)
    made, sizes = {}, {}
    large_spec = None
    steps = plan.steps(upright, upright)
    kept = {s["source"] for s in steps}
    for step in steps:
        name, (bw, bh), fit, quality = plan.VARIANTS[step["variant"]]
        if name == "large":
            # Decode once, with shrink-on-load and autorotation; keep it in memory for the cascade.
            img = decode(bw, bh).copy_memory()
            large_spec = step["variant"]
        else:
            # libvips cannot go back to a full decode without decoding again: "the decode" is `large`.
            src = made[step["source"]] if step["source"] is not None else made[large_spec]
            if fit == "cover":
                img = src.thumbnail_image(bw, height=bh, size="down", crop="centre")
            else:
                img = src.thumbnail_image(bw, height=bh, size="down")
            if step["variant"] in kept:
                img = img.copy_memory()  # a later variant reads it: render it once
        save(name, img, quality, save_opts)
        made[step["variant"]] = img
        sizes[name] = (img.width, img.height)
    return sizes


def run_vips(outdir, files, optimize=True):
    pyvips, save_opts = vips_setup(optimize)
    t0 = time.perf_counter()
    for path in files:
        base = os.path.join(outdir, stem(path))
        vips_render(pyvips.Image.new_from_file(path, access="sequential"),
                    lambda bw, bh: pyvips.Image.thumbnail(path, bw, height=bh, size="down"),
                    lambda name, img, quality, opts: img.jpegsave(f"{base}_{name}.jpg", Q=quality, **opts),
                    save_opts)
    return time.perf_counter() - t0, {}


def run_pillow(outdir, files, optimize=True):
    from PIL import Image, ImageOps

    try:
        import pillow_jxl  # noqa: F401  (JPEG XL, for bench/images --stills)
    except ImportError:
        pass

    lanczos = Image.Resampling.LANCZOS
    t0 = time.perf_counter()
    denominators = {}
    for path in files:
        base = os.path.join(outdir, stem(path))
        im = Image.open(path)
        w, h = im.size
        orientation = im.getexif().get(0x0112, 1)
        upright = (h, w) if orientation in (5, 6, 7, 8) else (w, h)
        d = plan.decode_denominator(upright)
        denominators[d] = denominators.get(d, 0) + 1
        if d > 1:
            # draft() picks the largest scale whose result is at least the requested size in both axes:
            # asking for floor(size/d) makes it pick exactly 1/d, thumbd's (and libvips') choice.
            im.draft("RGB", (w // d, h // d))
        ImageOps.exif_transpose(im, in_place=True)  # loads the pixels; no copy when already upright
        if im.mode != "RGB":
            im = im.convert("RGB")
        im.info = {}  # nothing of the original's metadata may reach an output
        decoded = im.size
        made = {}
        for step in plan.steps(upright, decoded):
            src = choose(step, made, im)
            x, y, rw, rh = step["region"]
            out = src.resize(step["output"], lanczos, box=(x, y, x + rw, y + rh))
            out.save(f"{base}_{step['name']}.jpg", "JPEG", quality=step["quality"], optimize=optimize,
                     subsampling=2, progressive=False)
            made[step["variant"]] = out
    return time.perf_counter() - t0, denominators


def run_decode(outdir, files, planes=True):
    import ctypes

    tj = ctypes.CDLL("libturbojpeg.so.0")
    tj.tjInitDecompress.restype = ctypes.c_void_p
    tj.tjDestroy.argtypes = [ctypes.c_void_p]
    tj.tjGetErrorStr2.restype = ctypes.c_char_p
    tj.tjGetErrorStr2.argtypes = [ctypes.c_void_p]
    tj.tjDecompressHeader3.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong] + [
        ctypes.POINTER(ctypes.c_int)] * 4
    tj.tjDecompress2.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p,
                                 ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    tj.tjDecompressToYUVPlanes.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong,
                                           ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_void_p,
                                           ctypes.c_int, ctypes.c_int]
    tj.tjPlaneWidth.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    tj.tjPlaneHeight.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    TJPF_RGB, TJFLAG_LIMITSCANS = 0, 32768  # thumbd's flags (Sources/Imaging/Decode/TurboJPEG.swift)
    TJSAMP_GRAY = 3

    t0 = time.perf_counter()
    denominators = {}
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        handle = tj.tjInitDecompress()
        w, h, sub, cs = (ctypes.c_int() for _ in range(4))
        if tj.tjDecompressHeader3(handle, data, len(data), ctypes.byref(w), ctypes.byref(h),
                                  ctypes.byref(sub), ctypes.byref(cs)) != 0:
            raise SystemExit(f"{path}: header: {tj.tjGetErrorStr2(handle).decode()}")
        # The denominator does not depend on orientation: both scales are symmetric in w and h.
        d = plan.decode_denominator((w.value, h.value))
        denominators[d] = denominators.get(d, 0) + 1
        sw, sh = plan.scaled_size((w.value, h.value), d)
        if planes:
            count = 1 if sub.value == TJSAMP_GRAY else 3
            bufs = [ctypes.create_string_buffer(tj.tjPlaneWidth(i, sw, sub.value) * tj.tjPlaneHeight(i, sh, sub.value))
                    for i in range(count)]  # zeroed, as thumbd's calloc'd planes
            pointers = (ctypes.c_void_p * 3)(*[ctypes.addressof(b) for b in bufs] + [None] * (3 - count))
            status = tj.tjDecompressToYUVPlanes(handle, data, len(data), pointers, sw, None, sh, TJFLAG_LIMITSCANS)
        else:
            bufs = [ctypes.create_string_buffer(sw * sh * 3)]
            status = tj.tjDecompress2(handle, data, len(data), bufs[0], sw, 0, sh, TJPF_RGB, TJFLAG_LIMITSCANS)
        if status != 0:
            raise SystemExit(f"{path}: decode: {tj.tjGetErrorStr2(handle).decode()}")
        tj.tjDestroy(handle)
        del bufs
    return time.perf_counter() - t0, denominators


# An animated variant: the whole animation in a 480x480 box, lossy WebP at quality 82 (bench/images --stills).
ANIMATED_BOX = 480
ANIMATED_QUALITY = 82


def run_vips_animated(outdir, files):
    """libvips: every frame loaded (n=-1, a tall strip of pages), thumbnail to the box (which keeps the
    page height and the frames' delays), webpsave."""
    os.environ.setdefault("VIPS_CONCURRENCY", "1")
    import pyvips

    pyvips.cache_set_max(0)
    pyvips.concurrency_set(1)
    t0 = time.perf_counter()
    for path in files:
        img = pyvips.Image.thumbnail(path + "[n=-1]", ANIMATED_BOX, height=ANIMATED_BOX, size="down")
        img.webpsave(os.path.join(outdir, f"{stem(path)}_moving.webp"), Q=ANIMATED_QUALITY)
    return time.perf_counter() - t0, {}


def run_pillow_animated(outdir, files):
    """Pillow: each frame as it composites it, LANCZOS to the box, saved as one animated WebP with the
    frames' durations."""
    from PIL import Image

    t0 = time.perf_counter()
    for path in files:
        im = Image.open(path)
        frames, durations = [], []
        for k in range(getattr(im, "n_frames", 1)):
            im.seek(k)
            frame = im.convert("RGBA")
            frame.thumbnail((ANIMATED_BOX, ANIMATED_BOX), Image.Resampling.LANCZOS)
            frames.append(frame)
            durations.append(im.info.get("duration", 100))
        frames[0].save(os.path.join(outdir, f"{stem(path)}_moving.webp"), save_all=True,
                       append_images=frames[1:], duration=durations, loop=0, quality=ANIMATED_QUALITY)
    return time.perf_counter() - t0, {}


def main():
    modes = {"vips-animated": run_vips_animated, "pillow-animated": run_pillow_animated,"vips": run_vips, "vips-baseline": lambda outdir, files: run_vips(outdir, files, optimize=False),
             "pillow": run_pillow, "pillow-baseline": lambda outdir, files: run_pillow(outdir, files, optimize=False),
             "decode": run_decode,
             "decode-rgb": lambda outdir, files: run_decode(outdir, files, planes=False)}
    if len(sys.argv) < 4 or sys.argv[1] not in modes:
        raise SystemExit(__doc__)
    mode, outdir, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    inner, denominators = modes[mode](outdir, files)
    print(json.dumps({"mode": mode, "files": len(files), "inner_s": inner,
                      "denominators": {str(k): v for k, v in sorted(denominators.items())}}))


if __name__ == "__main__":
    main()
