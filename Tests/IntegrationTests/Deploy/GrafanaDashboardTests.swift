import Foundation
import TestSupport
import Testing

/// deploy/grafana/thumbd.json: valid JSON, the panels the deploy issue asks for, and every metric it
/// queries is one a real worker serves on /metrics (a renamed metric would leave a panel empty).
@Suite(
  .serialized,
  .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct GrafanaDashboardTests {
  static func expressions() throws -> [String] {
    let url = TestDatabase.repoRoot.appendingPathComponent("deploy/grafana/thumbd.json")
    let dashboard = try #require(
      try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
    let panels = try #require(dashboard["panels"] as? [[String: Any]])
    return panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
  }

  static func metricNames(in expression: String) -> Set<String> {
    let regex = try! Regex("thumbd_[a-z_]+")
    return Set(expression.matches(of: regex).map { String(expression[$0.range]) })
  }

  @Test func thePanelsCoverWhatOperatorsWatch() throws {
    let all = try Self.expressions().joined(separator: "\n")
    #expect(all.contains("sum by (outcome) (rate(thumbd_jobs_total"), "throughput by outcome")
    #expect(all.contains("histogram_quantile(0.99, sum by (le, stage) (rate(thumbd_stage_seconds_bucket"))
    #expect(all.contains("thumbd_memory_in_use_bytes") && all.contains("thumbd_memory_budget_bytes"))
    #expect(all.contains("thumbd_queue_jobs"), "queue depth")
    #expect(all.contains("thumbd_leases_lost_total"))
  }

  @Test func everyQueriedMetricIsServedByARealWorker() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let worker = try WorkerProcess(databaseURL: database, storage: fixture.storage)
    defer { worker.send(SIGKILL) }
    let port = try #require(await worker.httpPort(), "log:\n\(worker.log)")
    _ = try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/photo.jpg")])
    #expect(
      try await eventually(timeout: 30) {
        try sql(database, "SELECT state FROM thumbs.jobs").rows == [["succeeded"]]
      })
    let metrics = try #require(Metrics(HTTPProbe.get(port, "/metrics")))
    let served = Set(metrics.samples.map(\.name))
    let queried = try Self.expressions().reduce(into: Set<String>()) {
      $0.formUnion(Self.metricNames(in: $1))
    }
    #expect(queried.count >= 12)
    for name in queried.sorted() {
      #expect(served.contains(name), "\(name) is not on /metrics")
    }
  }
}
