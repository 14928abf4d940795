import CHEVCDecoder
import CLibHeif
import ThumbCore

/// HEIC and AVIF through libheif: the primary image (grids assembled by libheif), its transforms
/// (irot, imir, clap) applied by libheif, or an embedded thumbnail when one is large enough.
///
/// @unchecked Sendable is not claimed: one instance is used by one thread, for one job.
final class HEIFSource: SourceDecoder {
  /// Largest width or height libheif may allocate for (its own limit, checked before decoding; thumbd's
  /// --max-pixels is checked on the primary image's size as well).
  static let maximumDimension: Int32 = 32768

  let header: SourceHeader
  /// The coded size (`ispe`): what libheif decodes before cropping (`clap`) and turning. --max-pixels and
  /// the cost model go by this, not by the displayed size, so a huge picture cropped to a few pixels
  /// cannot slip through.
  let codedSize: PixelSize

  func estimate(variants: [VariantSpec], margin: Double, fileBytes: Int) -> MemoryEstimate {
    interleavedEstimate(variants: variants, margin: margin, fileBytes: fileBytes, coded: codedSize)
  }
  private let file: OwnedBytes
  private let context: OpaquePointer
  private let primary: OpaquePointer
  /// The primary picture as thumbd's own HEVC route decodes it (HEVCTiles), when it can; then `header`
  /// is in its stored orientation, before the turns, which the output stage applies.
  private let tiled: (item: HEVCItem, coding: YCbCrCoding)?
  var usesTiles: Bool { tiled != nil }
  /// Why an HEVC picture goes through libheif rather than thumbd's own route (said in --verbose).
  private(set) var libheifReason: String?

  /// libheif sets up its codec and colour-conversion tables on first use; done once, up front, because
  /// doing it lazily from several threads at once has crashed (libheif issues 950, 957).
  /// HEVC is decoded by libavcodec (CHEVCDecoder) where it is available: registered here, ahead of
  /// libde265.
  static let initialised: Bool = {
    guard heif_init(nil).code == heif_error_Ok else { return false }
    _ = thumbd_hevc_register()
    return true
  }()

  /// `tiles`: false sends every picture through libheif (the tests compare the two routes).
  init(_ data: [UInt8], format: ImageFormat, maxPixels: Int, tiles: Bool = true) throws(JobError) {
    _ = Self.initialised
    // Before libheif reads the file: its 1.15 recurses without end on such a loop (HEIFItemReferences).
    if let item = HEIFItemReferences.derivationLoop(in: data) {
      throw JobError(.corruptImage, "HEIF item \(item) is derived from itself (a loop of dimg references)")
    }
    file = OwnedBytes(data)
    guard let context = heif_context_alloc() else {
      throw JobError(.internalError, "heif_context_alloc failed")
    }
    self.context = context
    // deinit does not run when init throws: whatever this init made is freed here until it succeeds.
    var handle: OpaquePointer?
    var made = false
    defer {
      if !made {
        if let handle { heif_image_handle_release(handle) }
        heif_context_free(context)
      }
    }
    heif_context_set_maximum_image_size_limit(context, Self.maximumDimension)
    // A worker runs one decode per slot: libheif's own threads would oversubscribe the cores.
    heif_context_set_max_decoding_threads(context, 0)
    var failure = heif_context_read_from_memory_without_copy(context, file.pointer, file.count, nil)
    if let error = Self.jobError(failure, what: "HEIF container") { throw error }
    failure = heif_context_get_primary_image_handle(context, &handle)
    if let error = Self.jobError(failure, what: "HEIF primary image") { throw error }
    guard let handle else { throw JobError(.corruptImage, "HEIF file has no primary image") }
    primary = handle
    let size = PixelSize(
      width: Int(heif_image_handle_get_width(handle)), height: Int(heif_image_handle_get_height(handle)))
    let coded = PixelSize(
      width: Int(heif_image_handle_get_ispe_width(handle)),
      height: Int(heif_image_handle_get_ispe_height(handle)))
    guard size.width > 0, size.height > 0 else {
      throw JobError(.corruptImage, "HEIF primary image has no size")
    }
    guard coded.pixels <= maxPixels else {
      throw JobError(
        .tooLarge,
        "HEIF picture is coded at \(coded) (\(coded.pixels) pixels), over the limit of \(maxPixels)")
    }
    codedSize = PixelSize(width: max(coded.width, size.width), height: max(coded.height, size.height))
    let hasAlpha = heif_image_handle_has_alpha_channel(handle) != 0
    let item = Self.hevcItem(data, context: context)
    let color = Self.color(of: handle, stream: item?.signal)
    switch item.map(HEVCTiles.route(of:)) {
    case _? where color.hdr != nil:
      // The own route gives 8-bit planes: an HDR picture needs its deep samples.
      tiled = nil
      libheifReason = "HDR"
    case .own(let coding)? where tiles && !hasAlpha:
      if let item, item.displayedSize == size {
        tiled = (item, coding)
      } else {
        tiled = nil
        libheifReason = "libheif shows it at \(size), the route at \(item?.displayedSize ?? size)"
      }
    case .own?:
      tiled = nil
      libheifReason = hasAlpha ? "alpha" : "asked for"
    case .libheif(let reason)?:
      tiled = nil
      libheifReason = reason
    case nil:
      tiled = nil
    }
    header = SourceHeader(
      format: format,
      storedSize: tiled.map { $0.item.orientation.uprightSize(of: $0.item.displayedSize) } ?? size,
      orientation: tiled?.item.orientation ?? .up, hasAlpha: hasAlpha,
      color: color)
    made = true
  }

