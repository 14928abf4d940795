import CVideoDecoder
import Glibc
import ThumbCore

/// A video original (MP4, MOV, M4V, 3GP, Matroska, WebM; H.264, HEVC, MPEG-4 Part 2, VP8, VP9, AV1): its
/// poster, a keyframe chosen by `PosterChoice`, is the picture every variant is made from.
///
/// The header comes from the container (libavformat, reading the bytes in memory through
/// CVideoDecoder): the coded size, the pixel aspect ratio, the turn of the track's display matrix. The
/// stored size is the display size before the turn: a video with non-square pixels is stretched to it
/// as the poster is decoded.
final class VideoSource: SourceDecoder {
  let header: SourceHeader
  /// What the container says, for the job's record.
  let facts: VideoFacts
  private let bytes: OwnedBytes
  /// The file's size, and the ranges of it held (all of it, when read whole).
  private var totalBytes = 0
  private var held: [Range<Int>] = []
  /// The bytes held of the file (the cost model counts them).
  var heldBytes: Int { held.reduce(0) { $0 + $1.count } }
  private var video: OpaquePointer?
  /// The parts of the file handed to libavformat (into `bytes`), to open it again for a preview.
  private let parts: [thumbd_video_part]
  /// The poster's time in seconds, once decoded.
  private(set) var posterTime: Double?
  /// What decides the decode's memory (MemoryCostModel.video).
  let stream: VideoStreamShape
  private let info: thumbd_video_info
  /// How long looking for the poster may take before the job fails.
  private let budget: Duration
  /// The profile's poster time: the keyframe at or before it is the poster (nil: PosterChoice's).
  var posterAt: Double?
  /// What the poster's frame said, once decoded: its bits per sample and transfer characteristics (the
  /// container's parameters may not have them; an HEVC stream's preferred-transfer SEI overrides them).
  private var posterBits = 0
  private var posterTransfer = 0

  init(_ original: OriginalBytes, maxPixels: Int, budget: Duration = .seconds(30)) throws(JobError) {
    let file = VideoFile(original)
    bytes = file.storage
    self.budget = budget
    var info = thumbd_video_info()
    var handle: OpaquePointer?
    var message = [CChar](repeating: 0, count: 256)
    let parts = file.parts
    self.parts = parts
    let total = file.total
    totalBytes = total
    held = parts.map { Int($0.offset)..<Int($0.offset + $0.length) }
    let status = thumbd_video_open(
      parts, Int32(parts.count), Int64(total), &handle, &info, &message, message.count)
    let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    switch status {
    case 0: break
    case -1, -2, -3: throw JobError(.unsupportedFormat, text)
    default: throw JobError(.corruptImage, text)
    }
    video = handle
    self.info = info
    guard info.width > 0, info.height > 0 else {
      thumbd_video_close(handle)
      video = nil
      throw JobError(.corruptImage, "the video stream declares no picture size")
    }
    let coded = PixelSize(width: Int(info.width), height: Int(info.height))
    let display = Self.displaySize(coded: coded, sar: (Int(info.sar_num), Int(info.sar_den)))
    guard coded.pixels <= maxPixels, display.pixels <= maxPixels else {
      thumbd_video_close(handle)
      video = nil
      throw JobError(.tooLarge, "a \(display) video frame is over the limit of \(maxPixels) pixels")
    }
    let codec = withUnsafeBytes(of: info.codec) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    let container = withUnsafeBytes(of: info.container) {
      String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
    }
    stream = VideoStreamShape(
      codec: Self.codec(named: codec), coded: coded, bitDepth: Int(info.bit_depth),
      chromaShift: (Int(info.chroma_shift_x), Int(info.chroma_shift_y)), gray: info.gray != 0,
      keyframesRewritten: info.keyframes_rewritten != 0, standIns: Int(info.stand_in_limit),
      indexEntries: Int(info.index_entries), references: Int(info.references),
      reorder: Int(info.reorder_frames))
    facts = VideoFacts(
      duration: info.duration >= 0 ? info.duration : nil, codec: codec,
      container: Self.containerName(original.head, demuxer: container),
      codedSize: coded,
      bitDepth: Int(info.bit_depth),
      transfer: Int(info.color_trc),
      livePhotoID: withUnsafeBytes(of: info.live_photo_id) { LivePhotoIdentifier.identifier($0) })
    header = SourceHeader(
      format: .video, storedSize: display,
      orientation: Self.orientation(rotation: info.rotation, flipped: info.flipped != 0), hasAlpha: false,
      color: Self.color(of: info))
  }

