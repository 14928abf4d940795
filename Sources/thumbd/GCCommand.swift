import ArgumentParser
import Blocking
import Foundation
import Queue
import Storage
import Transport
import Worker

struct GCCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "gc",
    abstract:
      "Delete the storage objects nothing live names (what the workers' collection deletes, and orphans); --dry-run lists them and why.",
    discussion: """
      Takes the worker's options (--database-url, --storage, --s3-*, --erase-grace, or --config FILE).
      Orphans (stored objects no row names) younger than --erase-grace are left alone. Safe to run while
      workers run: every delete is fenced in the database like the workers' own collection.
      """)

  @Flag(name: .long, help: "List what would be deleted and why; delete nothing.")
  var dryRun = false

  @Argument(
    parsing: .allUnrecognized,
    help: ArgumentHelp("--KEY VALUE options, as for `thumbd worker`", valueName: "options"))
  var options: [String] = []

  func run() async throws {
    let resolution = WorkerConfig.resolve(
      arguments: options, environment: ProcessInfo.processInfo.environment)
    guard resolution.errors.isEmpty else {
      for error in resolution.errors { FileHandle.standardError.write(Data("thumbd gc: \(error)\n".utf8)) }
      throw ExitCode(1)
    }
    let config = resolution.settings
    let pool = BlockingPool(threads: 4, name: "thumbd-gc")
    defer { pool.shutdown() }
    let multi = CurlMulti()
    let store = try StorageURL.open(config.storageSettings, pool: pool, multi: multi)
    let queue = JobQueue(client: try await PostgresClient(conninfo: config.databaseURL, pool: pool))
    defer { queue.client.close() }
    let collection = FullCollection(
      queue: queue, store: store, graceSeconds: config.eraseGraceSeconds, workerID: "thumbd-gc-\(getpid())")
    let report: FullCollection.Report
    do {
      report = try await collection.run(dryRun: dryRun)
    } catch {
      await multi.shutdown()
      FileHandle.standardError.write(Data("thumbd gc: \(error)\n".utf8))
      throw ExitCode(1)
    }
    await multi.shutdown()
    print(Self.render(report, graceSeconds: config.eraseGraceSeconds, dryRun: dryRun))
    if let failure = report.collected?.firstFailure {
      FileHandle.standardError.write(
        Data("thumbd gc: the storage did not delete some objects: \(failure)\n".utf8))
      throw ExitCode(1)
    }
  }

  static func render(_ report: FullCollection.Report, graceSeconds: Double, dryRun: Bool) -> String {
    var rows: [[String]] = []
    for candidate in report.candidates {
      let why = "\(candidate.reason ?? "-"), waited \(Int(candidate.ageSeconds)) s"
      let verdict: String
      if candidate.state == "deleting" {
        verdict =
          "delete (marked; \(candidate.attempts) tries\(candidate.lastError.map { ", last error: \($0)" } ?? ""))"
      } else if candidate.named {
        verdict = "keep (something live names it again)"
      } else if candidate.ageSeconds >= graceSeconds {
        verdict = "delete"
      } else {
        verdict = "delete in \(Int(graceSeconds - candidate.ageSeconds)) s (grace)"
      }
      rows.append([candidate.storageKey, why, verdict])
    }
    for orphan in report.orphans {
      rows.append([
        orphan.key, "orphan (named by nothing), written \(Int(orphan.ageSeconds)) s ago",
        orphan.recent ? "leave (younger than the grace: its job may be recording it)" : "delete",
      ])
    }
    var lines: [String] = []
    if rows.isEmpty {
      lines.append("nothing to collect")
    } else {
      lines.append(
        TextTable.render(header: ["storage_key", "why", dryRun ? "would" : "verdict"], rows: rows))
    }
    if let collected = report.collected {
      lines.append("")
      lines.append(
        "deleted \(collected.deleted), kept \(collected.kept) (named again), failed \(collected.failed), "
          + "forgotten events written \(collected.events)")
    }
    return lines.joined(separator: "\n")
  }
}
