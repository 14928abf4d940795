// HEVC keyframes decoded alone: a CRA picture relabelled as an IDR picture (see hevc_keyframe.h).
//
// A CRA picture's slice headers carry its picture order count and the reference picture sets that the
// pictures after it use; an IDR picture's carry neither, and nothing else differs for an intra picture.
// Each CRA slice is rewritten: its NAL unit type becomes IDR_N_LP, the bits from
// slice_pic_order_cnt_lsb through slice_temporal_mvp_enabled_flag are dropped, the rest of the header is
// copied and realigned, and the slice data follows unchanged. The header's fields depend on the
// sequence and picture parameter sets, which are read here as far as the slice header needs them.

#include "hevc_keyframe.h"

#include <stdlib.h>
#include <string.h>

// Reading bits of an RBSP (emulation prevention bytes removed). Reading past the end sets `over`.
typedef struct {
  const uint8_t *data;
  size_t size;
  size_t bit;
  int over;
} bits_in;

static uint32_t read_bits(bits_in *b, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; i++) {
    if (b->bit >= b->size * 8) {
      b->over = 1;
      return 0;
    }
    v = v << 1 | ((b->data[b->bit >> 3] >> (7 - (b->bit & 7))) & 1);
    b->bit++;
  }
  return v;
}

static uint32_t read_ue(bits_in *b) {
  int zeros = 0;
  while (read_bits(b, 1) == 0) {
    if (b->over || ++zeros > 31) {
      b->over = 1;
      return 0;
    }
  }
  return zeros ? (1u << zeros) - 1 + read_bits(b, zeros) : 0;
}

static void skip_se(bits_in *b) { (void)read_ue(b); }

static int ceil_log2(uint32_t v) {
  int n = 0;
  while ((1u << n) < v) n++;
  return n;
}

// The RBSP of a NAL unit's payload (after its two-byte header): emulation prevention bytes removed.
// Returns its size; `out` holds at least `size` bytes.
static size_t unescape(const uint8_t *in, size_t size, uint8_t *out) {
  size_t n = 0;
  int zeros = 0;
  for (size_t i = 0; i < size; i++) {
    if (zeros >= 2 && in[i] == 3) {
      zeros = 0;
      continue;
    }
    zeros = in[i] == 0 ? zeros + 1 : 0;
    out[n++] = in[i];
  }
  return n;
}

// Appends `rbsp` to `out` with emulation prevention bytes inserted; returns the bytes written.
static size_t escape(const uint8_t *rbsp, size_t size, uint8_t *out) {
  size_t n = 0;
  int zeros = 0;
  for (size_t i = 0; i < size; i++) {
    if (zeros >= 2 && rbsp[i] <= 3) {
      out[n++] = 3;
      zeros = 0;
    }
    zeros = rbsp[i] == 0 ? zeros + 1 : 0;
    out[n++] = rbsp[i];
  }
  return n;
}

static void skip_profile_tier_level(bits_in *b, int max_sub_layers_minus1) {
  read_bits(b, 32);
  read_bits(b, 32);
  read_bits(b, 32);  // general profile, compatibility flags, constraint flags, level: 96 bits
  int profile_present[8] = {0}, level_present[8] = {0};
  for (int i = 0; i < max_sub_layers_minus1; i++) {
    profile_present[i] = (int)read_bits(b, 1);
    level_present[i] = (int)read_bits(b, 1);
  }
  if (max_sub_layers_minus1 > 0) read_bits(b, 2 * (8 - max_sub_layers_minus1));
  for (int i = 0; i < max_sub_layers_minus1; i++) {
    if (profile_present[i]) {
      read_bits(b, 32);
      read_bits(b, 32);
      read_bits(b, 24);
    }
    if (level_present[i]) read_bits(b, 8);
  }
}

static void skip_scaling_list_data(bits_in *b) {
  for (int size_id = 0; size_id < 4; size_id++) {
    for (int matrix = 0; matrix < 6; matrix += size_id == 3 ? 3 : 1) {
      if (!read_bits(b, 1)) {
        read_ue(b);
      } else {
        int count = 1 << (4 + (size_id << 1));
        if (count > 64) count = 64;
        if (size_id > 1) skip_se(b);
        for (int i = 0; i < count && !b->over; i++) skip_se(b);
      }
    }
  }
}

