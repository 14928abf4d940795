/// What an HEVC sequence parameter set (SPS, ITU-T H.265 7.3.2.2) says about the pictures it governs:
/// their coded size and conformance window, chroma format, bit depths, and the colour description of
/// its VUI (E.2.1). HEIF takes range, matrix and primaries from an `nclx` box, else from this VUI, else
/// from the defaults the standard infers (ISO/IEC 23008-12; libheif does the same), so thumbd's own HEVC
/// route reads it before choosing how to turn the decoded samples into RGB.
///
/// The parser reads every field up to the VUI's colour description and stops there; a set it cannot
/// read to that point (cut short, out-of-range values) gives nil, never a crash.
public struct HEVCSequenceParameters: Sendable, Equatable {
  /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4.
  public var chromaFormat: Int
  public var separateColourPlanes: Bool
  /// The coded picture, in luma samples (a multiple of the minimum coding block).
  public var codedWidth: Int
  public var codedHeight: Int
  /// The conformance window's offsets in luma samples: what a decoder crops from each edge.
  public var window: (left: Int, right: Int, top: Int, bottom: Int)
  public var lumaBits: Int
  public var chromaBits: Int
  /// The VUI's colour description with H.265's inferences for what it leaves out: limited range, and
  /// 2 (unspecified) for primaries, transfer and matrix.
  public var signal: VideoSignal

  /// The picture a decoder outputs: the coded picture less the conformance window.
  public var outputWidth: Int { codedWidth - window.left - window.right }
  public var outputHeight: Int { codedHeight - window.top - window.bottom }

  public static func == (a: Self, b: Self) -> Bool {
    a.chromaFormat == b.chromaFormat && a.separateColourPlanes == b.separateColourPlanes
      && a.codedWidth == b.codedWidth && a.codedHeight == b.codedHeight && a.window == b.window
      && a.lumaBits == b.lumaBits && a.chromaBits == b.chromaBits && a.signal == b.signal
  }

  /// The SPS among `units` (NAL units, each behind a four-byte big-endian length, as HEVCItem keeps
  /// its parameter sets), or nil when there is none or it cannot be read.
  public static func find(in units: [UInt8]) -> HEVCSequenceParameters? {
    var at = 0
    while at + 4 <= units.count {
      let length = units[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) }
      at += 4
      guard length >= 2, length <= units.count - at else { return nil }
      let unit = units[at..<(at + length)]
      if (unit[unit.startIndex] >> 1) & 0x3F == 33 { return parse(unit) }
      at += length
    }
    return nil
  }

  /// Parses one SPS NAL unit (its two-byte header included, emulation prevention bytes not yet removed).
  public static func parse<C: Collection<UInt8>>(_ unit: C) -> HEVCSequenceParameters? {
    var bits = RBSPBits(Array(unit.dropFirst(2)))
    return try? read(&bits)
  }

  private static func read(_ r: inout RBSPBits) throws(RBSPBits.End) -> HEVCSequenceParameters {
    _ = try r.bits(4)  // sps_video_parameter_set_id
    let maxSubLayersMinus1 = try r.bits(3)
    _ = try r.bits(1)  // temporal_id_nesting
    try skipProfileTierLevel(&r, maxSubLayersMinus1: maxSubLayersMinus1)
    _ = try r.ue()  // sps_seq_parameter_set_id
    let chroma = try r.ue(max: 3)
    let separate = chroma == 3 ? try r.bits(1) == 1 : false
    let width = try r.ue(max: 1 << 16)
    let height = try r.ue(max: 1 << 16)
    var window = (left: 0, right: 0, top: 0, bottom: 0)
    if try r.bits(1) == 1 {
      // Offsets count chroma samples: SubWidthC and SubHeightC luma samples each.
      let subWidth = chroma == 1 || chroma == 2 ? 2 : 1
      let subHeight = chroma == 1 ? 2 : 1
      window.left = try r.ue(max: 1 << 16) * subWidth
      window.right = try r.ue(max: 1 << 16) * subWidth
      window.top = try r.ue(max: 1 << 16) * subHeight
      window.bottom = try r.ue(max: 1 << 16) * subHeight
      guard window.left + window.right < width, window.top + window.bottom < height else {
        throw RBSPBits.End()
      }
    }
    let lumaBits = try r.ue(max: 8) + 8
    let chromaBits = try r.ue(max: 8) + 8
    let log2MaxPocLsb = try r.ue(max: 12) + 4
    let orderingAll = try r.bits(1) == 1
    for _ in (orderingAll ? 0 : maxSubLayersMinus1)...maxSubLayersMinus1 {
      _ = try r.ue()
      _ = try r.ue()
      _ = try r.ue()
    }
    for _ in 0..<6 { _ = try r.ue() }  // coding and transform block sizes, hierarchy depths
    if try r.bits(1) == 1, try r.bits(1) == 1 { try skipScalingListData(&r) }
    _ = try r.bits(2)  // amp, sample_adaptive_offset
    if try r.bits(1) == 1 {  // pcm
      _ = try r.bits(8)
      _ = try r.ue()
      _ = try r.ue()
      _ = try r.bits(1)
    }
    let sets = try r.ue(max: 64)
    var deltaPocs: [Int] = []
    for index in 0..<sets {
      deltaPocs.append(try shortTermReferenceSet(&r, index: index, previous: deltaPocs))
    }
    if try r.bits(1) == 1 {  // long_term_ref_pics_present
      let count = try r.ue(max: 32)
      for _ in 0..<count { _ = try r.bits(log2MaxPocLsb + 1) }
    }
    _ = try r.bits(2)  // temporal_mvp, strong_intra_smoothing
    var signal = VideoSignal()
    if try r.bits(1) == 1 { signal = try videoSignal(&r) }
    return HEVCSequenceParameters(
      chromaFormat: chroma, separateColourPlanes: separate, codedWidth: width, codedHeight: height,
      window: window, lumaBits: lumaBits, chromaBits: chromaBits, signal: signal)
  }

  private static func skipProfileTierLevel(_ r: inout RBSPBits, maxSubLayersMinus1: Int) throws(RBSPBits.End)
  {
    try r.skip(96)  // general profile, 32 compatibility flags, 48 constraint bits, level
    var profilePresent: [Bool] = []
    var levelPresent: [Bool] = []
    for _ in 0..<maxSubLayersMinus1 {
      profilePresent.append(try r.bits(1) == 1)
      levelPresent.append(try r.bits(1) == 1)
    }
    if maxSubLayersMinus1 > 0 { try r.skip(2 * (8 - maxSubLayersMinus1)) }
    for i in 0..<maxSubLayersMinus1 {
      if profilePresent[i] { try r.skip(88) }
      if levelPresent[i] { try r.skip(8) }
    }
  }

  private static func skipScalingListData(_ r: inout RBSPBits) throws(RBSPBits.End) {
    for sizeID in 0..<4 {
      for _ in stride(from: 0, to: 6, by: sizeID == 3 ? 3 : 1) {
        if try r.bits(1) == 0 {
          _ = try r.ue()  // scaling_list_pred_matrix_id_delta
        } else {
          if sizeID > 1 { _ = try r.ue() }  // dc coefficient (se, read as its ue code)
          for _ in 0..<min(64, 1 << (4 + (sizeID << 1))) { _ = try r.ue() }
        }
      }
    }
  }

  /// st_ref_pic_set(index) as an SPS holds it; returns its NumDeltaPocs, which a later set predicted
  /// from it needs.
  private static func shortTermReferenceSet(
    _ r: inout RBSPBits, index: Int, previous: [Int]
  ) throws(RBSPBits.End) -> Int {
    if index != 0, try r.bits(1) == 1 {  // inter_ref_pic_set_prediction
      _ = try r.bits(1)  // delta_rps_sign
      _ = try r.ue()  // abs_delta_rps_minus1
      var count = 0
      for _ in 0...previous[index - 1] {
        let used = try r.bits(1) == 1
        let useDelta = used ? true : try r.bits(1) == 1
        if used || useDelta { count += 1 }
      }
      return count
    }
    let negative = try r.ue(max: 16)
    let positive = try r.ue(max: 16)
    for _ in 0..<(negative + positive) {
      _ = try r.ue()
      _ = try r.bits(1)
    }
    return negative + positive
  }

  private static func videoSignal(_ r: inout RBSPBits) throws(RBSPBits.End) -> VideoSignal {
    var signal = VideoSignal()
    if try r.bits(1) == 1, try r.bits(8) == 255 { try r.skip(32) }  // aspect ratio, extended SAR
    if try r.bits(1) == 1 { _ = try r.bits(1) }  // overscan
    if try r.bits(1) == 1 {  // video_signal_type_present
      _ = try r.bits(3)  // video_format
      signal.fullRange = try r.bits(1) == 1
      if try r.bits(1) == 1 {
        signal.primaries = try r.bits(8)
        signal.transfer = try r.bits(8)
        signal.matrix = try r.bits(8)
      }
    }
    return signal
  }
}

