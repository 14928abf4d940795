import Foundation
import Imaging
import Queue
import Synchronization
import ThumbCore

/// One decode for all the jobs here that need the same original at the same time (a photo enqueued
/// under several profiles; a lease brings such siblings along).
///
/// Who renders for whom is decided by `HeldJobs` (its render groups): the first job of a group to start
/// its work leads, downloads the original and renders the variants of every member at once
/// (`VariantUnion`); the others follow, wait for that result without downloading, and take their own
/// variants from it. This is the part that moves the pixels: the leader's `RenderShare`, and picking a
/// member's variants out of the union's.
final class SharedRenders: Sendable {
  /// The variants rendered from one original, the original's SHA-256 (nil when not hashed), and the
  /// seconds its download took (or its wait for another job's download of the same URL).
  typealias Rendered = (
    info: SourceInfo, variants: [RenderedVariant], sourceHash: String?, fetchSeconds: Double
  )

  /// What a member gets: variants rendered here, or an earlier job's (same original bytes and profile:
  /// nothing decoded). Only a member alone in its group is offered reuse, so no other member waits on it.
  enum Variants {
    case rendered(Rendered)
    case reused(JobResult)
  }

  private let counts = Mutex<(decodes: Int, shared: Int)>((0, 0))

  /// Decodes made, and how many of them served more than one job.
  var decodes: (decodes: Int, shared: Int) { counts.withLock { $0 } }

  /// This job's variants: rendered here with every other member's (`render` gets the union's specs and
  /// whether the job is alone in its group, and downloads), or taken from the member that did. When the
  /// union does not fit the memory budget, or its leader gave up, each member renders its own variants:
  /// one profile's huge variant must not fail the others.
  func variants(
    for job: LeasedJob, own: [VariantSpec], role: JobRunner.Jobs.RenderRole, life: JobLife,
    render: ([VariantSpec], _ alone: Bool) async throws(JobError) -> Variants?
  ) async throws(JobError) -> Variants {
    switch role {
    case .follow(let leader):
      let share = leader.share
      // Waiting for another job's decode uses no core: leave it to a job that can.
      if !share.isPublished { life.stepAside(.awaitingSharedRender) }
      guard let published = await share.published,
        let member = published.members.firstIndex(where: { $0 == job.lease })
      else {
        return try await variants(for: job, own: own, role: .alone(job), life: life, render: render)
      }
      return .rendered(Self.pick(try published.result.get(), union: published.union, member: member))
    case .lead(let works):
      let share = works.first { $0.lease == job.lease }?.share ?? RenderShare()
      let grouped = works.map(\.job)
      // Only members that want the same poster (a video's) share the decode; the others, not in the
      // published list, render alone.
      let posterAt = (try? ProfileSpec.parse(job))?.posterAt
      let members = grouped.filter {
        $0.lease == job.lease || (try? ProfileSpec.parse($0))?.posterAt == posterAt
      }
      let union = VariantUnion(
        members.map { member in
          member.lease == job.lease ? own : (try? ProfileSpec.parse(member).variants) ?? []
        })
      var outcome: Result<Rendered, JobError>?
      do {
        switch try await render(union.specs, members.count == 1) {
        case .rendered(let rendered)?: outcome = .success(rendered)
        case .reused(let result)?:
          share.publish(nil)  // nobody waits: a group of one
          return .reused(result)
        case nil: outcome = nil
        }
      } catch {
        outcome = .failure(error)
      }
      if case .failure(let error) = outcome, error.code == .overMemoryBudget, members.count > 1 {
        outcome = nil  // split: each member alone
      }
      share.publish(outcome.map { .init(result: $0, union: union, members: members.map(\.lease)) })
      guard let outcome else {
        if members.count > 1 {
          return try await variants(for: job, own: own, role: .alone(job), life: life, render: render)
        }
        throw JobError(.internalError, "abandoned while waiting to render")
      }
      counts.withLock {
        $0.decodes += 1
        if members.count > 1 { $0.shared += 1 }
      }
      let member = members.firstIndex { $0.lease == job.lease } ?? 0
      return .rendered(Self.pick(try outcome.get(), union: union, member: member))
    }
  }

  /// Member `member`'s variants out of the union's, under that member's own names.
  private static func pick(_ rendered: Rendered, union: VariantUnion, member: Int) -> Rendered {
    let byName = Dictionary(uniqueKeysWithValues: rendered.variants.map { ($0.name, $0) })
    let mine = union.members[member].compactMap { entry -> RenderedVariant? in
      guard var variant = byName[union.specs[entry.index].name] else { return nil }
      variant.name = entry.name
      return variant
    }
    return (rendered.info, mine, rendered.sourceHash, rendered.fetchSeconds)
  }
}

/// A job's part in its group's render, as `HeldJobs` decided it: lead (render for every member, the job
/// among them, and publish the result in its own work's `share`) or follow (take it from the leader's).
extension HeldJobs.RenderRole where Work == JobRunner.Work, Made == JobResult {
  /// A group of one, never open to others: a job processed outside a worker, or a member whose shared
  /// render could not be made.
  static func alone(_ job: LeasedJob) -> Self { .lead(members: [JobRunner.Work(job)]) }
}

/// What a group's leader rendered for its members, published once; nil when it gave up before rendering
/// (abandoned while waiting for memory, or the union was over the budget), in which case each member
/// renders for itself.
final class RenderShare: Sendable {
  struct Published: Sendable {
    var result: Result<SharedRenders.Rendered, JobError>
    var union: VariantUnion
    /// Member i of the union is this lease.
    var members: [JobLease]
  }

  private let value = OneShot<Published?>()

  var isPublished: Bool { value.isResolved }
  var published: Published? { get async { await value.value } }

  func publish(_ published: Published?) { value.resolve(published) }
}

extension ProfileSpec {
  /// The job's profile, or invalid_profile.
  static func parse(_ job: LeasedJob) throws(JobError) -> Profile {
    do {
      return try parse(name: job.profileName, json: Data(job.profileSpec.utf8))
    } catch {
      throw JobError(.invalidProfile, error.description)
    }
  }
}
