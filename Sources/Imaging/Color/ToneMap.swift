import Foundation
import ThumbCore

/// HDR to SDR: a picture coded with PQ (SMPTE ST 2084) or HLG (ARIB STD-B67), in BT.2020 or another
/// gamut, to 8-bit BT.709/sRGB RGB that looks like the SDR rendition a phone shows. One tone map serves
/// video posters and HDR stills.
///
/// The steps, per pixel (docs/imaging.md, "HDR"):
/// 1. Y'CbCr (10 or 12 bits) to non-linear R'G'B' by the picture's matrix.
/// 2. To display light relative to SDR reference white, which ITU-R BT.2408 puts at 203 cd/m²: PQ by
///    its EOTF; HLG by its inverse OETF and the OOTF of a 1,000 cd/m² display (system gamma 1.2), the
///    display BT.2408 assumes when it places HLG's reference white at 75% of the signal.
/// 3. The source primaries to BT.709's, in linear light; colours outside BT.709 are clipped.
/// 4. What lies above a knee below reference white is rolled off towards the content's peak (MaxCLL,
///    else the mastering display's peak, else 1,000 cd/m²), scaling the three channels together by
///    their largest: hue and saturation are kept, highlights keep their detail instead of clipping, and
///    everything under the knee (skin, most of a scene) is as the SDR grade has it.
/// 5. Encoded by the inverse of the transfer the SDR picture would be shown with: BT.1886 (gamma 2.4)
///    for video, whose SDR code values thumbd shows as they are, sRGB for stills.
struct ToneMap: Sendable {
  enum Signal: Sendable, Equatable {
    case pq, hlg

    /// H.273 transfer characteristics: 16 is PQ, 18 is HLG; nil for SDR transfers.
    init?(h273 code: Int) {
      switch code {
      case 16: self = .pq
      case 18: self = .hlg
      default: return nil
      }
    }
  }

  /// How the SDR result will be shown.
  enum Display: Sendable, Equatable {
    /// As SDR video's code values: BT.1886, a pure 2.4 power.
    case bt1886
    /// As a photograph: sRGB's curve.
    case sRGB
  }

  /// SDR reference white, cd/m² (ITU-R BT.2408).
  static let referenceWhite = 203.0
  /// HLG's nominal display peak, and PQ's peak when the content does not say.
  static let nominalPeak = 1000.0
  /// Linear light relative to reference white below which nothing changes.
  static let knee: Float = 0.8

  let signal: Signal
  /// The content's peak relative to reference white (at least 1).
  let peak: Float
  /// Non-linear code value (0...1, `inputSteps` steps) to linear light: relative to reference white
  /// for PQ, scene light (0...1) for HLG.
  private let toLinear: [Float]
  /// Linear light (0...1, `outputSteps` steps) to an 8-bit code value.
  private let encode: [UInt8]
  /// Source primaries to BT.709, linear, row by row; nil when the source is BT.709.
  private let gamut: [Float]?
  /// The source's luminance weights (HLG's OOTF is driven by scene luminance).
  private let luma: (r: Float, g: Float, b: Float)
  /// HLG: Y^(γ-1) over scene luminance 0...1 (`inputSteps` steps), times the display peak over
  /// reference white.
  private let hlgGain: [Float]

  static let inputSteps = 4096
  static let outputSteps = 65535

  init(signal: Signal, primaries: ColorPrimaries, peakNits: Double?, display: Display) {
    self.signal = signal
    let contentPeak =
      signal == .hlg
      ? Self.nominalPeak : min(10_000, peakNits.flatMap { $0 > 0 ? $0 : nil } ?? Self.nominalPeak)
    peak = Float(max(1, contentPeak / Self.referenceWhite))
    toLinear = signal == .pq ? Self.pqTable : Self.hlgTable
    hlgGain = Self.hlgGainTable
    encode = display == .bt1886 ? Self.bt1886Table : Self.sRGBTable
    let source = Self.rgbToXYZ(primaries)
    luma = (Float(source[3]), Float(source[4]), Float(source[5]))
    if primaries == .sRGB {
      gamut = nil
    } else {
      let toXYZ = source
      let fromXYZ = Self.inverse(Self.rgbToXYZ(.sRGB))
      gamut = Self.multiply(fromXYZ, toXYZ).map { Float($0) }
    }
  }

