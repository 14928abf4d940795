import CJXL
import ThumbCore

/// A JPEG XL original through libjxl 0.7: its first frame (an animation's too), with the orientation of
/// its codestream applied by the output stage (libjxl is told to keep the stored orientation, as a JPEG's
/// EXIF is handled), its colour by its ICC profile or encoded colour space, and PQ or HLG tone-mapped.
/// JPEG-reconstruction boxes are not asked for, so they are skipped. Single-threaded: a worker runs one
/// decode per core.
final class JXLSource: SourceDecoder {
  let header: SourceHeader
  private let bytes: OwnedBytes

  init(_ data: [UInt8], maxPixels: Int) throws(JobError) {
    bytes = OwnedBytes(data)
    guard let decoder = JxlDecoderCreate(nil) else {
      throw JobError(.internalError, "JxlDecoderCreate failed")
    }
    defer { JxlDecoderDestroy(decoder) }
    try Self.start(decoder, bytes, events: JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_COLOR_ENCODING.rawValue)
    var info = JxlBasicInfo()
    var color: ColorDescription = .unspecified
    events: while true {
      let status = JxlDecoderProcessInput(decoder)
      switch status {
      case JXL_DEC_BASIC_INFO:
        guard JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS else {
          throw JobError(.corruptImage, "JPEG XL header unreadable")
        }
        let size = PixelSize(width: Int(info.xsize), height: Int(info.ysize))
        guard size.width > 0, size.height > 0 else {
          throw JobError(.corruptImage, "JPEG XL image has no size")
        }
        guard size.pixels <= maxPixels else {
          throw JobError(.tooLarge, "a \(size) JPEG XL image is over the limit of \(maxPixels) pixels")
        }
      case JXL_DEC_COLOR_ENCODING:
        color = Self.color(of: decoder, peakNits: Double(info.intensity_target))
        break events
      case JXL_DEC_SUCCESS:
        break events
      case JXL_DEC_NEED_MORE_INPUT:
        throw JobError(.corruptImage, "JPEG XL file cut short before its image")
      default:
        throw JobError(.corruptImage, "JPEG XL header damaged")
      }
    }
    header = SourceHeader(
      format: .jxl, storedSize: PixelSize(width: Int(info.xsize), height: Int(info.ysize)),
      orientation: Orientation(rawValue: Int(info.orientation.rawValue)) ?? .up,
      hasAlpha: info.alpha_bits > 0,
      color: color)
  }

  /// A decoder given the whole file, keeping the stored orientation, subscribed to `events`.
  private static func start(_ decoder: OpaquePointer, _ bytes: OwnedBytes, events: UInt32) throws(JobError) {
    guard JxlDecoderSubscribeEvents(decoder, Int32(bitPattern: events)) == JXL_DEC_SUCCESS,
      JxlDecoderSetKeepOrientation(decoder, 1) == JXL_DEC_SUCCESS,
      JxlDecoderSetInput(decoder, bytes.pointer.assumingMemoryBound(to: UInt8.self), bytes.count)
        == JXL_DEC_SUCCESS
    else { throw JobError(.internalError, "libjxl refused its settings") }
    JxlDecoderCloseInput(decoder)
  }

