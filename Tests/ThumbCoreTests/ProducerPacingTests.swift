import Testing

@testable import ThumbCore

/// The producer's decisions, driven with instants made here: no database, no sleeping.
@Suite struct ProducerPacingTests {
  let t0 = ContinuousClock.now

  /// A producer whose start-up ended (the worker announced, its storage checked).
  func pacing(concurrency: Int = 8, batch: Int = 8, drain: Bool = false, grace: Double = 25) -> ProducerPacing
  {
    var pacing = ProducerPacing(
      .init(
        concurrency: concurrency, leaseBatch: batch, drain: drain, pollInterval: .seconds(1),
        shutdownGrace: .seconds(grace)))
    pacing.startUpEnded(started: true, now: t0)
    return pacing
  }

  @Test func anIdleWorkerLeasesAFullBatchAtOnce() {
    var p = pacing()
    #expect(p.next(held: 0, aside: 0, now: t0) == .lease(limit: 8))
  }

  @Test func aBusyWorkerWaitsForHalfABatchOrTheSettleDelay() {
    var p = pacing()
    // 7 of 8 slots busy: one free slot is not enough while jobs run...
    #expect(p.next(held: 7, aside: 0, now: t0) == .wait(.milliseconds(20)))
    #expect(p.next(held: 7, aside: 0, now: t0 + .milliseconds(5)) == .wait(.milliseconds(15)))
    // ...until it has been free for the settle delay,
    #expect(p.next(held: 7, aside: 0, now: t0 + .milliseconds(20)) == .lease(limit: 1))
    // and half a batch free is enough at once.
    #expect(p.next(held: 4, aside: 0, now: t0 + .milliseconds(21)) == .lease(limit: 4))
  }

  @Test func theSettleClockRestartsAfterEachLease() {
    var p = pacing()
    _ = p.next(held: 7, aside: 0, now: t0)
    #expect(p.next(held: 7, aside: 0, now: t0 + .milliseconds(30)) == .lease(limit: 1))
    #expect(p.next(held: 7, aside: 0, now: t0 + .milliseconds(31)) == .wait(.milliseconds(20)))
  }

  @Test func fullSlotsWaitForAWakeUpOrThePollInterval() {
    var p = pacing()
    #expect(p.next(held: 8, aside: 0, now: t0) == .wait(.seconds(1)))
  }

  @Test func jobsStandingAsideLendTheirSlotsButAtMostOneExtraJobPerSlot() {
    var p = pacing(concurrency: 2, batch: 2)
    #expect(p.next(held: 2, aside: 1, now: t0) == .lease(limit: 1))
    #expect(p.next(held: 3, aside: 2, now: t0) == .lease(limit: 1))
    // Four held, all aside: only two count as lent, so both slots are taken.
    #expect(p.next(held: 4, aside: 4, now: t0) == .wait(.seconds(1)))
  }

  @Test func jobsLeasedAheadWaitForASlotBeyondTheConcurrency() {
    var settings = pacing(concurrency: 2, batch: 2).settings
    settings.ahead = 1
    var p = ProducerPacing(settings)
    p.startUpEnded(started: true, now: t0)
    // Both slots busy: one more job is leased, to download while it waits.
    #expect(p.next(held: 2, aside: 0, now: t0 + .milliseconds(20)) == .lease(limit: 1))
    // With one waiting for a slot, nothing more.
    #expect(p.next(held: 3, aside: 0, now: t0 + .milliseconds(40)) == .wait(.seconds(1)))
    // Idle: the slots and the one ahead at once, up to the batch.
    #expect(p.next(held: 0, aside: 0, now: t0) == .lease(limit: 2))
  }

  @Test func aNotificationLeasesOneMoreBeyondTheReadAhead() {
    var settings = pacing(concurrency: 2, batch: 2).settings
    settings.ahead = 1
    var p = ProducerPacing(settings)
    p.startUpEnded(started: true, now: t0)
    // Slots and read-ahead taken: a notification of enqueued jobs leases one more, a new upload that
    // takes the next free slot before the read-ahead job (HeldJobs).
    #expect(p.next(held: 3, aside: 0, now: t0) == .wait(.seconds(1)))
    #expect(p.next(held: 3, aside: 0, notified: true, now: t0) == .lease(limit: 1))
    // One such job at a time: with it held, a notification leases nothing yet...
    #expect(p.next(held: 4, aside: 0, notified: true, now: t0) == .wait(.seconds(1)))
    // ...but is kept: once that job has a slot (another job ended), the second upload is leased.
    #expect(p.next(held: 3, aside: 0, now: t0) == .lease(limit: 1))
    #expect(p.next(held: 4, aside: 0, now: t0) == .wait(.seconds(1)))
    // Without the extra job, a notification leases no more than the slots and the read-ahead.
    settings.onNotification = 0
    p = ProducerPacing(settings)
    p.startUpEnded(started: true, now: t0)
    #expect(p.next(held: 3, aside: 0, notified: true, now: t0) == .wait(.seconds(1)))
  }

