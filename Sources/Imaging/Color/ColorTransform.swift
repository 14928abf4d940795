import CLCMS2
import Synchronization
import ThumbCore

/// One lcms2 transform from an embedded profile to sRGB. Owns the handle and deletes it once.
///
/// @unchecked Sendable: cmsDoTransform only reads the transform when it was made with
/// cmsFLAGS_NOCACHE (the one-pixel cache is the only state a transform mutates), so one instance serves
/// every thread at once.
final class ColorTransform: @unchecked Sendable {
  private let handle: cmsHTRANSFORM
  let inputChannels: Int
  let outputChannels: Int

  private init(handle: cmsHTRANSFORM, inputChannels: Int, outputChannels: Int) {
    self.handle = handle
    self.inputChannels = inputChannels
    self.outputChannels = outputChannels
  }

  deinit { cmsDeleteTransform(handle) }

  /// A transform from `profile` (an ICC profile's bytes) to sRGB for pixels of `model`, or nil when no
  /// conversion is needed or possible: the profile is sRGB already, cannot be parsed, or describes a
  /// different colour space than the pixels (then the pixels are taken as sRGB, as browsers do).
  static func toSRGB(iccProfile: [UInt8], model: ColorModel) -> ColorTransform? {
    let input: cmsHPROFILE? = iccProfile.withUnsafeBytes {
      cmsOpenProfileFromMem($0.baseAddress, cmsUInt32Number($0.count))
    }
    guard let input else { return nil }
    defer { cmsCloseProfile(input) }
    let space = cmsGetColorSpace(input)
    switch model {
    case .invertedCMYK:
      guard space == cmsSigCmykData else { return nil }
      return make(input: input, inputFormat: thumbd_lcms_cmyk8_inverted(), channels: 4, output: 3)
    case .rgb, .yCbCr:
      guard space == cmsSigRgbData, !isSRGB(input) else { return nil }
      return make(input: input, inputFormat: thumbd_lcms_rgb8(), channels: 3, output: 3)
    case .rgba:
      guard space == cmsSigRgbData, !isSRGB(input) else { return nil }
      return make(input: input, inputFormat: thumbd_lcms_rgba8(), channels: 4, output: 4)
    case .gray:
      // A grey profile's curve differs from sRGB's by little; grey outputs are written as grey.
      return nil
    }
  }

  /// An RGB transform from primaries and a transfer curve (HEIF's nclx colour description), or nil for
  /// sRGB/BT.709 primaries, which need none.
  static func toSRGB(primaries: ColorPrimaries, transfer: TransferCurve, alpha: Bool) -> ColorTransform? {
    guard primaries != .sRGB else { return nil }
    var white = cmsCIExyY(x: primaries.white.x, y: primaries.white.y, Y: 1)
    var chromaticities = cmsCIExyYTRIPLE(
      Red: cmsCIExyY(x: primaries.red.x, y: primaries.red.y, Y: 1),
      Green: cmsCIExyY(x: primaries.green.x, y: primaries.green.y, Y: 1),
      Blue: cmsCIExyY(x: primaries.blue.x, y: primaries.blue.y, Y: 1))
    // Parametric type 4: Y = (aX + b)^g for X >= d, else cX.
    var parameters: [cmsFloat64Number] =
      transfer == .bt709
      ? [1 / 0.45, 1 / 1.099, 0.099 / 1.099, 1 / 4.5, 0.081]
      : [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]
    guard let curve = cmsBuildParametricToneCurve(nil, 4, &parameters) else { return nil }
    defer { cmsFreeToneCurve(curve) }
    var curves: [OpaquePointer?] = [curve, curve, curve]
    guard let input = cmsCreateRGBProfile(&white, &chromaticities, &curves) else { return nil }
    defer { cmsCloseProfile(input) }
    let format = alpha ? thumbd_lcms_rgba8() : thumbd_lcms_rgb8()
    return make(input: input, inputFormat: format, channels: alpha ? 4 : 3, output: alpha ? 4 : 3)
  }

