import Foundation
import Testing

@testable import ThumbCore

@Suite struct ByteSizeTests {
  @Test func parsesOperatorSizes() {
    #expect(ByteSize.parse("256MiB") == 268_435_456)
    #expect(ByteSize.parse("50MB") == 50_000_000)
    #expect(ByteSize.parse("1g") == 1_073_741_824)
    #expect(ByteSize.parse("4096") == 4096)
    #expect(ByteSize.parse(" 1.5 KiB ") == 1536)
    #expect(ByteSize.parse("lots") == nil)
    #expect(ByteSize.parse("12parsecs") == nil)
    #expect(ByteSize.format(268_435_456) == "256 MiB")
  }
}
