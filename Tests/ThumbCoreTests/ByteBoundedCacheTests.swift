import Testing

@testable import ThumbCore

struct ByteBoundedCacheTests {
  @Test func evictsLeastRecentlyUsedByBytesNotCount() {
    var cache = ByteBoundedCache<String, Int>(capacity: 100, maxEntryCost: 60)
    cache.insert(1, for: "a", cost: 40)
    cache.insert(2, for: "b", cost: 40)
    _ = cache.value(for: "a")  // a is now the most recently used
    let keptC = cache.insert(3, for: "c", cost: 30)  // 110 > 100: b goes, not a
    #expect(keptC)
    var seen = ["a", "b", "c"].map { cache.value(for: $0) }
    #expect(seen == [1, nil, 3])
    #expect(cache.totalCost == 70)
    // Small entries make room for a big one by going, least recently used first.
    for i in 0..<3 { cache.insert(i, for: "s\(i)", cost: 10) }
    #expect(cache.totalCost == 100)
    let keptBig = cache.insert(9, for: "big", cost: 60)
    #expect(keptBig)
    #expect(cache.totalCost <= 100)
    seen = ["big", "a", "c"].map { cache.value(for: $0) }
    #expect(seen == [9, nil, nil], "a and c were used longest ago")
  }

  @Test func refusesAnEntryOverItsLimitAndDropsTheOldValue() {
    var cache = ByteBoundedCache<String, Int>(capacity: 100)
    #expect(cache.maxEntryCost == 25)
    cache.insert(1, for: "a", cost: 20)
    let kept = cache.insert(2, for: "a", cost: 26)
    #expect(!kept)
    let stale = cache.value(for: "a")
    #expect(stale == nil, "a stale value must not outlive a refused update")
    #expect(cache.totalCost == 0)
    var off = ByteBoundedCache<String, Int>(capacity: 0)
    let keptWhenOff = off.insert(1, for: "a", cost: 1)
    #expect(!keptWhenOff)
  }

  @Test func evictedValuesAreHandedToTheCaller() {
    var cache = ByteBoundedCache<String, Int>(capacity: 100, maxEntryCost: 60)
    var evicted: [Int] = []
    cache.insert(1, for: "a", cost: 40, evicted: &evicted)
    cache.insert(2, for: "b", cost: 40, evicted: &evicted)
    cache.insert(3, for: "b", cost: 30, evicted: &evicted)
    #expect(evicted == [2], "the replaced value")
    cache.insert(4, for: "c", cost: 50, evicted: &evicted)
    #expect(evicted == [2, 1], "the least recently used, to make room")
    #expect(cache.evict(atLeast: 31) == [3, 4], "b (30) alone is not enough")
    #expect(cache.count == 0 && cache.totalCost == 0)
    #expect(cache.evict(atLeast: 1) == [])
  }
}
