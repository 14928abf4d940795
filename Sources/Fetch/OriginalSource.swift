public import Blocking
import Foundation
import Hashing
import Synchronization
public import ThumbCore

/// Where jobs get their originals: downloads each URL once however many jobs name it. URLs are compared
/// by their identity (`SourceURL.identity`): two presigned URLs of one object are one original.
///
///  * Jobs that want a URL already being downloaded here wait for that download (single flight).
///  * Recently downloaded originals are kept in a cache bounded by bytes. A copy younger than
///    `freshSeconds` is used as it is; an older one is revalidated with a conditional GET
///    (If-None-Match / If-Modified-Since), and a 304 costs headers, not the body.
///  * Each download or revalidation is delivered as such (`Delivery.downloaded`, `.revalidated`) to
///    exactly one job, the one that started it or took over its prefetch; the others of the URL get
///    `sharedDownload` or `cached`. That job records it (the `thumbs.originals` row).
///  * With a memory gate, cached originals count against it, and the gate evicts them when a decode
///    first in line lacks room.
///
/// A download belongs to no single job: a job that is cancelled stops waiting, and the download itself is
/// cancelled only when no job waits for it any more.
public final class OriginalSource: Sendable {
  public struct Settings: Sendable {
    /// Bytes of recent originals kept per worker; 0 turns the cache off.
    public var cacheBytes = 128 * 1024 * 1024
    /// How long a cached original is used without asking the origin again.
    public var freshSeconds: Double = 60

    public init() {}
  }

  /// How a job got its original, for counters and logs.
  public enum Delivery: String, Sendable {
    case downloaded, sharedDownload = "shared_download", cached, revalidated
  }

  public struct Counters: Sendable, Equatable {
    public var downloads = 0
    public var sharedDownloads = 0
    public var cacheHits = 0
    public var revalidations = 0

    public init(downloads: Int = 0, sharedDownloads: Int = 0, cacheHits: Int = 0, revalidations: Int = 0) {
      self.downloads = downloads
      self.sharedDownloads = sharedDownloads
      self.cacheHits = cacheHits
      self.revalidations = revalidations
    }
  }

  private struct Cached {
    var original: FetchedOriginal
    var storedAt: ContinuousClock.Instant
  }

  private typealias Download = Task<Result<(FetchedOriginal, Delivery), JobError>, Never>

  private struct Flight {
    var id: UInt64
    var download: Download
    var waiters: Int
    /// Started by `prefetch`, and no job has taken it as its own download yet: the first one to ask
    /// for the URL does, as if it had started it (its delivery and the counters say so). An unclaimed
    /// flight stays here when it ends, so that its job gets its result, a failure included (a second
    /// try at once would skip the queue's backoff and the origin's Retry-After), until the job takes it
    /// or ends without it (`forgetPrefetch`).
    var unclaimed = false
    /// What the download came to, once it ended.
    var ended: Result<(FetchedOriginal, Delivery), JobError>?
  }

  private struct State {
    var cache: ByteBoundedCache<String, Cached>
    var flights: [String: Flight] = [:]
    var nextFlight: UInt64 = 0
    var counters = Counters()
  }

  public let fetcher: Fetcher
  public let settings: Settings
  /// Where the bodies the transfer did not hash as they arrived (those read by ranges) are hashed
  /// (SHA-256, once per download, for every job of the URL); nil: originals are not hashed.
  private let hashing: BlockingPool?
  private let state: Mutex<State>

  public init(fetcher: Fetcher, settings: Settings = Settings(), hashingOn hashing: BlockingPool? = nil) {
    var fetcher = fetcher
    // A body read whole is hashed as it arrives; the pool hashes the rest (read by ranges).
    fetcher.hashesBodies = hashing != nil
    self.fetcher = fetcher
    self.settings = settings
    self.hashing = hashing
    state = Mutex(State(cache: ByteBoundedCache(capacity: settings.cacheBytes)))
    // The cache gives memory back first when a decode lacks it: a cached original nobody uses is worth
    // less than a decode started now.
    fetcher.memory?.onShortfall { [weak self] bytes in self?.evict(atLeast: bytes) }
  }

  public var counters: Counters { state.withLock { $0.counters } }

  /// The original at `url`: from the cache, from a download in flight here, or downloaded now.
  public func original(for url: String) async throws(JobError) -> (FetchedOriginal, Delivery) {
    enum Plan {
      case hit(FetchedOriginal)
      case wait(Download, joined: Bool)
    }
    let key = SourceURL.identity(url)
    let plan = state.withLock { state -> Plan in
      // A prefetch for this job first: it is this job's own download, whatever the cache holds now.
      if var flight = state.flights[key], flight.unclaimed {
        flight.unclaimed = false
        flight.waiters += 1
        state.flights[key] = flight.ended != nil ? nil : flight
        return .wait(flight.download, joined: false)
      }
      let cached = state.cache.value(for: key)
      if let cached, isFresh(cached) {
        state.counters.cacheHits += 1
        return .hit(cached.original)
      }
      if var flight = state.flights[key] {
        flight.waiters += 1
        state.flights[key] = flight
        state.counters.sharedDownloads += 1
        return .wait(flight.download, joined: true)
      }
      return .wait(
        startFlight(url, key: key, stale: cached?.original, prefetch: false, in: &state), joined: false)
    }
    switch plan {
    case .hit(let original):
      return (original, .cached)
    case .wait(let download, let joined):
      let result = await withTaskCancellationHandler {
        await download.value
      } onCancel: {
        self.leave(key, download)
      }
      if Task.isCancelled { throw JobError(.internalError, "\(SourceURL.shown(url)): download cancelled") }
      let (original, delivery) = try result.get()
      return (original, joined ? .sharedDownload : delivery)
    }
  }

