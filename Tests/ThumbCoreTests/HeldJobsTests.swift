import Testing

@testable import ThumbCore

/// Whole lives of held jobs, driven with instants made here: no database, no tasks, no sleeping. The
/// work handle is the job's name.
@Suite struct HeldJobsTests {
  typealias Jobs = HeldJobs<String>
  let t0 = ContinuousClock.now

  func jobs(slots: Int = 1) -> Jobs {
    var settings = Jobs.Settings(slots: slots)
    settings.refusalBackoff = Backoff(first: .seconds(10), cap: .seconds(300))
    settings.retryPolicy = RetryPolicy(baseSeconds: 10, capSeconds: 3600, jitter: 0)
    return Jobs(settings)
  }

  func lease(_ id: Int64, _ token: String = "t") -> JobLease { JobLease(id: id, token: "\(token)\(id)") }

  func leased(_ ids: [Int64], token: String = "t", url: String? = nil, attempt: Int = 1) -> [Jobs.LeasedWork]
  {
    ids.map {
      .init(
        lease: lease($0, token), url: url ?? "https://o/\($0).jpg", attempt: attempt, maxAttempts: 3,
        work: "job\($0)\(token)")
    }
  }

  /// The names of the works started by `actions`, in order.
  func started(_ actions: [Jobs.Action]) -> [String] {
    actions.compactMap { if case .start(let work, _) = $0 { work } else { nil } }
  }

  func prefetched(_ actions: [Jobs.Action]) -> [String] {
    actions.compactMap { if case .prefetch(let url) = $0 { url } else { nil } }
  }

  func abandoned(_ actions: [Jobs.Action]) -> [String] {
    actions.compactMap { if case .abandon(let work, _, _) = $0 { work } else { nil } }
  }

  func decisions(_ actions: [Jobs.Action]) -> [Jobs.OutcomeDecision] {
    actions.compactMap { if case .writeOutcome(_, let decision) = $0 { decision } else { nil } }
  }

  func wakes(_ actions: [Jobs.Action]) -> Bool {
    actions.contains { if case .wakeProducer = $0 { true } else { false } }
  }

  @Test func aJobLivesFromLeaseToWrittenOutcome() {
    var jobs = jobs()
    let lease = lease(1)
    #expect(started(jobs.leased(leased([1]), now: t0)) == ["job1t"])
    #expect(jobs.phase(of: lease) == .started)
    #expect(jobs.running == 1 && jobs.freeSlots == 0)
    jobs.entered(.fetching, lease, now: t0 + .milliseconds(10))
    jobs.entered(.rendering, lease, now: t0 + .milliseconds(50))
    #expect(jobs.snapshot.first?.since == t0 + .milliseconds(50))
    #expect(wakes(jobs.steppedAside(.storing, lease, now: t0 + .milliseconds(90))))
    #expect(jobs.phase(of: lease) == .storing && jobs.aside == 1 && jobs.freeSlots == 1)
    let ended = jobs.workEnded(lease, failure: nil, unit: 0, now: t0 + .milliseconds(120))
    #expect(decisions(ended) == [.succeeded])
    #expect(jobs.phase(of: lease) == .writingOutcome && jobs.finishing == 1 && jobs.aside == 0)
    #expect(jobs.mayWrite(lease))
    let released = jobs.released(lease)
    #expect(released.endedIn == .writingOutcome && released.prefetched == nil)
    #expect(wakes(released.actions))
    #expect(jobs.running == 0 && jobs.snapshot.isEmpty)
  }

  @Test func slotsGoFirstComeFirstServedAndWaitingJobsPrefetch() {
    var jobs = jobs(slots: 2)
    let actions = jobs.leased(leased([1, 2, 3, 4]), now: t0)
    #expect(started(actions) == ["job1t", "job2t"])
    #expect(prefetched(actions) == ["https://o/3.jpg", "https://o/4.jpg"])
    #expect(jobs.phase(of: lease(3)) == .awaitingSlot)
    // A later lease does not prefetch again for jobs already prefetching.
    #expect(prefetched(jobs.leased(leased([5]), now: t0)) == ["https://o/5.jpg"])
    // Job 2's slot goes to job 3, the first in line.
    #expect(started(jobs.workEnded(lease(2), failure: nil, unit: 0, now: t0)) == ["job3t"])
    #expect(started(jobs.steppedAside(.awaitingMemory, lease(1), now: t0)) == ["job4t"])
    #expect(jobs.aside == 1 && jobs.freeSlots == 0)
  }

