"""What the programs in bench/ share: messages, the virtualenv, the corpus, the thumbd binary, child
processes, a throwaway PostgreSQL, and the pieces of an end-to-end run (bench/scaling, bench/job).

The programs import it as they import bench/plan.py, with bench/ first on sys.path:

    sys.dont_write_bytecode = True  # no __pycache__ in bench/
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import benchlib  # noqa: E402

Standard library only: bench/pgqueuer_bench.py runs it under the virtualenv's Python. bench/contenders.py
does not import it: it runs inside the children whose wall time bench/images measures, and this module,
compiled from source on every start (no bytecode is written in bench/), would add its import to them.
"""

import os
import re
import shlex
import shutil
import statistics
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

    def pids(self):
        """The postmaster's and its live children's (the backends and the background processes)."""
        return [self.pid] + children(self.pid)

    def cpu_seconds(self):
        """The postmaster's and its live children's CPU, plus that of every child it has reaped."""
        total = 0.0
        fields = stat_fields(self.pid)
        if fields:
            total += (int(fields[13]) + int(fields[14]) + int(fields[15]) + int(fields[16])) / CLOCK_TICKS
        for pid in children(self.pid):
            fields = stat_fields(pid)
            if fields:
                total += (int(fields[13]) + int(fields[14])) / CLOCK_TICKS
        return total


# ------------------------------------------------------------------ end-to-end runs (bench/scaling, bench/job)

class Loopback:
    """The stage of an end-to-end run, as a context manager: a work folder (`work`) holding `originals`,
    a throwaway PostgreSQL (`pg`) whose `thumbd` database `thumbd migrate` has migrated (each run's
    database is a copy of it), and Tests/Support/origin.py serving the originals on loopback (`origin`,
    tools/sweeplib's Origin). Leaving it stops both servers and deletes the folder. Raises Failure when
    one does not start or the migration fails."""

    def __init__(self, name, thumbd):
        self.name, self.thumbd = name, thumbd
        self.pg = self.origin = None

    def __enter__(self):
        self.work = tempfile.mkdtemp(prefix=f"thumbd-{self.name}.")
        os.chmod(self.work, 0o755)  # the postgres user reads nothing here, the origin (this user) everything
        self.originals = os.path.join(self.work, "originals")
        os.makedirs(self.originals)
        try:
            sys.path.insert(1, os.path.join(REPO, "tools"))
            from sweeplib.run import Origin  # the loopback origin, as the sweep and tools/chaos.py start it

            self.pg = Postgres(prefix=f"thumbd-{self.name}-pg.")
            try:
                self.origin = Origin(self.originals, self.work)
            except RuntimeError as error:
                raise Failure(f"the origin did not start: {error}") from None
            migrated = subprocess.run([self.thumbd, "migrate"], capture_output=True, text=True,
                                      env={**os.environ, "DATABASE_URL": self.pg.url_of("thumbd")})
            if migrated.returncode != 0:
                raise Failure(f"thumbd migrate failed:\n{migrated.stderr}")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_):
        if self.origin is not None:
            self.origin.stop()
        if self.pg is not None:
            self.pg.stop()
        shutil.rmtree(self.work, ignore_errors=True)


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def stat_fields(pid):
    """/proc/<pid>/stat as a list indexed by proc(5)'s field number minus one: ppid [3], utime [13],
    stime [14], cutime [15], cstime [16] (the command name, which may hold spaces, is a placeholder)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    return [str(pid), "comm"] + text[text.rindex(")") + 2:].split()


def children(parent):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = stat_fields(int(entry))
            if fields and int(fields[3]) == parent:
                found.append(int(entry))
    return found


def process_cpu_seconds(pid):
    fields = stat_fields(pid)
    return (int(fields[13]) + int(fields[14])) / CLOCK_TICKS if fields else 0.0


def machine_busy_seconds():
    """Busy CPU seconds of the whole machine, all cores (/proc/stat: everything but idle and iowait)."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    busy = sum(values[:8]) - values[3] - values[4]  # user nice system idle iowait irq softirq steal
    return busy / CLOCK_TICKS


