/// When the keeper does what, as values: it asks `due` what to run now and `nextWake` how long it may
/// sleep. The keeper performs the tasks (heartbeats, rescue, housekeeping, sampling the queue); the
/// clock comes in as instants, so the schedule is unit-tested without a database or real time.
public struct KeeperSchedule: Sendable {
  public enum Task: String, Sendable, Equatable, CaseIterable {
    /// Extend every held lease in one statement and refresh the worker's registry row.
    case heartbeat
    /// Requeue (or fail) jobs whose lease expired: their worker died or froze.
    case rescue
    /// Expire stale worker rows and prune finished jobs past retention.
    case housekeeping
    /// Count the live jobs for the queue gauges; its answer also tells readiness the database is there.
    case sampleQueue
    /// Give queued jobs whose run_at has come their turn in line, so that the lease sees them.
    case promoteDue
  }

  public struct Settings: Sendable {
    public var heartbeatInterval: Duration
    public var housekeepingInterval: Duration
    public var sampleInterval: Duration
    /// How late after its run_at a deferred job may get its turn, at most (and the lease's poll after it).
    public var promoteInterval: Duration

    /// Heartbeats every third of the lease, so two can be lost before a lease expires.
    public init(
      leaseSeconds: Double, housekeepingSeconds: Double, sampleSeconds: Double = 5, promoteSeconds: Double = 1
    ) {
      heartbeatInterval = .seconds(max(0.2, leaseSeconds / 3))
      housekeepingInterval = .seconds(housekeepingSeconds)
      sampleInterval = .seconds(sampleSeconds)
      promoteInterval = .seconds(promoteSeconds)
    }
  }

  public let settings: Settings
  /// How many sample intervals a worker that does not run the fleet's rounds waits between samples.
  public static let quietSampleFactor = 6
  private var nextHeartbeat: ContinuousClock.Instant
  private var nextHousekeeping: ContinuousClock.Instant
  private var nextSample: ContinuousClock.Instant
  private var nextPromote: ContinuousClock.Instant

  /// `start`: when the worker reached the database. Heartbeats and rescue come one interval later (the
  /// start-up itself announced and rescued); housekeeping too; the queue is sampled and due jobs are
  /// promoted at once.
  public init(_ settings: Settings, start: ContinuousClock.Instant) {
    self.settings = settings
    nextHeartbeat = start + settings.heartbeatInterval
    nextHousekeeping = start + settings.heartbeatInterval
    nextSample = start
    nextPromote = start
  }

  /// The tasks due at `now`, in the order to run them; each is scheduled again one interval from `now`.
  /// A stopping worker only heartbeats: it keeps its leases alive while its jobs finish or are handed
  /// back, and leaves rescue, promotion and housekeeping to the workers that stay. So does one that is
  /// not `forTheFleet` (not one of the few that listen): those rounds are the fleet's, and a hundred
  /// workers each running them every second would cost the database more than the work.
  public mutating func due(now: ContinuousClock.Instant, stopping: Bool, forTheFleet: Bool = true) -> [Task] {
    var tasks: [Task] = []
    let fleetWide = !stopping && forTheFleet
    if now >= nextHeartbeat {
      nextHeartbeat = now + settings.heartbeatInterval
      tasks.append(.heartbeat)
      if fleetWide { tasks.append(.rescue) }
    }
    if stopping { return tasks }
    if now >= nextHousekeeping {
      nextHousekeeping = now + settings.housekeepingInterval
      if fleetWide { tasks.append(.housekeeping) }
    }
    if now >= nextSample {
      // The count is the fleet's, shared (queue_depth.sql): the listeners keep it fresh, the others
      // look less often, for their gauges and their readiness.
      nextSample = now + settings.sampleInterval * (forTheFleet ? 1 : Self.quietSampleFactor)
      tasks.append(.sampleQueue)
    }
    if now >= nextPromote {
      nextPromote = now + settings.promoteInterval
      if fleetWide { tasks.append(.promoteDue) }
    }
    return tasks
  }

  /// When the next task falls due.
  public func nextWake(stopping: Bool) -> ContinuousClock.Instant {
    stopping ? nextHeartbeat : min(nextHeartbeat, nextHousekeeping, nextSample, nextPromote)
  }
}

extension KeeperSchedule {
  /// The keeper's start-up as values: the HTTP endpoint listening first (a worker that cannot serve its
  /// probes stops before it touches the database), then the database reached and the worker announced
  /// (retried with backoff for as long as it takes), then one rescue, then started. A stop may come at
  /// any of these points, and always ends the start-up the same way: no `started`, the registration
  /// withdrawn if it was made, the producer told the start-up was given up.
  public struct StartUp: Sendable {
    public enum Phase: Equatable, Sendable {
      case awaitingEndpoint
      case reachingDatabase
      case rescuing
      case started
      case abandoned
    }

    public enum Action: Equatable, Sendable {
      /// Look at the endpoint again after this long.
      case waitForEndpoint(Duration)
      /// Check the schema and announce the worker; report `announced` or `announceFailed`.
      case announce
      /// Wait this long (a stop ends the wait early), then ask `next` again.
      case waitToRetry(Duration)
      /// Requeue expired leases once before leasing; report `rescued`.
      case rescue
      /// Tell the producer it may lease; the keeper's rounds begin.
      case start
      /// Stopped during the start-up: withdraw the registration if `withdraw`, tell the producer, and
      /// wait for the keeper's turn in the group's stop.
      case abandon(withdraw: Bool)
    }

    public private(set) var phase = Phase.awaitingEndpoint
    /// Failed tries to reach the database so far.
    public private(set) var failures = 0
    private var isAnnounced = false
    public let backoff: Backoff
    /// How often the endpoint is looked at while it is not listening yet.
    public let endpointPoll: Duration

    public init(backoff: Backoff = Backoff(), endpointPoll: Duration = .milliseconds(20)) {
      self.backoff = backoff
      self.endpointPoll = endpointPoll
    }

    /// What to do now. `stopping`: a stop was requested, or the keeper's turn to stop came.
    public mutating func next(endpointListening: Bool, stopping: Bool) -> Action {
      switch phase {
      case .started: return .start
      case .abandoned: return .abandon(withdraw: isAnnounced)
      default: break
      }
      if stopping {
        phase = .abandoned
        return .abandon(withdraw: isAnnounced)
      }
      if phase == .awaitingEndpoint {
        guard endpointListening else { return .waitForEndpoint(endpointPoll) }
        phase = .reachingDatabase
      }
      if phase == .reachingDatabase {
        guard isAnnounced else { return .announce }
        phase = .rescuing
      }
      return .rescue
    }

    /// The worker's registration was written.
    public mutating func announced() {
      isAnnounced = true
    }

    /// The database did not answer, or cannot take this worker yet: wait, then try again.
    public mutating func announceFailed() -> Action {
      failures += 1
      return .waitToRetry(backoff.delay(afterFailures: failures))
    }

    /// The first rescue ran (whatever it found): the next `next` starts the worker, unless a stop came.
    public mutating func rescued(stopping: Bool) -> Action {
      guard phase == .rescuing else { return next(endpointListening: true, stopping: stopping) }
      if stopping {
        phase = .abandoned
        return .abandon(withdraw: isAnnounced)
      }
      phase = .started
      return .start
    }
  }
}
