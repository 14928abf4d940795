import ArgumentParser
import Queue

struct Status: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "The queue overview as a table, then the registered workers.")

  @OptionGroup var database: DatabaseOptions

  func run() throws {
    let connection = try PostgresConnection(conninfo: try database.resolved())
    defer { connection.close() }
    let result = try connection.query(
      """
      SELECT state, jobs, coalesce(date_trunc('second', oldest_age)::text, '-') AS oldest
        FROM thumbs.queue_overview
      """)
    print(
      TextTable.render(header: ["state", "jobs", "oldest"], rows: result.rows.map { $0.map { $0 ?? "" } }))
    let workers = try connection.query(
      """
      SELECT id, state, concurrency::text, running::text, jobs_succeeded::text, jobs_failed::text,
             leases_lost::text, date_trunc('second', heartbeat_age)::text, CASE WHEN stale THEN 'yes' ELSE '' END
        FROM thumbs.worker_overview
      """)
    print("")
    if workers.rows.isEmpty {
      print("no workers registered")
    } else {
      print(
        TextTable.render(
          header: [
            "worker", "state", "slots", "running", "succeeded", "failed", "lost", "heartbeat", "stale",
          ],
          rows: workers.rows.map { $0.map { $0 ?? "" } }))
    }
  }
}

/// Plain aligned columns, numbers right-aligned, for terminals and logs.
enum TextTable {
  static func render(header: [String], rows: [[String]]) -> String {
    let all = [header] + rows
    let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
    func line(_ cells: [String]) -> String {
      cells.enumerated().map { column, cell in
        let pad = String(repeating: " ", count: widths[column] - cell.count)
        return Int(cell) != nil ? pad + cell : cell + pad
      }.joined(separator: "  ")
    }
    let rule = widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")
    return ([line(header), rule] + rows.map(line)).joined(separator: "\n")
  }
}
