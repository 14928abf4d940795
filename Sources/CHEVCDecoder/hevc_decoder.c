// A libheif decoder plugin (libheif/heif_plugin.h, API version 3) around libavcodec's HEVC decoder,
// which decodes HEIC's intra pictures faster than libde265, the decoder Debian's libheif is built with.
//
// libheif hands the plugin the hvcC header NAL units, then the picture's own, each behind a four-byte
// big-endian length; libavcodec reads Annex B, so each becomes a start code and the NAL unit. A grid
// image is decoded one tile at a time on the calling thread (thumbd asks libheif for no threads of its
// own): between thumbd_hevc_begin and thumbd_hevc_end the tiles share one AVCodecContext, flushed
// between tiles, instead of setting one up per 512x512 tile.

#include "CHEVCDecoder.h"

#include <libavcodec/avcodec.h>
#include <libavutil/log.h>
#include <libheif/heif.h>
#include <libheif/heif_plugin.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const AVCodec *hevc_codec;

// What libavcodec logged last at error level on this thread: the message of a failed decode.
static _Thread_local char last_log[200];

struct decoder {
  uint8_t *stream;  // Annex B: start code, NAL unit, start code, ...
  size_t size;
  size_t capacity;
};

// The calling thread's decode settings and, between begin and end, its shared context.
static _Thread_local struct {
  int active;
  int64_t max_pixels;
  int skip_loop_filters;
  AVCodecContext *context;
  AVFrame *picture;  // thumbd_hevc_decode's last picture
  struct decoder stream;  // thumbd_hevc_decode's Annex B buffer, reused
} session;

static _Thread_local uint64_t pictures_decoded;

static struct heif_error failure(const char *message) {
  struct heif_error error = {heif_error_Decoder_plugin_error, heif_suberror_Unspecified, message};
  return error;
}

// The thread's own copy of `message` joined with what libavcodec logged, valid until the next failure.
static _Thread_local char failure_text[300];
static struct heif_error decode_failure(const char *what) {
  if (last_log[0] != 0) {
    snprintf(failure_text, sizeof failure_text, "%s (libavcodec: %s)", what, last_log);
  } else {
    snprintf(failure_text, sizeof failure_text, "%s", what);
  }
  struct heif_error error = {heif_error_Decoder_plugin_error, heif_suberror_Unspecified, failure_text};
  return error;
}

static const struct heif_error success = {heif_error_Ok, heif_suberror_Unspecified, "Success"};

static void log_callback(void *avcl, int level, const char *format, va_list args) {
  (void)avcl;
  if (level > AV_LOG_ERROR) return;
  vsnprintf(last_log, sizeof last_log, format, args);
  size_t n = strlen(last_log);
  while (n > 0 && (last_log[n - 1] == '\n' || last_log[n - 1] == ' ')) last_log[--n] = 0;
}

static const char *plugin_name(void) { return "libavcodec HEVC (thumbd)"; }

static int supports(enum heif_compression_format format) {
  // Above libde265's 100.
  return format == heif_compression_HEVC ? 200 : 0;
}

static AVCodecContext *open_context(void) {
  AVCodecContext *context = avcodec_alloc_context3(hevc_codec);
  if (context == NULL) return NULL;
  // One decode per worker slot: threads of libavcodec's own would oversubscribe the cores.
  context->thread_count = 1;
  if (session.active) {
    if (session.max_pixels > 0) context->max_pixels = session.max_pixels;
    if (session.skip_loop_filters) context->skip_loop_filter = AVDISCARD_ALL;
  }
  if (avcodec_open2(context, hevc_codec, NULL) < 0) {
    avcodec_free_context(&context);
    return NULL;
  }
  return context;
}

static struct heif_error new_decoder(void **out) {
  struct decoder *decoder = calloc(1, sizeof *decoder);
  if (decoder == NULL) return failure("out of memory");
  *out = decoder;
  return success;
}

static void free_decoder(void *opaque) {
  struct decoder *decoder = opaque;
  if (decoder == NULL) return;
  free(decoder->stream);
  free(decoder);
}

