// A video original read from memory with libavformat and libavcodec (see CVideoDecoder.h).
//
// libavformat reads through an AVIOContext over the caller's bytes: no file, no network protocol, and
// only the demuxers of `containers` may claim the bytes. The decoder is one of `decoders`, single
// threaded (thumbd runs one job per core), told to skip everything but keyframes.

#include "CVideoDecoder.h"
#include "hevc_keyframe.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/mastering_display_metadata.h>
#include <libavutil/pixdesc.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *const containers = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm";
static const char *const decoders[] = {"h264", "hevc", "mpeg4", "h263", "vp8", "vp9", "libdav1d", NULL};

struct thumbd_video {
  thumbd_video_part *parts;
  int part_count;
  int64_t size;
  int64_t position;
  int next_entry;       // the index entry to look at next (index_read)
  int last_entry;       // the index entry of the keyframe last given
  int pass_over_missing;  // keyframes whose bytes are not held are passed over, not asked for
  int index_read;       // keyframes are taken from the container's index, not read in sequence
  int64_t deadline_ms;  // 0: none
  AVFormatContext *format;
  AVIOContext *io;
  AVCodecContext *decoder;
  AVPacket *packet;
  AVFrame *frame;
  int stream;
  int ended;
  // Pictures asked of get_buffer2 since the keyframe being decoded was sent (decode_alone).
  int pictures_asked;
  // The one picture every reference a keyframe names but the decoder does not hold is made in (see
  // picture_buffer); NULL until the first such reference.
  AVFrame *stand_in;
  // How many such references a keyframe may name before its decode is refused.
  int stand_in_limit;
  // HEVC in hvcC form: the bytes of each NAL unit's length (0: not HEVC, or Annex B), and the parameter
  // sets its CRA keyframes are rewritten with (hevc_keyframe.h).
  int hevc_length_size;
  thumbd_hevc_params *hevc;
};

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

// The part holding byte `at`, or NULL.
static const thumbd_video_part *part_at(const struct thumbd_video *v, int64_t at) {
  for (int i = 0; i < v->part_count; i++)
    if (at >= v->parts[i].offset && at < v->parts[i].offset + v->parts[i].length) return &v->parts[i];
  return NULL;
}

// `length` bytes at `at` if one part holds them all, else NULL.
static const uint8_t *bytes_at(const struct thumbd_video *v, int64_t at, int64_t length) {
  const thumbd_video_part *part = part_at(v, at);
  if (!part || at + length > part->offset + part->length) return NULL;
  return part->data + (at - part->offset);
}

static int read_bytes(void *opaque, uint8_t *buffer, int size) {
  struct thumbd_video *v = opaque;
  const thumbd_video_part *part = part_at(v, v->position);
  if (!part) return AVERROR_EOF;  // the end, or a range not read
  int64_t left = part->offset + part->length - v->position;
  int64_t n = left < size ? left : size;
  memcpy(buffer, part->data + (v->position - part->offset), (size_t)n);
  v->position += n;
  return (int)n;
}

static int64_t seek_bytes(void *opaque, int64_t offset, int whence) {
  struct thumbd_video *v = opaque;
  int64_t target;
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return (int64_t)v->size;
    case SEEK_SET: target = offset; break;
    case SEEK_CUR: target = v->position + offset; break;
    case SEEK_END: target = (int64_t)v->size + offset; break;
    default: return -1;
  }
  if (target < 0) return -1;
  v->position = target;
  return target;
}

// libavformat asks between reads: past the deadline, its probing and reading stop.
static int interrupted(void *opaque) {
  struct thumbd_video *v = opaque;
  return v->deadline_ms > 0 && now_ms() >= v->deadline_ms;
}

static void say(char *message, size_t size, const char *what, int code) {
  char reason[128] = "";
  if (code < 0) av_strerror(code, reason, sizeof reason);
  snprintf(message, size, "%s%s%s", what, reason[0] ? ": " : "", reason);
}

