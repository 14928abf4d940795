import Blocking
import Foundation
import Imaging
import Queue
import TestSupport
import Testing

/// A worker's stop, from outside. SIGTERM at any point of its start-up ends in exit 0 (the short run of
/// tools/stop-at-start.py; its 200-try loop is in docs/reliability.md). A stop that cannot finish,
/// because the database hangs without closing anything, ends in exit 70 once the grace plus the stop
/// watchdog's margin have passed, and the log names the services still running and what each awaited.
@Suite(
  .serialized,
  .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct StopTests {
  struct Summary: Decodable {
    let tries: Int
    let failed: Int
    let jobs: Int
    let jobsLeftDue: Int

    enum CodingKeys: String, CodingKey {
      case tries, failed, jobs
      case jobsLeftDue = "jobs_left_due"
    }
  }

  @Test func aSIGTERMAtEveryPointOfTheStartUpEndsInExitZero() throws {
    let photos = try makeTemporaryDirectory()
    for i in 0..<4 {
      try Data(try makeTestJPEG(width: 900 + i * 200, height: 700 + i * 100)).write(
        to: photos.appendingPathComponent("photo\(i).jpg"))
    }
    let summaryURL = photos.appendingPathComponent("summary.json")
    let binary = try #require(WorkerProcess.binary)
    // Two tries of each of the script's ten points.
    let (code, output) = try runProgram(
      "/usr/bin/timeout",
      [
        "600", "python3", TestDatabase.repoRoot.appendingPathComponent("tools/stop-at-start.py").path,
        "--thumbd", binary.path, "--photos", photos.path, "--tries", "20", "--seed", "1", "--json",
        summaryURL.path,
      ], withStandardError: true)
    #expect(code == 0, "stop-at-start.py exit \(code):\n\(output.suffix(6000))")
    let summary = try JSONDecoder().decode(Summary.self, from: Data(contentsOf: summaryURL))
    #expect(summary.tries == 20)
    #expect(summary.failed == 0, "\(output.suffix(6000))")
    #expect(summary.jobs > 40)
    #expect(summary.jobsLeftDue == 0)
  }

  @Test func aStopThatCannotFinishEndsInExit70NamingWhatItAwaited() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    var components = try #require(URLComponents(string: database))
    let freeze = fixture.storage.deletingLastPathComponent().appendingPathComponent("freeze")
    let proxy = try HelperProcess(
      "/usr/bin/env",
      [
        "python3", TestDatabase.repoRoot.appendingPathComponent("Tests/Support/freeze-proxy.py").path,
        "--target", "\(components.host ?? "127.0.0.1"):\(components.port ?? 5432)", "--freeze-file",
        freeze.path,
      ])
    components.port = try proxy.announcedPort()
    let worker = try WorkerProcess(
      databaseURL: try #require(components.string), storage: fixture.storage,
      // No lease statement once the job is leased (one slot, none leased ahead, no polling): a lease
      // caught by the freeze would hold the stop instead of the hand-back this test is about.
      settings: [
        "THUMBD_SHUTDOWN_GRACE": "1", "THUMBD_LEASE_TTL": "2", "THUMBD_POLL_INTERVAL": "60",
        "THUMBD_CONCURRENCY": "1", "THUMBD_ORIGINAL_CACHE": "0",
      ])
    _ = try sql(database, "SELECT thumbs.enqueue($1)", [fixture.slowURL(seconds: 30)])
    #expect(
      try await eventually(timeout: 15) {
        try sql(database, "SELECT state FROM thumbs.jobs").rows[0][0] == "running"
      }, "log:\n\(worker.log)")

    // The database stops answering, without closing a connection: the hand-back can never be written.
    try Data().write(to: freeze)
    let stopped = ContinuousClock.now
    worker.send(SIGTERM)
    let code = await worker.waitForExit(timeout: 40)
    let took = stopped.duration(to: .now)
    try FileManager.default.removeItem(at: freeze)

    #expect(code == 70, "log:\n\(worker.log)")
    // The grace (1 s) plus the watchdog's margin (15 s), and not much more.
    #expect(took >= .seconds(15) && took < .seconds(25), "stopped after \(took)")
    let log = worker.log
    #expect(log.contains("graceful stop overran the shutdown grace plus its margin"), "log:\n\(log)")
    #expect(log.contains("services.holding_the_stop=producer "), "log:\n\(log)")
    let producer = try #require(
      log.split(separator: "\n").first {
        $0.contains("service still running") && $0.contains("service=producer")
      },
      "log:\n\(log)")
    #expect(producer.contains("awaiting=the hand-back of the jobs still running"))
    #expect(producer.contains("service.asked_to_stop=true"))
    #expect(
      log.split(separator: "\n").contains {
        $0.contains("service still running") && $0.contains("service=keeper")
      })

    // Nothing was lost: the job still holds the dead worker's lease, and a rescue requeues it once it
    // expires, as after a kill.
    #expect(try sql(database, "SELECT state FROM thumbs.jobs").rows[0][0] == "running")
    let pool = BlockingPool(threads: 1, name: "stop-test")
    defer { pool.shutdown() }
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    defer { queue.client.close() }
    #expect(
      try await eventually(timeout: 10) {
        try sql(database, "SELECT lease_expires_at < now() FROM thumbs.jobs").rows[0][0] == "t"
      })
    #expect(try await queue.rescueExpired().count == 1)
    #expect(try sql(database, "SELECT state, attempts FROM thumbs.jobs").rows[0] == ["queued", "1"])
  }
}
