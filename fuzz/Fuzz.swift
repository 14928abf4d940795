// libFuzzer entry point for ThumbCore's hand-written binary parsers. Built by fuzz/run.sh together with
// every Sources/ThumbCore/**/*.swift into one module, so the targets can reach internal helpers too.
//
// One binary, every parser on every input: the parsers read the same formats (a JPEG goes through sniff,
// pixelSize, jpegFrame and jpegOrientation in production), so one corpus feeds them all and a real file
// used as a seed reaches every parser unchanged. Dispatching on a first byte would shift every real seed
// by one and give each parser a private corpus. THUMBD_FUZZ_TARGET=<family> (fuzz/run.sh's TARGET)
// narrows a run to one family, e.g. after adding a parser; merging always uses them all.
//
// To fuzz a new parser: call it, with its invariants, from the family file it belongs to (or a new
// fuzz/<Family>Targets.swift with a line in `FuzzTargets.all`), and mirror the invariants in
// Tests/ThumbCoreTests/FuzzRegressionTests.swift.

import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let input = FuzzInput(UnsafeRawBufferPointer(start: data, count: size))
  for target in FuzzTargets.selected { target.run(input) }
  return 0
}

/// A parser family: a name for THUMBD_FUZZ_TARGET and a function that runs its parsers on an input.
struct FuzzTarget: Sendable {
  let name: String
  let run: @Sendable (FuzzInput) -> Void
}

enum FuzzTargets {
  static let all: [FuzzTarget] = [
    FuzzTarget(name: "exif", run: fuzzExif),
    FuzzTarget(name: "probe", run: fuzzProbe),
  ]

  static let selected: [FuzzTarget] = {
    guard let wanted = ProcessInfo.processInfo.environment["THUMBD_FUZZ_TARGET"], wanted != "all",
      !wanted.isEmpty
    else { return all }
    let chosen = all.filter { $0.name == wanted }
    if chosen.isEmpty {
      fatalError(
        "THUMBD_FUZZ_TARGET=\(wanted): no such target (\(all.map(\.name).joined(separator: ", ")), all)")
    }
    return chosen
  }()
}

/// One fuzz input in the shapes the parsers take.
struct FuzzInput {
  /// libFuzzer's own copy, allocated at exactly `count` bytes: ASan reports any read past its end, which a
  /// Swift array (whose capacity may be larger) would not, and raw-buffer subscripts are unchecked in -O.
  let raw: UnsafeRawBufferPointer
  let bytes: [UInt8]
  /// The input with bytes appended. Every parser answers from a prefix of its input, so an answer it
  /// found must not change when more bytes follow.
  let extended: [UInt8]

  init(_ raw: UnsafeRawBufferPointer) {
    self.raw = raw
    bytes = Array(raw)
    // Marker-like and zero bytes, then the input's own start: the most misleading tail we can cheaply make.
    extended = bytes + [0xFF, 0xD9, 0xFF, 0xE1, 0, 0, 0, 0] + bytes.prefix(24)
  }
}

/// An invariant of a parser: a violation is a finding, reported as a crash so that libFuzzer keeps it.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
  if !condition { fatalError("invariant violated: \(message())") }
}
