import Foundation
import Hashing
import Imaging
import Queue
import TestSupport
import Testing
import ThumbCore

/// Jobs enqueued by SQL, fetched over loopback HTTP, stored as files, recorded as rows.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct EndToEndTests {
  let shared: URL? = {
    let corpus = TestDatabase.repoRoot.deletingLastPathComponent().appendingPathComponent("shared/corpus")
    return FileManager.default.fileExists(atPath: corpus.path) ? corpus : nil
  }()

  /// Twenty photos: the 18 orientation files and the two GPS-tagged ones when ../shared is there,
  /// otherwise twenty generated JPEGs of assorted sizes. Returns (file name, upright size, bytes).
  func photos(into root: URL) throws -> [(name: String, size: PixelSize)] {
    var names: [(String, PixelSize)] = []
    if let shared {
      for kind in ["Landscape", "Portrait"] {
        for n in 0...8 {
          let name = "\(kind)_\(n).jpg"
          try FileManager.default.createSymbolicLink(
            at: root.appendingPathComponent(name),
            withDestinationURL: shared.appendingPathComponent("orientation/\(name)"))
          names.append(
            (
              name,
              kind == "Landscape"
                ? PixelSize(width: 1800, height: 1200) : PixelSize(width: 1200, height: 1800)
            ))
        }
      }
      for name in ["DSCN0010.jpg", "DSCN0012.jpg"] {
        try FileManager.default.createSymbolicLink(
          at: root.appendingPathComponent(name),
          withDestinationURL: shared.appendingPathComponent("exif/\(name)"))
        names.append((name, PixelSize(width: 640, height: 480)))
      }
    } else {
      for i in 0..<20 {
        let size = PixelSize(width: 300 + i * 170, height: 200 + i * 97)
        var image = PixelBuffer(width: size.width, height: size.height, channels: 3)
        for p in 0..<image.pixels.count { image.pixels[p] = UInt8(truncatingIfNeeded: p / 7 + i) }
        try Data(try JPEG.encode(image, quality: 85)).write(to: root.appendingPathComponent("gen_\(i).jpg"))
        names.append(("gen_\(i).jpg", size))
      }
    }
    return names
  }

  @Test func twentyPhotosBecomeFourVariantsEach() async throws {
    let database = try TestDatabase.create()
    let root = try makeTemporaryDirectory()
    let storage = try makeTemporaryDirectory()
    let photos = try photos(into: root)
    #expect(photos.count == 20)
    let origin = try TestOrigin(root: root)
    var ids: [String: Int64] = [:]
    for photo in photos {
      let result = try sql(database, "SELECT thumbs.enqueue($1)", [origin.url("/files/\(photo.name)")])
      ids[photo.name] = Int64(result.rows[0][0]!)!
    }
    let totals = try await drainQueue(databaseURL: database, storage: storage)
    #expect(totals.succeeded == 20)

    let states = try sql(database, "SELECT state, count(*) FROM thumbs.jobs GROUP BY state")
    #expect(states.rows.map { $0.compactMap { $0 } } == [["succeeded", "20"]])
    // Every succeeded job carries its original's ThumbHash (base64, at most 25 bytes).
    let hashes = try sql(database, "SELECT thumbhash FROM thumbs.jobs").rows.map { $0[0] ?? "" }
    #expect(hashes.count == 20)
    #expect(hashes.allSatisfy { (Data(base64Encoded: $0)?.count ?? 0) >= 5 && $0.count <= 36 }, "\(hashes)")
    // And where its time went (migrations/0007): every stage, in milliseconds, decoding never free.
    let stages = try sql(
      database,
      """
      SELECT count(*) FILTER (WHERE stage_ms ?& array['fetch', 'decode', 'resize', 'encode', 'store']
                                AND (stage_ms->>'decode')::float > 0
                                AND (SELECT bool_and(jsonb_typeof(v) = 'number' AND v::text::float >= 0)
                                       FROM jsonb_each(stage_ms) AS e(k, v)))
        FROM thumbs.jobs
      """
    ).rows[0][0]
    #expect(stages == "20")
    var smallByName: [String: PixelBuffer] = [:]
    for photo in photos {
      let rows = try sql(
        database,
        "SELECT name, width, height, format, bytes, storage_key FROM thumbs.variants WHERE job_id = $1 ORDER BY name",
        [String(ids[photo.name]!)]
      ).rows
      #expect(rows.map { $0[0]! } == ["large", "medium", "small", "square"], "\(photo.name)")
      for row in rows {
        let spec = Profile.default.variants.first { $0.name == row[0]! }!
        let expected = VariantLayout.make(source: photo.size, box: spec.box, fit: spec.fit).output
        let path = storage.appendingPathComponent(row[5]!).path
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(String(bytes.count) == row[4], "bytes column matches the file")
        let image = try JPEG.decode(bytes)
        #expect(image.size == expected, "\(photo.name) \(spec.name)")
        #expect(PixelSize(width: Int(row[1]!)!, height: Int(row[2]!)!) == expected)
        #expect(row[3] == "jpeg")
        #expect(ExifReader.jpegOrientation(bytes) == nil)
        #expect(!bytes.starts(with: [0xFF, 0xD8, 0xFF, 0xE1]), "no EXIF segment")
        if spec.name == "small" { smallByName[photo.name] = image }
      }
    }
    // Upright for every EXIF orientation: each looks like its orientation-1 twin.
    if shared != nil {
      for kind in ["Landscape", "Portrait"] {
        let reference = try #require(smallByName["\(kind)_1.jpg"])
        for n in [0, 2, 3, 4, 5, 6, 7, 8] {
          let other = try #require(smallByName["\(kind)_\(n).jpg"])
          #expect(meanDifference(other, reference) < 8, "\(kind)_\(n)")
        }
      }
    }
  }

  @Test func failuresAreClassifiedAndTheWorkerGoesOn() async throws {
    let database = try TestDatabase.create()
    let root = try makeTemporaryDirectory()
    let storage = try makeTemporaryDirectory()
    try Data("<html>this is not a photo</html>".utf8).write(to: root.appendingPathComponent("page.jpg"))
    var good = PixelBuffer(width: 640, height: 480, channels: 3)
    for i in 0..<good.pixels.count { good.pixels[i] = UInt8(truncatingIfNeeded: i) }
    let jpeg = try JPEG.encode(good, quality: 85)
    try Data(jpeg).write(to: root.appendingPathComponent("good.jpg"))
    try Data(jpeg[0..<(jpeg.count / 3)]).write(to: root.appendingPathComponent("truncated.jpg"))
    let origin = try TestOrigin(root: root)
    let cases: [(String, String?, String)] = [
      (origin.url("/status/404"), "not_found", "failed"),
      (origin.url("/status/410"), "not_found", "failed"),
      (origin.url("/status/403"), "http_error", "failed"),
      (origin.url("/files/page.jpg"), "unsupported_format", "failed"),
      (origin.url("/files/truncated.jpg"), "corrupt_image", "failed"),
      ("file:///etc/passwd", "blocked_source", "failed"),
      ("http://169.254.169.254/latest/meta-data/", "blocked_source", "failed"),
      (origin.url("/files/good.jpg"), nil, "succeeded"),
    ]
    for (url, _, _) in cases {
      // thumbs.enqueue refuses a scheme thumbd does not read; written into the table past it, the
      // worker refuses it too.
      let insert =
        url.hasPrefix("file:")
        ? "INSERT INTO thumbs.jobs (source_url, profile) VALUES ($1, 'default')" : "SELECT thumbs.enqueue($1)"
      try sql(database, insert, [url])
    }
    let totals = try await drainQueue(databaseURL: database, storage: storage) { config in
      config.addressPolicy = try! AddressPolicy(allowList: "127.0.0.1")
    }
    #expect(totals.succeeded == 1)
    #expect(totals.failed == cases.count - 1)
    for (url, code, state) in cases {
      let row = try sql(
        database, "SELECT state, error_code, last_error, attempts FROM thumbs.jobs WHERE source_url = $1",
        [url]
      ).rows[0]
      #expect(row[0] == state, "\(url)")
      #expect(row[1] == code, "\(url): \(row[2] ?? "")")
      #expect(row[3] == "1", "permanent errors are not retried")
      if code != nil { #expect(row[2]?.isEmpty == false) }
    }
  }

  @Test func loopbackIsBlockedUnlessAllowed() async throws {
    let database = try TestDatabase.create()
    let root = try makeTemporaryDirectory()
    let origin = try TestOrigin(root: root)
    let url = origin.url("/status/200")
    try sql(database, "SELECT thumbs.enqueue($1)", [url])
    _ = try await drainQueue(databaseURL: database, storage: try makeTemporaryDirectory()) { config in
      config.addressPolicy = AddressPolicy()
    }
    let row = try sql(database, "SELECT state, error_code FROM thumbs.jobs").rows[0]
    #expect(row == ["failed", "blocked_source"])
    // The guard refused after connecting but before sending: the origin never saw the request.
    #expect(try await origin.requestCount("/status/200") == 0)
  }

  @Test func transientFailuresAreRetriedLater() async throws {
    let database = try TestDatabase.create()
    let root = try makeTemporaryDirectory()
    let origin = try TestOrigin(root: root)
    let url = origin.url("/status/503")
    try sql(database, "SELECT thumbs.enqueue($1)", [url])
    _ = try await drainQueue(databaseURL: database, storage: try makeTemporaryDirectory())
    let row = try sql(
      database, "SELECT state, error_code, attempts, run_at > now() + interval '5 seconds' FROM thumbs.jobs"
    ).rows[0]
    // Three tries inside the attempt, then back to the queue with a backoff (not due now: drain exits).
    #expect(row == ["queued", "fetch_failed", "1", "t"])
    #expect(try await origin.requestCount("/status/503") == 3)
  }
}

