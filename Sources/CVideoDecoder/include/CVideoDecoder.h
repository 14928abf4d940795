// A video original read from memory with libavformat and libavcodec: the container's facts, then its
// keyframes one by one (the poster is chosen among them in Swift). Only the demuxers and decoders of
// the allow-lists below run, and libavformat reads nothing but the bytes it is given (custom I/O, no
// protocols).
#ifndef THUMBD_VIDEO_DECODER_H
#define THUMBD_VIDEO_DECODER_H

#include <stddef.h>
#include <stdint.h>

typedef struct thumbd_video thumbd_video;

typedef struct {
  int width, height;            // the coded picture's size
  int sar_num, sar_den;         // sample (pixel) aspect ratio; 0/1 when unknown
  double rotation;              // the display matrix's turn, degrees counterclockwise (0: none)
  int flipped;                  // the display matrix mirrors the picture
  double duration;              // seconds; negative when unknown
  char codec[32];               // the codec's name: h264, hevc, mpeg4, vp9, av1
  char container[32];           // libavformat's name of the demuxer
  int bit_depth;                // of the coded samples (8, 10, 12); 0 when unknown
  int color_primaries, color_trc, colorspace, color_range;  // libavutil's enum values
  int reorder_frames;           // frames the decoder may hold back (has_b_frames)
  int references;               // reference frames the stream declares (refs), 0 when unknown
  int chroma_shift_x, chroma_shift_y;  // log2 of the chroma subsampling (1,1 for 4:2:0; assumed when unknown)
  int gray;                     // no chroma planes
  int keyframes_rewritten;      // HEVC CRA keyframes are decoded as IDR ones (every parameter set was read)
  int stand_in_limit;           // references a keyframe may name that are not held (see the decoder)
  int index_entries;            // samples the container's index lists for the stream (0: none read)
  char live_photo_id[72];       // com.apple.quicktime.content.identifier (a Live Photo's MOV); "" when none
} thumbd_video_info;

// References a keyframe that is not rewritten may name that the decoder does not hold; past it, the
// keyframe is refused (each costs a motion field: 0.75 bytes a pixel for HEVC).
#define THUMBD_VIDEO_STAND_INS 4

typedef struct {
  int width, height;
  int bits;                     // 8, or 10/12 in 16-bit little-endian samples
  int chroma_shift_x, chroma_shift_y;  // log2 of the chroma subsampling (1,1 for 4:2:0)
  int gray;                     // no chroma planes
  const uint8_t *data[3];       // Y, Cb, Cr
  int linesize[3];
  double time;                  // seconds from the start of the stream; negative when unknown
  int color_primaries, color_trc, colorspace, color_range;
  double peak_nits;             // HDR: the content's peak (MaxCLL, else the mastering display's), 0 unknown
} thumbd_video_frame;

// A part of the file held in memory: the whole file, or one of the ranges read of it.
typedef struct {
  int64_t offset;               // where it lies in the file
  int64_t length;
  const uint8_t *data;
} thumbd_video_part;

// Opens a file of `total` bytes of which `parts` (by offset, not overlapping) are held; the parts' bytes
// must outlive the video. Reading where no part is reads as the end of the file. 0 on success; otherwise
// a negative code and a message: -1 not a container thumbd reads, -2 no video stream, -3 a codec thumbd
// does not decode, -4 damaged.
int thumbd_video_open(const thumbd_video_part *parts, int part_count, int64_t total, thumbd_video **video,
                      thumbd_video_info *info, char *message, size_t message_size);

// The keyframes of the container's index up to `until` seconds, in order: where each lies in the file
// and its time. At most `max`; the count, or -1 when the container has no index to read (Matroska
// read without cues, a fragmented MP4), or the picture size is not known from the header alone.
int thumbd_video_keyframes(thumbd_video *video, double until, int64_t *offsets, int64_t *lengths, double *times,
                           int max);

// Where the samples a preview of [from, until] seconds decodes lie, from the keyframe at or before
// `from` on, adjacent ones joined: the count of ranges, -1 without an index to read, -2 when more than
// `max`.
int thumbd_video_samples(thumbd_video *video, double from, double until, int64_t *offsets, int64_t *lengths,
                         int max);

// Decodes the next keyframe at or before `until` seconds, on its own (only keyframes are decoded). 1: a
// frame (valid until the next call or the close), 0: none left before `until`, 2: the next keyframe's
// bytes are not held (an original read by ranges: read them and open it again, resuming from
// thumbd_video_position; or have them passed over with thumbd_video_resume), negative: an error with a
// message. `skip_loop_filters`: without deblocking (for outputs reduced 2x or more). `deadline_ms`: the
// monotonic clock (CLOCK_MONOTONIC, milliseconds) past which reading and decoding stop with -5.
int thumbd_video_next_keyframe(thumbd_video *video, double until, int skip_loop_filters, int64_t deadline_ms,
                               thumbd_video_frame *frame, char *message, size_t message_size);

// Moves to the last keyframe at or before `seconds` (with an index: the last one whose bytes are held),
// so that the next thumbd_video_next_keyframe decodes it; without an index, seeks the demuxer there.
void thumbd_video_skip_to(thumbd_video *video, double seconds);

// With an index: the entry the next keyframe is looked for from, and (`last_given`) the entry of the
// keyframe given last; -1 without an index.
int thumbd_video_position(const thumbd_video *video, int *last_given);

// Looks for the next keyframe from index entry `entry` (negative: from where it is); keyframes whose
// bytes are not held are passed over when `pass_over_missing`, else asked for (status 2).
void thumbd_video_resume(thumbd_video *video, int entry, int pass_over_missing);

// Ends the keyframe search and starts decoding every frame, in sequence, from the last keyframe at or
// before `seconds` (for an animated preview). The decoder is made anew for it: default picture
// buffers, every frame decoded. 0, or negative with a message.
int thumbd_video_play_from(thumbd_video *video, double seconds, char *message, size_t message_size);

// After thumbd_video_play_from: the next frame in display order. Frames shown before `wanted` seconds
// that nothing refers to are not decoded (the caller samples the clip and does not show them), nor any
// that nothing refers to when `references_only` (the caller takes the next reference frame for a sample).
// 1: a frame (valid until the next call or the close), 0: none left before `until`, negative: an error
// with a message (-5: past `deadline_ms` on the monotonic clock).
int thumbd_video_next_frame(thumbd_video *video, double wanted, double until, int skip_loop_filters,
                            int references_only, int64_t deadline_ms, thumbd_video_frame *frame, char *message,
                            size_t message_size);

void thumbd_video_close(thumbd_video *video);

#endif
