/// A least-recently-used cache bounded by the total cost of its entries (bytes), not by their count:
/// one 40 MB panorama must weigh what 400 small photos weigh. An entry costlier than `maxEntryCost` is
/// never kept, so a single huge original cannot flush everything else.
public struct ByteBoundedCache<Key: Hashable, Value> {
  public let capacity: Int
  public let maxEntryCost: Int
  public private(set) var totalCost = 0

  private struct Entry {
    var value: Value
    var cost: Int
    var lastUse: UInt64
  }

  private var entries: [Key: Entry] = [:]
  private var clock: UInt64 = 0

  /// `maxEntryCost` defaults to a quarter of the capacity.
  public init(capacity: Int, maxEntryCost: Int? = nil) {
    self.capacity = max(0, capacity)
    self.maxEntryCost = min(self.capacity, maxEntryCost ?? self.capacity / 4)
  }

  public var count: Int { entries.count }

  /// The value, marked as just used.
  public mutating func value(for key: Key) -> Value? {
    guard var entry = entries[key] else { return nil }
    clock += 1
    entry.lastUse = clock
    entries[key] = entry
    return entry.value
  }

  /// Stores `value`, evicting least recently used entries until it fits. Returns false (and drops any
  /// older value for the key) when it costs more than `maxEntryCost`.
  @discardableResult
  public mutating func insert(_ value: Value, for key: Key, cost: Int) -> Bool {
    var evicted: [Value] = []
    return insert(value, for: key, cost: cost, evicted: &evicted)
  }

  /// `insert`, handing the values it drops to the caller (to be released where the caller chooses: an
  /// original's memory is given back when its value goes, which must not happen under the caller's lock).
  @discardableResult
  public mutating func insert(_ value: Value, for key: Key, cost: Int, evicted: inout [Value]) -> Bool {
    if let old = remove(key) { evicted.append(old) }
    guard cost <= maxEntryCost, cost >= 0 else { return false }
    while totalCost + cost > capacity, let oldest = leastRecentlyUsedKey, let old = remove(oldest) {
      evicted.append(old)
    }
    clock += 1
    entries[key] = Entry(value: value, cost: cost, lastUse: clock)
    totalCost += cost
    return true
  }

  /// Removes least recently used entries until their costs add up to `cost` or the cache is empty.
  public mutating func evict(atLeast cost: Int) -> [Value] {
    var evicted: [Value] = []
    var freed = 0
    while freed < cost, let oldest = leastRecentlyUsedKey, let entry = entries[oldest] {
      freed += entry.cost
      if let old = remove(oldest) { evicted.append(old) }
    }
    return evicted
  }

  @discardableResult
  public mutating func remove(_ key: Key) -> Value? {
    guard let old = entries.removeValue(forKey: key) else { return nil }
    totalCost -= old.cost
    return old.value
  }

  // A linear scan per eviction: caches of originals hold tens to a few thousand entries.
  private var leastRecentlyUsedKey: Key? {
    entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key
  }
}
