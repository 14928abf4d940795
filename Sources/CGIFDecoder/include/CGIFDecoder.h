// A GIF read from memory with giflib, frame by frame, each composited onto the canvas as a browser shows
// the animation (disposal, transparency, local and global palettes, interlacing). Only as many frames as
// asked for are decompressed.
#ifndef THUMBD_GIF_DECODER_H
#define THUMBD_GIF_DECODER_H

#include <stddef.h>
#include <stdint.h>

typedef struct thumbd_gif thumbd_gif;

// Opens the bytes (which must outlive the GIF) and reads the screen descriptor. 0, or -1 with a message.
int thumbd_gif_open(const uint8_t *bytes, size_t size, thumbd_gif **gif, int *width, int *height, char *message,
                    size_t message_size);

// Decodes the next frame and composites it onto `canvas` (width x height RGBA, straight alpha, which the
// caller keeps between calls: all zero, transparent, before the first), after disposing of the frame
// before as it asked. 1: a frame (its delay in hundredths of a second in `delay`), 0: no frame left,
// -1: damaged (a message).
int thumbd_gif_next_frame(thumbd_gif *gif, uint8_t *canvas, int *delay, char *message, size_t message_size);

void thumbd_gif_close(thumbd_gif *gif);

#endif
