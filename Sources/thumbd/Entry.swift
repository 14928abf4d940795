import Imaging

/// The process's entry: settings that must be in place before any thread starts, then the commands.
@main
enum Entry {
  static func main() async {
    JPEGEncoding.optimizeHuffmanTablesForThisProcess()
    await Thumbd.main()
  }
}
