public import Blocking
import CCurlShim
import CLibCurl
import Foundation
public import ThumbCore

/// The limits every download runs under (`--fetch-timeout`, `--max-download-bytes`, ...).
public struct FetchLimits: Sendable {
  public var connectTimeout: Double = 10
  public var totalTimeout: Double = 30
  public var maxBytes: Int = 50 * 1024 * 1024
  public var maxRedirects: Int = 5
  /// A transfer slower than this many bytes per second for `lowSpeedSeconds` is abandoned (slow drip).
  public var lowSpeedBytesPerSecond: Int = 1024
  public var lowSpeedSeconds: Int = 10
  /// Tries within one attempt for transient failures, before the queue's own backoff takes over.
  public var tries: Int = 3
  public var retryBaseSeconds: Double = 0.25
  public var userAgent = "thumbd/0.1 (+thumbnail worker)"

  public init() {}
}

/// A downloaded original.
public struct FetchedOriginal: Sendable {
  public var bytes: [UInt8]
  public var contentType: String?
  public var effectiveURL: String
}

/// Downloads originals with libcurl on a blocking pool, under limits and the address guard.
public struct Fetcher: Sendable {
  public var limits: FetchLimits
  public var addressGuard: AddressGuard
  public let pool: BlockingPool

  public init(limits: FetchLimits, addressGuard: AddressGuard, pool: BlockingPool) {
    self.limits = limits
    self.addressGuard = addressGuard
    self.pool = pool
  }

  /// Fetches `url`, retrying transient failures (connection errors, timeouts, 5xx, 429) with backoff.
  /// Permanent refusals (404, other 4xx, blocked address, over the byte cap) end at once.
  ///
  /// Cancelling the calling task stops the transfer in progress (curl's callbacks see it within about a
  /// second) and any further tries.
  public func fetch(_ url: String) async throws(JobError) -> FetchedOriginal {
    try Self.checkScheme(url)
    let cancellation = TransferCancellation()
    // withTaskCancellationHandler does not carry typed throws: the Result does.
    let result: Result<FetchedOriginal, JobError> = await withTaskCancellationHandler {
      do throws(JobError) {
        return .success(try await fetchWithRetries(url, cancellation: cancellation))
      } catch {
        return .failure(error)
      }
    } onCancel: {
      cancellation.cancel()
    }
    return try result.get()
  }

  private func fetchWithRetries(
    _ url: String, cancellation: TransferCancellation
  ) async throws(JobError)
    -> FetchedOriginal
  {
    var lastError = JobError(.fetchFailed, "no attempt made")
    for attempt in 1...max(1, limits.tries) {
      let outcome = await pool.run { [limits, addressGuard] in
        Result { () throws(TransferFailure) -> FetchedOriginal in
          try Self.transfer(url, limits: limits, addressGuard: addressGuard, cancellation: cancellation)
        }
      }
      switch outcome {
      case .success(let original):
        return original
      case .failure(let failure):
        lastError = failure.error
        guard failure.retryable, attempt < limits.tries, !cancellation.isCancelled else {
          throw failure.error
        }
        let backoff = limits.retryBaseSeconds * Double(1 << (attempt - 1)) * Double.random(in: 0.75...1.25)
        let wait = min(failure.retryAfterSeconds ?? backoff, 10)
        try? await Task.sleep(for: .seconds(wait))
      }
    }
    throw lastError
  }

