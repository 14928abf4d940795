import Testing

@testable import ThumbCore

/// The parts of a video read by ranges, and the reading's decisions, without I/O.
struct RangedOriginalTests {
  @Test func partsJoinWhereTheyTouchAndKeepWhatIsHeld() {
    var held = RangedOriginal(total: 100, parts: [(0, Array(0..<10))])
    held.add(Array(10..<20), at: 10)  // touches: one part
    #expect(held.parts.count == 1 && held.parts[0].bytes == Array(0..<20))
    held.add(Array(50..<60), at: 50)
    held.add([UInt8](repeating: 0xEE, count: 40), at: 15)  // overlaps both: only 20..<50 is new
    #expect(held.parts.count == 1 && held.parts[0].bytes.count == 60)
    #expect(held.bytes(0..<20) == Array(0..<20) && held.bytes(50..<60) == Array(50..<60))
    #expect(held.bytes(20..<50) == [UInt8](repeating: 0xEE, count: 30))
    #expect(held.holds(0..<60) && !held.holds(55..<61) && held.bytes(59..<61) == nil)
    #expect(held.bytesHeld == 60)
  }

  @Test func anOriginalInPartsIsToldApartByItsHead() {
    let held = RangedOriginal(total: 1000, parts: [(0, [0xFF, 0xD8, 0xFF, 0xE0]), (500, [4, 5])])
    let original = OriginalBytes.parts(held)
    #expect(original.head == [0xFF, 0xD8, 0xFF, 0xE0] && original.format == .jpeg)
    #expect(original.count == 6 && original.fileSize == 1000 && original.whole == nil)
    // Without its head, nothing tells what it is.
    let headless = OriginalBytes.parts(RangedOriginal(total: 1000, parts: [(500, [4, 5])]))
    #expect(headless.head == [] && headless.format == nil)
    #expect(OriginalBytes.whole([1, 2]).fileSize == 2 && OriginalBytes.whole([1, 2]).parts == nil)
  }

  /// A planner that asks for the next 10 bytes until it holds 30.
  struct Tens: RangePlanner {
    func next(after held: RangedOriginal) -> [Range<Int>]? {
      held.holds(0..<30) ? [] : [held.bytesHeld..<(held.bytesHeld + 10)]
    }
    func ranges(at seconds: Double, after held: RangedOriginal) -> [Range<Int>] { [] }
    func index(in held: RangedOriginal) -> Range<Int>? { 10..<20 }
  }

  struct Never: RangePlanner {
    func next(after held: RangedOriginal) -> [Range<Int>]? { nil }
    func ranges(at seconds: Double, after held: RangedOriginal) -> [Range<Int>] { [] }
    func index(in held: RangedOriginal) -> Range<Int>? { nil }
  }

  @Test func theReadingAsksRoundByRoundThenServesOrGivesUp() throws {
    var reading = RangedReading(total: 100, head: Array(0..<10), planner: Tens(), maxBytes: 100)
    #expect(try reading.next() == .read([10..<20]))
    try reading.add(Array(10..<20), at: 10)
    #expect(try reading.next() == .read([20..<30]))
    try reading.add(Array(20..<30), at: 20)
    #expect(try reading.next() == .done(RangedOriginal(total: 100, parts: [(0, Array(0..<30))])))
    // Over the byte cap: too large. A read that comes back empty: the file ends before its index says.
    var capped = RangedReading(total: 100, head: Array(0..<10), planner: Tens(), maxBytes: 15)
    #expect(throws: JobError.self) { try capped.next() }
    var short = RangedReading(total: 100, head: Array(0..<10), planner: Tens(), maxBytes: 100)
    _ = try short.next()
    #expect(throws: JobError.self) { try short.add([], at: 10) }
    var whole = RangedReading(total: 100, head: Array(0..<10), planner: Never(), maxBytes: 100)
    #expect(try whole.next() == .whole)
  }

  @Test func videosAreReadByRangesByTheirName() {
    for url in [
      "https://cdn.example/v/IMG_0001.MOV", "s3://bucket/a/b.mp4", "https://x/y.m4v?X-Amz-Signature=1",
    ] {
      #expect(SourceURL.readsByRanges(url), "\(url)")
    }
    for url in [
      "https://cdn.example/v/IMG_0001.HEIC", "https://x/video", "https://x.mp4/y", "https://x/y.webm",
    ] {
      #expect(!SourceURL.readsByRanges(url), "\(url)")
    }
  }
}
