public import Admission
import CLibCurl
import Foundation
import Hashing
public import ThumbCore
public import Transport

/// The limits every download runs under. The defaults are documented in docs/fetching.md; the flags
/// that change them are `thumbd worker --fetch-timeout`, `--max-download-bytes`, ...
public struct FetchLimits: Sendable {
  public var connectTimeout: Double = 10
  /// The whole fetch of one attempt, its retries and their waits included (`--fetch-timeout`).
  public var totalTimeout: Double = 30
  public var maxBytes: Int = 50 * 1024 * 1024
  public var maxRedirects: Int = 5
  /// A transfer slower than this many bytes per second for `lowSpeedSeconds` is abandoned (slow drip).
  public var lowSpeedBytesPerSecond: Int = 1024
  public var lowSpeedSeconds: Int = 10
  /// Tries within one attempt for transient failures, before the queue's own backoff takes over.
  public var retry = FetchRetryPolicy()
  public var userAgent = "thumbd/\(ThumbdVersion.current) (thumbnail worker)"

  public init() {}
}

/// The validators of a stored original, for a conditional request.
public struct Validators: Sendable, Equatable {
  public var etag: String?
  public var lastModified: String?

  public init(etag: String?, lastModified: String?) {
    self.etag = etag
    self.lastModified = lastModified
  }

  public var isEmpty: Bool { etag == nil && lastModified == nil }
}

/// A downloaded original.
public struct FetchedOriginal: Sendable {
  /// The whole file, or the parts of it read (a video read by ranges, or from the spool).
  public var content: OriginalBytes
  public var contentType: String?
  public var effectiveURL: String
  public var validators: Validators
  /// The bytes taken from the memory budget for `content`, given back when the last copy of this value is
  /// gone (nil: no budget). Keep the value, not just `content`, for as long as the bytes are used.
  public var hold: MemoryHold?
  /// Times the download paused because the memory budget had no room for its next bytes.
  public var memoryPauses = 0
  /// The bytes' SHA-256 (hex), computed once per download: as the body arrived when the fetcher
  /// `hashesBodies` and read it whole, otherwise by OriginalSource once it is in. Never for an original
  /// read by ranges (`ranges`): no one read all of its bytes.
  public var sha256: String?
  /// How an original read by ranges was read (nil: read whole).
  public var ranges: RangedRead?
  /// The whole file, on disk, of a video too large to hold in memory from an origin that does not
  /// answer ranges (Spool): its parts are read from here. Kept as long as the original lives.
  public var spooled: SpooledFile?

  /// What identifies the original where identical originals are matched (render keys): its SHA-256
  /// when read whole, its size and its index's SHA-256 when read by ranges; nil while not computed.
  public var identity: String? {
    if let ranges { return "ranges \(ranges.total) \(ranges.indexSHA256)" }
    return sha256
  }

  public init(
    content: OriginalBytes, contentType: String?, effectiveURL: String, validators: Validators,
    hold: MemoryHold? = nil, memoryPauses: Int = 0
  ) {
    self.content = content
    self.contentType = contentType
    self.effectiveURL = effectiveURL
    self.validators = validators
    self.hold = hold
    self.memoryPauses = memoryPauses
  }
}

/// An original read by ranges, as read.
public struct RangedRead: Sendable, Equatable {
  /// The file's size.
  public var total: Int
  /// What was read of it: its head, its index, keyframes.
  public var bytesRead: Int
  /// SHA-256 (hex) of its container index: the index lists the size and place of every sample, so with
  /// the size it identifies the video.
  public var indexSHA256: String

  /// The whole file was downloaded to the spool (an origin that does not answer ranges), and its parts
  /// read from there: `bytesRead` is the whole file.
  public var spooled = false

  public init(total: Int, bytesRead: Int, indexSHA256: String, spooled: Bool = false) {
    self.total = total
    self.bytesRead = bytesRead
    self.indexSHA256 = indexSHA256
    self.spooled = spooled
  }
}

/// What a (possibly conditional) GET came to.
public enum FetchResult: Sendable {
  case downloaded(FetchedOriginal)
  /// 304: the copy the validators came from is still current.
  case notModified(Validators)
}

