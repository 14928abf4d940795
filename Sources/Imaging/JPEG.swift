public import ThumbCore

/// Whole-image JPEG decode and encode, for tools and tests that need pixels rather than variants.
public enum JPEG {
  /// Decodes at full size (or 1/denominator) to RGB, as stored: orientation is not applied. CMYK files
  /// come back as four inverted channels.
  public static func decode(_ data: [UInt8], denominator: Int = 1) throws(JobError) -> PixelBuffer {
    let decompressor = try TurboDecompressor()
    let result = data.withUnsafeBytes { bytes in
      Result { () throws(JobError) -> PixelBuffer in
        try decompressor.decode(bytes, header: try decompressor.header(bytes), denominator: denominator)
      }
    }
    return try result.get()
  }

  public static func encode(
    _ image: PixelBuffer, quality: Int, progressive: Bool = false
  ) throws(JobError) -> [UInt8] {
    try TurboCompressor().encode(image, quality: quality, progressive: progressive)
  }
}