  /// A whole file.
  convenience init(_ data: [UInt8], maxPixels: Int, budget: Duration = .seconds(30)) throws(JobError) {
    try self.init(.whole(data), maxPixels: maxPixels, budget: budget)
  }

  deinit { thumbd_video_close(video) }

  var media: MediaInfo? { videoFacts }
  var keyframesWanted: ([Range<Int>], PosterSearch)? { wanted }

  func searchPoster(at seconds: Double?, asking: PosterSearch?) {
    posterAt = seconds
    asksForKeyframes = asking != nil && totalBytes > heldBytes
    resuming = asking.flatMap { $0 == .start ? nil : $0 }
  }

  func estimate(variants: [VariantSpec], margin: Double, fileBytes: Int) -> MemoryEstimate {
    MemoryCostModel.video(
      stream: stream, stored: header.storedSize, orientation: header.orientation, heldBytes: heldBytes,
      toneMapped: header.color.hdr != nil, variants: variants)
  }

  static func codec(named name: String) -> VideoStreamShape.Codec {
    switch name {
    case "h264": .h264
    case "hevc": .hevc
    case "vp9": .vp9
    case "av1": .av1
    default: .other
    }
  }

  /// The container by the file's own brand (libavformat names its demuxer, which reads many).
  static func containerName(_ data: [UInt8], demuxer: String) -> String {
    if demuxer.hasPrefix("matroska") {
      // EBML's DocType is near the start: "webm" or "matroska".
      let head = Array(data.prefix(64))
      let webm =
        head.count >= 4 && (0...(head.count - 4)).contains { head[$0..<($0 + 4)].elementsEqual("webm".utf8) }
      return webm ? "webm" : "matroska"
    }
    guard data.count >= 12, data[4..<8].elementsEqual("ftyp".utf8) else { return "mov" }
    let brand = String(decoding: data[8..<12], as: UTF8.self)
    switch brand {
    case "qt  ": return "mov"
    case "M4V ", "M4VH", "M4VP": return "m4v"
    case let b where b.hasPrefix("3gp") || b.hasPrefix("3g2"): return "3gp"
    default: return "mp4"
    }
  }

  /// What the job's row and event say about the video: its poster's upright size.
  var videoFacts: MediaInfo {
    MediaInfo(
      durationSeconds: facts.duration.map { ($0 * 1000).rounded() / 1000 }, width: header.uprightSize.width,
      height: header.uprightSize.height, codec: facts.codec, container: facts.container,
      bitDepth: posterBits > 0 ? posterBits : facts.bitDepth > 0 ? facts.bitDepth : nil,
      dynamicRange: Self.dynamicRange(transfer: posterTransfer > 2 ? posterTransfer : facts.transfer),
      livePhotoID: facts.livePhotoID)
  }

  /// H.273 transfer characteristics: 16 is PQ (SMPTE ST 2084), 18 is HLG (ARIB STD-B67).
  static func dynamicRange(transfer: Int) -> String {
    transfer == 16 ? "pq" : transfer == 18 ? "hlg" : "sdr"
  }

