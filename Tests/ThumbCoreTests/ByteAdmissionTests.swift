import Testing

@testable import ThumbCore

struct ByteAdmissionTests {
  @Test func firstComeFirstServedWithoutOvertaking() {
    var gate = ByteAdmission(capacity: 100)
    #expect(gate.request(id: 1, bytes: 60) == .granted)
    #expect(gate.request(id: 2, bytes: 70) == .queued)  // does not fit next to 1
    #expect(gate.request(id: 3, bytes: 10) == .queued, "would fit, but must not overtake 2")
    #expect(gate.request(id: 4, bytes: 101) == .neverFits)
    #expect(gate.release(bytes: 60) == [2, 3], "2 first, then 3 fits beside it")
    #expect(gate.inUse == 80)
    #expect(gate.release(bytes: 70) == [])
    #expect(gate.inUse == 10)
  }

  @Test func aWithdrawnRequestUnblocksThoseBehindIt() {
    var gate = ByteAdmission(capacity: 100)
    #expect(gate.request(id: 1, bytes: 50) == .granted)
    #expect(gate.request(id: 2, bytes: 80) == .queued)
    #expect(gate.request(id: 3, bytes: 20) == .queued)
    let (wasQueued, granted) = gate.cancel(id: 2)
    #expect(wasQueued && granted == [3])
    #expect(gate.cancel(id: 2).wasQueued == false)
    #expect(gate.inUse == 70 && gate.queuedCount == 0)
  }

  @Test func downloadsMayUseWhatRunningDecodesWillGiveBackIfTheHeadStillFitsAfter() {
    var gate = ByteAdmission(capacity: 100)
    let first = gate.take(10)
    #expect(first)
    #expect(gate.request(id: 1, bytes: 30) == .granted)
    let tooMuch = gate.take(61)
    #expect(!tooMuch, "only 60 left")
    #expect(gate.request(id: 2, bytes: 70) == .queued)
    #expect(!gate.isStalled && gate.shortfall == 10, "request 1 will give its 30 back")
    let intoTheHeadsRoom = gate.take(21)
    #expect(!intoTheHeadsRoom, "10 + 21 held by downloads would leave the head 69 once request 1 ends")
    let beside = gate.take(20)
    #expect(beside, "10 + 20 leave it its 70")
    #expect(gate.release(bytes: 30) == [2])
    #expect(gate.inUse == 100 && gate.requested == 70)
    #expect(gate.give(30) == [] && gate.inUse == 70)
  }

  @Test func smallerRequestsOvertakeAWaitingOneABoundedNumberOfTimes() {
    var gate = ByteAdmission(capacity: 100, maxOvertakes: 2)
    #expect(gate.request(id: 1, bytes: 50) == .granted)
    #expect(gate.request(id: 2, bytes: 80) == .queued)
    #expect(gate.request(id: 3, bytes: 20) == .granted, "fits beside 1: overtakes 2 (once)")
    #expect(gate.request(id: 4, bytes: 40) == .queued, "does not fit now")
    #expect(gate.request(id: 5, bytes: 10) == .granted, "overtakes 2 (twice)")
    #expect(gate.request(id: 6, bytes: 10) == .queued, "2 has been overtaken enough")
    #expect(gate.release(bytes: 50) == [], "2 still does not fit beside 3 and 5; 4 and 6 may not pass it")
    #expect(gate.release(bytes: 20) == [2, 6], "2 first; then 6 fits beside it, 4 does not")
    #expect(gate.queuedCount == 1 && gate.inUse == 100)
  }

  @Test func inAStallDownloadsMayTakeTheHeadsRoomSoThatTheyCanEnd() {
    var gate = ByteAdmission(capacity: 100)
    let original = gate.take(50)  // a download, or an original a waiting job holds
    #expect(original)
    #expect(gate.request(id: 1, bytes: 60, held: 10) == .queued)
    #expect(gate.isStalled && gate.shortfall == 10, "no granted request is left to give memory back")
    let more = gate.take(20)
    #expect(more, "without this the download could never end, nor free its memory")
    #expect(gate.shortfall == 30)
    #expect(gate.give(70) == [1])
    #expect(!gate.isStalled && gate.requested == 60)
  }

  @Test func inAStallTheRequestsBehindTheHeadHoldingOriginalsAreWithdrawn() {
    var gate = ByteAdmission(capacity: 100)
    let originals = [gate.take(30), gate.take(20), gate.take(10)]
    #expect(originals == [true, true, true])
    #expect(gate.request(id: 1, bytes: 50, held: 30) == .queued)
    #expect(gate.request(id: 2, bytes: 10, held: 20) == .queued)
    #expect(gate.request(id: 3, bytes: 5) == .queued)
    #expect(gate.request(id: 4, bytes: 5, held: 10) == .queued)
    let answer = gate.withdrawHoldersBehindHead()
    #expect(answer?.withdrawn == [2, 4], "not the head, not 3, which holds nothing")
    #expect(answer?.granted == [], "their originals are still held until they let them go")
    #expect(gate.queuedCount == 2)
    #expect(gate.give(30) == [1, 3], "their originals gone, the head starts, and 3 beside it")
    #expect(gate.withdrawHoldersBehindHead() == nil, "no stall any more")
  }

  @Test func aRequestMustFitBesideTheOriginalItHolds() {
    var gate = ByteAdmission(capacity: 100)
    #expect(gate.request(id: 1, bytes: 80, held: 21) == .neverFits)
    #expect(gate.request(id: 2, bytes: 80, held: 20) == .granted)
  }
}
