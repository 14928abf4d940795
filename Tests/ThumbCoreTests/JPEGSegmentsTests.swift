import Foundation
import Testing
import ThumbCore

@Suite struct JPEGSegmentTests {
  func segment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] {
    [0xFF, marker, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 255)] + payload
  }
  func iccChunk(_ sequence: UInt8, of count: UInt8, _ bytes: [UInt8]) -> [UInt8] {
    segment(0xE2, Array("ICC_PROFILE".utf8) + [0, sequence, count] + bytes)
  }

  @Test func joinsICCChunksInSequenceOrder() {
    let jpeg =
      [0xFF, 0xD8] + iccChunk(2, of: 2, [4, 5]) + segment(0xE1, [1, 2]) + iccChunk(1, of: 2, [1, 2, 3])
      + [0xFF, 0xDA, 0, 2]
    #expect(JPEGSegments.iccProfile(jpeg) == [1, 2, 3, 4, 5])
  }

  @Test func refusesIncompleteOrRepeatedProfiles() {
    let start: [UInt8] = [0xFF, 0xD8]
    #expect(JPEGSegments.iccProfile(start + iccChunk(1, of: 2, [1])) == nil)
    #expect(JPEGSegments.iccProfile(start + iccChunk(1, of: 1, [1]) + iccChunk(1, of: 1, [2])) == nil)
    #expect(JPEGSegments.iccProfile(start + iccChunk(0, of: 1, [1])) == nil)
    #expect(JPEGSegments.iccProfile(start + segment(0xE0, [1])) == nil)
    #expect(JPEGSegments.iccProfile(Array(repeating: 0xFF, count: 9)) == nil)
  }
}
