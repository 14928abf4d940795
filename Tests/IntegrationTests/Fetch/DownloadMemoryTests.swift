import Admission
import Fetch
import Foundation
import Hashing
import TestSupport
import Testing
import ThumbCore

@testable import Worker

/// Downloads count against the worker's memory budget as their bodies arrive: a download that finds no
/// room pauses (curl stops reading the socket) and resumes when memory is given back; the original keeps
/// its bytes counted until its last holder lets it go; a download that never finds room ends by its
/// deadline and gives back what it took. The real gate, the real Fetcher, a real origin on loopback.
@Suite(.serialized)
struct DownloadMemoryTests {
  let fixture: QueueFixture
  var limits = FetchLimits()

  init() throws {
    fixture = try QueueFixture()
    limits.totalTimeout = 10
    limits.lowSpeedBytesPerSecond = 1024
    limits.lowSpeedSeconds = 1
    limits.retry = FetchRetryPolicy(tries: 1, baseSeconds: 0.05, retryAfterCap: 1)
  }

  @Test func aDownloadWaitsForRoomAndItsOriginalKeepsItCounted() async throws {
    let gate = AdmissionGate(capacity: 4 * 1024 * 1024)
    // Another original fills the budget but for less than this photo.
    let other = gate.capacity - fixture.photoBytes / 2
    let took = gate.take(other, orWake: {})
    #expect(took)
    var hashing = Fetcher(
      limits: limits, addressPolicy: try AddressPolicy(allowList: "127.0.0.1"), memory: gate)
    hashing.hashesBodies = true
    let fetcher = hashing
    let url = fixture.origin.url("/files/photo.jpg")
    var original: FetchedOriginal? = try await {
      // The task keeps its result while it lives: only the value may outlive this closure.
      let download = Task { () throws(JobError) -> FetchedOriginal in try await fetcher.fetch(url) }
      // Longer than the low-speed window: a paused transfer must not be taken for a slow one.
      try await Task.sleep(for: .seconds(2))
      #expect(gate.inUse == other, "nothing of the body may be held beyond the budget")
      gate.give(other)
      return try await download.value
    }()
    #expect(original?.content.whole?.count == fixture.photoBytes)
    #expect((original?.memoryPauses ?? 0) >= 1)
    // A chunk refused for want of memory is delivered again: hashed once, when it is kept.
    #expect(original.map { $0.sha256 == Digest.sha256Hex($0.content.whole ?? []) } == true)
    let held = try #require(original?.hold?.bytes)
    #expect(held >= fixture.photoBytes && held <= fixture.photoBytes + 256 * 1024, "\(held)")
    #expect(gate.inUse == held)
    original = nil
    // The finished task that fetched it may keep its result a moment longer, until the runtime lets it go.
    #expect(
      await eventually(timeout: 5) { gate.inUse == 0 }, "the last copy of the original gives its bytes back")
  }

  @Test func aDownloadThatNeverFindsRoomEndsByItsDeadlineAndGivesBackWhatItTook() async throws {
    let gate = AdmissionGate(capacity: 4 * 1024 * 1024)
    let other = gate.capacity - 512 * 1024
    let took = gate.take(other, orWake: {})
    #expect(took)
    var limits = self.limits
    limits.totalTimeout = 2
    let fetcher = Fetcher(
      limits: limits, addressPolicy: try AddressPolicy(allowList: "127.0.0.1"), memory: gate)
    // No Content-Length: the body grows in doubling steps, the first two of which fit.
    let url = fixture.origin.url("/huge?nolength=1")
    let started = ContinuousClock.now
    let result = await Result { () async throws(JobError) in try await fetcher.fetch(url) }
    let elapsed = started.duration(to: .now)
    guard case .failure(let error) = result else {
      Issue.record("expected a timeout, the download succeeded")
      return
    }
    #expect(error.code == .timeout, "\(error)")
    #expect(elapsed < .seconds(4), "\(elapsed)")
    #expect(gate.inUse == other)
  }
}
