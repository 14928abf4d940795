import Imaging

/// An animated WebP container written by hand (VP8X with the animation flag, ANIM, one ANMF per
/// frame), from frames libwebp encodes losslessly: writing the chunks here, rather than through
/// libwebpmux (which thumbd's own animated output uses), pins exactly what the decoder is given.
extension TestImages {
  struct AnimationFrame {
    /// RGBA, straight alpha.
    var image: PixelBuffer
    /// Where the frame sits on the canvas; even numbers (the container stores them halved).
    var x = 0
    var y = 0
    /// Dispose to background after this frame (else leave it for the next frame to draw over).
    var disposeToBackground = false
    /// Alpha-blend onto the canvas as it is (else overwrite the frame's rectangle).
    var blend = true
    /// Milliseconds.
    var duration = 100
  }

  /// `frames` on a `width` x `height` canvas whose ANIM background colour is `background` (RGBA; a hint
  /// to viewers, which libwebp's animation decoder leaves transparent).
  static func animatedWebP(
    width: Int, height: Int, frames: [AnimationFrame],
    background: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0),
    loops: Int = 0
  ) -> [UInt8] {
    precondition(frames.allSatisfy { $0.x % 2 == 0 && $0.y % 2 == 0 && $0.image.channels == 4 })
    let flags: UInt8 = 0x02 | 0x10  // animation, alpha
    var body: [UInt8] = []
    body += chunk("VP8X", [flags, 0, 0, 0] + uint24(width - 1) + uint24(height - 1))
    // Background colour in B, G, R, A order, then the loop count (0: forever).
    body += chunk(
      "ANIM", [background.2, background.1, background.0, background.3, UInt8(loops & 255), UInt8(loops >> 8)])
    for frame in frames {
      let rgba = frame.image
      // The simple encoder writes "RIFF", the size, "WEBP", then the one VP8L chunk: keep that chunk.
      let still = webp(rgba, lossless: true)
      precondition(still[12..<16].elementsEqual("VP8L".utf8))
      let bits: UInt8 = (frame.blend ? 0 : 0x02) | (frame.disposeToBackground ? 0x01 : 0)
      let header =
        uint24(frame.x / 2) + uint24(frame.y / 2) + uint24(rgba.width - 1) + uint24(rgba.height - 1)
        + uint24(frame.duration) + [bits]
      body += chunk("ANMF", header + Array(still[12...]))
    }
    return Array("RIFF".utf8) + uint32(4 + body.count) + Array("WEBP".utf8) + body
  }

  /// A RIFF chunk: four-character tag, little-endian size, payload padded to an even length.
  private static func chunk(_ tag: String, _ payload: [UInt8]) -> [UInt8] {
    Array(tag.utf8) + uint32(payload.count) + payload + (payload.count % 2 == 1 ? [0] : [])
  }

  private static func uint24(_ value: Int) -> [UInt8] {
    [UInt8(value & 255), UInt8(value >> 8 & 255), UInt8(value >> 16 & 255)]
  }

  private static func uint32(_ value: Int) -> [UInt8] { uint24(value) + [UInt8(value >> 24 & 255)] }
}
