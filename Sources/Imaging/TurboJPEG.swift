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

  /// Decodes at 1/denominator of the full size (libjpeg's DCT scaling: the skipped coefficients are
  /// never computed). Returns RGB, converting CMYK/YCCK naively (ICC-aware conversion is a later step).
  func decode(
    _ data: UnsafeRawBufferPointer, header: Header, denominator: Int
  ) throws(JobError) -> PixelBuffer {
    let scaled = Self.scaledSize(header.size, denominator: denominator)
    let isCMYK =
      header.colorspace == Int32(TJCS_CMYK.rawValue) || header.colorspace == Int32(TJCS_YCCK.rawValue)
    let channels = isCMYK ? 4 : 3
    let format = isCMYK ? TJPF_CMYK : TJPF_RGB
    var pixels = [UInt8](repeating: 0, count: scaled.pixels * channels)
    let base = data.baseAddress?.assumingMemoryBound(to: UInt8.self)
    // LIMITSCANS refuses progressive files with absurd scan counts, a known CPU-exhaustion attack.
    let flags = TJFLAG_LIMITSCANS
    let status = pixels.withUnsafeMutableBufferPointer { out in
      tjDecompress2(
        handle, base, UInt(data.count), out.baseAddress, Int32(scaled.width), 0, Int32(scaled.height),
        Int32(format.rawValue), flags)
    }
    if status != 0 {
      // A warning (TJERR_WARNING) still produced an image. A truncated file is "damaged": its missing rows
      // would be served as grey, so it is refused. Other warnings (stray bytes between markers) are harmless.
      let message = lastError
      let isWarning = tjGetErrorCode(handle) == TJERR_WARNING.rawValue
      if !isWarning || message.contains("Premature end") {
        throw JobError(.corruptImage, "JPEG data: \(message)")
      }
    }
    var image = PixelBuffer(width: scaled.width, height: scaled.height, channels: channels, pixels: pixels)
    if isCMYK { image = image.rgbFromInvertedCMYK() }
    return image
  }

  /// The size libjpeg produces at 1/denominator: rounded up (TJSCALED).
  static func scaledSize(_ size: PixelSize, denominator d: Int) -> PixelSize {
    PixelSize(width: (size.width + d - 1) / d, height: (size.height + d - 1) / d)
  }

  private var lastError: String { String(cString: tjGetErrorStr2(handle)) }
}

/// Owns one TurboJPEG compressor handle; see TurboDecompressor for the threading rule.
final class TurboCompressor: @unchecked Sendable {
  private let handle: tjhandle

  init() throws(JobError) {
    guard let handle = tjInitCompress() else { throw JobError(.internalError, "tjInitCompress failed") }
    self.handle = handle
  }

  deinit { tjDestroy(handle) }

  /// Baseline (or, for tests and benchmarks, progressive) JPEG with 4:2:0 chroma and no metadata: TurboJPEG writes only a JFIF header, so no
  /// EXIF, XMP, GPS or comment from the original can reach the output.
  func encode(_ image: PixelBuffer, quality: Int, progressive: Bool = false) throws(JobError) -> [UInt8] {
    var output: UnsafeMutablePointer<UInt8>? = nil
    var length: UInt = 0
    let format = image.channels == 1 ? TJPF_GRAY : TJPF_RGB
    let subsampling = image.channels == 1 ? TJSAMP_GRAY : TJSAMP_420
    let status = image.pixels.withUnsafeBufferPointer { src in
      tjCompress2(
        handle, src.baseAddress, Int32(image.width), 0, Int32(image.height), Int32(format.rawValue), &output,
        &length, Int32(subsampling.rawValue), Int32(quality), progressive ? TJFLAG_PROGRESSIVE : 0)
    }
    defer { if let output { tjFree(output) } }
    guard status == 0, let output else {
      throw JobError(.internalError, "JPEG encode: \(String(cString: tjGetErrorStr2(handle)))")
    }
    return Array(UnsafeBufferPointer(start: output, count: Int(length)))
  }
}

extension PixelBuffer {
  /// Adobe-style CMYK JPEGs store inverted ink values; R = C*K/255 and so on undoes both.
  func rgbFromInvertedCMYK() -> PixelBuffer {
    precondition(channels == 4)
    var rgb = [UInt8](repeating: 0, count: width * height * 3)
    pixels.withUnsafeBufferPointer { src in
      rgb.withUnsafeMutableBufferPointer { dst in
        for i in 0..<(width * height) {
          let k = UInt32(src[i * 4 + 3])
          dst[i * 3] = UInt8(UInt32(src[i * 4]) * k / 255)
          dst[i * 3 + 1] = UInt8(UInt32(src[i * 4 + 1]) * k / 255)
          dst[i * 3 + 2] = UInt8(UInt32(src[i * 4 + 2]) * k / 255)
        }
      }
    }
    return PixelBuffer(width: width, height: height, channels: 3, pixels: rgb)
  }
}
