import Foundation
import Testing
import ThumbCore

@testable import Storage

/// A file is written whole or not at all, and a directory the worker cannot write to is the
/// configuration's fault (storage_refused), not a transient failure.
@Suite struct LocalDirectoryStoreTests {
  let root = FileManager.default.temporaryDirectory.appendingPathComponent(
    "thumbd-store-\(UUID().uuidString)")

  @Test func aFileIsWrittenWholeUnderItsKeyAndNoTemporaryIsLeft() throws {
    defer { try? FileManager.default.removeItem(at: root) }
    let final = root.appendingPathComponent("ab/cd/abcd.jpg")
    let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0) }
    try LocalDirectoryStore.store(bytes, at: final)
    #expect(try Data(contentsOf: final) == Data(bytes))
    let names = try FileManager.default.contentsOfDirectory(atPath: final.deletingLastPathComponent().path)
    #expect(names == ["abcd.jpg"])
  }

  @Test func aFileWhereAFolderShouldBeIsARefusal() throws {
    defer { try? FileManager.default.removeItem(at: root) }
    try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    let blocker = root.appendingPathComponent("ab")
    try Data("not a folder".utf8).write(to: blocker)
    do {
      try LocalDirectoryStore.store([1, 2, 3], at: blocker.appendingPathComponent("x.jpg"))
      Issue.record("stored under a file")
    } catch {
      #expect(error.code == .storageRefused, "\(error)")
      #expect(error.message.contains("Not a directory"), "\(error)")
    }
  }

  @Test func errnoDecidesWhoseFaultItIs() {
    #expect(LocalDirectoryStore.classify(EACCES, "writing x").code == .storageRefused)
    #expect(LocalDirectoryStore.classify(EROFS, "writing x").code == .storageRefused)
    #expect(LocalDirectoryStore.classify(ENOSPC, "writing x").code == .storageFailed)
    #expect(LocalDirectoryStore.classify(EIO, "writing x").message == "writing x: Input/output error")
  }
}