  @Test func aFullLeaseLooksAgainAndAShortOneWaits() {
    var p = pacing()
    #expect(p.leased(count: 8, wanted: 8, held: 8, now: t0) == .proceed)
    #expect(p.leased(count: 3, wanted: 8, held: 3, now: t0) == .wait(.seconds(1)))
  }

  /// A worker that does not listen (most of a fleet) waits longer after each empty lease, up to the
  /// cap; a lease that finds a job starts it over. A listening worker polls at the interval: it is woken
  /// by notifications anyway, and a lone worker must find scheduled jobs on time.
  @Test func aWorkerThatDoesNotListenBacksOffWhileItFindsNothing() {
    var p = pacing()
    p.fleet(listens: false)
    let waits = (0..<6).map { _ in p.leased(count: 0, wanted: 8, held: 0, now: t0) }
    #expect(waits == [1, 2, 4, 8, 8, 8].map { .wait(.seconds($0)) })
    #expect(p.leased(count: 1, wanted: 8, held: 1, now: t0) == .wait(.seconds(1)))
    #expect(p.leased(count: 0, wanted: 8, held: 1, now: t0) == .wait(.seconds(1)))
    #expect(p.leased(count: 0, wanted: 8, held: 1, now: t0) == .wait(.seconds(2)))
    p.fleet(listens: true)
    #expect(p.leased(count: 0, wanted: 8, held: 0, now: t0) == .wait(.seconds(1)))
  }

  @Test func failedLeasesBackOffUpToACap() {
    var p = pacing()
    #expect(p.leaseFailed(now: t0) == .wait(.milliseconds(250)))
    #expect(p.leaseFailed(now: t0) == .wait(.milliseconds(500)))
    for _ in 0..<30 { _ = p.leaseFailed(now: t0) }
    #expect(p.leaseFailed(now: t0) == .wait(.seconds(5)))
    #expect(p.consecutiveFailures == 33)
    _ = p.leased(count: 0, wanted: 8, held: 0, now: t0)
    #expect(p.consecutiveFailures == 0)
    #expect(p.leaseFailed(now: t0) == .wait(.milliseconds(250)))
  }

  /// A lease whose answer was lost may have leased jobs anyway, when the database runs it late: the
  /// producer looks for them once it may lease again, keeps looking every reclaim interval for a lease's
  /// length after the database first answers, then stops looking. A failure it knows reached nothing
  /// (a query error) starts no look.
  @Test func aLostLeaseAnswerIsFollowedByLooksForJobsLeasedAnyway() {
    var p = pacing()
    #expect(p.leaseFailed(answerLost: false, now: t0) == .wait(.milliseconds(250)))
    #expect(!p.reclaiming)
    #expect(p.leaseFailed(answerLost: true, now: t0) == .wait(.milliseconds(500)))
    #expect(p.reclaiming)
    #expect(p.next(held: 0, aside: 0, now: t0 + .milliseconds(100)) == .lease(limit: 8))
    #expect(p.next(held: 0, aside: 0, now: t0 + .milliseconds(500)) == .reclaim)
    // Still away: looked for again after the backoff, the window not started.
    #expect(p.reclaimFailed(now: t0 + .seconds(1)) == .wait(.milliseconds(750)))
    #expect(p.next(held: 0, aside: 0, now: t0 + .seconds(1)) == .lease(limit: 8))
    let back = t0 + .seconds(2)
    #expect(p.next(held: 0, aside: 0, now: back) == .reclaim)
    #expect(p.reclaimed(count: 0, now: back) == .proceed)
    #expect(p.next(held: 0, aside: 0, now: back + .milliseconds(500)) == .lease(limit: 8))
    #expect(p.next(held: 0, aside: 0, now: back + .seconds(1)) == .reclaim)
    #expect(p.reclaimed(count: 2, now: back + .seconds(1)) == .proceed)
    #expect(p.reclaiming)
    // The window is the lease's length from the first answer; then the looking ends.
    #expect(p.next(held: 0, aside: 0, now: back + .seconds(60)) == .reclaim)
    #expect(p.reclaimed(count: 0, now: back + .seconds(60)) == .proceed)
    #expect(!p.reclaiming)
    #expect(p.next(held: 0, aside: 0, now: back + .seconds(90)) == .lease(limit: 8))
  }

