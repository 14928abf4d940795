"""What the programs in bench/ share: messages, the virtualenv, the corpus, the thumbd binary, child
processes and a throwaway PostgreSQL.

The programs import it as they import bench/plan.py, with bench/ first on sys.path:

    sys.dont_write_bytecode = True  # no __pycache__ in bench/
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import benchlib  # noqa: E402

Standard library only: bench/pgqueuer_bench.py runs it under the virtualenv's Python. bench/contenders.py
does not import it: it runs inside the children whose wall time bench/images measures, and this module,
compiled from source on every start (no bytecode is written in bench/), would add its import to them.
"""

import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# The benchmark corpus: ../shared/corpus/fetch-photos, 28 photographs from Debian's wallpaper packages.
EXPECTED_FILES = 28
DEFAULT_CORPUS = os.path.expanduser("~/.cache/thumbd-corpus")
FETCH_PHOTOS = os.path.join(os.path.dirname(REPO), "shared", "corpus", "fetch-photos")
# The name in front of messages: "bench/images" for bench/images. bench/pgqueuer_bench.py sets its own.
PROGRAM = "bench/" + os.path.basename(sys.argv[0])


class Failure(Exception):
    """Something a run cannot go on from: a child that failed, psql that failed, a broken output."""


def log(message):
    print(message, file=sys.stderr, flush=True)


def die(message, code=2):
    print(f"{PROGRAM}: {message}", file=sys.stderr)
    sys.exit(code)


def run_main(main, crash_status=None):
    """Exits with main()'s return value. A Failure exits 1 with its message. With crash_status, any
    exception, a Failure too, prints its traceback and exits with that status instead."""
    try:
        sys.exit(main())
    except Exception as error:  # not SystemExit or KeyboardInterrupt: they go on as they are
        if crash_status is not None:
            traceback.print_exc()
            sys.exit(crash_status)
        if isinstance(error, Failure):
            die(str(error), 1)
        raise


# ----------------------------------------------------------------------------------- the virtualenv

def venv_python(probe="pyvips, PIL"):
    """The Python of bench/setup.sh's virtualenv (THUMBD_BENCH_VENV, default ~/.cache/thumbd-bench-venv),
    after running bench/setup.sh when `import PROBE` fails there."""
    venv = os.environ.get("THUMBD_BENCH_VENV") or os.path.expanduser("~/.cache/thumbd-bench-venv")
    py = os.path.join(venv, "bin", "python")
    check = [py, "-c", f"import {probe}"]
    if not (os.access(py, os.X_OK) and subprocess.run(check, capture_output=True).returncode == 0):
        log(f"{PROGRAM}: no virtualenv with {probe} at {venv}: running bench/setup.sh")
        if subprocess.run(["bash", os.path.join(HERE, "setup.sh")], stdout=sys.stderr).returncode != 0:
            die("bench/setup.sh failed")
    return py


def debian_vips_python():
    """The Python of bench/setup.sh's second virtualenv (THUMBD_BENCH_DEBIAN_VIPS_VENV, default
    ~/.cache/thumbd-bench-debian-vips): pyvips bound to Debian's libvips42, whose HEIF loader decodes
    HEVC. Runs bench/setup.sh when it is missing."""
    venv = os.environ.get("THUMBD_BENCH_DEBIAN_VIPS_VENV") or os.path.expanduser("~/.cache/thumbd-bench-debian-vips")
    py = os.path.join(venv, "bin", "python")
    # pyvips answers any attribute of Image; the type system knows whether libvips has a HEIF loader.
    check = [py, "-c", "import pyvips, sys; sys.exit(pyvips.type_find('VipsOperation', 'heifload') == 0)"]
    if not (os.access(py, os.X_OK) and subprocess.run(check, capture_output=True, env=debian_vips_env()).returncode == 0):
        log(f"{PROGRAM}: no virtualenv with Debian's libvips at {venv}: running bench/setup.sh")
        if subprocess.run(["bash", os.path.join(HERE, "setup.sh")], stdout=sys.stderr).returncode != 0:
            die("bench/setup.sh failed")
    return py


