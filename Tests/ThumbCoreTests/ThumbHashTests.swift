import Foundation
import Testing
import ThumbCore

@Suite struct ThumbHashTests {
  /// A 32x24 gradient with a diagonal edge, as the tests elsewhere draw it.
  func gradient(alpha: (Int, Int) -> UInt8 = { _, _ in 255 }) -> [UInt8] {
    var rgba: [UInt8] = []
    for y in 0..<24 {
      for x in 0..<32 {
        rgba += [UInt8(x * 255 / 31), UInt8(y * 255 / 23), x > y ? 200 : 40, alpha(x, y)]
      }
    }
    return rgba
  }

  @Test func matchesAnIndependentEncoder() {
    // The same pixels through the `thumbhash` package on PyPI (a port of the reference encoder).
    #expect(ThumbHash.encodeBase64(width: 32, height: 24, rgba: gradient()) == "oPcRbZpwd3eFd3iIeHeIiIlgCPh3")
  }

  @Test func keepsTheAverageColourAndTheAspect() throws {
    let red = [UInt8](repeating: 0, count: 40 * 10 * 4).enumerated().map { i, _ in
      i % 4 == 0 || i % 4 == 3 ? UInt8(255) : 0
    }
    let hash = ThumbHash.encode(width: 40, height: 10, rgba: red)
    let average = try #require(ThumbHash.averageColor(hash))
    #expect(average.r > 0.9 && average.g < 0.1 && average.b < 0.1)
    #expect(hash[4] & 0x80 != 0)  // the landscape bit
    let tall = ThumbHash.encode(width: 10, height: 40, rgba: red)
    #expect(tall[4] & 0x80 == 0)
  }

  @Test func transparencyAddsTheAlphaBytes() {
    let opaque = ThumbHash.encode(width: 32, height: 24, rgba: gradient())
    let holed = ThumbHash.encode(
      width: 32, height: 24,
      rgba: gradient { x, y in (x - 16) * (x - 16) + (y - 12) * (y - 12) < 100 ? 255 : 0 })
    #expect(opaque[2] & 0x80 == 0)
    #expect(holed[2] & 0x80 != 0)  // hasAlpha
    #expect(opaque.count <= 25 && holed.count <= 25)
  }

  /// Decoded at the picture's own size, the placeholder is the picture blurred: close to it on average
  /// (far closer than a flat fill of its average colour), with its corners' colours where they were.
  @Test func decodesToTheBlurredPicture() throws {
    let pixels = gradient()
    let hash = ThumbHash.encode(width: 32, height: 24, rgba: pixels)
    let drawn = try #require(ThumbHash.decode(hash, width: 32, height: 24))
    #expect(drawn.count == pixels.count)
    func distance(_ a: [UInt8], _ b: [UInt8]) -> Double {
      var sum = 0.0
      for i in a.indices where i % 4 != 3 { sum += abs(Double(a[i]) - Double(b[i])) }
      return sum / Double(a.count / 4 * 3) / 255
    }
    let average = try #require(ThumbHash.averageColor(hash))
    let averageBytes: [UInt8] = [average.r, average.g, average.b].map { UInt8(($0 * 255).rounded()) } + [255]
    var flat: [UInt8] = []
    for _ in 0..<32 * 24 { flat += averageBytes }
    #expect(distance(drawn, pixels) < 0.08, "\(distance(drawn, pixels))")
    #expect(distance(drawn, pixels) < distance(flat, pixels) / 3, "flat: \(distance(flat, pixels))")
    // Top left dark, bottom right bright in red and green, as drawn.
    #expect(drawn[0] < 80 && drawn[1] < 80)
    let last = (32 * 24 - 1) * 4
    #expect(drawn[last] > 170 && drawn[last + 1] > 170)
    #expect(drawn.enumerated().allSatisfy { $0.offset % 4 != 3 || $0.element == 255 })
    #expect(ThumbHash.decode([1, 2, 3], width: 4, height: 4) == nil)
  }
}