def prioritise(pids, nice, cleanup):
    """Gives every thread of `pids` the niceness `nice`, and the autogroups of this process's session and
    of the first pid's (with kernel.sched_autogroup_enabled the scheduler shares a core between sessions
    first and applies nice only within one). The sessions outlive the bench: `cleanup` (an ExitStack)
    restores their niceness on the way out. Children started later inherit this process's niceness,
    not the autogroup's: start them under `nice -n`."""
    for pid in pids:
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                os.setpriority(os.PRIO_PROCESS, int(task), nice)
        except (FileNotFoundError, ProcessLookupError):
            continue  # a PostgreSQL backend that ended meanwhile
    for pid in [os.getpid(), pids[0]]:
        path = f"/proc/{pid}/autogroup"
        try:
            with open(path) as f:
                cleanup.callback(set_autogroup_nice, path, f.read().split()[-1])
        except OSError:
            continue
        set_autogroup_nice(path, str(nice))


def set_autogroup_nice(path, nice):
    try:
        with open(path, "w") as f:
            f.write(nice)
    except OSError:
        pass


def pin(pids, cpus):
    for pid in pids:
        subprocess.run(["taskset", "-a", "-p", "-c", cpus, str(pid)], capture_output=True)


def tagged_copy(data, number):
    """The original with `number` written where no decoder looks: other bytes (and so another content
    hash: thumbd reuses nothing), the same picture, nothing more to decode. A JPEG gains a COM segment
    right after SOI; a HEIF (ISOBMFF: HEIC, AVIF) a top-level `free` box at its end, which readers skip.
    Raises ValueError for anything else, and for a HEIF whose last box runs to the end of the file
    (size 0), which an appended box would lengthen."""
    text = f"thumbd {PROGRAM} copy {number}".encode()
    if data[:2] == b"\xff\xd8":
        return data[:2] + b"\xff\xfe" + (len(text) + 2).to_bytes(2, "big") + text + data[2:]
    if data[4:8] == b"ftyp":
        offset = 0
        while offset < len(data):
            size = int.from_bytes(data[offset:offset + 4], "big")
            if size == 1:
                size = int.from_bytes(data[offset + 8:offset + 16], "big")
            if size < 8:
                raise ValueError("a HEIF whose boxes do not end at the end of the file")
            offset += size
        if offset != len(data):
            raise ValueError("a HEIF whose boxes do not end at the end of the file")
        return data + (len(text) + 8).to_bytes(4, "big") + b"free" + text
    raise ValueError("neither a JPEG nor a HEIF")


def make_originals(files, copies, folder):
    """Writes K tagged copies of each photo into `folder` (tagged_copy: each copy's number is unique);
    returns their names, copy by copy."""
    names = []
    for copy in range(copies):
        for path in files:
            stem, extension = os.path.splitext(os.path.basename(path))
            name = f"{stem}-{copy}{extension.lower()}"
            with open(path, "rb") as f:
                data = f.read()
            with open(os.path.join(folder, name), "wb") as f:
                f.write(tagged_copy(data, len(names)))
            names.append(name)
    return names


def enqueue(pg, database, urls):
    """One thumbd job per URL, all in one statement."""
    values = ",".join("('" + url.replace("'", "''") + "')" for url in urls)
    pg.psql(f"SELECT count(thumbs.enqueue(u)) FROM (VALUES {values}) AS t(u)", database)


def thumbd_worker(thumbd, concurrency, database_url, storage, memory_budget):
    """The command of a `thumbd worker --drain` on loopback: local storage, no HTTP endpoint."""
    return [thumbd, "worker", "--drain", "--concurrency", str(concurrency), "--database-url", database_url,
            "--storage", f"file://{storage}", "--allow-hosts", "127.0.0.1", "--http-address", "off",
            "--memory-budget", memory_budget]


