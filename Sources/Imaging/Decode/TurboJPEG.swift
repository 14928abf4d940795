import CTurboJPEG
import ThumbCore

/// Owns one TurboJPEG decompressor handle and frees it once, in deinit.
///
/// @unchecked Sendable: a handle keeps per-call state, so an instance must be used by one thread at a
/// time; callers create one per decode (creation costs microseconds) rather than sharing it.
final class TurboDecompressor: @unchecked Sendable {
  private let handle: tjhandle

  init() throws(JobError) {
    guard let handle = tjInitDecompress() else {
      throw JobError(.internalError, "tjInitDecompress failed")
    }
    self.handle = handle
  }

  deinit { tjDestroy(handle) }

  struct Header {
    var size: PixelSize
    var subsampling: Int32
    var colorspace: Int32

    var isCMYK: Bool {
      colorspace == Int32(TJCS_CMYK.rawValue) || colorspace == Int32(TJCS_YCCK.rawValue)
    }
  }

  func header(_ data: UnsafeRawBufferPointer) throws(JobError) -> Header {
    var width: Int32 = 0
    var height: Int32 = 0
    var subsampling: Int32 = 0
    var colorspace: Int32 = 0
    let base = data.baseAddress?.assumingMemoryBound(to: UInt8.self)
    guard tjDecompressHeader3(handle, base, UInt(data.count), &width, &height, &subsampling, &colorspace) == 0
    else { throw JobError(.corruptImage, "JPEG header: \(lastError)") }
    guard width > 0, height > 0 else { throw JobError(.corruptImage, "JPEG header has no size") }
    return Header(
      size: PixelSize(width: Int(width), height: Int(height)), subsampling: subsampling,
      colorspace: colorspace)
  }

  /// Decodes at 1/denominator of the full size (libjpeg's DCT scaling: the skipped coefficients are never
  /// computed) into planes, as stored: YCbCr straight from the IDCT, with no colour conversion and no
  /// chroma upsampling (the resampler takes chroma at its own size); grey as one plane; CMYK and RGB
  /// JPEGs, which have no YCbCr to keep, through an interleaved decode.
  ///
  /// `warned`: libjpeg warned (TruncatedJPEG judges whether the data ended early, and what arrived).
  func decodePlanes(
    _ data: UnsafeRawBufferPointer, header: Header, denominator: Int
  ) throws(JobError) -> (image: PlanarImage, warned: Bool) {
    let scaled = Self.scaledSize(header.size, denominator: denominator)
    if header.isCMYK || header.colorspace == Int32(TJCS_RGB.rawValue) {
      let (image, warned) = try decodeInterleaved(data, header: header, denominator: denominator)
      let planes = image.pixels.withUnsafeBufferPointer {
        PlanarImage(
          interleaved: $0.baseAddress!, size: image.size, stride: image.rowBytes,
          model: image.channels == 4 ? .invertedCMYK : .rgb)
      }
      return (planes, warned)
    }
    let gray = header.subsampling == Int32(TJSAMP_GRAY.rawValue)
    let componentCount = gray ? 1 : 3
    var planes: [Plane] = []
    var subsampling: [PlanarImage.Subsampling] = []
    for component in 0..<componentCount {
      let stride = Int(tjPlaneWidth(Int32(component), Int32(scaled.width), header.subsampling))
      let rows = Int(tjPlaneHeight(Int32(component), Int32(scaled.height), header.subsampling))
      guard stride > 0, rows > 0 else {
        throw JobError(.corruptImage, "JPEG has a chroma subsampling TurboJPEG cannot decode to planes")
      }
      // The plane's share of the picture: a subsampled plane spans `factor` full-size pixels per sample.
      let paddedWidth = Int(tjPlaneWidth(0, Int32(scaled.width), header.subsampling))
      let paddedHeight = Int(tjPlaneHeight(0, Int32(scaled.height), header.subsampling))
      let factor = PlanarImage.Subsampling(
        horizontal: paddedWidth / stride, vertical: paddedHeight / rows)
      let size = factor.planeSize(scaled)
      planes.append(Plane(width: size.width, height: size.height, stride: stride, rows: rows))
      subsampling.append(factor)
    }
    let strides = planes.map { Int32($0.stride) }
    let status = withMutablePlanePointers(&planes) { pointers in
      strides.withUnsafeBufferPointer { s in
        var p = pointers.map { Optional($0) }
        return p.withUnsafeMutableBufferPointer { pp in
          tjDecompressToYUVPlanes(
            handle, data.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt(data.count),
            pp.baseAddress, Int32(scaled.width), UnsafeMutablePointer(mutating: s.baseAddress),
            Int32(scaled.height), TJFLAG_LIMITSCANS)
        }
      }
    }
    let warned = try check(status)
    return (PlanarImage(model: gray ? .gray : .yCbCr, planes: planes, subsampling: subsampling), warned)
  }

  /// An interleaved decode: RGB, or CMYK (four channels, inverted as stored) for CMYK/YCCK files. A file
  /// that ends early is refused.
  func decode(
    _ data: UnsafeRawBufferPointer, header: Header, denominator: Int
  ) throws(JobError) -> PixelBuffer {
    let (image, warned) = try decodeInterleaved(data, header: header, denominator: denominator)
    if warned && warning.contains("Premature end") {
      throw JobError(.corruptImage, "JPEG data: the file ends early")
    }
    return image
  }

  private func decodeInterleaved(
    _ data: UnsafeRawBufferPointer, header: Header, denominator: Int
  ) throws(JobError) -> (PixelBuffer, warned: Bool) {
    let scaled = Self.scaledSize(header.size, denominator: denominator)
    let channels = header.isCMYK ? 4 : 3
    let format = header.isCMYK ? TJPF_CMYK : TJPF_RGB
    var pixels = [UInt8](repeating: 0, count: scaled.pixels * channels)
    let base = data.baseAddress?.assumingMemoryBound(to: UInt8.self)
    // LIMITSCANS refuses progressive files with absurd scan counts, a known CPU-exhaustion attack.
    let status = pixels.withUnsafeMutableBufferPointer { out in
      tjDecompress2(
        handle, base, UInt(data.count), out.baseAddress, Int32(scaled.width), 0, Int32(scaled.height),
        Int32(format.rawValue), TJFLAG_LIMITSCANS)
    }
    let truncated = try check(status)
    return (
      PixelBuffer(width: scaled.width, height: scaled.height, channels: channels, pixels: pixels), truncated
    )
  }

  /// An error throws; a warning (TJERR_WARNING) still produced an image. Returns whether libjpeg
  /// warned at all: the caller looks for rows that never arrived (TruncatedJPEG), since libjpeg keeps the
  /// text of the first warning only, and a file with stray bytes between markers (harmless) may also
  /// end early.
  private func check(_ status: Int32) throws(JobError) -> Bool {
    guard status != 0 else { return false }
    guard tjGetErrorCode(handle) == TJERR_WARNING.rawValue else {
      throw JobError(.corruptImage, "JPEG data: \(lastError)")
    }
    return true
  }

  /// The first warning's text, after a decode that warned.
  var warning: String { lastError }

  /// The size libjpeg produces at 1/denominator: rounded up (TJSCALED).
  static func scaledSize(_ size: PixelSize, denominator d: Int) -> PixelSize {
    PixelSize(width: (size.width + d - 1) / d, height: (size.height + d - 1) / d)
  }

  private var lastError: String { String(cString: tjGetErrorStr2(handle)) }
}
