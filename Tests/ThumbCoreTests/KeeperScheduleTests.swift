import Testing

@testable import ThumbCore

/// The keeper's start-up: the endpoint, the database, the first rescue, and a stop at each point.
@Suite struct KeeperStartUpTests {
  typealias StartUp = KeeperSchedule.StartUp

  @Test func theEndpointFirstThenTheDatabaseThenOneRescue() {
    var s = StartUp()
    #expect(s.next(endpointListening: false, stopping: false) == .waitForEndpoint(.milliseconds(20)))
    #expect(s.phase == .awaitingEndpoint)
    #expect(s.next(endpointListening: true, stopping: false) == .announce)
    s.announced()
    #expect(s.next(endpointListening: true, stopping: false) == .rescue)
    #expect(s.rescued(stopping: false) == .start)
    #expect(s.phase == .started)
    // Started is final.
    #expect(s.next(endpointListening: true, stopping: true) == .start)
  }

  @Test func anAwayDatabaseIsTriedAgainWithBackoffForAsLongAsItTakes() {
    var s = StartUp()
    #expect(s.next(endpointListening: true, stopping: false) == .announce)
    #expect(s.announceFailed() == .waitToRetry(.milliseconds(500)))
    #expect(s.next(endpointListening: true, stopping: false) == .announce)
    #expect(s.announceFailed() == .waitToRetry(.seconds(1)))
    for _ in 0..<20 { _ = s.announceFailed() }
    #expect(s.announceFailed() == .waitToRetry(.seconds(10)))
    #expect(s.failures == 23)
    s.announced()
    #expect(s.next(endpointListening: true, stopping: false) == .rescue)
  }

  /// Drives a start-up to one of its points, then stops it there.
  func stopped(at point: Int) -> (StartUp, StartUp.Action) {
    var s = StartUp()
    _ = s.next(endpointListening: point > 0, stopping: false)
    let action: StartUp.Action
    switch point {
    case 0:  // waiting for the endpoint
      action = s.next(endpointListening: false, stopping: true)
    case 1:  // waiting to retry after a failed try
      _ = s.announceFailed()
      action = s.next(endpointListening: true, stopping: true)
    case 2:  // just announced
      s.announced()
      action = s.next(endpointListening: true, stopping: true)
    default:  // the stop came during the first rescue
      s.announced()
      #expect(s.next(endpointListening: true, stopping: false) == .rescue)
      action = s.rescued(stopping: true)
    }
    return (s, action)
  }

  @Test(arguments: [(0, false), (1, false), (2, true), (3, true)])
  func aStopAtAnyPointAbandonsAndWithdrawsOnlyWhatWasAnnounced(point: Int, withdraws: Bool) {
    var (s, action) = stopped(at: point)
    #expect(action == .abandon(withdraw: withdraws))
    #expect(s.phase == .abandoned)
    // Abandoned is final: nothing after it starts the worker, whatever is reported.
    #expect(s.next(endpointListening: true, stopping: false) == .abandon(withdraw: withdraws))
    #expect(s.rescued(stopping: false) == .abandon(withdraw: withdraws))
  }
}

@Suite struct KeeperScheduleTests {
  let t0 = ContinuousClock.now
  /// Lease 3 s: heartbeats every second; housekeeping every 60 s; the queue sampled every 5 s; due jobs
  /// promoted every 2 s.
  var schedule: KeeperSchedule {
    KeeperSchedule(
      .init(leaseSeconds: 3, housekeepingSeconds: 60, sampleSeconds: 5, promoteSeconds: 2), start: t0)
  }

