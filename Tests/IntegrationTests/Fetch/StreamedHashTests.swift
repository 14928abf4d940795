import Blocking
import Fetch
import Foundation
import Hashing
import Testing
import ThumbCore

/// A body read whole is hashed as it arrives, on the transfer thread: its SHA-256 is the bytes', however
/// the origin cuts them and after a retry, and the originals' source hands it on instead of hashing
/// again. The real Fetcher and a real origin on loopback.
@Suite(.serialized)
struct StreamedHashTests {
  let fixture: QueueFixture
  var limits = FetchLimits()

  init() throws {
    fixture = try QueueFixture()
    limits.totalTimeout = 10
    limits.retry = FetchRetryPolicy(tries: 3, baseSeconds: 0.05, retryAfterCap: 1)
  }

  private func fetcher(hashing: Bool) throws -> Fetcher {
    var fetcher = Fetcher(limits: limits, addressPolicy: try AddressPolicy(allowList: "127.0.0.1"))
    fetcher.hashesBodies = hashing
    return fetcher
  }

  @Test func aBodyIsHashedAsItArrivesHoweverItIsCut() async throws {
    let fetcher = try fetcher(hashing: true)
    // Whole; in 16 pieces with pauses between them; after a 503 whose body is not the photo's.
    for url in [
      fixture.origin.url("/files/photo.jpg"), fixture.slowURL(seconds: 0.3),
      fixture.origin.url("/flaky/1/photo.jpg"),
    ] {
      let original = try await fetcher.fetch(url)
      #expect(original.content.whole?.count == fixture.photoBytes, "\(url)")
      #expect(original.sha256 == Digest.sha256Hex(original.content.whole ?? []), "\(url)")
    }
  }

  @Test func aFetcherThatDoesNotHashLeavesTheDigestUnset() async throws {
    let original = try await fetcher(hashing: false).fetch(fixture.origin.url("/files/photo.jpg"))
    #expect(original.sha256 == nil)
  }

  /// The source turns the fetcher's hashing on when it has a pool to hash on, and hands the digest on.
  @Test func theSourceHandsOnTheDigestOfTheDownload() async throws {
    let pool = BlockingPool(threads: 1, name: "test-hash")
    defer { pool.shutdown() }
    let source = OriginalSource(fetcher: try fetcher(hashing: false), hashingOn: pool)
    #expect(source.fetcher.hashesBodies)
    let (original, delivery) = try await source.original(for: fixture.origin.url("/files/photo.jpg"))
    #expect(delivery == .downloaded)
    #expect(original.sha256 == Digest.sha256Hex(original.content.whole ?? []))
    #expect(!OriginalSource(fetcher: try fetcher(hashing: true)).fetcher.hashesBodies)
  }
}