  private static func make(
    input: cmsHPROFILE, inputFormat: cmsUInt32Number, channels: Int, output: Int
  ) -> ColorTransform? {
    guard let srgb = cmsCreate_sRGBProfile() else { return nil }
    defer { cmsCloseProfile(srgb) }
    let outputFormat = output == 4 ? thumbd_lcms_rgba8() : thumbd_lcms_rgb8()
    var flags = cmsUInt32Number(cmsFLAGS_NOCACHE | cmsFLAGS_BLACKPOINTCOMPENSATION)
    if output == 4 && channels == 4 { flags |= cmsUInt32Number(cmsFLAGS_COPY_ALPHA) }
    guard
      let handle = cmsCreateTransform(
        input, inputFormat, srgb, outputFormat, cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC), flags)
    else { return nil }
    return ColorTransform(handle: handle, inputChannels: channels, outputChannels: output)
  }

  /// Whether the profile says it is sRGB: most camera and phone JPEGs embed the standard one, and
  /// converting sRGB to sRGB only costs time.
  private static func isSRGB(_ profile: cmsHPROFILE) -> Bool {
    var buffer = [CChar](repeating: 0, count: 256)
    let n = cmsGetProfileInfoASCII(profile, cmsInfoDescription, "en", "US", &buffer, 256)
    guard n > 0 else { return false }
    let description = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return description.contains("sRGB")
  }

  /// Converts an interleaved image of `inputChannels` to sRGB with `outputChannels`.
  func apply(_ image: PixelBuffer) -> PixelBuffer {
    precondition(image.channels == inputChannels)
    var out = PixelBuffer(width: image.width, height: image.height, channels: outputChannels)
    image.pixels.withUnsafeBufferPointer { src in
      out.pixels.withUnsafeMutableBufferPointer { dst in
        cmsDoTransform(handle, src.baseAddress, dst.baseAddress, cmsUInt32Number(image.width * image.height))
      }
    }
    return out
  }
}

/// Colour primaries of an nclx description (ITU-T H.273 numbering), with their chromaticities.
enum ColorPrimaries: Equatable {
  case sRGB, displayP3, dciP3, bt2020

  init?(h273 code: Int) {
    switch code {
    case 1, 2: self = .sRGB  // BT.709, or unspecified (taken as sRGB)
    case 9: self = .bt2020
    case 11: self = .dciP3
    case 12: self = .displayP3
    default: return nil
    }
  }

  typealias XY = (x: Double, y: Double)
  var red: XY {
    switch self {
    case .sRGB: return (0.64, 0.33)
    case .displayP3, .dciP3: return (0.680, 0.320)
    case .bt2020: return (0.708, 0.292)
    }
  }
  var green: XY {
    switch self {
    case .sRGB: return (0.30, 0.60)
    case .displayP3, .dciP3: return (0.265, 0.690)
    case .bt2020: return (0.170, 0.797)
    }
  }
  var blue: XY {
    switch self {
    case .sRGB: return (0.15, 0.06)
    case .displayP3, .dciP3: return (0.150, 0.060)
    case .bt2020: return (0.131, 0.046)
    }
  }
  var white: XY { self == .dciP3 ? (0.314, 0.351) : (0.3127, 0.3290) }
}

/// The SDR transfer curves thumbd tells apart. PQ and HLG are not among them: an HDR picture is made SDR
/// as it is decoded (ColorDescription.hdr, HDRSignal.toSDR).
enum TransferCurve: Equatable {
  case sRGB, bt709

  init(h273 code: Int) {
    self = [1, 6, 14, 15].contains(code) ? .bt709 : .sRGB
  }
}

/// Transforms by profile bytes or nclx description: a photo library has few distinct profiles (sRGB,
/// Display P3, Adobe RGB), and making a transform costs far more than applying it to a thumbnail.
final class ColorTransformCache: Sendable {
  static let shared = ColorTransformCache()

  private enum Key: Equatable {
    case icc([UInt8], ColorModel)
    case nclx(ColorPrimaries, TransferCurve, alpha: Bool)
  }

  private let entries = Mutex<[(key: Key, transform: ColorTransform?)]>([])
  private let capacity = 16

  /// Profiles larger than this are converted without being cached (a camera's or a phone's is a few
  /// KB; a JPEG can carry 16 MB of "profile", and sixteen of those would stay resident).
  static let largestCachedProfile = 256 * 1024

  func toSRGB(iccProfile: [UInt8], model: ColorModel) -> ColorTransform? {
    guard iccProfile.count <= Self.largestCachedProfile else {
      return ColorTransform.toSRGB(iccProfile: iccProfile, model: model)
    }
    return cached(.icc(iccProfile, model)) { ColorTransform.toSRGB(iccProfile: iccProfile, model: model) }
  }

  func toSRGB(primaries: ColorPrimaries, transfer: TransferCurve, alpha: Bool) -> ColorTransform? {
    cached(.nclx(primaries, transfer, alpha: alpha)) {
      ColorTransform.toSRGB(primaries: primaries, transfer: transfer, alpha: alpha)
    }
  }

  private func cached(_ key: Key, _ make: () -> ColorTransform?) -> ColorTransform? {
    if let hit = entries.withLock({ list in list.first { $0.key == key } }) { return hit.transform }
    let transform = make()
    entries.withLock { list in
      list.insert((key, transform), at: 0)
      if list.count > capacity { list.removeLast() }
    }
    return transform
  }
}