  /// The pixels' colour space: PQ or HLG by the encoded profile (decoded to 16 bits and tone-mapped, the
  /// peak the image says it reaches, `intensity_target`), else the ICC profile of the decoded pixels
  /// (lcms2 turns it to sRGB; an sRGB one is left alone).
  private static func color(of decoder: OpaquePointer, peakNits: Double) -> ColorDescription {
    var encoding = JxlColorEncoding()
    if JxlDecoderGetColorAsEncodedProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &encoding)
      == JXL_DEC_SUCCESS,
      encoding.color_space == JXL_COLOR_SPACE_RGB || encoding.color_space == JXL_COLOR_SPACE_GRAY,
      let signal = ToneMap.Signal(h273: Int(encoding.transfer_function.rawValue))
    {
      // A grey image has no primaries (libjxl gives it as RGB, the three alike): neutral in any.
      let primaries =
        encoding.color_space == JXL_COLOR_SPACE_GRAY
        ? .sRGB : ColorPrimaries(h273: Int(encoding.primaries.rawValue)) ?? .bt2020
      return .hdr(HDRSignal(signal, primaries: primaries, peakNits: peakNits))
    }
    var size = 0
    guard JxlDecoderGetICCProfileSize(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &size) == JXL_DEC_SUCCESS,
      size > 0, size < 4 << 20
    else { return .unspecified }
    var profile = [UInt8](repeating: 0, count: size)
    guard
      JxlDecoderGetColorAsICCProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &profile, size)
        == JXL_DEC_SUCCESS
    else { return .unspecified }
    return .icc(profile)
  }

  /// The first frame at full size (libjxl 0.7 has no smaller decode of a whole image to offer here).
  func decode(requiredScale: Double, margin: Double) throws(JobError) -> DecodedSource {
    guard let decoder = JxlDecoderCreate(nil) else {
      throw JobError(.internalError, "JxlDecoderCreate failed")
    }
    defer { JxlDecoderDestroy(decoder) }
    try Self.start(decoder, bytes, events: JXL_DEC_FULL_IMAGE.rawValue)
    let size = header.storedSize
    let channels: UInt32 = header.hasAlpha ? 4 : 3
    let hdr = header.color.hdr
    let deep = hdr != nil
    var format = JxlPixelFormat(
      num_channels: channels, data_type: deep ? JXL_TYPE_UINT16 : JXL_TYPE_UINT8,
      endianness: JXL_LITTLE_ENDIAN,
      align: 0)
    var pixels: [UInt8] = []
    decoding: while true {
      let status = JxlDecoderProcessInput(decoder)
      switch status {
      case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
        var needed = 0
        guard JxlDecoderImageOutBufferSize(decoder, &format, &needed) == JXL_DEC_SUCCESS,
          needed == size.pixels * Int(channels) * (deep ? 2 : 1)
        else { throw JobError(.corruptImage, "JPEG XL frame does not match its header") }
        pixels = [UInt8](repeating: 0, count: needed)
        let set = pixels.withUnsafeMutableBytes {
          JxlDecoderSetImageOutBuffer(decoder, &format, $0.baseAddress, needed)
        }
        guard set == JXL_DEC_SUCCESS else {
          throw JobError(.internalError, "libjxl refused the output buffer")
        }
      case JXL_DEC_FULL_IMAGE, JXL_DEC_SUCCESS:
        break decoding
      case JXL_DEC_NEED_MORE_INPUT:
        throw JobError(.corruptImage, "JPEG XL file cut short")
      default:
        throw JobError(.corruptImage, "JPEG XL image data damaged")
      }
    }
    guard !pixels.isEmpty else { throw JobError(.corruptImage, "JPEG XL file has no frame") }
    if let hdr {
      let image = pixels.withUnsafeBytes {
        hdr.toSDR(
          .rgb(
            $0.baseAddress!, stride: size.width * Int(channels) * 2, size: size, bits: 16,
            alpha: header.hasAlpha),
          display: .sRGB)
      }
      return DecodedSource(image: image, reduction: "1/1, \(hdr.name) tone-mapped", color: .unspecified)
    }
    let image = PlanarImage(
      interleaved: PixelBuffer(
        width: size.width, height: size.height, channels: Int(channels), pixels: pixels))
    return DecodedSource(image: image, reduction: "1/1")
  }
}

extension JXLSource: FormatDecoder {
  static let formats: Set<ImageFormat> = [.jxl]

  static func open(
    _ original: OriginalBytes, format: ImageFormat, maxPixels: Int
  ) throws(JobError) -> JXLSource {
    try JXLSource(original.wholeFile(of: format), maxPixels: maxPixels)
  }
}
