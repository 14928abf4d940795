import CCMYKProfile
import CLCMS2

/// The profile a CMYK JPEG is taken to be in when it carries no usable one of its own: ISO Coated v2
/// 300% (basICColor, from the FOGRA39 data: offset on coated paper), compiled into the binary
/// (Sources/CCMYKProfile/README.md has its source and licence). CMYK files are nearly always press
/// separations, and FOGRA39 "coated" is what Photoshop and libvips assume too. The naive inversion
/// (R = C·K/255) treats inks as ideal filters: full cyan comes out (0, 255, 255), where this profile
/// gives the (0, 158, 227) that the press prints.
enum DefaultCMYKProfile {
  /// The profile's bytes, in the binary's read-only data (paged in only when a transform is made).
  static var bytes: UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(
      start: thumbd_default_cmyk_profile(), count: thumbd_default_cmyk_profile_size())
  }

  /// Its transform to sRGB for libjpeg's inverted CMYK, made once per process on first use (lcms2 takes
  /// about 0.1 s to turn the 1 MB profile into a lookup table) and shared by every thread.
  /// ColorTransform.toSRGB validates it: lcms2 must parse it, and it must describe CMYK. Nil only if
  /// the build embedded something else (ImagingTests checks that it does not); the naive inversion is
  /// then the last resort.
  static let toSRGB: ColorTransform? = ColorTransform.toSRGB(iccProfile: bytes, model: .invertedCMYK)
}
