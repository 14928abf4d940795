import Foundation
import Testing

@testable import ThumbCore

struct TimeSpanTests {
  @Test func parsesOperatorDurations() {
    #expect(TimeSpan.parseSeconds("90") == 90)
    #expect(TimeSpan.parseSeconds("30m") == 1800)
    #expect(TimeSpan.parseSeconds(" 12h ") == 43200)
    #expect(TimeSpan.parseSeconds("7d") == 604_800)
    #expect(TimeSpan.parseSeconds("1.5s") == 1.5)
    #expect(TimeSpan.parseSeconds("0") == 0)
    for bad in ["", "d", "-1d", "7x", "seven days", "inf"] {
      #expect(TimeSpan.parseSeconds(bad) == nil, "\(bad)")
    }
  }
}
