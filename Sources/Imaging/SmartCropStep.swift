import ThumbCore

/// The thumbnailer's part of smart cropping (SmartCrop decides): the analysis picture, made from an
/// image the render has anyway, and the chosen region in the coordinates of the image a step reads.
extension Thumbnailer {
  /// `step.output` of the whole of `source` (the decode or an earlier whole-frame result, in stored
  /// orientation), upright and in sRGB: a few tens of thousands of pixels, so the turn and the colour
  /// conversion cost next to nothing.
  static func cropAnalysis(
    _ step: RenderPlanner.AnalysisStep, from source: PlanarImage, output: OutputStage,
    orientation: Orientation
  ) -> CropAnalysisImage {
    let small = Resampler.resample(
      source, region: Region(source.size), to: orientation.uprightSize(of: step.output),
      outputSubsampling: Array(repeating: .none, count: source.planes.count))
    return output.cropAnalysis(of: small, orientation: orientation)
  }

  /// Where a smart-cropped cover variant `spec` sits, in the upright coordinates of the image its step
  /// reads (`sourceUpright`): chosen in the original's coordinates, then scaled as RenderPlanner scales
  /// every region into its source.
  static func smartCropRegion(
    _ spec: VariantSpec, original: PixelSize, analysis: CropAnalysisImage, sourceUpright: PixelSize
  ) -> Region {
    let centred = VariantLayout.make(source: original, box: spec.box, fit: .cover).region
    return SmartCrop.region(centred, in: original, strategy: spec.crop, analysis: analysis).scaled(
      x: Double(sourceUpright.width) / Double(original.width),
      y: Double(sourceUpright.height) / Double(original.height))
  }
}