  /// Starts downloading `url` into the cache for a job that will ask for it soon (one waiting for a
  /// slot), unless it is cached and fresh or already on its way. Does nothing when the cache is off:
  /// the bytes would have nowhere to wait. The job's own `original(for:)` then finds them cached, or
  /// takes over the download in flight as its own. A prefetch nobody claims runs to its end and is
  /// cached, like any download.
  public func prefetch(_ url: String) {
    guard settings.cacheBytes > 0 else { return }
    let key = SourceURL.identity(url)
    state.withLock { state in
      guard state.flights[key] == nil else { return }
      let cached = state.cache.value(for: key)
      if let cached, isFresh(cached) { return }
      _ = startFlight(url, key: key, stale: cached?.original, prefetch: true, in: &state)
    }
  }

  private func isFresh(_ cached: Cached) -> Bool {
    cached.storedAt.duration(to: .now) < .milliseconds(Int(settings.freshSeconds * 1000))
  }

  /// Registers a new download of `url` as the flight of its identity `key`, under the state's lock: one
  /// waiter (the caller), or none and unclaimed for a prefetch. The task starts running only after the
  /// lock is released, so the flight is registered before the download can finish and remove it.
  private func startFlight(
    _ url: String, key: String, stale: FetchedOriginal?, prefetch: Bool, in state: inout State
  ) -> Download {
    state.nextFlight += 1
    let id = state.nextFlight
    let download = Download { await self.download(url, key: key, stale: stale, flight: id) }
    state.flights[key] = Flight(id: id, download: download, waiters: prefetch ? 0 : 1, unclaimed: prefetch)
    return download
  }

  /// The job a prefetch was for will not ask for `url` (it was abandoned while it waited): an unclaimed
  /// prefetch is dropped, and cancelled if it still runs. One that ended with the original is returned,
  /// for the caller to record the download nobody else will.
  public func forgetPrefetch(_ url: String) -> (FetchedOriginal, Delivery)? {
    let key = SourceURL.identity(url)
    let dropped = state.withLock { state -> Flight? in
      guard let flight = state.flights[key], flight.unclaimed else { return nil }
      state.flights[key] = nil
      return flight
    }
    guard let dropped else { return nil }
    guard let ended = dropped.ended else {
      dropped.download.cancel()
      return nil
    }
    return try? ended.get()
  }

  /// Drops least recently used originals from the cache until at least `bytes` of them are gone (the
  /// memory gate asks, when a decode lacks memory and nothing else would give any back). An original a
  /// job still holds keeps its memory until the job lets it go.
  public func evict(atLeast bytes: Int) {
    let evicted = state.withLock { $0.cache.evict(atLeast: bytes) }
    withExtendedLifetime(evicted) {}
  }

  /// A waiter gave up. The last one to leave cancels the download.
  private func leave(_ key: String, _ download: Download) {
    let abandon = state.withLock { state -> Bool in
      guard var flight = state.flights[key], flight.download == download else { return false }
      flight.waiters -= 1
      if flight.waiters > 0 {
        state.flights[key] = flight
        return false
      }
      state.flights[key] = nil
      return true
    }
    if abandon { download.cancel() }
  }

  private func download(
    _ url: String, key: String, stale: FetchedOriginal?, flight: UInt64
  ) async -> Result<(FetchedOriginal, Delivery), JobError> {
    let validators = stale.map(\.validators).flatMap { $0.isEmpty ? nil : $0 }
    let result: Result<(FetchedOriginal, Delivery), JobError>
    do throws(JobError) {
      switch try await fetcher.fetch(url, revalidating: validators) {
      case .downloaded(var original):
        // Once, here: the originals row and the render key both use it, for every job of the URL.
        if let hashing, original.sha256 == nil, let bytes = original.content.whole {
          original.sha256 = await hashing.run { Digest.sha256Hex(bytes) }
        }
        result = .success((original, .downloaded))
      case .notModified(let fresh):
        guard var original = stale else {
          throw JobError(.httpError, "\(SourceURL.shown(url)) answered 304 to an unconditional GET")
        }
        if !fresh.isEmpty { original.validators = fresh }
        result = .success((original, .revalidated))
      }
    } catch {
      result = .failure(error)
    }
    // Dropped after the lock is released: an original's memory hold gives memory back as it goes, which
    // can wake the memory gate, which can ask this cache to evict (and take this lock).
    let evicted = state.withLock { state -> [Cached] in
      var evicted: [Cached] = []
      // Only our own flight: an abandoned one may have been replaced by a newer download of the URL.
      // An unclaimed prefetch stays until its job takes it (or forgets it).
      if var own = state.flights[key], own.id == flight {
        own.ended = result
        state.flights[key] = own.unclaimed ? own : nil
      }
      if case .success(let (original, delivery)) = result {
        // A spooled original is not kept: it holds its file's disk, which the next download may need.
        if original.spooled == nil {
          state.cache.insert(
            Cached(original: original, storedAt: .now), for: key, cost: original.content.count,
            evicted: &evicted)
        }
        if delivery == .revalidated {
          state.counters.revalidations += 1
        } else {
          state.counters.downloads += 1
        }
      }
      return evicted
    }
    withExtendedLifetime(evicted) {}
    return result
  }
}
