import Blocking
public import CCurlShim
import Foundation
import Synchronization

/// One transfer CurlMulti can run: a configured easy handle and the flag that abandons it.
public protocol CurlTransfer: AnyObject, Sendable {
  var easy: CurlEasy { get }
  var cancellation: TransferCancellation { get }
  /// Called once, on the calling task, just before the transfer is handed to `multi`'s thread.
  func willStart(on multi: CurlMulti)
}

extension CurlTransfer {
  public func willStart(on multi: CurlMulti) {}
}

/// Drives every HTTP transfer of the process on one thread, with libcurl's multi interface: downloads of
/// originals and uploads to object storage alike.
///
/// A transfer waiting on a slow origin costs a socket and a few kilobytes here, not a thread; the multi
/// handle keeps one connection cache and one DNS cache for all transfers, so a second original from the
/// same origin reuses the warm keep-alive connection (or an HTTP/2 stream on it) instead of paying for a
/// new TCP and TLS handshake. curl's callbacks (body, headers, address guard) run on this thread, so they
/// must stay short: they copy bytes and check flags, nothing more.
///
/// A worker owns one and shuts it down last, once no job can start a transfer any more (the Worker's
/// service group); `shared` serves everything else (the `thumbnail` command, tests) and lives as long as
/// the process. Transfers are `CurlTransfer`s: Fetch's downloads, and `HTTPCall` for everything else.
public final class CurlMulti: Sendable {
  public static let shared = CurlMulti(maxConnections: 256)

  /// The multi handle. Only the loop thread calls curl on it, except curl_multi_wakeup, which libcurl
  /// documents as safe from any thread.
  private nonisolated(unsafe) let multi: UnsafeMutableRawPointer
  /// A transfer and the task waiting for its end.
  private struct Running {
    let transfer: any CurlTransfer
    let finished: CheckedContinuation<CURLcode, Never>

    func finish(_ code: CURLcode) { finished.resume(returning: code) }
  }

  /// Transfers to add, and whether the loop still takes them (false once shut down).
  private let inbox = Mutex<(transfers: [Running], open: Bool)>(([], true))
  /// Resumed by the loop thread when it has ended every transfer and freed the multi handle.
  private let ended = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
  /// Transfers paused for memory to resume, by handle address.
  private let resumptions = Mutex<[UInt]>([])

  public init(maxConnections: Int = 256) {
    precondition(CurlGlobal.initialised, "curl_global_init failed")
    multi = curl_multi_init()
    // Bounds open sockets across all origins; transfers beyond it wait in curl's own queue.
    _ = thumbd_curl_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, maxConnections)
    _ = thumbd_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
    let thread = Thread { [self] in
      nameCurrentThread("thumbd-curl")
      self.loop()
    }
    thread.start()
  }

  /// Runs `transfer` to its end and returns curl's result. Cancelling the calling task sets the
  /// transfer's cancellation flag and wakes the loop, which removes the transfer at once.
  public func perform(_ transfer: some CurlTransfer) async -> CURLcode {
    transfer.willStart(on: self)
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        let running = Running(transfer: transfer, finished: continuation)
        let accepted = inbox.withLock { inbox in
          if inbox.open { inbox.transfers.append(running) }
          return inbox.open
        }
        if accepted { curl_multi_wakeup(multi) } else { running.finish(CURLE_ABORTED_BY_CALLBACK) }
      }
    } onCancel: {
      transfer.cancellation.cancel()
      curl_multi_wakeup(multi)
    }
  }

  /// Resumes a transfer paused by its write callback (the memory budget had no room). Callable from any
  /// thread; a transfer that ended meanwhile is ignored.
  public func resume(_ handle: UInt) {
    resumptions.withLock { $0.append(handle) }
    curl_multi_wakeup(multi)
  }

  /// Ends the loop: transfers still running end as aborted, later ones are refused at once. Returns
  /// when the thread has let go of the multi handle.
  public func shutdown() async {
    inbox.withLock { $0.open = false }
    curl_multi_wakeup(multi)
    await withCheckedContinuation { continuation in
      let done = ended.withLock { ended in
        if !ended.done { ended.waiters.append(continuation) }
        return ended.done
      }
      if done { continuation.resume() }
    }
  }

  private func loop() {
    var active: [UnsafeMutableRawPointer: Running] = [:]
    while true {
      let (arrived, open) = inbox.withLock { inbox in
        defer { inbox.transfers.removeAll() }
        return (inbox.transfers, inbox.open)
      }
      guard open else {
        for (handle, transfer) in active {
          curl_multi_remove_handle(multi, handle)
          transfer.finish(CURLE_ABORTED_BY_CALLBACK)
        }
        arrived.forEach { $0.finish(CURLE_ABORTED_BY_CALLBACK) }
        curl_multi_cleanup(multi)
        let waiters = ended.withLock { ended in
          ended.done = true
          defer { ended.waiters = [] }
          return ended.waiters
        }
        waiters.forEach { $0.resume() }
        return
      }
      for transfer in arrived {
        if transfer.transfer.cancellation.isCancelled {
          transfer.finish(CURLE_ABORTED_BY_CALLBACK)
        } else if curl_multi_add_handle(multi, transfer.transfer.easy.handle) == CURLM_OK {
          active[transfer.transfer.easy.handle] = transfer
        } else {
          transfer.finish(CURLE_FAILED_INIT)
        }
      }
      for address in resumptions.withLock({ pending in
        defer { pending.removeAll() }; return pending
      }) {
        // Only a transfer still running here: another handle may since have been given the same address,
        // and resuming a transfer that is not paused does nothing.
        if let handle = UnsafeMutableRawPointer(bitPattern: address), active[handle] != nil {
          _ = thumbd_curl_resume(handle)
        }
      }
      // A cancelled transfer leaves now, not at its next callback (which a stalled origin may delay).
      for (handle, transfer) in active where transfer.transfer.cancellation.isCancelled {
        curl_multi_remove_handle(multi, handle)
        active[handle] = nil
        transfer.finish(CURLE_ABORTED_BY_CALLBACK)
      }
      var running: Int32 = 0
      curl_multi_perform(multi, &running)
      var easy: UnsafeMutableRawPointer? = nil
      var result = CURLE_OK
      while thumbd_curl_multi_next_done(multi, &easy, &result) == 1 {
        guard let handle = easy, let transfer = active.removeValue(forKey: handle) else { continue }
        curl_multi_remove_handle(multi, handle)
        transfer.finish(result)
      }
      // Sleeps until a socket is ready, a curl timer is due (at most a second away), or a new or cancelled
      // transfer calls curl_multi_wakeup.
      var ready: Int32 = 0
      curl_multi_poll(multi, nil, 0, 1000, &ready)
    }
  }
}
