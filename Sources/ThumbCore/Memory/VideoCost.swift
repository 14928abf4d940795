/// What a video's container and stream header say that decides what its poster costs to decode.
public struct VideoStreamShape: Sendable, Equatable {
  public enum Codec: Sendable, Equatable {
    case h264, hevc, vp9, av1
    /// MPEG-4 Part 2, H.263, VP8: small pictures in practice, modelled with room to spare.
    case other
  }

  public var codec: Codec
  /// The coded picture's size (before the pixel aspect ratio and the display matrix).
  public var coded: PixelSize
  /// Bits per sample (8, 10, 12); 0 when the header does not say, taken as 10.
  public var bitDepth: Int
  /// log2 of the chroma subsampling (1, 1 for 4:2:0).
  public var chromaShift: (x: Int, y: Int)
  public var gray: Bool
  /// HEVC keyframes that name pictures before them are rewritten so that they name none (every
  /// parameter set was read); when false, each keyframe may make up to `standIns` more references.
  public var keyframesRewritten: Bool
  public var standIns: Int
  /// Samples the container's index lists (the demuxer keeps a few tables of each).
  public var indexEntries: Int
  /// Reference pictures the stream declares, and pictures its decoder may hold back to reorder them:
  /// what decoding every frame of a preview keeps (0 when unknown).
  public var references: Int
  public var reorder: Int

  public init(
    codec: Codec, coded: PixelSize, bitDepth: Int, chromaShift: (x: Int, y: Int) = (1, 1), gray: Bool = false,
    keyframesRewritten: Bool = false, standIns: Int = 0, indexEntries: Int = 0, references: Int = 0,
    reorder: Int = 0
  ) {
    self.references = references
    self.reorder = reorder
    self.codec = codec
    self.coded = coded
    self.bitDepth = bitDepth
    self.chromaShift = chromaShift
    self.gray = gray
    self.keyframesRewritten = keyframesRewritten
    self.standIns = standIns
    self.indexEntries = indexEntries
  }

  public static func == (a: Self, b: Self) -> Bool {
    a.codec == b.codec && a.coded == b.coded && a.bitDepth == b.bitDepth && a.chromaShift == b.chromaShift
      && a.gray == b.gray && a.keyframesRewritten == b.keyframesRewritten && a.standIns == b.standIns
      && a.indexEntries == b.indexEntries && a.references == b.references && a.reorder == b.reorder
  }

  /// Samples per pixel over all planes: 1.5 at 4:2:0, 2 at 4:2:2, 3 at 4:4:4, 1 for grey.
  public var samplesPerPixel: Double {
    gray ? 1 : 1 + 2 / Double(1 << (chromaShift.x + chromaShift.y))
  }

  /// Bytes of one decoded picture as libavcodec allocates it: samples of one byte up to 8 bits and two
  /// beyond, each plane's rows padded (to 64 bytes, and by the codec's edge: up to 80 pixels a side).
  public var pictureBytes: Int {
    let bytesPerSample = bitDepth == 0 || bitDepth > 8 ? 2 : 1
    let padded = PixelSize(width: coded.width + 64, height: coded.height + 16)
    return Int(Double(padded.pixels) * samplesPerPixel) * bytesPerSample
  }
}

extension MemoryCostModel {
  /// What libavformat and a libavcodec decoder hold whatever the picture: the demuxer's context and
  /// I/O buffer, the codec's tables (measured: 5.6 to 7.3 MiB once opened, from VP9 to AV1, and the
  /// Swift side's fixed share of a poster, with room for what varies from run to run by 2 to 3 MiB:
  /// 14 MiB in all).
  public static let videoDecoderFixed = 14 << 20

  /// Bytes the demuxer keeps for each sample of the index (its entry, size, offset and timing tables).
  public static let videoIndexBytesPerSample = 64

