public import CCurlShim
import CLibCurl
import Foundation
import Synchronization

/// libcurl's global state, set up once before the first handle (curl_global_init is not thread-safe,
/// a Swift static initialiser runs exactly once).
public enum CurlGlobal {
  public static let initialised: Bool = curl_global_init(Int(CURL_GLOBAL_ALL)) == CURLE_OK
}

/// Set when the work a transfer belongs to is abandoned (a job cancelled, its lease lost, handed back).
/// CurlMulti is woken when it is set and removes the transfer at once, instead of letting it run to its
/// timeout.
public final class TransferCancellation: Sendable {
  private let flag = Atomic<Bool>(false)

  public init() {}

  public var isCancelled: Bool { flag.load(ordering: .relaxed) }

  public func cancel() { flag.store(true, ordering: .relaxed) }
}

/// One curl easy handle and the request headers it points to, freed once in deinit.
///
/// @unchecked Sendable: used by one thread at a time (built by a task, driven by the CurlMulti thread,
/// read again by the task once the transfer ended).
public final class CurlEasy: @unchecked Sendable {
  public let handle: UnsafeMutableRawPointer
  private var headers: UnsafeMutablePointer<curl_slist>?

  /// nil when curl cannot make a handle (out of memory, or curl_global_init failed).
  public init?() {
    guard CurlGlobal.initialised, let handle = curl_easy_init() else { return nil }
    self.handle = handle
  }

  deinit {
    curl_easy_cleanup(handle)  // first: the handle points into the header list
    curl_slist_free_all(headers)
  }

  public func set(_ option: CURLoption, _ value: Int) {
    _ = thumbd_curl_setopt_long(handle, option, value)
  }

  public func set(_ option: CURLoption, _ value: String) {
    _ = thumbd_curl_setopt_string(handle, option, value)  // curl copies strings it is given
  }

  public func setOffset(_ option: CURLoption, _ value: Int) {
    _ = thumbd_curl_setopt_off_t(handle, option, curl_off_t(value))
  }

  /// Extra request headers. curl does not copy the list: this object keeps it until deinit.
  public func setHeaders(_ lines: [String]) {
    for line in lines { headers = curl_slist_append(headers, line) }
    _ = thumbd_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headers)
  }

  public func info(long info: CURLINFO) -> Int {
    var value = 0
    _ = thumbd_curl_getinfo_long(handle, info, &value)
    return value
  }

  public func info(string info: CURLINFO) -> String? {
    var value: UnsafePointer<CChar>? = nil
    _ = thumbd_curl_getinfo_string(handle, info, &value)
    return value.map { String(cString: $0) }
  }
}

extension CurlEasy {
  /// What every request of thumbd's sets: the URL, http and https only, no signals (the process is
  /// multi-threaded: no SIGALRM for DNS timeouts), the connection and whole-request time limits in
  /// seconds, the user agent, verified certificates, TCP keep-alive.
  public func setRequestBasics(url: String, connectTimeout: Double, timeout: Double, userAgent: String) {
    set(CURLOPT_URL, url)
    set(CURLOPT_PROTOCOLS_STR, "http,https")
    set(CURLOPT_NOSIGNAL, 1)
    set(CURLOPT_CONNECTTIMEOUT_MS, max(1, Int(min(connectTimeout, timeout) * 1000)))
    set(CURLOPT_TIMEOUT_MS, max(1, Int(timeout * 1000)))
    set(CURLOPT_USERAGENT, userAgent)
    set(CURLOPT_SSL_VERIFYPEER, 1)
    set(CURLOPT_SSL_VERIFYHOST, 2)
    set(CURLOPT_TCP_KEEPALIVE, 1)
  }
}

/// One line of a response's headers, as curl's header callback hands it over.
public enum HeaderLine: Equatable, Sendable {
  /// `HTTP/...`: a new response starts (after a redirect or a 100 Continue); forget the last one's.
  case status
  /// A header field, its name in lower case and its value trimmed.
  case field(name: String, value: String)
  /// The blank line that ends the headers, or anything else.
  case other

  public init(_ bytes: UnsafeRawBufferPointer) {
    let line = String(decoding: bytes, as: UTF8.self)
    if line.hasPrefix("HTTP/") {
      self = .status
    } else if let colon = line.firstIndex(of: ":") {
      let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
      self = .field(name: line[..<colon].lowercased(), value: value)
    } else {
      self = .other
    }
  }
}
