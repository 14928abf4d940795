import Foundation
import Queue
import Testing

/// The fenced writes of a worker's own jobs (heartbeat, outcomes, hand-back) find their rows by id. Joined
/// to the unnest of their arrays alone, a plan made while the statistics said no job ran read every
/// running job of the fleet for each statement; here the statistics are taken before 2,000 jobs run,
/// and each statement, for one of them, must read about as much as one job's rows.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct OutcomePlanTests {
  /// The shared buffers the statement reads for the second job, each run in a transaction that is rolled
  /// back. The first job warms the connection: planning the triggers' statements reads the catalogs once.
  func buffersRead(_ database: String, _ statement: String, _ arguments: [String]) throws -> Int {
    let connection = try PostgresConnection(conninfo: database, genericPlans: true)
    defer { connection.close() }
    try connection.execute(script: "PREPARE s AS " + statement)
    var lines: [String] = []
    for arguments in arguments {
      try connection.execute(script: "BEGIN")
      lines = try connection.query(
        "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE s(\(arguments))"
      ).rows.map { $0[0] ?? "" }
      try connection.execute(script: "ROLLBACK")
    }
    // The first Buffers line is the top node's: the whole statement's reads.
    let first = try #require(lines.first { $0.contains("Buffers: shared hit=") }, "\(lines)")
    let hit = try #require(first.firstMatch(of: /hit=([0-9]+)/)?.1, "\(first)")
    return Int(hit)!
  }

  @Test func eachFencedWriteReadsItsOwnRowsWhatever2000RunningJobsTheStatisticsMissed() throws {
    let database = try TestDatabase.create()
    try sql(
      database,
      """
      INSERT INTO thumbs.jobs (source_url, profile)
      SELECT 'http://example.com/' || g || '.jpg', 'default' FROM generate_series(1, 3000) AS g
      """)
    try sql(database, "ANALYZE thumbs.jobs")
    try sql(
      database,
      """
      UPDATE thumbs.jobs SET state = 'running', turn = NULL, lease_token = gen_random_uuid(),
             lease_expires_at = now() + interval '1 hour', started_at = now(), leased_by = 'w'
       WHERE id <= (SELECT min(id) FROM thumbs.jobs) + 1999
      """)
    let jobs = try sql(
      database, "SELECT id, lease_token FROM thumbs.jobs WHERE state = 'running' ORDER BY id DESC LIMIT 2"
    ).rows.map { (ids: "'{\($0[0]!)}'", tokens: "'{\($0[1]!)}'") }
    let cases: [(String, String, ((ids: String, tokens: String)) -> String)] = [
      ("heartbeat_jobs", SQL.HeartbeatJobs.statement.text, { "\($0.ids), \($0.tokens), 30" }),
      ("hand_back_jobs", SQL.HandBackJobs.statement.text, { "\($0.ids), \($0.tokens)" }),
      (
        "fail_jobs", SQL.FailJobs.statement.text,
        { "\($0.ids), \($0.tokens), '{5}', '{broken}', '{a test failure}', '{false}'" }
      ),
      (
        "complete_jobs", SQL.CompleteJobs.statement.text,
        {
          "\($0.ids), \($0.tokens), '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{NULL}', '{NULL}', '{NULL}',"
            + " '{NULL}', '{NULL}', '{\"[]\"}', NULL, '{NULL}'"
        }
      ),
    ]
    for (name, statement, arguments) in cases {
      let read = try buffersRead(database, statement, jobs.map(arguments))
      // One job's rows, its indexes and its event: 11 to 31 buffers. Reading the 2,000 running jobs
      // as well: 170 to 190.
      #expect(read < 80, "\(name) read \(read) buffers for one job")
    }
  }
}
