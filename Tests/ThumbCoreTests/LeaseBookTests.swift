import Foundation
import Testing

@testable import ThumbCore

struct LeaseBookTests {
  @Test func heartbeatAnswersMarkMissingLeasesLost() {
    var book = LeaseBook<String>()
    book.hold(id: 2, token: "b", payload: "two")
    book.hold(id: 1, token: "a", payload: "one")
    book.hold(id: 3, token: "c", payload: "three")
    #expect(book.leasesToExtend().map(\.id) == [1, 2, 3])
    let lost = book.heartbeatAnswered(sent: book.leasesToExtend(), extended: [1, 3])
    #expect(lost.map(\.payload) == ["two"])
    #expect(book.status(of: 2, token: "b") == .lost && book.status(of: 1, token: "a") == .held)
    // A lost lease is neither extended again nor reported lost twice.
    #expect(book.leasesToExtend().map(\.id) == [1, 3])
    #expect(book.heartbeatAnswered(sent: [(2, "b")], extended: []).isEmpty)
    #expect(book.heldCount == 2 && book.count == 3)
  }

  @Test func handBackTakesOnlyHeldLeasesAndReleaseReportsTheEnd() {
    var book = LeaseBook<Int>()
    for id in [5, 4, 6] { book.hold(id: Int64(id), token: "t\(id)", payload: id) }
    _ = book.heartbeatAnswered(sent: [(4, "t4")], extended: [])
    let returned = book.handBackAll()
    #expect(returned.map(\.id) == [5, 6] && returned.map(\.token) == ["t5", "t6"])
    #expect(book.handBackAll().isEmpty)
    #expect(book.release(id: 4, token: "t4") == .lost)
    #expect(book.release(id: 5, token: "t5") == .handedBack)
    #expect(book.release(id: 5, token: "t5") == nil)
    #expect(book.count == 1)
  }

  @Test func aNewLeaseOnTheSameJobSupersedesTheOldOne() {
    var book = LeaseBook<String>()
    #expect(book.hold(id: 7, token: "old", payload: "first run") == nil)
    // The old lease expired unnoticed and the job came back to this worker.
    #expect(book.hold(id: 7, token: "new", payload: "second run") == "first run")
    #expect(book.status(of: 7, token: "old") == nil && book.status(of: 7, token: "new") == .held)
    // The first run's task ends: it must not remove the second run's lease.
    #expect(book.release(id: 7, token: "old") == nil)
    #expect(book.leasesToExtend().map(\.token) == ["new"])
    // A heartbeat sent with the old token and refused does not touch the new lease.
    #expect(book.heartbeatAnswered(sent: [(7, "old")], extended: []).isEmpty)
    #expect(book.release(id: 7, token: "new") == .held)
  }
}
