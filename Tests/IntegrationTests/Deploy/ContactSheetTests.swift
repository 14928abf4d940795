import Foundation
import Imaging
import TestSupport
import Testing
import ThumbCore

/// The contact sheet `make demo` writes (scripts/contact-sheet.py), opened in a real headless Chromium:
/// every image loads at its recorded size, every ThumbHash placeholder is drawn in its photo's colours,
/// and the failed jobs are shown with their errors.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct ContactSheetTests {
  /// Three photos, each fading from its colour to that colour's complement, so that a placeholder drawn
  /// from the wrong hash, or as a flat colour, cannot match its photo.
  static let photos: [(name: String, width: Int, height: Int, rgb: (UInt8, UInt8, UInt8))] = [
    ("red.jpg", 1800, 1200, (200, 40, 30)),
    ("green.jpg", 900, 1400, (40, 170, 60)),
    ("blue.jpg", 640, 480, (30, 60, 190)),
  ]

  /// What the page's images and canvases look like once loaded, measured by a script of the test's own
  /// (not the page's), written into the DOM for --dump-dom.
  static let checker = """
    <script>
    window.addEventListener('load', () => {
      const pixels = (source, w, h) => {
        const c = document.createElement('canvas'); c.width = w; c.height = h;
        const ctx = c.getContext('2d'); ctx.drawImage(source, 0, 0, w, h);
        return ctx.getImageData(0, 0, w, h).data;
      };
      const mean = d => { const sum = [0, 0, 0];
        for (let i = 0; i < d.length; i += 4) { sum[0] += d[i]; sum[1] += d[i + 1]; sum[2] += d[i + 2]; }
        return sum.map(s => s / (d.length / 4) / 255); };
      // Mean absolute difference (0...1) between two pictures of the same size, pixel by pixel.
      const distance = (a, b) => { let sum = 0, n = 0;
        for (let i = 0; i < a.length; i += 4) for (let c = 0; c < 3; c++, n++) sum += Math.abs(a[i + c] - b[i + c]);
        return sum / n / 255; };
      const images = [...document.images].map(img => ({
        src: img.getAttribute('src'), kind: img.closest('figure').className, loaded: img.complete && img.naturalWidth > 0,
        natural: [img.naturalWidth, img.naturalHeight],
        declared: img.hasAttribute('width') ? [+img.getAttribute('width'), +img.getAttribute('height')] : null }));
      const jobs = [...document.querySelectorAll('section.job')].map(section => {
        const canvas = section.querySelector('canvas[data-thumbhash]');
        const small = section.querySelector('figure[data-variant="small"] img');
        const result = { id: +section.dataset.job, failed: section.classList.contains('failed'),
                         text: section.textContent, placeholder: null, small: null, distance: null, flat: null };
        if (canvas && small && small.naturalWidth) {
          const [w, h] = [canvas.width, canvas.height];
          const drawn = pixels(canvas, w, h), photo = pixels(small, w, h), average = mean(photo);
          const flat = photo.map((v, i) => i % 4 === 3 ? 255 : 255 * average[i % 4]);
          Object.assign(result, { placeholder: mean(drawn), small: average,
                                  distance: distance(drawn, photo), flat: distance(flat, photo) });
        }
        return result;
      });
      const out = document.createElement('pre'); out.id = 'thumbd-check';
      out.textContent = JSON.stringify({ images, jobs, summary: document.querySelector('.summary').textContent });
      document.body.appendChild(out);
    });
    </script>
    """

  struct Check: Decodable {
    struct Image: Decodable {
      let src: String
      let kind: String
      let loaded: Bool
      let natural: [Int]
      let declared: [Int]?
    }
    struct Job: Decodable {
      let id: Int64
      let failed: Bool
      let text: String
      /// Mean colours (0...1) of the drawn placeholder and of the small variant.
      let placeholder: [Double]?
      let small: [Double]?
      /// How far the placeholder, and a flat fill of the variant's mean colour, are from the variant
      /// scaled to the placeholder's size (mean absolute difference, 0...1).
      let distance: Double?
      let flat: Double?
    }
    let images: [Image]
    let jobs: [Job]
    let summary: String
  }

  /// Opens `page` with the checker added, in headless Chromium, and returns what the checker saw.
  func open(_ page: URL) throws -> Check {
    let checked = page.deletingLastPathComponent().appendingPathComponent("check.html")
    let html = try String(contentsOf: page, encoding: .utf8)
    try html.replacingOccurrences(of: "</body>", with: Self.checker + "</body>").write(
      to: checked, atomically: true, encoding: .utf8)
    // --allow-file-access-from-files: the checker reads pixels of file:// images (a canvas would be
    // tainted otherwise). The page itself needs no such flag.
    let (code, output) = try runProgram(
      "/usr/bin/timeout",
      [
        "90", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
        "--virtual-time-budget=10000", "--dump-dom", checked.absoluteString,
      ])
    try #require(code == 0, "chromium exited \(code): \(output.suffix(2000))")
    let start = try #require(output.range(of: "<pre id=\"thumbd-check\">"), "no checker output in the DOM")
    let end = try #require(output.range(of: "</pre>", range: start.upperBound..<output.endIndex))
    let json = String(output[start.upperBound..<end.lowerBound])
      .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&lt;", with: "<")
      .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&amp;", with: "&")
    return try JSONDecoder().decode(Check.self, from: Data(json.utf8))
  }

  @Test func everyImageLoadsAndEveryPlaceholderMatchesItsPhoto() async throws {
    let chromium = try runProgram("/bin/sh", ["-c", "command -v chromium"])
    try #require(chromium.code == 0, "chromium is not installed: run scripts/install-deps.sh")

    let database = try TestDatabase.create()
    let root = try makeTemporaryDirectory()
    let storage = try makeTemporaryDirectory()
    let pages = try makeTemporaryDirectory()
    for photo in Self.photos {
      var image = PixelBuffer(width: photo.width, height: photo.height, channels: 3)
      for y in 0..<photo.height {
        for x in 0..<photo.width {
          // The photo's colour on the left, fading to its complement on the right: a placeholder must
          // draw the fade (ThumbHash's low frequencies), not just the average colour.
          let fade = Double(x) / Double(photo.width - 1)
          let offset = (y * photo.width + x) * 3
          for (channel, value) in [photo.rgb.0, photo.rgb.1, photo.rgb.2].enumerated() {
            image.pixels[offset + channel] = UInt8(
              (Double(value) * (1 - fade) + Double(255 - value) * fade).rounded())
          }
        }
      }
      try Data(try JPEG.encode(image, quality: 85)).write(to: root.appendingPathComponent(photo.name))
    }
    try Data("not a photo at all".utf8).write(to: root.appendingPathComponent("broken.jpg"))
    let origin = try TestOrigin(root: root)
    var urls = Self.photos.map { origin.url("/files/\($0.name)") }
    urls.append(origin.url("/files/red.jpg?shared=1"))  // the same bytes again: reuses the first's variants
    urls += [origin.url("/files/broken.jpg"), origin.url("/status/404")]
    for url in urls { try sql(database, "SELECT thumbs.enqueue($1)", [url]) }
    let totals = try await drainQueue(databaseURL: database, storage: storage)
    #expect(totals.succeeded == 4)

    let page = pages.appendingPathComponent("index.html")
    var environment = ProcessInfo.processInfo.environment
    environment["DATABASE_URL"] = database
    let made = try runProgram(
      "/usr/bin/env",
      [
        "python3", TestDatabase.repoRoot.appendingPathComponent("scripts/contact-sheet.py").path,
        "--storage", "file://\(storage.path)", "--out", page.path,
        "--originals", "\(origin.url("/files/"))=\(root.path)",
      ], environment: environment, withStandardError: true)
    try #require(made.code == 0, "contact-sheet.py: \(made.output)")
    #expect(
      made.output.trimmingCharacters(in: .whitespacesAndNewlines) == page.path, "prints the page's path")

    let check = try open(page)
    // 4 succeeded jobs: an original and 4 variants each. Failed jobs show no image.
    #expect(check.images.count == 20)
    #expect(check.images.filter { !$0.loaded }.map(\.src) == [])
    for image in check.images {
      if let declared = image.declared {  // variants: decoded at the size their row records
        #expect(image.natural == declared, "\(image.src)")
      }
    }
    let originals = check.images.filter { $0.kind == "original" }
    #expect(originals.count == 4)
    #expect(originals.allSatisfy { !$0.src.hasPrefix("http") }, "originals are linked from their folder")

    let succeeded = check.jobs.filter { !$0.failed }
    #expect(succeeded.count == 4)
    for job in succeeded {
      let placeholder = try #require(job.placeholder, "job \(job.id) has no placeholder")
      let small = try #require(job.small, "job \(job.id) has no small variant")
      for channel in 0..<3 {
        #expect(
          abs(placeholder[channel] - small[channel]) < 0.08, "job \(job.id): \(placeholder) vs \(small)")
      }
      let distance = try #require(job.distance), flat = try #require(job.flat)
      #expect(
        distance < flat / 3, "job \(job.id): the placeholder draws the photo's fade (\(distance) vs \(flat))")
      #expect(job.text.contains("decode") || job.text.contains("reused"), "stage times shown: \(job.text)")
    }
    #expect(succeeded.filter { $0.text.contains("reused job") }.count == 1)
    let failed = check.jobs.filter(\.failed)
    #expect(failed.count == 2)
    #expect(failed.contains { $0.text.contains("not_found") && $0.text.contains("/status/404") })
    #expect(failed.contains { $0.text.contains("corrupt_image") || $0.text.contains("unsupported_format") })
    #expect(check.summary.contains("6 jobs: 4 succeeded (1 reusing"), "\(check.summary)")

    // The check can fail: a thumbnail gone from storage is a broken image on the page.
    let gone = try #require(
      try FileManager.default.subpathsOfDirectory(atPath: storage.path).first { $0.hasSuffix(".jpg") })
    try FileManager.default.removeItem(at: storage.appendingPathComponent(gone))
    let broken = try open(page).images.filter { !$0.loaded }
    #expect(!broken.isEmpty && broken.allSatisfy { $0.src.hasSuffix(gone) }, "\(broken.map(\.src))")
  }
}
