import ArgumentParser
import Queue

struct Status: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "The queue overview as a table, then the registered workers.")

  @OptionGroup var database: DatabaseOptions

  func run() throws {
    let connection = try PostgresConnection(conninfo: try database.resolved())
    defer { connection.close() }
    let queue = try connection.query(SQL.statusQueue).namedRows
    print(
      TextTable.render(header: ["state", "jobs", "oldest"], rows: try cells(queue, SQL.statusQueue.columns)))
    let workers = try connection.query(SQL.statusWorkers).namedRows
    print("")
    if workers.isEmpty {
      print("no workers registered")
    } else {
      print(
        TextTable.render(
          header: [
            "worker", "state", "slots", "running", "succeeded", "failed", "lost", "heartbeat", "stale",
          ],
          rows: try cells(workers, SQL.statusWorkers.columns)))
    }
  }

  /// The named columns of every row as text, NULL as an empty cell.
  private func cells(_ rows: NamedRows, _ columns: [String]) throws -> [[String]] {
    var cells: [[String]] = []
    for row in rows { cells.append(try columns.map { column in try row.value(column) ?? "" }) }
    return cells
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
