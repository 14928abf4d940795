import ThumbCore

/// How an HDR picture's samples stand for light: PQ or HLG, in its primaries, with its content's peak
/// when the header says. A decoder of such a picture decodes it deep (10 bits and more) and hands the
/// samples to `toSDR`, the one place HDR becomes SDR; the planes it returns are then sRGB.
struct HDRSignal: Sendable, Equatable {
  var transfer: ToneMap.Signal
  var primaries: ColorPrimaries
  /// The content's brightest, cd/m² (MaxCLL, the mastering display's peak, JPEG XL's intensity target);
  /// nil when the header does not say (a video frame or a decoded HEIF image may say later).
  var peakNits: Double?

  /// The signal of an H.273 transfer code (16 PQ, 18 HLG) in the primaries of an H.273 code (BT.2020
  /// when unknown); nil for an SDR transfer.
  init?(h273 transfer: Int, primaries: Int?, peakNits: Double? = nil) {
    guard let signal = ToneMap.Signal(h273: transfer) else { return nil }
    self.init(signal, primaries: primaries.flatMap(ColorPrimaries.init(h273:)) ?? .bt2020, peakNits: peakNits)
  }

  init(_ transfer: ToneMap.Signal, primaries: ColorPrimaries, peakNits: Double? = nil) {
    self.transfer = transfer
    self.primaries = primaries
    self.peakNits = peakNits
  }

  /// As logs and `--verbose` say it: "pq" or "hlg".
  var name: String { transfer == .pq ? "pq" : "hlg" }

  /// The picture as 8-bit planes, tone-mapped (ToneMap) for `display`: BT.1886 for a video's poster,
  /// whose SDR rendition is shown as its code values, sRGB for a still. `peakNits`: a peak learnt
  /// after the header (the decoded image's or frame's own), which wins over the header's.
  func toSDR(_ samples: DeepSamples, display: ToneMap.Display, peakNits later: Double? = nil) -> PlanarImage {
    let map = ToneMap(signal: transfer, primaries: primaries, peakNits: later ?? peakNits, display: display)
    switch samples {
    case .yCbCr(let planes, let size, let coding, let bits, let halved):
      return map.rgb(planes: planes, size: size, coding: coding, bits: bits, halved: halved)
    case .rgb(let base, let stride, let size, let bits, let alpha):
      return map.rgb(interleaved: base, stride: stride, size: size, bits: bits, alpha: alpha)
    }
  }
}

/// Deep samples a decoder holds while `HDRSignal.toSDR` reads them, in 16-bit little-endian words.
enum DeepSamples {
  /// Y'CbCr planes of `bits` bits (a video frame) and how they stand for R'G'B'; `halved`: each output
  /// pixel is the mean of 2x2 luma samples.
  case yCbCr(YCbCrPlanes16, size: PixelSize, coding: YCbCrCoding, bits: Int, halved: Bool)
  /// Interleaved R'G'B' or R'G'B'A of `bits` bits, `stride` bytes a row (libheif, libjxl).
  case rgb(UnsafeRawPointer, stride: Int, size: PixelSize, bits: Int, alpha: Bool)
}

extension ColorDescription {
  /// The HDR signal the header describes, when it describes one.
  var hdr: HDRSignal? {
    if case .hdr(let signal) = self { return signal }
    return nil
  }
}
