"""The `default` profile and thumbd's render plan, in Python, for the benchmark's other contenders.

A mirror of Sources/ThumbCore/Geometry.swift (VariantLayout.make) and RenderPlan.swift (RenderPlanner):
the same output sizes, the same DCT scale choice and the same cascade (each variant from the smallest
earlier whole-frame result that still has 2x the detail it needs), so that Pillow and libvips do the
same work as thumbd. Standard library only.
"""

import math

# name, box (w, h), fit, quality: docs/CONTRACT's `default` profile.
VARIANTS = [
    ("large", (1600, 1600), "inside", 82),
    ("medium", (800, 800), "inside", 82),
    ("small", (320, 320), "inside", 80),
    ("square", (256, 256), "cover", 80),
]

REDUCTION_MARGIN = 2.0
CASCADE_TOLERANCE = 0.005  # RenderPlanner.cascadeTolerance
DCT_DENOMINATORS = (8, 4, 2, 1)


def _round(x):
    # Swift's .rounded(): half away from zero (Python's round() is half to even).
    return int(math.floor(x + 0.5))


def _clamp(v, lo, hi):
    return min(max(v, lo), hi)


def layout(source, box, fit):
    """(region (x, y, w, h) in source pixels, output (w, h), scale) of one variant."""
    w, h = float(source[0]), float(source[1])
    if fit == "inside":
        s = min(1.0, box[0] / w, box[1] / h)
        out = (_clamp(_round(w * s), 1, source[0]), _clamp(_round(h * s), 1, source[1]))
        region = (0.0, 0.0, w, h)
    else:  # cover: centre crop
        fit_factor = min(1.0, w / box[0], h / box[1])
        out = (_clamp(_round(box[0] * fit_factor), 1, source[0]),
               _clamp(_round(box[1] * fit_factor), 1, source[1]))
        s = max(out[0] / w, out[1] / h)
        cw, ch = min(w, out[0] / s), min(h, out[1] / s)
        region = ((w - cw) / 2, (h - ch) / 2, cw, ch)
    scale = max(out[0] / region[2], out[1] / region[3])
    return region, out, scale


def decode_denominator(upright):
    """Largest d of 8, 4, 2, 1 with d * 2 * (largest variant scale) <= 1: decode at 1/d."""
    needed = max(layout(upright, box, fit)[2] for _, box, fit, _ in VARIANTS)
    for d in DCT_DENOMINATORS:
        if d * REDUCTION_MARGIN * needed <= 1.0:
            return d
    return 1


def scaled_size(size, d):
    """libjpeg's size at 1/d (rounded up, TJSCALED)."""
    return ((size[0] + d - 1) // d, (size[1] + d - 1) // d)


def steps(original, decoded):
    """thumbd's steps, largest first: dicts with variant index, source (None = the decode, else a variant
    index), region in the source's pixels, output size, name, fit, quality."""
    layouts = [layout(original, box, fit) for _, box, fit, _ in VARIANTS]
    order = sorted(range(len(VARIANTS)), key=lambda i: (layouts[i][2], -i), reverse=True)
    dec = (decoded[0] / original[0], decoded[1] / original[1])
    candidates = []  # (index, sx, sy)
    result = []
    for i in order:
        region, out, need = layouts[i]
        chosen = (None, dec[0], dec[1])
        for c in candidates:
            if min(c[1], c[2]) >= need * REDUCTION_MARGIN * (1 - CASCADE_TOLERANCE) and min(c[1], c[2]) < min(chosen[1], chosen[2]):
                chosen = c
        x, y, w, h = region
        name, _, fit, quality = VARIANTS[i]
        result.append({
            "variant": i, "name": name, "fit": fit, "quality": quality, "source": chosen[0],
            "region": (x * chosen[1], y * chosen[2], w * chosen[1], h * chosen[2]), "output": out,
        })
        if fit == "inside":
            candidates.append((i, out[0] / original[0], out[1] / original[1]))
    return result


def expected_sizes(upright):
    """{variant name: (w, h)} that thumbd writes for an upright source size."""
    return {name: layout(upright, box, fit)[1] for name, box, fit, _ in VARIANTS}
