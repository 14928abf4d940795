import Logging
import Queue
import ServiceLifecycle
import Synchronization
import ThumbCore

/// The statements a producer runs: the queue's (`JobQueue`), or a test's own.
protocol LeaseStatements: Sendable {
  func lease(
    workerID: String, limit: Int, leaseSeconds: Double, siblings: Int
  ) async throws(PostgresError) -> [LeasedJob]
  func reclaimUnheld(workerID: String, held: [Int64]) async throws(PostgresError) -> [Int64]
  @discardableResult func rescueExpired() async throws(PostgresError) -> [Int64]
  @discardableResult func promoteDue() async throws(PostgresError) -> Int
}

extension JobQueue: LeaseStatements {}

/// What the keeper tells the worker's listeners (a test's own, to see it without a LISTEN connection):
/// whether this worker is one of the few of its fleet that listen (the registry's `watches`).
protocol ListenerSwitch: Sendable {
  func watching(_ on: Bool)
}

extension NotificationListener: ListenerSwitch {}

/// Whether this worker is one of the few of its fleet that listen, as the keeper last heard it from the
/// registry: it tells the worker's listeners (for jobs, and for events when it sends webhooks), and the
/// producer's pacing and the keeper's fleet-wide rounds read it. Until told, a worker counts as one:
/// a lone worker must.
final class FleetRole: Sendable {
  private let state = Atomic<Bool>(true)
  private let listeners: [any ListenerSwitch]

  init(listeners: [any ListenerSwitch]) {
    self.listeners = listeners
  }

  func watching(_ on: Bool) {
    state.store(on, ordering: .releasing)
    for listener in listeners { listener.watching(on) }
  }

  var listens: Bool { state.load(ordering: .acquiring) }
}

/// Leases due jobs as slots free up and starts them; on a stop, waits out the grace period and hands
/// back what still runs. Its decisions come from `ProducerPacing`; this only performs them.
///
/// The last service of the group, so the first to stop: while it hands jobs back, the completer still
/// writes and the keeper still heartbeats.
struct Producer: Service, WithServiceContext {
  let queue: any LeaseStatements
  let role: FleetRole
  let context: ServiceContext
  let activity: ServiceActivity.Reporter

  func run() async throws {
    let wake = runner.wake
    shutdown.notify(wake)
    await withGracefulShutdownHandler {
      await produce()
    } onGracefulShutdown: {
      shutdown.request(reason: "the service group is stopping")
    }
  }

  private func produce() async {
    var pacing = ProducerPacing(config.pacing)
    await withDiscardingTaskGroup { group in
      var action = ProducerPacing.Action.proceed
      produce: while true {
        // The stop flag is read before every decision: after it, the pacing leases nothing more.
        if shutdown.isRequested { pacing.stopRequested(now: .now) }
        switch action {
        case .proceed:
          // Jobs whose outcome is being written need no slot: lease for them now (JobRunner.finishing).
          pacing.fleet(listens: role.listens)
          action = pacing.next(
            held: runner.held - runner.finishing, aside: runner.aside, notified: runner.notified.take(),
            now: .now)
        case .awaitStartUp:
          activity.awaiting("the start-up: the database reached and the storage checked")
          pacing.startUpEnded(started: await readiness.waitUntilStarted(), now: .now)
          action = .proceed
        case .wait(let duration):
          activity.awaiting("a wake-up or \(duration.inSeconds) s (\(runner.held) jobs running)")
          await runner.wake.wait(timeout: duration.inSeconds)
          action = .proceed
        case .lease(let limit):
          activity.awaiting("a lease statement for \(limit) jobs")
          do {
            let jobs = try await readiness.observe { () throws(PostgresError) in
              try await queue.lease(
                workerID: config.workerID, limit: limit, leaseSeconds: config.leaseSeconds,
                siblings: config.leaseSiblings)
            }
            metrics.leaseStatement()
            runner.start(jobs, in: &group)
            action = pacing.leased(count: jobs.count, wanted: limit, held: runner.held, now: .now)
          } catch {
            action = pacing.leaseFailed(answerLost: (error as? PostgresError)?.kind != .query, now: .now)
            logger.warning(
              "lease failed, will retry",
              metadata: ["error": "\(error)", "failures": "\(pacing.consecutiveFailures)"])
          }
        case .reclaim:
          activity.awaiting("a look for jobs a lost lease answer may have leased")
          do {
            let held = runner.snapshot.map(\.id)
            let returned = try await queue.reclaimUnheld(workerID: config.workerID, held: held)
            if !returned.isEmpty {
              logger.notice(
                "handed back jobs leased by a statement whose answer was lost",
                metadata: ["job.ids": "\(returned)"])
            }
            action = pacing.reclaimed(count: returned.count, now: .now)
          } catch {
            action = pacing.reclaimFailed(now: .now)
          }
        case .rescue:
          // Nothing due here. Jobs of dead workers may be waiting out their lease, and jobs whose run_at
          // has come may be waiting for their turn (the keeper gives it about once a second): rescue and
          // promote, then look again.
          activity.awaiting("a rescue statement (draining)")
          let rescued = (try? await queue.rescueExpired()) ?? []
          let promoted = (try? await queue.promoteDue()) ?? 0
          action = pacing.rescued(count: rescued.count + promoted)
        case .finish:
          logger.info("drained: no job is due and none runs here")
          pacing.stopRequested(now: .now)
          break produce
        case .stop:
          break produce
        }
      }
      await stopGracefully(&pacing)
      activity.awaiting("the last outcomes of \(runner.held) jobs to be written")
    }
  }

  /// After a stop request: held jobs get `shutdownGrace` to finish; the rest are handed back.
  private func stopGracefully(_ pacing: inout ProducerPacing) async {
    readiness.stopping()
    if runner.held > 0 {
      logger.notice(
        "stopping: waiting for running jobs",
        metadata: ["jobs.running": "\(runner.held)", "grace_seconds": "\(config.shutdownGrace)"])
    }
    while case .waitForJobs(let duration) = pacing.whileStopping(held: runner.held, now: .now) {
      activity.awaiting("\(runner.held) running jobs to finish within the grace")
      await runner.wake.wait(timeout: duration.inSeconds)
    }
    activity.awaiting("the hand-back of the jobs still running")
    await runner.handBackAll()
  }
}
