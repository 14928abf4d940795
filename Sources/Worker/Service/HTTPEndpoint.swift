import Hummingbird
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle

/// `/healthz`, `/readyz` and `/metrics` on `--http-address`: a small Hummingbird server, a service of
/// the worker's group like the others. It stops last but one, so probes and scrapes answer while the
/// worker hands its jobs back.
enum HTTPEndpoint {
  static let prometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

  static func make(
    address: HTTPAddress, readiness: Readiness, registry: PrometheusCollectorRegistry,
    beforeScrape: @escaping @Sendable () -> Void, logger: Logger
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

  private static func text(_ status: HTTPResponse.Status, _ body: String) -> Response {
    Response(
      status: status, headers: [.contentType: "text/plain; charset=utf-8"],
      body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
  }
}