  /// The coded size stretched by the pixel aspect ratio (wider, or taller when the pixels are tall).
  static func displaySize(coded: PixelSize, sar: (Int, Int)) -> PixelSize {
    guard sar.0 > 0, sar.1 > 0, sar.0 != sar.1 else { return coded }
    if sar.0 > sar.1 {
      return PixelSize(width: max(1, (coded.width * sar.0 + sar.1 / 2) / sar.1), height: coded.height)
    }
    return PixelSize(width: coded.width, height: max(1, (coded.height * sar.1 + sar.0 / 2) / sar.0))
  }

  /// The display matrix's counterclockwise turn, as the turn to apply to show the picture upright (a
  /// phone held upright records its frames sideways with -90°: turned 90° clockwise to show).
  static func orientation(rotation: Double, flipped: Bool) -> Orientation {
    let clockwise = ((Int((-rotation).rounded()) % 360) + 360) % 360
    let quarter = ((clockwise + 45) / 90) % 4
    switch (quarter, flipped) {
    case (0, false): return .up
    case (1, false): return .rotated90Clockwise
    case (2, false): return .rotated180
    case (3, false): return .rotated90CounterClockwise
    case (0, true): return .mirrored
    case (1, true): return .transposed
    case (2, true): return .mirroredVertically
    default: return .transverse
    }
  }

  /// The stream's pictures are HDR (PQ or HLG) by what the container says, when deeper than 8 bits (or
  /// of a depth it does not say): their poster leaves the decoder tone-mapped to RGB. A frame's own
  /// transfer overrides the container's (`picture(of:)`).
  static func color(of info: thumbd_video_info) -> ColorDescription {
    if info.bit_depth == 0 || info.bit_depth > 8,
      let hdr = HDRSignal(h273: Int(info.color_trc), primaries: Int(info.color_primaries))
    {
      return .hdr(hdr)
    }
    return color(primaries: Int(info.color_primaries))
  }

  /// SDR video is shown as its RGB read as sRGB, as browsers and players do with BT.709; wide-gamut
  /// primaries are converted.
  static func color(primaries: Int) -> ColorDescription {
    switch ColorPrimaries(h273: primaries) {
    case .some(let wide) where wide != .sRGB: .nclx(wide, .sRGB)
    default: .unspecified
    }
  }

  /// The poster search to go on with (PosterSearch), set before `decode` when an earlier round stopped
  /// for keyframes not held.
  var resuming: PosterSearch?
  /// Whether keyframes not held are asked for (`decode` then stops, with `wanted` set) rather than passed
  /// over. Set by a caller that can read them.
  var asksForKeyframes = false
  /// What the last `decode` stopped for, when it did (nil: it decoded the poster).
  private(set) var wanted: ([Range<Int>], PosterSearch)?
  /// Keyframes read for the poster at a time, when one is not held: it, and the next ones of the window
  /// (a fade from black spans a few).
  static let keyframesPerRead = 3

