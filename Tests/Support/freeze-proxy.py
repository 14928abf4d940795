#!/usr/bin/env python3
"""A TCP proxy on a free port of --listen (loopback by default) to --target HOST:PORT that can freeze: while
the file --freeze-file exists it keeps every connection open and accepts new ones, but passes no byte
either way (a database that hangs without closing anything: a frozen server, a stuck pooler). Without
--freeze-file it only forwards (a hop into a network namespace). Prints `PORT <n>` once it listens.
(A file, not a signal: a test runner's children may inherit a mask that holds SIGUSR1 back.)"""

import argparse
import os
import socket
import sys
import threading
import time

FREEZE_FILE = None


def pipe(source, sink):
    try:
        while True:
            data = source.recv(65536)
            while FREEZE_FILE and os.path.exists(FREEZE_FILE):
                time.sleep(0.05)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", required=True, help="HOST:PORT")
    parser.add_argument("--freeze-file")
    parser.add_argument("--listen", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="this port rather than a free one")
    args = parser.parse_args()
    global FREEZE_FILE
    FREEZE_FILE = args.freeze_file
    host, port = args.target.rsplit(":", 1)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((args.listen, args.port))
    listener.listen(64)
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    while True:
        client, _ = listener.accept()
        try:
            upstream = socket.create_connection((host, int(port)))
        except OSError:
            client.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pipe, args=(a, b), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
