import Fetch
import Foundation
import Testing
import ThumbCore

/// Every fault mode of the test origin, fetched by the real Fetcher over loopback: each ends as the
/// right error code (or succeeds after retrying), within the configured time, with the number of
/// requests the retry policy allows.
@Suite(.serialized)
struct FetchFaultTests {
  let fixture: QueueFixture
  let limits: FetchLimits

  init() throws {
    fixture = try QueueFixture()
    var limits = FetchLimits()
    limits.totalTimeout = 5
    limits.connectTimeout = 2
    limits.maxBytes = 4 * 1024 * 1024
    limits.lowSpeedBytesPerSecond = 1024
    limits.lowSpeedSeconds = 2
    limits.retry = FetchRetryPolicy(tries: 3, baseSeconds: 0.05, retryAfterCap: 3)
    self.limits = limits
  }

  struct Expectation: CustomStringConvertible {
    var path: String
    var code: ErrorCode?  // nil: succeeds
    var requests: Int?  // GETs the origin sees for `path` (nil: not checked)
    var within: Double = 1.5  // seconds
    var atLeast: Double = 0
    var description: String { path }
  }

  func run(_ expectation: Expectation, url: String? = nil) async throws {
    let fetcher = Fetcher(limits: limits, addressPolicy: try AddressPolicy(allowList: "127.0.0.1"))
    let url = url ?? fixture.origin.url(expectation.path)
    let started = Date()
    let result = await Result { () async throws(JobError) in try await fetcher.fetch(url) }
    let elapsed = Date().timeIntervalSince(started)
    switch (result, expectation.code) {
    case (.success(let original), nil):
      #expect(original.content.whole?.count == fixture.photoBytes, "\(expectation)")
    case (.failure(let error), let code?):
      #expect(error.code == code, "\(expectation): \(error)")
      #expect(!error.message.isEmpty)
    case (.success, let code?):
      Issue.record("\(expectation): expected \(code), the fetch succeeded")
    case (.failure(let error), nil):
      Issue.record("\(expectation): expected success, got \(error)")
    }
    #expect(elapsed < expectation.within, "\(expectation) took \(elapsed) s")
    #expect(elapsed >= expectation.atLeast, "\(expectation) took \(elapsed) s")
    if let requests = expectation.requests, !expectation.path.hasPrefix("file:") {
      let path = String(expectation.path.prefix { $0 != "?" })
      #expect(try await fixture.origin.requestCount(path) == requests, "\(expectation)")
    }
  }

  @Test func transientFailuresAreRetriedWithinTheAttempt() async throws {
    try await run(Expectation(path: "/flaky/2/photo.jpg", code: nil, requests: 3))
    try await run(Expectation(path: "/status/500", code: .fetchFailed, requests: 3))
    try await run(Expectation(path: "/reset/photo.jpg", code: .fetchFailed, requests: 3))
    // Truncated body: the connection closes before the promised Content-Length arrived.
    try await run(Expectation(path: "/lying-length/photo.jpg", code: .fetchFailed, requests: 3))
  }

  @Test func retryAfterIsHonouredUpToItsCap() async throws {
    try await run(
      Expectation(path: "/retry-after/1/photo.jpg", code: nil, requests: 2, within: 2.5, atLeast: 1))
    // Longer than the cap (3 s here): the attempt ends at once, carrying the origin's wish to the queue.
    let fetcher = Fetcher(limits: limits, addressPolicy: try AddressPolicy(allowList: "127.0.0.1"))
    let started = Date()
    let result = await Result { () async throws(JobError) in
      try await fetcher.fetch(fixture.origin.url("/retry-after/120/photo.jpg"))
    }
    #expect(Date().timeIntervalSince(started) < 1)
    guard case .failure(let error) = result else {
      Issue.record("a 429 with Retry-After 120 must fail the attempt")
      return
    }
    #expect(error.code == .fetchFailed)
    #expect(error.retryNotBeforeSeconds == 120)
  }

  @Test func permanentRefusalsAreNotRetried() async throws {
    try await run(Expectation(path: "/status/404", code: .notFound, requests: 1))
    try await run(Expectation(path: "/status/410", code: .notFound, requests: 1))
    try await run(Expectation(path: "/status/403", code: .httpError, requests: 1))
    try await run(Expectation(path: "/redirect-loop/0", code: .httpError, requests: 1))
  }

