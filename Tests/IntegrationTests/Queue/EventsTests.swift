import Blocking
import CLibPQ
import Foundation
import Queue
import TestSupport
import Testing
import ThumbCore

/// Completion events: one row per terminal change of a job, written in the same statement, announced on
/// thumbs_events with its id; thumbs.events_after hands them out in commit order, so a consumer never
/// skips an event whose transaction commits late.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct EventsTests {
  let pool = BlockingPool(threads: 2, name: "events-test")

  /// A LISTEN connection that keeps every payload it receives.
  final class Listener: @unchecked Sendable {
    let connection: OpaquePointer

    init(_ database: String, channel: String) throws {
      connection = try #require(PQconnectdb(database))
      try #require(PQstatus(connection) == CONNECTION_OK)
      PQclear(PQexec(connection, "LISTEN \(channel)"))
    }

    deinit { PQfinish(connection) }

    /// Payloads received so far, waiting up to `timeout` seconds for at least `count`.
    func payloads(atLeast count: Int, timeout: Double = 10) -> [String] {
      var received: [String] = []
      let deadline = Date().addingTimeInterval(timeout)
      while received.count < count && Date() < deadline {
        var descriptor = pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0)
        _ = poll(&descriptor, 1, 100)
        PQconsumeInput(connection)
        while let notification = PQnotifies(connection) {
          received.append(String(cString: notification.pointee.extra))
          PQfreemem(notification)
        }
      }
      return received
    }
  }

  @Test func everyTerminalJobHasExactlyOneEventAndAListenerHearsEach() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let listener = try Listener(database, channel: "thumbs_events")
    let succeeded = try sql(
      database, "SELECT thumbs.enqueue($1, external_id => 'photo-1')",
      [fixture.origin.url("/files/photo.jpg")]
    ).rows[0][0]!
    let missing = try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/gone.jpg")])
      .rows[0][0]!
    // An attempt that fails and is retried is not terminal: no event; its later success writes one.
    let flaky = try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/photo.jpg?v=2")])
      .rows[0][0]!
    let token = try sql(
      database,
      "UPDATE thumbs.jobs SET state = 'running', lease_token = gen_random_uuid(), attempts = 1 "
        + "WHERE id = $1::bigint RETURNING lease_token::text", [flaky]
    ).rows[0][0]!
    let retried = SQL.FailJobs.Parameters(
      ids: [Int64(flaky)!], tokens: [token], retryAfter: [0], codes: ["fetch_failed"], messages: ["503"],
      deferred: [false], media: [nil])
    #expect(try sql(database, SQL.FailJobs.statement.text, retried.values).rows == [[flaky, "0"]])
    #expect(try sql(database, "SELECT count(*) FROM thumbs.events").rows == [["0"]])
    let cancelled = try sql(
      database, "SELECT thumbs.enqueue($1, run_at => now() + interval '1 hour')",
      [fixture.origin.url("/files/photo.jpg?later")]
    ).rows[0][0]!
    #expect(try sql(database, "SELECT thumbs.cancel($1::bigint)", [cancelled]).rows == [["t"]])
    #expect(try sql(database, "SELECT thumbs.cancel($1::bigint)", [cancelled]).rows == [["f"]])

    let totals = try await drainQueue(databaseURL: database, storage: fixture.storage)
    #expect(totals.succeeded == 2, "\(totals)")

    let events = try sql(
      database, "SELECT job_id, kind, external_id, id FROM thumbs.events ORDER BY job_id"
    ).rows
    #expect(
      events.map { [$0[0], $0[1], $0[2]] }
        == [
          [succeeded, "succeeded", "photo-1"], [missing, "failed", nil], [flaky, "succeeded", nil],
          [cancelled, "cancelled", nil],
        ].sorted { Int($0[0]!)! < Int($1[0]!)! }, "\(events)")
    let heard = listener.payloads(atLeast: 4)
    #expect(Set(heard) == Set(events.map { $0[3]! }), "\(heard)")

    // The payload: what a backend acts on, secrets masked, the variants of a success.
    let payload = try sql(
      database,
      """
      SELECT payload->>'state', payload->>'profile', payload->>'source_url', payload->'variants'->0->>'name',
             jsonb_array_length(payload->'variants'), payload->>'thumbhash' IS NOT NULL,
             payload->>'error_code'
        FROM thumbs.events WHERE job_id = $1::bigint
      """, [succeeded]
    ).rows
    #expect(
      payload == [["succeeded", "default", fixture.origin.url("/files/photo.jpg"), "large", "4", "t", nil]])
    let failure = try sql(
      database,
      "SELECT payload->>'state', payload->>'error_code' FROM thumbs.events WHERE job_id = $1::bigint",
      [missing]
    ).rows
    #expect(failure == [["failed", "not_found"]])
  }

  @Test func eventPayloadsMaskTheSecretsOfTheURL() throws {
    let database = try TestDatabase.create()
    let url =
      "https://photos:PASSWORD@b.example/k.jpg?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=SIGNATURE&v=2"
    let id = try sql(database, "SELECT thumbs.enqueue($1)", [url]).rows[0][0]!
    try sql(database, "SELECT thumbs.cancel($1::bigint)", [id])
    let shown = try sql(database, "SELECT payload->>'source_url' FROM thumbs.events").rows[0][0]!
    #expect(shown == SourceURL.redacted(url))
    #expect(shown == "https://photos:****@b.example/k.jpg?X-Amz-Credential=****&X-Amz-Signature=****&v=2")
    for (plain, _) in sourceIdentityCases {
      #expect(
        try sql(database, "SELECT thumbs.redact_url($1)", [plain]).rows == [[SourceURL.redacted(plain)]])
    }
  }

  /// Event ids are not in commit order. A transaction that took an id commits after a later id was
  /// read: a consumer reading "after my last id" would skip it; thumbs.events_after does not.
  @Test func aLateCommitIsNotSkipped() throws {
    let database = try TestDatabase.create()
    let first = try sql(database, "SELECT thumbs.enqueue('https://cdn.example/1.jpg')").rows[0][0]!
    let second = try sql(database, "SELECT thumbs.enqueue('https://cdn.example/2.jpg')").rows[0][0]!

    // A transaction cancels the first job (taking the lower event id) and stays open.
    let late = try PostgresConnection(conninfo: database)
    defer { late.close() }
    _ = try late.query("BEGIN")
    _ = try late.query("SELECT thumbs.cancel(\(first))")
    // Meanwhile the second job's event (a higher id) commits.
    try sql(database, "SELECT thumbs.cancel($1::bigint)", [second])
    let ids = try sql(database, "SELECT job_id, id FROM thumbs.events ORDER BY id").rows
    #expect(ids.map { $0[0] } == [second], "the open transaction's event is not visible yet")

    // A consumer reading "after my last id" would now take the second's id as its mark, and never see
    // the first, whose id is lower: the ids are not in commit order.
    let firstEvent = try sql(database, "SELECT nextval(pg_get_serial_sequence('thumbs.event_log', 'id'))")
      .rows
    #expect(Int(firstEvent[0][0]!)! > Int(ids[0][1]!)!)
    // thumbs.events_after hands out nothing while an older transaction is open,
    #expect(try sql(database, "SELECT job_id FROM thumbs.events_after(NULL, 10)").rows == [])
    _ = try late.query("COMMIT")
    // and both once it ended, the late one included.
    let all = try sql(database, "SELECT cursor, job_id, id FROM thumbs.events_after(NULL, 10)").rows
    #expect(Set(all.map { $0[1] }) == [first, second])
    let lateID = try #require(all.first { $0[1] == first }?[2] ?? nil)
    #expect(Int(lateID)! < Int(ids[0][1]!)!, "the late event has the lower id")

    // Read one at a time with the cursor, nothing is skipped.
    var cursor: String? = nil
    var seen: [String?] = []
    while let row = try sql(database, "SELECT cursor, job_id FROM thumbs.events_after($1, 1)", [cursor]).rows
      .first
    {
      cursor = row[0]
      seen.append(row[1])
    }
    #expect(Set(seen) == [first, second] && seen.count == 2)
    let afterAll = try #require(all.last?[0] ?? nil)
    #expect(try sql(database, "SELECT job_id FROM thumbs.events_after($1, 10)", [afterAll]).rows == [])
  }

  /// Events have a retention of their own (--event-retention), apart from the jobs': a pruned job's
  /// event stays, an old event goes, in batches.
  @Test func retentionDeletesOldEventsInBatches() async throws {
    let database = try TestDatabase.create()
    try sql(
      database,
      """
      INSERT INTO thumbs.event_log (job_id, kind, profile, created_at)
      SELECT g, 'succeeded', 'default', now() - (g || ' days')::interval FROM generate_series(1, 40) g
      """)
    // 1 to 40 days old, the oldest with the highest ids. Each call looks only at a batch of the lowest
    // ids (in a real table they are the oldest): here they are the newest events, so none goes.
    #expect(try sql(database, "SELECT thumbs.prune_events('30 days', 4)").rows == [["0"]])
    // Ids in time order: events 1 to 10 are 30.5 to 39.5 days old, the rest younger than 30 days.
    try sql(
      database, "UPDATE thumbs.event_log SET created_at = now() - ((40.5 - job_id) || ' days')::interval")
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    #expect(try await queue.pruneEvents(olderThanSeconds: 30 * 86400, batchSize: 4) == 10)
    #expect(try sql(database, "SELECT min(job_id), count(*) FROM thumbs.events").rows == [["11", "30"]])
  }
}
