import Testing

@testable import ThumbCore

struct FetchRetryPolicyTests {
  let policy = FetchRetryPolicy(tries: 3, baseSeconds: 0.5, jitter: 0.25, retryAfterCap: 10)

  @Test func backsOffExponentiallyWithJitterThenStops() {
    #expect(
      policy.decide(afterTry: 1, retryAfter: nil, secondsLeft: 30, unit: 0.5) == .retry(afterSeconds: 0.5))
    #expect(
      policy.decide(afterTry: 2, retryAfter: nil, secondsLeft: 30, unit: 0.5) == .retry(afterSeconds: 1.0))
    #expect(
      policy.decide(afterTry: 1, retryAfter: nil, secondsLeft: 30, unit: 0) == .retry(afterSeconds: 0.375))
    #expect(
      policy.decide(afterTry: 1, retryAfter: nil, secondsLeft: 30, unit: 1) == .retry(afterSeconds: 0.625))
    #expect(policy.decide(afterTry: 3, retryAfter: nil, secondsLeft: 30, unit: 0.5) == .stop(notBefore: nil))
  }

  @Test func honoursRetryAfterUpToTheCap() {
    #expect(policy.decide(afterTry: 1, retryAfter: 4, secondsLeft: 30, unit: 0.5) == .retry(afterSeconds: 4))
    // Longer than the cap: the attempt ends and the queue must not retry sooner than asked.
    #expect(policy.decide(afterTry: 1, retryAfter: 120, secondsLeft: 300, unit: 0.5) == .stop(notBefore: 120))
    // Out of tries, the origin's wish still travels with the error.
    #expect(policy.decide(afterTry: 3, retryAfter: 5, secondsLeft: 30, unit: 0.5) == .stop(notBefore: 5))
  }

  @Test func neverWaitsPastTheDeadline() {
    #expect(policy.decide(afterTry: 1, retryAfter: 4, secondsLeft: 3, unit: 0.5) == .stop(notBefore: 4))
    #expect(policy.decide(afterTry: 2, retryAfter: nil, secondsLeft: 0.9, unit: 0.5) == .stop(notBefore: nil))
  }

  @Test func retryAfterIsSecondsOrAnHTTPDate() {
    #expect(RetryAfter.seconds("120", now: 0) == 120)
    #expect(RetryAfter.seconds(" 7 ", now: 0) == 7)
    // 784111777 is Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example.
    #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
    #expect(RetryAfter.seconds("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_700) == 77)
    #expect(RetryAfter.seconds("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_800) == 0, "a past date: now")
    #expect(RetryAfter.seconds("soon", now: 0) == nil)
    #expect(RetryAfter.seconds("-5", now: 0) == nil)
    #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == nil, "obsolete formats are not generated")
    #expect(HTTPDate.parse("Thu, 29 Feb 2024 23:59:60 GMT") == 1_709_251_200)
  }
}

struct ByteBoundedCacheTests {
  @Test func evictsLeastRecentlyUsedByBytesNotCount() {
    var cache = ByteBoundedCache<String, Int>(capacity: 100, maxEntryCost: 60)
    cache.insert(1, for: "a", cost: 40)
    cache.insert(2, for: "b", cost: 40)
    _ = cache.value(for: "a")  // a is now the most recently used
    let keptC = cache.insert(3, for: "c", cost: 30)  // 110 > 100: b goes, not a
    #expect(keptC)
    var seen = ["a", "b", "c"].map { cache.value(for: $0) }
    #expect(seen == [1, nil, 3])
    #expect(cache.totalCost == 70)
    // Small entries make room for a big one by going, least recently used first.
    for i in 0..<3 { cache.insert(i, for: "s\(i)", cost: 10) }
    #expect(cache.totalCost == 100)
    let keptBig = cache.insert(9, for: "big", cost: 60)
    #expect(keptBig)
    #expect(cache.totalCost <= 100)
    seen = ["big", "a", "c"].map { cache.value(for: $0) }
    #expect(seen == [9, nil, nil], "a and c were used longest ago")
  }

  @Test func refusesAnEntryOverItsLimitAndDropsTheOldValue() {
    var cache = ByteBoundedCache<String, Int>(capacity: 100)
    #expect(cache.maxEntryCost == 25)
    cache.insert(1, for: "a", cost: 20)
    let kept = cache.insert(2, for: "a", cost: 26)
    #expect(!kept)
    let stale = cache.value(for: "a")
    #expect(stale == nil, "a stale value must not outlive a refused update")
    #expect(cache.totalCost == 0)
    var off = ByteBoundedCache<String, Int>(capacity: 0)
    let keptWhenOff = off.insert(1, for: "a", cost: 1)
    #expect(!keptWhenOff)
  }

