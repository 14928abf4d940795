/// How a picture's YCbCr samples stand for RGB: the matrix (its red and blue luma weights) and whether
/// the samples use the full 0-255 range or video's 16-235 (luma) and 16-240 (chroma). JPEG is always
/// `jfif`; HEIF says which in its nclx colour box, or in nothing, when libheif takes full-range BT.601.
public struct YCbCrCoding: Sendable, Equatable {
  public var kr: Double
  public var kb: Double
  public var fullRange: Bool

  public static let jfif = YCbCrCoding(kr: 0.299, kb: 0.114, fullRange: true)

  public init(kr: Double, kb: Double, fullRange: Bool) {
    self.kr = kr
    self.kb = kb
    self.fullRange = fullRange
  }

  /// The coding of an H.273 `matrix_coefficients` value, or nil for matrices that are not a luma and two
  /// colour differences (identity/GBR, YCgCo, constant luminance, ICtCp). 2 (unspecified) is BT.601, as
  /// libheif takes it.
  public init?(h273 matrix: Int, fullRange: Bool) {
    switch matrix {
    case 1: self.init(kr: 0.2126, kb: 0.0722, fullRange: fullRange)
    case 2, 5, 6: self.init(kr: 0.299, kb: 0.114, fullRange: fullRange)
    case 4: self.init(kr: 0.30, kb: 0.11, fullRange: fullRange)
    case 7: self.init(kr: 0.212, kb: 0.087, fullRange: fullRange)
    case 9: self.init(kr: 0.2627, kb: 0.0593, fullRange: fullRange)
    default: return nil
    }
  }

  /// The conversion to RGB in 16.16 fixed point.
  var fixedPoint: YCbCrToRGB {
    // libjpeg's constants (JFIF's equations with 0.34414 and 0.71414): JPEG's colours stay as they were.
    if self == .jfif {
      return YCbCrToRGB(yOffset: 0, yScale: 65536, crToR: 91881, cbToG: 22554, crToG: 46802, cbToB: 116130)
    }
    let kg = 1 - kr - kb
    let yScale = fullRange ? 1.0 : 255.0 / 219.0
    let cScale = fullRange ? 1.0 : 255.0 / 224.0
    func q(_ v: Double) -> Int32 { Int32((v * 65536).rounded()) }
    return YCbCrToRGB(
      yOffset: fullRange ? 0 : 16, yScale: q(yScale), crToR: q(2 * (1 - kr) * cScale),
      cbToG: q(2 * kb * (1 - kb) / kg * cScale), crToG: q(2 * kr * (1 - kr) / kg * cScale),
      cbToB: q(2 * (1 - kb) * cScale))
  }
}

/// YCbCrCoding's conversion to RGB, in 16.16 fixed point.
struct YCbCrToRGB {
  var yOffset: Int32
  var yScale: Int32
  var crToR: Int32
  var cbToG: Int32
  var crToG: Int32
  var cbToB: Int32

  @inline(__always)
  func rgb(y: UInt8, cb: UInt8, cr: UInt8) -> (UInt8, UInt8, UInt8) {
    let yy = (Int32(y) - yOffset) * yScale + 32768
    let b = Int32(cb) - 128
    let r = Int32(cr) - 128
    return (
      Self.clampByte((yy + crToR * r) >> 16), Self.clampByte((yy - cbToG * b - crToG * r) >> 16),
      Self.clampByte((yy + cbToB * b) >> 16)
    )
  }

  @inline(__always)
  static func clampByte(_ v: Int32) -> UInt8 { UInt8(truncatingIfNeeded: v < 0 ? 0 : v > 255 ? 255 : v) }
}
