import Foundation
import Queue
import TestSupport
import Testing

/// `thumbd worker` as operators run it: probes, metrics, JSON logs, a database that goes away, SIGTERM.
@Suite(
  .serialized,
  .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct ServiceTests {
  @Test func metricsMoveDuringARunAndJSONLogsCarryJobIDs() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let worker = try WorkerProcess(
      databaseURL: database, storage: fixture.storage,
      settings: ["THUMBD_LOG_FORMAT": "json", "THUMBD_CONCURRENCY": "2"])
    let port = try #require(await worker.httpPort(), "log:\n\(worker.log)")
    #expect(
      await eventually(timeout: 15) { HTTPProbe.get(port, "/readyz").status == 200 }, "log:\n\(worker.log)")
    let before = try #require(Metrics(HTTPProbe.get(port, "/metrics")))
    #expect(before.value("thumbd_jobs_total", ["outcome": "succeeded"]) == nil)
    #expect(before.value("thumbd_memory_budget_bytes") ?? 0 > 0)

    let jobs = 6
    for index in 0..<jobs {
      _ = try sql(
        database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/photo.jpg?copy=\(index)")])
    }
    _ = try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/missing.jpg")])
    #expect(
      try await eventually(timeout: 30) {
        try sql(database, "SELECT count(*) FROM thumbs.jobs WHERE state IN ('succeeded', 'failed')").rows[0][
          0]
          == "\(jobs + 1)"
      })
    let after = try #require(Metrics(HTTPProbe.get(port, "/metrics")))
    #expect(after.value("thumbd_jobs_total", ["outcome": "succeeded", "error_code": "none"]) == Double(jobs))
    #expect(after.value("thumbd_jobs_total", ["outcome": "failed", "error_code": "not_found"]) == 1)
    // Every job downloads; a copy whose bytes a finished job already rendered takes its variants
    // instead of decoding and storing (render reuse), so those stages count the other jobs.
    let reused = after.value("thumbd_renders_reused_total") ?? 0
    #expect(after.value("thumbd_stage_seconds_count", ["stage": "fetch"]) ?? 0 >= Double(jobs))
    for stage in ["decode", "resize", "encode", "store"] {
      #expect(
        (after.value("thumbd_stage_seconds_count", ["stage": stage]) ?? 0) + reused == Double(jobs),
        "\(stage)")
    }
    for stage in ["fetch", "decode", "resize", "encode", "store"] {
      #expect(after.value("thumbd_stage_seconds_sum", ["stage": stage]) ?? 0 > 0, "\(stage)")
    }
    #expect(after.value("thumbd_download_bytes_total") == Double(jobs * fixture.photoBytes))
    #expect(after.value("thumbd_jobs_running") == 0)
    #expect(after.value("thumbd_leases_lost_total") == 0)
    #expect(after.value("thumbd_queue_jobs", ["state": "queued"]) != nil)

    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 15) == 0)
    // Every line is one JSON object with ts, level and msg; job lines carry job.id.
    let lines = worker.log.split(separator: "\n")
    var jobLines = 0
    for line in lines {
      let object = try #require(
        try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
      #expect(object["ts"] is String && object["level"] is String && object["msg"] is String, "\(line)")
      if (object["msg"] as? String)?.hasPrefix("job ") == true {
        #expect(object["job.id"] is String, "\(line)")
        jobLines += 1
      }
    }
    #expect(jobLines == jobs + 1)
  }

  /// A worker started before its database waits for it, is not ready until it connects, goes unready
  /// while the database is stopped and ready again when it is back, and never exits meanwhile. The
  /// password of its DATABASE_URL appears in no log line.
  @Test func readinessFollowsTheDatabaseAndTheWorkerNeverExitsForIt() async throws {
    let server = try PrivatePostgres()
    defer { server.stop() }
    let password = "hunter2-never-logged"
    let url = server.url.replacingOccurrences(of: "postgres@", with: "postgres:\(password)@")
    let fixture = try QueueFixture()
    try server.pause()
    let worker = try WorkerProcess(
      databaseURL: url, storage: fixture.storage, settings: ["THUMBD_LOG_FORMAT": "json"])
    let port = try #require(await worker.httpPort(), "log:\n\(worker.log)")
    #expect(HTTPProbe.get(port, "/healthz").status == 200)
    #expect(HTTPProbe.get(port, "/readyz").status == 503)
    #expect(
      await eventually(timeout: 10) { worker.log.components(separatedBy: "database unreachable").count > 3 },
      "log:\n\(worker.log)")

    try server.resume()
    #expect(
      await eventually(timeout: 20) { HTTPProbe.get(port, "/readyz").status == 200 }, "log:\n\(worker.log)")
    let first = try sql(url, "SELECT thumbs.enqueue($1) AS id", [fixture.origin.url("/files/photo.jpg?n=1")])
      .ids[0]
    #expect(try await eventually(timeout: 20) { try state(url, first) == "succeeded" })

    try server.pause()
    #expect(
      await eventually(timeout: 20) { HTTPProbe.get(port, "/readyz").status == 503 }, "log:\n\(worker.log)")
    #expect(HTTPProbe.get(port, "/healthz").status == 200)
    try await Task.sleep(for: .seconds(3))
    #expect(worker.hasExited == false)
    try server.resume()
    #expect(
      await eventually(timeout: 20) { HTTPProbe.get(port, "/readyz").status == 200 }, "log:\n\(worker.log)")
    let second = try sql(url, "SELECT thumbs.enqueue($1) AS id", [fixture.origin.url("/files/photo.jpg?n=2")])
      .ids[0]
    #expect(
      try await eventually(timeout: 20) { try state(url, second) == "succeeded" }, "log:\n\(worker.log)")

    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 15) == 0)
    #expect(!worker.log.contains(password))
    #expect(worker.log.contains("database unreachable"))
  }

  /// SIGTERM while jobs run: readiness drops at once, the worker exits 0 within the grace period, and
  /// every job is either finished or queued again (none left running, none lost).
  @Test func sigtermMidRunEndsEveryJobFinishedOrQueuedAgain() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let worker = try WorkerProcess(
      databaseURL: database, storage: fixture.storage,
      settings: ["THUMBD_CONCURRENCY": "2", "THUMBD_SHUTDOWN_GRACE": "2"])
    let port = try #require(await worker.httpPort(), "log:\n\(worker.log)")
    // Two quick jobs, two that outlast the grace period.
    for (index, seconds) in [0.1, 0.1, 8, 8].enumerated() {
      _ = try sql(database, "SELECT thumbs.enqueue($1)", [fixture.slowURL(seconds: seconds) + "&n=\(index)"])
    }
    #expect(
      try await eventually(timeout: 15) {
        try sql(database, "SELECT count(*) FROM thumbs.jobs WHERE state = 'running'").rows[0][0] == "2"
          && sql(database, "SELECT count(*) FROM thumbs.jobs WHERE state = 'succeeded'").rows[0][0] == "2"
      }, "log:\n\(worker.log)")
    let stopped = ContinuousClock.now
    worker.send(SIGTERM)
    #expect(await eventually(timeout: 1) { HTTPProbe.get(port, "/readyz").status == 503 })
    #expect(await worker.waitForExit(timeout: 10) == 0, "log:\n\(worker.log)")
    #expect(stopped.duration(to: .now) < .seconds(6))
    let states = try sql(database, "SELECT state, attempts FROM thumbs.jobs ORDER BY id").rows
    #expect(states.map { $0[0] } == ["succeeded", "succeeded", "queued", "queued"])
    #expect(states.suffix(2).allSatisfy { $0[1] == "0" })  // a hand-back does not count as an attempt
    #expect(worker.log.contains("handed back unfinished jobs"))
  }

  /// `/debug/jobs` lists the jobs the worker holds, each with its phase: with one slot, the job whose
  /// original is slow to arrive is fetching and the one leased ahead waits for the slot.
  @Test func debugJobsSaysWhereEveryHeldJobIs() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let worker = try WorkerProcess(
      databaseURL: database, storage: fixture.storage,
      settings: ["THUMBD_CONCURRENCY": "1", "THUMBD_SHUTDOWN_GRACE": "1"])
    let port = try #require(await worker.httpPort(), "log:\n\(worker.log)")
    #expect(
      await eventually(timeout: 15) { HTTPProbe.get(port, "/readyz").status == 200 }, "log:\n\(worker.log)")
    #expect(try HeldJobsView(HTTPProbe.get(port, "/debug/jobs")).jobs.isEmpty)
    // One statement, so one notification: each notification while the slot and the read-ahead are taken
    // leases one job more (ProducerPacing.onNotification), which would make the count depend on timing.
    _ = try sql(
      database, "SELECT thumbs.enqueue($1 || '&n=' || n) FROM generate_series(0, 2) n",
      [fixture.slowURL(seconds: 20)])
    var view = HeldJobsView.empty
    #expect(
      try await eventually(timeout: 15) {
        view = try HeldJobsView(HTTPProbe.get(port, "/debug/jobs"))
        return view.phases == ["fetching", "awaiting_slot"]
      }, "last answer: \(view.jobs); log:\n\(worker.log)")
    let running = try sql(database, "SELECT id FROM thumbs.jobs WHERE state = 'running' ORDER BY id").rows
    #expect(view.jobs.map { "\($0["id"] ?? "")" } == running.map { $0[0] })
    let fetching = try #require(view.jobs.first)
    #expect(fetching["holds_slot"] as? Bool == true)
    #expect((fetching["since"] as? String)?.hasPrefix("20") == true)
    #expect((fetching["seconds"] as? Double).map { $0 >= 0 && $0 < 60 } == true)
    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 15) == 0, "log:\n\(worker.log)")
    #expect(try sql(database, "SELECT count(*) FROM thumbs.jobs WHERE state = 'queued'").rows[0][0] == "3")
  }

  /// A second SIGTERM during the grace period exits at once with 130; the job keeps its lease, to be
  /// rescued when it expires.
  @Test func aSecondSignalExitsAtOnce() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let worker = try WorkerProcess(
      databaseURL: database, storage: fixture.storage, settings: ["THUMBD_SHUTDOWN_GRACE": "30"])
    _ = try sql(database, "SELECT thumbs.enqueue($1)", [fixture.slowURL(seconds: 10)])
    #expect(
      try await eventually(timeout: 15) {
        try sql(database, "SELECT state FROM thumbs.jobs").rows[0][0] == "running"
      }, "log:\n\(worker.log)")
    worker.send(SIGTERM)
    #expect(await eventually(timeout: 5) { worker.log.contains("stopping: waiting for running jobs") })
    let second = ContinuousClock.now
    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 5) == 130)
    #expect(second.duration(to: .now) < .seconds(3))
    #expect(try sql(database, "SELECT state FROM thumbs.jobs").rows[0][0] == "running")
  }

  /// A worker whose HTTP address is taken exits non-zero before it announces itself or leases anything.
  @Test func aTakenHTTPPortStopsTheWorkerBeforeItTouchesTheQueue() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let first = try WorkerProcess(databaseURL: database, storage: fixture.storage)
    let port = try #require(await first.httpPort(), "log:\n\(first.log)")
    #expect(
      try await eventually(timeout: 10) {
        try sql(database, "SELECT count(*) FROM thumbs.workers").rows[0][0] == "1"
      })
    let second = try WorkerProcess(
      databaseURL: database, storage: fixture.storage, settings: ["THUMBD_HTTP_ADDRESS": "127.0.0.1:\(port)"])
    let code = await second.waitForExit(timeout: 15)
    #expect(code != nil && code != 0, "log:\n\(second.log)")
    #expect(second.log.contains("Address already in use"), "log:\n\(second.log)")
    #expect(!second.log.contains("worker started"))
    #expect(try sql(database, "SELECT count(*) FROM thumbs.workers").rows[0][0] == "1")
    first.send(SIGTERM)
    #expect(await first.waitForExit(timeout: 15) == 0)
  }

  /// SIGTERM while the database has never answered: the worker exits 0 at once instead of waiting for it.
  @Test func aWorkerWaitingForItsDatabaseStopsAtOnce() async throws {
    let fixture = try QueueFixture()
    let worker = try WorkerProcess(
      databaseURL: "postgresql://thumbd@127.0.0.1:1/none", storage: fixture.storage)
    #expect(
      await eventually(timeout: 10) { worker.log.contains("database unreachable") }, "log:\n\(worker.log)")
    let stopped = ContinuousClock.now
    worker.send(SIGTERM)
    let code = await worker.waitForExit(timeout: 10)
    #expect(code == 0, "exit \(String(describing: code)), log:\n\(worker.log)")
    #expect(stopped.duration(to: .now) < .seconds(3))
  }

  private func state(_ url: String, _ id: Int64) throws -> String? {
    try sql(url, "SELECT state FROM thumbs.jobs WHERE id = $1::bigint", [String(id)]).rows.first?[0] ?? nil
  }
}