  /// The primary picture as an HEVC item (a coded picture or a grid of them), when it is one.
  private static func hevcItem(_ data: [UInt8], context: OpaquePointer) -> HEVCItem? {
    var id: heif_item_id = 0
    guard heif_context_get_primary_image_ID(context, &id).code == heif_error_Ok else { return nil }
    return HEVCItem.read(data, item: id)
  }

  deinit {
    heif_image_handle_release(primary)
    heif_context_free(context)
  }

  /// The margin does not apply: an embedded thumbnail serves when it has every pixel a variant needs.
  func decode(requiredScale: Double, margin: Double) throws(JobError) -> DecodedSource {
    if let tiled {
      // An embedded thumbnail only through libheif, which turns it upright: not with this route.
      // Reduced 2x or more, the loop filters' work does not survive the resampling (docs/imaging.md).
      let skip = requiredScale <= HEVCTiles.loopFilterScale
      let image = try HEVCTiles.decode(tiled.item, coding: tiled.coding, file: file, skipLoopFilters: skip)
      return DecodedSource(image: image, reduction: skip ? "1/1, loop filters skipped" : "1/1")
    }
    let via = libheifReason.map { " (libheif: \($0))" } ?? ""
    let full = header.storedSize
    let needed = PixelSize(
      width: Int((Double(full.width) * requiredScale).rounded(.up)),
      height: Int((Double(full.height) * requiredScale).rounded(.up)))
    var chosen = primary
    var thumbnail: OpaquePointer?
    // Only a real thumbnail: smaller than the picture, and of its shape (a thumbnail item without the
    // primary's crop or turn would come out stretched or sideways).
    let candidates = thumbnails().filter { candidate in
      let size = candidate.size
      let aspect = Double(size.width) / Double(size.height)
      let primary = Double(full.width) / Double(full.height)
      let fits = size.pixels < full.pixels && abs(aspect / primary - 1) < 0.01
      if !fits { heif_image_handle_release(candidate.handle) }
      return fits
    }
    if let pick = RenderPlanner.embeddedThumbnail(sizes: candidates.map(\.size), needed: needed) {
      thumbnail = candidates[pick].handle
      chosen = candidates[pick].handle
    }
    defer { for c in candidates { heif_image_handle_release(c.handle) } }

    let reduction = (thumbnail != nil ? "thumbnail \(chosenSize(chosen))" : "1/1") + via
    if let hdr = header.color.hdr {
      let image = try Self.decodeHDR(chosen, codedSize: codedSize, hdr: hdr)
      return DecodedSource(
        image: image, reduction: reduction + ", \(hdr.name) tone-mapped", color: .unspecified)
    }
    let image = try Self.decodePlanes(chosen, codedSize: codedSize)
    return DecodedSource(image: image, reduction: reduction)
  }

  private func chosenSize(_ handle: OpaquePointer) -> PixelSize {
    PixelSize(
      width: Int(heif_image_handle_get_width(handle)), height: Int(heif_image_handle_get_height(handle)))
  }

