/// The jobs one worker holds and the life of each, as a value: events in, actions out (after
/// postgres-nio's `PoolStateMachine`). No I/O, no locks and no clock of its own: the worker's `JobRunner`
/// keeps it under one lock, reports what happened with the time it happened, and performs the actions it
/// gets back outside the lock. `Work` is the runner's handle on one job (its task); `Made` is what a
/// job's work leaves behind when it succeeds, carried in its `JobOutcome` to the write.
///
/// Every event returns the actions it leads to, timers included (`awaitReuse` asks for a call of
/// `reusePatienceEnded` at its instant); the runner asks nothing else before acting. An outcome decided
/// goes to be written even if the lease is lost a moment later: the write is fenced, and the database
/// refuses it as it would a write already under way.
///
/// A job's life, keyed by its lease (job id and lease token):
///
///     leased ─▶ awaiting_slot ─▶ started ─▶ fetching ─▶ rendering ─▶ storing ─▶ writing_outcome ─▶ (done)
///                  │ prefetch                  │    ▲        ▲
///                  │                           ▼    │        │
///                  │         awaiting_reuse / awaiting_shared_render / awaiting_memory (slot given up)
///                  ▼
///     at any point before its outcome is written: lease_lost (a heartbeat was refused), handed_back
///     (a stopping worker returned it) or superseded (a newer lease of ours on the job replaced it); its
///     work is abandoned and nothing is written.
///
/// A freed job slot goes to the waiting job whose owner has the fewest jobs at work here, the first leased
/// among equals: owners take turns on the worker as they do in the queue, so an upload leased while an
/// import's next job waits for a slot starts before it. A job that waits for something other
/// than a core (memory, another job's decode, another job's outcome, the storage) gives its slot to the
/// next job and finishes without taking one back: taking one back could deadlock (a granted decode
/// waiting for a slot held by a download paused for that decode's memory), and memory, not the slot,
/// bounds what a granted decode costs. A job whose lease is gone keeps its slot until its work has
/// really stopped (a blocking call may still be running on a pool thread).
public struct HeldJobs<Work, Made> {
  public struct Settings: Sendable {
    /// Job slots: jobs that may use a core at once.
    public var slots: Int
    /// When a job whose attempt failed with a transient error runs again.
    public var retryPolicy = RetryPolicy()
    /// The wait of a job the storage refused, while the worker's storage configuration is wrong: 10 s
    /// doubling to 5 minutes. No attempt is used.
    public var refusalBackoff = Backoff(first: .seconds(10), cap: .seconds(300), jitter: .shorterBy(0.25))
    /// For this long after the storage refused a write, jobs fail at once with that refusal instead of
    /// downloading and rendering what the storage would refuse again.
    public var refusalHold: Duration = .seconds(10)
    /// How long a job waits for the outcome of another job here rendering the same render key before
    /// it renders anyway: reuse saves work, it is never needed for a correct result.
    public var reusePatience: Duration = .seconds(2)

    public init(slots: Int) { self.slots = slots }
  }

  /// What the runner does, outside the lock, in the order given.
  public enum Action {
    /// The job has a slot: start its work. `refusedBy`: the storage refused a write moments ago; the
    /// work ends at once with that error instead.
    case start(Work, refusedBy: JobError?)
    /// Start downloading the job's original while it waits for a slot.
    case prefetch(url: String)
    /// The job is released: a download started for it ahead is no longer needed for it.
    case dropPrefetch(url: String)
    /// The lease is gone (`because`: `leaseLost`, `handedBack` or `superseded`): cancel the work;
    /// nothing of it is written. `wasWaiting`: it never started (it had no slot yet).
    case abandon(Work, because: JobPhase, wasWaiting: Bool)
    /// The work is over: write this outcome, then report `released`.
    case writeOutcome(Work, JobOutcome<Made>)
    /// The work succeeded after its lease went: what it made will not be written (its uploads are
    /// collection's to decide).
    case discard(Made)
    /// A timer: the job waits for another job's outcome until `until` at the latest; report
    /// `reusePatienceEnded` then.
    case awaitReuse(Work, until: ContinuousClock.Instant)
    /// Jobs waiting for a render key's outcome may look for it now.
    case endReuseWait([Work])
    /// A stopping worker returns these jobs: write their hand-back, then perform the actions after it.
    case handBack([Work])
    /// The job renders in this role (the runner hands it to the job's work).
    case renderAs(Work, RenderRole)
    /// A job ended or gave up its slot: the producer may lease again.
    case wakeProducer
  }

