public import CCurlShim
import Foundation

/// A request to a service (object storage, a webhook receiver), not an original: no redirects, a capped
/// answer, optionally signed with AWS Signature Version 4 by libcurl itself, and optionally held to an
/// address check before each connection.
public struct HTTPRequest: Sendable {
  public enum Method: String, Sendable {
    case get = "GET", head = "HEAD", put = "PUT", post = "POST", delete = "DELETE"
  }

  /// SigV4 signing: curl computes the canonical request and the Authorization header.
  public struct Signing: Sendable {
    /// `aws:amz:REGION:SERVICE`, curl's CURLOPT_AWS_SIGV4 form.
    public var scope: String
    public var accessKey: String
    public var secretKey: String

    public init(scope: String, accessKey: String, secretKey: String) {
      self.scope = scope
      self.accessKey = accessKey
      self.secretKey = secretKey
    }
  }

  public var method: Method
  public var url: String
  /// "Name: value" lines, all signed when `signing` is set.
  public var headers: [String]
  public var body: [UInt8]
  public var signing: Signing?
  public var connectTimeout: Double = 10
  /// The whole exchange, connection included.
  public var timeout: Double = 30
  /// Bytes of the answer's body kept (error documents are small; nothing here downloads objects).
  public var maxResponseBytes = 1 << 20
  public var userAgent = "thumbd"
  /// Asked with the numeric address of every connection curl is about to open (after DNS); false
  /// refuses it (the request fails, naming the address). nil: every address is fine.
  public var permitsAddress: (@Sendable (String) -> Bool)?

  public init(
    method: Method, url: String, headers: [String] = [], body: [UInt8] = [], signing: Signing? = nil
  ) {
    self.method = method
    self.url = url
    self.headers = headers
    self.body = body
    self.signing = signing
  }
}

extension CurlEasy {
  /// Has curl sign the request with AWS Signature Version 4 (it computes the canonical request and
  /// the Authorization header from the URL and every header set).
  public func sign(with signing: HTTPRequest.Signing) {
    set(CURLOPT_AWS_SIGV4, signing.scope)
    set(CURLOPT_USERNAME, signing.accessKey)
    set(CURLOPT_PASSWORD, signing.secretKey)
  }
}

/// What the service answered.
public struct HTTPResponse: Sendable {
  public var status: Int
  public var body: [UInt8]
  /// The answer's headers, names in lower case.
  public var headers: [String: String]

  public var text: String { String(decoding: body, as: UTF8.self) }
}

/// The exchange did not complete: no answer came (refused, reset, timed out, cancelled).
public struct HTTPTransportError: Error, Sendable, CustomStringConvertible {
  public var code: CURLcode
  public var description: String
  public var isCancelled: Bool { code == CURLE_ABORTED_BY_CALLBACK }
}

extension CurlMulti {
  /// Sends `request` on this transfer thread. Cancelling the calling task ends it at once.
  public func send(_ request: HTTPRequest) async -> Result<HTTPResponse, HTTPTransportError> {
    guard let call = HTTPCall(request) else {
      return .failure(HTTPTransportError(code: CURLE_FAILED_INIT, description: "curl_easy_init failed"))
    }
    let code = await perform(call)
    if Task.isCancelled { call.cancellation.cancel() }
    guard code == CURLE_OK, !call.cancellation.isCancelled else {
      var reason = call.cancellation.isCancelled ? "cancelled" : String(cString: curl_easy_strerror(code))
      if let blocked = call.addressCheck?.blockedAddress {
        reason = "\(blocked) is a private or reserved address"
      }
      let failed = call.cancellation.isCancelled ? CURLE_ABORTED_BY_CALLBACK : code
      return .failure(HTTPTransportError(code: failed, description: "\(request.method.rawValue): \(reason)"))
    }
    return .success(
      HTTPResponse(
        status: call.easy.info(long: CURLINFO_RESPONSE_CODE), body: call.response,
        headers: call.responseHeaders))
  }
}

