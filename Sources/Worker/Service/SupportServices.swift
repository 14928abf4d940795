import Blocking
import Fetch
import Queue
import ServiceLifecycle
import Transport

/// The LISTEN connection's thread, as a service: started with the group, stopped after the keeper.
struct ListenerService: Service {
  let listener: NotificationListener
  let pool: BlockingPool

  func run() async throws {
    listener.start()
    try? await gracefulShutdown()
    // stop() joins the listener's thread (at once: a pipe wakes its poll): a blocking call, on the pool.
    await pool.run { listener.stop() }
  }
}

/// The curl transfer thread, as a service: the first in the group, so the last to stop, when no job can
/// start a transfer any more.
struct TransferThreadService: Service {
  let multi: CurlMulti

  func run() async throws {
    try? await gracefulShutdown()
    await multi.shutdown()
  }
}
