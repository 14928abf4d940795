import ArgumentParser
import Queue

struct Status: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "The queue overview as a table, then the registered workers.")

  @OptionGroup var database: DatabaseOptions

  func run() throws {
    let connection = try PostgresConnection(conninfo: try database.resolved())
    defer { connection.close() }
    let queue = try connection.run(SQL.StatusQueue.self).map {
      [$0.state, $0.jobs.postgresText, $0.oldest ?? ""]
    }
    print(TextTable.render(header: ["state", "jobs", "oldest"], rows: queue))
    let workers = try connection.run(SQL.StatusWorkers.self).map { worker in
      [worker.id, worker.state]
        + [
          worker.concurrency, worker.running, worker.jobsSucceeded, worker.jobsFailed, worker.leasesLost,
          worker.heartbeat, worker.stale,
        ].map { $0 ?? "" }
    }
    print("")
    if workers.isEmpty {
      print("no workers registered")
    } else {
      print(
        TextTable.render(
          header: [
            "worker", "state", "slots", "running", "succeeded", "failed", "lost", "heartbeat", "stale",
          ],
          rows: workers))
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