  // The tables are made once per process (a few milliseconds each), on first use.
  private static let pqTable = inputTable { Float(pqEOTF($0) * 10_000 / referenceWhite) }
  private static let hlgTable = inputTable { Float(hlgInverseOETF($0)) }
  private static let hlgGainTable = inputTable { Float(nominalPeak / referenceWhite * pow($0, 1.2 - 1)) }
  private static let bt1886Table = outputTable { pow($0, 1 / 2.4) }
  private static let sRGBTable = outputTable {
    $0 <= 0.003_130_8 ? 12.92 * $0 : 1.055 * pow($0, 1 / 2.4) - 0.055
  }

  private static func inputTable(_ f: (Double) -> Float) -> [Float] {
    (0...inputSteps).map { f(Double($0) / Double(inputSteps)) }
  }

  private static func outputTable(_ f: (Double) -> Double) -> [UInt8] {
    (0...outputSteps).map { UInt8((min(1, max(0, f(Double($0) / Double(outputSteps)))) * 255).rounded()) }
  }

  /// The tone curve on a pixel's largest channel: the identity to the knee, then a shoulder reaching 1
  /// at the content's peak with the identity's slope at the knee (an extended Reinhard curve).
  @inline(__always)
  func curve(_ m: Float) -> Float {
    let k = Self.knee
    guard m > k else { return m }
    guard peak > 1 else { return min(1, m) }
    let u = (m - k) / (1 - k)
    let top = (peak - k) / (1 - k)
    return k + (1 - k) * min(1, u * (1 + u / (top * top)) / (1 + u))
  }

  /// One pixel from normalised non-linear R'G'B' (0...1) to 8-bit output.
  @inline(__always)
  func map(_ r: Float, _ g: Float, _ b: Float) -> (UInt8, UInt8, UInt8) {
    let scale = Float(Self.inputSteps)
    @inline(__always) func linear(_ v: Float) -> Float {
      toLinear[Int(min(max(v, 0), 1) * scale + 0.5)]
    }
    var (lr, lg, lb) = (linear(r), linear(g), linear(b))
    if signal == .hlg {
      let y = min(1, max(0, luma.r * lr + luma.g * lg + luma.b * lb))
      let gain = hlgGain[Int(y * scale + 0.5)]
      lr *= gain
      lg *= gain
      lb *= gain
    }
    if let m = gamut {
      (lr, lg, lb) = (
        max(0, m[0] * lr + m[1] * lg + m[2] * lb), max(0, m[3] * lr + m[4] * lg + m[5] * lb),
        max(0, m[6] * lr + m[7] * lg + m[8] * lb)
      )
    }
    let top = max(lr, lg, lb)
    if top > Self.knee {
      let s = curve(top) / top
      lr *= s
      lg *= s
      lb *= s
    }
    let out = Float(Self.outputSteps)
    return (
      encode[Int(min(lr, 1) * out + 0.5)], encode[Int(min(lg, 1) * out + 0.5)],
      encode[Int(min(lb, 1) * out + 0.5)]
    )
  }

  /// SMPTE ST 2084's EOTF: a code value to cd/m² over 10,000.
  static func pqEOTF(_ e: Double) -> Double {
    let m1 = 2610.0 / 16384
    let m2 = 2523.0 / 4096 * 128
    let c1 = 3424.0 / 4096
    let c2 = 2413.0 / 4096 * 32
    let c3 = 2392.0 / 4096 * 32
    let p = pow(e, 1 / m2)
    return pow(max(p - c1, 0) / (c2 - c3 * p), 1 / m1)
  }

