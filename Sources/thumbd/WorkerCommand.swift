import ArgumentParser
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
    // SIGTERM and SIGINT have one owner from here to the exit: a stop asked for while the worker still
    // reads its configuration or starts its services is kept, and ends the worker once it has started.
    let shutdown = ShutdownSignal()
    let stopSignals = await StopSignals.install([SIGTERM, SIGINT], requesting: shutdown)
    let resolution = WorkerConfig.resolve(
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
    let worker = Worker(
      config: settings, shutdown: shutdown, logger: Logger(label: "thumbd.worker"), registry: registry,
      recyclesPlanes: true)
    let totals: WorkerCounters
    do {
      totals = try await worker.run()
    } catch let refused as StorageRefused {
      // One line, naming the bucket and the storage's error code (the contract's start-up check).
      FileHandle.standardError.write(Data("thumbd worker: \(refused)\n".utf8))
      throw ExitCode(1)
    }
    withExtendedLifetime(stopSignals) {}
    if totals.succeeded + totals.failed + totals.retried == 0 && settings.drain {
      print("no jobs were due")
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