  @Test func oversizedBodiesStopAtTheCap() async throws {
    // Claims 10 GiB: refused on its Content-Length. No length: stopped as the cap is crossed. A gzip
    // bomb (1 MB inflating to 1 GiB): stopped as the decoded bytes cross the cap.
    try await run(Expectation(path: "/huge", code: .tooLarge, requests: 1))
    try await run(Expectation(path: "/huge?nolength=1", code: .tooLarge, requests: 2))  // /huge's 2nd GET
    try await run(Expectation(path: "/gzip-bomb", code: .tooLarge, requests: 1, within: 3))
  }

  @Test func slowDripsAndStallsEndByTheDeadline() async throws {
    // 100 bytes a second is under the 1 KiB/s low-speed limit: each try is cut after 2 s, and the whole
    // fetch ends by the 5 s deadline however many tries that leaves.
    try await run(
      Expectation(path: "/slow/photo.jpg?chunk=100&delay=1", code: .timeout, within: 5.8, atLeast: 1.9))
    // 8 KB a second passes the low-speed check but not the deadline.
    try await run(
      Expectation(path: "/slow/photo.jpg?chunk=4096&delay=0.5", code: .timeout, within: 5.8, atLeast: 4.9))
  }

  @Test func hostileSourcesAreBlockedBeforeAnyPacketLeaves() async throws {
    let blocked = [
      "/redirect?to=http://169.254.169.254/latest/meta-data/",
      "/redirect?to=http://10.0.0.1/internal",
      "/redirect?to=http://[::1]:\(fixture.origin.port)/files/photo.jpg",
      "/redirect?to=file:///etc/passwd",
      "/redirect?to=gopher://127.0.0.1:\(fixture.origin.port)/",
    ]
    for path in blocked {
      // 10.0.0.1 is unroutable here: refusing it before connecting is what keeps this under a second.
      try await run(Expectation(path: path, code: .blockedSource, within: 1))
    }
    for url in [
      "file:///etc/passwd", "gopher://127.0.0.1:70/", "http://0.0.0.0:\(fixture.origin.port)/",
      "http://[::ffff:169.254.169.254]/", "http://10.0.0.1/", "ftp://127.0.0.1/",
    ] {
      try await run(Expectation(path: url, code: .blockedSource, within: 1), url: url)
    }
  }

  @Test func aSlowDownloadDoesNotHoldUpOthersFromTheSameOrigin() async throws {
    let fetcher = Fetcher(limits: limits, addressPolicy: try AddressPolicy(allowList: "127.0.0.1"))
    // All started at once, before any connection exists, and then again while the slow one runs.
    let started = Date()
    let slow = Task { try await fetcher.fetch(fixture.slowURL(seconds: 3)) }
    try await withThrowingTaskGroup(of: Void.self) { group in
      for path in ["/huge", "/files/photo.jpg", "/status/404"] {
        group.addTask { _ = try? await fetcher.fetch(fixture.origin.url(path)) }
      }
      try await group.waitForAll()
    }
    #expect(Date().timeIntervalSince(started) < 1, "the slow transfer's connection is not waited for")
    for _ in 0..<3 { _ = try await fetcher.fetch(fixture.origin.url("/files/photo.jpg")) }
    #expect(Date().timeIntervalSince(started) < 1.5)
    _ = try await slow.value
  }

  @Test func aCertificateThatDoesNotVerifyIsRefused() async throws {
    let tlsOrigin = try TestOrigin(root: fixture.origin.root, tls: true)
    let fetcher = Fetcher(limits: limits, addressPolicy: try AddressPolicy(allowList: "127.0.0.1"))
    let started = Date()
    let result = await Result { () async throws(JobError) in
      try await fetcher.fetch(tlsOrigin.url("/files/photo.jpg"))
    }
    guard case .failure(let error) = result else {
      Issue.record("a self-signed certificate must not be accepted")
      return
    }
    #expect(error.code == .fetchFailed)
    #expect(error.message.lowercased().contains("certificate"), "\(error)")
    #expect(!error.message.contains("tries"), "not retried within the attempt: it would fail the same way")
    #expect(Date().timeIntervalSince(started) < 2)
  }

  @Test func aSecondDownloadFromTheSameOriginReusesTheConnection() async throws {
    let fetcher = Fetcher(limits: limits, addressPolicy: try AddressPolicy(allowList: "127.0.0.1"))
    _ = try await fetcher.fetch(fixture.origin.url("/files/photo.jpg"))
    _ = try await fetcher.fetch(fixture.origin.url("/files/photo.jpg"))
    #expect(
      try await fixture.origin.connectionCount() == 1, "both downloads and the count query on one connection")
  }
}
