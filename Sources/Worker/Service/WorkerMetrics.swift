import CoreMetrics
import Metrics
import Queue
import Synchronization
import ThumbCore

/// The worker's one set of counters. Every event is recorded here once, where it happens; the same call
/// feeds the Prometheus families of the contract (`/metrics`), the totals in `thumbs.workers` and the
/// totals a run returns and logs. Labels are bounded: outcomes, stages, error codes and job states are
/// fixed vocabularies, never URLs or ids.
final class WorkerMetrics: Sendable {
  enum Outcome: String, CaseIterable {
    case succeeded, failed, retried
    case handedBack = "handed_back"
  }

  enum Stored: String, CaseIterable {
    case uploaded
    case alreadyStored = "already_stored"
  }

  /// The histogram buckets of `thumbd_stage_seconds`: from a small decode to a slow download.
  static let stageBuckets: [Duration] = [
    .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25),
    .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
    .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30), .seconds(60),
  ]

  private let factory: any MetricsFactory
  private let totals = Mutex(WorkerCounters())
  /// Counters whose labels are known only when they are first counted (an error or warning code),
  /// by label and dimensions.
  private let labelled: Mutex<[String: Counter]> = Mutex([:])
  private let stages: [Stage: Timer]
  private let downloadBytes: Counter
  private let leasesLost: Counter
  private let storedObjects: [Stored: Counter]
  private let uploadBytes: Counter
  private let reused: Counter
  private let memoryBudget: Gauge
  private let memoryInUse: Gauge
  private let jobsRunning: Gauge
  private let queueJobs: [String: Gauge]
  private let queueReady: Gauge
  private let queueOldestReady: Gauge
  private let webhookResults: [WebhookDeliveryOutcome.Result: Counter]
  private let webhookLatency: Timer
  private let collectedObjects: Counter
  private let collectionFailures: Counter
  private let collectionBacklog: Gauge

  init(factory: any MetricsFactory) {
    self.factory = factory
    collectedObjects = Counter(label: "thumbd_gc_deleted_objects_total", factory: factory)
    collectionFailures = Counter(label: "thumbd_gc_delete_failures_total", factory: factory)
    collectionBacklog = Gauge(label: "thumbd_gc_backlog_objects", factory: factory)
    webhookResults = Dictionary(
      uniqueKeysWithValues: [
        (WebhookDeliveryOutcome.Result.delivered, "delivered"), (.retry, "retried"), (.givenUp, "given_up"),
        (.stopped, "stopped"),
      ].map {
        (
          $0.0,
          Counter(label: "thumbd_webhook_deliveries_total", dimensions: [("result", $0.1)], factory: factory)
        )
      })
    webhookLatency = Timer(label: "thumbd_webhook_delivery_seconds", factory: factory)
    stages = Dictionary(
      uniqueKeysWithValues: Stage.allCases.map {
        ($0, Timer(label: "thumbd_stage_seconds", dimensions: [("stage", $0.rawValue)], factory: factory))
      })
    downloadBytes = Counter(label: "thumbd_download_bytes_total", factory: factory)
    leasesLost = Counter(label: "thumbd_leases_lost_total", factory: factory)
    storedObjects = Dictionary(
      uniqueKeysWithValues: Stored.allCases.map {
        (
          $0,
          Counter(
            label: "thumbd_storage_objects_total", dimensions: [("result", $0.rawValue)], factory: factory)
        )
      })
    uploadBytes = Counter(label: "thumbd_storage_upload_bytes_total", factory: factory)
    reused = Counter(label: "thumbd_renders_reused_total", factory: factory)
    memoryBudget = Gauge(label: "thumbd_memory_budget_bytes", factory: factory)
    memoryInUse = Gauge(label: "thumbd_memory_in_use_bytes", factory: factory)
    jobsRunning = Gauge(label: "thumbd_jobs_running", factory: factory)
    queueJobs = Dictionary(
      uniqueKeysWithValues: ["queued", "running"].map {
        ($0, Gauge(label: "thumbd_queue_jobs", dimensions: [("state", $0)], factory: factory))
      })
    queueReady = Gauge(label: "thumbd_queue_ready_jobs", factory: factory)
    queueOldestReady = Gauge(label: "thumbd_queue_oldest_ready_seconds", factory: factory)
  }

  /// The totals so far (for the registry row and the run's result).
  var counters: WorkerCounters { totals.withLock { $0 } }

  func job(_ outcome: Outcome, code: ErrorCode? = nil) {
    totals.withLock {
      switch outcome {
      case .succeeded: $0.succeeded += 1
      case .failed: $0.failed += 1
      case .retried: $0.retried += 1
      case .handedBack: $0.handedBack += 1
      }
    }
    counter(
      "thumbd_jobs_total", [("outcome", outcome.rawValue), ("error_code", code?.rawValue ?? "none")]
    ).increment()
  }

  /// A job that succeeded with a warning (RenderWarning: a JPEG cut short, rendered).
  func warned(code: String) {
    counter("thumbd_job_warnings_total", [("code", code)]).increment()
  }

  /// The counter of `label` with `dimensions`, made the first time it is asked for.
  private func counter(_ label: String, _ dimensions: [(String, String)]) -> Counter {
    let key = ([label] + dimensions.map { "\($0.0)=\($0.1)" }).joined(separator: "/")
    return labelled.withLock { counters in
      if let counter = counters[key] { return counter }
      let counter = Counter(label: label, dimensions: dimensions, factory: factory)
      counters[key] = counter
      return counter
    }
  }

  func leaseLost() {
    totals.withLock { $0.leaseLost += 1 }
    leasesLost.increment()
  }

  func leaseStatement() { totals.withLock { $0.leaseStatements += 1 } }
  func outcomeBatch() { totals.withLock { $0.outcomeBatches += 1 } }

  func stage(_ stage: Stage, seconds: Double) {
    stages[stage]?.recordNanoseconds(Int64(max(0, seconds) * 1e9))
  }

  func downloaded(bytes: Int) { downloadBytes.increment(by: bytes) }

  /// A webhook POST's result; `latency`: for a delivery, seconds from the event to its 2xx.
  func webhook(_ result: WebhookDeliveryOutcome.Result, latency: Double? = nil) {
    webhookResults[result]?.increment()
    if let latency { webhookLatency.recordNanoseconds(Int64(max(0, latency) * 1e9)) }
  }

  /// A variant object stored (`bytes` sent when uploaded).
  func stored(_ result: Stored, bytes: Int) {
    storedObjects[result]!.increment()
    totals.withLock {
      if result == .uploaded { $0.uploads += 1 } else { $0.alreadyStored += 1 }
    }
    if result == .uploaded { uploadBytes.increment(by: bytes) }
  }

  /// A job took an earlier job's variants: same original bytes, same profile, no decode.
  func reusedRender() {
    reused.increment()
    totals.withLock { $0.reusedRenders += 1 }
  }

  func budget(_ bytes: Int) { memoryBudget.record(bytes) }

  /// Values read from the worker's live state just before each scrape.
  func live(memoryInUse bytes: Int, jobsRunning running: Int) {
    memoryInUse.record(bytes)
    jobsRunning.record(running)
  }

  func queue(_ depth: QueueDepth) {
    queueJobs["queued"]?.record(depth.queued)
    queueJobs["running"]?.record(depth.running)
    queueReady.record(depth.ready)
    queueOldestReady.record(depth.oldestReadySeconds)
    collectionBacklog.record(depth.gcBacklog)
  }

  /// Objects collection deleted from storage, and deletes the storage failed.
  func collected(deleted: Int, failed: Int) {
    if deleted > 0 { collectedObjects.increment(by: deleted) }
    if failed > 0 { collectionFailures.increment(by: failed) }
  }
}
