"""Graceful shutdown: on SIGTERM the server stops taking requests, lets a running stream finish
(within --shutdown-timeout), cuts one that would run longer, and exits 0. argv: SERVER_BINARY SHARED_DIR."""
import json
import os
import socket
import sys
import threading
import time

import harness


def stream(port, max_tokens, out):
    # A fixed seed: with a random one the random-weight model can end the stream early (end of text).
    data = json.dumps({"prompt": "Go on", "max_tokens": max_tokens, "stream": True, "seed": 7}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(data) + data)
    buf = b""
    while True:
        c = s.recv(65536)
        if not c:
            break
        buf += c
    out.append(buf)


def run_case(binary, model, max_tokens, timeout_s):
    srv = harness.Server(binary, model, "--shutdown-timeout", str(timeout_s), "-c", "8192", "-np", "1")
    out = []
    t = threading.Thread(target=stream, args=(srv.port, max_tokens, out))
    t.start()
    harness.wait_for(lambda: harness.metrics(srv.port)["ikllm_generated_tokens_total"] > 0, 20, "generation started")
    t0 = time.time()
    srv.proc.terminate()

    def draining():
        try:
            return harness.request(srv.port, "GET", "/health", timeout=5)[0] == 503
        except OSError:
            return True
    harness.wait_for(draining, 20, "health turning 503 after SIGTERM")
    refused = False
    try:
        st, _, _ = harness.request(srv.port, "POST", "/v1/completions", {"prompt": "late", "max_tokens": 2}, timeout=5)
        refused = st == 503
    except OSError:
        refused = True
    rc = srv.proc.wait(60)
    t.join(30)
    srv.stop()
    body = out[0] if out else b""
    return rc, time.time() - t0, refused, body, srv


def main():
    binary, shared = sys.argv[1:3]
    model = harness.model_path(shared)
    failures = 0
    # A short stream finishes normally during the grace period.
    rc, dt, refused, body, srv = run_case(binary, model, 200, 30)
    ok = rc == 0 and refused and b"data: [DONE]" in body and b'"finish_reason":"length"' in body
    print(("ok   " if ok else "FAIL ") + "running stream finished after SIGTERM, new requests refused, exit 0 (%.1fs)" % dt)
    failures += not ok
    if not ok:
        print(rc, refused, body[-300:], srv.output()[-2000:])
    else:
        os.remove(srv.log_path)
    # A stream longer than the deadline is cut at the deadline.
    rc, dt, refused, body, srv = run_case(binary, model, 8000, 1)
    ok = rc == 0 and dt < 15 and b"data: [DONE]" in body
    print(("ok   " if ok else "FAIL ") + "long stream cut at the shutdown deadline, exit 0 (%.1fs)" % dt)
    failures += not ok
    if not ok:
        print(rc, body[-300:], srv.output()[-2000:])
    else:
        os.remove(srv.log_path)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