// st_ref_pic_set(index) in an SPS (`in_slice` 0) or a slice header (index == the SPS's count): its
// NumDeltaPocs, or -1 when it cannot be read.
static int short_term_rps(bits_in *b, const thumbd_hevc_sps *sps, int index, int in_slice) {
  if (index != 0 && read_bits(b, 1)) {  // inter_ref_pic_set_prediction_flag
    int delta_idx = in_slice ? (int)read_ue(b) + 1 : 1;
    if (delta_idx > index) return -1;
    int reference = sps->st_rps_delta_pocs[index - delta_idx];
    read_bits(b, 1);  // delta_rps_sign
    read_ue(b);       // abs_delta_rps_minus1
    int count = 0;
    for (int j = 0; j <= reference && !b->over; j++) {
      int used = (int)read_bits(b, 1);
      int use_delta = used ? 1 : (int)read_bits(b, 1);
      if (used || use_delta) count++;
    }
    return b->over || count > 32 ? -1 : count;
  }
  uint32_t negative = read_ue(b), positive = read_ue(b);
  if (negative > 16 || positive > 16) return -1;
  for (uint32_t i = 0; i < negative + positive && !b->over; i++) {
    read_ue(b);
    read_bits(b, 1);
  }
  return b->over ? -1 : (int)(negative + positive);
}

static void parse_sps(thumbd_hevc_params *params, const uint8_t *rbsp, size_t size) {
  bits_in b = {rbsp, size, 0, 0};
  thumbd_hevc_sps sps;
  memset(&sps, 0, sizeof sps);
  read_bits(&b, 4);  // sps_video_parameter_set_id
  int max_sub_layers_minus1 = (int)read_bits(&b, 3);
  read_bits(&b, 1);
  if (max_sub_layers_minus1 > 6) return;
  skip_profile_tier_level(&b, max_sub_layers_minus1);
  uint32_t id = read_ue(&b);
  if (id >= THUMBD_HEVC_MAX_SPS) return;
  uint32_t chroma = read_ue(&b);
  if (chroma > 3) return;
  sps.separate_colour_plane = chroma == 3 ? (int)read_bits(&b, 1) : 0;
  sps.chroma_array_type = sps.separate_colour_plane ? 0 : (int)chroma;
  uint32_t width = read_ue(&b), height = read_ue(&b);
  if (read_bits(&b, 1)) {  // conformance window
    for (int i = 0; i < 4; i++) read_ue(&b);
  }
  read_ue(&b);
  read_ue(&b);  // bit depths
  uint32_t log2_max_poc_lsb = read_ue(&b) + 4;
  if (log2_max_poc_lsb > 16) return;
  sps.log2_max_poc_lsb = (int)log2_max_poc_lsb;
  int ordering_all = (int)read_bits(&b, 1);
  for (int i = ordering_all ? 0 : max_sub_layers_minus1; i <= max_sub_layers_minus1; i++) {
    read_ue(&b);
    read_ue(&b);
    read_ue(&b);
  }
  uint32_t log2_min_cb = read_ue(&b) + 3;
  uint32_t log2_ctb = log2_min_cb + read_ue(&b);
  if (log2_ctb < 4 || log2_ctb > 6 || width == 0 || height == 0 || width > 65536 || height > 65536) return;
  uint32_t ctb = 1u << log2_ctb;
  sps.pic_size_in_ctbs = ((width + ctb - 1) / ctb) * ((height + ctb - 1) / ctb);
  for (int i = 0; i < 4; i++) read_ue(&b);  // transform block sizes, hierarchy depths
  if (read_bits(&b, 1) && read_bits(&b, 1)) skip_scaling_list_data(&b);
  read_bits(&b, 1);  // amp_enabled_flag
  sps.sao = (int)read_bits(&b, 1);
  if (read_bits(&b, 1)) {  // pcm
    read_bits(&b, 8);
    read_ue(&b);
    read_ue(&b);
    read_bits(&b, 1);
  }
  uint32_t sets = read_ue(&b);
  if (sets > 64) return;
  sps.st_rps_count = (int)sets;
  for (uint32_t i = 0; i < sets; i++) {
    int count = short_term_rps(&b, &sps, (int)i, 0);
    if (count < 0) return;
    sps.st_rps_delta_pocs[i] = count;
  }
  sps.long_term_present = (int)read_bits(&b, 1);
  if (sps.long_term_present) {
    uint32_t count = read_ue(&b);
    if (count > 32) return;
    sps.long_term_sps_count = (int)count;
    for (uint32_t i = 0; i < count; i++) read_bits(&b, sps.log2_max_poc_lsb + 1);
  }
  sps.temporal_mvp = (int)read_bits(&b, 1);
  if (b.over) return;
  sps.valid = 1;
  params->sps[id] = sps;
}

