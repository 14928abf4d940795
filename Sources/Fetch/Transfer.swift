import Admission
import CCurlShim
import CLibCurl
import Foundation
import ThumbCore
import Transport

/// One HTTP GET of an original: its curl handle, configured with every limit and guard, and the state
/// its callbacks fill in.
///
/// @unchecked Sendable: it is built by the fetching task, then touched only by the CurlMulti thread until
/// the transfer ends, then only by the fetching task again (CurlMulti's continuation orders the
/// hand-overs).
final class Transfer: CurlTransfer, @unchecked Sendable {
  let easy: CurlEasy
  let state: TransferState
  /// An original in object storage (`s3://`): its answers are S3's (NoSuchKey, AccessDenied, ...).
  let fromObjectStorage: Bool
  var cancellation: TransferCancellation { state.cancellation }
  /// curl's receive buffer per transfer (CURLOPT_BUFFERSIZE; curl's own default is 16 KiB). It is
  /// allocated while the transfer runs, outside the memory budget: a few transfers at once hold a few
  /// MiB.
  static let receiveBufferBytes = 256 << 10

  /// `signed`: an `s3://` original, read at its HTTP URL with SigV4 from the operator's own endpoint
  /// (no address check, no redirects); nil: `url` itself, under every guard.
  init(
    url: String, signed: SignedGet? = nil, validators: Validators?, limits: FetchLimits,
    addressPolicy: AddressPolicy, timeout: Double, cancellation: TransferCancellation, memory: AdmissionGate?,
    range: Range<Int>? = nil, hashesBody: Bool = false, spool: Spool? = nil,
    planner: (any RangePlanner)? = nil
  ) throws(JobError) {
    guard let easy = CurlEasy() else { throw JobError(.internalError, "curl_easy_init failed") }
    self.easy = easy
    fromObjectStorage = signed != nil
    let policy =
      signed == nil ? addressPolicy.policy(host: URLComponents(string: url)?.host) : { @Sendable _ in true }
    state = TransferState(
      handle: easy.handle, maxBytes: limits.maxBytes, addressCheck: AddressCheck(permits: policy),
      cancellation: cancellation, memory: memory, hashesBody: hashesBody, spool: spool,
      planner: planner)
    let userdata = Unmanaged.passUnretained(state).toOpaque()
    easy.setRequestBasics(
      url: signed?.url ?? url, connectTimeout: limits.connectTimeout, timeout: timeout,
      userAgent: limits.userAgent)
    var headers: [String] = []
    if let signed {
      // S3 answers a wrong region or endpoint with a redirect: a refusal to report, not to follow.
      easy.sign(with: signed.signing)
      headers += signed.headers
    } else {
      // Only http and https, for the first request and for every redirect: file://, gopher:// and the
      // rest of curl's protocols end as CURLE_UNSUPPORTED_PROTOCOL.
      easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
      easy.set(CURLOPT_FOLLOWLOCATION, 1)
      easy.set(CURLOPT_MAXREDIRS, limits.maxRedirects)
    }
    easy.set(CURLOPT_LOW_SPEED_LIMIT, limits.lowSpeedBytesPerSecond)
    easy.set(CURLOPT_LOW_SPEED_TIME, limits.lowSpeedSeconds)
    // Reads of up to `receiveBufferBytes`: a fast origin's 4 MB photo arrives in a few dozen reads and
    // write callbacks instead of curl's default of one per 16 KiB.
    easy.set(CURLOPT_BUFFERSIZE, Self.receiveBufferBytes)
    // Refuses a Content-Length over the cap before any body arrives; the write callback enforces the
    // cap on what actually arrives (no length, a lying length, a compressed body). With a spool, the cap
    // in memory is the write callback's, and the spool's is the largest body.
    easy.setOffset(
      CURLOPT_MAXFILESIZE_LARGE, state.spool.map { max($0.capacity, limits.maxBytes) } ?? limits.maxBytes)
    if let range {
      // A range of the stored bytes (not of a compressed rendition of them: no Accept-Encoding).
      headers.append("Range: bytes=\(range.lowerBound)-\(range.upperBound - 1)")
    } else {
      // gzip, deflate, br and zstd are accepted and decoded; the cap counts decoded bytes, so a gzip
      // bomb stops at the cap, within the decoder's fixed-size buffer.
      easy.set(CURLOPT_ACCEPT_ENCODING, "")
    }
    // No CURLOPT_PIPEWAIT: with it, transfers started together towards an HTTP/1.1 origin queued behind
    // the first one's connection until that whole transfer ended (measured: a slow drip held three quick
    // downloads for its full 6 s). Without it a new transfer multiplexes onto an HTTP/2 connection that
    // is already up, and otherwise opens its own.
    if let validators {
      if let etag = validators.etag { headers.append("If-None-Match: \(etag)") }
      if let date = validators.lastModified { headers.append("If-Modified-Since: \(date)") }
    }
    if !headers.isEmpty { easy.setHeaders(headers) }
    _ = thumbd_curl_setopt_write_function(easy.handle, writeBody)
    _ = thumbd_curl_setopt_pointer(easy.handle, CURLOPT_WRITEDATA, userdata)
    _ = thumbd_curl_setopt_header_function(easy.handle, readHeader)
    _ = thumbd_curl_setopt_pointer(easy.handle, CURLOPT_HEADERDATA, userdata)
    state.addressCheck.install(on: easy)
    // No progress callback for cancellation: CurlMulti removes a cancelled transfer itself, at once.
  }