static int reserve(struct decoder *decoder, size_t more) {
  // AV_INPUT_BUFFER_PADDING_SIZE zero bytes must follow a packet's data.
  size_t needed = decoder->size + more + AV_INPUT_BUFFER_PADDING_SIZE;
  if (needed <= decoder->capacity) return 1;
  size_t capacity = decoder->capacity ? decoder->capacity : 4096;
  while (capacity < needed) capacity *= 2;
  uint8_t *stream = realloc(decoder->stream, capacity);
  if (stream == NULL) return 0;
  decoder->stream = stream;
  decoder->capacity = capacity;
  return 1;
}

// Appends NAL units given behind `length_size`-byte big-endian lengths as Annex B.
static struct heif_error append_units(struct decoder *decoder, const uint8_t *bytes, size_t size, int length_size) {
  size_t at = 0;
  while (at < size) {
    if (size - at < (size_t)length_size) return failure("HEVC data ends inside a NAL unit length");
    size_t length = 0;
    for (int k = 0; k < length_size; k++) length = length << 8 | bytes[at + k];
    at += length_size;
    if (length > size - at) return failure("HEVC NAL unit runs past the end of its data");
    if (!reserve(decoder, length + 4)) return failure("out of memory");
    static const uint8_t start_code[4] = {0, 0, 0, 1};
    memcpy(decoder->stream + decoder->size, start_code, 4);
    memcpy(decoder->stream + decoder->size + 4, bytes + at, length);
    decoder->size += length + 4;
    at += length;
  }
  return success;
}

static struct heif_error push_data(void *opaque, const void *data, size_t size) {
  return append_units(opaque, data, size, 4);
}

// How a frame of `format` is laid out: 0 when thumbd does not read that format.
static int layout(int format, enum heif_chroma *chroma, int *bits, int *planes) {
  *planes = 3;
  switch (format) {
  case AV_PIX_FMT_YUV420P: case AV_PIX_FMT_YUVJ420P: *chroma = heif_chroma_420; *bits = 8; break;
  case AV_PIX_FMT_YUV422P: case AV_PIX_FMT_YUVJ422P: *chroma = heif_chroma_422; *bits = 8; break;
  case AV_PIX_FMT_YUV444P: case AV_PIX_FMT_YUVJ444P: *chroma = heif_chroma_444; *bits = 8; break;
  case AV_PIX_FMT_GRAY8: *chroma = heif_chroma_monochrome; *bits = 8; *planes = 1; break;
  case AV_PIX_FMT_YUV420P10: *chroma = heif_chroma_420; *bits = 10; break;
  case AV_PIX_FMT_YUV422P10: *chroma = heif_chroma_422; *bits = 10; break;
  case AV_PIX_FMT_YUV444P10: *chroma = heif_chroma_444; *bits = 10; break;
  case AV_PIX_FMT_GRAY10: *chroma = heif_chroma_monochrome; *bits = 10; *planes = 1; break;
  case AV_PIX_FMT_YUV420P12: *chroma = heif_chroma_420; *bits = 12; break;
  case AV_PIX_FMT_YUV422P12: *chroma = heif_chroma_422; *bits = 12; break;
  case AV_PIX_FMT_YUV444P12: *chroma = heif_chroma_444; *bits = 12; break;
  case AV_PIX_FMT_GRAY12: *chroma = heif_chroma_monochrome; *bits = 12; *planes = 1; break;
  default: return 0;
  }
  return 1;
}

