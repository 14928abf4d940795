#ifndef THUMBD_CHEVCDECODER_H
#define THUMBD_CHEVCDECODER_H

#include <stddef.h>
#include <stdint.h>

/// Registers libavcodec's HEVC decoder with libheif as a decoder plugin that wins over libde265.
/// Call once, after heif_init. Returns 0 when registered, -1 when libavcodec has no HEVC decoder.
int thumbd_hevc_register(void);

/// Settings for the HEIF decodes this thread runs until thumbd_hevc_end: no coded picture may have
/// more than `max_pixels` pixels, and the in-loop filters (deblocking, SAO) are skipped when
/// `skip_loop_filters` is not 0. Between begin and end every tile of a grid is decoded with one
/// decoder context, freed by thumbd_hevc_end.
void thumbd_hevc_begin(int64_t max_pixels, int skip_loop_filters);
void thumbd_hevc_end(void);

/// How many pictures the plugin has decoded on this thread (tests check that it is the one in use).
uint64_t thumbd_hevc_pictures_decoded(void);

/// A decoded picture's planes, owned by the thread's session.
typedef struct {
  int width;
  int height;
  /// 0 grey, 1 4:2:0, 2 4:2:2, 3 4:4:4.
  int chroma;
  const uint8_t *planes[3];
  int strides[3];
} thumbd_hevc_picture;

/// Decodes one coded picture with the thread's session (between thumbd_hevc_begin and _end): the
/// parameter sets, each behind a four-byte length, then `data`, NAL units behind `length_size`-byte
/// lengths. Only 8-bit pictures. The planes stay valid until the next decode or thumbd_hevc_end.
/// Returns 0, or -1 with the reason in thumbd_hevc_last_error().
int thumbd_hevc_decode(const uint8_t *parameter_sets, size_t parameter_sets_size, const uint8_t *data, size_t size,
                       int length_size, thumbd_hevc_picture *out);
const char *thumbd_hevc_last_error(void);

#endif
