"""What every part of the sweep shares: the repository's path, the format families and their file
extensions, the log line, running a command, and sizes such as 256MiB."""

import os
import re
import signal
import subprocess
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAMILIES = ["jpeg", "png", "webp", "heic", "avif", "video", "gif", "jxl"]
EXTENSIONS = {"jpeg": "jpg", "png": "png", "webp": "webp", "heic": "heic", "avif": "avif", "video": "mp4", "gif": "gif",
              "jxl": "jxl"}


def log(message):
    print(f"sweep {time.strftime('%H:%M:%S')} {message}", flush=True)


def run(*args, check=True, **kwargs):
    result = subprocess.run(list(args), capture_output=True, **kwargs)
    if check and result.returncode != 0:
        err = result.stderr if isinstance(result.stderr, str) else result.stderr.decode(errors="replace")
        raise RuntimeError(f"{' '.join(map(str, args))}: exit {result.returncode}: {err.strip()[-2000:]}")
    return result


def parse_size(text):
    match = re.fullmatch(r"(\d+)\s*(MiB|GiB|KiB|)", text)
    if not match:
        raise ValueError(f"size {text!r}: want e.g. 256MiB")
    return int(match.group(1)) * {"": 1, "KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30}[match.group(2)]


def wait_until_sigterm_caught(pid, timeout=10):
    """Seconds until process `pid` catches SIGTERM (its SigCgt mask in /proc/PID/status), or None if it
    did not within `timeout` or is gone. Before that, SIGTERM's default action would end it."""
    started = time.time()
    while time.time() - started < timeout:
        try:
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("SigCgt:") and int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)):
                        return time.time() - started
        except OSError:
            return None
        time.sleep(0.0005)
    return None