/// A PostgreSQL of the test's own (scripts/pg-temp.sh), which it can stop and start again on the same
/// port without disturbing the server the other suites share.
final class PrivatePostgres: Sendable {
  let directory: String
  let url: String

  init() throws {
    directory = try makeTemporaryDirectory().appendingPathComponent("pg").path
    url = try Self.script(["start", directory]).trimmingCharacters(in: .whitespacesAndNewlines)
    let connection = try PostgresConnection(conninfo: url)
    defer { connection.close() }
    _ = try Migrator(directory: TestDatabase.repoRoot.appendingPathComponent("migrations")).apply(
      on: connection)
  }

  func pause() throws { _ = try Self.script(["pause", directory]) }
  func resume() throws { _ = try Self.script(["resume", directory]) }
  func stop() { _ = try? Self.script(["stop", directory]) }

  @discardableResult
  static func script(_ arguments: [String]) throws -> String {
    let script = TestDatabase.repoRoot.appendingPathComponent("scripts/pg-temp.sh").path
    let (code, output) = try runProgram("/bin/bash", [script] + arguments)
    guard code == 0 else { throw CocoaError(.executableLoad) }
    return output
  }
}

/// GETs on loopback with curl: the status and the body.
enum HTTPProbe {
  static func get(_ port: Int, _ path: String) -> (status: Int, body: String) {
    (try? curl(["-m", "5", "http://127.0.0.1:\(port)\(path)"])) ?? (0, "")
  }
}