  @Test func aFreedSlotGoesToTheOwnerWithFewestJobsAtWork() {
    var jobs = jobs(slots: 2)
    func owned(_ id: Int64, _ owner: String?) -> [Jobs.LeasedWork] {
      leased([id]).map {
        var job = $0
        job.owner = owner
        return job
      }
    }
    // An import's two jobs hold both slots and its next waits; then an upload of another owner comes.
    _ = jobs.leased(owned(1, "bulk") + owned(2, "bulk") + owned(3, "bulk"), now: t0)
    _ = jobs.leased(owned(4, "carol") + owned(5, nil), now: t0)
    // The upload starts first although leased later: carol has nothing at work, the import has one.
    #expect(started(jobs.workEnded(lease(1), failure: nil, unit: 0, now: t0)) == ["job4t"])
    // Then the job without an owner (none at work), then the import's, in lease order.
    #expect(started(jobs.workEnded(lease(4), failure: nil, unit: 0, now: t0)) == ["job5t"])
    #expect(started(jobs.workEnded(lease(5), failure: nil, unit: 0, now: t0)) == ["job3t"])
  }

  @Test func aJobWaitingForMemoryFinishesWithoutTakingASlotBack() {
    var jobs = jobs(slots: 1)
    _ = jobs.leased(leased([1, 2]), now: t0)
    #expect(started(jobs.steppedAside(.awaitingMemory, lease(1), now: t0)) == ["job2t"])
    jobs.entered(.rendering, lease(1), now: t0 + .seconds(1))
    #expect(jobs.phase(of: lease(1)) == .rendering)
    #expect(jobs.freeSlots == 0, "job 2 holds the only slot; job 1 renders without one")
    // Job 1 ends: no slot to give back, and job 2 keeps its own.
    _ = jobs.workEnded(lease(1), failure: nil, unit: 0, now: t0 + .seconds(2))
    #expect(jobs.freeSlots == 0 && jobs.aside == 0)
  }

  @Test func aLeaseLostMidRenderIsAbandonedAndItsSlotFreedOnlyWhenItsWorkStops() {
    var jobs = jobs(slots: 1)
    _ = jobs.leased(leased([1, 2]), now: t0)
    jobs.entered(.rendering, lease(1), now: t0)
    #expect(jobs.leasesToExtend == [lease(1), lease(2)])
    let lost = jobs.heartbeatAnswered(sent: [lease(1), lease(2)], extended: [2], now: t0 + .seconds(20))
    #expect(abandoned(lost) == ["job1t"])
    #expect(started(lost).isEmpty, "its render still runs on a pool thread: the slot stays taken")
    #expect(jobs.phase(of: lease(1)) == .leaseLost && jobs.leasesToExtend == [lease(2)])
    #expect(!jobs.mayWrite(lease(1)))
    // The runner lets it go at once; the work ends later and nothing is written.
    #expect(jobs.released(lease(1)).endedIn == .leaseLost)
    #expect(jobs.running == 1 && jobs.freeSlots == 0)
    let ended = jobs.workEnded(lease(1), failure: nil, unit: 0, now: t0 + .seconds(30))
    #expect(decisions(ended).isEmpty)
    #expect(started(ended) == ["job2t"])
  }

  @Test func aLeaseLostWhileWaitingForASlotNeverStarts() {
    var jobs = jobs(slots: 1)
    _ = jobs.leased(leased([1, 2]), now: t0)
    let lost = jobs.heartbeatAnswered(sent: [lease(2)], extended: [], now: t0)
    #expect(lost.contains { if case .abandon("job2t", .leaseLost, true) = $0 { true } else { false } })
    #expect(jobs.released(lease(2)).prefetched == "https://o/2.jpg", "its prefetch is dropped")
    #expect(started(jobs.workEnded(lease(1), failure: nil, unit: 0, now: t0)).isEmpty)
  }

  @Test func aLostLeaseWhoseOutcomeIsBeingWrittenIsNotWrittenAgain() {
    var jobs = jobs()
    _ = jobs.leased(leased([1]), now: t0)
    _ = jobs.workEnded(lease(1), failure: nil, unit: 0, now: t0)
    _ = jobs.heartbeatAnswered(sent: [lease(1)], extended: [], now: t0)
    #expect(!jobs.mayWrite(lease(1)))
    #expect(jobs.released(lease(1)).endedIn == .leaseLost)
  }

  @Test func aNewerLeaseOnTheSameJobSupersedesTheOlderOne() {
    var jobs = jobs(slots: 2)
    _ = jobs.leased(leased([1], token: "old"), now: t0)
    let actions = jobs.leased(leased([1], token: "new"), now: t0 + .seconds(90))
    #expect(actions.contains { if case .abandon("job1old", .superseded, false) = $0 { true } else { false } })
    #expect(started(actions) == ["job1new"])
    #expect(jobs.running == 1 && jobs.freeSlots == 0, "the old work still holds its slot")
    // The old lease's task ends: it finds itself replaced and changes nothing of the new one.
    #expect(jobs.released(lease(1, "old")).endedIn == nil)
    #expect(decisions(jobs.workEnded(lease(1, "old"), failure: nil, unit: 0, now: t0)).isEmpty)
    #expect(jobs.phase(of: lease(1, "new")) == .started && jobs.freeSlots == 1)
  }

