import Testing

@testable import ThumbCore

/// Whole lives of held jobs, driven with instants made here: no database, no tasks, no sleeping. The
/// work handle is the job's name; what a success makes is the string "made".
@Suite struct HeldJobsTests {
  typealias Jobs = HeldJobs<String, String>
  let t0 = ContinuousClock.now

  func jobs(slots: Int = 1) -> Jobs {
    var settings = Jobs.Settings(slots: slots)
    settings.refusalBackoff = Backoff(first: .seconds(10), cap: .seconds(300))
    settings.retryPolicy = RetryPolicy(baseSeconds: 10, capSeconds: 3600, jitter: 0)
    return Jobs(settings)
  }

  func lease(_ id: Int64, _ token: String = "t") -> JobLease { JobLease(id: id, token: "\(token)\(id)") }

  func leased(
    _ ids: [Int64], token: String = "t", url: String? = nil, attempt: Int = 1, owner: String? = nil
  ) -> [(job: LeasedJob, work: String)] {
    ids.map {
      let job = LeasedJob(
        id: $0, sourceURL: url ?? "https://o/\($0).jpg", attempt: attempt, maxAttempts: 3,
        leaseToken: "\(token)\($0)", owner: owner)
      return (job, "job\($0)\(token)")
    }
  }

  /// The actions compared here are always the whole list an event returned: an action a test does not
  /// name fails it.
  func start(_ work: String, refusedBy: JobError? = nil) -> Jobs.Action { .start(work, refusedBy: refusedBy) }

  func prefetch(_ id: Int64) -> Jobs.Action { .prefetch(url: "https://o/\(id).jpg") }

  func wrote(_ work: String, _ outcome: JobOutcome<String> = .succeeded("made")) -> Jobs.Action {
    .writeOutcome(work, outcome)
  }

  func ended(
    _ jobs: inout Jobs, _ id: Int64, token: String = "t", failure: JobError? = nil, at: Duration = .zero
  ) -> [Jobs.Action] {
    jobs.workEnded(lease(id, token), failure.map { .failure($0) } ?? .success("made"), unit: 0, now: t0 + at)
  }

  @Test func aJobLivesFromLeaseToWrittenOutcome() {
    var jobs = jobs()
    let lease = lease(1)
    #expect(jobs.leased(leased([1]), now: t0) == [start("job1t")])
    #expect(jobs.phase(of: lease) == .started)
    #expect(jobs.held == 1 && jobs.freeSlots == 0)
    #expect(jobs.entered(.fetching, lease, now: t0 + .milliseconds(10)).isEmpty)
    #expect(jobs.entered(.rendering, lease, now: t0 + .milliseconds(50)).isEmpty)
    #expect(jobs.snapshot.first?.since == t0 + .milliseconds(50))
    #expect(jobs.steppedAside(.storing, lease, now: t0 + .milliseconds(90)) == [.wakeProducer])
    #expect(jobs.phase(of: lease) == .storing && jobs.aside == 1 && jobs.freeSlots == 1)
    #expect(ended(&jobs, 1, at: .milliseconds(120)) == [wrote("job1t")], "its slot was given up already")
    #expect(jobs.phase(of: lease) == .writingOutcome && jobs.finishing == 1 && jobs.aside == 0)
    #expect(jobs.released(lease) == [.wakeProducer])
    #expect(jobs.held == 0 && jobs.snapshot.isEmpty)
  }