// The frame's planes copied into a new heif_image: 4:2:0, 4:2:2, 4:4:4 or monochrome, 8 to 12 bits.
static struct heif_error to_heif_image(const AVFrame *frame, struct heif_image **out) {
  enum heif_chroma chroma;
  int bits, planes;
  if (!layout(frame->format, &chroma, &bits, &planes)) {
    return failure("HEVC picture in a pixel format thumbd does not read");
  }
  int width = frame->width, height = frame->height;
  struct heif_image *image = NULL;
  struct heif_error error = heif_image_create(
    width, height, planes == 1 ? heif_colorspace_monochrome : heif_colorspace_YCbCr, chroma, &image);
  if (error.code != heif_error_Ok) return error;
  static const enum heif_channel channels[3] = {heif_channel_Y, heif_channel_Cb, heif_channel_Cr};
  int bytes_per_sample = bits > 8 ? 2 : 1;
  for (int p = 0; p < planes; p++) {
    int w = width, h = height;
    if (p > 0 && chroma != heif_chroma_444) w = (width + 1) / 2;
    if (p > 0 && chroma == heif_chroma_420) h = (height + 1) / 2;
    error = heif_image_add_plane(image, channels[p], w, h, bits);
    if (error.code != heif_error_Ok) {
      heif_image_release(image);
      return error;
    }
    int stride = 0;
    uint8_t *dst = heif_image_get_plane(image, channels[p], &stride);
    if (dst == NULL) {
      heif_image_release(image);
      return failure("libheif gave no plane to write into");
    }
    const uint8_t *src = frame->data[p];
    for (int y = 0; y < h; y++) {
      memcpy(dst + (size_t)y * stride, src + (size_t)y * frame->linesize[p], (size_t)w * bytes_per_sample);
    }
  }
  // The stream's colour description (its VUI, or H.265's inferences: limited range, the rest
  // unspecified), as libde265's plugin gives it: libheif uses it where the item has no nclx box of its own.
  struct heif_color_profile_nclx *nclx = heif_nclx_color_profile_alloc();
  if (nclx != NULL) {
    int full = frame->color_range == AVCOL_RANGE_JPEG || frame->format == AV_PIX_FMT_YUVJ420P ||
               frame->format == AV_PIX_FMT_YUVJ422P || frame->format == AV_PIX_FMT_YUVJ444P;
    nclx->full_range_flag = (uint8_t)full;
    // libavcodec's AVColorPrimaries, AVColorTransferCharacteristic and AVColorSpace are H.273's numbers.
    if (frame->color_primaries != AVCOL_PRI_RESERVED0) {
      heif_nclx_color_profile_set_color_primaries(nclx, (uint16_t)frame->color_primaries);
    }
    heif_nclx_color_profile_set_transfer_characteristics(nclx, (uint16_t)frame->color_trc);
    heif_nclx_color_profile_set_matrix_coefficients(nclx, (uint16_t)frame->colorspace);
    heif_image_set_nclx_color_profile(image, nclx);
    heif_nclx_color_profile_free(nclx);
  }
  *out = image;
  return success;
}

// Decodes the Annex B picture in `stream` (padded by reserve) into `frame` with `context`, which is
// flushed afterwards, ready for the next picture. NULL on success, else why not.
static const char *decode_picture(AVCodecContext *context, struct decoder *stream, AVFrame *frame) {
  memset(stream->stream + stream->size, 0, AV_INPUT_BUFFER_PADDING_SIZE);
  AVPacket *packet = av_packet_alloc();
  const char *problem = NULL;
  if (packet == NULL) return "out of memory";
  packet->data = stream->stream;
  packet->size = (int)stream->size;
  // The picture, then the end of the stream, so that the decoder hands it over at once.
  if (stream->size > INT32_MAX || avcodec_send_packet(context, packet) < 0 ||
      avcodec_send_packet(context, NULL) < 0) {
    problem = "HEVC data not decodable";
  } else if (avcodec_receive_frame(context, frame) < 0) {
    problem = "HEVC data holds no decodable picture";
  } else if (frame->decode_error_flags != 0 || (frame->flags & AV_FRAME_FLAG_CORRUPT)) {
    problem = "HEVC picture is damaged";
  }
  av_packet_free(&packet);
  avcodec_flush_buffers(context);
  if (problem != NULL) av_frame_unref(frame);
  return problem;
}

static struct heif_error decode_image(void *opaque, struct heif_image **out) {
  struct decoder *decoder = opaque;
  *out = NULL;
  last_log[0] = 0;
  if (decoder->size == 0) return failure("no HEVC data");

