import Foundation
import Storage
import Testing
import ThumbCore
import Worker

/// A claim is long enough that no delete started inside its window outlives it.
@Suite struct CollectionSettingsTests {
  /// A store that only answers how long its operations may take.
  struct SlowStore: ThumbnailStore {
    var longestOperationSeconds: Double
    func put(key: String, bytes: [UInt8], contentType: String) async throws(JobError) -> PutAnswer {
      .uploaded
    }
    func check() async throws(JobError) {}
    func delete(key: String) async throws(JobError) {}
    func get(key: String) async throws(JobError) -> [UInt8]? { nil }
    func list(after key: String?, limit: Int) async throws(JobError) -> StoredObjects {
      StoredObjects(objects: [], next: nil)
    }
    func location(of key: String) -> String { key }
    var identity: String { "test://slow" }
  }

  @Test(arguments: [(0.0, 3.0, 10.0), (0.0, 60.0, 60.0), (30.0, 5.0, 70.0), (30.0, 120.0, 120.0)])
  func claimsCoverTheLongestDelete(longest: Double, lease: Double, claim: Double) {
    var settings = CollectionSettings(graceSeconds: 0)
    settings.fit(to: SlowStore(longestOperationSeconds: longest), leaseSeconds: lease)
    #expect(settings.claimSeconds == claim)
    // A delete started at the window's last moment ends before the claim does.
    #expect(settings.deleteWindowSeconds > 0)
    #expect(settings.deleteWindowSeconds + longest < settings.claimSeconds)
  }
}