// The decoder's get_buffer2. A keyframe decoded alone is the first picture asked for; any further
// picture while it decodes is a reference it names that the decoder does not hold (an HEVC CRA keyframe
// that could not be rewritten as an IDR one lists the pictures before it that the pictures after it
// use, and libavcodec makes each one it lacks: a whole picture, filled grey). Nothing reads them, since
// only keyframes are decoded, each alone, and a keyframe is intra-coded: they all share one stand-in
// picture, and past `stand_in_limit` of them the keyframe is refused (each still costs a motion field
// of its own, which the cost model counts).
static int picture_buffer(struct AVCodecContext *context, AVFrame *frame, int flags) {
  struct thumbd_video *v = context->opaque;
  if (v->pictures_asked++ == 0) return avcodec_default_get_buffer2(context, frame, flags);
  if (v->pictures_asked - 1 > v->stand_in_limit) return AVERROR(ENOMEM);
  AVFrame *stand_in = v->stand_in;
  if (stand_in && (stand_in->width != frame->width || stand_in->height != frame->height ||
                   stand_in->format != frame->format))
    av_frame_free(&v->stand_in);
  if (!v->stand_in) {
    v->stand_in = av_frame_alloc();
    if (!v->stand_in) return AVERROR(ENOMEM);
    v->stand_in->width = frame->width;
    v->stand_in->height = frame->height;
    v->stand_in->format = frame->format;
    int status = avcodec_default_get_buffer2(context, v->stand_in, flags);
    if (status < 0) {
      av_frame_free(&v->stand_in);
      return status;
    }
  }
  for (int i = 0; i < AV_NUM_DATA_POINTERS; i++) {
    frame->data[i] = v->stand_in->data[i];
    frame->linesize[i] = v->stand_in->linesize[i];
    if (v->stand_in->buf[i]) {
      frame->buf[i] = av_buffer_ref(v->stand_in->buf[i]);
      if (!frame->buf[i]) {
        for (int j = 0; j < i; j++) av_buffer_unref(&frame->buf[j]);
        return AVERROR(ENOMEM);
      }
    }
  }
  frame->extended_data = frame->data;
  return 0;
}

static int allowed_decoder(const char *name) {
  for (int i = 0; decoders[i]; i++)
    if (strcmp(decoders[i], name) == 0) return 1;
  return 0;
}

// AV1 goes to dav1d: libavcodec's own AV1 decoder only drives hardware.
static const AVCodec *find_decoder(enum AVCodecID id) {
  if (id == AV_CODEC_ID_AV1) return avcodec_find_decoder_by_name("libdav1d");
  return avcodec_find_decoder(id);
}