  @Test func evictedValuesAreHandedToTheCaller() {
    var cache = ByteBoundedCache<String, Int>(capacity: 100, maxEntryCost: 60)
    var evicted: [Int] = []
    cache.insert(1, for: "a", cost: 40, evicted: &evicted)
    cache.insert(2, for: "b", cost: 40, evicted: &evicted)
    cache.insert(3, for: "b", cost: 30, evicted: &evicted)
    #expect(evicted == [2], "the replaced value")
    cache.insert(4, for: "c", cost: 50, evicted: &evicted)
    #expect(evicted == [2, 1], "the least recently used, to make room")
    #expect(cache.evict(atLeast: 31) == [3, 4], "b (30) alone is not enough")
    #expect(cache.count == 0 && cache.totalCost == 0)
    #expect(cache.evict(atLeast: 1) == [])
  }
}

struct ImageProbeTests {
  @Test func readsSizesFromHeaders() {
    // JPEG: SOI, an APP0 segment to skip, then SOF0 with height 0x01E0 (480) and width 0x0280 (640),
    // and three components (id, sampling, table each).
    let components: [UInt8] = [0x03, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]
    let jpeg: [UInt8] =
      [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x01, 0xE0, 0x02, 0x80]
      + components + [UInt8](repeating: 0, count: 4)
    #expect(ImageProbe.pixelSize(jpeg, format: .jpeg) == PixelSize(width: 640, height: 480))
    // A DHT segment (0xC4) is not a frame header and is skipped.
    let withDHT: [UInt8] =
      [0xFF, 0xD8, 0xFF, 0xC4, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC2, 0x00, 0x11, 0x08, 0x00, 0x10, 0x00, 0x20]
      + components + [UInt8](repeating: 0, count: 4)
    #expect(ImageProbe.pixelSize(withDHT, format: .jpeg) == PixelSize(width: 32, height: 16))

    var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
    png += [0, 0, 0x0F, 0xA0, 0, 0, 0x0B, 0xB8, 8, 6, 0, 0, 0]
    #expect(ImageProbe.pixelSize(png, format: .png) == PixelSize(width: 4000, height: 3000))

    let gif: [UInt8] = Array("GIF89a".utf8) + [0x2C, 0x01, 0xC8, 0x00, 0, 0, 0]
    #expect(ImageProbe.pixelSize(gif, format: .gif) == PixelSize(width: 300, height: 200))

    func webp(_ chunk: String, _ payload: [UInt8]) -> [UInt8] {
      Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBP".utf8) + Array(chunk.utf8) + [0, 0, 0, 0] + payload
        + [UInt8](repeating: 0, count: 16)
    }
    // VP8X: canvas width-1 = 1919, height-1 = 1079 (24-bit little-endian).
    let vp8x = webp("VP8X", [0, 0, 0, 0, 0x7F, 0x07, 0x00, 0x37, 0x04, 0x00])
    #expect(ImageProbe.pixelSize(vp8x, format: .webp) == PixelSize(width: 1920, height: 1080))
    // VP8 (lossy): frame tag, start code 9d 01 2a, then 14-bit width 400 and height 300.
    let vp8 = webp("VP8 ", [0, 0, 0, 0x9D, 0x01, 0x2A, 0x90, 0x01, 0x2C, 0x01])
    #expect(ImageProbe.pixelSize(vp8, format: .webp) == PixelSize(width: 400, height: 300))
    // VP8L: signature 0x2f, then width-1 = 99 and height-1 = 49 packed in 14-bit fields.
    let w = 99
    let h = 49
    let bits = w | h << 14
    let vp8l = webp(
      "VP8L",
      [0x2F, UInt8(bits & 0xFF), UInt8(bits >> 8 & 0xFF), UInt8(bits >> 16 & 0xFF), UInt8(bits >> 24)])
    #expect(ImageProbe.pixelSize(vp8l, format: .webp) == PixelSize(width: 100, height: 50))
  }

  @Test func truncatedOrZeroSizedHeadersGiveNothing() {
    #expect(ImageProbe.pixelSize([0xFF, 0xD8, 0xFF, 0xE0, 0x00], format: .jpeg) == nil)
    #expect(ImageProbe.pixelSize([0x89, 0x50, 0x4E, 0x47], format: .png) == nil)
    let zeroGIF: [UInt8] = Array("GIF89a".utf8) + [0, 0, 0xC8, 0x00]
    #expect(ImageProbe.pixelSize(zeroGIF, format: .gif) == nil)
    #expect(ImageProbe.pixelSize(Array(repeating: 0, count: 64), format: .heif) == nil)
  }
}
