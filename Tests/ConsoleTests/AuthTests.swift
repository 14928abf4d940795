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
      let slot = throttle.admit(now: now)
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

  @Test func theRightPasswordAfterAWrongOneIsLetInAfterTheSpacing() {
    var throttle = LoginThrottle()
    _ = throttle.admit(now: start)
    throttle.failed(now: start)
    let slot = throttle.admit(now: start)
    #expect(slot == start + .milliseconds(250))
    throttle.succeeded()
    #expect(throttle.failures == 0)
    #expect(throttle.admit(now: slot) == slot)
  }

  @Test func guessesInParallelQueueBehindEachOther() {
    var throttle = LoginThrottle()
    _ = throttle.admit(now: start)
    throttle.failed(now: start)
    throttle.failed(now: start)
    // Ten guesses at the same instant get ten slots, each a spacing after the other.
    let slots = (0..<10).map { _ in throttle.admit(now: start) }
    for (earlier, later) in zip(slots, slots.dropFirst()) { #expect(later - earlier == .milliseconds(500)) }
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