  @Test func aStopWaitsOutTheGraceThenHandsBackWhatIsStillHeld() {
    var jobs = jobs(slots: 1)
    _ = jobs.leased(leased([1, 2, 3, 4]), now: t0)
    // Job 1 finished within the grace; its outcome is being written. Job 4's lease was lost.
    _ = jobs.workEnded(lease(1), failure: nil, unit: 0, now: t0)
    jobs.entered(.rendering, lease(2), now: t0)
    _ = jobs.heartbeatAnswered(sent: [lease(4)], extended: [], now: t0)
    let handedBack = jobs.handBackAll(now: t0 + .seconds(25))
    #expect(handedBack == ["job1t", "job2t", "job3t"], "every lease still held, in id order")
    #expect(jobs.phase(of: lease(4)) == .leaseLost)
    #expect(jobs.leasesToExtend.isEmpty)
    #expect(!jobs.mayWrite(lease(1)), "the hand-back and the outcome race: the database keeps one")
    let abandon = jobs.abandonHandedBack()
    #expect(abandoned(abandon) == ["job1t", "job2t", "job3t"])
    #expect(abandon.contains { if case .abandon("job3t", .handedBack, true) = $0 { true } else { false } })
    #expect(jobs.snapshot.map(\.phase) == [.handedBack, .handedBack, .handedBack, .leaseLost])
  }

