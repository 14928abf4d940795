#!/usr/bin/env bash
# sample-photos.sh DIR [N]: put up to N (default 20) large JPEG photographs into DIR.
# They come from Debian's wallpaper packages, fetched with apt on this machine, so no photo
# ever has to live in the repository. The choice is deterministic (sorted names, first N),
# so every machine gets the same files.
set -euo pipefail

dir=${1:?usage: sample-photos.sh DIR [N]}
n=${2:-20}
case $n in '' | *[!0-9]*) echo "sample-photos: N must be a number, got '$n'" >&2; exit 2 ;; esac

count_jpgs() { find "$dir" -maxdepth 1 -type f -name '*.jpg' | wc -l; }

mkdir -p "$dir"
if [ "$(count_jpgs)" -ge "$n" ]; then
  exit 0
fi

# Packages with real photographs (not just artwork), a few MB up to 5640x3172 pixels.
packages=(mate-backgrounds plasma-workspace-wallpapers ukui-wallpapers)

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  as_root=(false) # cannot refresh the package lists; the first download attempt must do
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/thumbd-photos.XXXXXX")
trap 'rm -rf "$work"' EXIT
# As root, apt downloads as the _apt user; let it write here so it does not fall back to
# an "unsandboxed" download with a warning.
if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then
  chown _apt "$work"
fi

echo "sample-photos: downloading ${packages[*]} (about 160 MB)" >&2
if ! (cd "$work" && apt-get download -qq "${packages[@]}" >/dev/null 2>&1); then
  # A fresh machine has no package lists yet (or stale ones naming versions that are gone).
  "${as_root[@]}" apt-get update -qq
  (cd "$work" && apt-get download -qq "${packages[@]}" >/dev/null)
fi

for deb in "$work"/*.deb; do
  dpkg -x "$deb" "$work/x"
done

# Flatten the path under /usr/share into a URL-safe file name, e.g.
# backgrounds_mate_abstract_Elephants_5640x3172.jpg. The size floor skips icons and previews.
# LC_ALL=C: the same order whatever the caller's locale.
find "$work/x" -type f \( -iname '*.jpg' -o -iname '*.jpeg' \) -size +500k |
  while IFS= read -r f; do
    rel=${f#"$work"/x/usr/share/}
    rel=${rel#"$work"/x/}
    name=$(printf '%s' "${rel%.*}" | tr '/' '_' | tr -c 'A-Za-z0-9._-' '_')
    printf '%s.jpg\t%s\n' "$name" "$f"
  done | LC_ALL=C sort >"$work/list"
# Via a file: head quitting early would otherwise SIGPIPE sort and, under pipefail, abort.
head -n "$n" "$work/list" |
  while IFS=$'\t' read -r name f; do
    [ -f "$dir/$name" ] && continue
    # Copy then rename, so an interrupted run never leaves a half-written photo behind.
    cp "$f" "$dir/.$name.part"
    mv "$dir/.$name.part" "$dir/$name"
  done

echo "sample-photos: $(count_jpgs) photographs in $dir" >&2
