import ArgumentParser
import Dispatch
import Foundation
import Logging
import Metrics
import Prometheus
import Queue
import Synchronization
import ThumbCore
import Worker

struct WorkerCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "worker",
    abstract: "Lease and process jobs until SIGTERM/SIGINT (graceful), or until drained with --drain.",
    discussion: OptionsHelp.text)

  @Argument(
    parsing: .allUnrecognized,
    help: ArgumentHelp("--KEY VALUE options (below), or --config FILE", valueName: "options"))
  var options: [String] = []

  func run() async throws {
    try ImagingProcess.prepare()
    let resolution = WorkerSettings.resolve(
      arguments: options, environment: ProcessInfo.processInfo.environment)
    guard resolution.errors.isEmpty else {
      for error in resolution.errors {
        FileHandle.standardError.write(Data("thumbd worker: \(error)\n".utf8))
      }
      throw ExitCode(1)
    }
    let settings = resolution.settings
    Thumbd.bootstrapLogging(format: settings.logFormat, level: settings.logLevel, secrets: settings.secrets)
    let registry = PrometheusCollectorRegistry()
    // Only main bootstraps metrics; the worker records into the same registry it serves.
    MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
    Allocator.tuneForLargeBuffers()
    let worker = Worker(config: settings.worker, logger: Logger(label: "thumbd.worker"), registry: registry)
    let secondSignal = exitOnSecondSignal()
    let totals: WorkerCounters
    do {
      totals = try await worker.run(signals: [.sigterm, .sigint])
    } catch let refused as StorageRefused {
      // One line, naming the bucket and the storage's error code (the contract's start-up check).
      FileHandle.standardError.write(Data("thumbd worker: \(refused)\n".utf8))
      throw ExitCode(1)
    }
    withExtendedLifetime(secondSignal) {}
    if totals.succeeded + totals.failed + totals.retried == 0 && settings.worker.drain {
      print("no jobs were due")
    }
  }

  /// The service group turns the first SIGTERM or SIGINT into a graceful stop; a second one exits at
  /// once (code 130), leaving the leases to expire and be rescued.
  func exitOnSecondSignal() -> [any DispatchSourceSignal] {
    let count = Mutex(0)
    return [SIGTERM, SIGINT].map { (number: Int32) -> any DispatchSourceSignal in
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler {
        if count.withLock({
          $0 += 1; return $0
        }) >= 2 {
          Foundation.exit(130)
        }
      }
      source.resume()
      return source
    }
  }
}

/// `thumbd worker --help` lists every option from the one model (`WorkerOption.all`).
enum OptionsHelp {
  static var text: String {
    var lines = [
      "Each option is also a THUMBD_* variable and a key of the --config YAML file (THUMBD_CONFIG);",
      "a flag wins over a variable, a variable over the file, the file over the default.",
      "",
    ]
    for option in WorkerOption.all {
      let form = option.isFlag ? "--\(option.key)" : "--\(option.key) \(option.placeholder)"
      lines.append("\(form)  (\(option.environment); default: \(option.defaultDescription))")
      lines.append("    \(option.help)")
    }
    return lines.joined(separator: "\n")
  }
}