  @Test func outcomesFollowTheRetryPolicy() {
    var jobs = jobs(slots: 3)
    _ = jobs.leased(leased([1, 2]) + leased([3], attempt: 3), now: t0)
    let transient = JobError(.timeout, "slow origin")
    #expect(
      decisions(jobs.workEnded(lease(1), failure: transient, unit: 0, now: t0)) == [
        .failed(transient, retryAfter: 10)
      ])
    let permanent = JobError(.corruptImage, "not an image")
    #expect(
      decisions(jobs.workEnded(lease(2), failure: permanent, unit: 0, now: t0)) == [
        .failed(permanent, retryAfter: nil)
      ])
    #expect(
      decisions(jobs.workEnded(lease(3), failure: transient, unit: 0, now: t0)) == [
        .failed(transient, retryAfter: nil)
      ], "the last attempt")
  }

  @Test func aRetryAfterLongerThanTheBackoffIsKept() {
    var jobs = jobs()
    _ = jobs.leased(leased([1]), now: t0)
    let busy = JobError(.fetchFailed, "503 Service Unavailable", retryNotBeforeSeconds: 120)
    #expect(
      decisions(jobs.workEnded(lease(1), failure: busy, unit: 0, now: t0)) == [.failed(busy, retryAfter: 120)]
    )
  }

  @Test func storageRefusalsDeferJobsAndFailTheNextOnesAtOnceForAWhile() {
    var jobs = jobs(slots: 1)
    let refused = JobError(.storageRefused, "403 AccessDenied")
    _ = jobs.leased(leased([1, 2]), now: t0)
    jobs.storageAnswered(refusal: refused, now: t0 + .seconds(1))
    let first = jobs.workEnded(lease(1), failure: refused, unit: 0, now: t0 + .seconds(1))
    #expect(decisions(first) == [.deferred(refused, retryAfter: 10)])
    // Job 2 gets the slot within the hold: it starts refused, without fetching.
    #expect(first.contains { if case .start("job2t", refused?) = $0 { true } else { false } })
    let second = jobs.workEnded(lease(2), failure: refused, unit: 0, now: t0 + .seconds(2))
    #expect(decisions(second) == [.deferred(refused, retryAfter: 20)], "the wait doubles with the streak")
    // After the hold, job 3 tries the storage again, and its success ends the streak.
    let later = jobs.leased(leased([3]), now: t0 + .seconds(12))
    #expect(later.contains { if case .start("job3t", nil) = $0 { true } else { false } })
    jobs.storageAnswered(refusal: nil, now: t0 + .seconds(13))
    #expect(
      decisions(jobs.workEnded(lease(3), failure: nil, unit: 0, now: t0 + .seconds(13))) == [.succeeded])
    _ = jobs.leased(leased([4]), now: t0 + .seconds(13))
    #expect(
      decisions(jobs.workEnded(lease(4), failure: refused, unit: 0, now: t0 + .seconds(14))) == [
        .deferred(refused, retryAfter: 10)
      ])
  }

  @Test func aDuplicateWaitsForTheOutcomeOfTheJobRenderingTheSameKey() {
    var jobs = jobs(slots: 2)
    _ = jobs.leased(leased([1, 2, 3]), now: t0)
    #expect(jobs.lookingForReuse("k", lease(1), now: t0).until == nil, "nobody renders k: look now")
    jobs.renders("k", lease(1))
    let (until, aside) = jobs.lookingForReuse("k", lease(2), now: t0 + .seconds(1))
    #expect(until == t0 + .seconds(3), "at most the patience")
    #expect(started(aside) == ["job3t"], "the duplicate's slot goes to the next job")
    #expect(jobs.phase(of: lease(2)) == .awaitingReuse)
    _ = jobs.workEnded(lease(1), failure: nil, unit: 0, now: t0 + .seconds(2))
    let released = jobs.released(lease(1)).actions
    #expect(released.contains { if case .endReuseWait(["job2t"]) = $0 { true } else { false } })
    jobs.reuseWaitEnded(lease(2))
    #expect(jobs.lookingForReuse("k", lease(2), now: t0 + .seconds(2)).until == nil)
  }

  @Test func aRenderKeyStaysBusyUntilItsLastRendererIsReleased() {
    var jobs = jobs(slots: 3)
    _ = jobs.leased(leased([1, 2, 3]), now: t0)
    jobs.renders("k", lease(1))
    jobs.renders("k", lease(2))
    _ = jobs.lookingForReuse("k", lease(3), now: t0)
    let first = jobs.released(lease(1)).actions
    #expect(!first.contains { if case .endReuseWait = $0 { true } else { false } })
    let second = jobs.released(lease(2)).actions
    #expect(second.contains { if case .endReuseWait(["job3t"]) = $0 { true } else { false } })
  }

  @Test func jobsOfOneURLLeasedTogetherRenderOnceLedByTheFirstToStart() {
    var jobs = jobs(slots: 1)
    _ = jobs.leased(leased([1, 2, 3], url: "https://o/a.jpg") + leased([4]), now: t0)
    guard case .lead(let members)? = jobs.joiningRender(lease(1)) else {
      Issue.record("job 1 leads")
      return
    }
    #expect(members == ["job1t", "job2t", "job3t"], "its URL's jobs, in lease order; not job 4")
    // A job of the URL leased after the group closed starts a group of its own.
    _ = jobs.leased(leased([5], url: "https://o/a.jpg"), now: t0)
    guard case .follow(let leader)? = jobs.joiningRender(lease(2)) else {
      Issue.record("job 2 follows")
      return
    }
    #expect(leader == "job1t")
    guard case .lead(let alone)? = jobs.joiningRender(lease(5)) else {
      Issue.record("job 5 leads its own group")
      return
    }
    #expect(alone == ["job5t"])
    // The leader's outcome is written and it leaves; job 3, still to start, follows it all the same.
    _ = jobs.workEnded(lease(1), failure: nil, unit: 0, now: t0)
    _ = jobs.released(lease(1))
    guard case .follow(let same)? = jobs.joiningRender(lease(3)) else {
      Issue.record("job 3 follows")
      return
    }
    #expect(same == "job1t")
  }

  @Test func aMemberDroppedBeforeTheGroupClosesLeavesItAndEmptyGroupsAreForgotten() {
    var jobs = jobs(slots: 1)
    _ = jobs.leased(leased([1], url: "https://o/x.jpg") + leased([2, 3], url: "https://o/a.jpg"), now: t0)
    #expect(jobs.groupCount == 2)
    _ = jobs.heartbeatAnswered(sent: [lease(2)], extended: [], now: t0)
    _ = jobs.released(lease(2))
    _ = jobs.workEnded(lease(1), failure: nil, unit: 0, now: t0)
    _ = jobs.released(lease(1))
    #expect(jobs.groupCount == 1, "job 1 never rendered; its group went with it")
    guard case .lead(let members)? = jobs.joiningRender(lease(3)) else {
      Issue.record("job 3 leads")
      return
    }
    #expect(members == ["job3t"])
    #expect(jobs.joiningRender(lease(2)) == nil, "a lease no longer held renders for nobody")
    _ = jobs.workEnded(lease(3), failure: nil, unit: 0, now: t0)
    _ = jobs.released(lease(3))
    #expect(jobs.groupCount == 0)
  }

  @Test func theSnapshotSaysWhereEveryHeldJobIs() {
    var jobs = jobs(slots: 1)
    _ = jobs.leased(leased([2, 1]), now: t0)
    jobs.entered(.fetching, lease(2), now: t0 + .seconds(1))
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
    jobs.entered(.storing, lease(1), now: t0 + .seconds(1))
    #expect(jobs.phase(of: lease(1)) == .leaseLost)
    #expect(jobs.lookingForReuse("k", lease(1), now: t0).until == nil)
    #expect(jobs.heartbeatAnswered(sent: [lease(1)], extended: [], now: t0).isEmpty, "lost once")
  }
}
