// See CGIFDecoder.h. giflib reads the blocks and decompresses each frame's rows; the compositing is
// here, as the GIF89a specification and browsers do it.
#include "CGIFDecoder.h"

#include <gif_lib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct thumbd_gif {
  GifFileType *file;
  const uint8_t *bytes;
  size_t size;
  size_t position;
  int width, height;
  // What the frame before asked to be done once it had been shown, and where.
  int pending_disposal;
  int pending_left, pending_top, pending_width, pending_height;
  uint8_t *saved;  // the canvas before that frame (disposal 3, "restore to previous")
  GifByteType *row;
  int ended;
};

static int read_bytes(GifFileType *file, GifByteType *buffer, int length) {
  struct thumbd_gif *g = file->UserData;
  size_t left = g->size - g->position;
  size_t n = left < (size_t)length ? left : (size_t)length;
  memcpy(buffer, g->bytes + g->position, n);
  g->position += n;
  return (int)n;
}

int thumbd_gif_open(const uint8_t *bytes, size_t size, thumbd_gif **gif, int *width, int *height, char *message,
                    size_t message_size) {
  *gif = NULL;
  struct thumbd_gif *g = calloc(1, sizeof *g);
  if (!g) return -1;
  g->bytes = bytes;
  g->size = size;
  int error = 0;
  g->file = DGifOpen(g, read_bytes, &error);
  if (!g->file) {
    snprintf(message, message_size, "not a GIF giflib reads: %s", GifErrorString(error) ? GifErrorString(error) : "?");
    free(g);
    return -1;
  }
  g->width = g->file->SWidth;
  g->height = g->file->SHeight;
  if (g->width <= 0 || g->height <= 0) {
    snprintf(message, message_size, "the GIF's screen is %dx%d", g->width, g->height);
    thumbd_gif_close(g);
    return -1;
  }
  g->row = malloc((size_t)g->width);
  if (!g->row) {
    thumbd_gif_close(g);
    snprintf(message, message_size, "out of memory");
    return -1;
  }
  *width = g->width;
  *height = g->height;
  *gif = g;
  return 0;
}

// The frame's graphic control: disposal, transparent index (-1: none), delay.
static void read_control(GifByteType *data, int *disposal, int *transparent, int *delay) {
  if (!data || data[0] < 4) return;
  *disposal = (data[1] >> 2) & 7;
  *transparent = (data[1] & 1) ? data[4] : -1;
  *delay = data[2] | (data[3] << 8);
}

static void clear(uint8_t *canvas, int width, int left, int top, int w, int h) {
  for (int y = top; y < top + h; y++) memset(canvas + ((size_t)y * width + left) * 4, 0, (size_t)w * 4);
}

int thumbd_gif_next_frame(thumbd_gif *g, uint8_t *canvas, int *delay, char *message, size_t message_size) {
  if (g->ended) return 0;
  size_t canvas_bytes = (size_t)g->width * g->height * 4;
  // The frame before is gone now: what it asked for.
  if (g->pending_disposal == 2) {
    // "Restore to background": browsers clear to transparent, not to the background colour.
    clear(canvas, g->width, g->pending_left, g->pending_top, g->pending_width, g->pending_height);
  } else if (g->pending_disposal == 3 && g->saved) {
    memcpy(canvas, g->saved, canvas_bytes);
  }
  g->pending_disposal = 0;
  int disposal = 0, transparent = -1;
  *delay = 0;
  GifRecordType type;
  do {
    if (DGifGetRecordType(g->file, &type) == GIF_ERROR) {
      snprintf(message, message_size, "damaged GIF: %s", GifErrorString(g->file->Error));
      g->ended = 1;
      return -1;
    }
    if (type == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType *data = NULL;
      if (DGifGetExtension(g->file, &code, &data) == GIF_ERROR) goto damaged;
      if (code == GRAPHICS_EXT_FUNC_CODE) read_control(data, &disposal, &transparent, delay);
      while (data) {
        if (DGifGetExtensionNext(g->file, &data) == GIF_ERROR) goto damaged;
      }
    } else if (type == IMAGE_DESC_RECORD_TYPE) {
      if (DGifGetImageDesc(g->file) == GIF_ERROR) goto damaged;
      GifImageDesc *d = &g->file->Image;
      ColorMapObject *map = d->ColorMap ? d->ColorMap : g->file->SColorMap;
      if (!map || d->Width <= 0 || d->Height <= 0 || d->Width > 65535 || d->Height > 65535) {
        snprintf(message, message_size, "a GIF frame without a palette or a size");
        g->ended = 1;
        return -1;
      }
      // The part of the frame on the canvas (frames may overhang it; browsers clip them).
      int left = d->Left < g->width ? d->Left : g->width;
      int top = d->Top < g->height ? d->Top : g->height;
      int w = d->Left + d->Width <= g->width ? d->Width : g->width - left;
      int h = d->Top + d->Height <= g->height ? d->Height : g->height - top;
      if (disposal == 3) {
        if (!g->saved) g->saved = malloc(canvas_bytes);
        if (g->saved) memcpy(g->saved, canvas, canvas_bytes);
      }
      GifByteType *line = d->Width <= g->width ? g->row : malloc((size_t)d->Width);
      if (!line) goto damaged;
      // Interlaced rows come in four passes: every 8th from 0, every 8th from 4, every 4th from 2,
      // every 2nd from 1.
      static const int starts[] = {0, 4, 2, 1}, steps[] = {8, 8, 4, 2};
      int passes = d->Interlace ? 4 : 1;
      int failed = 0;
      for (int pass = 0; pass < passes && !failed; pass++) {
        int start = d->Interlace ? starts[pass] : 0, step = d->Interlace ? steps[pass] : 1;
        for (int y = start; y < d->Height; y += step) {
          if (DGifGetLine(g->file, line, d->Width) == GIF_ERROR) {
            failed = 1;
            break;
          }
          int cy = d->Top + y;
          if (cy >= g->height || y >= h) continue;
          uint8_t *out = canvas + ((size_t)cy * g->width + left) * 4;
          for (int x = 0; x < w; x++) {
            int index = line[x];
            if (index == transparent) continue;
            if (index >= map->ColorCount) index = 0;  // out of the palette: as browsers, its first colour
            GifColorType c = map->Colors[index];
            out[x * 4] = c.Red;
            out[x * 4 + 1] = c.Green;
            out[x * 4 + 2] = c.Blue;
            out[x * 4 + 3] = 255;
          }
        }
      }
      if (line != g->row) free(line);
      g->pending_disposal = disposal;
      g->pending_left = left;
      g->pending_top = top;
      g->pending_width = w;
      g->pending_height = h;
      // A frame cut short shows what arrived, as a browser does; the file ends there.
      if (failed) g->ended = 1;
      return 1;
    }
  } while (type != TERMINATE_RECORD_TYPE);
  g->ended = 1;
  return 0;
damaged:
  snprintf(message, message_size, "damaged GIF: %s", GifErrorString(g->file->Error));
  g->ended = 1;
  return -1;
}

void thumbd_gif_close(thumbd_gif *g) {
  if (!g) return;
  int error = 0;
  if (g->file) DGifCloseFile(g->file, &error);
  free(g->saved);
  free(g->row);
  free(g);
}