int thumbd_video_open(const thumbd_video_part *parts, int part_count, int64_t total, thumbd_video **video,
                      thumbd_video_info *info, char *message, size_t message_size) {
  *video = NULL;
  memset(info, 0, sizeof *info);
  // libav* would print what it finds wrong with hostile files to the worker's stderr, around its
  // structured log: the job's error says what matters.
  av_log_set_level(AV_LOG_QUIET);
  struct thumbd_video *v = calloc(1, sizeof *v);
  if (!v) return -4;
  v->parts = part_count > 0 ? calloc((size_t)part_count, sizeof *parts) : NULL;
  if (part_count > 0 && !v->parts) {
    free(v);
    return -4;
  }
  if (part_count > 0) memcpy(v->parts, parts, (size_t)part_count * sizeof *parts);
  v->part_count = part_count;
  v->size = total;
  v->stream = -1;
  const int buffer_size = 64 * 1024;
  uint8_t *buffer = av_malloc(buffer_size);
  v->io = buffer ? avio_alloc_context(buffer, buffer_size, 0, v, read_bytes, NULL, seek_bytes) : NULL;
  v->format = avformat_alloc_context();
  if (!v->io || !v->format) {
    if (!v->io) av_free(buffer);
    thumbd_video_close(v);
    snprintf(message, message_size, "out of memory");
    return -4;
  }
  v->format->pb = v->io;
  v->format->flags |= AVFMT_FLAG_CUSTOM_IO;
  v->format->format_whitelist = av_strdup(containers);
  v->format->protocol_whitelist = av_strdup("none");
  v->format->interrupt_callback = (AVIOInterruptCB){.callback = interrupted, .opaque = v};
  int status = avformat_open_input(&v->format, NULL, NULL, NULL);
  if (status < 0) {
    // avformat_open_input frees the context on failure.
    v->format = NULL;
    thumbd_video_close(v);
    say(message, message_size, "not a video container thumbd reads", status);
    return -1;
  }
  snprintf(info->container, sizeof info->container, "%s", v->format->iformat->name);
  // A Live Photo's MOV names its still by the identifier the still's maker note carries.
  const AVDictionaryEntry *live =
      av_dict_get(v->format->metadata, "com.apple.quicktime.content.identifier", NULL, 0);
  snprintf(info->live_photo_id, sizeof info->live_photo_id, "%s", live ? live->value : "");

  // The largest video stream that is not cover art.
  int64_t best_area = -1;
  for (unsigned i = 0; i < v->format->nb_streams; i++) {
    AVStream *s = v->format->streams[i];
    if (s->codecpar->codec_type != AVMEDIA_TYPE_VIDEO) continue;
    if (s->disposition & AV_DISPOSITION_ATTACHED_PIC) continue;
    int64_t area = (int64_t)s->codecpar->width * s->codecpar->height;
    if (area > best_area) {
      best_area = area;
      v->stream = (int)i;
    }
  }
  if (v->stream < 0) {
    thumbd_video_close(v);
    snprintf(message, message_size, "the file has no video stream");
    return -2;
  }
  AVStream *stream = v->format->streams[v->stream];
  AVCodecParameters *par = stream->codecpar;
  if (par->width <= 0 || par->height <= 0) {
    // Some containers leave the size to the stream's own headers (MPEG-4 Part 2 in 3GP): let
    // libavformat read them, within a few seconds.
    v->deadline_ms = now_ms() + 5000;
    for (unsigned i = 0; i < v->format->nb_streams; i++)
      if ((int)i != v->stream) v->format->streams[i]->discard = AVDISCARD_ALL;
    avformat_find_stream_info(v->format, NULL);
    v->deadline_ms = 0;
    avio_seek(v->format->pb, 0, SEEK_SET);
    avformat_seek_file(v->format, v->stream, INT64_MIN, 0, 0, AVSEEK_FLAG_BACKWARD);
  }
  const AVCodec *codec = find_decoder(par->codec_id);
  if (!codec || !allowed_decoder(codec->name)) {
    snprintf(message, message_size, "%s video is not supported", avcodec_get_name(par->codec_id));
    thumbd_video_close(v);
    return -3;
  }
  // Every other stream is discarded by the demuxer: its packets are skipped, not read.
  for (unsigned i = 0; i < v->format->nb_streams; i++)
    if ((int)i != v->stream) v->format->streams[i]->discard = AVDISCARD_ALL;

  v->decoder = avcodec_alloc_context3(codec);
  v->packet = av_packet_alloc();
  v->frame = av_frame_alloc();
  if (!v->decoder || !v->packet || !v->frame || avcodec_parameters_to_context(v->decoder, par) < 0) {
    thumbd_video_close(v);
    snprintf(message, message_size, "out of memory");
    return -4;
  }
  // hvcC: lengthSizeMinusOne in the low bits of its 22nd byte (Annex B extradata starts 00 00 01).
  v->stand_in_limit = THUMBD_VIDEO_STAND_INS;
  if (par->codec_id == AV_CODEC_ID_HEVC && par->extradata_size >= 23 && par->extradata[0] == 1) {
    v->hevc_length_size = (par->extradata[21] & 3) + 1;
    v->hevc = calloc(1, sizeof *v->hevc);
    if (v->hevc) thumbd_hevc_read_hvcc(v->hevc, par->extradata, (size_t)par->extradata_size);
    // Every parameter set the header carries was read: CRA keyframes will be rewritten, and none may
    // name a picture it lacks.
    int sets = 0, complete = v->hevc != NULL;
    for (int i = 0; v->hevc && i < THUMBD_HEVC_MAX_PPS; i++)
      if (v->hevc->pps[i].valid) {
        sets++;
        if (!v->hevc->sps[v->hevc->pps[i].sps_id].valid) complete = 0;
      }
    if (complete && sets > 0) {
      v->stand_in_limit = 0;
      info->keyframes_rewritten = 1;
    }
  }
  v->decoder->thread_count = 1;
  v->decoder->opaque = v;
  v->decoder->get_buffer2 = picture_buffer;
  v->decoder->skip_frame = AVDISCARD_NONKEY;
  v->decoder->pkt_timebase = stream->time_base;
  status = avcodec_open2(v->decoder, codec, NULL);
  if (status < 0) {
    thumbd_video_close(v);
    say(message, message_size, "the video's decoder refused its parameters", status);
    return -4;
  }

  info->width = par->width;
  info->height = par->height;
  AVRational sar = stream->sample_aspect_ratio.num > 0 ? stream->sample_aspect_ratio : par->sample_aspect_ratio;
  info->sar_num = sar.num > 0 && sar.den > 0 ? sar.num : 0;
  info->sar_den = sar.num > 0 && sar.den > 0 ? sar.den : 1;
  const int32_t *matrix = (const int32_t *)av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, NULL);
  if (matrix) {
    double angle = av_display_rotation_get(matrix);
    info->rotation = angle == angle ? angle : 0;  // NaN: a matrix that is no rotation
    info->flipped = (int64_t)matrix[0] * matrix[4] - (int64_t)matrix[1] * matrix[3] < 0;
  }
  if (stream->duration > 0 && stream->duration != AV_NOPTS_VALUE)
    info->duration = stream->duration * av_q2d(stream->time_base);
  else if (v->format->duration > 0)
    info->duration = v->format->duration / (double)AV_TIME_BASE;
  else
    info->duration = -1;
  snprintf(info->codec, sizeof info->codec, "%s", avcodec_get_name(par->codec_id));
  // The container rarely says the pixel format; HEVC's decoder knows it once open, from the parameter
  // sets in the header. Unknown: 4:2:0 and the codec's deepest profile phones use, as an upper bound.
  const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get(par->format != AV_PIX_FMT_NONE ? par->format
                                                                                     : v->decoder->pix_fmt);
  info->bit_depth = desc ? desc->comp[0].depth : (par->bits_per_raw_sample > 0 ? par->bits_per_raw_sample : 0);
  // H.264's decoder learns the format only from its first slice; the avcC's profile says enough: the
  // Baseline, Main, Extended and High profiles are 8-bit 4:2:0.
  if (!desc && par->codec_id == AV_CODEC_ID_H264 && par->extradata_size >= 2 && par->extradata[0] == 1) {
    int profile = par->extradata[1];
    if (profile == 66 || profile == 77 || profile == 88 || profile == 100) {
      desc = av_pix_fmt_desc_get(AV_PIX_FMT_YUV420P);
      info->bit_depth = 8;
    }
  }
  // VP9's profile 0 (vpcC in MP4, or what the demuxer read of the stream) is 8-bit 4:2:0.
  if (!desc && par->codec_id == AV_CODEC_ID_VP9 && par->profile == 0) {
    desc = av_pix_fmt_desc_get(AV_PIX_FMT_YUV420P);
    info->bit_depth = 8;
  }
  info->chroma_shift_x = desc ? desc->log2_chroma_w : 1;
  info->chroma_shift_y = desc ? desc->log2_chroma_h : 1;
  info->gray = desc ? desc->nb_components < 3 : 0;
  info->stand_in_limit = v->stand_in_limit;
  info->index_entries = avformat_index_get_entries_count(stream);
  info->color_primaries = par->color_primaries;
  info->color_trc = par->color_trc;
  info->colorspace = par->color_space;
  info->color_range = par->color_range;
  info->reorder_frames = par->video_delay;
  info->references = v->decoder->refs;
  // MP4 and QuickTime index every sample: keyframes are found there and read alone, never the frames
  // between them (and a file read by ranges holds little else).
  v->index_read = strstr(v->format->iformat->name, "mov") != NULL && avformat_index_get_entries_count(stream) > 0 &&
                  par->width > 0;
  *video = v;
  return 0;
}