  /// How a job renders. The jobs of one URL leased together form a group, in lease order; the first of
  /// them to start its work closes the group and renders for every member from one decode, the others
  /// take their share of its result. A job leased after the group closed opens a new one.
  public enum RenderRole {
    /// Render for every member (in this order; the job itself among them).
    case lead(members: [Work])
    /// `leader` renders for this job: wait for its result.
    case follow(leader: Work)
  }

  /// What the rules read of a held job (the job itself stays with its work: an entry is copied at
  /// every look, and its profile spec and other strings would be copied with it).
  fileprivate struct Entry {
    var lease: JobLease
    var url: String
    var attempt: Int
    var maxAttempts: Int
    var owner: String?
    var work: Work
    var phase: JobPhase
    var since: ContinuousClock.Instant
    /// Its work began and has not ended yet.
    var working = false
    /// A download of its original was started for it while it waited for a slot.
    var prefetched = false
    /// The render key it renders (others with the same key wait for its outcome).
    var renderKey: String?
    /// The render key whose outcome it waits for.
    var awaitingKey: String?
    /// The render group it belongs to.
    var group: UInt64?
  }

  fileprivate struct RenderGroup {
    /// The identity of the members' source URL (`SourceURL.identity`).
    var source: String
    /// The members still held, in lease order.
    var members: [JobLease]
    /// Set when the group closes: the member that renders for all.
    var leader: Work?
  }

  public let settings: Settings
  private var entries: [Int64: Entry] = [:]
  /// Jobs waiting for a slot, in lease order (`nextForSlot` picks among them).
  private var slotQueue: [JobLease] = []
  /// The leases whose work holds a slot (a lease lost or superseded keeps its slot until its work ends).
  private var slotHolders: Set<JobLease> = []
  private var refusal: (at: ContinuousClock.Instant, error: JobError)?
  /// Jobs the storage refused in a row (reset by a success): how long the next one waits.
  private var refusalStreak = 0
  private var groups: [UInt64: RenderGroup] = [:]
  /// The group of each URL that jobs leased now join (until one of its members starts rendering).
  private var openGroups: [String: UInt64] = [:]
  private var nextGroup: UInt64 = 0

  public init(_ settings: Settings) { self.settings = settings }

  // MARK: - What the producer and the keeper read

  /// Jobs held, from their lease until their outcome is written (or their work abandoned).
  public var held: Int { entries.count }
  /// Jobs whose outcome is being written: they need no slot, so the producer leases for them at once
  /// and the next job's lease and fetch overlap the write.
  public var finishing: Int { entries.values.filter { $0.phase == .writingOutcome }.count }
  /// Jobs at work without a slot (waiting for memory, a shared decode, another's outcome, the storage).
  public var aside: Int {
    entries.values.filter { $0.working && !slotHolders.contains($0.lease) }.count
  }
  public var freeSlots: Int { settings.slots - slotHolders.count }

  /// The leases to extend in the next heartbeat, in id order.
  public var leasesToExtend: [JobLease] {
    entries.values.filter { $0.phase.isHeld }.map(\.lease).sorted { $0.id < $1.id }
  }

  public func phase(of lease: JobLease) -> JobPhase? { entry(lease)?.phase }

  public func work(of lease: JobLease) -> Work? { entry(lease)?.work }

  public var snapshot: [HeldJob] {
    entries.values.sorted { $0.lease.id < $1.lease.id }.map {
      HeldJob(
        id: $0.lease.id, attempt: $0.attempt, phase: $0.phase, since: $0.since,
        holdsSlot: slotHolders.contains($0.lease))
    }
  }

  // MARK: - Events

  /// A lease statement returned these jobs. Each takes a free slot or waits for one in line, its
  /// original downloading meanwhile. An older lease of ours on the same job (it expired unnoticed, say
  /// during a database outage, and the job came back to us) is over: its work is abandoned.
  public mutating func leased(
    _ jobs: [(job: LeasedJob, work: Work)], now: ContinuousClock.Instant
  ) -> [Action] {
    var actions: [Action] = []
    for (job, work) in jobs {
      if let old = entries[job.id] { actions += remove(old, abandoning: .superseded) }
      let source = SourceURL.identity(job.sourceURL)
      let group = openGroups[source] ?? openGroup(source: source)
      groups[group]?.members.append(job.lease)
      entries[job.id] = Entry(
        lease: job.lease, url: job.sourceURL, attempt: job.attempt, maxAttempts: job.maxAttempts,
        owner: job.owner,
        work: work, phase: .awaitingSlot, since: now, group: group)
      slotQueue.append(job.lease)
    }
    return actions + grantSlots(now: now)
  }