/// One request's curl handle, the request body it points to, and the answer its callbacks collect.
///
/// @unchecked Sendable: built by the sending task, then touched only by the CurlMulti thread until the
/// transfer ends, then read by the sending task (CurlMulti's continuation orders the hand-overs).
final class HTTPCall: CurlTransfer, @unchecked Sendable {
  let easy: CurlEasy
  let cancellation = TransferCancellation()
  /// The request body. curl reads it in place (CURLOPT_POSTFIELDS does not copy): kept until deinit.
  private let body: UnsafeMutableRawBufferPointer
  private let maxResponseBytes: Int
  var response: [UInt8] = []
  var responseHeaders: [String: String] = [:]
  /// Holds the connections to `request.permitsAddress`, when it is set.
  let addressCheck: AddressCheck?

  init?(_ request: HTTPRequest) {
    guard let easy = CurlEasy() else { return nil }
    self.easy = easy
    maxResponseBytes = request.maxResponseBytes
    addressCheck = request.permitsAddress.map(AddressCheck.init)
    body = .allocate(byteCount: max(request.body.count, 1), alignment: 1)
    request.body.withUnsafeBytes { body.copyMemory(from: $0) }
    let userdata = Unmanaged.passUnretained(self).toOpaque()
    easy.setRequestBasics(
      url: request.url, connectTimeout: request.connectTimeout, timeout: request.timeout,
      userAgent: request.userAgent)
    switch request.method {
    case .get: break
    case .head: easy.set(CURLOPT_NOBODY, 1)
    case .delete: easy.set(CURLOPT_CUSTOMREQUEST, request.method.rawValue)
    case .post:
      _ = thumbd_curl_setopt_pointer(easy.handle, CURLOPT_POSTFIELDS, body.baseAddress)
      easy.setOffset(CURLOPT_POSTFIELDSIZE_LARGE, request.body.count)
    case .put:
      // The body from memory, sent with the request: unlike CURLOPT_UPLOAD, no `Expect: 100-continue`
      // round trip for bodies under a megabyte (and a suppressed Expect header breaks curl 7.88's
      // signature: it signs the empty header it does not send).
      easy.set(CURLOPT_CUSTOMREQUEST, request.method.rawValue)
      _ = thumbd_curl_setopt_pointer(easy.handle, CURLOPT_POSTFIELDS, body.baseAddress)
      easy.setOffset(CURLOPT_POSTFIELDSIZE_LARGE, request.body.count)
    }
    if let signing = request.signing { easy.sign(with: signing) }
    easy.setHeaders(request.headers)
    _ = thumbd_curl_setopt_write_function(easy.handle, collectBody)
    _ = thumbd_curl_setopt_pointer(easy.handle, CURLOPT_WRITEDATA, userdata)
    _ = thumbd_curl_setopt_header_function(easy.handle, collectHeader)
    _ = thumbd_curl_setopt_pointer(easy.handle, CURLOPT_HEADERDATA, userdata)
    addressCheck?.install(on: easy)
  }

  deinit {
    body.deallocate()
  }

  fileprivate func append(_ data: UnsafeMutablePointer<CChar>, _ length: Int) -> Bool {
    if cancellation.isCancelled { return false }
    let kept = min(length, max(0, maxResponseBytes - response.count))
    data.withMemoryRebound(to: UInt8.self, capacity: length) {
      response.append(contentsOf: UnsafeBufferPointer(start: $0, count: kept))
    }
    return true
  }

  fileprivate func header(_ line: HeaderLine) {
    switch line {
    case .status: responseHeaders = [:]
    case .field(let name, let value): responseHeaders[name] = value
    case .other: break
    }
  }
}

private let collectBody: thumbd_curl_data_callback = { data, size, count, userdata in
  let call = Unmanaged<HTTPCall>.fromOpaque(userdata!).takeUnretainedValue()
  let length = size * count
  guard let data else { return length }
  return call.append(data, length) ? length : 0
}

private let collectHeader: thumbd_curl_data_callback = { data, size, count, userdata in
  let call = Unmanaged<HTTPCall>.fromOpaque(userdata!).takeUnretainedValue()
  let length = size * count
  guard let data else { return length }
  call.header(HeaderLine(UnsafeRawBufferPointer(start: data, count: length)))
  return length
}
