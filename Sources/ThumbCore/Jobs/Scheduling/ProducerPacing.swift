/// The producer's decisions as values: when it may start, when to lease and how many, how long to wait,
/// when a draining worker is done, and how a stop ends. The Worker's producer performs what it returns
/// (a wait for the start-up, a lease statement, a wait on its wake signal, a rescue, a hand-back); the
/// clock comes in as instants, so every rule here is unit-tested without a database or real time (after
/// postgres-nio's `PoolStateMachine`).
///
/// Its life: starting up (nothing is leased until the keeper has announced the worker and the storage
/// took a write) → producing → stopping (no lease after the stop request; held jobs get the grace,
/// then what still runs is handed back). A stop may come in any phase, the start-up included.
public struct ProducerPacing: Sendable {
  public struct Settings: Sendable {
    public var concurrency: Int
    /// Jobs claimed per lease statement at most.
    public var leaseBatch: Int
    public var drain: Bool
    /// How long an idle producer waits without a wake-up before it looks for due jobs again.
    public var pollInterval: Duration
    /// After a stop request, how long held jobs get before they are handed back.
    public var shutdownGrace: Duration
    /// While jobs run, one free slot waits this long for others before it is leased alone.
    public var settle: Duration = .milliseconds(20)
    /// How long a worker that does not listen (`fleet(listens:)`: most of a fleet's) waits after empty
    /// leases: `pollInterval` after the first, doubling up to the cap while the queue stays empty here.
    /// An idle fleet's statements per second then do not grow with `pollInterval`'s few seconds times
    /// its size; a burst reaches such a worker within the cap, while the listeners take fresh uploads at
    /// once. A listening worker waits `pollInterval` (it is woken anyway).
    public var idleBackoffCap: Duration = .seconds(8)
    /// The pause after failed lease statements: a quarter second more each time, up to 5 s.
    public var leaseBackoff = Backoff(first: .milliseconds(250), cap: .seconds(5), growth: .linear)
    /// Jobs leased beyond the slots: each waits for a slot with its original already downloading, so
    /// that a slot that frees up finds its next job ready to decode instead of waiting for the network.
    public var ahead = 0
    /// Jobs leased beyond the read-ahead when a notification says jobs were enqueued while every slot
    /// and the read-ahead are taken: a new upload is leased at once and, its owner having nothing at
    /// work here, takes the next free slot (HeldJobs) instead of waiting behind the read-ahead job.
    public var onNotification = 1
    /// After a lease statement whose answer was lost, how long to keep looking for jobs the database
    /// leased to this worker anyway (it may run the statement late, when it comes back); past this their
    /// leases have expired and any worker's rescue returns them. The lease's length.
    public var reclaimWindow: Duration = .seconds(60)
    /// How often to look meanwhile.
    public var reclaimInterval: Duration = .seconds(1)

    public init(
      concurrency: Int, leaseBatch: Int, drain: Bool, pollInterval: Duration, shutdownGrace: Duration
    ) {
      self.concurrency = concurrency
      self.leaseBatch = leaseBatch
      self.drain = drain
      self.pollInterval = pollInterval
      self.shutdownGrace = shutdownGrace
    }
  }

  public enum Action: Equatable, Sendable {
    /// The start-up has not ended: wait for it, then report `startUpEnded`.
    case awaitStartUp
    /// A stop was requested (or the start-up was given up): lease no more, and ask `whileStopping`.
    case stop
    /// Run one lease statement for at most this many jobs, then report `leased` or `leaseFailed`.
    case lease(limit: Int)
    /// Sleep until woken (a notification, a finished job, a stop) or this long, then ask `next`.
    case wait(Duration)
    /// Ask `next` again at once.
    case proceed
    /// Draining and nothing is due here: rescue expired leases (a dead worker's jobs may be waiting out
    /// their lease), then report `rescued`.
    case rescue
    /// Drained: the producer ends.
    case finish
    /// A lease statement's answer was lost: look for jobs the database leased to this worker without
    /// its knowing and hand them back, then report `reclaimed` or `reclaimFailed`.
    case reclaim
  }

  public enum StopAction: Equatable, Sendable {
    /// Wait for held jobs to end, until woken or this long, then ask `whileStopping` again.
    case waitForJobs(Duration)
    /// Hand back what still runs (nothing, when every job ended) and end.
    case handBack
  }

  public enum Phase: Equatable, Sendable {
    case startingUp
    case producing
    case stopping
  }

  public let settings: Settings
  public private(set) var phase = Phase.startingUp
  /// Since when a slot has been free while too few were free to lease (the settle rule).
  private var freeSince: ContinuousClock.Instant?
  /// A notification of enqueued jobs came, and no lease statement ran since.
  private var heard = false
  private var failures = 0
  /// Empty leases in a row (for the idle backoff).
  private var empty = 0
  /// Whether this worker is one of the few of its fleet that listen.
  public private(set) var listens = true
  private var stopDeadline: ContinuousClock.Instant?
  /// After a lost lease answer: when to look for unheld jobs next, and until when (nil until the first
  /// look succeeds: the window starts once the database answers again).
  private var reclaimAt: ContinuousClock.Instant?
  private var reclaimUntil: ContinuousClock.Instant?

  public init(_ settings: Settings) {
    self.settings = settings
  }

