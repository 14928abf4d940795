import Blocking
import Fetch
import Foundation
import Hashing
import Queue
import Storage
import Testing
import ThumbCore

/// However many jobs name a URL, its original is downloaded once: jobs on one worker share a download in
/// flight, a lease takes the URL's other ready jobs along, and recent originals stay in a byte-bounded
/// cache, revalidated with conditional requests once stale.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct OneDownloadPerURLTests {
  /// Adds profiles `p1`...`p<n>`, each a copy of `default`.
  func addProfiles(_ database: String, count: Int) throws -> [String] {
    let names = (1...count).map { "p\($0)" }
    for name in names {
      try sql(
        database,
        "INSERT INTO thumbs.profiles (name, spec) SELECT $1, spec FROM thumbs.profiles WHERE name = 'default'",
        [name])
    }
    return names
  }

  @Test func fiveJobsForOnePhotoUnderFiveProfilesCauseOneGET() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let profiles = ["default"] + (try addProfiles(database, count: 4))
    let url = fixture.origin.url("/files/photo.jpg")
    for profile in profiles { try sql(database, "SELECT thumbs.enqueue($1, $2)", [url, profile]) }
    let totals = try await drainQueue(databaseURL: database, storage: fixture.storage, concurrency: 2)
    #expect(totals.succeeded == 5)
    #expect(try await fixture.origin.requestCount("/files/photo.jpg") == 1)
    // Leased together, the five jobs share one decode too (the profiles are copies: one set of
    // variants is rendered for all five).
    #expect(totals.decodes == 1 && totals.sharedDecodes == 1, "\(totals)")
    let keys = try sql(
      database,
      "SELECT name, count(DISTINCT storage_key), count(*) FROM thumbs.variants GROUP BY name ORDER BY name"
    ).rows
    #expect(
      keys.map { $0[1] } == ["1", "1", "1", "1"] && keys.map { $0[2] } == ["5", "5", "5", "5"], "\(keys)")

    // The originals row: what was downloaded, once.
    let photo = try Data(contentsOf: fixture.origin.root.appendingPathComponent("photo.jpg"))
    let row = try sql(
      database,
      """
      SELECT bytes, sha256, content_type, format, width, height, downloads, revalidations,
             etag IS NOT NULL, last_modified IS NOT NULL, fetched_by IS NOT NULL
        FROM thumbs.originals WHERE url = $1
      """, [url]
    ).rows
    #expect(
      row == [
        [
          String(photo.count), Digest.sha256Hex([UInt8](photo)), "image/jpeg", "jpeg", "1200", "900", "1",
          "0", "t", "t", "t",
        ]
      ])
  }

  /// Different profiles of one photo: one decode, each job its own variants, names and formats.
  @Test func differentProfilesOfOnePhotoShareOneDecode() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    try sql(
      database,
      """
      INSERT INTO thumbs.profiles (name, spec) VALUES ('mobile', '{"variants": [
        {"name": "card", "width": 600, "height": 400, "fit": "cover", "format": "webp", "quality": 75},
        {"name": "tiny", "width": 320, "height": 320, "quality": 80}]}')
      """)
    let url = fixture.origin.url("/files/photo.jpg")
    for profile in ["default", "mobile"] {
      try sql(database, "SELECT thumbs.enqueue($1, $2)", [url, profile])
    }
    let totals = try await drainQueue(databaseURL: database, storage: fixture.storage, concurrency: 1)
    #expect(totals.succeeded == 2 && totals.decodes == 1 && totals.sharedDecodes == 1, "\(totals)")
    let rows = try sql(
      database,
      """
      SELECT j.profile, v.name, v.width, v.height, v.format, v.storage_key FROM thumbs.variants v
        JOIN thumbs.jobs j ON j.id = v.job_id ORDER BY j.profile, v.name
      """
    ).rows
    #expect(
      rows.map { Array($0[0...4]) } == [
        ["default", "large", "1200", "900", "jpeg"], ["default", "medium", "800", "600", "jpeg"],
        ["default", "small", "320", "240", "jpeg"], ["default", "square", "256", "256", "jpeg"],
        ["mobile", "card", "600", "400", "webp"], ["mobile", "tiny", "320", "240", "jpeg"],
      ], "\(rows)")
    // "tiny" is the same output as default's "small" (320 inside, q80): rendered once, stored once.
    #expect(rows[2][5] == rows[5][5])
    #expect(try sql(database, "SELECT count(*) FROM thumbs.jobs WHERE thumbhash IS NOT NULL").rows == [["2"]])
  }

  @Test func aLeaseTakesTheOtherReadyJobsForItsURLs() async throws {
    let database = try TestDatabase.create()
    let profiles = ["default"] + (try addProfiles(database, count: 2))
    // Profile-major order: a plain lease of one job would take a.jpg/default, then b.jpg/default.
    for profile in profiles {
      for name in ["a", "b"] {
        try sql(database, "SELECT thumbs.enqueue($1, $2)", ["https://origin.example/\(name).jpg", profile])
      }
    }
    // thumbs.enqueue marked every job of both URLs: each has another live job. A URL named once is not.
    try sql(database, "SELECT thumbs.enqueue('https://origin.example/alone.jpg', 'default', -1)")
    #expect(
      try sql(database, "SELECT source_url, bool_and(shares_source) FROM thumbs.jobs GROUP BY 1 ORDER BY 1")
        .rows
        == [
          ["https://origin.example/a.jpg", "t"], ["https://origin.example/alone.jpg", "f"],
          ["https://origin.example/b.jpg", "t"],
        ])
    let pool = BlockingPool(threads: 1, name: "siblings-test")
    defer { pool.shutdown() }
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    defer { queue.client.close() }
    let first = try await queue.lease(workerID: "w1", limit: 1, leaseSeconds: 30, siblings: 32)
    #expect(Set(first.map(\.sourceURL)) == ["https://origin.example/a.jpg"])
    #expect(Set(first.map(\.profileName)) == Set(profiles))
    #expect(first.allSatisfy { !$0.profileSpec.isEmpty }, "every profile's spec comes along")
    let second = try await queue.lease(workerID: "w2", limit: 1, leaseSeconds: 30, siblings: 1)
    #expect(second.count == 2, "one picked, one sibling: the sibling limit holds")
    #expect(Set(second.map(\.sourceURL)) == ["https://origin.example/b.jpg"])
    let third = try await queue.lease(workerID: "w3", limit: 1, leaseSeconds: 30, siblings: 0)
    #expect(third.map(\.sourceURL) == ["https://origin.example/b.jpg"])
    let last = try await queue.lease(workerID: "w4", limit: 5, leaseSeconds: 30, siblings: 32)
    #expect(last.map(\.sourceURL) == ["https://origin.example/alone.jpg"])
  }

  @Test func twoWorkersDownloadEachOfFourPhotosOnce() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let profiles = ["default"] + (try addProfiles(database, count: 2))
    let names = (0..<4).map { "photo\($0).jpg" }
    for name in names {
      try FileManager.default.copyItem(
        at: fixture.origin.root.appendingPathComponent("photo.jpg"),
        to: fixture.origin.root.appendingPathComponent(name))
    }
    for profile in profiles {
      for name in names {
        try sql(database, "SELECT thumbs.enqueue($1, $2)", [fixture.origin.url("/files/\(name)"), profile])
      }
    }
    async let one = drainQueue(databaseURL: database, storage: fixture.storage, concurrency: 2)
    async let two = drainQueue(databaseURL: database, storage: fixture.storage, concurrency: 2)
    let (a, b) = try await (one, two)
    #expect(a.succeeded + b.succeeded == 12)
    for name in names {
      #expect(try await fixture.origin.requestCount("/files/\(name)") == 1, "\(name)")
    }
    #expect(try sql(database, "SELECT sum(downloads) FROM thumbs.originals").rows == [["4"]])
  }

  @Test func jobsWaitingForTheSameURLShareOneDownload() async throws {
    let fixture = try QueueFixture()
    let source = OriginalSource(
      fetcher: Fetcher(limits: FetchLimits(), addressPolicy: try AddressPolicy(allowList: "127.0.0.1")))
    let url = fixture.slowURL(seconds: 1)
    let deliveries = try await withThrowingTaskGroup(of: OriginalSource.Delivery.self) { group in
      for _ in 0..<5 {
        group.addTask {
          let (original, delivery) = try await source.original(for: url)
          #expect(original.content.whole?.count == fixture.photoBytes)
          return delivery
        }
      }
      return try await group.reduce(into: [String]()) { $0.append($1.rawValue) }
    }
    #expect(
      deliveries.sorted() == [
        "downloaded", "shared_download", "shared_download", "shared_download", "shared_download",
      ])
    #expect(try await fixture.origin.requestCount("/slow/photo.jpg") == 1)
    // Fresh in the cache now: no request at all.
    #expect(try await source.original(for: url).1 == .cached)
    #expect(try await fixture.origin.requestCount("/slow/photo.jpg") == 1)
    #expect(source.counters == OriginalSource.Counters(downloads: 1, sharedDownloads: 4, cacheHits: 1))
  }

  @Test func oneJobGivingUpDoesNotStopTheDownloadOthersWaitFor() async throws {
    let fixture = try QueueFixture()
    let source = OriginalSource(
      fetcher: Fetcher(limits: FetchLimits(), addressPolicy: try AddressPolicy(allowList: "127.0.0.1")))
    let url = fixture.slowURL(seconds: 1.5)
    let quitter = Task { try await source.original(for: url) }
    try await Task.sleep(for: .milliseconds(100))
    let stayer = Task { try await source.original(for: url) }
    try await Task.sleep(for: .milliseconds(200))
    quitter.cancel()
    let (original, delivery) = try await stayer.value
    #expect(original.content.whole?.count == fixture.photoBytes)
    #expect(delivery == .sharedDownload)
    #expect(await (try? quitter.value) == nil, "the cancelled waiter fails")
    #expect(try await fixture.origin.requestCount("/slow/photo.jpg") == 1)

    // The last waiter leaving cancels the download itself: it ends long before its 20 s.
    let lonely = fixture.slowURL(seconds: 20).replacingOccurrences(
      of: "photo.jpg", with: "photo.jpg?lonely=1")
    let started = Date()
    let alone = Task { try await source.original(for: lonely) }
    try await Task.sleep(for: .milliseconds(300))
    alone.cancel()
    _ = await alone.result
    #expect(Date().timeIntervalSince(started) < 3)
    #expect(source.counters.downloads == 1, "the cancelled download was not cached")
  }

  /// A job waiting for a slot has its original downloaded ahead (JobProcessor.waitingForSlot): when
  /// the job asks, the download is its own (one GET, delivered as `downloaded`), and a failure reaches
  /// the job as it happened instead of being tried again at once.
  @Test func aPrefetchIsTheWaitingJobsOwnDownloadFailuresIncluded() async throws {
    let fixture = try QueueFixture()
    let source = OriginalSource(
      fetcher: Fetcher(limits: FetchLimits(), addressPolicy: try AddressPolicy(allowList: "127.0.0.1")))
    let url = fixture.slowURL(seconds: 0.5)
    source.prefetch(url)
    source.prefetch(url)  // already on its way: nothing more
    try await Task.sleep(for: .milliseconds(100))
    let (original, delivery) = try await source.original(for: url)
    #expect(original.content.whole?.count == fixture.photoBytes)
    #expect(delivery == .downloaded)
    #expect(try await fixture.origin.requestCount("/slow/photo.jpg") == 1)
    #expect(source.counters == OriginalSource.Counters(downloads: 1))

    // A prefetch that ended before the job asked: still the job's own download, not a cache hit.
    let other = fixture.origin.url("/files/photo.jpg")
    source.prefetch(other)
    try await Task.sleep(for: .milliseconds(500))
    #expect(try await source.original(for: other).1 == .downloaded)
    #expect(try await source.original(for: other).1 == .cached, "taken once, then an ordinary cache entry")

    // A prefetch that ended and whose job went away is handed back, for its download to be recorded.
    let orphan = fixture.origin.url("/files/photo.jpg?orphan=1")
    source.prefetch(orphan)
    try await Task.sleep(for: .milliseconds(500))
    let dropped = try #require(source.forgetPrefetch(orphan))
    #expect(dropped.1 == .downloaded && dropped.0.content.whole?.count == fixture.photoBytes)
    #expect(source.forgetPrefetch(orphan) == nil, "handed back once")

    // The origin answers 429 + Retry-After to the first GET only: the job gets that answer, not the file
    // a second GET would bring (which would skip the queue's backoff).
    let limited = fixture.origin.url("/retry-after/300/photo.jpg")
    source.prefetch(limited)
    try await Task.sleep(for: .milliseconds(500))
    await #expect(throws: JobError.self) { try await source.original(for: limited) }
    #expect(try await fixture.origin.requestCount("/retry-after/300/photo.jpg") == 1)

    // A prefetch whose job went away is dropped, and cancelled while it runs.
    let abandoned = fixture.slowURL(seconds: 20).replacingOccurrences(
      of: "photo.jpg", with: "photo.jpg?gone=1")
    source.prefetch(abandoned)
    // Counted, not slept for: on a loaded machine the GET may take a while to reach the origin.
    #expect(
      try await fixture.origin.requestCount("/slow/photo.jpg", reaching: 2) == 2,
      "the prefetch's GET is at the origin")
    #expect(source.forgetPrefetch(abandoned) == nil, "still running: cancelled, nothing to record")
    let started = ContinuousClock.now
    let next = Task { try await source.original(for: abandoned) }
    // The slow path's GETs: the first prefetch, the forgotten one, and now a new one. Had the job joined
    // the forgotten download, the count would stay at 2.
    #expect(
      try await fixture.origin.requestCount("/slow/photo.jpg", reaching: 3) == 3,
      "a new download, not the forgotten one")
    next.cancel()
    _ = await next.result
    #expect(started.duration(to: .now) < .seconds(10), "cancelled, not waited out (the origin takes 20 s)")
  }

  @Test func aStaleCopyIsRevalidatedWithAConditionalGET() async throws {
    let fixture = try QueueFixture()
    var settings = OriginalSource.Settings()
    settings.freshSeconds = 0  // every use after the first asks the origin
    let source = OriginalSource(
      fetcher: Fetcher(limits: FetchLimits(), addressPolicy: try AddressPolicy(allowList: "127.0.0.1")),
      settings: settings)
    let url = fixture.origin.url("/files/photo.jpg")
    let first = try await source.original(for: url)
    let second = try await source.original(for: url)
    #expect(first.1 == .downloaded && second.1 == .revalidated)
    #expect(first.0.content == second.0.content)
    #expect(first.0.validators.etag != nil)
    #expect(try await fixture.origin.requestCount("/files/photo.jpg") == 2, "the second GET answered 304")

    // With the cache off nothing is kept: every use downloads.
    settings.cacheBytes = 0
    let uncached = OriginalSource(
      fetcher: Fetcher(limits: FetchLimits(), addressPolicy: try AddressPolicy(allowList: "127.0.0.1")),
      settings: settings)
    _ = try await uncached.original(for: url)
    #expect(try await uncached.original(for: url).1 == .downloaded)
  }
}
