import Testing

@testable import Hashing

/// SHA-256 against the test vectors of FIPS 180-2.
@Suite struct DigestTests {
  @Test func knownVectors() {
    #expect(Digest.sha256Hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    #expect(
      Digest.sha256Hex(Array("abc".utf8))
        == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    #expect(
      Digest.sha256Hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
        == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    #expect(
      Digest.sha256Hex([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
        == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
  }
}

/// The streamed digest is the one-shot digest, however the bytes are cut.
@Suite struct StreamingSHA256Tests {
  @Test func piecesOfAnySizeGiveTheWholesDigest() throws {
    let bytes = (0..<200_003).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
    for piece in [1, 63, 64, 65, 16_384, 262_144] {
      let stream = try #require(StreamingSHA256())
      var start = 0
      while start < bytes.count {
        let end = min(start + piece, bytes.count)
        bytes[start..<end].withUnsafeBytes { stream.update($0) }
        start = end
      }
      #expect(stream.hexDigest() == Digest.sha256Hex(bytes), "pieces of \(piece) bytes")
    }
  }

  @Test func nothingFedIsTheEmptyDigest() throws {
    let stream = try #require(StreamingSHA256())
    stream.update(UnsafeRawBufferPointer(start: nil, count: 0))
    #expect(stream.hexDigest() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
  }

  /// Once taken, the digest stays what it was: asked again, or after more bytes.
  @Test func theDigestOnceTakenStays() throws {
    let stream = try #require(StreamingSHA256())
    let abc = Array("abc".utf8)
    abc.withUnsafeBytes { stream.update($0) }
    let first = stream.hexDigest()
    abc.withUnsafeBytes { stream.update($0) }
    #expect(first == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    #expect(stream.hexDigest() == first)
  }
}
