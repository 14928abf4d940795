import Foundation
import Synchronization
import Testing

@testable import Blocking

@Suite struct ThreadNameTests {
  /// The kernel's name of a thread that named itself, read from the thread: cut to 15 bytes.
  func nameOfAThreadNamed(_ name: String) async -> String {
    await withCheckedContinuation { continuation in
      let thread = Thread {
        nameCurrentThread(name)
        let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        continuation.resume(returning: comm.trimmingCharacters(in: .newlines))
      }
      thread.start()
    }
  }

  @Test func aThreadNamesItselfAtOnce() async {
    #expect(await nameOfAThreadNamed("thumbd-test") == "thumbd-test")
  }

  @Test func aLongNameIsCutToFifteenBytes() async {
    #expect(await nameOfAThreadNamed("thumbd-a-very-long-name") == "thumbd-a-very-l")
  }
}
