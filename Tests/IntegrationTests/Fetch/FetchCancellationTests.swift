import Blocking
import Fetch
import Foundation
import Testing
import ThumbCore

/// An abandoned job's download must stop, not run on to its timeout on a pool thread.
struct FetchCancellationTests {
  @Test func cancellingTheTaskStopsTheDownloadAndItsRetries() async throws {
    let fixture = try QueueFixture()
    let fetcher = Fetcher(limits: FetchLimits(), addressPolicy: try AddressPolicy(allowList: "127.0.0.1"))
    let url = fixture.slowURL(seconds: 20)
    let started = Date()
    let download = Task { () async throws(JobError) -> FetchedOriginal in try await fetcher.fetch(url) }
    try await Task.sleep(for: .milliseconds(700))
    download.cancel()
    let result = await download.result
    // Chunks arrive every 1.25 s and curl's progress callback runs about once a second, so it stops in
    // about 2 s; anything well under the download's 20 s shows it was stopped.
    #expect(Date().timeIntervalSince(started) < 10)
    guard case .failure(let error as JobError) = result else {
      Issue.record("a cancelled download must fail, got \(result)")
      return
    }
    #expect(error.message.contains("cancelled"))
    #expect(try await fixture.origin.requestCount("/slow/photo.jpg") == 1)
  }
}