/// Range, primaries, transfer and matrix by their H.273 numbers; the defaults are H.265's inferences
/// when a stream says nothing (limited range, everything else unspecified).
public struct VideoSignal: Sendable, Equatable {
  public var fullRange = false
  public var primaries = 2
  public var transfer = 2
  public var matrix = 2

  public init(fullRange: Bool = false, primaries: Int = 2, transfer: Int = 2, matrix: Int = 2) {
    self.fullRange = fullRange
    self.primaries = primaries
    self.transfer = transfer
    self.matrix = matrix
  }
}

/// The bits of a NAL unit's payload (RBSP: emulation prevention bytes removed), read most significant
/// first; every read past the end throws.
struct RBSPBits {
  struct End: Error {}
  private var bytes: [UInt8] = []
  private var position = 0

  init(_ escaped: [UInt8]) {
    bytes.reserveCapacity(escaped.count)
    var zeros = 0
    for byte in escaped {
      // 0x000003: the 03 only keeps a start code from appearing in the payload.
      if zeros >= 2 && byte == 3 {
        zeros = 0
        continue
      }
      bytes.append(byte)
      zeros = byte == 0 ? zeros + 1 : 0
    }
  }

  mutating func bits(_ count: Int) throws(End) -> Int {
    guard count <= 32, position + count <= bytes.count * 8 else { throw End() }
    var value = 0
    for _ in 0..<count {
      value = value << 1 | Int(bytes[position >> 3] >> (7 - UInt8(position & 7)) & 1)
      position += 1
    }
    return value
  }

  mutating func skip(_ count: Int) throws(End) {
    guard position + count <= bytes.count * 8 else { throw End() }
    position += count
  }

  /// An unsigned Exp-Golomb code, refused when above `max`.
  mutating func ue(max: Int = 1 << 20) throws(End) -> Int {
    var zeros = 0
    while try bits(1) == 0 {
      zeros += 1
      guard zeros <= 31 else { throw End() }
    }
    let value = (1 << zeros) - 1 + (try bits(zeros))
    guard value <= max else { throw End() }
    return value
  }
}
