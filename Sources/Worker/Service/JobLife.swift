import Queue
public import ThumbCore

/// What a job's work tells the worker about itself as it goes: the phase it is in, a wait that leaves
/// its core to another job, the render key it renders, the storage's answer. Each call is one event on
/// the worker's `HeldJobs`. A job processed outside a worker has a life that records nothing.
public struct JobLife: Sendable {
  let runner: JobRunner?
  let lease: JobLease

  init(runner: JobRunner?, lease: JobLease) {
    self.runner = runner
    self.lease = lease
  }

  /// For a job that no worker holds.
  public static let unheld = JobLife(runner: nil, lease: JobLease(id: 0, token: ""))

  /// The work goes on to `phase`, keeping its slot.
  public func enter(_ phase: JobPhase) { runner?.entered(phase, lease) }

  /// The work waits for something other than a core: its slot goes to the next job.
  public func stepAside(_ phase: JobPhase) { runner?.steppedAside(phase, lease) }

  /// Returns once no other job here renders `key` (its outcome, once written, is what a lookup finds),
  /// or after a short patience. True when it had to wait.
  @discardableResult
  public func awaitOthersRendering(_ key: String) async -> Bool {
    await runner?.awaitOthersRendering(key, lease) ?? false
  }

  /// The job's part in the render of its group: it leads (renders for every member) or follows.
  func joinRender(_ job: LeasedJob) -> JobRunner.Jobs.RenderRole {
    runner?.joinRender(lease) ?? .alone(job)
  }

  /// The job renders `key` itself: a job here that finds the same key waits for this one's outcome.
  public func renders(_ key: String) { runner?.renders(key, lease) }

  /// The storage took the job's variants (`refusal` nil) or refused them.
  public func storageAnswered(refusal: JobError?) { runner?.storageAnswered(refusal: refusal) }
}
