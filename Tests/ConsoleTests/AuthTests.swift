import Testing

@testable import Console

@Suite struct PasswordTests {
  @Test func matchesOnlyTheSamePassword() {
    let password = Password("correct horse")
    #expect(password.matches("correct horse"))
    #expect(!password.matches("correct hors"))
    #expect(!password.matches("correct horse "))
    #expect(!password.matches(""))
  }
}

@Suite struct LoginThrottleTests {
  let start = ContinuousClock.now

  @Test func theFirstAttemptIsCheckedAtOnce() {
    var throttle = LoginThrottle()
    #expect(throttle.admit(now: start) == start)
    throttle.succeeded()
    #expect(throttle.admit(now: start + .seconds(1)) == start + .seconds(1))
  }

  @Test func failuresSpaceAttemptsOutAndDoubleUpToTheLongest() {
    var throttle = LoginThrottle()
    var now = start
    var waits: [Duration] = []
    for _ in 0..<8 {
      guard let slot = throttle.admit(now: now) else {
        Issue.record("refused")
        return
      }
      waits.append(slot - now)
      now = slot
      throttle.failed(now: now)
    }
    #expect(waits[0] == .zero)
    #expect(waits[1] == .milliseconds(250))
    #expect(waits[2] == .milliseconds(500))
    #expect(waits[3] == .seconds(1))
    #expect(waits.last == .seconds(4))
  }

  @Test func theRightPasswordAfterAWrongOneIsLetInAfterTheSpacing() throws {
    var throttle = LoginThrottle()
    _ = throttle.admit(now: start)
    throttle.failed(now: start)
    let admitted = throttle.admit(now: start)
    let slot = try #require(admitted)
    #expect(slot == start + .milliseconds(250))
    throttle.succeeded()
    #expect(throttle.failures == 0)
    #expect(throttle.admit(now: slot) == slot)
  }

  @Test func guessesInParallelQueueBehindEachOtherUpToTheLongestWait() {
    var throttle = LoginThrottle()
    _ = throttle.admit(now: start)
    throttle.failed(now: start)
    throttle.failed(now: start)
    // Guesses at the same instant get slots a spacing apart (500 ms after two failures), up to a wait
    // of 4 s; the rest are refused at once and take no place.
    let slots = (0..<20).map { _ in throttle.admit(now: start) }
    let admitted = slots.compactMap { $0 }
    #expect(admitted.count == 8, "\(admitted.count)")
    for (earlier, later) in zip(admitted, admitted.dropFirst()) {
      #expect(later - earlier == .milliseconds(500))
    }
    #expect(slots.dropFirst(8).allSatisfy { $0 == nil })
    // Once the queue has moved on, an attempt is admitted again.
    #expect(throttle.admit(now: start + .seconds(1)) != nil)
  }

  @Test func aQuietMinuteForgivesTheFailures() {
    var throttle = LoginThrottle()
    for _ in 0..<5 {
      _ = throttle.admit(now: start)
      throttle.failed(now: start)
    }
    let later = start + .seconds(61)
    #expect(throttle.admit(now: later) == later)
    #expect(throttle.failures == 0)
  }
}

@Suite struct SessionsTests {
  @Test func aSessionIsFoundUntilItIdlesOutOrCloses() {
    let sessions = Sessions(idle: .seconds(10))
    let start = ContinuousClock.now
    let session = sessions.open(now: start)
    #expect(session.id.count == 64 && session.csrf.count == 64 && session.id != session.csrf)
    #expect(sessions.find(session.id, now: start + .seconds(9))?.csrf == session.csrf)
    // Use refreshes it.
    #expect(sessions.find(session.id, now: start + .seconds(18)) != nil)
    #expect(sessions.find(session.id, now: start + .seconds(29)) == nil)
    let other = sessions.open(now: start)
    sessions.close(other.id)
    #expect(sessions.find(other.id, now: start) == nil)
    #expect(sessions.find(nil) == nil)
    #expect(sessions.find("") == nil)
  }
}