  /// ARIB STD-B67 (BT.2100 HLG): a code value to normalised scene light.
  static func hlgInverseOETF(_ e: Double) -> Double {
    let a = 0.178_832_77
    let b = 1 - 4 * a
    let c = 0.5 - a * log(4 * a)
    return e <= 0.5 ? e * e / 3 : (exp((e - c) / a) + b) / 12
  }

  /// The 3x3 matrix (row-major) from linear RGB in `primaries` to CIE XYZ.
  static func rgbToXYZ(_ primaries: ColorPrimaries) -> [Double] {
    func column(_ p: ColorPrimaries.XY) -> [Double] { [p.x / p.y, 1, (1 - p.x - p.y) / p.y] }
    let (r, g, b) = (column(primaries.red), column(primaries.green), column(primaries.blue))
    let m = [r[0], g[0], b[0], r[1], g[1], b[1], r[2], g[2], b[2]]
    let white = column(primaries.white)
    let s = multiply(inverse(m), white)
    return [
      m[0] * s[0], m[1] * s[1], m[2] * s[2], m[3] * s[0], m[4] * s[1], m[5] * s[2], m[6] * s[0], m[7] * s[1],
      m[8] * s[2],
    ]
  }

  /// a x b for 3x3 matrices, or a 3x3 matrix times a 3-vector.
  static func multiply(_ a: [Double], _ b: [Double]) -> [Double] {
    if b.count == 3 {
      return (0..<3).map { i in a[i * 3] * b[0] + a[i * 3 + 1] * b[1] + a[i * 3 + 2] * b[2] }
    }
    return (0..<9).map { k in
      let (i, j) = (k / 3, k % 3)
      return a[i * 3] * b[j] + a[i * 3 + 1] * b[3 + j] + a[i * 3 + 2] * b[6 + j]
    }
  }

  static func inverse(_ m: [Double]) -> [Double] {
    let det =
      m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2]
      * (m[3] * m[7] - m[4] * m[6])
    let cofactors = [
      m[4] * m[8] - m[5] * m[7], m[2] * m[7] - m[1] * m[8], m[1] * m[5] - m[2] * m[4],
      m[5] * m[6] - m[3] * m[8], m[0] * m[8] - m[2] * m[6], m[2] * m[3] - m[0] * m[5],
      m[3] * m[7] - m[4] * m[6], m[1] * m[6] - m[0] * m[7], m[0] * m[4] - m[1] * m[3],
    ]
    return cofactors.map { $0 / det }
  }
}