static double stream_start(const AVStream *stream) {
  return stream->start_time != AV_NOPTS_VALUE ? stream->start_time * av_q2d(stream->time_base) : 0;
}

int thumbd_video_keyframes(thumbd_video *v, double until, int64_t *offsets, int64_t *lengths, double *times,
                           int max) {
  if (!v->index_read) return -1;
  AVStream *stream = v->format->streams[v->stream];
  double start = stream_start(stream);
  int count = avformat_index_get_entries_count(stream);
  int found = 0;
  for (int i = 0; i < count && found < max; i++) {
    const AVIndexEntry *entry = avformat_index_get_entry(stream, i);
    if (!entry || !(entry->flags & AVINDEX_KEYFRAME)) continue;
    double time = entry->timestamp * av_q2d(stream->time_base) - start;
    if (time > until) break;
    offsets[found] = entry->pos;
    lengths[found] = entry->size;
    times[found] = time;
    found++;
  }
  return found;
}

int thumbd_video_samples(thumbd_video *v, double from, double until, int64_t *offsets, int64_t *lengths, int max) {
  if (!v->index_read) return -1;
  AVStream *stream = v->format->streams[v->stream];
  double start = stream_start(stream);
  int count = avformat_index_get_entries_count(stream);
  // The keyframe the window's decoding starts from: the last at or before `from`.
  int first = 0;
  for (int i = 0; i < count; i++) {
    const AVIndexEntry *entry = avformat_index_get_entry(stream, i);
    if (!entry) continue;
    if (entry->timestamp * av_q2d(stream->time_base) - start > from) break;
    if (entry->flags & AVINDEX_KEYFRAME) first = i;
  }
  int found = 0;
  for (int i = first; i < count; i++) {
    const AVIndexEntry *entry = avformat_index_get_entry(stream, i);
    if (!entry || entry->size <= 0 || entry->pos < 0) continue;
    // Decoding times: a frame shown in the window may be decoded up to half a second before it ends.
    if (entry->timestamp * av_q2d(stream->time_base) - start > until + 0.5) break;
    if (found > 0 && offsets[found - 1] + lengths[found - 1] == entry->pos) {
      lengths[found - 1] += entry->size;
      continue;
    }
    if (found == max) return -2;
    offsets[found] = entry->pos;
    lengths[found] = entry->size;
    found++;
  }
  return found;
}

