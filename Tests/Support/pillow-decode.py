#!/usr/bin/env python3
"""Decodes an image with Pillow (and pillow-jxl-plugin for JPEG XL, an independent decoder: jxl-oxide)
to an 8-bit RGBA PNG, the reference thumbd's own decode is compared with.

    pillow-decode.py IN OUT.png
"""

import sys

import pillow_jxl  # noqa: F401  (registers the JPEG XL plugin)
from PIL import Image, ImageOps

image = ImageOps.exif_transpose(Image.open(sys.argv[1]))
image.convert("RGBA").save(sys.argv[2])