/// Downloads originals under limits and the address guard. Its transfers run on one CurlMulti thread and
/// share its connection cache.
public struct Fetcher: Sendable {
  public var limits: FetchLimits
  public var addressPolicy: AddressPolicy
  /// What bodies are counted against as they arrive (nil: nothing; only `limits.maxBytes` bounds them).
  public var memory: AdmissionGate?
  /// The transfer thread (a worker's own; `shared` otherwise).
  public var multi: CurlMulti
  /// Where `s3://` originals may be read from, and with what (nil: they are refused, `blocked_source`).
  public var sources: S3Sources?
  /// Decides the ranges of a video to read (nil: every original is read whole).
  public var rangePlanner: (any RangePlanner)?
  /// Hash each body as it arrives (`FetchedOriginal.sha256`), on the transfer thread between reads of
  /// the socket, rather than in a pass of its own once it is in. The hash of a video read by ranges
  /// is dropped: no one read all of its bytes.
  public var hashesBodies = false
  /// Where a video over `limits.maxBytes` read whole goes (nil: such a video is too_large).
  public var spool: Spool?

  public init(
    limits: FetchLimits, addressPolicy: AddressPolicy, memory: AdmissionGate? = nil,
    multi: CurlMulti = .shared, sources: S3Sources? = nil, rangePlanner: (any RangePlanner)? = nil
  ) {
    self.rangePlanner = rangePlanner
    self.limits = limits
    self.addressPolicy = addressPolicy
    self.memory = memory
    self.multi = multi
    self.sources = sources
  }

  /// Fetches `url`, retrying transient failures (connection errors, timeouts, 5xx, 408, 429) with backoff
  /// and the origin's Retry-After, all within `limits.totalTimeout`. Permanent refusals (404, other 4xx,
  /// blocked address or scheme, over the byte cap) end at once.
  ///
  /// Cancelling the calling task stops the transfer in progress at once, and any further tries.
  public func fetch(
    _ url: String, revalidating validators: Validators? = nil
  ) async throws(JobError)
    -> FetchResult
  {
    let signed = try signedGet(url)
    let result =
      if let rangePlanner, SourceURL.readsByRanges(url) {
        try await fetchByRanges(url, signed: signed, validators: validators, planner: rangePlanner)
      } else {
        try await get(url, signed: signed, validators: validators, range: nil).result
      }
    guard case .downloaded(let original) = result, let file = original.spooled else { return result }
    return .downloaded(try await unspooled(original, file: file, url: url))
  }

  /// A video downloaded whole to the spool, read by ranges from there as from an origin that answers
  /// them: its head, its index and its first keyframes, each part counted under the memory budget.
  private func unspooled(
    _ original: FetchedOriginal, file: SpooledFile, url: String
  ) async throws(JobError) -> FetchedOriginal {
    let tooLarge = JobError(
      .tooLarge,
      "\(SourceURL.shown(url)) is larger than the \(ByteSize.format(limits.maxBytes)) download limit, and its index cannot be read in parts"
    )
    guard let rangePlanner else { throw tooLarge }
    let total = file.size
    let (head, headHold) = try await spooledPart(0..<min(total, RangedReading.headBytes), of: file)
    guard
      let (held, holds, indexSHA256) = try await readInParts(
        total: total, head: head, planner: rangePlanner,
        read: { range async throws(JobError) in try await spooledPart(range, of: file) })
    else { throw tooLarge }
    var parts = original
    parts.content = .parts(held)
    parts.hold = MemoryHold.joining(original.hold, [headHold].compactMap { $0 } + holds)
    // Every byte came from the origin: the hash of the whole file (when taken) is the file's.
    parts.ranges = RangedRead(total: total, bytesRead: total, indexSHA256: indexSHA256, spooled: true)
    return parts
  }

  /// A file of `total` bytes read in parts from its `head` on, as `planner` asks, each part by `read`
  /// (its bytes, and its hold on the memory budget): the parts, their holds and the SHA-256 of the
  /// file's index; nil when the planner cannot read it in parts (then the holds are given back).
  private func readInParts(
    total: Int, head: [UInt8], planner: any RangePlanner,
    read: (Range<Int>) async throws(JobError) -> ([UInt8], MemoryHold?)
  ) async throws(JobError) -> (held: RangedOriginal, holds: [MemoryHold], indexSHA256: String)? {
    var holds: [MemoryHold] = []
    let outcome = try await RangedReading.run(
      total: total, head: head, planner: planner, maxBytes: limits.maxBytes
    ) { range async throws(JobError) in
      let (bytes, hold) = try await read(range)
      if let hold { holds.append(hold) }
      return bytes
    }
    guard case .done(let held) = outcome, let index = planner.index(in: held),
      let indexBytes = held.bytes(index)
    else { return nil }
    return (held, holds, Digest.sha256Hex(indexBytes))
  }

