"""The bad-input sweep's code; tools/sweep.py is the entry point (arguments, main).

    common    the repository's path, the format families, log, run (a command), parse_size
    binary    big- and little-endian integers read from and written into bytes
    metadata  EXIF (TIFF) blocks and ICC profiles, valid or broken in a named way
    jpeg      JPEG segments: writers, the marker parser, the JPEG mutators
    png       PNG chunks: the chunk writer, the chunk parser, the PNG mutators
    webp      WebP: RIFF, VP8X and ANMF writers, the chunk parser, the WebP mutators
    heif      HEIF and AVIF: the ISOBMFF box, iloc and item parsers, the HEIF/AVIF mutators
    seeds     the seeds (valid photos of every format): made here or taken from the corpus
    mutate    the generic mutators, the registry of mutators by format, make_mutations
    run       the throwaway PostgreSQL, the loopback origin, the workers, the Run that drives them
    checks    the checks of the results, the findings, the printed figures and the JSON summary

Standard library only; Python 3.11.
"""
