import Glibc
import Testing

@testable import Blocking

/// A system call's errno is read at once, and an interrupted call is made again.
@Suite struct SystemCallTests {
  @Test func aFailureCarriesItsErrno() {
    #expect(SystemCall.run { close(-1) } == .failure(SystemCall.Failure(EBADF)))
    #expect(SystemCall.Failure(EBADF).description == "Bad file descriptor")
  }

  @Test func aSuccessCarriesItsResult() {
    #expect(SystemCall.run { Int32(7) } == .success(7))
  }

  @Test func anInterruptedCallIsMadeAgain() {
    var calls = 0
    let result = SystemCall.run { () -> Int in
      calls += 1
      if calls < 3 {
        errno = EINTR
        return -1
      }
      return 5
    }
    #expect(result == .success(5) && calls == 3)
  }
}
