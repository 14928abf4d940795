import Foundation
import Queue
import Testing
import ThumbCore
import Worker
import Yams

/// deploy/k8s: every manifest parses, the Deployment's probes, grace and memory fit the worker's
/// configuration, and the KEDA trigger's query counts exactly the ready jobs and due webhook deliveries of a real database.
struct KubernetesManifestTests {
  static let folder = TestDatabase.repoRoot.appendingPathComponent("deploy/k8s")

  /// Every document of every manifest, by kind.
  static func documents() throws -> [String: [[String: Any]]] {
    var byKind: [String: [[String: Any]]] = [:]
    let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
      $0.hasSuffix(".yaml")
    }
    for file in files {
      let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
      for document in try Yams.load_all(yaml: text) {
        let object = try #require(document as? [String: Any], "\(file): not a mapping")
        let kind = try #require(object["kind"] as? String, "\(file): no kind")
        #expect(object["apiVersion"] is String, "\(file): no apiVersion")
        byKind[kind, default: []].append(object)
      }
    }
    return byKind
  }

  static func single(_ kind: String) throws -> [String: Any] {
    let found = try documents()[kind] ?? []
    try #require(found.count == 1, "one \(kind)")
    return found[0]
  }

  /// The document of `kind` named `name`.
  static func named(_ kind: String, _ name: String) throws -> [String: Any] {
    let found = (try documents()[kind] ?? []).filter {
      ($0["metadata"] as? [String: Any])?["name"] as? String == name
    }
    try #require(found.count == 1, "one \(kind) named \(name)")
    return found[0]
  }

  @Test func everyManifestParsesAndKustomizeListsThemAll() throws {
    let kinds = try Self.documents()
    for kind in [
      "Deployment", "PodDisruptionBudget", "ConfigMap", "Job", "ScaledObject", "TriggerAuthentication",
      "Kustomization", "Secret", "Service",
    ] {
      #expect(kinds[kind] != nil, "\(kind) missing")
    }
    let listed = try #require(try Self.single("Kustomization")["resources"] as? [String])
    for file in listed {
      #expect(
        FileManager.default.fileExists(atPath: Self.folder.appendingPathComponent(file).path), "\(file)")
    }
    #expect(!listed.contains("secrets.example.yaml"), "example secrets are not applied")
  }

  /// The ConfigMap's thumbd.yaml, read by the worker's own settings model.
  func configuration() throws -> WorkerConfig {
    let map = try Self.single("ConfigMap")
    let text = try #require((map["data"] as? [String: Any])?["thumbd.yaml"] as? String)
    let resolution = WorkerConfig.resolve(
      arguments: ["--config", "/etc/thumbd/thumbd.yaml"],
      environment: [
        "DATABASE_URL": "postgresql://w@db/photos", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
      ],
      readFile: { _ in text })
    #expect(resolution.errors.isEmpty, "\(resolution.errors)")
    return resolution.settings
  }

  @Test func theDeploymentFitsTheWorkersConfiguration() throws {
    let settings = try configuration()
    let deployment = try Self.named("Deployment", "thumbd")
    let template = try #require((deployment["spec"] as? [String: Any])?["template"] as? [String: Any])
    let pod = try #require(template["spec"] as? [String: Any])
    let container = try #require((pod["containers"] as? [[String: Any]])?.first)

    // The stop: the pod is killed only after the worker's grace and its hand-back.
    let grace = try #require(pod["terminationGracePeriodSeconds"] as? Int)
    #expect(Double(grace) >= settings.shutdownGrace + 10)

    // Probes on the worker's endpoint.
    func probe(_ name: String) -> String? {
      ((container[name] as? [String: Any])?["httpGet"] as? [String: Any])?["path"] as? String
    }
    #expect(probe("livenessProbe") == "/healthz")
    #expect(probe("readinessProbe") == "/readyz")
    let port = try #require((container["ports"] as? [[String: Any]])?.first?["containerPort"] as? Int)
    #expect(port == settings.httpAddress?.port)
    let annotations = try #require(
      (template["metadata"] as? [String: Any])?["annotations"] as? [String: String])
    #expect(annotations["prometheus.io/scrape"] == "true" && annotations["prometheus.io/port"] == "\(port)")

    // The memory limit holds the budget and the process around it.
    let resources = try #require(container["resources"] as? [String: Any])
    let limit = try #require((resources["limits"] as? [String: Any])?["memory"] as? String)
    let limitBytes = try #require(Self.kubernetesBytes(limit))
    #expect(limitBytes >= settings.memoryBudget + 128 * 1024 * 1024, "\(limit)")
    let cpu = try #require((resources["requests"] as? [String: Any])?["cpu"] as? String)
    #expect(Int(cpu) == settings.concurrency, "one core per job slot")

    // Secrets, not literals, for the database and S3.
    let env = try #require(container["env"] as? [[String: Any]])
    for name in ["DATABASE_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"] {
      let entry = env.first { $0["name"] as? String == name }
      #expect((entry?["valueFrom"] as? [String: Any])?["secretKeyRef"] != nil, "\(name) from a Secret")
    }
    let budget = try Self.single("PodDisruptionBudget")
    #expect((budget["spec"] as? [String: Any])?["maxUnavailable"] as? Int == 1)
  }

  /// The console: one replica (its sessions are in memory), listening on the port its Service targets,
  /// probed on /healthz, its password and database from Secrets that secrets.example.yaml defines.
  @Test func theConsoleIsOneReplicaBehindItsService() throws {
    let deployment = try Self.named("Deployment", "thumbd-console")
    let spec = try #require(deployment["spec"] as? [String: Any])
    #expect(spec["replicas"] as? Int == 1)
    let pod = try #require((spec["template"] as? [String: Any])?["spec"] as? [String: Any])
    let container = try #require((pod["containers"] as? [[String: Any]])?.first)
    let args = try #require(container["args"] as? [String])
    #expect(args.first == "console" && args.contains("0.0.0.0:8090"), "\(args)")
    for probe in ["livenessProbe", "readinessProbe"] {
      let get = (container[probe] as? [String: Any])?["httpGet"] as? [String: Any]
      #expect(get?["path"] as? String == "/healthz" && get?["port"] as? String == "http", "\(probe)")
    }
    let port = try #require((container["ports"] as? [[String: Any]])?.first)
    #expect(port["name"] as? String == "http" && port["containerPort"] as? Int == 8090)
    let service = try Self.named("Service", "thumbd-console")
    let serviceSpec = try #require(service["spec"] as? [String: Any])
    let labels =
      ((spec["template"] as? [String: Any])?["metadata"] as? [String: Any])?["labels"] as? [String: String]
    #expect(serviceSpec["selector"] as? [String: String] == labels, "the Service selects the console's pods")
    #expect((serviceSpec["ports"] as? [[String: Any]])?.first?["targetPort"] as? String == "http")
    // Every Secret key it reads is in the example.
    let examples = try String(
      contentsOf: Self.folder.appendingPathComponent("secrets.example.yaml"), encoding: .utf8)
    let secrets = try Yams.load_all(yaml: examples).compactMap { $0 as? [String: Any] }
    func key(_ secret: String, _ key: String) -> Bool {
      secrets.contains {
        ($0["metadata"] as? [String: Any])?["name"] as? String == secret
          && ($0["stringData"] as? [String: Any])?[key] != nil
      }
    }
    let env = try #require(container["env"] as? [[String: Any]])
    for entry in env {
      guard let reference = (entry["valueFrom"] as? [String: Any])?["secretKeyRef"] as? [String: Any] else {
        continue
      }
      let (secret, name) = (reference["name"] as? String ?? "", reference["key"] as? String ?? "")
      #expect(key(secret, name), "\(secret)/\(name) is not in secrets.example.yaml")
    }
    #expect(env.contains { $0["name"] as? String == "THUMBD_CONSOLE_PASSWORD" && $0["valueFrom"] != nil })
  }

  /// 512Mi, 1Gi, 768M, plain bytes.
  static func kubernetesBytes(_ text: String) -> Int? {
    let units: [(String, Int)] = [
      ("Ki", 1 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30), ("k", 1000), ("M", 1_000_000), ("G", 1_000_000_000),
    ]
    for (suffix, factor) in units where text.hasSuffix(suffix) {
      return Int(text.dropLast(suffix.count)).map { $0 * factor }
    }
    return Int(text)
  }

  @Test(.enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
  func kedasQueryCountsExactlyTheReadyJobs() throws {
    let scaled = try Self.single("ScaledObject")
    let spec = try #require(scaled["spec"] as? [String: Any])
    #expect(spec["minReplicaCount"] as? Int == 0, "scales from zero")
    let trigger = try #require((spec["triggers"] as? [[String: Any]])?.first)
    #expect(trigger["type"] as? String == "postgresql")
    let query = try #require((trigger["metadata"] as? [String: Any])?["query"] as? String)
    let auth = try #require((trigger["authenticationRef"] as? [String: Any])?["name"] as? String)
    #expect(
      try Self.single("TriggerAuthentication")["metadata"].flatMap {
        ($0 as? [String: Any])?["name"] as? String
      } == auth)

    let database = try TestDatabase.create()
    #expect(try sql(database, query).rows == [["0"]], "an empty queue: zero replicas")
    // 5 due, 2 scheduled later, 1 running, 1 succeeded, 1 failed, 1 cancelled, 1 backing off.
    for index in 0..<5 {
      try sql(database, "SELECT thumbs.enqueue($1)", ["https://example.com/due/\(index)"])
    }
    for index in 0..<2 {
      try sql(
        database, "SELECT thumbs.enqueue($1, run_at => now() + interval '1 hour')",
        ["https://example.com/later/\(index)"])
    }
    for (index, state) in ["running", "succeeded", "failed", "cancelled", "queued"].enumerated() {
      let id = try #require(
        try sql(database, "SELECT thumbs.enqueue($1)", ["https://example.com/other/\(index)"]).rows[0][0])
      try sql(
        database,
        "UPDATE thumbs.jobs SET state = $1, run_at = now() + interval '10 minutes' WHERE id = $2",
        [state, id])
    }
    #expect(try sql(database, query).rows == [["5"]])
    // Webhook deliveries due now count too (a fleet at zero must wake for them); one waiting out its
    // backoff, one delivered and one to an endpoint that is off do not.
    let setUp = try PostgresConnection(conninfo: database)
    defer { setUp.close() }
    try setUp.execute(
      script: """
        INSERT INTO thumbs.webhook_endpoints (url, disabled_at) VALUES ('https://on.example/hook', NULL),
          ('https://off.example/hook', now());
        INSERT INTO thumbs.event_log (job_id, kind, profile) SELECT g, 'succeeded', 'default' FROM generate_series(1, 5) g;
        INSERT INTO thumbs.webhook_deliveries (endpoint, event_id, state, next_attempt_at)
        SELECT u, e, s, t FROM (VALUES ('https://on.example/hook', 1, 'pending', now() - interval '1 second'),
                                       ('https://on.example/hook', 2, 'pending', now() - interval '1 second'),
                                       ('https://on.example/hook', 3, 'pending', now() + interval '1 hour'),
                                       ('https://on.example/hook', 4, 'delivered', now()),
                                       ('https://off.example/hook', 5, 'pending', now())) AS v(u, e, s, t)
        """)
    #expect(try sql(database, query).rows == [["7"]])
    // So do objects collection has to delete, and erasures waiting for their event: a candidate, a
    // marked object and an erasure do; an object already deleted does not.
    try setUp.execute(
      script: """
        INSERT INTO thumbs.gc_objects (storage_key, state) VALUES ('aa/bb/1.jpg', 'pending'),
          ('aa/bb/2.jpg', 'deleting'), ('aa/bb/3.jpg', NULL);
        INSERT INTO thumbs.erasures (job_id, profile) VALUES (1, 'default');
        """)
    #expect(try sql(database, query).rows == [["10"]])
    // The ready-jobs index can serve it (so no scan of finished jobs however many there are); sequential
    // scans are switched off because a table this small would be read whole anyway.
    let connection = try PostgresConnection(conninfo: database)
    defer { connection.close() }
    try connection.execute(script: "SET enable_seqscan = off")
    let plan = try connection.query("EXPLAIN \(query)").rows.map { $0[0] ?? "" }.joined(separator: "\n")
    #expect(plan.contains("jobs_ready_idx") && plan.contains("webhook_deliveries_due_idx"), "\(plan)")
    #expect(plan.contains("gc_objects_backlog_idx"), "\(plan)")
  }
}