// The content's brightest pixel (MaxCLL), else the mastering display's peak, from the frame's SEI or
// the container's boxes; 0 when neither says.
static double peak_nits(const AVFrame *f, const AVStream *stream) {
  const AVFrameSideData *light = av_frame_get_side_data(f, AV_FRAME_DATA_CONTENT_LIGHT_LEVEL);
  if (light && ((const AVContentLightMetadata *)light->data)->MaxCLL > 0)
    return ((const AVContentLightMetadata *)light->data)->MaxCLL;
  const AVContentLightMetadata *stream_light =
      (const AVContentLightMetadata *)av_stream_get_side_data(stream, AV_PKT_DATA_CONTENT_LIGHT_LEVEL, NULL);
  if (stream_light && stream_light->MaxCLL > 0) return stream_light->MaxCLL;
  const AVFrameSideData *mastering = av_frame_get_side_data(f, AV_FRAME_DATA_MASTERING_DISPLAY_METADATA);
  const AVMasteringDisplayMetadata *display =
      mastering ? (const AVMasteringDisplayMetadata *)mastering->data
                : (const AVMasteringDisplayMetadata *)av_stream_get_side_data(
                      stream, AV_PKT_DATA_MASTERING_DISPLAY_METADATA, NULL);
  if (display && display->has_luminance && display->max_luminance.den > 0) return av_q2d(display->max_luminance);
  return 0;
}

static int give_frame(struct thumbd_video *v, thumbd_video_frame *out, char *message, size_t message_size) {
  AVFrame *f = v->frame;
  const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get(f->format);
  // Planar YUV or gray, 8 to 16 bits, little-endian: what the allowed decoders give in software.
  if (!desc || (desc->flags & (AV_PIX_FMT_FLAG_BE | AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_RGB)) ||
      (!(desc->flags & AV_PIX_FMT_FLAG_PLANAR && desc->nb_components >= 3) && desc->nb_components != 1 &&
       desc->nb_components != 2)) {
    snprintf(message, message_size, "frames in %s are not supported", desc ? desc->name : "an unknown format");
    return -3;
  }
  memset(out, 0, sizeof *out);
  out->width = f->width;
  out->height = f->height;
  out->bits = desc->comp[0].depth;
  out->gray = desc->nb_components < 3;
  out->chroma_shift_x = desc->log2_chroma_w;
  out->chroma_shift_y = desc->log2_chroma_h;
  for (int i = 0; i < (out->gray ? 1 : 3); i++) {
    out->data[i] = f->data[i];
    out->linesize[i] = f->linesize[i];
  }
  AVStream *stream = v->format->streams[v->stream];
  out->time = f->best_effort_timestamp != AV_NOPTS_VALUE ? f->best_effort_timestamp * av_q2d(stream->time_base) : -1;
  if (stream->start_time != AV_NOPTS_VALUE && out->time >= 0)
    out->time -= stream->start_time * av_q2d(stream->time_base);
  out->color_primaries = f->color_primaries;
  out->color_trc = f->color_trc;
  out->colorspace = f->colorspace;
  out->color_range = f->color_range;
  out->peak_nits = peak_nits(f, stream);
  return 1;
}