  @Test func samplesAndPromotesAtOnceThenHeartbeatsEveryThirdOfTheLease() {
    var s = schedule
    #expect(s.due(now: t0, stopping: false) == [.sampleQueue, .promoteDue])
    #expect(s.nextWake(stopping: false) == t0 + .seconds(1))
    #expect(s.due(now: t0 + .milliseconds(500), stopping: false) == [])
    #expect(
      s.due(now: t0 + .seconds(1), stopping: false) == [.heartbeat, .rescue, .housekeeping])
    #expect(s.due(now: t0 + .seconds(2), stopping: false) == [.heartbeat, .rescue, .promoteDue])
    #expect(
      s.due(now: t0 + .seconds(5), stopping: false) == [.heartbeat, .rescue, .sampleQueue, .promoteDue])
  }

  @Test func promotionComesEveryIntervalAndWakesTheKeeperForIt() {
    var s = KeeperSchedule(
      .init(leaseSeconds: 30, housekeepingSeconds: 60, sampleSeconds: 5, promoteSeconds: 1), start: t0)
    _ = s.due(now: t0, stopping: false)
    // Heartbeats every 10 s, the sample every 5 s: the keeper still wakes each second to promote.
    #expect(s.nextWake(stopping: false) == t0 + .seconds(1))
    #expect(s.due(now: t0 + .seconds(1), stopping: false) == [.promoteDue])
    #expect(s.due(now: t0 + .milliseconds(1500), stopping: false) == [])
    #expect(s.due(now: t0 + .seconds(2), stopping: false) == [.promoteDue])
  }

  @Test func housekeepingComesEveryInterval() {
    var s = schedule
    _ = s.due(now: t0 + .seconds(1), stopping: false)
    #expect(!s.due(now: t0 + .seconds(30), stopping: false).contains(.housekeeping))
    #expect(s.due(now: t0 + .seconds(61), stopping: false).contains(.housekeeping))
  }

  @Test func aStoppingWorkerOnlyHeartbeats() {
    var s = schedule
    #expect(s.due(now: t0 + .seconds(1), stopping: true) == [.heartbeat])
    #expect(s.nextWake(stopping: true) == t0 + .seconds(2))
    #expect(s.due(now: t0 + .seconds(100), stopping: true) == [.heartbeat])
    #expect(!s.due(now: t0 + .seconds(200), stopping: true).contains(.promoteDue))
  }

  /// A worker that is not one of the few of its fleet that listen heartbeats, and samples the fleet's
  /// count less often; rescue, promotion and housekeeping are the listeners' rounds. Told it listens,
  /// it runs them again.
  @Test func onlyTheFleetsListenersRunItsRounds() {
    var s = schedule
    #expect(s.due(now: t0, stopping: false, forTheFleet: false) == [.sampleQueue])
    #expect(s.due(now: t0 + .seconds(1), stopping: false, forTheFleet: false) == [.heartbeat])
    #expect(s.due(now: t0 + .seconds(2), stopping: false, forTheFleet: false) == [.heartbeat])
    // The fleet's count sampled six times less often: every 30 s rather than 5.
    #expect(s.due(now: t0 + .seconds(5), stopping: false, forTheFleet: false) == [.heartbeat])
    #expect(s.due(now: t0 + .seconds(30), stopping: false, forTheFleet: false) == [.heartbeat, .sampleQueue])
    #expect(
      s.due(now: t0 + .seconds(32), stopping: false, forTheFleet: true) == [.heartbeat, .rescue, .promoteDue])
  }

  @Test func aLateRoundSchedulesFromWhenItRan() {
    var s = schedule
    _ = s.due(now: t0, stopping: false)
    // The keeper was held up 10 s (a slow statement): one heartbeat, not ten, then every second again.
    #expect(s.due(now: t0 + .seconds(10), stopping: false).filter { $0 == .heartbeat }.count == 1)
    #expect(s.nextWake(stopping: false) == t0 + .seconds(11))
  }

  @Test func veryShortLeasesStillHeartbeatAtMostFiveTimesASecond() {
    let s = KeeperSchedule(.init(leaseSeconds: 0.1, housekeepingSeconds: 60), start: t0)
    #expect(s.settings.heartbeatInterval == .milliseconds(200))
  }
}