static void parse_pps(thumbd_hevc_params *params, const uint8_t *rbsp, size_t size) {
  bits_in b = {rbsp, size, 0, 0};
  thumbd_hevc_pps pps;
  memset(&pps, 0, sizeof pps);
  uint32_t id = read_ue(&b);
  uint32_t sps_id = read_ue(&b);
  if (id >= THUMBD_HEVC_MAX_PPS || sps_id >= THUMBD_HEVC_MAX_SPS) return;
  pps.sps_id = (int)sps_id;
  pps.dependent_slices = (int)read_bits(&b, 1);
  pps.output_flag_present = (int)read_bits(&b, 1);
  pps.extra_slice_header_bits = (int)read_bits(&b, 3);
  read_bits(&b, 2);  // sign_data_hiding, cabac_init_present
  read_ue(&b);
  read_ue(&b);  // num_ref_idx defaults
  skip_se(&b);  // init_qp_minus26
  read_bits(&b, 1);  // constrained_intra_pred
  int transform_skip = (int)read_bits(&b, 1);
  if (read_bits(&b, 1)) read_ue(&b);  // cu_qp_delta_enabled, diff_cu_qp_delta_depth
  skip_se(&b);
  skip_se(&b);  // cb, cr qp offsets
  pps.slice_chroma_qp_offsets = (int)read_bits(&b, 1);
  read_bits(&b, 3);  // weighted pred, weighted bipred, transquant bypass
  pps.tiles = (int)read_bits(&b, 1);
  pps.entropy_sync = (int)read_bits(&b, 1);
  if (pps.tiles) {
    uint32_t columns = read_ue(&b) + 1, rows = read_ue(&b) + 1;
    if (columns > 64 || rows > 64) return;
    if (!read_bits(&b, 1)) {  // not uniform spacing
      for (uint32_t i = 0; i + 1 < columns; i++) read_ue(&b);
      for (uint32_t i = 0; i + 1 < rows; i++) read_ue(&b);
    }
    read_bits(&b, 1);  // loop filter across tiles
  }
  pps.loop_filter_across_slices = (int)read_bits(&b, 1);
  if (read_bits(&b, 1)) {  // deblocking_filter_control_present
    pps.deblocking_override = (int)read_bits(&b, 1);
    pps.deblocking_disabled = (int)read_bits(&b, 1);
    if (!pps.deblocking_disabled) {
      skip_se(&b);
      skip_se(&b);
    }
  }
  if (read_bits(&b, 1)) skip_scaling_list_data(&b);
  read_bits(&b, 1);  // lists_modification_present
  read_ue(&b);       // log2_parallel_merge_level
  pps.header_extension = (int)read_bits(&b, 1);
  if (read_bits(&b, 1)) {  // pps_extension_present
    int range = (int)read_bits(&b, 1);
    int others = (int)read_bits(&b, 7);
    // Multilayer, 3D and screen-content extensions add slice header fields this does not read.
    if (others) return;
    if (range) {
      if (transform_skip) read_ue(&b);
      read_bits(&b, 1);  // cross_component_prediction
      pps.chroma_qp_offset_list = (int)read_bits(&b, 1);
      if (pps.chroma_qp_offset_list) {
        read_ue(&b);
        uint32_t length = read_ue(&b) + 1;
        if (length > 6) return;
        for (uint32_t i = 0; i < length; i++) {
          skip_se(&b);
          skip_se(&b);
        }
      }
    }
  }
  if (b.over) return;
  pps.valid = 1;
  params->pps[id] = pps;
}

void thumbd_hevc_read_parameter_set(thumbd_hevc_params *params, const uint8_t *unit, size_t size) {
  if (size < 3 || size > (1 << 20)) return;
  int type = (unit[0] >> 1) & 0x3F;
  if (type != 33 && type != 34) return;
  uint8_t *rbsp = malloc(size);
  if (!rbsp) return;
  size_t n = unescape(unit + 2, size - 2, rbsp);
  if (type == 33) parse_sps(params, rbsp, n);
  else parse_pps(params, rbsp, n);
  free(rbsp);
}