  /// The job's work went on to `phase`, keeping whatever slot it holds. No action follows.
  public mutating func entered(_ phase: JobPhase, _ lease: JobLease, now: ContinuousClock.Instant) -> [Action]
  {
    update(lease) { entry in
      guard entry.phase.isHeld, entry.phase != phase else { return }
      entry.phase = phase
      entry.since = now
    }
    return []
  }

  /// The job waits for something other than a core (`phase`): its slot goes to the next job.
  public mutating func steppedAside(
    _ phase: JobPhase, _ lease: JobLease, now: ContinuousClock.Instant
  ) -> [Action] {
    return entered(phase, lease, now: now) + releaseSlot(of: lease, now: now)
  }

  /// The job's work ended with `result`. A held job's outcome is decided here and goes to be written;
  /// `unit` is a random number in [0, 1) for the retry's jitter. What a job no longer held made is
  /// discarded. Its slot goes to the next job.
  public mutating func workEnded(
    _ lease: JobLease, _ result: Result<Made, JobError>, unit: Double, now: ContinuousClock.Instant
  ) -> [Action] {
    var actions: [Action] = []
    if var entry = entry(lease), entry.working {
      entry.working = false
      if entry.phase.isHeld {
        entry.phase = .writingOutcome
        entry.since = now
        actions.append(.writeOutcome(entry.work, decide(entry, result, unit: unit)))
      } else if case .success(let made) = result {
        actions.append(.discard(made))
      }
      entries[lease.id] = entry
    } else if entry(lease) == nil, case .success(let made) = result {
      actions.append(.discard(made))  // a newer lease on the job replaced this one
    }
    return actions + releaseSlot(of: lease, now: now)
  }

  /// The job's outcome was written (or will not be: its work was abandoned): it leaves the book. A
  /// download started for it while it waited for a slot is dropped (if the job took it over, it is
  /// done with it).
  public mutating func released(_ lease: JobLease) -> [Action] {
    guard let entry = entry(lease) else { return [] }
    return remove(entry, abandoning: nil)
      + (entry.prefetched ? [.dropPrefetch(url: entry.url)] : [])
      + [.wakeProducer]
  }

  /// A heartbeat answered: every lease sent but not extended is lost (unless the job was leased again
  /// since, under another token). The work of each is abandoned.
  public mutating func heartbeatAnswered(
    sent: [JobLease], extended: Set<Int64>, now: ContinuousClock.Instant
  ) -> [Action] {
    var actions: [Action] = []
    for lease in sent where !extended.contains(lease.id) {
      actions += end(lease, as: .leaseLost, now: now)
    }
    return actions
  }

  /// The end of a graceful stop: every job still held is handed back (in id order), then its work is
  /// abandoned. A job whose outcome is being written is handed back too: both writes are fenced, and the
  /// database keeps the first.
  public mutating func handBackAll(now: ContinuousClock.Instant) -> [Action] {
    let held = leasesToExtend
    guard !held.isEmpty else { return [] }
    var works: [Work] = []
    for lease in held {
      update(lease) { entry in
        entry.phase = .handedBack
        entry.since = now
        works.append(entry.work)
      }
    }
    return [.handBack(works)] + held.flatMap { abandonWork(of: $0, because: .handedBack) }
  }

  // MARK: Render reuse

  /// The job found the render key of its original and profile, and will look for an earlier job's
  /// variants under it. Reuse finds a job only once its outcome is written: if a job here is rendering
  /// the same key, the job waits (`awaitReuse`, its slot given up) until that outcome is written
  /// (`endReuseWait`) or its patience runs out (`reusePatienceEnded`), whichever is first. Without an
  /// `awaitReuse` among the actions it looks at once.
  public mutating func lookingForReuse(
    _ key: String, _ lease: JobLease, now: ContinuousClock.Instant
  ) -> [Action] {
    let busy = entries.values.contains { $0.renderKey == key && $0.lease != lease }
    guard busy, let entry = entry(lease), entry.phase.isHeld else { return [] }
    update(lease) { $0.awaitingKey = key }
    return [.awaitReuse(entry.work, until: now + settings.reusePatience)]
      + steppedAside(.awaitingReuse, lease, now: now)
  }

  /// The instant of an `awaitReuse` came: if the job still waits, its wait ends (it renders itself).
  public mutating func reusePatienceEnded(_ lease: JobLease) -> [Action] {
    guard let entry = entry(lease), entry.awaitingKey != nil else { return [] }
    update(lease) { $0.awaitingKey = nil }
    return [.endReuseWait([entry.work])]
  }

