#!/usr/bin/env python3
"""Puts images side by side, labelled, on one PNG, to check tone-mapped posters by eye (for instance
hdr-clips.py's sdr.png against ffmpeg-hlg.png and ffmpeg-pq.png).

    hdr-sheet.py OUT.png LABEL=IMAGE ...

Each image is scaled to 480 pixels wide and shown with its label under it, three to a row. Needs Pillow.
"""

import sys

from PIL import Image, ImageDraw

WIDTH, PER_ROW, GAP, TEXT = 480, 3, 8, 18


def main():
    out, items = sys.argv[1], [arg.split("=", 1) for arg in sys.argv[2:]]
    if not items or any(len(i) != 2 for i in items):
        sys.exit(__doc__)
    tiles = []
    for label, path in items:
        im = Image.open(path).convert("RGB")
        tiles.append((label, im.resize((WIDTH, max(1, round(im.height * WIDTH / im.width))), Image.LANCZOS)))
    rows = [tiles[i:i + PER_ROW] for i in range(0, len(tiles), PER_ROW)]
    heights = [max(t.height for _, t in row) + TEXT for row in rows]
    columns = min(len(tiles), PER_ROW)
    sheet = Image.new("RGB", (columns * (WIDTH + GAP) + GAP, sum(heights) + GAP * (len(rows) + 1)), "white")
    draw = ImageDraw.Draw(sheet)
    y = GAP
    for row, height in zip(rows, heights):
        for n, (label, tile) in enumerate(row):
            x = GAP + n * (WIDTH + GAP)
            sheet.paste(tile, (x, y))
            draw.text((x, y + tile.height + 3), label, fill="black")
        y += height + GAP
    sheet.save(out)


if __name__ == "__main__":
    main()