def wait_all(processes):
    """Waits for every Popen in turn (the last one to exit ends the wall time); returns their summed user
    and system CPU seconds and their largest peak RSS in KiB (wait4's rusage)."""
    user = system = max_rss = 0.0
    for process in processes:
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)  # keeps Popen from waiting again
        user, system = user + usage.ru_utime, system + usage.ru_stime
        max_rss = max(max_rss, usage.ru_maxrss)
    return user, system, max_rss


def run_workers(pg, origin, commands, log_paths, env=None, watch=None):
    """Runs the worker processes (`commands`, each with its output in its log) to their end; dies when
    one exits non-zero. `watch(processes)`, when given, is called once they have started and returns a
    function that is called once they have all exited, whose value is kept as `watched`. Returns what
    they took: `started` (the epoch second), `wall_s` (to the last exit), their CPU (wait4's rusage),
    PostgreSQL's and the origin's CPU meanwhile, and "other": the rest of the machine's busy time on all
    cores (/proc/stat), other people's work, which makes a run noisy."""
    before = (pg.cpu_seconds(), process_cpu_seconds(origin.pid), machine_busy_seconds())
    outs = [open(path, "w") for path in log_paths]
    started, start = time.time(), time.monotonic()
    try:
        processes = [subprocess.Popen(c, env=env, stdin=subprocess.DEVNULL, stdout=o, stderr=subprocess.STDOUT)
                     for c, o in zip(commands, outs)]
        stop_watching = watch(processes) if watch else None
        user, system, max_rss = wait_all(processes)
        watched = stop_watching() if stop_watching else None
    finally:
        for out in outs:
            out.close()
    wall = time.monotonic() - start
    after = (pg.cpu_seconds(), process_cpu_seconds(origin.pid), machine_busy_seconds())
    for process, log_path in zip(processes, log_paths):
        if process.returncode != 0:
            die(f"a worker exited {process.returncode}; log: {log_path}", 1)
    pg_cpu, origin_cpu, busy = (a - b for a, b in zip(after, before))
    worker_cpu = user + system
    return {
        "started": started, "wall_s": wall, "worker_cpu_s": worker_cpu, "worker_user_s": user,
        "worker_sys_s": system, "worker_max_rss_mib": max_rss / 1024, "postgres_cpu_s": pg_cpu,
        "origin_cpu_s": origin_cpu, "other_cpu_s": max(0.0, busy - worker_cpu - pg_cpu - origin_cpu),
        "machine_busy_s": busy, "watched": watched,
    }


def cpu_ms_per_job(runs, jobs):
    """The medians over run_workers' results of the CPU each took, in ms per job of `jobs`."""
    def per_job(key):
        return statistics.median(r[key] for r in runs) / jobs * 1000

    return {f"{name}_ms_per_job": per_job(f"{name}_s") for name in
            ("worker_cpu", "worker_sys", "postgres_cpu", "origin_cpu", "other_cpu")}


def check_thumbd_run(pg, database, jobs, log_paths, label="run"):
    """Dies unless the workers whose logs these are decoded every one of `jobs` jobs, once, and reused
    none, and the database has them all succeeded (the counts of each worker's "worker stopped" line)."""
    counts = {}
    for log_path in log_paths:
        with open(log_path) as f:
            last = [line for line in f if "worker stopped" in line][-1:]
        for key, value in re.findall(r"(renders\.\w+|jobs\.succeeded)=(\d+)", "".join(last)):
            counts[key] = counts.get(key, 0) + int(value)
    states = pg.psql("SELECT state || '=' || count(*) FROM thumbs.jobs GROUP BY state", database)
    if states != f"succeeded={jobs}" or counts.get("renders.decodes") != jobs or counts.get("renders.reused") != 0:
        die(f"{label}: expected {jobs} succeeded jobs, {jobs} decodes and 0 reused; database: {states!r}; "
            f"worker: {counts}; log: {' '.join(log_paths)}", 1)
