import CTurboJPEG
import Glibc
import ThumbCore

/// Owns one TurboJPEG compressor handle; see TurboDecompressor for the threading rule.
///
/// Outputs carry no metadata: TurboJPEG writes only a JFIF header, so no EXIF, XMP, GPS, ICC or comment
/// from the original can reach a thumbnail.
final class TurboCompressor: @unchecked Sendable {
  private let handle: tjhandle

  init() throws(JobError) {
    guard let handle = tjInitCompress() else { throw JobError(.internalError, "tjInitCompress failed") }
    self.handle = handle
  }

  deinit { tjDestroy(handle) }

  /// From interleaved RGB or grey.
  func encode(
    _ image: PixelBuffer, quality: Int, subsampling: ChromaSubsampling = .s420, progressive: Bool = false
  ) throws(JobError) -> [UInt8] {
    precondition(image.channels == 1 || image.channels == 3)
    let format = image.channels == 1 ? TJPF_GRAY : TJPF_RGB
    let samp = image.channels == 1 ? TJSAMP_GRAY : Self.tjSubsampling(subsampling)
    return try output { out, length in
      image.pixels.withUnsafeBufferPointer { src in
        tjCompress2(
          handle, src.baseAddress, Int32(image.width), 0, Int32(image.height), Int32(format.rawValue), &out,
          &length, Int32(samp.rawValue), Int32(quality), Self.flags(progressive: progressive))
      }
    }
  }

  /// Straight from YCbCr planes (or one grey plane) padded as TurboJPEG expects (Resampler's `padded`):
  /// no colour conversion and no chroma downsampling, the resampler already made chroma at its size.
  func encode(planes image: PlanarImage, quality: Int, progressive: Bool = false) throws(JobError) -> [UInt8]
  {
    precondition(image.model == .yCbCr || image.model == .gray)
    let samp: TJSAMP
    if image.model == .gray {
      samp = TJSAMP_GRAY
    } else {
      samp = image.subsampling[1] == .none ? TJSAMP_444 : TJSAMP_420
    }
    let strides = image.planes.map { Int32($0.stride) }
    return try output { out, length in
      // Read-only pointers: the encoder only reads, and a mutable view would copy every shared plane.
      image.withPlanePointers { pointers in
        var p: [UnsafePointer<UInt8>?] = pointers.map { Optional($0) }
        return strides.withUnsafeBufferPointer { s in
          p.withUnsafeMutableBufferPointer { pp in
            tjCompressFromYUVPlanes(
              handle, pp.baseAddress, Int32(image.size.width), s.baseAddress, Int32(image.size.height),
              Int32(samp.rawValue), &out, &length, Int32(quality), Self.flags(progressive: progressive))
          }
        }
      }
    }
  }

  /// The accurate forward DCT always: TurboJPEG's default is the fast one, and the accurate one costs no
  /// time we could measure while giving 0.0002-0.0003 more SSIM at the same bytes (bench/jpegsize).
  private static func flags(progressive: Bool) -> Int32 {
    TJFLAG_ACCURATEDCT | (progressive ? TJFLAG_PROGRESSIVE : 0)
  }

  /// The output subsampling's plane layout, for the resampler.
  static func planeSubsampling(_ subsampling: ChromaSubsampling) -> [PlanarImage.Subsampling] {
    let chroma =
      subsampling == .s420
      ? PlanarImage.Subsampling(horizontal: 2, vertical: 2) : PlanarImage.Subsampling.none
    return [.none, chroma, chroma]
  }

  private static func tjSubsampling(_ subsampling: ChromaSubsampling) -> TJSAMP {
    subsampling == .s420 ? TJSAMP_420 : TJSAMP_444
  }

  private func output(
    _ body: (inout UnsafeMutablePointer<UInt8>?, inout UInt) -> Int32
  ) throws(JobError) -> [UInt8] {
    var out: UnsafeMutablePointer<UInt8>? = nil
    var length: UInt = 0
    let status = body(&out, &length)
    defer { if let out { tjFree(out) } }
    guard status == 0, let out else {
      throw JobError(.internalError, "JPEG encode: \(String(cString: tjGetErrorStr2(handle)))")
    }
    return Array(UnsafeBufferPointer(start: out, count: Int(length)))
  }
}

/// Settings of the JPEG encoder that belong to the whole process.
public enum JPEGEncoding {
  /// Optimised Huffman tables for every JPEG this process writes, unless its environment already says
  /// otherwise (`TJ_OPTIMIZE=0`): 3% fewer bytes for the same pixels, for about 12 ms of CPU per
  /// original (bench/jpegsize). TurboJPEG 2.1 takes this setting only from the environment, which it
  /// reads on every compression, so it is set once, by the command before it starts any thread that
  /// could read the environment while it changes (`ImagingProcess.prepare` in thumbd).
  public static func optimizeHuffmanTablesForThisProcess() {
    setenv("TJ_OPTIMIZE", "1", 0)
  }
}