  func decode(requiredScale: Double, margin: Double) throws(JobError) -> DecodedSource {
    guard let video else { throw JobError(.internalError, "the video was closed") }
    wanted = nil
    let choice = PosterChoice()
    // Reduced 2x or more, the loop filters' work does not survive the resampling (docs/imaging.md).
    let skipLoopFilters = requiredScale <= HEVCTiles.loopFilterScale
    let (seconds, attoseconds) = budget.components
    let deadline = monotonicMilliseconds() + seconds * 1000 + attoseconds / 1_000_000_000_000_000
    // An HDR poster is tone-mapped as it is taken, at half size (2x2 luma means) when no output needs
    // more: still at least every output pixel, for a quarter of the work (ToneMap).
    let halveHDR = requiredScale <= 0.5
    // The best so far: its look and index entry, and its picture when this round decoded it.
    var bestLook = resuming?.best
    var bestEntry = Int32(resuming?.bestEntry ?? -1)
    var bestImage: PlanarImage?
    var frame = thumbd_video_frame()
    var message = [CChar](repeating: 0, count: 256)
    var lastError: JobError?
    thumbd_video_resume(video, Int32(resuming?.nextEntry ?? -1), asksForKeyframes ? 0 : 1)
    // With a poster time: the keyframe at or before it (the first when none is), nothing judged.
    if let posterAt, resuming == nil { thumbd_video_skip_to(video, posterAt) }
    func keep(_ look: PosterChoice.Look) throws(JobError) {
      // The copy it replaces goes first: one poster copy at a time (the cost model counts one).
      bestImage = nil
      bestImage = try picture(of: frame, halveHDR: halveHDR)
      bestLook = look
      var given: Int32 = -1
      _ = thumbd_video_position(video, &given)
      bestEntry = given
    }
    look: while true {
      let until = posterAt.map { bestLook == nil ? .infinity : $0 } ?? choice.window
      let status = thumbd_video_next_keyframe(
        video, until, skipLoopFilters ? 1 : 0, deadline, &frame, &message, message.count)
      if status == 0 { break }
      if status == 2 {
        let missing = missingKeyframes(until: until)
        guard !missing.isEmpty else {
          thumbd_video_resume(video, -1, 1)  // nothing it could read: passed over
          continue
        }
        let next = Int(thumbd_video_position(video, nil))
        wanted = (missing, PosterSearch(nextEntry: next, best: bestLook, bestEntry: Int(bestEntry)))
        // No poster yet: the caller reads `wanted` (Thumbnailer) before it looks at this picture.
        let none = PlanarImage(
          model: .gray, planes: [Plane(width: 1, height: 1, zeroed: true)], subsampling: [.none])
        return DecodedSource(image: none, reduction: "keyframes wanted")
      }
      if status < 0 {
        let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        lastError = JobError(
          status == -5 ? .timeout : status == -3 ? .unsupportedFormat : .corruptImage, text)
        break
      }
      let look = Self.look(at: frame)
      if let posterAt {
        try keep(look)
        if look.time < 0 || look.time >= posterAt - 0.001 { break look }
        continue
      }
      switch choice.verdict(on: look, bestSoFar: bestLook) {
      case .take:
        try keep(look)
        break look
      case .keepAndLookOn:
        try keep(look)
      case .lookOn:
        continue
      }
    }
    // The best was looked at in an earlier round (before keyframes were read): decoded again.
    if bestImage == nil, bestLook != nil, bestEntry >= 0 {
      thumbd_video_resume(video, bestEntry, 1)
      if thumbd_video_next_keyframe(
        video, .infinity, skipLoopFilters ? 1 : 0, deadline, &frame, &message, message.count) == 1
      {
        bestImage = try picture(of: frame, halveHDR: halveHDR)
        bestLook = Self.look(at: frame)
      }
    }
    let best = bestImage.flatMap { image in bestLook.map { (look: $0, image: image) } }
    // The poster is a copy: the decoder's pictures and tables go before the variants are made.
    thumbd_video_close(video)
    self.video = nil
    guard var chosen = best else {
      throw lastError ?? JobError(.corruptImage, "no frame of the video decodes")
    }
    let toneMapped = chosen.image.model == .rgb
    let halved = chosen.image.size.width < info.width
    let target =
      halved
      ? Self.displaySize(
        coded: chosen.image.size, sar: (Int(info.sar_num), Int(info.sar_den))) : header.storedSize
    if chosen.image.size != target {
      chosen.image = Self.stretched(chosen.image, to: target)
    }
    posterTime = max(0, chosen.look.time)
    if bestEntry >= 0 {
      finishedSearch = PosterSearch(nextEntry: Int(Int32.max), best: chosen.look, bestEntry: Int(bestEntry))
    }
    let time = chosen.look.time >= 0 ? "\(Int((chosen.look.time * 1000).rounded())) ms" : "unknown time"
    var reduction = "keyframe at \(time)" + (skipLoopFilters ? ", loop filters skipped" : "")
    if toneMapped { reduction += ", \(VideoSource.dynamicRange(transfer: posterTransfer)) tone-mapped" }
    if halved { reduction += ", 1/2" }
    // Tone-mapped, the planes are sRGB; else they are as the stream's primaries say, even when the
    // container promised HDR.
    return DecodedSource(
      image: chosen.image, reduction: reduction,
      color: toneMapped ? .unspecified : Self.color(primaries: Int(info.color_primaries)))
  }