// Sends `packet` alone, drains the decoder and resets it: 1 with a frame, 0 when this keyframe gave none
// (damaged; the next one may decode). The packet is unreferenced.
static int decode_packet_alone(struct thumbd_video *v, AVPacket *packet) {
  // The last frame given was copied out by the caller: its picture goes back to the decoder's pool now,
  // not when the next one is received, so that the pool holds one picture, not two.
  av_frame_unref(v->frame);
  v->pictures_asked = 0;
  int status = avcodec_send_packet(v->decoder, packet);
  av_packet_unref(packet);
  int got = 0;
  if (status >= 0 && avcodec_send_packet(v->decoder, NULL) >= 0) {
    got = avcodec_receive_frame(v->decoder, v->frame) == 0;
  }
  avcodec_flush_buffers(v->decoder);
  return got;
}

// Decodes the keyframe in v->packet alone: an HEVC CRA keyframe as an IDR one when it can be rewritten
// (hevc_keyframe.h), else as it is. 1 with a frame, 0 without.
static int decode_alone(struct thumbd_video *v) {
  uint8_t *idr = NULL;
  size_t idr_size = 0;
  if (v->hevc &&
      thumbd_hevc_keyframe_as_idr(v->hevc, v->packet->data, (size_t)v->packet->size, v->hevc_length_size, &idr,
                                  &idr_size) == 1) {
    AVPacket *rewritten = av_packet_alloc();
    int made = rewritten && av_new_packet(rewritten, (int)idr_size) == 0;
    if (made) {
      memcpy(rewritten->data, idr, idr_size);
      av_packet_copy_props(rewritten, v->packet);
    }
    free(idr);
    if (made && decode_packet_alone(v, rewritten)) {
      av_packet_free(&rewritten);
      av_packet_unref(v->packet);
      return 1;
    }
    av_packet_free(&rewritten);
  }
  return decode_packet_alone(v, v->packet);
}

static int indexed_keyframe(struct thumbd_video *v, double until, int64_t deadline_ms, thumbd_video_frame *frame,
                            char *message, size_t message_size) {
  AVStream *stream = v->format->streams[v->stream];
  double start = stream_start(stream);
  int count = avformat_index_get_entries_count(stream);
  while (!v->ended && v->next_entry < count) {
    if (deadline_ms > 0 && now_ms() >= deadline_ms) {
      snprintf(message, message_size, "no poster within the decode budget");
      return -5;
    }
    const AVIndexEntry *entry = avformat_index_get_entry(stream, v->next_entry);
    if (!entry || !(entry->flags & AVINDEX_KEYFRAME)) {
      v->next_entry++;
      continue;
    }
    if (entry->timestamp * av_q2d(stream->time_base) - start > until) break;
    if (entry->size <= 0 || entry->pos < 0 || entry->pos > v->size - entry->size) {
      v->next_entry++;  // cut off: the file ends before it
      continue;
    }
    const uint8_t *data = bytes_at(v, entry->pos, entry->size);
    if (!data) {
      // Not read (an original read by ranges): the caller reads it, or passes it over.
      if (!v->pass_over_missing) return 2;
      v->next_entry++;
      continue;
    }
    v->last_entry = v->next_entry++;
    if (av_new_packet(v->packet, entry->size) < 0) {
      snprintf(message, message_size, "out of memory");
      return -4;
    }
    memcpy(v->packet->data, data, (size_t)entry->size);
    v->packet->pts = v->packet->dts = entry->timestamp;
    v->packet->flags |= AV_PKT_FLAG_KEY;
    v->packet->stream_index = v->stream;
    if (decode_alone(v)) {
      int given = give_frame(v, frame, message, message_size);
      // The packet's time when the decoder gave the frame none (it was sent without its neighbours); the
      // index holds decoding times, which start a frame or two before zero where frames are reordered.
      if (given == 1 && frame->time < 0) {
        double time = entry->timestamp * av_q2d(stream->time_base) - start;
        frame->time = time > 0 ? time : 0;
      }
      return given;
    }
  }
  v->ended = 1;
  return 0;
}

