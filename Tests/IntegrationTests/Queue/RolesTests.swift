import Foundation
import Queue
import Testing

@testable import Console

/// deploy/sql/roles.sql: a real worker runs as `thumbd_worker`, the backend as `thumbd_enqueuer` can
/// enqueue, retry, cancel and read but not change jobs, and neither can drop, truncate or alter.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct RolesTests {
  /// A migrated database with the roles applied, and login roles of the worker and the backend.
  struct Deployment {
    let owner: String
    let worker: String
    let enqueuer: String
    let reader: String
  }

  func deployment() throws -> Deployment {
    let owner = try TestDatabase.create()
    let script = try String(
      contentsOf: TestDatabase.repoRoot.appendingPathComponent("deploy/sql/roles.sql"), encoding: .utf8)
    let connection = try PostgresConnection(conninfo: owner)
    defer { connection.close() }
    try connection.execute(script: script)
    try connection.execute(script: script)  // idempotent: a second run after every migrate
    let tag = UInt32.random(in: 0...UInt32.max)
    let (worker, enqueuer, reader) = ("w_\(tag)", "e_\(tag)", "r_\(tag)")
    try connection.execute(
      script: """
        CREATE ROLE \(worker) LOGIN IN ROLE thumbd_worker;
        CREATE ROLE \(enqueuer) LOGIN IN ROLE thumbd_enqueuer;
        CREATE ROLE \(reader) LOGIN IN ROLE thumbd_reader;
        """)
    return Deployment(
      owner: owner, worker: try url(owner, user: worker), enqueuer: try url(owner, user: enqueuer),
      reader: try url(owner, user: reader))
  }

  func url(_ url: String, user: String) throws -> String {
    var components = try #require(URLComponents(string: url))
    components.user = user
    return try #require(components.string)
  }

  /// The SQLSTATE a statement fails with, or nil when it succeeds.
  func refusal(_ url: String, _ statement: String) -> String? {
    do {
      try sql(url, statement)
      return nil
    } catch let error as PostgresError {
      return error.sqlState ?? "no sqlstate: \(error.message)"
    } catch {
      return "\(error)"
    }
  }

  @Test func aWorkerRunsAsThumbdWorkerAndTheBackendReadsTheResult() async throws {
    let deployment = try deployment()
    let fixture = try QueueFixture()
    let id = try #require(
      try sql(deployment.enqueuer, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/photo.jpg")])
        .rows.first?[0] ?? nil)
    let totals = try await drainQueue(databaseURL: deployment.worker, storage: fixture.storage)
    #expect(totals.succeeded == 1 && totals.failed == 0)
    let job = try sql(deployment.enqueuer, "SELECT state, attempts FROM thumbs.jobs WHERE id = $1", [id]).rows
    #expect(job == [["succeeded", "1"]])
    let variants = try sql(
      deployment.enqueuer, "SELECT count(*) FROM thumbs.variants WHERE job_id = $1", [id])
    #expect(variants.rows[0][0] == "4")
    let overview = try sql(deployment.enqueuer, "SELECT state, jobs FROM thumbs.queue_overview").rows
    #expect(overview.contains(["succeeded", "1"]))
    // The worker recorded its original and withdrew its registry row on the way out.
    #expect(try sql(deployment.owner, "SELECT count(*) FROM thumbs.originals").rows[0][0] == "1")
    #expect(try sql(deployment.owner, "SELECT count(*) FROM thumbs.workers").rows[0][0] == "0")
  }

  @Test func theEnqueuerDoesWhatABackendDoesAndNothingElse() throws {
    let deployment = try deployment()
    let e = deployment.enqueuer
    let id = try #require(
      try sql(e, "SELECT thumbs.enqueue('https://example.com/a.jpg')").rows.first?[0] ?? nil)
    #expect(try sql(e, "SELECT thumbs.cancel(\(id))").rows[0][0] == "t")
    #expect(try sql(e, "SELECT thumbs.retry(\(id))").rows[0][0] == "t")
    #expect(try sql(e, "SELECT state FROM thumbs.jobs WHERE id = \(id)").rows[0][0] == "queued")
    // Its users take turns: it names the owner, and sees who holds the queue.
    try sql(e, "SELECT thumbs.enqueue('https://example.com/b.jpg', owner => 'user-42')")
    #expect(
      try sql(e, "SELECT queued FROM thumbs.owner_overview WHERE owner = 'user-42'").rows == [["1"]])
    // It reads the events (the cancel wrote one) and a photo's current thumbnails, and changes neither.
    let events = try sql(e, "SELECT kind FROM thumbs.events_after(NULL, 10)").rows
    #expect(events == [["cancelled"]], "\(events)")
    #expect(try sql(e, "SELECT count(*) FROM thumbs.current_variants").rows == [["0"]])
    // The rest of what docs/integration.md has a backend do: a presigned URL's identity, a re-render
    // and how it goes, forgetting.
    #expect(
      try sql(e, "SELECT thumbs.source_identity('https://b.example.com/k.jpg?X-Amz-Signature=abc')").rows[0][
        0]
        == "https://b.example.com/k.jpg")
    #expect(try sql(e, "SELECT thumbs.rerender('default')").rows.count == 1)
    #expect(try sql(e, "SELECT count(*) FROM thumbs.rerender_overview").rows.count == 1)
    #expect(try sql(e, "SELECT thumbs.forget_external('nobody')").rows.count == 1)
    // A spec checked before an operator saves it.
    #expect(
      try sql(e, #"SELECT thumbs.check_profile('{"variants": []}')"#).rows == [
        [#"{"spec needs a non-empty \"variants\" array"}"#]
      ])
    let denied = "42501"  // insufficient_privilege
    // Profiles and webhooks are the operators'.
    #expect(refusal(e, "SELECT thumbs.enable_webhook('https://example.com/hook')") == denied)
    #expect(refusal(e, "SELECT thumbs.replay_webhooks(now())") == denied)
    #expect(refusal(e, "SELECT * FROM thumbs.webhook_overview") == denied)
    #expect(refusal(e, "SELECT * FROM thumbs.webhook_deliveries") == denied)
    #expect(refusal(e, "UPDATE thumbs.jobs SET priority = 9") == denied)
    #expect(refusal(e, "DELETE FROM thumbs.jobs") == denied)
    #expect(refusal(e, "INSERT INTO thumbs.jobs (source_url, profile) VALUES ('x', 'default')") == denied)
    #expect(refusal(e, "DELETE FROM thumbs.variants") == denied)
    #expect(refusal(e, "DELETE FROM thumbs.events") == denied)
    #expect(refusal(e, "DELETE FROM thumbs.photos") == denied)
    #expect(refusal(e, "SELECT * FROM thumbs.originals") == denied)
    #expect(refusal(e, "SELECT * FROM thumbs.workers") == denied)
    #expect(refusal(e, "UPDATE thumbs.profiles SET spec = '{}'") == denied)
    #expect(refusal(e, "SELECT thumbs.prune('0 seconds')") == denied)
    #expect(refusal(e, "TRUNCATE thumbs.jobs") == denied)
    #expect(refusal(e, "DROP TABLE thumbs.variants") == denied)
    #expect(refusal(e, "ALTER TABLE thumbs.jobs ADD COLUMN x int") == denied)
    #expect(refusal(e, "CREATE TABLE thumbs.mine (x int)") == denied)
    #expect(try sql(deployment.owner, "SELECT count(*) FROM thumbs.jobs").rows[0][0] == "2", "still there")
  }

  /// `thumbd console --read-only` as thumbd_reader: every statement of its pages runs, every action's
  /// is refused, and nothing changes.
  @Test func theReaderReadsWhatTheConsoleShowsAndChangesNothing() throws {
    let deployment = try deployment()
    let id = try #require(
      try sql(deployment.owner, "SELECT thumbs.enqueue('https://example.com/a.jpg', external_id => 'p1')")
        .rows.first?[0] ?? nil)
    let r = try PostgresConnection(conninfo: deployment.reader)
    defer { r.close() }
    let job = Int64(id)!
    try r.run(ConsoleSQL.OverviewQueue.self)
    try r.run(ConsoleSQL.OverviewMinutes.self)
    try r.run(ConsoleSQL.OverviewFailures.self)
    #expect(try r.run(ConsoleSQL.OverviewOwners.self).count == 1)
    try r.run(ConsoleSQL.OverviewWebhooks.self)
    try r.run(ConsoleSQL.Workers.self)
    try r.run(ConsoleSQL.NewestJob.self)
    try r.run(ConsoleSQL.Profiles.self)
    #expect(try r.run(ConsoleSQL.Job.self, .init(id: job)).first?.state == "queued")
    try r.run(ConsoleSQL.JobVariants.self, .init(jobID: job))
    try r.run(ConsoleSQL.JobEvents.self, .init(jobID: job))
    try r.run(ConsoleSQL.JobOriginal.self, .init(sourceKey: "https://example.com/a.jpg"))
    try r.run(ConsoleSQL.JobHistory.self, .init(id: job, externalID: "p1", sourceKey: nil))
    try r.run(ConsoleSQL.VariantObject.self, .init(jobID: job, name: "small"))
    try r.run(ConsoleSQL.ForgetPreview.self, .init(jobID: job))
    #expect(
      try r.run(
        ConsoleSQL.JobsPage.self,
        .init(
          state: "queued", errorCode: nil, profile: nil, owner: nil, externalID: nil,
          source: "https://example",
          finishedAfter: nil, finishedBefore: nil, before: nil, floor: nil, limit: 50)
      ).count == 1)
    #expect(try r.run(ConsoleSQL.CheckProfile.self, .init(spec: #"{"variants": []}"#)).count == 1)
    let denied = "42501"
    func refused<S: TypedStatement>(_ statement: S.Type, _ parameters: S.Parameters) -> String? {
      do {
        try r.run(statement, parameters)
        return nil
      } catch {
        return error.sqlState
      }
    }
    #expect(refused(ConsoleSQL.CancelJob.self, .init(id: job)) == denied)
    #expect(refused(ConsoleSQL.RetryJob.self, .init(id: job)) == denied)
    #expect(refused(ConsoleSQL.ForgetJob.self, .init(id: job)) == denied)
    #expect(refused(ConsoleSQL.RerenderJob.self, .init(id: job)) == denied)
    #expect(refused(ConsoleSQL.RetryErrorCode.self, .init(errorCode: "not_found", limit: 10)) == denied)
    #expect(
      refused(ConsoleSQL.SaveProfile.self, .init(name: "default", spec: #"{"variants": []}"#)) == denied)
    #expect(refusal(deployment.reader, "UPDATE thumbs.jobs SET priority = 9") == denied)
    #expect(refusal(deployment.reader, "DELETE FROM thumbs.jobs") == denied)
    #expect(try sql(deployment.owner, "SELECT state FROM thumbs.jobs").rows == [["queued"]])
  }

  @Test func theWorkerCannotDropTruncateOrAlter() throws {
    let deployment = try deployment()
    let w = deployment.worker
    let denied = "42501"
    #expect(refusal(w, "DROP TABLE thumbs.jobs") == denied)
    #expect(refusal(w, "DROP VIEW thumbs.queue_overview") == denied)
    #expect(refusal(w, "TRUNCATE thumbs.variants") == denied)
    #expect(refusal(w, "ALTER TABLE thumbs.jobs DROP COLUMN metadata") == denied)
    #expect(refusal(w, "DROP FUNCTION thumbs.enqueue") == denied)
    #expect(refusal(w, "DROP SCHEMA thumbs CASCADE") == denied)
    #expect(refusal(w, "UPDATE thumbs.profiles SET spec = '{}'") == denied)
    #expect(refusal(w, "INSERT INTO thumbs.jobs (source_url, profile) VALUES ('x', 'default')") == denied)
    // What a worker does is allowed.
    #expect(refusal(w, "SELECT thumbs.expire_workers()") == nil)
    #expect(refusal(w, "SELECT thumbs.prune('7 days')") == nil)
  }
}
