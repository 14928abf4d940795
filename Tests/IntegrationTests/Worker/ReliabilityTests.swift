import Foundation
import TestSupport
import Testing

/// Real worker processes, killed, frozen and stopped: nothing is lost, nothing is done twice.
@Suite(
  .serialized,
  .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct ReliabilityTests {
  /// Waits until the job is running, leased by a worker whose id contains `pid`.
  private func waitUntilRunning(_ database: String, job: String, pid: pid_t) async throws -> Bool {
    try await eventually(timeout: 15) {
      let row = try sql(database, "SELECT state, leased_by FROM thumbs.jobs WHERE id = $1::bigint", [job])
        .rows[0]
      return row[0] == "running" && (row[1] ?? "").contains(":\(pid):")
    }
  }

  /// A fresh database, one job whose download takes `seconds`, and a worker process running it.
  private func workerOnSlowJob(
    seconds: Double, settings: [String: String]
  ) async throws -> (
    database: String, fixture: QueueFixture, job: String, worker: WorkerProcess
  ) {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let job = try sql(database, "SELECT thumbs.enqueue($1)", [fixture.slowURL(seconds: seconds)]).rows[0][0]!
    let worker = try WorkerProcess(databaseURL: database, storage: fixture.storage, settings: settings)
    #expect(try await waitUntilRunning(database, job: job, pid: worker.pid), "log:\n\(worker.log)")
    return (database, fixture, job, worker)
  }

  @Test func aKilledWorkersJobIsFinishedByAnotherAfterItsLeaseExpires() async throws {
    let (database, fixture, _, doomed) = try await workerOnSlowJob(
      seconds: 4, settings: ["THUMBD_LEASE_TTL": "2"])
    doomed.send(SIGKILL)
    #expect(await doomed.waitForExit(timeout: 5) == 128 + SIGKILL)

    // Before the lease expires, nobody may take the job.
    let early = try await drainQueue(databaseURL: database, storage: fixture.storage)
    #expect(early.succeeded == 0)
    #expect(try sql(database, "SELECT state FROM thumbs.jobs").rows[0][0] == "running")
    try await Task.sleep(for: .seconds(2.5))
    let rescuer = try await drainQueue(databaseURL: database, storage: fixture.storage)
    #expect(rescuer.succeeded == 1)
    let row = try sql(database, "SELECT state, attempts FROM thumbs.jobs").rows[0]
    #expect(row == ["succeeded", "2"])
    #expect(try sql(database, "SELECT count(*) FROM thumbs.variants").rows[0][0] == "4")
    let history = try sql(database, "SELECT attempt, outcome, worker FROM thumbs.job_attempts").rows
    #expect(history.count == 1)
    #expect(history.first?[0] == "1" && history.first?[1] == "lease_expired")
    let attemptWorker = history.first?[2] ?? ""
    #expect(attemptWorker.contains(":\(doomed.pid):"))
  }

  @Test func aFrozenWorkersWritesAreRefusedAfterAnotherFinishedItsJob() async throws {
    let (database, fixture, job, zombie) = try await workerOnSlowJob(
      seconds: 3, settings: ["THUMBD_LEASE_TTL": "2"])
    zombie.send(SIGSTOP)
    try await Task.sleep(for: .seconds(2.5))  // past the lease: no heartbeat can have extended it

    let healthy = try await drainQueue(databaseURL: database, storage: fixture.storage)
    #expect(healthy.succeeded == 1)
    let finished = try sql(database, "SELECT state, attempts, leased_by, finished_at FROM thumbs.jobs").rows[
      0]
    #expect(finished[0] == "succeeded" && finished[1] == "2")
    #expect(!(finished[2] ?? "").contains(":\(zombie.pid):"))

    zombie.send(SIGCONT)
    // The zombie wakes up believing it holds the job; its next write (heartbeat or outcome) is refused.
    let refused = await eventually(timeout: 10) { zombie.log.contains("lease_lost job_id=\(job)") }
    #expect(refused, "log:\n\(zombie.log)")
    zombie.send(SIGTERM)
    #expect(await zombie.waitForExit(timeout: 10) == 0, "log:\n\(zombie.log)")
    // Nothing the zombie did changed the finished job.
    let after = try sql(database, "SELECT state, attempts, leased_by, finished_at FROM thumbs.jobs").rows[0]
    #expect(after == finished)
    #expect(try sql(database, "SELECT count(*) FROM thumbs.variants").rows[0][0] == "4")
    withExtendedLifetime(fixture) {}  // the zombie's download needs the origin until here
  }

  @Test func sigtermHandsRunningJobsBackWithoutSpendingAnAttempt() async throws {
    let (database, fixture, _, worker) = try await workerOnSlowJob(
      seconds: 20, settings: ["THUMBD_SHUTDOWN_GRACE": "0.5"])
    #expect(try sql(database, "SELECT count(*) FROM thumbs.workers").rows[0][0] == "1")
    let stopAsked = Date()
    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 10) == 0, "log:\n\(worker.log)")
    #expect(Date().timeIntervalSince(stopAsked) < 5)
    #expect(worker.log.contains("handed back unfinished jobs"))

    let row = try sql(database, "SELECT state, attempts, lease_token FROM thumbs.jobs").rows[0]
    #expect(row == ["queued", "0", nil])
    let history = try sql(database, "SELECT outcome FROM thumbs.job_attempts").rows
    #expect(history == [["handed_back"]])
    #expect(try sql(database, "SELECT count(*) FROM thumbs.workers").rows[0][0] == "0")
    withExtendedLifetime(fixture) {}  // the origin serves until here
  }

  @Test func sigtermLetsAJobThatFinishesWithinTheGracePeriodComplete() async throws {
    let (database, fixture, _, worker) = try await workerOnSlowJob(
      seconds: 2, settings: ["THUMBD_SHUTDOWN_GRACE": "15"])
    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 15) == 0, "log:\n\(worker.log)")
    #expect(try sql(database, "SELECT state, attempts FROM thumbs.jobs").rows[0] == ["succeeded", "1"])
    withExtendedLifetime(fixture) {}  // the origin serves until here
  }
}
