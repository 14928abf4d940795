import Blocking
import Fetch
import Queue
import ServiceLifecycle
import Transport

/// The LISTEN connection's thread, as a service: started with the group, stopped after the keeper.
struct ListenerService: Service {
  let listener: NotificationListener
  /// Woken for each notification: the producer's.
  let wake: WakeSignal
  /// Raised for each notification before the wake, when the waiting side tells them from other wakes.
  var notified: RaisedFlag? = nil
  let pool: BlockingPool
  let activity: ServiceActivity.Reporter

  func run() async throws {
    listener.start()
    await withDiscardingTaskGroup { group in
      group.addTask {
        for await _ in listener.notifications {
          notified?.raise()
          wake.signal()
        }
      }
      activity.awaiting("its turn to stop (listening)")
      try? await gracefulShutdown()
      // stop() joins the listener's thread (at once: a pipe wakes its poll): a blocking call, on the
      // pool. It ends the notifications, and with them the task above.
      activity.awaiting("the LISTEN thread to end")
      await pool.run { listener.stop() }
    }
  }
}

/// The curl transfer thread, as a service: the first in the group, so the last to stop, when no job can
/// start a transfer any more.
struct TransferThreadService: Service {
  let multi: CurlMulti
  let activity: ServiceActivity.Reporter

  func run() async throws {
    activity.awaiting("its turn to stop (transferring)")
    try? await gracefulShutdown()
    activity.awaiting("the transfer thread to end")
    await multi.shutdown()
  }
}