  /// The job renders `key` itself: jobs here that find the same key wait for its outcome. No action
  /// follows.
  public mutating func renders(_ key: String, _ lease: JobLease) -> [Action] {
    update(lease) { $0.renderKey = key }
    return []
  }

  // MARK: Shared renders

  /// The job is about to render: it leads its group (closing it to later jobs) or follows its leader
  /// (`renderAs`). Nothing when its lease is no longer held (its work is being abandoned).
  public mutating func joiningRender(_ lease: JobLease) -> [Action] {
    guard let entry = entry(lease), entry.phase.isHeld, let id = entry.group, var group = groups[id] else {
      return []
    }
    if let leader = group.leader { return [.renderAs(entry.work, .follow(leader: leader))] }
    group.leader = entry.work
    groups[id] = group
    if openGroups[group.source] == id { openGroups[group.source] = nil }
    return [.renderAs(entry.work, .lead(members: group.members.compactMap { self.entry($0)?.work }))]
  }

  // MARK: The storage's refusals

  /// The storage took a write (`refusal` nil) or refused one: for `refusalHold` after a refusal, jobs
  /// given a slot end at once with it. No action follows.
  public mutating func storageAnswered(refusal: JobError?, now: ContinuousClock.Instant) -> [Action] {
    self.refusal = refusal.map { (now, $0) }
    return []
  }

  // MARK: - Rules

  private func entry(_ lease: JobLease) -> Entry? {
    guard let entry = entries[lease.id], entry.lease == lease else { return nil }
    return entry
  }

  private mutating func update(_ lease: JobLease, _ change: (inout Entry) -> Void) {
    guard var entry = entry(lease) else { return }
    change(&entry)
    entries[lease.id] = entry
  }

  private mutating func openGroup(source: String) -> UInt64 {
    nextGroup += 1
    groups[nextGroup] = RenderGroup(source: source, members: [])
    openGroups[source] = nextGroup
    return nextGroup
  }

  /// A member leaves: a group nobody is left in is forgotten. A closed group keeps its leader for the
  /// members still to join it, however the leader itself ended.
  private mutating func leave(group id: UInt64, _ lease: JobLease) {
    guard var group = groups[id] else { return }
    group.members.removeAll { $0 == lease }
    if !group.members.isEmpty {
      groups[id] = group
      return
    }
    groups[id] = nil
    if openGroups[group.source] == id { openGroups[group.source] = nil }
  }

  /// Render groups open or being rendered, for tests.
  var groupCount: Int { groups.count }

  private mutating func grantSlots(now: ContinuousClock.Instant) -> [Action] {
    var actions: [Action] = []
    let refusedBy = refusal.flatMap { $0.at.duration(to: now) < settings.refusalHold ? $0.error : nil }
    while slotHolders.count < settings.slots, let next = nextForSlot() {
      let lease = slotQueue.remove(at: next)
      guard var entry = entry(lease) else { continue }
      slotHolders.insert(lease)
      entry.phase = .started
      entry.since = now
      entry.working = true
      entries[lease.id] = entry
      actions.append(.start(entry.work, refusedBy: refusedBy))
    }
    for lease in slotQueue {
      guard var entry = entry(lease), !entry.prefetched else { continue }
      entry.prefetched = true
      entries[lease.id] = entry
      actions.append(.prefetch(url: entry.url))
    }
    return actions
  }

  /// The waiting job to give a slot: the first of those whose owner has the fewest jobs at work here.
  private func nextForSlot() -> Int? {
    guard slotQueue.count > 1 else { return slotQueue.indices.first }
    var atWork: [String?: Int] = [:]
    for entry in entries.values where entry.working { atWork[entry.owner, default: 0] += 1 }
    var best: (index: Int, count: Int)?
    for (index, lease) in slotQueue.enumerated() {
      let count = atWork[entries[lease.id]?.owner ?? nil, default: 0]
      if count < best?.count ?? .max { best = (index, count) }
      if count == 0 { break }
    }
    return best?.index
  }

  private mutating func releaseSlot(of lease: JobLease, now: ContinuousClock.Instant) -> [Action] {
    guard slotHolders.remove(lease) != nil else { return [] }
    return grantSlots(now: now) + [.wakeProducer]
  }

  /// The lease is lost before its outcome was written: its work is abandoned (a write already under
  /// way will be refused by the database).
  private mutating func end(_ lease: JobLease, as ending: JobPhase, now: ContinuousClock.Instant) -> [Action]
  {
    guard entry(lease)?.phase.isHeld == true else { return [] }
    update(lease) {
      $0.phase = ending
      $0.since = now
    }
    return abandonWork(of: lease, because: .leaseLost)
  }

