import Foundation
import Hummingbird
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle
import ThumbCore

/// `/healthz`, `/readyz`, `/metrics` and `/debug/jobs` on `--http-address`: a small Hummingbird server,
/// a service of the worker's group like the others. It stops last but one, so probes and scrapes answer while the
/// worker hands its jobs back.
enum HTTPEndpoint {
  static let prometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

  static func make(
    address: HTTPAddress, readiness: Readiness, registry: PrometheusCollectorRegistry,
    beforeScrape: @escaping @Sendable () -> Void, heldJobs: @escaping @Sendable () -> [HeldJob],
    logger: Logger
  ) -> any Service {
    let router = Router()
    router.get("healthz") { _, _ -> Response in
      readiness.isLive ? text(.ok, "ok\n") : text(.serviceUnavailable, "the keeper loop has stalled\n")
    }
    router.get("readyz") { _, _ -> Response in
      if readiness.isReady { return text(.ok, "ready\n") }
      return text(.serviceUnavailable, readiness.databaseAnswers ? "not ready\n" : "database unreachable\n")
    }
    router.get("metrics") { _, _ -> Response in
      beforeScrape()
      var bytes: [UInt8] = []
      registry.emit(into: &bytes)
      return Response(
        status: .ok, headers: [.contentType: prometheusContentType],
        body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
    router.get("debug/jobs") { _, _ -> Response in
      Response(
        status: .ok, headers: [.contentType: "application/json"],
        body: ResponseBody(byteBuffer: ByteBuffer(bytes: debugJobs(heldJobs(), now: .now, wallNow: Date()))))
    }
    var serverLogger = logger
    // Hummingbird's own lines (its start, connection errors) name the address they are about.
    serverLogger[metadataKey: "http.address"] = "\(address)"
    return Application(
      router: router,
      configuration: ApplicationConfiguration(
        address: .hostname(address.host, port: address.port), serverName: nil),
      onServerRunning: { channel in
        readiness.endpointListening()
        logger.info(
          "http endpoint listening",
          metadata: [
            "http.port": "\(channel.localAddress?.port ?? address.port)", "http.host": "\(address.host)",
          ])
      },
      logger: serverLogger)
  }

  /// One entry per held job, in id order: where it is and since when (`since` on the wall clock,
  /// `seconds` in its phase so far).
  static func debugJobs(_ jobs: [HeldJob], now: ContinuousClock.Instant, wallNow: Date) -> [UInt8] {
    let format = ISO8601DateFormatter()
    format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    let entries: [[String: Any]] = jobs.map { job in
      let seconds = max(0, job.since.duration(to: now).inSeconds)
      return [
        "id": job.id, "attempt": job.attempt, "phase": job.phase.rawValue, "holds_slot": job.holdsSlot,
        "since": format.string(from: wallNow.addingTimeInterval(-seconds)),
        "seconds": (seconds * 1000).rounded() / 1000,
      ]
    }
    let data =
      (try? JSONSerialization.data(withJSONObject: entries, options: [.sortedKeys])) ?? Data("[]".utf8)
    return Array(data) + [UInt8(ascii: "\n")]
  }

  private static func text(_ status: HTTPResponse.Status, _ body: String) -> Response {
    Response(
      status: status, headers: [.contentType: "text/plain; charset=utf-8"],
      body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
  }
}