void thumbd_hevc_read_hvcc(thumbd_hevc_params *params, const uint8_t *hvcc, size_t size) {
  // HEVCDecoderConfigurationRecord: 22 bytes, numOfArrays, then arrays of NAL units behind 16-bit lengths.
  if (size < 23 || hvcc[0] != 1) return;
  size_t at = 23;
  int arrays = hvcc[22];
  for (int a = 0; a < arrays; a++) {
    if (at + 3 > size) return;
    int count = hvcc[at + 1] << 8 | hvcc[at + 2];
    at += 3;
    for (int i = 0; i < count; i++) {
      if (at + 2 > size) return;
      size_t length = (size_t)(hvcc[at] << 8 | hvcc[at + 1]);
      at += 2;
      if (length > size - at) return;
      thumbd_hevc_read_parameter_set(params, hvcc + at, length);
      at += length;
    }
  }
}

// Writing bits.
typedef struct {
  uint8_t *data;
  size_t bit;
} bits_out;

static void put_bit(bits_out *o, int bit) {
  if ((o->bit & 7) == 0) o->data[o->bit >> 3] = 0;
  if (bit) o->data[o->bit >> 3] |= (uint8_t)(0x80 >> (o->bit & 7));
  o->bit++;
}

static void copy_bits(bits_out *o, const uint8_t *data, size_t from, size_t to) {
  for (size_t i = from; i < to; i++) put_bit(o, (data[i >> 3] >> (7 - (i & 7))) & 1);
}

// One CRA slice segment NAL unit (header included, escaped) rewritten as IDR_N_LP into `out` (room for
// twice `size` plus 16 bytes); the bytes written, or 0 when it cannot be.
static size_t cra_slice_as_idr(const thumbd_hevc_params *params, const uint8_t *unit, size_t size, uint8_t *out) {
  uint8_t *rbsp = malloc(size);
  uint8_t *header = malloc(size + 16);
  if (!rbsp || !header) {
    free(rbsp);
    free(header);
    return 0;
  }
  size_t written = 0;
  size_t n = unescape(unit + 2, size - 2, rbsp);
  bits_in b = {rbsp, n, 0, 0};
  int first = (int)read_bits(&b, 1);
  read_bits(&b, 1);  // no_output_of_prior_pics_flag
  uint32_t pps_id = read_ue(&b);
  if (pps_id >= THUMBD_HEVC_MAX_PPS || !params->pps[pps_id].valid) goto done;
  const thumbd_hevc_pps *pps = &params->pps[pps_id];
  const thumbd_hevc_sps *sps = &params->sps[pps->sps_id];
  if (!sps->valid) goto done;
  int dependent = 0;
  if (!first) {
    if (pps->dependent_slices) dependent = (int)read_bits(&b, 1);
    read_bits(&b, ceil_log2(sps->pic_size_in_ctbs));
  }
  size_t cut_from = 0, cut_to = 0;
  int sao_luma = 0, sao_chroma = 0, deblocking_disabled = pps->deblocking_disabled;
  if (!dependent) {
    read_bits(&b, pps->extra_slice_header_bits);
    if (read_ue(&b) != 2) goto done;  // an IRAP picture is intra: slice_type I
    if (pps->output_flag_present) read_bits(&b, 1);
    if (sps->separate_colour_plane) read_bits(&b, 2);
    cut_from = b.bit;
    read_bits(&b, sps->log2_max_poc_lsb);
    if (!read_bits(&b, 1)) {  // short_term_ref_pic_set_sps_flag
      if (short_term_rps(&b, sps, sps->st_rps_count, 1) < 0) goto done;
    } else if (sps->st_rps_count > 1) {
      read_bits(&b, ceil_log2((uint32_t)sps->st_rps_count));
    }
    if (sps->long_term_present) {
      uint32_t from_sps = sps->long_term_sps_count > 0 ? read_ue(&b) : 0;
      uint32_t pictures = read_ue(&b);
      if (from_sps > 32 || pictures > 32) goto done;
      for (uint32_t i = 0; i < from_sps + pictures && !b.over; i++) {
        if (i < from_sps) {
          if (sps->long_term_sps_count > 1) read_bits(&b, ceil_log2((uint32_t)sps->long_term_sps_count));
        } else {
          read_bits(&b, sps->log2_max_poc_lsb);
          read_bits(&b, 1);
        }
        if (read_bits(&b, 1)) read_ue(&b);  // delta_poc_msb_present, delta_poc_msb_cycle_lt
      }
    }
    if (sps->temporal_mvp) read_bits(&b, 1);
    cut_to = b.bit;
    if (sps->sao) {
      sao_luma = (int)read_bits(&b, 1);
      if (sps->chroma_array_type != 0) sao_chroma = (int)read_bits(&b, 1);
    }
    skip_se(&b);  // slice_qp_delta
    if (pps->slice_chroma_qp_offsets) {
      skip_se(&b);
      skip_se(&b);
    }
    if (pps->chroma_qp_offset_list) read_bits(&b, 1);
    int override = pps->deblocking_override ? (int)read_bits(&b, 1) : 0;
    if (override) {
      deblocking_disabled = (int)read_bits(&b, 1);
      if (!deblocking_disabled) {
        skip_se(&b);
        skip_se(&b);
      }
    }
    if (pps->loop_filter_across_slices && (sao_luma || sao_chroma || !deblocking_disabled)) read_bits(&b, 1);
  }
  if (pps->tiles || pps->entropy_sync) {
    uint32_t offsets = read_ue(&b);
    if (offsets > 4400) goto done;
    if (offsets > 0) {
      uint32_t length = read_ue(&b) + 1;
      if (length > 32) goto done;
      for (uint32_t i = 0; i < offsets && !b.over; i++) read_bits(&b, (int)length);
    }
  }
  if (pps->header_extension) {
    uint32_t length = read_ue(&b);
    if (length > 256) goto done;
    read_bits(&b, (int)length * 8);
  }
  // byte_alignment(): a one, then zeros to the byte's end.
  size_t one = b.bit;
  if (read_bits(&b, 1) != 1) goto done;
  while ((b.bit & 7) != 0) {
    if (read_bits(&b, 1) != 0) goto done;
  }
  if (b.over) goto done;
  size_t data_start = b.bit >> 3;
  // The header's bits up to the alignment, less the cut; then the alignment again.
  bits_out o = {header, 0};
  copy_bits(&o, rbsp, 0, cut_from);
  copy_bits(&o, rbsp, cut_to, one);
  put_bit(&o, 1);
  while ((o.bit & 7) != 0) put_bit(&o, 0);
  size_t header_bytes = o.bit >> 3;
  // The new RBSP: the header, then the slice data as it was.
  uint8_t *whole = malloc(header_bytes + (n - data_start) + 1);
  if (!whole) goto done;
  memcpy(whole, header, header_bytes);
  memcpy(whole + header_bytes, rbsp + data_start, n - data_start);
  out[0] = (uint8_t)((unit[0] & 0x81) | (20 << 1));  // IDR_N_LP, the layer id's top bit kept
  out[1] = unit[1];
  written = 2 + escape(whole, header_bytes + (n - data_start), out + 2);
  free(whole);
done:
  free(rbsp);
  free(header);
  return written;
}