  /// The HTTP status of the answer (0 before one).
  var status: Int { easy.info(long: CURLINFO_RESPONSE_CODE) }

  /// A 206's range and the whole object's size, from `Content-Range: bytes FIRST-LAST/TOTAL`.
  var partial: (range: Range<Int>, total: Int)? {
    guard status == 206, let value = state.contentRange?.lowercased(), value.hasPrefix("bytes ") else {
      return nil
    }
    let fields = value.dropFirst(6).split(separator: "/")
    guard fields.count == 2, let total = Int(fields[1].trimmingCharacters(in: .whitespaces)) else {
      return nil
    }
    let bounds = fields[0].split(separator: "-")
    guard bounds.count == 2, let first = Int(bounds[0]), let last = Int(bounds[1]), first <= last,
      last < total
    else { return nil }
    return (first..<(last + 1), total)
  }

  /// The thread that runs the transfer resumes it when the memory budget has room again.
  func willStart(on multi: CurlMulti) { state.multi = multi }

  /// What the ended transfer comes to: the body, a 304, or a classified failure saying whether another
  /// try could help.
  func outcome(_ code: CURLcode, url: String, limits: FetchLimits) -> Result<FetchResult, TransferFailure> {
    let shortURL = SourceURL.shown(url)
    if state.cancellation.isCancelled {
      return .failure(TransferFailure(JobError(.internalError, "\(shortURL): download cancelled")))
    }
    // Only when the transfer failed: a host with several addresses may have had one refused and
    // connected to another that is allowed.
    if code != CURLE_OK, let blocked = state.addressCheck.blockedAddress {
      return .failure(
        TransferFailure(
          JobError(.blockedSource, "\(shortURL) connects to \(blocked), a private or reserved address")))
    }
    if let (message, final) = state.spoolFailure {
      // Too large for the spool however empty it is: refused for good; otherwise another try may find
      // room (the spool is shared by the worker's downloads) or a disk with space.
      if final { return .failure(TransferFailure(JobError(.tooLarge, "\(shortURL) is \(message)"))) }
      return .failure(TransferFailure(JobError(.fetchFailed, "\(shortURL): \(message)"), retryable: true))
    }
    if code == CURLE_FILESIZE_EXCEEDED, let spool = state.spool, spool.capacity > limits.maxBytes {
      return .failure(
        TransferFailure(
          JobError(
            .tooLarge,
            "\(shortURL) is larger than the \(ByteSize.format(spool.capacity)) spool (--max-spool-bytes)")))
    }
    if state.overLimit || code == CURLE_FILESIZE_EXCEEDED {
      return .failure(
        TransferFailure(
          JobError(
            .tooLarge, "\(shortURL) is larger than the \(ByteSize.format(limits.maxBytes)) download limit")))
    }
    if code != CURLE_OK {
      let message = "\(shortURL): \(String(cString: curl_easy_strerror(code)))"
      switch code {
      case CURLE_OPERATION_TIMEDOUT:
        // Also the low-speed limit: curl reports a slow drip as a timeout.
        return .failure(TransferFailure(JobError(.timeout, message), retryable: true))
      case CURLE_UNSUPPORTED_PROTOCOL:
        return .failure(TransferFailure(JobError(.blockedSource, message)))
      case CURLE_TOO_MANY_REDIRECTS, CURLE_URL_MALFORMAT:
        return .failure(TransferFailure(JobError(.httpError, message)))
      case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE:
        // A certificate that does not verify will not verify on the next try either.
        return .failure(TransferFailure(JobError(.fetchFailed, message)))
      default:
        // Connection refused or reset, DNS failure, truncated body (CURLE_PARTIAL_FILE), ...
        return .failure(TransferFailure(JobError(.fetchFailed, message), retryable: true))
      }
    }
    let status = easy.info(long: CURLINFO_RESPONSE_CODE)
    let validators = Validators(etag: state.etag, lastModified: state.lastModified)
    switch status {
    case 200..<300:
      var original = FetchedOriginal(
        content: .whole(state.body), contentType: easy.info(string: CURLINFO_CONTENT_TYPE),
        effectiveURL: fromObjectStorage ? url : easy.info(string: CURLINFO_EFFECTIVE_URL) ?? url,
        validators: validators,
        hold: state.reservation?.seal(), memoryPauses: state.memoryPauses)
      original.sha256 = state.bodyHash?.hexDigest()
      original.spooled = state.spooled
      return .success(.downloaded(original))
    case 304:
      return .success(.notModified(validators))
    case _ where fromObjectStorage:
      return .failure(S3Sources.failure(status: status, body: state.body, url: url))
    case 404, 410:
      return .failure(TransferFailure(JobError(.notFound, "\(shortURL) answered HTTP \(status)")))
    case 408, 429, 500..<600:
      let retryAfter = state.retryAfter.flatMap {
        RetryAfter.seconds($0, now: Date().timeIntervalSince1970)
      }
      return .failure(
        TransferFailure(
          JobError(.fetchFailed, "\(shortURL) answered HTTP \(status)"), retryable: true,
          retryAfterSeconds: retryAfter))
    case 400, 403:
      // A presigned URL refused once it expired (or within the clocks' skew of it) will never be
      // accepted again: the backend has to enqueue a fresh one.
      if let expiry = SourceURL.expiry(url), expiry <= Date().timeIntervalSince1970 + Self.clockSkewSeconds {
        let expired = Date(timeIntervalSince1970: expiry).formatted(.iso8601)
        return .failure(
          TransferFailure(
            JobError(
              .sourceExpired, "\(shortURL) answered HTTP \(status): the presigned URL expired at \(expired)"))
        )
      }
      return .failure(TransferFailure(JobError(.httpError, "\(shortURL) answered HTTP \(status)")))
    default:
      return .failure(TransferFailure(JobError(.httpError, "\(shortURL) answered HTTP \(status)")))
    }
  }

  /// How far the origin's clock may run ahead of ours for a refusal near the expiry to count as one.
  static let clockSkewSeconds: Double = 300
}

/// Why one try failed, and whether another could succeed.
struct TransferFailure: Error {
  var error: JobError
  var retryable = false
  var retryAfterSeconds: Double?
  /// An object storage's AccessDenied: about this object, or about the credentials? Asking the bucket
  /// for a missing key tells (S3Sources.checkBucket).
  var needsProbe = false

  init(_ error: JobError, retryable: Bool = false, retryAfterSeconds: Double? = nil) {
    self.error = error
    self.retryable = retryable
    self.retryAfterSeconds = retryAfterSeconds
  }
}