def debian_vips_env(**extra):
    """This process's environment for a child of debian_vips_python(), without VIPSHOME: the PyPI wheel's
    libvips sets it (to its build prefix) when it starts, and Debian's libvips would then look for its
    loader modules, HEIF's among them, there."""
    env = {k: v for k, v in os.environ.items() if k != "VIPSHOME"}
    env.update(extra)
    return env


def enter_venv(script, marker, probe="pyvips, PIL, numpy"):
    """Re-executes `script` (the caller's __file__) under the virtualenv's Python unless already there:
    the environment variable `marker` names the Python it was started under. numpy's BLAS gets one thread:
    the machine is shared, and so are the figures' runs."""
    py = venv_python(probe)
    if os.environ.get(marker) == py:
        return py
    os.environ[marker] = py
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    os.execv(py, [py, os.path.abspath(script)] + sys.argv[1:])


# --------------------------------------------------------------------------------------- the corpus

def default_corpus():
    return os.environ.get("THUMBD_CORPUS") or DEFAULT_CORPUS


def jpegs_in(folder, suffixes=(".jpg", ".jpeg")):
    """The JPEGs of a folder, sorted by path; none when it does not exist."""
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.lower().endswith(suffixes))


def corpus_files(corpus, minimum=EXPECTED_FILES, suffixes=(".jpg", ".jpeg")):
    """The corpus's photographs. With fewer than `minimum`, ../shared/corpus/fetch-photos fills the folder
    first (exit 2 when it is not there); a count other than the published figures' 28 is warned about."""
    files = jpegs_in(corpus, suffixes)
    if len(files) < minimum:
        if not os.access(FETCH_PHOTOS, os.X_OK):
            die(f"the corpus {corpus} has {len(files)} of {EXPECTED_FILES} photographs, and "
                f"{FETCH_PHOTOS} is not there to fetch them (../shared is absent beside this repository). "
                "Point --corpus at a filled corpus, or run next to shared/.")
        log(f"{PROGRAM}: fetching the corpus into {corpus}")
        if subprocess.run([FETCH_PHOTOS, corpus], stdout=sys.stderr).returncode != 0:
            die("fetch-photos failed")
        files = jpegs_in(corpus, suffixes)
    if not files:
        die(f"no photos in {corpus}")
    if len(files) != EXPECTED_FILES:
        log(f"{PROGRAM}: warning: {len(files)} files in {corpus}, the published figures use {EXPECTED_FILES}")
    return files


# Photographs of the benchmark corpus that bench/phonecorpus.py turns into 12 MP phone photos (the
# wallpapers that are photographs and at least 2560 wide; the artwork and the smaller ones are left out).
PHONE_WALLPAPERS = [
    "backgrounds_mate_abstract_Elephants_5640x3172.jpg", "wallpapers_Autumn_contents_images_2560x1600.jpg",
    "wallpapers_ColdRipple_contents_images_2560x1600.jpg", "wallpapers_ColorfulCups_contents_images_2560x1600.jpg",
    "wallpapers_EveningGlow_contents_images_2560x1600.jpg", "wallpapers_FallenLeaf_contents_images_2560x1600.jpg",
    "wallpapers_OneStandsOut_contents_images_2560x1600.jpg", "wallpapers_Path_contents_images_2560x1600.jpg",
]
SHARED_PHONE = os.path.join(os.path.dirname(REPO), "shared", "corpus", "phone")
PHONE_CACHE = os.path.expanduser("~/.cache/thumbd-phone-corpus")


def phone_corpus(corpus, cache=PHONE_CACHE):
    """(JPEGs, HEICs) of the phone benchmark: ../shared/corpus/phone's photos, then those
    bench/phonecorpus.py makes from `corpus`'s photographs (kept in `cache`)."""
    if not os.path.isdir(SHARED_PHONE):
        die(f"{SHARED_PHONE} is not there (../shared is absent beside this repository)")
    shared = sorted(os.path.join(SHARED_PHONE, n) for n in os.listdir(SHARED_PHONE))
    corpus_files(corpus, suffixes=(".jpg",))
    wallpapers = [os.path.join(corpus, n) for n in PHONE_WALLPAPERS]
    missing = [w for w in wallpapers if not os.path.exists(w)]
    if missing:
        die(f"the corpus lacks {', '.join(map(os.path.basename, missing))}")
    run_child([debian_vips_python(), os.path.join(HERE, "phonecorpus.py"), cache] + wallpapers,
              debian_vips_env(), label="bench/phonecorpus.py")
    made = sorted(os.path.join(cache, n) for n in os.listdir(cache))
    jpegs = [p for p in shared + made if p.lower().endswith(".jpg")]
    heics = [p for p in shared + made if p.lower().endswith(".heic")]
    return jpegs, heics