  /// The bytes of `range` of a spooled file, taken from the memory budget first (waiting for room).
  private func spooledPart(
    _ range: Range<Int>, of file: SpooledFile
  ) async throws(JobError) -> ([UInt8], MemoryHold?) {
    let hold = try await MemoryHold.taking(range.count, from: memory)
    return (try file.read(range), hold)
  }

  /// A video read by ranges: its head, then what `planner` asks for (its index, its first keyframes),
  /// held as a RangedOriginal. An origin that answers the first range with the whole file (200) is
  /// read whole, under the byte cap; so is a file the planner cannot read by ranges.
  private func fetchByRanges(
    _ url: String, signed: SignedGet?, validators: Validators?, planner: any RangePlanner
  ) async throws(JobError) -> FetchResult {
    let first = try await get(url, signed: signed, validators: validators, range: 0..<RangedReading.headBytes)
    guard case .downloaded(var head) = first.result, let partial = first.partial,
      partial.range.lowerBound == 0,
      partial.range.upperBound < partial.total
    else { return first.result }
    let total = partial.total
    // Every part read is counted under the memory budget for as long as the original lives, like a
    // whole download: the parts' holds go with the head's.
    guard
      let (held, holds, indexSHA256) = try await readInParts(
        total: total, head: head.content.head, planner: planner,
        read: { range async throws(JobError) in
          try await part(range, of: url, signed: signed, total: total)
        })
    else { return try await get(url, signed: signed, validators: nil, range: nil).result }
    head.content = .parts(held)
    head.hold = MemoryHold.joining(head.hold, holds)
    head.sha256 = nil
    head.ranges = RangedRead(total: total, bytesRead: held.bytesHeld, indexSHA256: indexSHA256)
    return .downloaded(head)
  }

  /// A video read by ranges, with the keyframe for a poster at `seconds` read too when it is not held
  /// (a profile's poster time; the first read took the first keyframes only). Anything else as it is.
  public func addingPoster(
    at seconds: Double, to original: FetchedOriginal, url: String
  ) async throws(JobError)
    -> FetchedOriginal
  {
    guard let rangePlanner, let held = original.content.parts else { return original }
    return try await adding(rangePlanner.ranges(at: seconds, after: held), to: original, url: url)
  }

  /// A video read by ranges with `ranges` read too (keyframes its poster search asked for), each
  /// counted under the memory budget for as long as the original lives; within the byte cap.
  public func adding(
    _ ranges: [Range<Int>], to original: FetchedOriginal, url: String
  ) async throws(JobError) -> FetchedOriginal {
    guard var held = original.content.parts else { return original }
    let wanted = ranges.filter { !held.holds($0) }
    guard !wanted.isEmpty else { return original }
    let signed = original.spooled == nil ? try signedGet(url) : nil
    var holds: [MemoryHold] = []
    for range in wanted {
      guard held.bytesHeld + range.count <= limits.maxBytes else {
        throw JobError(
          .tooLarge, "the parts of the video a poster needs are over the limit of \(limits.maxBytes) bytes")
      }
      let (bytes, hold) =
        if let file = original.spooled {
          try await spooledPart(range, of: file)
        } else {
          try await part(range, of: url, signed: signed, total: held.total)
        }
      if let hold { holds.append(hold) }
      held.add(bytes, at: range.lowerBound)
    }
    var topped = original
    topped.content = .parts(held)
    topped.hold = MemoryHold.joining(original.hold, holds)
    if topped.ranges?.spooled == false { topped.ranges?.bytesRead = held.bytesHeld }
    return topped
  }

  /// The bytes of `range` of a file of `total` bytes read by ranges; any other answer (the whole file,
  /// another range, another size) fails the attempt: the file changed while it was read.
  private func part(
    _ range: Range<Int>, of url: String, signed: SignedGet?, total: Int
  ) async throws(JobError) -> ([UInt8], MemoryHold?) {
    let answer = try await get(url, signed: signed, validators: nil, range: range)
    guard case .downloaded(let part) = answer.result, let got = answer.partial, got.total == total,
      got.range.lowerBound == range.lowerBound
    else {
      throw JobError(
        .fetchFailed,
        "\(SourceURL.shown(url)) answered bytes \(range.lowerBound)-\(range.upperBound - 1) with other bytes (did it change while read?)"
      )
    }
    return (part.content.head, part.hold)
  }

