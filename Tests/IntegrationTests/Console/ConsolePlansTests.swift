import Foundation
import Queue
import Testing

@testable import Console

/// The console's statements on a table of a million jobs (bench/console-fill.sql: 10,000 owners, every
/// state), planned as the console sends them (unnamed, with their values): every page reads the big
/// tables through their indexes only. The small tables (workers, webhook endpoints, profiles: a row
/// each per worker, endpoint and profile) may be read whole. bench/console times the same pages.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct ConsolePlansTests {
  static let smallTables: Set<String> = ["workers", "webhook_endpoints", "profiles"]

  /// The job list's filters, as query strings of /jobs.
  static let jobLists = [
    "", "state=queued", "state=running", "state=succeeded", "state=failed", "state=cancelled",
    "state=forgotten", "error_code=not_found", "error_code=storage_refused", "profile=banner",
    "owner=user-42", "owner=user-42&state=failed", "external_id=photo-4242",
    "source=https://cdn.example.com/u/42/",
    "source=https://", "finished_after=2026-11-20T00:00&finished_before=2026-11-20T06:00",
    "state=succeeded&profile=banner&before=300000", "before=500000",
    "state=failed&error_code=timeout&owner=user-7",
  ]

  @Test func everyPageReadsTheBigTablesThroughIndexes() throws {
    let database = try TestDatabase.create()
    let fill = try runProgram(
      "/usr/bin/env",
      [
        "psql", database, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "jobs=1000000", "-f",
        TestDatabase.repoRoot.appendingPathComponent("bench/console-fill.sql").path,
      ], withStandardError: true)
    try #require(fill.code == 0, "bench/console-fill.sql: \(fill.output)")
    let connection = try PostgresConnection(conninfo: database, preparesStatements: false)
    defer { connection.close() }
    let newest = try #require(try connection.run(ConsoleSQL.NewestJob.self).first?.id ?? nil)
    #expect(newest == 1_000_000)

    var plans: [(name: String, statement: SQLStatement, values: [String?])] = []
    func add<S: TypedStatement>(_ name: String, _ statement: S.Type, _ parameters: S.Parameters) {
      plans.append((name, S.statement, parameters.values))
    }
    for statement in [
      ConsoleSQL.OverviewQueue.statement, ConsoleSQL.OverviewMinutes.statement,
      ConsoleSQL.OverviewFailures.statement, ConsoleSQL.OverviewOwners.statement,
      ConsoleSQL.OverviewWebhooks.statement, ConsoleSQL.Workers.statement, ConsoleSQL.Profiles.statement,
      ConsoleSQL.NewestJob.statement,
    ] {
      plans.append((statement.name, statement, []))
    }
    for query in Self.jobLists {
      let filter = JobFilter(query: Form(encoded: query))
      add("jobs?\(query)", ConsoleSQL.JobsPage.self, filter.parameters(floor: filter.floor(newest: newest)))
    }
    // A job of each kind: a succeeded one with variants, events and a photo, a failed one, a forgotten one.
    for id: Int64 in [500_050, 500_097, 500_005] {
      let job = try #require(try connection.run(ConsoleSQL.Job.self, .init(id: id)).first)
      add("job \(id)", ConsoleSQL.Job.self, .init(id: id))
      add("job \(id) variants", ConsoleSQL.JobVariants.self, .init(jobID: id))
      add("job \(id) events", ConsoleSQL.JobEvents.self, .init(jobID: id))
      add(
        "job \(id) history", ConsoleSQL.JobHistory.self,
        .init(id: id, externalID: job.externalID, sourceKey: job.sourceKey))
      add("job \(id) original", ConsoleSQL.JobOriginal.self, .init(sourceKey: job.sourceKey ?? ""))
      add("job \(id) forget preview", ConsoleSQL.ForgetPreview.self, .init(jobID: id))
      add("job \(id) variant", ConsoleSQL.VariantObject.self, .init(jobID: id, name: "small"))
    }
    add(
      "history by source", ConsoleSQL.JobHistory.self,
      .init(id: 1, externalID: nil, sourceKey: "https://cdn.example.com/u/1/1.jpg"))

    for plan in plans {
      let answer = try connection.query("EXPLAIN (FORMAT JSON) " + plan.statement.text, plan.values)
      let json = try #require(answer.rows.first?.first ?? nil)
      let nodes = Self.nodes(in: try JSONSerialization.jsonObject(with: Data(json.utf8)))
      let wholeReads = nodes.filter { $0.type == "Seq Scan" && !Self.smallTables.contains($0.relation ?? "") }
      #expect(
        wholeReads.isEmpty, "\(plan.name) reads \(wholeReads.map { $0.relation ?? "?" }) whole:\n\(json)")
      #expect(!nodes.isEmpty, "\(plan.name): no plan")
    }
    // The window bounds a list without an indexed filter; an indexed filter reads only its matches.
    #expect(
      JobFilter(query: Form(encoded: "state=failed")).floor(newest: newest) == newest + 1 - JobFilter.window)
    #expect(JobFilter(query: Form(encoded: "state=failed&before=5000")).floor(newest: newest) == 1)
    #expect(JobFilter(query: Form(encoded: "owner=user-1")).floor(newest: newest) == nil)
  }

  /// Every node of a plan (EXPLAIN's JSON), depth first.
  static func nodes(in json: Any) -> [(type: String, relation: String?)] {
    var found: [(String, String?)] = []
    func walk(_ value: Any) {
      if let list = value as? [Any] { list.forEach(walk) }
      guard let node = value as? [String: Any] else { return }
      if let type = node["Node Type"] as? String { found.append((type, node["Relation Name"] as? String)) }
      if let plan = node["Plan"] { walk(plan) }
      if let children = node["Plans"] { walk(children) }
    }
    walk(json)
    return found
  }
}