extension ToneMap {
  /// Deep Y'CbCr planes (samples of `bits` bits in 16-bit little-endian words) to an RGB image, the
  /// chroma taken at each pixel's site. With `halved`, each output pixel is the mean of 2x2 luma
  /// samples (an output reduced 2x or more loses nothing by it, and the per-pixel work is quartered).
  func rgb(
    planes: YCbCrPlanes16, size: PixelSize, coding: YCbCrCoding, bits: Int, halved: Bool
  ) -> PlanarImage {
    let out = halved ? PixelSize(width: max(1, size.width / 2), height: max(1, size.height / 2)) : size
    var red = Plane(width: out.width, height: out.height, zeroed: false)
    var green = Plane(width: out.width, height: out.height, zeroed: false)
    var blue = Plane(width: out.width, height: out.height, zeroed: false)
    let top = Float((1 << bits) - 1)
    let unit = top / 255  // one 8-bit step in this depth
    let yOffset = coding.fullRange ? 0 : 16 * unit
    let yRange = coding.fullRange ? top : 219 * unit
    let cOffset = 128 * unit
    let cRange = coding.fullRange ? top : 224 * unit
    let (kr, kb) = (Float(coding.kr), Float(coding.kb))
    let kg = 1 - kr - kb
    let (crToR, cbToB) = (2 * (1 - kr), 2 * (1 - kb))
    let (cbToG, crToG) = (2 * kb * (1 - kb) / kg, 2 * kr * (1 - kr) / kg)
    let step = halved ? 2 : 1
    red.withUnsafeMutableBufferPointer { r in
      green.withUnsafeMutableBufferPointer { g in
        blue.withUnsafeMutableBufferPointer { b in
          for oy in 0..<out.height {
            let y0 = oy * step
            let lumaRow = planes.luma + y0 * planes.lumaStride
            let lumaNext = planes.luma + min(y0 + 1, size.height - 1) * planes.lumaStride
            let cy = y0 >> planes.chromaShiftY
            let cbRow = planes.cb + cy * planes.chromaStride
            let crRow = planes.cr + cy * planes.chromaStride
            for ox in 0..<out.width {
              let x0 = ox * step
              var luma: Float
              if halved {
                let x1 = min(x0 + 1, size.width - 1)
                let sum =
                  Int(lumaRow.sample(x0)) + Int(lumaRow.sample(x1)) + Int(lumaNext.sample(x0))
                  + Int(lumaNext.sample(x1))
                luma = Float(sum) * 0.25
              } else {
                luma = Float(lumaRow.sample(x0))
              }
              let cx = x0 >> planes.chromaShiftX
              let yn = (luma - yOffset) / yRange
              let cbn = (Float(cbRow.sample(cx)) - cOffset) / cRange
              let crn = (Float(crRow.sample(cx)) - cOffset) / cRange
              let (pr, pg, pb) = map(yn + crToR * crn, yn - cbToG * cbn - crToG * crn, yn + cbToB * cbn)
              let i = oy * out.width + ox
              r[i] = pr
              g[i] = pg
              b[i] = pb
            }
          }
        }
      }
    }
    return PlanarImage(model: .rgb, planes: [red, green, blue])
  }
}

extension ToneMap {
  /// Deep interleaved R'G'B' (or R'G'B'A) samples of `bits` bits in 16-bit little-endian words, as
  /// libheif gives an HDR picture, to RGB (or RGBA, colour premultiplied by alpha) planes.
  func rgb(
    interleaved base: UnsafeRawPointer, stride: Int, size: PixelSize, bits: Int, alpha: Bool
  ) -> PlanarImage {
    let channels = alpha ? 4 : 3
    var planes = (0..<channels).map { _ in Plane(width: size.width, height: size.height, zeroed: false) }
    let scale = 1 / Float((1 << bits) - 1)
    let alphaScale = 255 / Float((1 << bits) - 1)
    withMutablePlanePointers(&planes) { pointers in
      for y in 0..<size.height {
        let row = base + y * stride
        for x in 0..<size.width {
          let at = x * channels * 2
          func sample(_ c: Int) -> Float {
            Float(UInt16(littleEndian: row.loadUnaligned(fromByteOffset: at + c * 2, as: UInt16.self)))
          }
          var (r, g, b) = map(sample(0) * scale, sample(1) * scale, sample(2) * scale)
          let i = y * size.width + x
          if alpha {
            let a = min(255, (sample(3) * alphaScale).rounded())
            pointers[3][i] = UInt8(a)
            (r, g, b) = (
              UInt8((Float(r) * a / 255).rounded()), UInt8((Float(g) * a / 255).rounded()),
              UInt8((Float(b) * a / 255).rounded())
            )
          }
          pointers[0][i] = r
          pointers[1][i] = g
          pointers[2][i] = b
        }
      }
    }
    return PlanarImage(model: alpha ? .rgba : .rgb, planes: planes)
  }
}

/// Where deep (16-bit word) Y'CbCr planes are, for ToneMap.
struct YCbCrPlanes16 {
  var luma: UnsafeRawPointer
  var lumaStride: Int
  var cb: UnsafeRawPointer
  var cr: UnsafeRawPointer
  var chromaStride: Int
  var chromaShiftX: Int
  var chromaShiftY: Int
}

extension UnsafeRawPointer {
  @inline(__always)
  fileprivate func sample(_ x: Int) -> UInt16 {
    UInt16(littleEndian: loadUnaligned(fromByteOffset: x * 2, as: UInt16.self))
  }
}
