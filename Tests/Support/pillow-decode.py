#!/usr/bin/env python3
"""Decodes an image with Pillow (and pillow-jxl-plugin for JPEG XL, an independent decoder: jxl-oxide)
to an 8-bit RGBA PNG, the reference thumbd's own decode is compared with.

    pillow-decode.py IN OUT.png [FRAME]

FRAME (0-based, default 0): the frame of an animated GIF to write, as Pillow composites it.
"""

import sys

import pillow_jxl  # noqa: F401  (registers the JPEG XL plugin)
from PIL import Image, ImageOps

image = Image.open(sys.argv[1])
if len(sys.argv) > 3 and int(sys.argv[3]):
    image.seek(int(sys.argv[3]))
ImageOps.exif_transpose(image.convert("RGBA")).save(sys.argv[2])
