import Logging
import ThumbCore

/// What the producer and the keeper share: the jobs held here, readiness, the stop request, the
/// counters, the settings and the log.
struct ServiceContext: Sendable {
  let runner: JobRunner
  let readiness: Readiness
  let shutdown: ShutdownSignal
  let metrics: WorkerMetrics
  let config: WorkerConfig
  let logger: Logger
}

/// A service that works from a `ServiceContext` reads its parts by name.
protocol WithServiceContext {
  var context: ServiceContext { get }
}

extension WithServiceContext {
  var runner: JobRunner { context.runner }
  var readiness: Readiness { context.readiness }
  var shutdown: ShutdownSignal { context.shutdown }
  var metrics: WorkerMetrics { context.metrics }
  var config: WorkerConfig { context.config }
  var logger: Logger { context.logger }
}