  static func checkScheme(_ url: String) throws(JobError) {
    let lower = url.lowercased()
    guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
      throw JobError(.blockedSource, "only http and https URLs are fetched: \(url.prefix(200))")
    }
  }

  struct TransferFailure: Error {
    var error: JobError
    var retryable: Bool
    var retryAfterSeconds: Double?
  }

  /// One blocking transfer.
  static func transfer(
    _ url: String, limits: FetchLimits, addressGuard: AddressGuard, cancellation: TransferCancellation
  ) throws(TransferFailure) -> FetchedOriginal {
    let curl: CurlEasy
    do { curl = try CurlEasy() } catch { throw TransferFailure(error: error, retryable: true) }
    let state = TransferState(
      maxBytes: limits.maxBytes, addressGuard: addressGuard, host: URLComponents(string: url)?.host,
      cancellation: cancellation)
    let userdata = Unmanaged.passUnretained(state).toOpaque()
    curl.set(CURLOPT_URL, url)
    curl.set(CURLOPT_PROTOCOLS_STR, "http,https")
    curl.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
    curl.set(CURLOPT_FOLLOWLOCATION, 1)
    curl.set(CURLOPT_MAXREDIRS, limits.maxRedirects)
    curl.set(CURLOPT_NOSIGNAL, 1)  // no SIGALRM for DNS timeouts: we are multi-threaded
    curl.set(CURLOPT_CONNECTTIMEOUT_MS, Int(limits.connectTimeout * 1000))
    curl.set(CURLOPT_TIMEOUT_MS, Int(limits.totalTimeout * 1000))
    curl.set(CURLOPT_LOW_SPEED_LIMIT, limits.lowSpeedBytesPerSecond)
    curl.set(CURLOPT_LOW_SPEED_TIME, limits.lowSpeedSeconds)
    curl.setOffset(CURLOPT_MAXFILESIZE_LARGE, limits.maxBytes)  // refuses a too-large Content-Length up front
    curl.set(CURLOPT_USERAGENT, limits.userAgent)
    curl.set(CURLOPT_SSL_VERIFYPEER, 1)
    curl.set(CURLOPT_SSL_VERIFYHOST, 2)
    // Identity only: a compressed body would expand past the byte cap after the cap was checked.
    curl.set(CURLOPT_HTTP_CONTENT_DECODING, 0)
    _ = thumbd_curl_setopt_write_function(curl.handle, writeBody)
    _ = thumbd_curl_setopt_pointer(curl.handle, CURLOPT_WRITEDATA, userdata)
    _ = thumbd_curl_setopt_header_function(curl.handle, readHeader)
    _ = thumbd_curl_setopt_pointer(curl.handle, CURLOPT_HEADERDATA, userdata)
    _ = thumbd_curl_setopt_prereq_function(curl.handle, checkConnectedAddress)
    _ = thumbd_curl_setopt_pointer(curl.handle, CURLOPT_PREREQDATA, userdata)
    curl.set(CURLOPT_NOPROGRESS, 0)  // turns the progress callback on, for cancellation
    _ = thumbd_curl_setopt_xferinfo_function(curl.handle, checkCancellation)
    _ = thumbd_curl_setopt_pointer(curl.handle, CURLOPT_XFERINFODATA, userdata)

    let code = withExtendedLifetime(state) { curl_easy_perform(curl.handle) }
    let status = curl.info(long: CURLINFO_RESPONSE_CODE)
    let shortURL = String(url.prefix(200))

    if cancellation.isCancelled {
      throw TransferFailure(
        error: JobError(.internalError, "\(shortURL): download cancelled"), retryable: false)
    }
    if let blocked = state.blockedAddress {
      throw TransferFailure(
        error: JobError(.blockedSource, "\(shortURL) connects to \(blocked), a private or reserved address"),
        retryable: false)
    }
    if state.overLimit || code == CURLE_FILESIZE_EXCEEDED {
      throw TransferFailure(
        error: JobError(
          .tooLarge, "\(shortURL) is larger than the \(ByteSize.format(limits.maxBytes)) download limit"),
        retryable: false)
    }
    if code != CURLE_OK {
      let message = String(cString: curl_easy_strerror(code))
      switch code {
      case CURLE_OPERATION_TIMEDOUT:
        throw TransferFailure(error: JobError(.timeout, "\(shortURL): \(message)"), retryable: true)
      case CURLE_UNSUPPORTED_PROTOCOL:
        throw TransferFailure(error: JobError(.blockedSource, "\(shortURL): \(message)"), retryable: false)
      case CURLE_TOO_MANY_REDIRECTS:
        throw TransferFailure(error: JobError(.httpError, "\(shortURL): \(message)"), retryable: false)
      case CURLE_URL_MALFORMAT:
        throw TransferFailure(error: JobError(.httpError, "\(shortURL): \(message)"), retryable: false)
      default:
        throw TransferFailure(error: JobError(.fetchFailed, "\(shortURL): \(message)"), retryable: true)
      }
    }
    switch status {
    case 200..<300:
      return FetchedOriginal(
        bytes: state.body, contentType: curl.info(string: CURLINFO_CONTENT_TYPE),
        effectiveURL: curl.info(string: CURLINFO_EFFECTIVE_URL) ?? url)
    case 404, 410:
      throw TransferFailure(
        error: JobError(.notFound, "\(shortURL) answered HTTP \(status)"), retryable: false)
    case 408, 429, 500..<600:
      let retryAfter = state.retryAfter.flatMap(Double.init)
      throw TransferFailure(
        error: JobError(.fetchFailed, "\(shortURL) answered HTTP \(status)"), retryable: true,
        retryAfterSeconds: retryAfter)
    default:
      throw TransferFailure(
        error: JobError(.httpError, "\(shortURL) answered HTTP \(status)"), retryable: false)
    }
  }
}