  /// What to do now, with `held` jobs in this process (leased, their outcome not yet written) of which `aside` stand aside (waiting for memory
  /// or a shared decode, their slot given to another job; at most one extra job per slot). `notified`:
  /// a notification of enqueued jobs came since the last call; it is kept until a lease statement runs
  /// (a second upload, heard while the first one's extra lease still waits for a slot, is leased as soon
  /// as that one starts).
  public mutating func next(
    held: Int, aside: Int, notified: Bool = false, now: ContinuousClock.Instant
  ) -> Action {
    switch phase {
    case .startingUp: return .awaitStartUp
    case .stopping: return .stop
    case .producing: break
    }
    if let at = reclaimAt, at <= now { return .reclaim }
    heard = heard || notified
    let busy = held - min(aside, settings.concurrency)
    let free = settings.concurrency + settings.ahead - busy
    guard free > 0 else {
      freeSince = nil
      let extra = free + settings.onNotification
      guard heard && extra > 0 else { return .wait(settings.pollInterval) }
      heard = false
      return .lease(limit: extra)
    }
    let since = freeSince ?? now
    freeSince = since
    // Slots free up in bursts (outcomes are written in batches). Leasing for every single free slot would
    // split the work into ever smaller statements, so while jobs run the producer waits until half a
    // batch of slots is free, or one slot has been free for `settle` (long jobs).
    let enough = busy == 0 || free >= max(1, settings.leaseBatch / 2)
    let waited = since.duration(to: now)
    // A notification may be a new upload: no settling then.
    if !enough && !heard && waited < settings.settle { return .wait(settings.settle - waited) }
    freeSince = nil
    heard = false
    return .lease(limit: min(free, settings.leaseBatch))
  }

  /// Whether this worker listens for enqueued jobs (the fleet's registry says; a worker that does not
  /// is woken by nothing but its own jobs, and backs off while it finds none).
  public mutating func fleet(listens: Bool) {
    self.listens = listens
  }

  /// The lease statement returned `count` of the `wanted` jobs; `held` counts them already.
  public mutating func leased(count: Int, wanted: Int, held: Int, now: ContinuousClock.Instant) -> Action {
    failures = 0
    empty = count == 0 ? empty + 1 : 0
    // A full lease: there may be more ready, so lease again without waiting.
    if count == wanted { return .proceed }
    if settings.drain && count == 0 && held == 0 { return .rescue }
    guard !listens, empty > 0 else { return .wait(settings.pollInterval) }
    let idle = Backoff(first: settings.pollInterval, cap: max(settings.pollInterval, settings.idleBackoffCap))
    return .wait(.seconds(idle.seconds(afterFailures: empty)))
  }

  /// The lease statement failed (the database is away or restarting): back off a little more each time.
  /// `answerLost`: the statement may have reached the database (its connection broke or its deadline
  /// passed while it waited), which may have leased jobs anyway: look for them until the reclaim window
  /// has passed.
  public mutating func leaseFailed(answerLost: Bool = false, now: ContinuousClock.Instant) -> Action {
    failures += 1
    let delay = settings.leaseBackoff.delay(afterFailures: failures)
    if answerLost {
      reclaimAt = reclaimAt ?? now + delay
      reclaimUntil = nil
    }
    return .wait(delay)
  }

  /// The look for unheld jobs answered (`count` were handed back). The first answer opens the window;
  /// past it, looking ends.
  public mutating func reclaimed(count: Int, now: ContinuousClock.Instant) -> Action {
    let until = reclaimUntil ?? now + settings.reclaimWindow
    if now >= until {
      (reclaimAt, reclaimUntil) = (nil, nil)
    } else {
      (reclaimAt, reclaimUntil) = (now + settings.reclaimInterval, until)
    }
    return .proceed
  }

  /// The look for unheld jobs failed (the database is still away): try again after the lease backoff.
  public mutating func reclaimFailed(now: ContinuousClock.Instant) -> Action {
    failures += 1
    let delay = settings.leaseBackoff.delay(afterFailures: failures)
    reclaimAt = now + delay
    return .wait(delay)
  }

  /// Whether jobs the database may have leased without this worker's knowing are still looked for.
  public var reclaiming: Bool { reclaimAt != nil }

  /// Consecutive failed lease statements, for the log.
  public var consecutiveFailures: Int { failures }

  /// Draining: the rescue requeued `count` jobs. Any: look again; none: the worker is drained.
  public func rescued(count: Int) -> Action {
    count > 0 ? .proceed : .finish
  }

  /// The start-up ended: `started` (the worker is announced and its storage writable), or given up (a
  /// stop came first), which stops the producer before it leased anything.
  public mutating func startUpEnded(started: Bool, now: ContinuousClock.Instant) {
    guard phase == .startingUp else { return }
    if started {
      phase = .producing
    } else {
      stopRequested(now: now)
    }
  }

  /// A stop was requested: leasing ends, held jobs get `shutdownGrace` from `now`.
  public mutating func stopRequested(now: ContinuousClock.Instant) {
    phase = .stopping
    if stopDeadline == nil { stopDeadline = now + settings.shutdownGrace }
  }

  /// While stopping, with `held` jobs left.
  public func whileStopping(held: Int, now: ContinuousClock.Instant) -> StopAction {
    guard held > 0, let deadline = stopDeadline, now < deadline else { return .handBack }
    return .waitForJobs(now.duration(to: deadline))
  }
}
