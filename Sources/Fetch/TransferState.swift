import Admission
import CCurlShim
import CLibCurl
import Foundation
import Hashing
import ThumbCore
import Transport

/// Per-transfer state that curl's C callbacks reach through their userdata pointer.
///
/// @unchecked Sendable: it is touched only by the one thread running the transfer.
final class TransferState: @unchecked Sendable {
  let handle: UnsafeMutableRawPointer
  let maxBytes: Int
  /// Holds every connection to the address guard; its refusal, if any, is the transfer's error.
  let addressCheck: AddressCheck
  let cancellation: TransferCancellation
  /// What the body is counted against (nil: no memory budget).
  let reservation: BodyReservation?
  var body: [UInt8] = []
  /// The body's SHA-256 as it arrives (nil: not wanted). Fed exactly what `body` gets.
  let bodyHash: StreamingSHA256?
  /// Times the transfer paused because the memory budget had no room for its next bytes.
  var memoryPauses = 0
  /// The thread running this transfer, which resumes it when memory comes back (set before it starts).
  var multi: CurlMulti?
  var overLimit = false
  /// Where a body over `maxBytes` goes when it is a format read by ranges (nil: nowhere, too_large).
  let spool: Spool?
  /// Says whether a body that begins so can be read in parts (the spool takes only those).
  let planner: (any RangePlanner)?
  /// The file the body went to instead of `body`, once it crossed `maxBytes`.
  var spooled: SpooledFile?
  /// Why the body could not be spooled (the file could not be made or written, the spool is full).
  var spoolFailure: (message: String, final: Bool)?
  // Headers of the last response (a redirect's headers are forgotten when the next response starts).
  var retryAfter: String?
  var etag: String?
  var lastModified: String?
  /// A 206's `Content-Range` ("bytes 0-262143/209715200").
  var contentRange: String?

  init(
    handle: UnsafeMutableRawPointer, maxBytes: Int, addressCheck: AddressCheck,
    cancellation: TransferCancellation, memory: AdmissionGate?, hashesBody: Bool = false, spool: Spool? = nil,
    planner: (any RangePlanner)? = nil
  ) {
    self.spool = planner == nil ? nil : spool
    self.planner = planner
    self.bodyHash = hashesBody ? StreamingSHA256() : nil
    self.reservation = memory.map(BodyReservation.init)
    self.handle = handle
    self.maxBytes = maxBytes
    self.addressCheck = addressCheck
    self.cancellation = cancellation
  }

  /// Frees a failed transfer's partial body and gives its memory back. Only once the transfer has ended.
  func discardBody() {
    body = []
    spooled = nil
    reservation?.giveBack()
  }

  /// The body's next capacity once it must hold `needed` bytes: the announced length when there is one
  /// (one allocation instead of doubling through it, which would briefly hold one and a half times the
  /// body), otherwise twice the current capacity; never over the cap.
  func nextCapacity(holding needed: Int) -> Int {
    let announced = announcedLength
    // A body announced over the cap is kept in memory only until it can be told apart (then spooled,
    // or refused).
    if spool != nil, announced > maxBytes { return min(max(needed, Self.sniffBytes), maxBytes) }
    let wanted = announced >= needed ? announced : max(needed, 2 * body.capacity, 256 * 1024)
    return min(wanted, maxBytes)
  }

  /// The answer's Content-Length (-1: none).
  var announcedLength: Int {
    var announced: curl_off_t = -1
    _ = thumbd_curl_getinfo_off_t(handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced)
    return Int(announced)
  }

  /// Bytes enough to tell the formats apart (an ISO file's `ftyp` box is read whole, up to 4 KiB).
  static let sniffBytes = 4096

  /// Whether the body, with `chunk` to come, must leave memory now: it crossed the cap, or it is
  /// announced over the cap and enough of it is in to tell what it is.
  func mustLeaveMemory(needed: Int) -> Bool {
    needed > maxBytes || (spool != nil && needed >= Self.sniffBytes && announcedLength > maxBytes)
  }

