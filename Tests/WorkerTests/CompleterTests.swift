import Logging
import Queue
import Synchronization
import Testing
import ThumbCore

@testable import Worker

/// The Completer's group commit, with statements of the test's own: no database.
@Suite struct CompleterTests {
  /// Keeps every batch it is asked to write; a write waits while `held`, and the first `failures`
  /// writes fail. `lost`: jobs the database would not find under their lease.
  final class Statements: OutcomeStatements {
    let batches = Mutex<[[Int64]]>([])
    let failures: Mutex<Int>
    let lost: Set<Int64>
    let gate = Mutex<(held: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    init(failures: Int = 0, lost: Set<Int64> = []) {
      self.failures = Mutex(failures)
      self.lost = lost
    }

    func hold() { gate.withLock { $0.held = true } }

    func release() {
      let waiters = gate.withLock { gate in
        gate.held = false
        defer { gate.waiters = [] }
        return gate.waiters
      }
      waiters.forEach { $0.resume() }
    }

    func recordOutcomes(
      _ outcomes: [(job: LeasedJob, outcome: JobOutcome<JobResult>)]
    ) async throws(PostgresError) -> [Int64: WriteAnswer] {
      await withCheckedContinuation { continuation in
        let wait = gate.withLock { gate in
          if gate.held { gate.waiters.append(continuation) }
          return gate.held
        }
        if !wait { continuation.resume() }
      }
      if failures.withLock({ failures in
        defer { failures -= 1 }
        return failures > 0
      }) {
        throw PostgresError(kind: .connection, message: "server closed the connection")
      }
      batches.withLock { $0.append(outcomes.map(\.job.id)) }
      return Dictionary(
        uniqueKeysWithValues: outcomes.map { ($0.job.id, lost.contains($0.job.id) ? .leaseLost : .written) })
    }

    func releaseUnclaimed(_ storageKeys: [String]) async throws(PostgresError) -> Int { storageKeys.count }
  }

  /// Tries 1 ms apart, doubling, unless `backoff` says otherwise.
  func completer(
    _ statements: Statements, backoff: Backoff = Backoff(first: .milliseconds(1), cap: nil)
  )
    -> Completer
  {
    Completer(
      queue: statements, logger: Logger(label: "test"),
      activity: ServiceActivity().reporter(for: "completer"),
      backoff: backoff)
  }

  func job(_ id: Int64) -> LeasedJob {
    LeasedJob(id: id, sourceURL: "https://origin.test/\(id).jpg", leaseToken: "token\(id)")
  }

  @Test func anOutcomeAtRestIsWrittenAloneAndAtOnce() async {
    let statements = Statements()
    let answer = await completer(statements).record(job(1), .handedBack)
    #expect(answer == .written)
    #expect(statements.batches.withLock { $0 } == [[1]])
  }

  @Test func outcomesThatArriveDuringAWriteGoTogetherInTheNext() async {
    let statements = Statements()
    let completer = completer(statements)
    statements.hold()
    await withTaskGroup(of: WriteAnswer?.self) { group in
      group.addTask { await completer.record(self.job(1), .handedBack) }
      // Job 1's write is under way (held); four more arrive meanwhile.
      try? await Task.sleep(for: .milliseconds(50))
      for id in Int64(2)...5 { group.addTask { await completer.record(self.job(id), .handedBack) } }
      try? await Task.sleep(for: .milliseconds(50))
      statements.release()
      for await answer in group { #expect(answer == .written) }
    }
    let batches = statements.batches.withLock { $0 }
    #expect(
      batches.count == 2 && batches.first == [1] && Set(batches.last ?? []) == [2, 3, 4, 5], "\(batches)")
  }

  @Test func aWriteThatFailsIsTriedAgainAndAJobNotFoundLostItsLease() async {
    let statements = Statements(failures: 2, lost: [2])
    let completer = completer(statements, backoff: Completer.retryBackoff)
    let started = ContinuousClock.now
    async let first = completer.record(job(1), .succeeded(JobResult(variants: [])))
    async let second = completer.record(job(2), .failed(JobError(.timeout, "slow"), retryAfter: 10))
    let answers = await [first, second]
    #expect(answers == [.written, .leaseLost])
    // Two failures: waits of 0.25 s and 0.5 s before the write that went through.
    #expect(started.duration(to: .now) >= .milliseconds(750))
    #expect(statements.batches.withLock { $0 }.flatMap { $0 }.sorted() == [1, 2])
  }

  @Test func aDatabaseAwayThroughEveryTryGivesNoAnswer() async {
    let statements = Statements(failures: 5)
    #expect(await completer(statements).record(job(1), .handedBack) == nil)
    #expect(statements.batches.withLock { $0 }.isEmpty)
  }
}
