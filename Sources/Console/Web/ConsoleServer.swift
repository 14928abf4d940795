public import Blocking
import Foundation
import Hummingbird
public import Logging
import NIOCore
import Queue
public import ServiceLifecycle
import Storage
public import ThumbCore
import Transport

/// `thumbd console`: the HTTP server and the live feed, as the services of one group. The feed stops
/// first at shutdown, which ends the pages' event streams, so the server can drain its connections.
public enum ConsoleServer {
  /// The services to run, in dependency order, and a call that releases what they hold once they ended.
  public static func services(
    settings: ConsoleSettings, pool: BlockingPool, logger: Logger,
    onListening: @escaping @Sendable (Int) -> Void = { _ in }
  ) throws(JobError) -> (services: [any Service], close: @Sendable () async -> Void) {
    let multi = CurlMulti(maxConnections: 16)
    let store = try settings.storage.map { settings throws(JobError) in
      try StorageURL.open(settings, pool: pool, multi: multi)
    }
    let database = ConsoleDatabase(conninfo: settings.databaseURL, pool: pool)
    let feed = LiveFeed(conninfo: settings.databaseURL)
    let routes = ConsoleRoutes(
      database: database, store: store, feed: feed, password: Password(settings.password),
      sessions: Sessions(), readOnly: settings.readOnly, logger: logger)
    let router = Router()
    routes.register(on: router)
    let app = Application(
      router: router,
      configuration: ApplicationConfiguration(
        address: .hostname(settings.host, port: settings.port), serverName: nil),
      onServerRunning: { channel in
        let port = channel.localAddress?.port ?? settings.port
        logger.info(
          "console listening", metadata: ["http.host": "\(settings.host)", "http.port": "\(port)"])
        onListening(port)
      },
      logger: logger)
    return (
      [app, FeedService(feed: feed)],
      {
        database.close()
        await multi.shutdown()
      }
    )
  }
}

/// The live feed as a service: it listens until the group shuts down.
struct FeedService: Service {
  let feed: LiveFeed

  func run() async throws {
    await withGracefulShutdownHandler {
      await feed.run()
    } onGracefulShutdown: {
      // stop() waits for the listeners' threads: not on a cooperative thread.
      Thread.detachNewThread { feed.stop() }
    }
  }
}
