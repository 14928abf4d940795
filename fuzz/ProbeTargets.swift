// The header family: ImageFormat.sniff, ImageProbe.pixelSize (every format, whatever sniff says) and
// ImageProbe.jpegFrame.

func fuzzProbe(_ input: FuzzInput) {
  let bytes = input.bytes

  if let format = ImageFormat.sniff(bytes) {
    require(bytes.count >= minimumLength(format), "\(format) sniffed from \(bytes.count) bytes")
    require(ImageFormat.sniff(input.extended) == format, "appended bytes changed the sniffed \(format)")
  }

  let frame = ImageProbe.jpegFrame(bytes)
  if let frame {
    require(
      (1...65535).contains(frame.size.width) && (1...65535).contains(frame.size.height),
      "JPEG frame of \(frame.size)")
    require((1...255).contains(frame.components), "JPEG frame with \(frame.components) components")
    require(
      frame.sampling.allSatisfy { (1...15).contains($0.horizontal) && (1...15).contains($0.vertical) },
      "JPEG sampling factors \(frame.sampling)")
    // What the memory cost model computes from the frame: must not trap on any frame.
    require(frame.coefficientBlocks > 0, "no coefficient blocks for \(frame)")
    require(ImageProbe.jpegFrame(input.extended) == frame, "appended bytes changed the JPEG frame")
  }

  for format in allFormats {
    guard let size = ImageProbe.pixelSize(bytes, format: format) else { continue }
    require(size.width > 0 && size.height > 0, "\(format) size \(size)")
    require(
      size.width <= maximumSide(format) && size.height <= maximumSide(format), "\(format) size \(size)")
    require(bytes.count >= minimumLength(format), "\(format) size from \(bytes.count) bytes")
    if format == .jpeg { require(size == frame?.size, "pixelSize \(size) is not jpegFrame's") }
    require(
      ImageProbe.pixelSize(input.extended, format: format) == size, "appended bytes changed \(format) \(size)"
    )
  }
}

let allFormats: [ImageFormat] = [.jpeg, .png, .webp, .heif, .avif, .gif, .tiff, .bmp]

/// The fewest bytes from which a format can be sniffed, or its size read (for the formats that have one).
func minimumLength(_ format: ImageFormat) -> Int {
  switch format {
  case .jpeg: 3  // FF D8 FF
  case .png: 8  // signature (24 with IHDR's size)
  case .webp, .heif, .avif: 12  // RIFF....WEBP, ....ftypBRND
  case .gif: 6  // GIF89a
  case .tiff: 4  // II*\0, MM\0*
  case .bmp: 26  // file header and the start of the DIB header
  }
}

/// The largest side a header can declare: 16 bits for JPEG and GIF, 14 bits (lossy, lossless) or 24 bits
/// (extended) for WebP, 2^31-1 for PNG (the spec's limit, though 32 bits are stored; also the limit of
/// the `int` width and height columns of thumbs.originals, where pixelSize's answer is written).
func maximumSide(_ format: ImageFormat) -> Int {
  switch format {
  case .jpeg, .gif: 65535
  case .webp: 1 << 24
  case .png: Int(Int32.max)
  case .heif, .avif, .tiff, .bmp: 0  // pixelSize does not read these
  }
}