  /// The parts of the file a preview of [from, until] seconds decodes that are not held (a video read
  /// by ranges), joined where less than `joinGap` bytes apart; empty when all are held or the container
  /// has no index to say (the preview then shows what is held).
  func missingSamples(from: Double, until: Double) -> [Range<Int>] {
    guard totalBytes > heldBytes else { return [] }
    var message = [CChar](repeating: 0, count: 256)
    if video == nil {
      var info = thumbd_video_info()
      var handle: OpaquePointer?
      guard
        thumbd_video_open(
          parts, Int32(parts.count), Int64(totalBytes), &handle, &info, &message, message.count)
          == 0
      else { return [] }
      video = handle
    }
    let max = 65_536
    var offsets = [Int64](repeating: 0, count: max)
    var lengths = [Int64](repeating: 0, count: max)
    let count = Int(thumbd_video_samples(video, from, until, &offsets, &lengths, Int32(max)))
    guard count > 0 else { return [] }
    var missing: [Range<Int>] = []
    for i in 0..<count {
      let start = Int(offsets[i])
      let end = start + Int(lengths[i])
      guard start >= 0, end <= totalBytes else { continue }
      let range = start..<end
      if held.contains(where: { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound }) {
        continue
      }
      if let last = missing.last, range.lowerBound - last.upperBound < Self.joinGap {
        missing[missing.count - 1] = last.lowerBound..<range.upperBound
      } else {
        missing.append(range)
      }
    }
    return missing
  }

  /// Samples this close are read in one request with what lies between (another track's samples).
  static let joinGap = 64 * 1024

  /// The poster search, finished: its next round decodes the chosen keyframe again and looks at no
  /// other (a round that read a preview's samples). Nil before the poster is decoded.
  private(set) var finishedSearch: PosterSearch?

  /// Starts decoding every frame from the keyframe at or before `seconds` (a preview), opening the
  /// file again when the poster's decode closed it.
  func play(from seconds: Double) throws(JobError) {
    var message = [CChar](repeating: 0, count: 256)
    if video == nil {
      var info = thumbd_video_info()
      var handle: OpaquePointer?
      let status = thumbd_video_open(
        parts, Int32(parts.count), Int64(totalBytes), &handle, &info, &message, message.count)
      guard status == 0 else {
        throw JobError(.corruptImage, "the video does not open again for its preview")
      }
      video = handle
    }
    guard thumbd_video_play_from(video, seconds, &message, message.count) == 0 else {
      throw JobError(.corruptImage, Self.text(message))
    }
  }

  /// After `play`: the next frame shown at or after `wanted` seconds and at most `until`, as the
  /// picture variants are made from, and its time; nil when none is left. Frames shown before `wanted`
  /// that nothing refers to are not decoded.
  func nextFrame(
    wanted: Double, until: Double, skipLoopFilters: Bool, referencesOnly: Bool, halveHDR: Bool,
    deadline: Int64
  ) throws(JobError) -> (image: PlanarImage, time: Double, toneMapped: Bool)? {
    guard let video else { throw JobError(.internalError, "the video was closed") }
    var frame = thumbd_video_frame()
    var message = [CChar](repeating: 0, count: 256)
    while true {
      let status = thumbd_video_next_frame(
        video, wanted, until, skipLoopFilters ? 1 : 0, referencesOnly ? 1 : 0, deadline, &frame, &message,
        message.count)
      if status == 0 { return nil }
      if status < 0 {
        throw JobError(
          status == -5 ? .timeout : status == -3 ? .unsupportedFormat : .corruptImage, Self.text(message))
      }
      if frame.time >= 0 && frame.time < wanted - 0.005 { continue }
      var image = try picture(of: frame, halveHDR: halveHDR, halveSDR: halveHDR)
      let toneMapped = image.model == .rgb
      let target =
        image.size.width < info.width
        ? Self.displaySize(coded: image.size, sar: (Int(info.sar_num), Int(info.sar_den))) : header.storedSize
      if image.size != target { image = Self.stretched(image, to: target) }
      return (image, max(0, frame.time), toneMapped)
    }
  }

