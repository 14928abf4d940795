// HEVC keyframes decoded alone, as IDR pictures.
//
// A CRA keyframe names, in its slice headers' reference picture sets, pictures before it that the
// pictures after it use. Decoded alone, libavcodec makes each one it does not hold: a whole grey
// picture and a motion field apiece, several times the keyframe's own memory (four more 4K pictures
// for x265's defaults). Relabelling the NAL unit type is not enough (libavcodec makes them for BLA
// pictures too): each CRA slice is rewritten as an IDR slice, whose header has no reference sets.
#ifndef THUMBD_HEVC_KEYFRAME_H
#define THUMBD_HEVC_KEYFRAME_H

#include <stddef.h>
#include <stdint.h>

#define THUMBD_HEVC_MAX_SPS 16
#define THUMBD_HEVC_MAX_PPS 64

// What a slice header's layout depends on, from a sequence parameter set.
typedef struct {
  int valid;
  int separate_colour_plane, chroma_array_type;
  int log2_max_poc_lsb;
  int pic_size_in_ctbs;
  int sao;
  int st_rps_count;
  int st_rps_delta_pocs[65];
  int long_term_present, long_term_sps_count;
  int temporal_mvp;
} thumbd_hevc_sps;

// ... and from a picture parameter set.
typedef struct {
  int valid;
  int sps_id;
  int dependent_slices, output_flag_present, extra_slice_header_bits;
  int slice_chroma_qp_offsets, chroma_qp_offset_list;
  int tiles, entropy_sync;
  int loop_filter_across_slices, deblocking_override, deblocking_disabled;
  int header_extension;
} thumbd_hevc_pps;

typedef struct {
  thumbd_hevc_sps sps[THUMBD_HEVC_MAX_SPS];
  thumbd_hevc_pps pps[THUMBD_HEVC_MAX_PPS];
} thumbd_hevc_params;

// Reads the parameter sets of an hvcC box (a stream's extradata) or of one NAL unit (header included).
void thumbd_hevc_read_hvcc(thumbd_hevc_params *params, const uint8_t *hvcc, size_t size);
void thumbd_hevc_read_parameter_set(thumbd_hevc_params *params, const uint8_t *unit, size_t size);

// A keyframe packet (NAL units behind `length_size`-byte lengths) whose slices are CRA, rewritten with
// IDR slices into a new buffer the caller frees: 1. 0: nothing to rewrite (no CRA slice); -1: a CRA
// slice this cannot rewrite (parameter sets unknown, a header it does not read): decode it as it is.
// In-band parameter sets in the packet are read first.
int thumbd_hevc_keyframe_as_idr(thumbd_hevc_params *params, const uint8_t *packet, size_t size, int length_size,
                                uint8_t **out, size_t *out_size);

#endif