int thumbd_video_next_keyframe(thumbd_video *v, double until, int skip_loop_filters, int64_t deadline_ms,
                               thumbd_video_frame *frame, char *message, size_t message_size) {
  v->deadline_ms = deadline_ms;
  // Reduced 2x or more, deblocking's work does not survive the resampling (as on HEIC's route).
  v->decoder->skip_loop_filter = skip_loop_filters ? AVDISCARD_ALL : AVDISCARD_DEFAULT;
  AVStream *stream = v->format->streams[v->stream];
  double start = stream_start(stream);
  if (v->index_read) return indexed_keyframe(v, until, deadline_ms, frame, message, message_size);
  while (!v->ended) {
    if (deadline_ms > 0 && now_ms() >= deadline_ms) {
      snprintf(message, message_size, "no poster within the decode budget");
      return -5;
    }
    int status = av_read_frame(v->format, v->packet);
    if (status == AVERROR_EXIT) {
      snprintf(message, message_size, "no poster within the decode budget");
      return -5;
    }
    if (status < 0) {  // the end, or a file cut short
      v->ended = 1;
      break;
    }
    int wanted = v->packet->stream_index == v->stream && (v->packet->flags & AV_PKT_FLAG_KEY);
    double time = v->packet->pts != AV_NOPTS_VALUE ? v->packet->pts * av_q2d(stream->time_base) - start : -1;
    if (!wanted) {
      av_packet_unref(v->packet);
      continue;
    }
    if (time > until) {
      av_packet_unref(v->packet);
      v->ended = 1;
      break;
    }
    // Each keyframe alone: sent, then drained at once (a decoder that reorders would otherwise hold the
    // picture back until the next keyframe had been decoded too), then the decoder is reset for the
    // next one. Keyframes need nothing before them.
    if (decode_alone(v)) return give_frame(v, frame, message, message_size);
    // A damaged keyframe: the next one may decode.
  }
  return 0;
}

void thumbd_video_skip_to(thumbd_video *v, double seconds) {
  AVStream *stream = v->format->streams[v->stream];
  double start = stream_start(stream);
  if (v->index_read) {
    int count = avformat_index_get_entries_count(stream);
    for (int i = v->next_entry; i < count; i++) {
      const AVIndexEntry *entry = avformat_index_get_entry(stream, i);
      if (!entry || !(entry->flags & AVINDEX_KEYFRAME)) continue;
      if (entry->timestamp * av_q2d(stream->time_base) - start > seconds) break;
      if (bytes_at(v, entry->pos, entry->size)) v->next_entry = i;
    }
    return;
  }
  int64_t target = (int64_t)((seconds + start) / av_q2d(stream->time_base));
  av_seek_frame(v->format, v->stream, target, AVSEEK_FLAG_BACKWARD);
}

int thumbd_video_position(const thumbd_video *v, int *last_given) {
  if (last_given) *last_given = v->last_entry;
  return v->index_read ? v->next_entry : -1;
}

void thumbd_video_resume(thumbd_video *v, int entry, int pass_over_missing) {
  v->pass_over_missing = pass_over_missing;
  if (!v->index_read || entry < 0) return;
  v->next_entry = entry;
  v->ended = 0;
}