  /// Deadlines on the monotonic clock, as the decoder reads them.
  func deadline(after budget: Duration) -> Int64 {
    let (seconds, attoseconds) = budget.components
    return monotonicMilliseconds() + seconds * 1000 + attoseconds / 1_000_000_000_000_000
  }

  static func text(_ message: [CChar]) -> String {
    String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// The colours of a frame that is not tone-mapped: its RGB read as sRGB, or its wide primaries.
  var sdrColor: ColorDescription { Self.color(primaries: Int(info.color_primaries)) }

  /// How long a preview may take to decode: the poster search's budget.
  var decodeBudget: Duration { budget }

  /// The keyframes of the poster window up to `until` whose bytes are not held, the first few.
  private func missingKeyframes(until: Double) -> [Range<Int>] {
    let window = until.isFinite ? until : PosterChoice().window
    let places = VideoRangePlanner.keyframes(of: video, until: window, total: totalBytes, max: 512) ?? []
    let missing = places.filter { place in
      !held.contains { $0.lowerBound <= place.lowerBound && place.upperBound <= $0.upperBound }
    }
    return Array(missing.prefix(Self.keyframesPerRead))
  }

  private func monotonicMilliseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
  }

  /// Luma samples on a grid of about 64x36 over the frame, in 0...1.
  static func look(at frame: thumbd_video_frame) -> PosterChoice.Look {
    let (width, height) = (Int(frame.width), Int(frame.height))
    let columns = min(64, width)
    let rows = min(36, height)
    let limited = frame.color_range != 2  // AVCOL_RANGE_JPEG = 2: full range
    let top = Double((1 << Int(frame.bits)) - 1)
    var samples: [Double] = []
    samples.reserveCapacity(columns * rows)
    let base = frame.data.0!
    let stride = Int(frame.linesize.0)
    for r in 0..<rows {
      let y = (r * 2 + 1) * height / (rows * 2)
      for c in 0..<columns {
        let x = (c * 2 + 1) * width / (columns * 2)
        let raw: Double
        if frame.bits > 8 {
          let p = UnsafeRawPointer(base + y * stride + x * 2)
          raw = Double(UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)))
        } else {
          raw = Double(base[y * stride + x])
        }
        var v = raw / top
        if limited { v = (v * 255 - 16) / 219 }
        samples.append(min(1, max(0, v)))
      }
    }
    return PosterChoice.Look(time: frame.time, samples: samples)
  }

  /// The frame as the picture the outputs are made from: an HDR frame (PQ or HLG, by the frame's own
  /// transfer, else the container's) tone-mapped to RGB, any other as its 8-bit planes.
  private func picture(
    of frame: thumbd_video_frame, halveHDR: Bool, halveSDR: Bool = false
  ) throws(JobError) -> PlanarImage {
    let transfer = frame.color_trc != 2 ? Int(frame.color_trc) : Int(info.color_trc)
    posterBits = Int(frame.bits)
    posterTransfer = transfer
    let primaries = frame.color_primaries != 2 ? Int(frame.color_primaries) : Int(info.color_primaries)
    guard let hdr = HDRSignal(h273: transfer, primaries: primaries), frame.bits > 8, frame.gray == 0,
      let luma = frame.data.0, let cb = frame.data.1, let cr = frame.data.2
    else {
      return halveSDR && frame.width >= 2 && frame.height >= 2
        ? try Self.halvedPlanes(of: frame) : try Self.planes(of: frame)
    }
    let size = PixelSize(width: Int(frame.width), height: Int(frame.height))
    let planes = YCbCrPlanes16(
      luma: UnsafeRawPointer(luma), lumaStride: Int(frame.linesize.0), cb: UnsafeRawPointer(cb),
      cr: UnsafeRawPointer(cr), chromaStride: Int(frame.linesize.1), chromaShiftX: Int(frame.chroma_shift_x),
      chromaShiftY: Int(frame.chroma_shift_y))
    return hdr.toSDR(
      .yCbCr(
        planes, size: size, coding: Self.coding(of: frame), bits: Int(frame.bits),
        halved: halveHDR && size.width >= 2 && size.height >= 2),
      display: .bt1886, peakNits: frame.peak_nits > 0 ? frame.peak_nits : nil)
  }

  /// How the frame's Y'CbCr stand for RGB. Unspecified matrices: BT.709 from HD up, BT.601 below, as
  /// players assume.
  static func coding(of frame: thumbd_video_frame) -> YCbCrCoding {
    let fullRange = frame.color_range == 2
    let matrix = frame.colorspace == 2 ? (frame.height >= 720 ? 1 : 6) : Int(frame.colorspace)
    return YCbCrCoding(h273: matrix, fullRange: fullRange)
      ?? YCbCrCoding(kr: 0.2126, kb: 0.0722, fullRange: fullRange)
  }

  /// The frame's planes as 8-bit planes (deeper samples rounded to 8 bits).
  static func planes(of frame: thumbd_video_frame) throws(JobError) -> PlanarImage {
    let shift = Int(frame.bits) - 8
    return try eachPlane(of: frame, halved: false) { source, stride, _, plane in
      let outStride = plane.stride
      let size = PixelSize(width: plane.width, height: plane.height)
      plane.withUnsafeMutableBufferPointer { destination in
        for y in 0..<size.height {
          let row = source + y * stride
          let out = destination.baseAddress! + y * outStride
          if shift <= 0 {
            memcpy(out, row, size.width)
          } else {
            let wide = UnsafeRawPointer(row)
            let half = 1 << (shift - 1)
            for x in 0..<size.width {
              let v = Int(UInt16(littleEndian: wide.loadUnaligned(fromByteOffset: x * 2, as: UInt16.self)))
              out[x] = UInt8(min(255, (v + half) >> shift))
            }
          }
        }
      }
    }
  }

  /// The frame's planes at half size, each output sample the mean of 2x2 (deeper samples rounded to 8
  /// bits in the same step): for outputs reduced 2x or more, a quarter of the copy and of the
  /// resampling that follows, for a preview's many frames. An odd last row or column is dropped.
  static func halvedPlanes(of frame: thumbd_video_frame) throws(JobError) -> PlanarImage {
    let shift = max(0, Int(frame.bits) - 8) + 2
    let wide = frame.bits > 8
    let half = 1 << (shift - 1)
    return try eachPlane(of: frame, halved: true) { source, stride, sourceSize, plane in
      // The source plane must hold 2x2 samples for every output one.
      let width = min(plane.width, sourceSize.width / 2)
      let height = min(plane.height, sourceSize.height / 2)
      let outStride = plane.stride
      plane.withUnsafeMutableBufferPointer { destination in
        for y in 0..<height {
          let top = UnsafeRawPointer(source + 2 * y * stride)
          let bottom = top + stride
          let out = destination.baseAddress! + y * outStride
          if wide {
            for x in 0..<width {
              let a = Int(UInt16(littleEndian: top.loadUnaligned(fromByteOffset: x * 4, as: UInt16.self)))
              let b = Int(UInt16(littleEndian: top.loadUnaligned(fromByteOffset: x * 4 + 2, as: UInt16.self)))
              let c = Int(UInt16(littleEndian: bottom.loadUnaligned(fromByteOffset: x * 4, as: UInt16.self)))
              let d = Int(
                UInt16(littleEndian: bottom.loadUnaligned(fromByteOffset: x * 4 + 2, as: UInt16.self)))
              out[x] = UInt8(truncatingIfNeeded: min(255, (a + b + c + d + half) >> shift))
            }
          } else {
            let t = top.assumingMemoryBound(to: UInt8.self)
            let u = bottom.assumingMemoryBound(to: UInt8.self)
            for x in 0..<width {
              let sum = Int(t[2 * x]) + Int(t[2 * x + 1]) + Int(u[2 * x]) + Int(u[2 * x + 1])
              out[x] = UInt8(truncatingIfNeeded: (sum + 2) >> 2)
            }
          }
        }
      }
    }
  }

  /// The frame's planes made one by one by `fill` (each given its source rows and stride, its size in
  /// the frame, and a plane of the output's size, zeroed, to fill), as one image in the frame's coding.
  private static func eachPlane(
    of frame: thumbd_video_frame, halved: Bool,
    _ fill: (UnsafePointer<UInt8>, Int, PixelSize, inout Plane) -> Void
  ) throws(JobError) -> PlanarImage {
    let full = PixelSize(width: Int(frame.width), height: Int(frame.height))
    let size = halved ? PixelSize(width: full.width / 2, height: full.height / 2) : full
    let gray = frame.gray != 0
    let sub = PlanarImage.Subsampling(
      horizontal: 1 << Int(frame.chroma_shift_x), vertical: 1 << Int(frame.chroma_shift_y))
    let subsampling: [PlanarImage.Subsampling] = gray ? [.none] : [.none, sub, sub]
    let sources = [frame.data.0, frame.data.1, frame.data.2]
    let strides = [frame.linesize.0, frame.linesize.1, frame.linesize.2]
    var planes: [Plane] = []
    for (index, factors) in subsampling.enumerated() {
      guard let source = sources[index] else { throw JobError(.corruptImage, "a video frame lacks a plane") }
      let planeSize = factors.planeSize(size)
      var plane = Plane(width: planeSize.width, height: planeSize.height, zeroed: halved)
      fill(UnsafePointer(source), Int(strides[index]), factors.planeSize(full), &plane)
      planes.append(plane)
    }
    var image = PlanarImage(model: gray ? .gray : .yCbCr, planes: planes, subsampling: subsampling)
    image.yCbCrCoding = coding(of: frame)
    return image
  }

  /// The planes resampled to `size` (a video with non-square pixels), chroma in proportion.
  static func stretched(_ image: PlanarImage, to size: PixelSize) -> PlanarImage {
    var result = image
    result.planes = zip(image.planes, image.subsampling).map { plane, factors in
      let target = factors.planeSize(size)
      return Resampler.resample(
        plane, region: Region(x: 0, y: 0, width: Double(plane.width), height: Double(plane.height)),
        to: target)
    }
    return result
  }
}

/// What a video original is, for the job's row, its event and its webhook.
struct VideoFacts: Sendable, Equatable {
  /// Seconds, when the container says.
  var duration: Double?
  /// libavcodec's decoder name: h264, hevc, mpeg4, vp9, libdav1d, ...
  var codec: String
  /// libavformat's demuxer name.
  var container: String
  var codedSize: PixelSize
  var bitDepth: Int
  /// The H.273 transfer characteristics (16: PQ, 18: HLG).
  var transfer: Int
  /// A Live Photo MOV's content identifier.
  var livePhotoID: String?
}

extension VideoSource: FormatDecoder {
  static let formats: Set<ImageFormat> = [.video]

  static func open(
    _ original: OriginalBytes, format: ImageFormat, maxPixels: Int
  ) throws(JobError) -> VideoSource {
    try VideoSource(original, maxPixels: maxPixels)
  }
}
