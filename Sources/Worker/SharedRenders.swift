import Imaging
import Queue
import Synchronization
import ThumbCore

/// One decode for all the jobs here that need the same original at the same time (a photo enqueued
/// under several profiles; a lease brings such siblings along).
///
/// A job joins its URL's open group when it is leased (the whole lease batch before any of it starts).
/// The first member to get a job slot closes the group, downloads the original and renders the variants
/// of every member at once (VariantUnion); the others wait for that result, without downloading, and
/// take their own variants from it. A job leased after the group closed opens a new one. A member
/// dropped before it got a slot leaves, and the group is forgotten once nobody is in it.
final class SharedRenders: Sendable {
  /// The variants rendered from one original, the original's SHA-256 (nil when not hashed), and the
  /// seconds its download took (or its wait for another job's download of the same URL).
  typealias Rendered = (
    info: SourceInfo, variants: [RenderedVariant], sourceHash: String?, fetchSeconds: Double
  )

  /// What a member gets: variants rendered here, or an earlier job's (same original bytes and profile:
  /// nothing decoded). Only a member alone in its group is offered reuse, so no other member waits on it.
  enum Made {
    case rendered(Rendered)
    case reused(JobResult)
  }
  /// What a follower receives: the leader's result, or nil when the leader gave up before rendering
  /// (abandoned while waiting for memory), in which case the follower renders for itself.
  typealias Shared = Result<Rendered, JobError>?

  final class Group: Sendable {
    struct State {
      var members: [UInt64: [VariantSpec]] = [:]
      var order: [UInt64] = []
      /// Set when the leader closes the group: what it renders, and for whom (member i is ids[i]).
      var closed: (union: VariantUnion, ids: [UInt64])?
    }
    let url: String
    let state = Mutex(State())
    let result = OneShot<Shared>()

    init(url: String) { self.url = url }
  }

  struct Membership: Sendable {
    let group: Group
    let id: UInt64
  }

  private struct State {
    var open: [String: Group] = [:]
    /// Memberships taken when a job was leased, by lease token, until the job is processed or dropped.
    var enrolled: [String: Membership] = [:]
    var nextID: UInt64 = 0
    var decodes = 0
    var sharedDecodes = 0
  }

  private let state = Mutex(State())

  /// Decodes made, and how many of them served more than one job.
  var counts: (decodes: Int, shared: Int) { state.withLock { ($0.decodes, $0.sharedDecodes) } }

  func join(url: String, variants: [VariantSpec]) -> Membership {
    state.withLock { state in
      state.nextID += 1
      let group = state.open[url] ?? Group(url: url)
      state.open[url] = group
      group.state.withLock {
        $0.members[state.nextID] = variants
        $0.order.append(state.nextID)
      }
      return Membership(group: group, id: state.nextID)
    }
  }

  /// Joins for a job just leased; `takeEnrolment` hands the membership to its processing.
  func enrol(token: String, url: String, variants: [VariantSpec]) {
    let membership = join(url: url, variants: variants)
    let previous = state.withLock { $0.enrolled.updateValue(membership, forKey: token) }
    if let previous { leave(previous) }
  }

  func takeEnrolment(token: String) -> Membership? {
    state.withLock { $0.enrolled.removeValue(forKey: token) }
  }

  /// Leaves a group this job will not render with (it failed or was abandoned first).
  func leave(_ membership: Membership) {
    state.withLock { state in
      let empty = membership.group.state.withLock { group -> Bool in
        // A closed group's union is fixed: the leader renders for everyone it counted.
        guard group.closed == nil else { return false }
        group.members[membership.id] = nil
        group.order.removeAll { $0 == membership.id }
        return group.members.isEmpty
      }
      if empty, state.open[membership.group.url] === membership.group {
        state.open[membership.group.url] = nil
      }
    }
  }

  /// A group of one, never open to others: for a member whose shared render could not be made.
  private func alone(variants: [VariantSpec]) -> Membership {
    let id = state.withLock { state -> UInt64 in
      state.nextID += 1
      return state.nextID
    }
    let group = Group(url: "")
    group.state.withLock {
      $0.members[id] = variants
      $0.order = [id]
    }
    return Membership(group: group, id: id)
  }

  /// This member's variants: rendered here with every other member's (`render` gets the union's
  /// specs, and whether this member is alone in its group, and downloads), or taken from the member
  /// that did. `render` runs at most once per group.
  /// When the union does not fit the memory budget, or its renderer gave up, each member renders its
  /// own variants: one profile's huge variant must not fail the others.
  func variants(
    for membership: Membership, life: JobLife,
    render: ([VariantSpec], _ alone: Bool) async throws(JobError) -> Made?
  ) async throws(JobError) -> Made {
    let group = membership.group
    // The first member here closes the group: later jobs for the URL start a new one.
    let lead = state.withLock { state -> (union: VariantUnion, ids: [UInt64])? in
      let closing = group.state.withLock { group -> (VariantUnion, [UInt64])? in
        if group.closed != nil { return nil }
        let closed = (VariantUnion(group.order.map { group.members[$0]! }), group.order)
        group.closed = closed
        return closed
      }
      if closing != nil, state.open[group.url] === group { state.open[group.url] = nil }
      return closing
    }
    let mine = group.state.withLock { $0.members[membership.id]! }
    guard let lead else {
      // Waiting for another job's decode uses no core: leave it to a job that can.
      if !group.result.isResolved { life.stepAside(.awaitingSharedRender) }
      switch await group.result.value {
      case .some(let shared): return .rendered(try Self.own(shared.get(), membership: membership))
      case .none: return try await variants(for: alone(variants: mine), life: life, render: render)
      }
    }
    var outcome: Result<Rendered, JobError>?
    do {
      switch try await render(lead.union.specs, lead.ids.count == 1) {
      case .rendered(let rendered)?: outcome = .success(rendered)
      case .reused(let result)?:
        group.result.resolve(nil)  // nobody waits: a group of one
        return .reused(result)
      case nil: outcome = nil
      }
    } catch {
      outcome = .failure(error)
    }
    if case .failure(let error) = outcome, error.code == .overMemoryBudget, lead.ids.count > 1 {
      outcome = nil  // split: each member alone
    }
    group.result.resolve(outcome)
    guard let outcome else {
      if lead.ids.count > 1 {
        return try await variants(for: alone(variants: mine), life: life, render: render)
      }
      throw JobError(.internalError, "abandoned while waiting to render")
    }
    state.withLock {
      $0.decodes += 1
      if lead.ids.count > 1 { $0.sharedDecodes += 1 }
    }
    let rendered = try outcome.get()
    return .rendered(Self.pick(rendered, union: lead.union, member: lead.ids.firstIndex(of: membership.id)!))
  }

  /// A follower's share of the leader's result.
  private static func own(_ rendered: Rendered, membership: Membership) throws(JobError) -> Rendered {
    guard let closed = membership.group.state.withLock({ $0.closed }),
      let member = closed.ids.firstIndex(of: membership.id)
    else { throw JobError(.internalError, "a job's render group lost it") }
    return pick(rendered, union: closed.union, member: member)
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