int thumbd_video_play_from(thumbd_video *v, double seconds, char *message, size_t message_size) {
  AVStream *stream = v->format->streams[v->stream];
  const AVCodec *codec = find_decoder(stream->codecpar->codec_id);
  avcodec_free_context(&v->decoder);
  av_frame_free(&v->stand_in);
  av_frame_unref(v->frame);
  v->decoder = codec ? avcodec_alloc_context3(codec) : NULL;
  if (!v->decoder || avcodec_parameters_to_context(v->decoder, stream->codecpar) < 0) {
    snprintf(message, message_size, "out of memory");
    return -4;
  }
  v->decoder->thread_count = 1;
  v->decoder->pkt_timebase = stream->time_base;
  int status = avcodec_open2(v->decoder, codec, NULL);
  if (status < 0) {
    say(message, message_size, "the video's decoder refused its parameters", status);
    return -4;
  }
  int64_t target = (int64_t)((seconds + stream_start(stream)) / av_q2d(stream->time_base));
  status = av_seek_frame(v->format, v->stream, target, AVSEEK_FLAG_BACKWARD);
  if (status < 0) status = av_seek_frame(v->format, v->stream, 0, AVSEEK_FLAG_BACKWARD | AVSEEK_FLAG_BYTE);
  v->ended = 0;
  v->index_read = 0;
  return 0;
}

int thumbd_video_next_frame(thumbd_video *v, double wanted, double until, int skip_loop_filters,
                            int references_only, int64_t deadline_ms, thumbd_video_frame *frame, char *message,
                            size_t message_size) {
  v->deadline_ms = deadline_ms;
  v->decoder->skip_loop_filter = skip_loop_filters ? AVDISCARD_ALL : AVDISCARD_DEFAULT;
  AVStream *stream = v->format->streams[v->stream];
  double start = stream_start(stream);
  av_frame_unref(v->frame);
  for (;;) {
    if (deadline_ms > 0 && now_ms() >= deadline_ms) {
      snprintf(message, message_size, "no preview within the decode budget");
      return -5;
    }
    int status = avcodec_receive_frame(v->decoder, v->frame);
    if (status == 0) {
      int given = give_frame(v, frame, message, message_size);
      if (given == 1 && frame->time > until) {
        av_frame_unref(v->frame);
        return 0;
      }
      return given;
    }
    if (status == AVERROR_EOF) return 0;
    if (status != AVERROR(EAGAIN)) {
      say(message, message_size, "a frame of the video does not decode", status);
      return -4;
    }
    // The decoder wants more: the next packet of the stream, or the end (drained for what it holds).
    if (v->ended) {
      avcodec_send_packet(v->decoder, NULL);
      continue;
    }
    status = av_read_frame(v->format, v->packet);
    if (status == AVERROR_EXIT) {
      snprintf(message, message_size, "no preview within the decode budget");
      return -5;
    }
    if (status < 0) {
      v->ended = 1;
      continue;
    }
    if (v->packet->stream_index != v->stream) {
      av_packet_unref(v->packet);
      continue;
    }
    int64_t pts = v->packet->pts != AV_NOPTS_VALUE ? v->packet->pts : v->packet->dts;
    double time = pts != AV_NOPTS_VALUE ? pts * av_q2d(stream->time_base) - start : -1;
    int64_t dts = v->packet->dts != AV_NOPTS_VALUE ? v->packet->dts : pts;
    double decode_time = dts != AV_NOPTS_VALUE ? dts * av_q2d(stream->time_base) - start : -1;
    // Past the window by more than a reordering could hold back: nothing after it is shown.
    if (decode_time > until + 0.5) {
      av_packet_unref(v->packet);
      v->ended = 1;
      continue;
    }
    // A frame shown before the one wanted is decoded only when others refer to it (any frame, when the
    // caller takes reference frames only).
    v->decoder->skip_frame =
        references_only || (time >= 0 && time < wanted - 0.005) ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
    status = avcodec_send_packet(v->decoder, v->packet);
    av_packet_unref(v->packet);
    if (status < 0 && status != AVERROR(EAGAIN)) continue;  // a damaged packet: the next may decode
  }
}

void thumbd_video_close(thumbd_video *v) {
  if (!v) return;
  av_frame_free(&v->frame);
  av_frame_free(&v->stand_in);
  free(v->hevc);
  av_packet_free(&v->packet);
  avcodec_free_context(&v->decoder);
  if (v->format) avformat_close_input(&v->format);
  if (v->io) {
    av_freep(&v->io->buffer);
    avio_context_free(&v->io);
  }
  free(v->parts);
  free(v);
}
