import Admission
import Fetch
import Foundation
import Hashing
import Imaging
import TestSupport
import Testing
import ThumbCore

/// A video over the download limit from an origin that ignores `Range` goes to the spool: its parts are
/// read from the file and only they are held; the file's disk is counted while the original lives and
/// given back after; what cannot be read in parts, or does not fit, is refused. The real Fetcher, a
/// real origin on loopback, real files.
@Suite(.enabled(if: VideoMatrix.isAvailable, Comment(rawValue: VideoMatrix.skipReason)))
struct SpoolTests {
  let origin: TestOrigin
  var limits = FetchLimits()

  init() throws {
    origin = try TestOrigin(root: try #require(VideoMatrix.folder))
    limits.maxBytes = 1 << 20
    limits.retry = FetchRetryPolicy(tries: 1, baseSeconds: 0.05, retryAfterCap: 1)
  }

  func fetcher(spool: Spool?, memory: AdmissionGate? = nil) throws -> Fetcher {
    var fetcher = Fetcher(
      limits: limits, addressPolicy: try AddressPolicy(allowList: "127.0.0.1"), memory: memory,
      rangePlanner: VideoRangePlanner())
    fetcher.spool = spool
    fetcher.hashesBodies = true
    return fetcher
  }

  /// How fetching `url` failed (nil: it did not).
  func failure(of fetcher: Fetcher, url: String) async -> JobError? {
    do throws(JobError) {
      _ = try await fetcher.fetch(url)
      return nil
    } catch {
      return error
    }
  }

  func spool(capacity: Int) throws -> Spool {
    let spool = Spool(directory: try makeTemporaryDirectory().path, capacity: capacity)
    try spool.prepare()
    return spool
  }

  @Test func aVideoOverTheLimitIsSpooledAndReadInParts() async throws {
    let whole = try VideoMatrix.bytes("long-index-at-end.mp4")
    let spool = try spool(capacity: 64 << 20)
    let gate = AdmissionGate(capacity: 64 << 20)
    let fetcher = try fetcher(spool: spool, memory: gate)
    // Scoped: the original, and its copies, are gone at the end.
    do {
      let fetched = try await fetcher.fetch(origin.url("/norange/long-index-at-end.mp4"))
      #expect(fetched.ranges?.spooled == true && fetched.ranges?.total == whole.count)
      #expect(fetched.ranges?.bytesRead == whole.count)
      #expect(fetched.sha256 == Digest.sha256Hex(whole))
      let held = try #require(fetched.content.parts)
      #expect(held.bytesHeld < whole.count / 4 && held.bytesHeld <= limits.maxBytes, "\(held.bytesHeld)")
      for part in held.parts {
        #expect(Array(whole[part.offset..<(part.offset + part.bytes.count)]) == part.bytes)
      }
      // The disk while the original lives, and the parts under the budget; both given back after.
      #expect(spool.bytesInUse == whole.count)
      #expect(gate.inUse >= held.bytesHeld)
      // More keyframes are read from the file, not from the origin.
      let requests = try await origin.requestCount("/norange/long-index-at-end.mp4")
      let more = try await fetcher.adding(
        [(whole.count / 2)..<(whole.count / 2 + 1000)], to: fetched, url: "x")
      #expect(more.content.parts?.holds((whole.count / 2)..<(whole.count / 2 + 1000)) == true)
      #expect(try await origin.requestCount("/norange/long-index-at-end.mp4") == requests)
    }
    #expect(spool.bytesInUse == 0 && gate.inUse == 0)
    #expect(try FileManager.default.contentsOfDirectory(atPath: spool.directory) == [])
  }

  @Test func whatCannotBeSpooledIsRefused() async throws {
    let size = try VideoMatrix.bytes("long-index-at-end.mp4").count
    // Larger than the spool itself: too_large, naming the option.
    let small = try spool(capacity: 2 << 20)
    let tooLarge = try #require(
      await failure(of: try fetcher(spool: small), url: origin.url("/norange/long-index-at-end.mp4")))
    #expect(tooLarge.code == .tooLarge && tooLarge.message.contains("--max-spool-bytes"), "\(tooLarge)")
    #expect(small.bytesInUse == 0)
    // The spool full of another download: fetch_failed, another try may find room.
    let shared = try spool(capacity: size + size / 2)
    let fetcher = try fetcher(spool: shared)
    let first = try await fetcher.fetch(origin.url("/norange/long-index-at-end.mp4?first"))
    let full = try #require(await failure(of: fetcher, url: origin.url("/norange/long-index-first.mp4")))
    #expect(full.code == .fetchFailed && full.message.contains("full"), "\(full)")
    withExtendedLifetime(first) {}
    // Not a video (zeros, without a length): the download limit as ever, nothing written.
    let none = try spool(capacity: 64 << 20)
    let zeros = try #require(
      await failure(of: try self.fetcher(spool: none), url: origin.url("/huge?nolength=1")))
    #expect(zeros.code == .tooLarge && zeros.message.contains("download limit"), "\(zeros)")
    #expect(none.bytesInUse == 0)
    // Without a spool: too_large, as before.
    let without = try #require(
      await failure(of: try self.fetcher(spool: nil), url: origin.url("/norange/long-index-at-end.mp4")))
    #expect(without.code == .tooLarge && without.message.contains("download limit"), "\(without)")
  }
}