/// Runs curl (installed by scripts/install-deps.sh) with `arguments`: the HTTP status (0 when there was
/// no answer) and the body.
func curl(_ arguments: [String]) throws -> (status: Int, body: String) {
  let (_, text) = try runProgram("/usr/bin/curl", ["-s", "-w", "\n%{http_code}"] + arguments)
  guard let split = text.lastIndex(of: "\n") else { return (0, text) }
  return (Int(text[text.index(after: split)...]) ?? 0, String(text[..<split]))
}

/// A Prometheus text exposition, read into samples.
struct Metrics {
  var samples: [(name: String, labels: [String: String], value: Double)] = []

  init?(_ response: (status: Int, body: String)) {
    guard response.status == 200 else { return nil }
    for line in response.body.split(separator: "\n") where !line.hasPrefix("#") {
      guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
        continue
      }
      let series = line[..<space]
      var labels: [String: String] = [:]
      var name = String(series)
      if let brace = series.firstIndex(of: "{") {
        name = String(series[..<brace])
        for pair in series[series.index(after: brace)..<series.index(before: series.endIndex)].split(
          separator: ",")
        {
          let parts = pair.split(separator: "=", maxSplits: 1)
          if parts.count == 2 { labels[String(parts[0])] = parts[1].trimmingCharacters(in: ["\""]) }
        }
      }
      samples.append((name, labels, value))
    }
  }

  /// The sum over the series of `name` whose labels include `labels`; nil when there is none.
  func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
    let matching = samples.filter { sample in
      sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value }
    }
    return matching.isEmpty ? nil : matching.reduce(0) { $0 + $1.value }
  }
}

/// The JSON of `/debug/jobs`: one object per held job, in id order.
struct HeldJobsView {
  var jobs: [[String: Any]]

  static var empty: HeldJobsView { HeldJobsView(jobs: []) }

  private init(jobs: [[String: Any]]) { self.jobs = jobs }

  init(_ answer: (status: Int, body: String)) throws {
    guard answer.status == 200 else { throw ProbeError.status(answer.status) }
    jobs = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [[String: Any]])
  }

  var phases: [String] { jobs.map { $0["phase"] as? String ?? "?" } }

  enum ProbeError: Error { case status(Int) }
}
