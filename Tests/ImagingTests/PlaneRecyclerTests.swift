import Synchronization
import Testing

@testable import Imaging

/// Plane buffers kept for the next render: what is kept, what a plane gets back, and that every byte
/// the budget counted for them is handed back. The recycler is the process's, so these run one at a time.
@Suite(.serialized)
struct PlaneRecyclerTests {
  /// A budget of `room` bytes, as the worker's gate counts the kept buffers.
  final class Budget: Sendable {
    let counted = Mutex(0)
    let room: Int
    init(room: Int) { self.room = room }
    func keep(_ bytes: Int) -> Bool {
      counted.withLock { counted in
        guard counted + bytes <= room else { return false }
        counted += bytes
        return true
      }
    }
    func released(_ bytes: Int) { counted.withLock { $0 -= bytes } }
  }

  static let megabyte = 1 << 20

  func installed(capacity: Int, room: Int) -> (PlaneRecycler, Budget) {
    let budget = Budget(room: room)
    let recycler = PlaneRecycler(
      capacity: capacity, keep: { budget.keep($0) }, released: { budget.released($0) })
    PlaneRecycler.install(recycler)
    return (recycler, budget)
  }

  @Test func aFreedPlaneIsKeptAndTheNextOfItsSizeGetsItZeroed() {
    let (recycler, budget) = installed(capacity: 64 * Self.megabyte, room: 64 * Self.megabyte)
    defer { PlaneRecycler.install(nil) }
    var first = Plane(width: 2048, height: 1024)
    let address = first.withUnsafeMutableBufferPointer { buffer in
      buffer.update(repeating: 7)
      return UInt(bitPattern: buffer.baseAddress)
    }
    first = Plane(width: 1, height: 1)  // the large plane is freed
    #expect(recycler.keptBytes == 2 * Self.megabyte)
    #expect(budget.counted.withLock { $0 } == 2 * Self.megabyte)
    let second = Plane(width: 2048, height: 1024)
    #expect(second.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } == address)
    #expect(second.withUnsafeBufferPointer { $0.allSatisfy { $0 == 0 } }, "a zeroed plane from a kept buffer")
    #expect(
      recycler.keptBytes == 0 && budget.counted.withLock { $0 } == 0, "the plane's render counts it now")
    _ = (first, second)
  }

  @Test func aSlightlySmallerPlaneTakesAKeptBufferAndGivesItBackWhole() {
    let (recycler, budget) = installed(capacity: 64 * Self.megabyte, room: 64 * Self.megabyte)
    defer { PlaneRecycler.install(nil) }
    do { _ = Plane(width: 2048, height: 2048) }  // 4 MiB kept
    do {
      let smaller = Plane(width: 2000, height: 2000)  // 3.8 MiB: within a quarter
      #expect(recycler.keptBytes == 0)
      _ = smaller
    }
    #expect(recycler.keptBytes == 4 * Self.megabyte, "kept again at its allocated size")
    do { _ = Plane(width: 1024, height: 1024) }  // 1 MiB: a quarter of 4 is too far, a fresh one
    #expect(recycler.keptBytes == 5 * Self.megabyte)
    #expect(budget.counted.withLock { $0 } == 5 * Self.megabyte)
  }

  @Test func smallPlanesAndPlanesTheBudgetHasNoRoomForAreFreed() {
    let (recycler, budget) = installed(capacity: 64 * Self.megabyte, room: 3 * Self.megabyte)
    defer { PlaneRecycler.install(nil) }
    do { _ = Plane(width: 512, height: 512) }  // under a megabyte: malloc's
    #expect(recycler.keptBytes == 0)
    do { _ = Plane(width: 2048, height: 1024) }
    do { _ = Plane(width: 2048, height: 1024 + 512) }  // 3 MiB: no room beside the 2 kept
    #expect(recycler.keptBytes == 2 * Self.megabyte && budget.counted.withLock { $0 } == 2 * Self.megabyte)
  }

  @Test func theOldestGoFirstUnderTheCapacityAndOnRelief() {
    let (recycler, budget) = installed(capacity: 5 * Self.megabyte, room: 64 * Self.megabyte)
    defer { PlaneRecycler.install(nil) }
    do { _ = Plane(width: 1024, height: 2048) }  // 2 MiB
    do { _ = Plane(width: 1024, height: 3072) }  // 3 MiB
    do { _ = Plane(width: 1024, height: 4096) }  // 4 MiB: both older ones go to make room
    #expect(recycler.keptBytes == 4 * Self.megabyte)
    do { _ = Plane(width: 1024, height: 1024) }  // 1 MiB beside it
    #expect(recycler.keptBytes == 5 * Self.megabyte)
    recycler.drop(atLeast: 1)
    #expect(recycler.keptBytes == 1 * Self.megabyte, "the oldest, 4 MiB, was enough")
    recycler.drop(atLeast: .max)
    #expect(recycler.keptBytes == 0 && budget.counted.withLock { $0 } == 0)
  }

  @Test func aRecyclerReplacedDropsWhatItKeptAndKeepsNothingMore() {
    let (recycler, budget) = installed(capacity: 64 * Self.megabyte, room: 64 * Self.megabyte)
    let living = Plane(width: 2048, height: 1024)
    do { _ = Plane(width: 2048, height: 1024) }
    #expect(recycler.keptBytes == 2 * Self.megabyte)
    PlaneRecycler.install(nil)
    #expect(recycler.keptBytes == 0 && budget.counted.withLock { $0 } == 0)
    _ = consume living  // freed now, not kept
    #expect(recycler.keptBytes == 0 && budget.counted.withLock { $0 } == 0)
  }
}
