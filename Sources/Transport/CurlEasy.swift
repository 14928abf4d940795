public import CCurlShim
import CLibCurl
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
