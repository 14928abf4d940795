import Glibc
public import ThumbCore

/// One 8-bit channel of an image. Rows are `stride` bytes apart; `width` x `height` of them are the
/// picture. The buffer may hold padding to the right and below: TurboJPEG reads and writes YUV planes
/// padded to whole MCUs, and a plane with padding can go to and from it without a copy.
///
/// The bytes live in a PlaneStorage (copied on write), not an Array, because C decoders fill several
/// planes in one call and need every plane's pointer at once.
public struct Plane: Sendable {
  public var width: Int
  public var height: Int
  public var stride: Int
  private var storage: PlaneStorage

  /// A zeroed plane (calloc: large planes come as fresh zero pages, not written until used), or with
  /// `zeroed: false` one whose every byte the caller is about to write (no memset of a heap block).
  public init(width: Int, height: Int, stride: Int? = nil, rows: Int? = nil, zeroed: Bool = true) {
    let stride = stride ?? width
    precondition(stride >= width && (rows ?? height) >= height, "plane padding must not be negative")
    self.width = width
    self.height = height
    self.stride = stride
    self.storage = PlaneStorage(count: stride * (rows ?? height), zeroed: zeroed)
  }

  public var size: PixelSize { PixelSize(width: width, height: height) }
  /// Rows in the buffer, padding included.
  var rows: Int { storage.count / max(1, stride) }
  public var byteCount: Int { storage.count }

  /// The picture's bytes, rows packed (a copy: for tests and tools).
  public var bytes: [UInt8] {
    withUnsafeBufferPointer { p in
      (0..<height).flatMap { y in Array(UnsafeBufferPointer(rebasing: p[(y * stride)..<(y * stride + width)]))
      }
    }
  }

  public func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
    try body(UnsafeBufferPointer(start: storage.base, count: storage.count))
  }

  public mutating func withUnsafeMutableBufferPointer<R>(
    _ body: (UnsafeMutableBufferPointer<UInt8>) throws -> R
  ) rethrows -> R {
    if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
    return try body(UnsafeMutableBufferPointer(start: storage.base, count: storage.count))
  }

  /// Copies the last column and row into the padding, so an encoder that reads whole MCUs sees the
  /// edge continued rather than zeros (a dark fringe after chroma subsampling).
  mutating func replicateEdgesIntoPadding() {
    let rows = self.rows
    guard stride > width || rows > height else { return }
    let (w, h, s) = (width, height, stride)
    withUnsafeMutableBufferPointer { p in
      for y in 0..<h where s > w {
        let last = p[y * s + w - 1]
        for x in w..<s { p[y * s + x] = last }
      }
      for y in h..<rows {
        for x in 0..<s { p[y * s + x] = p[(h - 1) * s + x] }
      }
    }
  }

  /// The plane turned upright (see Orientation): done on outputs, which are small.
  func oriented(_ orientation: Orientation) -> Plane {
    if orientation == .up { return self }
    let out = orientation.uprightSize(of: size)
    var result = Plane(width: out.width, height: out.height)
    let (w, h, s) = (width, height, stride)
    withUnsafeBufferPointer { src in
      result.withUnsafeMutableBufferPointer { dst in
        var d = 0
        for y in 0..<out.height {
          for x in 0..<out.width {
            let p = orientation.storedCoordinate(x: x, y: y, w: w, h: h)
            dst[d] = src[p.y * s + p.x]
            d += 1
          }
        }
      }
    }
    return result
  }
}

/// A plane's bytes, freed once when the last Plane holding them goes.
///
/// @unchecked Sendable: Plane copies the storage before any write unless it holds the only reference,
/// so storage shared between threads is only ever read.
final class PlaneStorage: @unchecked Sendable {
  let base: UnsafeMutablePointer<UInt8>
  let count: Int

  /// The recycler the storage came from and goes back to (PlaneRecycler.current when it was made).
  private let recycler: PlaneRecycler?
  /// The bytes allocated: `count`, or more for a buffer the recycler kept from a larger plane.
  private let allocated: Int

  init(count: Int, zeroed: Bool = true) {
    let recycler = PlaneRecycler.current
    if let kept = recycler?.take(count) {
      if zeroed { memset(kept.base, 0, count) }
      self.base = kept.base.assumingMemoryBound(to: UInt8.self)
      self.allocated = kept.size
    } else {
      guard let raw = zeroed ? calloc(max(1, count), 1) : malloc(max(1, count)) else {
        fatalError("out of memory for a \(count)-byte plane")
      }
      self.base = raw.assumingMemoryBound(to: UInt8.self)
      self.allocated = count
    }
    self.count = count
    self.recycler = recycler
  }

  func copy() -> PlaneStorage {
    let other = PlaneStorage(count: count, zeroed: false)
    other.base.update(from: base, count: count)
    return other
  }

  deinit {
    if recycler?.keep(base, count: allocated) != true { free(base) }
  }
}

/// Mutable base pointers of every plane at once (C APIs take an array of plane pointers).
func withMutablePlanePointers<R, E: Error>(
  _ planes: inout [Plane], _ body: ([UnsafeMutablePointer<UInt8>]) throws(E) -> R
) throws(E) -> R {
  // Make each storage unique first; afterwards the pointers stay valid while `planes` is held.
  for i in planes.indices { planes[i].withUnsafeMutableBufferPointer { _ in } }
  let pointers = planes.map { plane in
    plane.withUnsafeBufferPointer { UnsafeMutablePointer(mutating: $0.baseAddress!) }
  }
  defer { withExtendedLifetime(planes) {} }
  return try body(pointers)
}