  private mutating func abandonWork(of lease: JobLease, because reason: JobPhase) -> [Action] {
    guard let entry = entry(lease) else { return [] }
    let waiting = slotQueue.contains(lease)
    slotQueue.removeAll { $0 == lease }
    return [.abandon(entry.work, because: reason, wasWaiting: waiting)]
  }

  /// Takes the entry out of the book: its render key is free. `abandoning`: the work is abandoned first
  /// (a lease superseded by a newer one, whose job takes over any prefetch of the same URL).
  private mutating func remove(_ entry: Entry, abandoning reason: JobPhase?) -> [Action] {
    var actions: [Action] = []
    if let reason { actions += abandonWork(of: entry.lease, because: reason) }
    entries[entry.lease.id] = nil
    if let id = entry.group { leave(group: id, entry.lease) }
    if let key = entry.renderKey, !entries.values.contains(where: { $0.renderKey == key }) {
      var waiting: [Work] = []
      for (id, other) in entries where other.awaitingKey == key {
        entries[id]?.awaitingKey = nil
        waiting.append(other.work)
      }
      if !waiting.isEmpty { actions.append(.endReuseWait(waiting)) }
    }
    return actions
  }

  private mutating func decide(
    _ entry: Entry, _ result: Result<Made, JobError>, unit: Double
  )
    -> JobOutcome<Made>
  {
    let failure: JobError
    switch result {
    case .success(let made):
      refusalStreak = 0
      return .succeeded(made)
    case .failure(let error):
      failure = error
    }
    if failure.code == .storageRefused {
      refusalStreak += 1
      return .deferred(
        failure, retryAfter: settings.refusalBackoff.seconds(afterFailures: refusalStreak, unit: unit))
    }
    switch settings.retryPolicy.decide(
      code: failure.code, attempt: entry.attempt, maxAttempts: entry.maxAttempts, unit: unit)
    {
    case .retry(let seconds):
      return .failed(failure, retryAfter: max(seconds, failure.retryNotBeforeSeconds ?? 0))
    case .fail:
      return .failed(failure, retryAfter: nil)
    }
  }
}

/// One lease on one job.
public struct JobLease: Hashable, Sendable, CustomStringConvertible {
  public var id: Int64
  public var token: String

  public init(id: Int64, token: String) {
    self.id = id
    self.token = token
  }

  public var description: String { "\(id)" }
}

public enum JobPhase: String, Sendable, CaseIterable {
  /// Leased; every slot is taken. Its original downloads meanwhile.
  case awaitingSlot = "awaiting_slot"
  /// It has a slot; its work has begun.
  case started
  case fetching
  /// Another job here renders the same original with the same profile: its outcome is awaited.
  case awaitingReuse = "awaiting_reuse"
  /// Another job here decodes the same original for both.
  case awaitingSharedRender = "awaiting_shared_render"
  case awaitingMemory = "awaiting_memory"
  case rendering
  case storing
  case writingOutcome = "writing_outcome"
  /// A heartbeat was refused (the job was cancelled, or its lease expired and was taken): its work
  /// is abandoned and nothing will be written.
  case leaseLost = "lease_lost"
  /// A stopping worker returned it to the queue.
  case handedBack = "handed_back"
  /// The job came back to this worker under a newer lease (the older one expired unnoticed, say during
  /// a database outage): the older lease's work is abandoned, and its entry gives way to the newer one.
  case superseded

  /// Whether the lease is still this worker's to write.
  public var isHeld: Bool { self != .leaseLost && self != .handedBack && self != .superseded }
}

extension HeldJobs: Sendable where Work: Sendable, Made: Sendable {}
extension HeldJobs.Action: Sendable where Work: Sendable, Made: Sendable {}
extension HeldJobs.Entry: Sendable where Work: Sendable {}
extension HeldJobs.RenderGroup: Sendable where Work: Sendable {}
extension HeldJobs.RenderRole: Sendable where Work: Sendable {}
// Equal when their works and results are: tests compare whole action lists, so an unexpected action
// fails them.
extension HeldJobs.Action: Equatable where Work: Equatable, Made: Equatable {}
extension HeldJobs.RenderRole: Equatable where Work: Equatable {}

/// Where a held job is: its phase and since when, and whether it holds a job slot.
public struct HeldJob: Equatable, Sendable {
  public var id: Int64
  public var attempt: Int
  public var phase: JobPhase
  public var since: ContinuousClock.Instant
  public var holdsSlot: Bool
}