  @Test func drainingEndsOnlyWhenNothingIsDueRunningOrRescued() {
    var p = pacing(drain: true)
    #expect(p.leased(count: 0, wanted: 8, held: 1, now: t0) == .wait(.seconds(1)))  // one still runs here
    #expect(p.leased(count: 0, wanted: 8, held: 0, now: t0) == .rescue)
    #expect(p.rescued(count: 2) == .proceed)  // a dead worker's jobs came back: take them
    #expect(p.rescued(count: 0) == .finish)
    var notDraining = pacing(drain: false)
    #expect(notDraining.leased(count: 0, wanted: 8, held: 0, now: t0) == .wait(.seconds(1)))
  }

  @Test func aStopWaitsOutTheGraceThenHandsBack() {
    var p = pacing(grace: 10)
    p.stopRequested(now: t0)
    #expect(p.whileStopping(held: 2, now: t0 + .seconds(4)) == .waitForJobs(.seconds(6)))
    #expect(p.whileStopping(held: 0, now: t0 + .seconds(4)) == .handBack)
    #expect(p.whileStopping(held: 2, now: t0 + .seconds(10)) == .handBack)
    // A second request does not extend the grace.
    p.stopRequested(now: t0 + .seconds(5))
    #expect(p.whileStopping(held: 1, now: t0 + .seconds(9)) == .waitForJobs(.seconds(1)))
  }

  @Test func zeroGraceHandsBackAtOnce() {
    var p = pacing(grace: 0)
    p.stopRequested(now: t0)
    #expect(p.whileStopping(held: 3, now: t0) == .handBack)
  }

  // The start-up and the stop, in every order.

  func fresh(grace: Double = 10) -> ProducerPacing {
    ProducerPacing(
      .init(
        concurrency: 2, leaseBatch: 2, drain: false, pollInterval: .seconds(1), shutdownGrace: .seconds(grace)
      ))
  }

  @Test func nothingIsLeasedBeforeTheStartUpEnds() {
    var p = fresh()
    #expect(p.phase == .startingUp)
    #expect(p.next(held: 0, aside: 0, now: t0) == .awaitStartUp)
    #expect(p.next(held: 0, aside: 0, now: t0 + .seconds(30)) == .awaitStartUp)
    p.startUpEnded(started: true, now: t0 + .seconds(30))
    #expect(p.phase == .producing)
    #expect(p.next(held: 0, aside: 0, now: t0 + .seconds(30)) == .lease(limit: 2))
  }

  @Test func aStartUpGivenUpStopsWithNothingToHandBack() {
    var p = fresh()
    p.startUpEnded(started: false, now: t0)
    #expect(p.phase == .stopping)
    #expect(p.next(held: 0, aside: 0, now: t0) == .stop)
    #expect(p.whileStopping(held: 0, now: t0) == .handBack)
  }

  @Test func aStopDuringTheStartUpIsNotUndoneByTheStartUpEnding() {
    var p = fresh()
    p.stopRequested(now: t0)
    // The start-up finished anyway (the keeper's announcement was already under way): still stopping.
    p.startUpEnded(started: true, now: t0 + .milliseconds(5))
    #expect(p.phase == .stopping)
    #expect(p.next(held: 0, aside: 0, now: t0 + .milliseconds(5)) == .stop)
  }

  @Test func noLeaseAfterAStopWhateverTheSlots() {
    var p = fresh()
    p.startUpEnded(started: true, now: t0)
    #expect(p.next(held: 0, aside: 0, now: t0) == .lease(limit: 2))
    // The lease answered after the stop was requested: its jobs run, but nothing more is leased.
    p.stopRequested(now: t0 + .milliseconds(1))
    #expect(p.leased(count: 2, wanted: 2, held: 2, now: t0) == .proceed)
    for held in 0...3 {
      #expect(p.next(held: held, aside: 0, now: t0 + .milliseconds(2)) == .stop)
    }
    #expect(p.whileStopping(held: 2, now: t0 + .seconds(1)) == .waitForJobs(.milliseconds(9_001)))
  }

  @Test func theGraceCountsFromTheFirstRequestEvenDuringTheStartUp() {
    var p = fresh(grace: 3)
    p.stopRequested(now: t0)
    p.startUpEnded(started: false, now: t0 + .seconds(2))
    #expect(p.whileStopping(held: 1, now: t0 + .seconds(2)) == .waitForJobs(.seconds(1)))
  }
}