  @Test func slotsGoFirstComeFirstServedAndWaitingJobsPrefetch() {
    var jobs = jobs(slots: 2)
    #expect(
      jobs.leased(leased([1, 2, 3, 4]), now: t0) == [
        start("job1t"), start("job2t"), prefetch(3), prefetch(4),
      ])
    #expect(jobs.phase(of: lease(3)) == .awaitingSlot)
    // A later lease does not prefetch again for jobs already prefetching.
    #expect(jobs.leased(leased([5]), now: t0) == [prefetch(5)])
    // Job 2's slot goes to job 3, the first in line.
    #expect(ended(&jobs, 2) == [wrote("job2t"), start("job3t"), .wakeProducer])
    #expect(jobs.steppedAside(.awaitingMemory, lease(1), now: t0) == [start("job4t"), .wakeProducer])
    #expect(jobs.aside == 1 && jobs.freeSlots == 0)
  }

  @Test func aFreedSlotGoesToTheOwnerWithFewestJobsAtWork() {
    var jobs = jobs(slots: 2)
    func owned(_ id: Int64, _ owner: String?) -> [(job: LeasedJob, work: String)] {
      leased([id], owner: owner)
    }
    // An import's two jobs hold both slots and its next waits; then an upload of another owner comes.
    #expect(
      jobs.leased(owned(1, "bulk") + owned(2, "bulk") + owned(3, "bulk"), now: t0) == [
        start("job1t"), start("job2t"), prefetch(3),
      ])
    #expect(jobs.leased(owned(4, "carol") + owned(5, nil), now: t0) == [prefetch(4), prefetch(5)])
    // The upload starts first although leased later: carol has nothing at work, the import has one.
    #expect(ended(&jobs, 1) == [wrote("job1t"), start("job4t"), .wakeProducer])
    // Then the job without an owner (none at work), then the import's, in lease order.
    #expect(ended(&jobs, 4) == [wrote("job4t"), start("job5t"), .wakeProducer])
    #expect(ended(&jobs, 5) == [wrote("job5t"), start("job3t"), .wakeProducer])
  }

  @Test func aJobWaitingForMemoryFinishesWithoutTakingASlotBack() {
    var jobs = jobs(slots: 1)
    #expect(jobs.leased(leased([1, 2]), now: t0) == [start("job1t"), prefetch(2)])
    #expect(jobs.steppedAside(.awaitingMemory, lease(1), now: t0) == [start("job2t"), .wakeProducer])
    #expect(jobs.entered(.rendering, lease(1), now: t0 + .seconds(1)).isEmpty)
    #expect(jobs.phase(of: lease(1)) == .rendering)
    #expect(jobs.freeSlots == 0, "job 2 holds the only slot; job 1 renders without one")
    // Job 1 ends: no slot to give back (no wake-up), and job 2 keeps its own.
    #expect(ended(&jobs, 1, at: .seconds(2)) == [wrote("job1t")])
    #expect(jobs.freeSlots == 0 && jobs.aside == 0)
  }

  @Test func aLeaseLostMidRenderIsAbandonedAndItsSlotFreedOnlyWhenItsWorkStops() {
    var jobs = jobs(slots: 1)
    _ = jobs.leased(leased([1, 2]), now: t0)
    #expect(jobs.entered(.rendering, lease(1), now: t0).isEmpty)
    #expect(jobs.leasesToExtend == [lease(1), lease(2)])
    // Its render still runs on a pool thread: the slot stays taken, nobody starts.
    #expect(
      jobs.heartbeatAnswered(sent: [lease(1), lease(2)], extended: [2], now: t0 + .seconds(20)) == [
        .abandon("job1t", because: .leaseLost, wasWaiting: false)
      ])
    #expect(jobs.phase(of: lease(1)) == .leaseLost && jobs.leasesToExtend == [lease(2)])
    // The runner lets it go at once; the work ends later, and what it made is discarded.
    #expect(jobs.released(lease(1)) == [.wakeProducer])
    #expect(jobs.held == 1 && jobs.freeSlots == 0)
    #expect(ended(&jobs, 1, at: .seconds(30)) == [.discard("made"), start("job2t"), .wakeProducer])
  }

  @Test func aLeaseLostWhileWaitingForASlotNeverStarts() {
    var jobs = jobs(slots: 1)
    _ = jobs.leased(leased([1, 2]), now: t0)
    #expect(
      jobs.heartbeatAnswered(sent: [lease(2)], extended: [], now: t0) == [
        .abandon("job2t", because: .leaseLost, wasWaiting: true)
      ])
    // Its prefetch is dropped.
    #expect(jobs.released(lease(2)) == [.dropPrefetch(url: "https://o/2.jpg"), .wakeProducer])
    #expect(ended(&jobs, 1) == [wrote("job1t"), .wakeProducer])
  }

  @Test func aLeaseLostWhileItsOutcomeIsWrittenIsLetGoOnce() {
    var jobs = jobs()
    _ = jobs.leased(leased([1]), now: t0)
    #expect(ended(&jobs, 1) == [wrote("job1t"), .wakeProducer])
    // The write under way is fenced: the database refuses it. Nothing else is asked of the runner.
    #expect(
      jobs.heartbeatAnswered(sent: [lease(1)], extended: [], now: t0) == [
        .abandon("job1t", because: .leaseLost, wasWaiting: false)
      ])
    #expect(jobs.phase(of: lease(1)) == .leaseLost && jobs.leasesToExtend.isEmpty)
    #expect(jobs.heartbeatAnswered(sent: [lease(1)], extended: [], now: t0).isEmpty, "lost once")
    #expect(jobs.released(lease(1)) == [.wakeProducer])
    #expect(jobs.held == 0)
  }

  @Test func aNewerLeaseOnTheSameJobSupersedesTheOlderOne() {
    var jobs = jobs(slots: 2)
    _ = jobs.leased(leased([1], token: "old"), now: t0)
    #expect(
      jobs.leased(leased([1], token: "new"), now: t0 + .seconds(90)) == [
        .abandon("job1old", because: .superseded, wasWaiting: false), start("job1new"),
      ])
    #expect(jobs.held == 1 && jobs.freeSlots == 0, "the old work still holds its slot")
    // The old lease's task ends: it finds itself replaced and changes nothing of the new one.
    #expect(jobs.released(lease(1, "old")) == [])
    #expect(
      ended(&jobs, 1, token: "old") == [.discard("made"), .wakeProducer],
      "what the old lease's work made is discarded; its slot is free")
    #expect(jobs.phase(of: lease(1, "new")) == .started && jobs.freeSlots == 1)
  }

  @Test func aStopWaitsOutTheGraceThenHandsBackWhatIsStillHeld() {
    var jobs = jobs(slots: 1)
    _ = jobs.leased(leased([1, 2, 3, 4]), now: t0)
    // Job 1 finished within the grace; its outcome is being written. Job 4's lease was lost.
    _ = ended(&jobs, 1)
    #expect(jobs.entered(.rendering, lease(2), now: t0).isEmpty)
    _ = jobs.heartbeatAnswered(sent: [lease(4)], extended: [], now: t0)
    // Every lease still held, in id order; job 1's outcome is being written too: the hand-back and the
    // outcome race, and the database keeps the first.
    #expect(
      jobs.handBackAll(now: t0 + .seconds(25)) == [
        .handBack(["job1t", "job2t", "job3t"]),
        .abandon("job1t", because: .handedBack, wasWaiting: false),
        .abandon("job2t", because: .handedBack, wasWaiting: false),
        .abandon("job3t", because: .handedBack, wasWaiting: true),
      ])
    #expect(jobs.snapshot.map(\.phase) == [.handedBack, .handedBack, .handedBack, .leaseLost])
    #expect(jobs.leasesToExtend.isEmpty && jobs.handBackAll(now: t0 + .seconds(26)).isEmpty)
    #expect(
      ended(&jobs, 2, at: .seconds(26)) == [.discard("made"), .wakeProducer],
      "job 2's work is discarded, and job 3, handed back while it waited, never gets the slot")
  }

  @Test func outcomesFollowTheRetryPolicy() {
    var jobs = jobs(slots: 3)
    _ = jobs.leased(leased([1, 2]) + leased([3], attempt: 3), now: t0)
    let transient = JobError(.timeout, "slow origin")
    #expect(
      ended(&jobs, 1, failure: transient) == [
        wrote("job1t", .failed(transient, retryAfter: 10)), .wakeProducer,
      ])
    let permanent = JobError(.corruptImage, "not an image")
    #expect(
      ended(&jobs, 2, failure: permanent) == [
        wrote("job2t", .failed(permanent, retryAfter: nil)), .wakeProducer,
      ])
    #expect(
      ended(&jobs, 3, failure: transient) == [
        wrote("job3t", .failed(transient, retryAfter: nil)), .wakeProducer,
      ],
      "the last attempt")
  }

  @Test func aRetryAfterLongerThanTheBackoffIsKept() {
    var jobs = jobs()
    _ = jobs.leased(leased([1]), now: t0)
    let busy = JobError(.fetchFailed, "503 Service Unavailable", retryNotBeforeSeconds: 120)
    #expect(
      ended(&jobs, 1, failure: busy) == [wrote("job1t", .failed(busy, retryAfter: 120)), .wakeProducer])
  }

  @Test func storageRefusalsDeferJobsAndFailTheNextOnesAtOnceForAWhile() {
    var jobs = jobs(slots: 1)
    let refused = JobError(.storageRefused, "403 AccessDenied")
    _ = jobs.leased(leased([1, 2]), now: t0)
    #expect(jobs.storageAnswered(refusal: refused, now: t0 + .seconds(1)).isEmpty)
    // Job 2 gets the slot within the hold: it starts refused, without fetching.
    #expect(
      ended(&jobs, 1, failure: refused, at: .seconds(1)) == [
        wrote("job1t", .deferred(refused, retryAfter: 10)), start("job2t", refusedBy: refused), .wakeProducer,
      ])
    #expect(
      ended(&jobs, 2, failure: refused, at: .seconds(2)) == [
        wrote("job2t", .deferred(refused, retryAfter: 20)), .wakeProducer,
      ], "the wait doubles with the streak")
    // After the hold, job 3 tries the storage again, and its success ends the streak.
    #expect(jobs.leased(leased([3]), now: t0 + .seconds(12)) == [start("job3t")])
    #expect(jobs.storageAnswered(refusal: nil, now: t0 + .seconds(13)).isEmpty)
    #expect(ended(&jobs, 3, at: .seconds(13)) == [wrote("job3t"), .wakeProducer])
    #expect(jobs.leased(leased([4]), now: t0 + .seconds(13)) == [start("job4t")])
    #expect(
      ended(&jobs, 4, failure: refused, at: .seconds(14)) == [
        wrote("job4t", .deferred(refused, retryAfter: 10)), .wakeProducer,
      ])
  }

  @Test func aDuplicateWaitsForTheOutcomeOfTheJobRenderingTheSameKey() {
    var jobs = jobs(slots: 2)
    _ = jobs.leased(leased([1, 2, 3]), now: t0)
    #expect(jobs.lookingForReuse("k", lease(1), now: t0).isEmpty, "nobody renders k: look now")
    #expect(jobs.renders("k", lease(1)).isEmpty)
    // The duplicate waits at most the patience, and its slot goes to the next job.
    #expect(
      jobs.lookingForReuse("k", lease(2), now: t0 + .seconds(1)) == [
        .awaitReuse("job2t", until: t0 + .seconds(3)), start("job3t"), .wakeProducer,
      ])
    #expect(jobs.phase(of: lease(2)) == .awaitingReuse)
    #expect(ended(&jobs, 1, at: .seconds(2)) == [wrote("job1t"), .wakeProducer])
    #expect(jobs.released(lease(1)) == [.endReuseWait(["job2t"]), .wakeProducer])
    #expect(jobs.reusePatienceEnded(lease(2)).isEmpty, "its wait ended already: the timer changes nothing")
    #expect(jobs.lookingForReuse("k", lease(2), now: t0 + .seconds(2)).isEmpty)
  }

  @Test func aDuplicateWhosePatienceRunsOutRendersItself() {
    var jobs = jobs(slots: 2)
    _ = jobs.leased(leased([1, 2]), now: t0)
    #expect(jobs.renders("k", lease(1)).isEmpty)
    #expect(
      jobs.lookingForReuse("k", lease(2), now: t0) == [
        .awaitReuse("job2t", until: t0 + .seconds(2)), .wakeProducer,
      ])
    #expect(jobs.reusePatienceEnded(lease(2)) == [.endReuseWait(["job2t"])])
    #expect(jobs.reusePatienceEnded(lease(2)).isEmpty, "once")
    // Job 1's release later wakes nobody: job 2 no longer waits.
    #expect(jobs.released(lease(1)) == [.wakeProducer])
  }

  @Test func aRenderKeyStaysBusyUntilItsLastRendererIsReleased() {
    var jobs = jobs(slots: 3)
    _ = jobs.leased(leased([1, 2, 3]), now: t0)
    #expect(jobs.renders("k", lease(1)).isEmpty)
    #expect(jobs.renders("k", lease(2)).isEmpty)
    #expect(
      jobs.lookingForReuse("k", lease(3), now: t0) == [
        .awaitReuse("job3t", until: t0 + .seconds(2)), .wakeProducer,
      ])
    #expect(jobs.released(lease(1)) == [.wakeProducer])
    #expect(jobs.released(lease(2)) == [.endReuseWait(["job3t"]), .wakeProducer])
  }

  @Test func jobsOfOneURLLeasedTogetherRenderOnceLedByTheFirstToStart() {
    var jobs = jobs(slots: 1)
    _ = jobs.leased(leased([1, 2, 3], url: "https://o/a.jpg") + leased([4]), now: t0)
    #expect(
      jobs.joiningRender(lease(1)) == [.renderAs("job1t", .lead(members: ["job1t", "job2t", "job3t"]))],
      "its URL's jobs, in lease order; not job 4")
    // A job of the URL leased after the group closed starts a group of its own.
    _ = jobs.leased(leased([5], url: "https://o/a.jpg"), now: t0)
    #expect(jobs.joiningRender(lease(2)) == [.renderAs("job2t", .follow(leader: "job1t"))])
    #expect(
      jobs.joiningRender(lease(5)) == [.renderAs("job5t", .lead(members: ["job5t"]))], "a group of its own")
    // The leader's outcome is written and it leaves; job 3, still to start, follows it all the same.
    _ = ended(&jobs, 1)
    _ = jobs.released(lease(1))
    #expect(jobs.joiningRender(lease(3)) == [.renderAs("job3t", .follow(leader: "job1t"))])
  }

  @Test func aMemberDroppedBeforeTheGroupClosesLeavesItAndEmptyGroupsAreForgotten() {
    var jobs = jobs(slots: 1)
    _ = jobs.leased(leased([1], url: "https://o/x.jpg") + leased([2, 3], url: "https://o/a.jpg"), now: t0)
    #expect(jobs.groupCount == 2)
    _ = jobs.heartbeatAnswered(sent: [lease(2)], extended: [], now: t0)
    _ = jobs.released(lease(2))
    _ = ended(&jobs, 1)
    _ = jobs.released(lease(1))
    #expect(jobs.groupCount == 1, "job 1 never rendered; its group went with it")
    #expect(jobs.joiningRender(lease(3)) == [.renderAs("job3t", .lead(members: ["job3t"]))])
    #expect(jobs.joiningRender(lease(2)).isEmpty, "a lease no longer held renders for nobody")
    _ = ended(&jobs, 3)
    _ = jobs.released(lease(3))
    #expect(jobs.groupCount == 0)
  }

  @Test func theSnapshotSaysWhereEveryHeldJobIs() {
    var jobs = jobs(slots: 1)
    _ = jobs.leased(leased([2, 1]), now: t0)
    #expect(jobs.entered(.fetching, lease(2), now: t0 + .seconds(1)).isEmpty)
    #expect(
      jobs.snapshot == [
        .init(id: 1, attempt: 1, phase: .awaitingSlot, since: t0, holdsSlot: false),
        .init(id: 2, attempt: 1, phase: .fetching, since: t0 + .seconds(1), holdsSlot: true),
      ])
  }

  @Test func endedLeasesIgnoreLaterReports() {
    var jobs = jobs(slots: 1)
    _ = jobs.leased(leased([1]), now: t0)
    _ = jobs.heartbeatAnswered(sent: [lease(1)], extended: [], now: t0)
    #expect(jobs.entered(.storing, lease(1), now: t0 + .seconds(1)).isEmpty)
    #expect(jobs.phase(of: lease(1)) == .leaseLost)
    #expect(jobs.lookingForReuse("k", lease(1), now: t0).isEmpty)
    #expect(jobs.heartbeatAnswered(sent: [lease(1)], extended: [], now: t0).isEmpty, "lost once")
  }
}
