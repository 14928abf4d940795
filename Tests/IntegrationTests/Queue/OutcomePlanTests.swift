import Foundation
import Queue
import Testing

/// The fenced writes of a worker's own jobs (heartbeat, outcomes, hand-back) look each job up by id, one
/// entry at a time. Left to the planner, a plan made while the statistics said no job ran read every
/// running job of the fleet for each statement, and with other estimates compared every entry with
/// every row. Here the statistics are taken before 2,000 jobs run, on generic plans (what a prepared
/// statement settles on).
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct OutcomePlanTests {
  /// Some of the running jobs, as the statements' array literals.
  struct Batch {
    var ids: [String]
    var tokens: [String]
    func array(_ values: [String]) -> String { "'{\(values.joined(separator: ","))}'" }
    func repeated(_ value: String) -> String { array(Array(repeating: value, count: ids.count)) }
    var jobs: String { "\(array(ids)), \(array(tokens))" }
  }

  /// The fenced writes and their arguments for a batch.
  let statements: [(name: String, text: String, arguments: (Batch) -> String)] = [
    ("heartbeat_jobs", SQL.HeartbeatJobs.statement.text, { "\($0.jobs), 30" }),
    ("hand_back_jobs", SQL.HandBackJobs.statement.text, { $0.jobs }),
    (
      "fail_jobs", SQL.FailJobs.statement.text,
      {
        "\($0.jobs), \($0.repeated("5")), \($0.repeated("broken")), \($0.repeated("failure")),"
          + " \($0.repeated("false")), \($0.repeated("NULL"))"
      }
    ),
    (
      "complete_jobs", SQL.CompleteJobs.statement.text,
      { batch in
        let none = batch.repeated("NULL")
        return "\(batch.jobs), '{}', '{}', '{}', '{}', '{}', '{}', '{}', \(none), \(none), \(none), \(none),"
          + " \(none), \(batch.repeated("\"[]\"")), NULL, \(none)"
      }
    ),
  ]

  /// 3,000 queued jobs, analyzed; then 2,000 of them running (the statistics do not know).
  func runningJobs() throws -> (database: String, running: [(id: String, token: String)]) {
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
    let rows = try sql(
      database, "SELECT id, lease_token FROM thumbs.jobs WHERE state = 'running' ORDER BY id DESC"
    ).rows
    return (database, rows.map { (id: $0[0]!, token: $0[1]!) })
  }

  /// The plan of the statement's last run, with its figures; each run is rolled back. The first runs warm
  /// the connection (planning the triggers' statements reads the catalogs once).
  func explain(_ database: String, _ statement: String, _ runs: [String]) throws -> [String] {
    let connection = try PostgresConnection(conninfo: database, genericPlans: true)
    defer { connection.close() }
    try connection.execute(script: "PREPARE s AS " + statement)
    var lines: [String] = []
    for arguments in runs {
      try connection.execute(script: "BEGIN")
      lines = try connection.query(
        "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE s(\(arguments))"
      ).rows.map { $0[0] ?? "" }
      try connection.execute(script: "ROLLBACK")
    }
    return lines
  }

  func batch(_ jobs: ArraySlice<(id: String, token: String)>) -> Batch {
    Batch(ids: jobs.map(\.id), tokens: jobs.map(\.token))
  }

  @Test func oneJobsWriteReadsOneJobsRowsWhatever2000RunningJobsTheStatisticsMissed() throws {
    let (database, running) = try runningJobs()
    for statement in statements {
      let lines = try explain(
        database, statement.text,
        [statement.arguments(batch(running[0..<1])), statement.arguments(batch(running[1..<2]))])
      // The first Buffers line is the top node's: the whole statement's reads.
      let first = try #require(lines.first { $0.contains("Buffers: shared hit=") }, "\(lines)")
      let read = try #require(Int(first.firstMatch(of: /hit=([0-9]+)/)?.1 ?? ""), "\(first)")
      // One job's rows, its indexes and its event: 11 to 31 buffers. Reading the 2,000 running jobs as
      // well: 170 to 190.
      #expect(read < 80, "\(statement.name) read \(read) buffers for one job")
    }
  }

  @Test func aBatchOf500LooksEachJobUpOnceAndWritesThemAll() throws {
    let (database, running) = try runningJobs()
    for statement in statements {
      let lines = try explain(
        database, statement.text,
        [statement.arguments(batch(running[0..<500])), statement.arguments(batch(running[500..<1000]))])
      let plan = lines.joined(separator: "\n")
      #expect(lines.first?.contains("rows=500 ") == true, "\(statement.name) wrote not all 500:\n\(plan)")
      // The entries are read once: a rescan of them per job is 500 x 500 rows (90 ms at this size).
      let rescans = lines.filter {
        ($0.contains("Function Scan on t") || $0.contains("CTE Scan on input")) && !$0.contains("loops=1)")
      }
      #expect(rescans.isEmpty, "\(statement.name) reads its entries again for each job:\n\(plan)")
    }
  }

  @Test func aBatchOf500SuccessesOfFourVariantsEachBuildsEachEventsVariantsOnce() throws {
    let (database, running) = try runningJobs()
    func arguments(_ jobs: ArraySlice<(id: String, token: String)>) -> String {
      let batch = batch(jobs)
      let names = ["large", "medium", "small", "square"]
      let owners = batch.ids.flatMap { id in names.map { _ in id } }
      let each = { (value: String) in batch.array(Array(repeating: value, count: owners.count)) }
      let keys = batch.ids.flatMap { id in names.map { "thumbs/\(id)/\($0).jpg" } }
      let none = batch.repeated("NULL")
      return "\(batch.jobs), \(batch.array(owners)), \(batch.array(batch.ids.flatMap { _ in names })),"
        + " \(each("100")), \(each("75")), \(each("jpeg")), \(each("1000")), \(batch.array(keys)),"
        + " \(none), \(none), \(none), \(none), \(none), \(batch.repeated("\"[]\"")), NULL, \(none)"
    }
    let lines = try explain(
      database, SQL.CompleteJobs.statement.text,
      [arguments(running[0..<500]), arguments(running[500..<1000])])
    let plan = lines.joined(separator: "\n")
    #expect(lines.first?.contains("rows=500 ") == true, "not all 500 written:\n\(plan)")
    #expect(plan.contains("Insert on variants v (actual rows=2000 "), "\(plan)")
    // The events' variant lists are built once for the batch; built again for each job, they took 2.6 s.
    let repeated = lines.filter { $0.contains("Aggregate") && !$0.contains("loops=1)") }
    #expect(repeated.isEmpty, "an aggregate runs once per job:\n\(plan)")
  }
}
