"""Shared helpers of the ikllm-server tests: find the reference model, start a server on a free
loopback port (--port 0; the server prints the port it got), small HTTP helpers."""
import http.client
import json
import os
import re
import subprocess
import sys
import time

SKIP = 77


def skip(msg):
    print("SKIP:", msg)
    sys.exit(SKIP)


def model_path(shared, name="qwen3-tiny-f16"):
    path = os.path.join(shared, "refdata", "models", name + ".gguf")
    if not os.path.exists(path):
        skip("reference data not found at " + path)
    return path


class Server:
    """An ikllm-server process; stop() sends SIGTERM and waits."""

    def __init__(self, binary, model, *extra, log=None):
        self.log_path = log or "/tmp/ikllm-server-test-%d-%d.log" % (os.getpid(), id(self))
        self.log = open(self.log_path, "w+b")
        args = [binary, "-m", model, "--port", "0", "-c", "2048", "-np", "4", "-t", "2"] + list(extra)
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        self.port = None
        deadline = time.time() + 60
        while time.time() < deadline and self.port is None:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited: " + self.output())
            m = re.search(r"listening on http://[0-9.]+:(\d+)", self.output())
            if m:
                self.port = int(m.group(1))
            else:
                time.sleep(0.05)
        if self.port is None:
            raise RuntimeError("server did not start: " + self.output())
        self.url = "http://127.0.0.1:%d" % self.port

    def output(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        self.log.close()
        if exc[0] is None:
            os.remove(self.log_path)


def request(port, method, path, body=None, headers=None, timeout=60):
    """Returns (status, headers dict, body bytes). body: dict (sent as JSON), str/bytes or None."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = dict(headers or {})
    if isinstance(body, (dict, list)):
        body = json.dumps(body)
        h.setdefault("Content-Type", "application/json")
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def metrics(port):
    """The /metrics samples as {name_with_labels: value}."""
    _, _, body = request(port, "GET", "/metrics")
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


def wait_for(pred, timeout=10.0, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def sse_events(raw):
    """data: payloads of a server-sent-event body (bytes), in order."""
    return [line[len("data: "):] for line in raw.decode("utf-8", "replace").split("\n") if line.startswith("data: ")]
