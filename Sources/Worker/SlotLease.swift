import Synchronization

/// A running job's hold on its job slot. A job that has to wait for memory (or for another job's shared
/// decode) steps aside: it gives its slot to a job that can use the core meanwhile, and when its wait
/// ends it runs without taking a slot back. Taking one back could deadlock (a granted decode waiting for
/// a slot held by a download paused for that decode's memory), and memory, not the slot, bounds what a
/// granted decode costs.
final class SlotLease: Sendable {
  /// The lease of the job the current task works for (set by the Worker around `process`).
  @TaskLocal static var current: SlotLease?

  private let slots: AdmissionGate
  /// Told +1 when the job steps aside and -1 when a job that stood aside ends: the worker's producer
  /// leases one more job for each one standing aside.
  private let asideChanged: @Sendable (Int) -> Void
  private let held = Atomic<Bool>(true)

  init(slots: AdmissionGate, asideChanged: @escaping @Sendable (Int) -> Void) {
    self.slots = slots
    self.asideChanged = asideChanged
  }

  func stepAside() {
    guard held.exchange(false, ordering: .acquiringAndReleasing) else { return }
    asideChanged(1)
    slots.release(1)
  }

  /// The job ended: gives the slot back, or leaves the count of those standing aside.
  func end() {
    if held.exchange(false, ordering: .acquiringAndReleasing) {
      slots.release(1)
    } else {
      asideChanged(-1)
    }
  }
}
