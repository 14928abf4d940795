"""The phone corpus of bench/images --phone: photos as phones make them.

    <Debian libvips python> bench/phonecorpus.py OUT WALLPAPER...

Run under bench/setup.sh's Debian-libvips virtualenv (pyvips on libvips42, whose heifsave has libheif's
x265 encoder). For each wallpaper: the picture cut to 4032x3024 (12 MP, 4:3, centre crop) and written
twice, as a phone would:
- `phone-NN.jpg`: baseline JPEG, 4:2:0, quality 92, optimised Huffman tables, no metadata;
- `phone-NN.heic`: a 4032x3024 `grid` of 512x512 HEVC tiles (8 columns, 6 rows; the last row's tiles
  run past the picture, as an iPhone's do), each tile coded by libheif's x265 at quality 50, 4:2:0, and
  assembled by bench/heifgrid.py.
Files already in OUT are kept (the corpus is a cache, never part of the repository).
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heifgrid  # noqa: E402
import pyvips  # noqa: E402

WIDTH, HEIGHT, TILE = 4032, 3024, 512
JPEG_QUALITY, HEIF_QUALITY = 92, 50


def picture(path):
    return pyvips.Image.thumbnail(path, WIDTH, height=HEIGHT, crop="centre", size="force").colourspace("srgb")


def heic(image):
    columns, rows = -(-WIDTH // TILE), -(-HEIGHT // TILE)
    padded = image.embed(0, 0, columns * TILE, rows * TILE, extend="copy")
    tiles = []
    for r in range(rows):
        for c in range(columns):
            tile = padded.crop(c * TILE, r * TILE, TILE, TILE)
            tiles.append(tile.heifsave_buffer(Q=HEIF_QUALITY, compression="hevc", subsample_mode="on",
                                              strip=True))
    return heifgrid.grid_file(WIDTH, HEIGHT, tiles, TILE, columns)


def main():
    out, wallpapers = sys.argv[1], sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    for n, path in enumerate(wallpapers, 1):
        jpeg, heif = os.path.join(out, f"phone-{n:02d}.jpg"), os.path.join(out, f"phone-{n:02d}.heic")
        if os.path.exists(jpeg) and os.path.exists(heif):
            continue
        image = picture(path)
        image.jpegsave(jpeg, Q=JPEG_QUALITY, subsample_mode="on", optimize_coding=True, strip=True)
        with open(heif + ".part", "wb") as f:
            f.write(heic(image))
        os.replace(heif + ".part", heif)
        print(f"phonecorpus: {os.path.basename(path)} -> {os.path.basename(jpeg)}, {os.path.basename(heif)}",
              file=sys.stderr)


if __name__ == "__main__":
    main()