/// Videos through the same job as photos: fetched, the poster chosen, four variants stored, the job
/// succeeded with its ThumbHash; a file with no video stream fails as unsupported_format, for good.
@Suite(
  .serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: VideoMatrix.isAvailable, Comment(rawValue: VideoMatrix.skipReason)))
struct VideoJobTests {
  /// A profile with a poster time gets the keyframe at or before it; the default profile of the same
  /// video its first keyframe worth showing. Read by ranges once, plus that one keyframe.
  @Test func aProfilesPosterTimeChoosesTheKeyframe() async throws {
    let database = try TestDatabase.create()
    let storage = try makeTemporaryDirectory()
    let origin = try TestOrigin(root: try #require(VideoMatrix.folder))
    try sql(
      database,
      "INSERT INTO thumbs.profiles (name, spec) SELECT 'late', jsonb_set(spec, '{poster}', '{\"at\": 12.5}')"
        + " FROM thumbs.profiles WHERE name = 'default'")
    let url = origin.url("/files/long-index-at-end.mp4")
    try sql(database, "SELECT thumbs.enqueue($1)", [url])
    try sql(database, "SELECT thumbs.enqueue($1, 'late')", [url])
    let totals = try await drainQueue(databaseURL: database, storage: storage)
    #expect(totals.succeeded == 2)
    let hashes = try sql(database, "SELECT profile, thumbhash FROM thumbs.jobs ORDER BY id").rows
    #expect(hashes.count == 2 && hashes[0][1] != hashes[1][1], "two posters: \(hashes)")
    let whole = try VideoMatrix.bytes("long-index-at-end.mp4")
    let late = try Thumbnailer().render(whole, variants: Profile.default.variants, posterAt: 12.5)
    #expect(hashes[1][1] == late.0.thumbHash, "the keyframe at 12 s")
    let sent = try await origin.count(at: "/_bytes/files/long-index-at-end.mp4", key: "bytes")
    #expect(sent <= RangedReading.headBytes + whole.count / 20, "\(sent) of \(whole.count) bytes")
  }

  /// A long video (its name says .mp4) is read by ranges, the index at its end or at its start: the
  /// head, the boxes to the index, the index and the first keyframes, a few percent of its bytes. An
  /// origin that answers ranges with the whole file (200) gets one whole download, which renders too.
  @Test func aLongVideoIsReadByRangesAndAnOriginWithoutRangesWhole() async throws {
    let database = try TestDatabase.create()
    let storage = try makeTemporaryDirectory()
    let folder = try #require(VideoMatrix.folder)
    let origin = try TestOrigin(root: folder)
    let paths = [
      "/files/long-index-at-end.mp4", "/files/long-index-first.mp4", "/norange/long-index-at-end.mp4",
    ]
    for path in paths { try sql(database, "SELECT thumbs.enqueue($1)", [origin.url(path)]) }
    let totals = try await drainQueue(databaseURL: database, storage: storage)
    #expect(totals.succeeded == 3)
    #expect(try sql(database, "SELECT count(*)::text FROM thumbs.variants").rows == [["12"]])
    let size = try VideoMatrix.bytes("long-index-at-end.mp4").count
    for path in paths {
      let sent = try await origin.count(at: "/_bytes" + path, key: "bytes")
      let requests = try await origin.requestCount(path)
      if path.hasPrefix("/norange/") {
        #expect(sent == size && requests == 1, "\(path): \(sent) bytes in \(requests) requests")
      } else {
        #expect(
          sent <= RangedReading.headBytes + size / 20 && requests >= 2,
          "\(path): \(sent) of \(size) bytes in \(requests) requests")
      }
    }
    // Read by ranges or whole, the same poster.
    let hashes = try sql(database, "SELECT DISTINCT thumbhash FROM thumbs.jobs").rows
    #expect(hashes.count == 1, "\(hashes)")
  }