  /// Sends the body to a spool file from here on, with `chunk` the bytes just arrived, when it is a
  /// format read by ranges (a video): its parts are read from the file, and only they take memory.
  /// False: it stays a body over the cap (too_large), or the spool failed (`spoolFailure`).
  func startSpooling(with chunk: UnsafeRawBufferPointer) -> Bool {
    guard let spool, let planner else { return false }
    let head = Array(body.prefix(Self.sniffBytes)) + Array(chunk.prefix(max(0, Self.sniffBytes - body.count)))
    guard planner.readsInParts(head: head) else { return false }
    let file: SpooledFile
    do { file = try SpooledFile(in: spool) } catch {
      spoolFailure = (error.message, false)
      return false
    }
    let written = body.withUnsafeBytes { held in
      held.isEmpty || file.append(held.baseAddress!, count: held.count)
    }
    guard written, chunk.isEmpty || file.append(chunk.baseAddress!, count: chunk.count) else {
      spoolFailure = (file.failure ?? "the spool failed", file.tooLarge)
      return false
    }
    body = []
    reservation?.giveBack()
    spooled = file
    return true
  }
}

// The C callbacks. They capture nothing (C function pointers cannot), and find their state via userdata.

let writeBody: thumbd_curl_data_callback = { data, size, count, userdata in
  let state = Unmanaged<TransferState>.fromOpaque(userdata!).takeUnretainedValue()
  let length = size * count
  if state.cancellation.isCancelled { return 0 }  // curl aborts with CURLE_WRITE_ERROR
  if let file = state.spooled {
    guard let data, file.append(data, count: length) else {
      state.spoolFailure = (file.failure ?? "the spool failed", file.tooLarge)
      return 0
    }
    state.bodyHash?.update(UnsafeRawBufferPointer(start: data, count: length))
    return length
  }
  let needed = state.body.count + length
  // The cap is enforced while receiving, so a lying or missing Content-Length cannot blow memory.
  if state.mustLeaveMemory(needed: needed) {
    let chunk = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : length)
    if state.startSpooling(with: chunk) {
      state.bodyHash?.update(chunk)
      return length
    }
    if state.spoolFailure == nil { state.overLimit = true }
    return 0  // curl aborts the transfer with CURLE_WRITE_ERROR
  }
  if needed > state.body.capacity {
    let target = state.nextCapacity(holding: needed)
    if let reservation = state.reservation, target > reservation.bytes {
      // Counted before it is allocated. Refused: curl keeps this chunk, stops reading the socket, and
      // delivers the chunk again once CurlMulti is asked to resume the transfer.
      let transfer = UInt(bitPattern: state.handle)
      guard
        reservation.take(
          target - reservation.bytes, orWake: { [multi = state.multi] in multi?.resume(transfer) })
      else {
        state.memoryPauses += 1
        return thumbd_curl_writefunc_pause()
      }
    }
    state.body.reserveCapacity(target)
  }
  if let data {
    data.withMemoryRebound(to: UInt8.self, capacity: length) {
      state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
    }
    state.bodyHash?.update(UnsafeRawBufferPointer(start: data, count: length))
  }
  return length
}

let readHeader: thumbd_curl_data_callback = { data, size, count, userdata in
  let state = Unmanaged<TransferState>.fromOpaque(userdata!).takeUnretainedValue()
  let length = size * count
  guard let data else { return length }
  switch HeaderLine(UnsafeRawBufferPointer(start: data, count: length)) {
  case .status: (state.retryAfter, state.etag, state.lastModified, state.contentRange) = (nil, nil, nil, nil)
  case .field("content-range", let value): state.contentRange = value
  case .field("retry-after", let value): state.retryAfter = value
  case .field("etag", let value): state.etag = value
  case .field("last-modified", let value): state.lastModified = value
  case .field, .other: break
  }
  return length
}