int thumbd_hevc_keyframe_as_idr(thumbd_hevc_params *params, const uint8_t *packet, size_t size, int length_size,
                                uint8_t **out, size_t *out_size) {
  *out = NULL;
  *out_size = 0;
  if (length_size < 1 || length_size > 4) return 0;
  // First pass: in-band parameter sets, and whether any slice is a CRA.
  int cra = 0;
  size_t at = 0;
  while (at + (size_t)length_size <= size) {
    size_t length = 0;
    for (int i = 0; i < length_size; i++) length = length << 8 | packet[at + i];
    at += (size_t)length_size;
    if (length < 2 || length > size - at) return 0;
    int type = (packet[at] >> 1) & 0x3F;
    if (type == 33 || type == 34) thumbd_hevc_read_parameter_set(params, packet + at, length);
    if (type == 21) cra = 1;
    at += length;
  }
  if (!cra || at != size) return 0;
  // Each NAL unit may grow by its escapes: twice its size is room enough.
  uint8_t *rewritten = malloc(size * 2 + 64);
  if (!rewritten) return 0;
  size_t written = 0;
  at = 0;
  while (at < size) {
    size_t length = 0;
    for (int i = 0; i < length_size; i++) length = length << 8 | packet[at + i];
    at += (size_t)length_size;
    int type = (packet[at] >> 1) & 0x3F;
    uint8_t *body = rewritten + written + length_size;
    size_t body_size;
    if (type == 21) {
      body_size = cra_slice_as_idr(params, packet + at, length, body);
      if (body_size == 0) {
        free(rewritten);
        return -1;
      }
    } else {
      memcpy(body, packet + at, length);
      body_size = length;
    }
    if (length_size < 4 && body_size >> (8 * length_size)) {
      free(rewritten);
      return -1;
    }
    for (int i = 0; i < length_size; i++)
      rewritten[written + i] = (uint8_t)(body_size >> (8 * (length_size - 1 - i)));
    written += (size_t)length_size + body_size;
    at += length;
  }
  *out = rewritten;
  *out_size = written;
  return 1;
}