  /// A slow start from black with a keyframe a second: read by ranges, the poster search reads on past
  /// the first keyframes (all black) to the one a whole read takes; both get the same thumbnails.
  @Test func aSlowFadeInGetsTheSamePosterFromAnOriginWithOrWithoutRanges() async throws {
    let database = try TestDatabase.create()
    let storage = try makeTemporaryDirectory()
    let origin = try TestOrigin(root: try #require(VideoMatrix.folder))
    for path in ["/files/slow-fade-in.mp4", "/norange/slow-fade-in.mp4"] {
      try sql(database, "SELECT thumbs.enqueue($1)", [origin.url(path)])
    }
    #expect(try await drainQueue(databaseURL: database, storage: storage).succeeded == 2)
    let keys = try sql(
      database,
      "SELECT j.source_url, array_agg(v.storage_key ORDER BY v.name)::text FROM thumbs.jobs j"
        + " JOIN thumbs.variants v ON v.job_id = j.id GROUP BY j.source_url"
    ).rows
    #expect(keys.count == 2 && keys[0][1] == keys[1][1], "\(keys)")
    let size = try VideoMatrix.bytes("slow-fade-in.mp4").count
    let sent = try await origin.count(at: "/_bytes/files/slow-fade-in.mp4", key: "bytes")
    #expect(sent < size / 2, "read by ranges: \(sent) of \(size) bytes")
  }

  /// A video read by ranges is recorded as it is: the file's size, what was read of it, its index's
  /// SHA-256 and no SHA-256 of bytes never read. The same file at another URL, also read by ranges,
  /// takes the first job's variants (its render key is built from the size and the index's hash).
  @Test func aVideoReadByRangesIsRecordedAsItIsAndRendersOnce() async throws {
    let database = try TestDatabase.create()
    let storage = try makeTemporaryDirectory()
    let origin = try TestOrigin(root: try #require(VideoMatrix.folder))
    let whole = try VideoMatrix.bytes("long-index-at-end.mp4")
    try sql(database, "SELECT thumbs.enqueue($1)", [origin.url("/files/long-index-at-end.mp4")])
    #expect(try await drainQueue(databaseURL: database, storage: storage).succeeded == 1)
    try sql(database, "SELECT thumbs.enqueue($1)", [origin.url("/files/long-index-at-end.mp4?copy=2")])
    #expect(try await drainQueue(databaseURL: database, storage: storage).succeeded == 1)
    let rows = try sql(
      database,
      "SELECT bytes::text, sha256, bytes_read::text, index_sha256 FROM thumbs.originals ORDER BY url"
    ).rows
    #expect(rows.count == 2)
    // The index: the moov box, at the end of this file.
    let moov = try #require(
      (0..<(whole.count - 8)).last { whole[$0 + 4..<$0 + 8].elementsEqual("moov".utf8) })
    let moovSize = whole[moov..<moov + 4].reduce(0) { $0 << 8 | Int($1) }
    let indexHash = Digest.sha256Hex(Array(whole[moov..<moov + moovSize]))
    for row in rows {
      #expect(row[0] == String(whole.count) && row[1] == nil && row[3] == indexHash, "\(row)")
      let read = Int(row[2] ?? "") ?? 0
      #expect(read > moovSize && read < whole.count / 10, "\(row)")
    }
    let jobs = try sql(database, "SELECT render_key, reused_from FROM thumbs.jobs ORDER BY id").rows
    #expect(jobs[0][0] != nil && jobs[0][0] == jobs[1][0] && jobs[1][1] != nil, "\(jobs)")
  }

  @Test func videosBecomeFourVariantsAndAudioFailsForGood() async throws {
    let database = try TestDatabase.create()
    let storage = try makeTemporaryDirectory()
    let folder = try #require(VideoMatrix.folder)
    let origin = try TestOrigin(root: folder)
    let clips = ["h264-black-start.mp4", "hevc-10bit.mov", "h264-rotated.mov", "vp9.webm", "audio-only.mp4"]
    var ids: [String: String] = [:]
    for clip in clips {
      ids[clip] = try sql(database, "SELECT thumbs.enqueue($1)", [origin.url("/files/\(clip)")]).rows[0][0]!
    }
    let totals = try await drainQueue(databaseURL: database, storage: storage)
    #expect(totals.succeeded == 4)
    for clip in clips {
      let row = try sql(
        database,
        "SELECT state, error_code, (SELECT count(*) FROM thumbs.variants v WHERE v.job_id = j.id)::text, thumbhash"
          + " FROM thumbs.jobs j WHERE id = $1::bigint", [ids[clip]]
      ).rows[0]
      if clip == "audio-only.mp4" {
        #expect(row[0] == "failed" && row[1] == "unsupported_format", "\(clip): \(row)")
      } else {
        #expect(row[0] == "succeeded" && row[2] == "4" && row[3] != nil, "\(clip): \(row)")
      }
    }
    let rotated = try sql(
      database,
      "SELECT width::text, height::text FROM thumbs.variants WHERE job_id = $1::bigint AND name = 'large'",
      [ids["h264-rotated.mov"]]
    ).rows
    #expect(rotated == [["180", "320"]])

    // The job's row and its event say what the video was; a photo's say null.
    let media = try sql(
      database, "SELECT media::text FROM thumbs.jobs WHERE id = $1::bigint", [ids["vp9.webm"]]
    ).rows[0][0]
    let vp9 = try #require(media.flatMap(MediaInfo.init(json:)), "\(media ?? "NULL")")
    #expect(vp9.kind == "video" && vp9.codec == "vp9" && vp9.container == "webm")
    #expect(vp9.width == 320 && vp9.height == 180 && vp9.dynamicRange == "sdr")
    #expect(abs((vp9.durationSeconds ?? 0) - 1) < 0.1, "\(vp9)")
    let turned = try sql(
      database,
      "SELECT media->>'width', media->>'height', media->>'codec', media->>'container', "
        + "(media->>'bit_depth') FROM thumbs.jobs WHERE id = $1::bigint", [ids["h264-rotated.mov"]]
    ).rows[0]
    #expect(turned == ["180", "320", "h264", "mov", "8"])
    let tenBit = try sql(
      database, "SELECT media->>'codec', media->>'bit_depth' FROM thumbs.jobs WHERE id = $1::bigint",
      [ids["hevc-10bit.mov"]]
    ).rows[0]
    #expect(tenBit == ["hevc", "10"])
    let events = try sql(
      database,
      "SELECT kind, payload->'media' IS NOT NULL AND payload->'media' <> 'null', payload::text,"
        + " to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
        + " FROM thumbs.events WHERE job_id IN ($1::bigint, $2::bigint) ORDER BY job_id",
      [ids["vp9.webm"], ids["audio-only.mp4"]]
    ).rows
    #expect(events.map { [$0[0], $0[1]] } == [["succeeded", "t"], ["failed", "f"]], "\(events)")
    // Both payloads are what docs/schemas says a webhook carries.
    let receiver = try WebhookReceiver(secrets: [
      "whsec_" + Data(repeating: 7, count: 24).base64EncodedString()
    ])
    for event in events {
      let body =
        "{\"type\": \"thumbnail.\(event[0]!)\", \"timestamp\": \"\(event[3]!)\", \"data\": \(event[2]!)}"
      #expect(try await receiver.schemaErrors(body) == [], "\(body)")
    }
  }
}
