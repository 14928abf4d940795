#!/usr/bin/env bash
# bench/setup.sh: the Python side of the image benchmark (bench/images) and of the queue
# benchmark (bench/queue).
# Creates a virtualenv at ${THUMBD_BENCH_VENV:-$HOME/.cache/thumbd-bench-venv} with pyvips (and its
# bundled libvips wheel) and Pillow, plus pgqueuer and asyncpg (its driver in bench/pgqueuer_bench.py),
# numpy (SSIM in bench/quality) and psycopg (bench/peer_worker.py, the peer of bench/job).
# A second virtualenv, ${THUMBD_BENCH_DEBIAN_VIPS_VENV:-$HOME/.cache/thumbd-bench-debian-vips}, holds pyvips
# without its wheel, bound to Debian's own libvips (libvips42): the peer for HEIC, since the PyPI wheel's
# libvips has no HEVC decoder.
# Idempotent: a second run only checks and prints the versions.
set -euo pipefail
venv=${THUMBD_BENCH_VENV:-$HOME/.cache/thumbd-bench-venv}
py=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating virtualenv $venv" >&2
  "$py" -m venv "$venv"
fi
vpy="$venv/bin/python"
pipq() { "$vpy" -m pip install --disable-pip-version-check -q "$@"; }

have() { "$vpy" - <<'PY' >/dev/null 2>&1
import pyvips, PIL
pyvips.Image.black(1, 1)
PY
}

if ! have; then
  # 1) pyvips with its binary extra (bundled libvips wheel, pyvips-binary).
  if ! pipq 'pyvips[binary]' Pillow || ! have; then
    echo "setup: pyvips[binary] did not work, trying pyvips-binary + pyvips" >&2
    if ! pipq pyvips-binary pyvips Pillow || ! have; then
      # 3) last resort: Debian's libvips with the plain pyvips binding.
      echo "setup: falling back to Debian's libvips-dev + pyvips" >&2
      if ! dpkg -s libvips-dev >/dev/null 2>&1; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libvips-dev >/dev/null
      fi
      pipq pyvips Pillow
    fi
  fi
fi

# Debian's libvips for HEIC (pyvips in ABI mode finds libvips.so.42 itself).
debvenv=${THUMBD_BENCH_DEBIAN_VIPS_VENV:-$HOME/.cache/thumbd-bench-debian-vips}
have_debvips() {
  env -u VIPSHOME "$debvenv/bin/python" -c \
    'import pyvips, sys; sys.exit(pyvips.type_find("VipsOperation", "heifload") == 0)' >/dev/null 2>&1
}
if ! have_debvips; then
  if ! dpkg -s libvips42 >/dev/null 2>&1; then
    echo "setup: installing Debian's libvips42" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libvips42 >/dev/null
  fi
  [ -x "$debvenv/bin/python" ] || "$py" -m venv "$debvenv"
  "$debvenv/bin/python" -m pip install --disable-pip-version-check -q pyvips
fi

# The end-to-end benchmark's peer worker (bench/peer_worker.py, run by bench/job) talks to PostgreSQL
# through psycopg 3, in both virtualenvs: the PyPI libvips one for JPEG, the Debian libvips one for HEIC.
for pyx in "$vpy" "$debvenv/bin/python"; do
  if ! "$pyx" -c 'import psycopg' >/dev/null 2>&1; then
    echo "setup: installing psycopg into $(dirname "$(dirname "$pyx")")" >&2
    "$pyx" -m pip install --disable-pip-version-check -q 'psycopg[binary]'
  fi
done

# The queue benchmark's contender: pgqueuer (PostgreSQL job queue for Python) with asyncpg.
have_pgq() { "$vpy" -c 'import pgqueuer, asyncpg' >/dev/null 2>&1; }
if ! have_pgq; then
  echo "setup: installing pgqueuer and asyncpg" >&2
  pipq pgqueuer asyncpg
fi

# Pillow's JPEG XL reader (jxl-oxide), for bench/images --stills.
if ! "$vpy" -c 'import pillow_jxl' >/dev/null 2>&1; then
  echo "setup: installing pillow-jxl-plugin" >&2
  pipq pillow-jxl-plugin
fi

# The quality benchmark's arithmetic (bench/quality: SSIM).
if ! "$vpy" -c 'import numpy' >/dev/null 2>&1; then
  echo "setup: installing numpy" >&2
  pipq numpy
fi

"$vpy" - <<'PY'
import pyvips, PIL
try:
    import importlib.metadata as md
    binary = md.version("pyvips-binary")
except Exception:
    binary = None
print(f"libvips {pyvips.version(0)}.{pyvips.version(1)}.{pyvips.version(2)}"
      + (f" (pyvips-binary {binary})" if binary else " (system library)"))
print(f"pyvips {pyvips.__version__} (api mode: {pyvips.API_mode})")
print(f"Pillow {PIL.__version__}")
import importlib.metadata as md
print(f"pgqueuer {md.version('pgqueuer')}")
print(f"asyncpg {md.version('asyncpg')}")
print(f"numpy {md.version('numpy')}")
print(f"psycopg {md.version('psycopg')}")
PY
echo "Debian libvips: $(env -u VIPSHOME "$debvenv/bin/python" -c 'import pyvips; print("%d.%d.%d" % tuple(pyvips.version(i) for i in range(3)))')"
echo "setup: venv $venv ready" >&2
