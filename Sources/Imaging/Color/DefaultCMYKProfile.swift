import Foundation

/// The profile a CMYK JPEG is taken to be in when it carries no usable one of its own: Ghostscript's
/// `default_cmyk.icc` (Artifex's SWOP profile: web offset on coated paper), read at run time from
/// Debian's `libgs-common` package, which scripts/install-deps.sh and the Dockerfile's runtime stage
/// install (a 317 kB package with no dependencies). CMYK files are nearly always press separations, and
/// any measured press profile is far closer to what was printed than the naive inversion
/// (R = C·K/255), which treats inks as ideal filters: full cyan comes out (0, 255, 255), where this
/// profile gives the (0, 174, 239) that the press prints.
public enum DefaultCMYKProfile {
  public static let path = "/usr/share/color/icc/ghostscript/default_cmyk.icc"

  /// The profile's bytes, read once; nil when the file is missing (the worker says so at start-up).
  static let bytes: [UInt8]? = FileManager.default.contents(atPath: path).map { [UInt8]($0) }

  /// Its transform to sRGB for libjpeg's inverted CMYK, made once per process on first use and shared
  /// by every thread. ColorTransform.toSRGB validates it: lcms2 must parse it, and it must describe
  /// CMYK. Nil when the file is missing or is not such a profile: the naive inversion is then the last
  /// resort.
  static let toSRGB: ColorTransform? = bytes.flatMap {
    ColorTransform.toSRGB(iccProfile: $0, model: .invertedCMYK)
  }

  /// Whether the profile file is there to read (the transform itself is made when the first CMYK file
  /// needs it).
  public static var isInstalled: Bool { bytes != nil }
}
