#!/usr/bin/env bash
# demo-media.sh PHOTO DIR: makes from one photo the kinds of upload a photo product gets besides
# photos, with Debian's ffmpeg and avifenc, so that no media file lives in the repository:
#
#   fade-in.mp4    a phone-like H.264 clip, 4 s, a keyframe a second, starting black and fading in
#                  (its poster is the first keyframe worth showing, not the black one)
#   hlg.mov        HEVC 10-bit HLG (BT.2020), as phones record HDR video (its poster is tone-mapped)
#   animation.gif  an animated GIF, a slow zoom (its thumbnails are its first frame)
#   hdr-pq.avif    an HDR still: 10-bit AV1, BT.2020 primaries, PQ (tone-mapped to SDR)
#
# Existing files are kept.
set -euo pipefail

photo=${1:?usage: demo-media.sh PHOTO DIR}
dir=${2:?usage: demo-media.sh PHOTO DIR}
mkdir -p "$dir"
ff() { ffmpeg -nostdin -v error -y "$@"; }

# The photo as a 16:9 picture of 1280x720, the frame every clip starts from.
frame="scale=1280:720:force_original_aspect_ratio=increase,crop=1280:720"
zoom="zoompan=z='min(zoom+0.0015,1.3)':d=1:s=1280x720:fps=30"

[ -s "$dir/fade-in.mp4" ] || ff -loop 1 -framerate 30 -t 4 -i "$photo" \
  -vf "$frame,$zoom,fade=in:st=0:d=1.5,format=yuv420p" \
  -c:v libx264 -preset veryfast -g 30 -keyint_min 30 -sc_threshold 0 "$dir/fade-in.mp4"

[ -s "$dir/hlg.mov" ] || ff -loop 1 -framerate 30 -t 2 -i "$photo" \
  -vf "$frame,$zoom,format=yuv420p,setparams=color_primaries=bt709:color_trc=bt709:colorspace=bt709:range=tv,zscale=p=bt2020:t=arib-std-b67:m=bt2020nc:r=tv:npl=203,format=yuv420p10le" \
  -c:v libx265 -preset ultrafast -x265-params "keyint=30:colorprim=bt2020:transfer=arib-std-b67:colormatrix=bt2020nc:log-level=error" \
  -tag:v hvc1 -color_primaries bt2020 -color_trc arib-std-b67 -colorspace bt2020nc -color_range tv \
  "$dir/hlg.mov"

[ -s "$dir/animation.gif" ] || ff -loop 1 -framerate 30 -t 2 -i "$photo" \
  -vf "scale=480:270:force_original_aspect_ratio=increase,crop=480:270,fps=10,zoompan=z='min(zoom+0.01,1.3)':d=1:s=480x270:fps=10,split[a][b];[a]palettegen[p];[b][p]paletteuse" \
  "$dir/animation.gif"

if [ ! -s "$dir/hdr-pq.avif" ]; then
  signal=$(mktemp "${TMPDIR:-/tmp}/thumbd-pq.XXXXXX.png")
  # sRGB to light at an SDR white of 203 cd/m2, BT.709 to BT.2020, then the PQ curve (BT.2408).
  ff -i "$photo" -frames:v 1 \
    -vf "scale=1600:-2,format=gbrpf32le,zscale=tin=iec61966-2-1:t=linear:npl=203,zscale=pin=bt709:p=bt2020:t=smpte2084:npl=203,format=rgb48le" \
    "$signal"
  avifenc -s 8 --min 10 --max 20 --cicp 9/16/9 -d 10 -y 444 "$signal" "$dir/hdr-pq.avif" >/dev/null
  rm -f "$signal"
fi
