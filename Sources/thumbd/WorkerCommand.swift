import ArgumentParser
import Dispatch
import Fetch
import Foundation
import Logging
import ThumbCore
import Worker

struct WorkerCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "worker",
    abstract: "Lease and process jobs until SIGTERM/SIGINT (graceful), or until drained with --drain.",
    discussion: "Every option can also be set as THUMBD_<NAME>, e.g. THUMBD_MEMORY_BUDGET=256MiB.")

  @OptionGroup var database: DatabaseOptions
  @Option(help: "jobs processed at once (THUMBD_CONCURRENCY; default: cores)") var concurrency: Int?
  @Option(help: "memory budget, e.g. 256MiB (THUMBD_MEMORY_BUDGET)") var memoryBudget: String?
  @Option(help: "file:///abs/dir (THUMBD_STORAGE)") var storage: String?
  @Flag(help: "exit 0 once no job is due now and none is running here (THUMBD_DRAIN=1)") var drain = false
  @Option(help: "lease length in seconds, renewed by heartbeats (THUMBD_LEASE_TTL; default 60)") var leaseTtl:
    Double?
  @Option(help: "total seconds per download (THUMBD_FETCH_TIMEOUT; default 30)") var fetchTimeout: Double?
  @Option(help: "seconds to establish a connection (THUMBD_CONNECT_TIMEOUT; default 10)") var connectTimeout:
    Double?
  @Option(help: "tries per attempt for transient download failures (THUMBD_FETCH_TRIES; default 3)")
  var fetchTries: Int?
  @Option(help: "largest original, e.g. 50MiB (THUMBD_MAX_DOWNLOAD_BYTES)") var maxDownloadBytes: String?
  @Option(
    help:
      "bytes of recent originals kept for reuse, part of the memory budget; 0 = off (THUMBD_ORIGINAL_CACHE; default: an eighth of the budget)"
  )
  var originalCache: String?
  @Option(
    help:
      "other ready jobs for an already leased URL taken along per lease (THUMBD_LEASE_SIBLINGS; default 32)")
  var leaseSiblings: Int?
  @Option(help: "largest original in pixels (THUMBD_MAX_PIXELS; default 100000000)") var maxPixels: Int?
  @Option(help: "hosts or CIDRs exempt from the private-network block (THUMBD_ALLOW_HOSTS)") var allowHosts:
    String?
  @Option(help: "seconds between looks for due jobs without a notification (THUMBD_POLL_INTERVAL; default 1)")
  var pollInterval: Double?
  @Option(help: "jobs claimed per lease statement (THUMBD_LEASE_BATCH; default: free slots, at most 100)")
  var leaseBatch: Int?
  @Option(
    help:
      "seconds running jobs get to finish after SIGTERM before they are handed back (THUMBD_SHUTDOWN_GRACE; default 25)"
  )
  var shutdownGrace: Double?
  @Option(
    help: "delete finished jobs older than this, e.g. 7d, 12h, 0 = never (THUMBD_RETENTION; default 7d)")
  var retention: String?

  func run() async throws {
    try CPUCheck.requireImagingSupport()
    Thumbd.bootstrapLogging()
    let config = try makeConfig()
    Allocator.tuneForLargeBuffers()
    let worker = Worker(config: config, logger: Logger(label: "thumbd.worker"))
    let signals = installSignalHandlers(worker.shutdown)
    let totals = try await worker.run()
    withExtendedLifetime(signals) {}
    if totals.succeeded + totals.failed + totals.retried == 0 && config.drain {
      print("no jobs were due")
    }
  }

  func makeConfig() throws -> WorkerConfig {
    guard let storageURL = setting(storage, "STORAGE") else {
      throw ValidationError("--storage (or THUMBD_STORAGE) is required, e.g. file:///var/lib/thumbd")
    }
    var config = WorkerConfig(databaseURL: try database.resolved(), storageURL: storageURL)
    if let value = setting(concurrency.map(String.init), "CONCURRENCY") {
      guard let n = Int(value), (1...256).contains(n) else {
        throw ValidationError("--concurrency must be 1...256")
      }
      config.concurrency = n
    } else {
      config.concurrency = ProcessInfo.processInfo.activeProcessorCount
    }
    if let value = setting(memoryBudget, "MEMORY_BUDGET") {
      guard let bytes = ByteSize.parse(value) else {
        throw ValidationError("--memory-budget: '\(value)' is not a size")
      }
      config.memoryBudget = bytes
    }
    config.drain = drain || ["1", "true", "yes"].contains(setting(nil, "DRAIN")?.lowercased() ?? "")
    if let value = setting(leaseTtl.map { String($0) }, "LEASE_TTL") {
      guard let seconds = Double(value), seconds >= 1 else {
        throw ValidationError("--lease-ttl must be >= 1")
      }
      config.leaseSeconds = seconds
    }
    if let value = setting(fetchTimeout.map { String($0) }, "FETCH_TIMEOUT") {
      guard let seconds = Double(value), seconds > 0 else {
        throw ValidationError("--fetch-timeout must be > 0")
      }
      config.fetch.totalTimeout = seconds
      config.fetch.connectTimeout = min(config.fetch.connectTimeout, seconds)
    }
    if let value = setting(connectTimeout.map { String($0) }, "CONNECT_TIMEOUT") {
      guard let seconds = Double(value), seconds > 0 else {
        throw ValidationError("--connect-timeout must be > 0")
      }
      config.fetch.connectTimeout = seconds
    }
    if let value = setting(fetchTries.map(String.init), "FETCH_TRIES") {
      guard let n = Int(value), (1...10).contains(n) else {
        throw ValidationError("--fetch-tries must be 1...10")
      }
      config.fetch.retry.tries = n
    }
    if let value = setting(originalCache, "ORIGINAL_CACHE") {
      guard let bytes = ByteSize.parse(value), bytes >= 0 else {
        throw ValidationError("--original-cache: '\(value)' is not a size")
      }
      config.originalCacheBytes = bytes
    }
    guard config.effectiveOriginalCacheBytes < config.memoryBudget else {
      throw ValidationError("--original-cache must be smaller than --memory-budget, which counts it")
    }
    if let value = setting(leaseSiblings.map(String.init), "LEASE_SIBLINGS") {
      guard let n = Int(value), (0...1000).contains(n) else {
        throw ValidationError("--lease-siblings must be 0...1000")
      }
      config.leaseSiblings = n
    }
    if let value = setting(maxDownloadBytes, "MAX_DOWNLOAD_BYTES") {
      guard let bytes = ByteSize.parse(value), bytes > 0 else {
        throw ValidationError("--max-download-bytes: '\(value)' is not a size")
      }
      config.fetch.maxBytes = bytes
    }
    if let value = setting(maxPixels.map(String.init), "MAX_PIXELS") {
      guard let n = Int(value), n > 0 else { throw ValidationError("--max-pixels must be > 0") }
      config.maxPixels = n
    }
    if let value = setting(allowHosts, "ALLOW_HOSTS") {
      config.addressGuard = try AddressGuard(allowList: value)
    }
    if let value = setting(pollInterval.map { String($0) }, "POLL_INTERVAL") {
      guard let seconds = Double(value), seconds > 0 else {
        throw ValidationError("--poll-interval must be > 0")
      }
      config.pollInterval = seconds
    }
    if let value = setting(leaseBatch.map(String.init), "LEASE_BATCH") {
      guard let n = Int(value), (1...1000).contains(n) else {
        throw ValidationError("--lease-batch must be 1...1000")
      }
      config.leaseBatch = n
    }
    if let value = setting(shutdownGrace.map { String($0) }, "SHUTDOWN_GRACE") {
      guard let seconds = Double(value), seconds >= 0 else {
        throw ValidationError("--shutdown-grace must be >= 0")
      }
      config.shutdownGrace = seconds
    }
    if let value = setting(retention, "RETENTION") {
      guard let seconds = TimeSpan.parseSeconds(value) else {
        throw ValidationError("--retention: '\(value)' is not a duration such as 7d, 12h, 30m or 0")
      }
      config.retentionSeconds = seconds
    }
    return config
  }

  /// SIGTERM and SIGINT ask the worker to stop leasing and finish what it runs; a second signal exits now.
  func installSignalHandlers(_ shutdown: ShutdownSignal) -> [any DispatchSourceSignal] {
    [SIGTERM, SIGINT].map { (number: Int32) -> any DispatchSourceSignal in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler {
        if shutdown.isRequested { Foundation.exit(130) }
        shutdown.request()
      }
      source.resume()
      return source
    }
  }
}
