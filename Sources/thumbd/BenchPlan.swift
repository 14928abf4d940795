import ArgumentParser
import Foundation
import ThumbCore

/// `thumbd bench plan`: thumbd's render plan for an original of a given size, for the benchmarks' other
/// contenders (bench/plan.py), so that they do the same work as thumbd without a copy of the planner.
/// Reads lines `WIDTH HEIGHT [DECODED_WIDTH DECODED_HEIGHT]` (upright sizes; the decoded size defaults to
/// the original's) on standard input and answers each with one line of JSON, at once: a benchmark keeps
/// one such process and asks it for every file.
struct BenchPlan: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "plan",
    abstract: "The default profile's render plan for each size read on standard input, as JSON lines.")

  func run() throws {
    let variants = Profile.default.variants
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    while let line = readLine() {
      let numbers = line.split(separator: " ").compactMap { Int($0) }
      guard numbers.count == 2 || numbers.count == 4, numbers.allSatisfy({ $0 > 0 }) else {
        throw ValidationError("expected WIDTH HEIGHT [DECODED_WIDTH DECODED_HEIGHT], got '\(line)'")
      }
      let original = PixelSize(width: numbers[0], height: numbers[1])
      let decoded = numbers.count == 4 ? PixelSize(width: numbers[2], height: numbers[3]) : original
      let plan = Plan(original: original, decoded: decoded, variants: variants)
      FileHandle.standardOutput.write(try encoder.encode(plan) + Data("\n".utf8))
    }
  }

  /// One answer: the variants, where each sits in the original, the JPEG decode's DCT denominator, and
  /// the steps from `decoded`.
  struct Plan: Encodable {
    struct Variant: Encodable {
      var name: String
      var box: [Int]
      var fit: String
      var quality: Int
      /// In the original's pixels: x, y, width, height.
      var region: [Double]
      var output: [Int]
      var scale: Double
    }

    struct Step: Encodable {
      var variant: Int
      /// nil: the decode; otherwise the variant whose result it is made from.
      var source: Int?
      /// In the source's pixels: x, y, width, height.
      var region: [Double]
      var output: [Int]
    }

    var variants: [Variant]
    var decodeDenominator: Int
    var steps: [Step]

    init(original: PixelSize, decoded: PixelSize, variants specs: [VariantSpec]) {
      variants = specs.map { spec in
        let layout = VariantLayout.make(source: original, box: spec.box, fit: spec.fit)
        return Variant(
          name: spec.name, box: [spec.width, spec.height], fit: spec.fit.rawValue, quality: spec.quality,
          region: [layout.region.x, layout.region.y, layout.region.width, layout.region.height],
          output: [layout.output.width, layout.output.height], scale: layout.scale)
      }
      decodeDenominator = RenderPlanner.decodeDenominator(source: original, variants: specs)
      steps = RenderPlanner.steps(original: original, decoded: decoded, variants: specs).map {
        Step(
          variant: $0.variant, source: $0.source,
          region: [$0.region.x, $0.region.y, $0.region.width, $0.region.height],
          output: [$0.output.width, $0.output.height])
      }
    }
  }
}
