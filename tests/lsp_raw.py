"""A minimal LSP client over a subprocess's pipes that can send malformed frames (pytest-lsp
only sends well-formed ones): tests/test_server_hostile.py."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time


def frame(obj, delta: int = 0, length=None) -> bytes:
    body = json.dumps(obj).encode()
    n = len(body) + delta if length is None else length
    return f"Content-Length: {n}\r\n\r\n".encode() + body


class RawClient:
    def __init__(self, cwd: str, *args: str, env=None):
        self.proc = subprocess.Popen([sys.executable, "-m", "reflint", "server", *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=cwd,
                                     env=dict(os.environ, **(env or {})))
        self.messages: queue.Queue = queue.Queue()
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()
        self.next_id = 100
        self.kept: list = []

    def _read(self):
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.messages.put(None)
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                elif line in (b"\r\n", b"\n") and length is not None:
                    break
            self.messages.put(json.loads(out.read(length)))

    def send(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, method: str, params=None) -> int:
        self.next_id += 1
        self.send(frame({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                         "params": params}))
        return self.next_id

    def notify(self, method: str, params=None) -> None:
        self.send(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    def wait_for(self, pred, timeout: float = 60):
        """The first message not returned before for which ``pred`` holds (None when the
        stream ended). Messages skipped on the way are kept for later calls."""
        for i, msg in enumerate(self.kept):
            if pred(msg):
                return self.kept.pop(i)
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError("no such message")
            try:
                msg = self.messages.get(timeout=left)
            except queue.Empty:
                raise TimeoutError("no such message") from None
            if msg is None:
                return None
            if pred(msg):
                return msg
            self.kept.append(msg)

    def initialize(self, root: str, timeout: float = 60) -> None:
        rid = self.request("initialize", {"processId": os.getpid(), "rootUri": f"file://{root}",
                                          "capabilities": {}})
        self.wait_for(lambda m: m.get("id") == rid, timeout)
        self.notify("initialized", {})

    def close(self) -> None:
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait(timeout=30)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except OSError:
                pass


def children(pid: int) -> list:
    """The pids of the processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(d))
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except OSError:
        return False


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0
