import Testing

@testable import ThumbCore

/// The SPS reader: sizes, conformance window, depths and the VUI's colour description, with H.265's
/// inferences when the VUI is silent; anything cut short or out of range is nil, never a crash.
@Suite struct HEVCSequenceParametersTests {
  /// Writes an SPS bit by bit as H.265 7.3.2.2 lays it out, with emulation prevention added.
  struct Writer {
    var bits: [Bool] = []
    mutating func u(_ value: Int, _ count: Int) {
      for i in stride(from: count - 1, through: 0, by: -1) { bits.append(value >> i & 1 == 1) }
    }
    mutating func ue(_ value: Int) {
      let code = value + 1
      let length = Int.bitWidth - code.leadingZeroBitCount
      u(0, length - 1)
      u(code, length)
    }
    /// The NAL unit: header (type 33), payload with stop bit, emulation prevention.
    func unit() -> [UInt8] {
      var payload = bits + [true]
      while payload.count % 8 != 0 { payload.append(false) }
      var bytes: [UInt8] = stride(from: 0, to: payload.count, by: 8).map { start in
        payload[start..<(start + 8)].reduce(0) { $0 << 1 | ($1 ? 1 : 0) }
      }
      var escaped: [UInt8] = [33 << 1, 1]
      var zeros = 0
      for b in bytes {
        if zeros >= 2 && b <= 3 {
          escaped.append(3)
          zeros = 0
        }
        escaped.append(b)
        zeros = b == 0 ? zeros + 1 : 0
      }
      bytes = escaped
      return bytes
    }
  }

  static func sps(
    chroma: Int = 1, width: Int = 456, height: Int = 464, window: (Int, Int, Int, Int)? = (0, 2, 0, 1),
    bits: Int = 8, shortTermSets: Int = 2, vui: (full: Bool, colour: (Int, Int, Int)?)? = (true, (9, 16, 9))
  ) -> [UInt8] {
    var w = Writer()
    w.u(0, 4)
    w.u(0, 3)  // one sub-layer
    w.u(1, 1)
    w.u(0x01, 8)  // profile space, tier, Main
    w.u(0x6000_0000, 32)
    w.u(0, 48)  // constraint flags: a run of zero bytes that needs emulation prevention
    w.u(90, 8)
    w.ue(0)
    w.ue(chroma)
    if chroma == 3 { w.u(0, 1) }
    w.ue(width)
    w.ue(height)
    if let window {
      w.u(1, 1)
      w.ue(window.0)
      w.ue(window.1)
      w.ue(window.2)
      w.ue(window.3)
    } else {
      w.u(0, 1)
    }
    w.ue(bits - 8)
    w.ue(bits - 8)
    w.ue(4)  // log2_max_pic_order_cnt_lsb_minus4
    w.u(1, 1)
    w.ue(1)
    w.ue(0)
    w.ue(0)
    for v in [0, 3, 0, 3, 1, 1] { w.ue(v) }
    w.u(1, 1)  // scaling lists enabled
    w.u(0, 1)  // ... but not sent
    w.u(0, 1)
    w.u(1, 1)
    w.u(0, 1)  // no PCM
    w.ue(shortTermSets)
    for index in 0..<shortTermSets {
      if index == 0 {
        w.ue(1)  // one negative picture
        w.ue(0)
        w.ue(0)
        w.u(1, 1)
      } else {
        w.u(1, 1)  // predicted from the previous set
        w.u(0, 1)
        w.ue(0)
        w.u(1, 1)  // used, for each of the previous set's 1 + 1 entries
        w.u(0, 1)
        w.u(1, 1)  // not used, but a delta
      }
    }
    w.u(0, 1)  // no long-term pictures
    w.u(1, 1)
    w.u(1, 1)
    if let vui {
      w.u(1, 1)
      w.u(1, 1)  // aspect ratio: extended SAR
      w.u(255, 8)
      w.u(4, 16)
      w.u(3, 16)
      w.u(0, 1)
      w.u(1, 1)  // video signal type
      w.u(5, 3)
      w.u(vui.full ? 1 : 0, 1)
      if let colour = vui.colour {
        w.u(1, 1)
        w.u(colour.0, 8)
        w.u(colour.1, 8)
        w.u(colour.2, 8)
      } else {
        w.u(0, 1)
      }
    } else {
      w.u(0, 1)
    }
    return w.unit()
  }

  @Test func readsSizesWindowDepthsAndTheColourDescription() throws {
    let sps = try #require(HEVCSequenceParameters.parse(Self.sps()))
    #expect(sps.chromaFormat == 1)
    #expect(sps.codedWidth == 456 && sps.codedHeight == 464)
    // 4:2:0 offsets count chroma samples: 2 and 1 of them are 4 and 2 luma samples.
    #expect(sps.outputWidth == 452 && sps.outputHeight == 462)
    #expect(sps.lumaBits == 8 && sps.chromaBits == 8)
    #expect(sps.signal == VideoSignal(fullRange: true, primaries: 9, transfer: 16, matrix: 9))
  }

  @Test func aSilentVUIMeansLimitedRangeAndUnspecifiedColour() throws {
    let none = try #require(HEVCSequenceParameters.parse(Self.sps(vui: nil)))
    #expect(none.signal == VideoSignal(fullRange: false, primaries: 2, transfer: 2, matrix: 2))
    let rangeOnly = try #require(HEVCSequenceParameters.parse(Self.sps(vui: (true, nil))))
    #expect(rangeOnly.signal == VideoSignal(fullRange: true, primaries: 2, transfer: 2, matrix: 2))
  }

  @Test func fourFourFourWindowsCountLumaSamplesAndTenBitsAreRead() throws {
    let sps = try #require(
      HEVCSequenceParameters.parse(
        Self.sps(chroma: 3, width: 456, height: 464, window: (0, 5, 0, 3), bits: 10)))
    #expect(sps.outputWidth == 451 && sps.outputHeight == 461)
    #expect(sps.lumaBits == 10)
  }

  @Test func findsTheSPSAmongLengthPrefixedUnits() throws {
    let unit = Self.sps()
    let vps: [UInt8] = [32 << 1, 1, 0x0C, 0x01]
    func prefixed(_ u: [UInt8]) -> [UInt8] { [0, 0, UInt8(u.count >> 8), UInt8(u.count & 0xFF)] + u }
    let sps = HEVCSequenceParameters.find(in: prefixed(vps) + prefixed(unit))
    #expect(sps?.codedWidth == 456)
    #expect(HEVCSequenceParameters.find(in: prefixed(vps)) == nil)
    #expect(HEVCSequenceParameters.find(in: [0, 0, 0, 99, 1]) == nil)
  }

  @Test func everyCutAndMostByteFlipsGiveNilOrAValueNeverACrash() {
    let unit = Self.sps()
    let whole = HEVCSequenceParameters.parse(unit)
    #expect(whole != nil)
    // Cut before the colour description: the reader must not invent the rest.
    for length in 0..<(unit.count - 3) {
      #expect(HEVCSequenceParameters.parse(unit.prefix(length)) == nil, "cut at \(length)")
    }
    for at in 2..<unit.count {
      for value: UInt8 in [0, 0xFF, unit[at] ^ 0x10] {
        var copy = unit
        copy[at] = value
        _ = HEVCSequenceParameters.parse(copy)
      }
    }
  }

  @Test func aWindowAsLargeAsThePictureIsRefused() {
    #expect(HEVCSequenceParameters.parse(Self.sps(width: 16, height: 16, window: (4, 4, 0, 0))) == nil)
  }
}