  int shared = session.active;
  AVCodecContext *context = shared ? session.context : NULL;
  if (context == NULL) {
    context = open_context();
    if (context == NULL) return failure("libavcodec could not open its HEVC decoder");
    if (shared) session.context = context;
  }
  AVFrame *frame = av_frame_alloc();
  struct heif_error result = failure("out of memory");
  if (frame != NULL) {
    const char *problem = decode_picture(context, decoder, frame);
    result = problem != NULL ? decode_failure(problem) : to_heif_image(frame, out);
    if (result.code == heif_error_Ok) pictures_decoded++;
  }
  av_frame_free(&frame);
  if (!shared) avcodec_free_context(&context);
  return result;
}

static void set_strict_decoding(void *decoder, int flag) {
  (void)decoder;
  (void)flag;
}

static const struct heif_decoder_plugin plugin = {
  .plugin_api_version = 3,
  .get_plugin_name = plugin_name,
  .init_plugin = NULL,
  .deinit_plugin = NULL,
  .does_support_format = supports,
  .new_decoder = new_decoder,
  .free_decoder = free_decoder,
  .push_data = push_data,
  .decode_image = decode_image,
  .set_strict_decoding = set_strict_decoding,
  .id_name = "thumbd-libavcodec-hevc",
};

int thumbd_hevc_register(void) {
  hevc_codec = avcodec_find_decoder(AV_CODEC_ID_HEVC);
  if (hevc_codec == NULL) return -1;
  av_log_set_callback(log_callback);
  struct heif_error error = heif_register_decoder_plugin(&plugin);
  return error.code == heif_error_Ok ? 0 : -1;
}

void thumbd_hevc_begin(int64_t max_pixels, int skip_loop_filters) {
  thumbd_hevc_end();
  session.active = 1;
  session.max_pixels = max_pixels;
  session.skip_loop_filters = skip_loop_filters;
}

void thumbd_hevc_end(void) {
  if (session.context != NULL) avcodec_free_context(&session.context);
  if (session.picture != NULL) av_frame_free(&session.picture);
  free(session.stream.stream);
  memset(&session.stream, 0, sizeof session.stream);
  session.active = 0;
  session.max_pixels = 0;
  session.skip_loop_filters = 0;
}

uint64_t thumbd_hevc_pictures_decoded(void) { return pictures_decoded; }

const char *thumbd_hevc_last_error(void) { return failure_text; }

int thumbd_hevc_decode(const uint8_t *parameter_sets, size_t parameter_sets_size, const uint8_t *data, size_t size,
                       int length_size, thumbd_hevc_picture *out) {
  memset(out, 0, sizeof *out);
  last_log[0] = 0;
  if (!session.active || hevc_codec == NULL) {
    decode_failure("no HEVC decoding session");
    return -1;
  }
  struct decoder *stream = &session.stream;
  stream->size = 0;
  struct heif_error error = append_units(stream, parameter_sets, parameter_sets_size, 4);
  if (error.code == heif_error_Ok) error = append_units(stream, data, size, length_size);
  if (error.code != heif_error_Ok) {
    decode_failure(error.message);
    return -1;
  }
  if (stream->size == 0) {
    decode_failure("no HEVC data");
    return -1;
  }
  if (session.context == NULL) {
    session.context = open_context();
    if (session.context == NULL) {
      decode_failure("libavcodec could not open its HEVC decoder");
      return -1;
    }
  }
  if (session.picture == NULL) session.picture = av_frame_alloc();
  if (session.picture == NULL) {
    decode_failure("out of memory");
    return -1;
  }
  const char *problem = decode_picture(session.context, stream, session.picture);
  if (problem != NULL) {
    decode_failure(problem);
    return -1;
  }
  const AVFrame *frame = session.picture;
  enum heif_chroma chroma;
  int bits, planes;
  if (!layout(frame->format, &chroma, &bits, &planes) || bits != 8) {
    av_frame_unref(session.picture);
    decode_failure("HEVC picture is not 8-bit YCbCr or grey");
    return -1;
  }
  out->width = frame->width;
  out->height = frame->height;
  out->chroma = chroma;  // heif_chroma's monochrome, 420, 422, 444 are 0 to 3
  for (int p = 0; p < planes; p++) {
    out->planes[p] = frame->data[p];
    out->strides[p] = frame->linesize[p];
  }
  pictures_decoded++;
  return 0;
}
