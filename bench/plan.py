"""thumbd's render plan for the benchmark's other contenders, asked of thumbd itself.

`thumbd bench plan` answers, for an original's upright size (and the size it was decoded at), the
`default` profile's variants, where each sits in the original, the JPEG decode's DCT denominator, and
the steps of the cascade (each variant from the smallest earlier whole-frame result that still has 2x
the detail it needs): the same output sizes and the same work as thumbd, with no copy of the planner
here. One `thumbd bench plan` process answers every question of a run (a line each, a fraction of a
millisecond), and each answer is kept.

The thumbd it asks: $THUMBD_BIN, else the repository's release build (.build/release/thumbd), else its
debug build. Standard library only.
"""

import atexit
import json
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _binary():
    for candidate in (os.environ.get("THUMBD_BIN"), os.path.join(REPO, ".build/release/thumbd"),
                      os.path.join(REPO, ".build/debug/thumbd")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise SystemExit("bench/plan.py: no thumbd to ask for the render plan: build it "
                     "(swift build -c release --product thumbd) or set THUMBD_BIN")


_process = None
_answers = {}


def _plan(original, decoded=None):
    """thumbd's answer for an upright `original` size decoded at `decoded` (default: the original)."""
    global _process
    key = (tuple(original), tuple(decoded or original))
    if key not in _answers:
        if _process is None:
            _process = subprocess.Popen([_binary(), "bench", "plan"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, bufsize=1)
            atexit.register(_process.kill)
        _process.stdin.write(" ".join(str(n) for n in key[0] + key[1]) + "\n")
        _process.stdin.flush()
        line = _process.stdout.readline()
        if not line:
            raise SystemExit(f"bench/plan.py: thumbd bench plan gave no answer for {key}")
        _answers[key] = json.loads(line)
    return _answers[key]


# name, box (w, h), fit, quality: the `default` profile, as thumbd has it.
VARIANTS = [(v["name"], tuple(v["box"]), v["fit"], v["quality"]) for v in _plan((1000, 1000))["variants"]]


def layout(source, box, fit):
    """(region (x, y, w, h) in source pixels, output (w, h), scale) of the default profile's variant of
    that box and fit."""
    for v in _plan(source)["variants"]:
        if tuple(v["box"]) == tuple(box) and v["fit"] == fit:
            return tuple(v["region"]), tuple(v["output"]), v["scale"]
    raise ValueError(f"no variant of the default profile is {box} {fit}")


def decode_denominator(upright):
    """The DCT denominator d thumbd decodes a JPEG of this size at (1/d)."""
    return _plan(upright)["decodeDenominator"]


def scaled_size(size, d):
    """libjpeg's size at 1/d (rounded up, TJSCALED)."""
    return ((size[0] + d - 1) // d, (size[1] + d - 1) // d)


def steps(original, decoded):
    """thumbd's steps, largest first: dicts with variant index, source (None = the decode, else a variant
    index), region in the source's pixels, output size, name, fit, quality."""
    result = []
    for step in _plan(original, decoded)["steps"]:
        name, _, fit, quality = VARIANTS[step["variant"]]
        result.append({
            "variant": step["variant"], "name": name, "fit": fit, "quality": quality,
            "source": step.get("source"), "region": tuple(step["region"]), "output": tuple(step["output"]),
        })
    return result


def expected_sizes(upright):
    """{variant name: (w, h)} that thumbd writes for an upright source size."""
    return {v["name"]: tuple(v["output"]) for v in _plan(upright)["variants"]}