  /// An HDR picture decoded by libheif to deep RGB (10 or 12 bits, its matrix applied) and tone-mapped
  /// to sRGB (ToneMap, the curve of stills), the content's peak from its light-level box when it has
  /// one; alpha premultiplied as the planes expect.
  static func decodeHDR(
    _ handle: OpaquePointer, codedSize: PixelSize, hdr: HDRSignal
  ) throws(JobError) -> PlanarImage {
    let alpha = heif_image_handle_has_alpha_channel(handle) != 0
    return try decoded(handle, codedSize: codedSize, deep: true) {
      image, base, stride, size throws(JobError) in
      let bits = Int(heif_image_get_bits_per_pixel_range(image, heif_channel_interleaved))
      return hdr.toSDR(
        .rgb(base, stride: stride, size: size, bits: bits > 8 ? bits : 10, alpha: alpha), display: .sRGB,
        peakNits: peakNits(of: image))
    }
  }

  /// The content's peak from the light-level box (MaxCLL), else the mastering display's; nil when
  /// neither says.
  private static func peakNits(of image: OpaquePointer) -> Double? {
    if heif_image_has_content_light_level(image) != 0 {
      var level = heif_content_light_level()
      heif_image_get_content_light_level(image, &level)
      if level.max_content_light_level > 0 { return Double(level.max_content_light_level) }
    }
    guard heif_image_has_mastering_display_colour_volume(image) != 0 else { return nil }
    var coded = heif_mastering_display_colour_volume()
    var decoded = heif_decoded_mastering_display_colour_volume()
    heif_image_get_mastering_display_colour_volume(image, &coded)
    guard heif_mastering_display_colour_volume_decode(&coded, &decoded).code == heif_error_Ok,
      decoded.max_display_mastering_luminance > 0
    else { return nil }
    return decoded.max_display_mastering_luminance
  }

  /// The picture of `handle` as RGB(A) planes, converted by libheif: what HEVCTiles does not decode
  /// (AVIF, alpha, more than 8 bits, unusual matrices or crops, an embedded thumbnail).
  static func decodePlanes(_ handle: OpaquePointer, codedSize: PixelSize) throws(JobError) -> PlanarImage {
    let alpha = heif_image_handle_has_alpha_channel(handle) != 0
    return try decoded(handle, codedSize: codedSize, deep: false) { _, base, stride, size throws(JobError) in
      PlanarImage(
        interleaved: base.assumingMemoryBound(to: UInt8.self), size: size, stride: stride,
        model: alpha ? .rgba : .rgb,
        premultiplied: alpha && heif_image_handle_is_premultiplied_alpha(handle) != 0)
    }
  }