STILLS_CACHE = os.path.expanduser("~/.cache/thumbd-stills-corpus")
SHARED_VIDEO = os.path.join(os.path.dirname(REPO), "shared", "corpus", "video")


def stills_corpus(phone_jpegs, cache=STILLS_CACHE):
    """(GIFs, JPEG XLs) of bench/images --stills, made once into `cache` with Debian's ffmpeg and cjxl:
    GIFs as they are posted (animations of 4 to 6 s cut from ../shared's two real clips at 320 to 480
    pixels, 10 to 15 frames a second, and the phone photographs at 1000 pixels as 256-colour stills),
    and the phone JPEGs re-encoded from their pixels as JPEG XL at quality 90 (cjxl -j 0), as a camera or
    an editor exports it."""
    os.makedirs(cache, exist_ok=True)
    gifs, jxls = [], []
    clips = [("with-gps.mov", 0, 4, 480, 12), ("with-gps.mov", 0, 4, 320, 10),
             ("sample_iPod.m4v", 10, 6, 320, 15), ("sample_iPod.m4v", 40, 6, 480, 12)]
    for k, (clip, start, seconds, width, fps) in enumerate(clips):
        out = os.path.join(cache, f"clip-{k + 1}.gif")
        if not os.path.exists(out):
            run_child(["ffmpeg", "-loglevel", "error", "-y", "-ss", str(start), "-t", str(seconds), "-i",
                       os.path.join(SHARED_VIDEO, clip), "-vf",
                       f"fps={fps},scale={width}:-2,split[a][b];[a]palettegen[p];[b][p]paletteuse", out],
                      label="ffmpeg")
        gifs.append(out)
    for path in phone_jpegs[-4:]:
        out = os.path.join(cache, os.path.splitext(os.path.basename(path))[0] + "-still.gif")
        if not os.path.exists(out):
            run_child(["ffmpeg", "-loglevel", "error", "-y", "-i", path, "-vf",
                       "scale=1000:-2,split[a][b];[a]palettegen[p];[b][p]paletteuse", out], label="ffmpeg")
        gifs.append(out)
    for path in phone_jpegs[-8:]:
        out = os.path.join(cache, os.path.splitext(os.path.basename(path))[0] + ".jxl")
        if not os.path.exists(out):
            run_child(["cjxl", "-j", "0", "-q", "90", path, out], label="cjxl")
        jxls.append(out)
    return gifs, jxls


def warm_page_cache(files):
    """Reads every file once, so that no contender pays for the disk."""
    for path in files:
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass


# ----------------------------------------------------------------------------------- thumbd, versions

def thumbd_binary(given=None):
    """The thumbd to run: --thumbd, else THUMBD_BIN, else swift's release bin path; exit 2 if it is not an
    executable."""
    thumbd = given or os.environ.get("THUMBD_BIN")
    if not thumbd:
        try:
            out = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=REPO,
                                 capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError) as error:
            die(f"cannot ask swift for the release bin path ({error}); pass --thumbd PATH")
        thumbd = os.path.join(out, "thumbd")
    thumbd = os.path.abspath(thumbd)
    if not os.access(thumbd, os.X_OK):
        die(f"no thumbd binary at {thumbd}: build it (swift build -c release) or pass --thumbd PATH")
    return thumbd


def dpkg_version(package):
    """The installed version of a Debian package, or "unknown"."""
    out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


# ---------------------------------------------------------------------------------- child processes