  /// One GET (of `range`, when given), retrying transient failures within `limits.totalTimeout`: what it
  /// came to, and a 206's range and the object's size.
  private func get(
    _ url: String, signed: SignedGet?, validators: Validators?, range: Range<Int>?
  ) async throws(JobError) -> (result: FetchResult, partial: (range: Range<Int>, total: Int)?) {
    let cancellation = TransferCancellation()
    let deadline = ContinuousClock.now + .milliseconds(Int(limits.totalTimeout * 1000))
    var tryNumber = 0
    while true {
      tryNumber += 1
      let secondsLeft = ContinuousClock.now.duration(to: deadline).inSeconds
      guard secondsLeft > 0.01 else {
        throw JobError(.timeout, "\(SourceURL.shown(url)): no answer within \(limits.totalTimeout) s")
      }
      let transfer = try Transfer(
        url: url, signed: signed, validators: validators, limits: limits, addressPolicy: addressPolicy,
        timeout: secondsLeft,
        cancellation: cancellation, memory: memory, range: range,
        // Only an answer that may be the whole file: a range from 0 may come back whole (an origin
        // that ignores ranges), a later part may not (`part` refuses it).
        hashesBody: hashesBodies && (range?.lowerBound ?? 0) == 0, spool: spool, planner: rangePlanner)
      let code = await multi.perform(transfer)
      if Task.isCancelled { cancellation.cancel() }
      let failure: TransferFailure
      switch transfer.outcome(code, url: url, limits: limits) {
      case .success(let result): return (result, transfer.partial)
      case .failure(let error):
        // Now, not when `transfer` goes: the retry's backoff would hold the partial body and its memory,
        // and the multi thread may still hold the transfer a moment after it resumed us.
        transfer.state.discardBody()
        failure = error
      }
      if failure.needsProbe, let sources, let bucket = S3Sources.object(in: url)?.bucket {
        throw await Self.resolveAccessDenied(
          failure.error, of: url, bucket: bucket, sources: sources, multi: multi)
      }
      guard failure.retryable, !cancellation.isCancelled else { throw failure.error }
      let decision = limits.retry.decide(
        afterTry: tryNumber, retryAfter: failure.retryAfterSeconds,
        secondsLeft: ContinuousClock.now.duration(to: deadline).inSeconds, unit: Double.random(in: 0..<1))
      switch decision {
      case .stop(let notBefore):
        var error = failure.error
        error.retryNotBeforeSeconds = notBefore
        if tryNumber > 1 { error.message += " (after \(tryNumber) tries)" }
        throw error
      case .retry(let seconds):
        try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
      }
    }
  }

  /// `fetch` without validators: the body, or the error.
  public func fetch(_ url: String) async throws(JobError) -> FetchedOriginal {
    switch try await fetch(url, revalidating: nil) {
    case .downloaded(let original): return original
    case .notModified:
      throw JobError(.httpError, "\(SourceURL.shown(url)) answered 304 to an unconditional GET")
    }
  }

  /// Refuses every scheme but http, https and (with source buckets) s3, and a URL that can never be
  /// fetched (`thumbs.enqueue` refuses those; one written into the table another way is `http_error`,
  /// final); for `s3://`, the signed GET that reads it.
  func signedGet(_ url: String) throws(JobError) -> SignedGet? {
    switch SourceURL.problem(url) {
    case nil: break
    case .unreadScheme?:
      throw JobError(.blockedSource, "only http, https and s3 URLs are fetched: \(SourceURL.shown(url))")
    case let problem?:
      throw JobError(.httpError, "the source URL \(SourceURL.shown(url)) \(problem)")
    }
    let lower = url.lowercased()
    if lower.hasPrefix("http://") || lower.hasPrefix("https://") { return nil }
    if lower.hasPrefix("s3://") {
      guard let sources, !sources.buckets.isEmpty else {
        throw JobError(
          .blockedSource,
          "\(SourceURL.shown(url)): this worker reads no buckets (--source-buckets is not set)")
      }
      return try sources.request(for: url)
    }
    throw JobError(.blockedSource, "only http, https and s3 URLs are fetched: \(SourceURL.shown(url))")
  }

  /// An AccessDenied for one original: if the bucket answers a missing key as missing, the credentials
  /// reach it and only this object is refused (a bucket policy or an ACL: `http_error`, final);
  /// otherwise it is the credentials' refusal, which defers the job (`storage_refused`).
  static func resolveAccessDenied(
    _ refusal: JobError, of url: String, bucket: String, sources: S3Sources, multi: CurlMulti
  ) async -> JobError {
    do throws(JobError) {
      try await sources.checkBucket(bucket, multi: multi)
    } catch {
      return refusal
    }
    return JobError(
      .httpError,
      "\(SourceURL.shown(url)) answered HTTP 403 AccessDenied while its bucket answers this worker: the object itself is refused (a bucket policy or its ACL)"
    )
  }
}