  /// Decodes `handle` to interleaved RGB, or RGBA when it has alpha (8 bits, or with `deep` its own 10 or
  /// 12 in 16-bit little-endian words), and hands the pixels to `body` while they live.
  private static func decoded<R>(
    _ handle: OpaquePointer, codedSize: PixelSize, deep: Bool,
    _ body: (OpaquePointer, UnsafeRawPointer, Int, PixelSize) throws(JobError) -> R
  ) throws(JobError) -> R {
    guard let options = heif_decoding_options_alloc() else {
      throw JobError(.internalError, "heif_decoding_options_alloc failed")
    }
    defer { heif_decoding_options_free(options) }
    options.pointee.convert_hdr_to_8bit = deep ? 0 : 1
    // One HEVC decoder context for every tile of a grid; no coded picture larger than the image, once
    // padded as libavcodec pads it (HEVCTiles.codedLimit).
    thumbd_hevc_begin(HEVCTiles.codedLimit(codedSize), 0)
    defer { thumbd_hevc_end() }
    let alpha = heif_image_handle_has_alpha_channel(handle) != 0
    let chroma =
      deep
      ? (alpha ? heif_chroma_interleaved_RRGGBBAA_LE : heif_chroma_interleaved_RRGGBB_LE)
      : (alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB)
    var image: OpaquePointer?
    let failure = heif_decode_image(handle, &image, heif_colorspace_RGB, chroma, options)
    if let error = jobError(failure, what: "HEIF image data") { throw error }
    guard let image else { throw JobError(.corruptImage, "libheif returned no image") }
    defer { heif_image_release(image) }
    var stride: Int32 = 0
    guard let base = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride) else {
      throw JobError(.corruptImage, "libheif returned no pixels")
    }
    let size = PixelSize(
      width: Int(heif_image_get_width(image, heif_channel_interleaved)),
      height: Int(heif_image_get_height(image, heif_channel_interleaved)))
    return try body(image, UnsafeRawPointer(base), Int(stride), size)
  }

  private func thumbnails() -> [(handle: OpaquePointer, size: PixelSize)] {
    let count = Int(heif_image_handle_get_number_of_thumbnails(primary))
    guard count > 0 else { return [] }
    var ids = [heif_item_id](repeating: 0, count: count)
    let n = Int(heif_image_handle_get_list_of_thumbnail_IDs(primary, &ids, Int32(count)))
    var result: [(OpaquePointer, PixelSize)] = []
    for id in ids.prefix(n) {
      var handle: OpaquePointer?
      let failure = heif_image_handle_get_thumbnail(primary, id, &handle)
      guard failure.code == heif_error_Ok, let handle else { continue }
      result.append(
        (
          handle,
          PixelSize(
            width: Int(heif_image_handle_get_width(handle)), height: Int(heif_image_handle_get_height(handle))
          )
        ))
    }
    return result
  }

  /// The colour box's description, else the HEVC stream's VUI primaries and transfer (`stream`), else
  /// none. PQ or HLG, by the nclx box or else the stream, is HDR (a photo with an SDR base and a gain
  /// map is SDR: its base is rendered).
  private static func color(of handle: OpaquePointer, stream: VideoSignal?) -> ColorDescription {
    let type = heif_image_handle_get_color_profile_type(handle)
    if type == heif_color_profile_type_prof || type == heif_color_profile_type_rICC {
      let size = heif_image_handle_get_raw_color_profile_size(handle)
      guard size > 0, size < 4 << 20 else { return .unspecified }
      var bytes = [UInt8](repeating: 0, count: size)
      let failure = heif_image_handle_get_raw_color_profile(handle, &bytes)
      return failure.code == heif_error_Ok ? .icc(bytes) : .unspecified
    }
    if type == heif_color_profile_type_nclx {
      var nclx: UnsafeMutablePointer<heif_color_profile_nclx>?
      let failure = heif_image_handle_get_nclx_color_profile(handle, &nclx)
      guard failure.code == heif_error_Ok, let nclx else { return .unspecified }
      defer { heif_nclx_color_profile_free(nclx) }
      let transfer = Int(nclx.pointee.transfer_characteristics.rawValue)
      let primaryCode = Int(nclx.pointee.color_primaries.rawValue)
      if let hdr = HDRSignal(h273: transfer, primaries: primaryCode) { return .hdr(hdr) }
      guard let primaries = ColorPrimaries(h273: primaryCode) else { return .unspecified }
      return .nclx(primaries, TransferCurve(h273: transfer))
    }
    if let stream, let hdr = HDRSignal(h273: stream.transfer, primaries: stream.primaries) {
      return .hdr(hdr)
    }
    if let stream, let primaries = ColorPrimaries(h273: stream.primaries) {
      return .nclx(primaries, TransferCurve(h273: stream.transfer))
    }
    return .unspecified
  }

  /// libheif's error as a job error, or nil for success. A file libheif cannot handle (an unsupported
  /// codec or feature) is `unsupported_format`; anything else wrong with the bytes is `corrupt_image`.
  static func jobError(_ failure: heif_error, what: String) -> JobError? {
    guard failure.code != heif_error_Ok else { return nil }
    let message = failure.message.map { String(cString: $0) } ?? "error \(failure.code.rawValue)"
    switch failure.code {
    case heif_error_Unsupported_filetype, heif_error_Unsupported_feature, heif_error_Decoder_plugin_error:
      return JobError(.unsupportedFormat, "\(what): \(message)")
    case heif_error_Memory_allocation_error:
      return JobError(.tooLarge, "\(what): \(message)")
    default:
      return JobError(.corruptImage, "\(what): \(message)")
    }
  }
}

extension HEIFSource: FormatDecoder {
  static let formats: Set<ImageFormat> = [.heif, .avif]

  static func open(
    _ original: OriginalBytes, format: ImageFormat, maxPixels: Int
  ) throws(JobError) -> HEIFSource {
    try HEIFSource(original.wholeFile(of: format), format: format, maxPixels: maxPixels)
  }
}