class Child:
    """A finished child process: wall seconds (start to exit), CPU seconds (user + system) and peak RSS
    in KiB (wait4's rusage), its stdout and stderr."""
    def __init__(self, wall, cpu, max_rss_kib, stdout, stderr):
        self.wall, self.cpu, self.max_rss_kib = wall, cpu, max_rss_kib
        self.stdout, self.stderr = stdout, stderr


def run_child(cmd, env=None, *, cwd=None, timeout=None, label=None):
    """Runs cmd to its end with stdin from /dev/null; its output goes to files, not pipes, so it never
    waits on this process. Raises Failure when it cannot start, exits non-zero or outlives `timeout`
    seconds (then it is killed). `label` names the child in the message."""
    shown = shlex.join(cmd[:6]) + (" ..." if len(cmd) > 6 else "")
    prefix = f"{label}: " if label else ""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        try:
            child = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        except OSError as error:
            raise Failure(f"{prefix}cannot run {cmd[0]}: {error}") from None
        timer, expired = None, []
        if timeout is not None:
            def expire():
                expired.append(True)
                child.kill()

            timer = threading.Timer(timeout, expire)
            timer.daemon = True
            timer.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        except BaseException:  # Ctrl-C, or a signal the caller turned into an exception: no child left behind
            child.kill()
            child.wait()
            raise
        finally:
            if timer is not None:
                timer.cancel()
        wall = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)  # keeps Popen from waiting again
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if child.returncode != 0:
        if expired:
            raise Failure(f"{prefix}{shown} did not finish within {timeout} s")
        raise Failure(f"{prefix}{shown} exited {child.returncode}:\n{stdout[-2000:]}{stderr[-4000:]}")
    return Child(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, stdout, stderr)


# ------------------------------------------------------------------------------------------ PostgreSQL

def pg_bin():
    """The newest /usr/lib/postgresql/N/bin, as scripts/pg-temp.sh chooses it."""
    root = "/usr/lib/postgresql"
    majors = sorted((int(n) for n in os.listdir(root) if n.isdigit()), reverse=True) \
        if os.path.isdir(root) else []
    for major in majors:
        path = os.path.join(root, str(major), "bin")
        if os.access(os.path.join(path, "psql"), os.X_OK):
            return path
    raise Failure("no PostgreSQL under /usr/lib/postgresql (run scripts/install-deps.sh)")


class Postgres:
    """A throwaway PostgreSQL (scripts/pg-temp.sh: loopback, no durability, max_connections 200) in a new
    folder under /tmp, which the postgres user can reach when this runs as root. `url` is its `thumbd`
    database, `pid` the postmaster's. stop() deletes it all. Raises Failure when it does not start."""
    def __init__(self, prefix="thumbd-bench-pg."):
        self.psql_path = os.path.join(pg_bin(), "psql")
        self.script = os.path.join(REPO, "scripts", "pg-temp.sh")
        self.folder = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
        try:
            started = subprocess.run([self.script, "start", self.folder], capture_output=True, text=True)
        except BaseException:  # Ctrl-C or a signal turned into one: no server left behind
            self.stop()
            raise
        if started.returncode != 0:
            self.stop()
            raise Failure(f"scripts/pg-temp.sh start failed:\n{started.stderr}")
        self.url = started.stdout.strip().splitlines()[-1]  # postgresql://postgres@127.0.0.1:PORT/thumbd
        with open(os.path.join(self.folder, "data", "postmaster.pid")) as f:
            self.pid = int(f.readline())

    def url_of(self, database):
        return self.url.rsplit("/", 1)[0] + "/" + database

    def psql(self, sql, database="thumbd"):
        """The output of one statement (unaligned, tuples only, stripped). The statement goes on stdin:
        thousands of enqueued URLs do not fit on a command line."""
        out = subprocess.run([self.psql_path, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1",
                              "-d", self.url_of(database)], input=sql, capture_output=True, text=True)
        if out.returncode != 0:
            raise Failure(f"psql failed: {out.stderr.strip()}\n  {sql[:200]}")
        return out.stdout.strip()

    def stop(self):
        """Stops the server and deletes its folder. Returns the finished `scripts/pg-temp.sh stop`."""
        return subprocess.run([self.script, "stop", self.folder], capture_output=True, text=True)