  /// The decoder's own bytes while it decodes one keyframe alone (CVideoDecoder): the picture, and the
  /// codec's per-picture tables, by codec, measured with VmHWM on phone-sized clips from 1080p to 8K
  /// (docs/benchmarks/memory.md, "Videos") and rounded up:
  /// - H.264: motion vectors, reference indices and macroblock types: 2 bytes a pixel.
  /// - HEVC: the motion field (0.75 bytes a pixel) and the deblocking and SAO tables: 1.2 bytes a pixel;
  ///   a keyframe not rewritten may make `standIns` stand-in references, one shared picture and a
  ///   motion field each.
  /// - VP9: two pictures (its frame pool keeps the previous keyframe's while the next one decodes) and
  ///   0.5 bytes a pixel.
  /// - AV1 (dav1d): the picture and a quarter of it.
  /// - Others: two pictures and a byte a pixel.
  public static func videoDecoderBytes(_ stream: VideoStreamShape) -> Int {
    let pixels = Double(stream.coded.pixels)
    let picture = Double(stream.pictureBytes)
    let keyframe: Double
    switch stream.codec {
    case .h264: keyframe = picture + 2 * pixels
    case .hevc:
      keyframe =
        picture + 1.2 * pixels
        + (stream.keyframesRewritten ? 0 : picture + 0.75 * pixels * Double(stream.standIns))
    case .vp9: keyframe = 2 * picture + 0.5 * pixels
    case .av1: keyframe = 1.25 * picture
    case .other: keyframe = 2 * picture + pixels
    }
    return videoDecoderFixed + Int(keyframe) + stream.indexEntries * videoIndexBytesPerSample
  }

  /// The decoder's bytes while it decodes every frame of a preview's window: its fixed share, and each
  /// picture it may hold (the references, those held back to reorder, the one decoding and the one
  /// given; at least six for HEVC) with its motion field (H.264 1 byte a pixel, HEVC 0.75, the others 0.5), then the two copies
  /// the preview holds (the frame shown and the next; halved, or tone-mapped to RGB, as the outputs
  /// allow). Measured on 4K HEVC 10-bit and 1080p H.264 phone-like clips with VmHWM: 150 and 29 MiB
  /// over their posters' (docs/benchmarks/video.md).
  public static func videoPreviewBytes(_ stream: VideoStreamShape, scale: Double, toneMapped: Bool) -> Int {
    let pixels = Double(stream.coded.pixels)
    let motion: Double
    switch stream.codec {
    case .h264: motion = 1
    case .hevc: motion = 0.75
    default: motion = 0.5
    }
    // HEVC's header rarely says: six, its decoded picture buffer at a level's largest picture.
    let declared = min(16, max(1, stream.references)) + min(16, max(0, stream.reorder)) + 2
    let pictures = stream.codec == .hevc ? max(6, declared) : declared
    let halved = scale <= 0.5 ? 4.0 : 1.0
    let copy = pixels / halved * (toneMapped ? 3 : stream.samplesPerPixel)
    return videoDecoderFixed
      + Int(Double(pictures) * (Double(stream.pictureBytes) + motion * pixels) + 2 * copy)
  }

  /// A video's poster: decoding holds the held bytes (and the decoder's copy of them), the decoder and
  /// one copy of the best keyframe so far (8-bit planes, or an HDR keyframe tone-mapped to RGB, at half
  /// size when no output needs more); the decoder is closed once the poster is chosen, and rendering
  /// holds the poster and the variants.
  ///
  /// `stored`: the display size before the turn (the coded size stretched by the pixel aspect ratio).
  /// `toneMapped`: the stream is HDR (PQ or HLG), and its poster leaves the decoder as RGB.
  public static func video(
    stream: VideoStreamShape, stored: PixelSize, orientation: Orientation, heldBytes: Int, toneMapped: Bool,
    variants: [VariantSpec]
  ) -> MemoryEstimate {
    var estimate = MemoryEstimate()
    estimate.compressed = 2 * heldBytes
    estimate.codec = videoDecoderBytes(stream)
    let upright = orientation.uprightSize(of: stored)
    let scale = RenderPlanner.requiredScale(source: upright, variants: variants)
    let coded = stream.coded
    let poster: Int
    if toneMapped {
      let halved = scale <= 0.5 && coded.width >= 2 && coded.height >= 2
      let size = halved ? PixelSize(width: coded.width / 2, height: coded.height / 2) : coded
      poster = size.pixels * 3
    } else {
      poster = Int(Double(coded.pixels) * stream.samplesPerPixel)
    }
    // A poster stretched to square pixels is a second copy while it is made.
    let stretched = stored == coded ? 0 : Int(Double(stored.pixels) * (toneMapped ? 3 : 1.5))
    estimate.decoded = poster
    estimate.interleaved = stretched
    estimate.rendering = renderingBytes(
      upright: upright, decoded: upright, variants: variants, convertsColour: toneMapped)
    // A preview decodes after the poster's decoder is closed: the larger of the two.
    let animated = variants.filter { $0.animation != nil }
    if !animated.isEmpty {
      let previewScale = RenderPlanner.requiredScale(source: upright, variants: animated)
      estimate.codec = max(
        estimate.codec, videoPreviewBytes(stream, scale: previewScale, toneMapped: toneMapped))
    }
    return estimate
  }
}
