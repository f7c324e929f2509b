"""Raw HTTP cases for ikllm-server: malformed JSON, wrong types, huge bodies, API keys, unknown
routes, slow clients, clients leaving mid-stream (their slot must be freed: checked on /metrics),
a full queue. argv: SERVER_BINARY SHARED_DIR."""
import json
import socket
import sys
import threading
import time

import harness
from harness import request

KEY = "raw-test-key"
AUTH = {"Authorization": "Bearer " + KEY}
failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)))
    if not cond:
        failures.append(name)


def error_of(body):
    try:
        e = json.loads(body)["error"]
        return e if isinstance(e, dict) and "message" in e and "type" in e else None
    except (ValueError, KeyError, TypeError):
        return None


def post(port, path, body, headers=AUTH, **kw):
    return request(port, "POST", path, body, headers, **kw)


def raw_send(port, data, read=True, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    out = b""
    if read:
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
                if b"\r\n\r\n" in out and b"Content-Length" in out:
                    head, _, rest = out.partition(b"\r\n\r\n")
                    n = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
                    if len(rest) >= n:
                        break
        except socket.timeout:
            pass
    s.close()
    return out


def status_of(raw):
    return int(raw.split(b" ", 2)[1]) if raw.startswith(b"HTTP/") else None


def bad_requests(port):
    chat = "/v1/chat/completions"
    msgs = [{"role": "user", "content": "hi"}]
    st, _, body = post(port, chat, "{not json")
    check("malformed JSON is 400 with an error object", st == 400 and error_of(body) and error_of(body)["code"] == "invalid_json", body)
    st, _, body = post(port, chat, "[1, 2]")
    check("a JSON array body is 400", st == 400 and error_of(body), body)
    cases = [
        ({"messages": msgs, "max_tokens": "ten"}, "max_tokens"),
        ({"messages": "hi"}, "messages"),
        ({"messages": msgs, "stream": "yes"}, "stream"),
        ({"messages": msgs, "ignore_eos": "yes"}, "ignore_eos"),
        ({"messages": msgs, "temperature": 5000}, "temperature"),
        ({"messages": msgs, "top_p": -1}, "top_p"),
        ({"messages": msgs, "stop": [1, 2]}, "stop"),
        ({"messages": msgs, "tools": {"a": 1}}, "tools"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "messages[0].content"),
        ({"messages": msgs, "max_tokens": 1e30}, "max_tokens"),
        ({}, "messages"),
    ]
    for body_in, param in cases:
        st, _, body = post(port, chat, body_in)
        e = error_of(body)
        check("wrong field %s is 400 naming it" % param, st == 400 and e and e["param"] == param, body)
    st, _, body = post(port, "/v1/completions", {"prompt": 5})
    check("completions: prompt of the wrong type is 400", st == 400 and error_of(body)["param"] == "prompt", body)
    st, _, body = post(port, "/v1/completions", {"prompt": [1, 999999]})
    check("completions: token id outside the vocabulary is 400", st == 400, body)
    st, _, body = post(port, chat, b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}')
    check("invalid UTF-8 in the body is 400", st == 400 and error_of(body), body)


def huge_bodies(port):
    # The declared length alone is refused before the body is read.
    raw = raw_send(port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
                   b"\r\nContent-Type: application/json\r\nContent-Length: 9437184\r\n\r\n{\"messages\":")
    check("a 9 MiB body is 413", status_of(raw) == 413, raw[:200])
    body = raw.partition(b"\r\n\r\n")[2]
    check("413 carries an OpenAI error object", error_of(body) is not None, body)
    # A body just under the limit is read and judged on its content.
    big = json.dumps({"messages": [{"role": "user", "content": "x" * (7 << 20)}], "max_tokens": 1})
    st, _, body = post(port, "/v1/chat/completions", big)
    check("a 7 MiB prompt is read and refused as too long (400)", st == 400 and error_of(body)["code"] == "context_length_exceeded", body[:200])


def api_keys(port):
    st, _, body = request(port, "GET", "/v1/models")
    check("missing API key is 401", st == 401 and error_of(body)["type"] == "authentication_error", body)
    st, _, _ = request(port, "GET", "/v1/models", headers={"Authorization": "Bearer nope"})
    check("wrong API key is 401", st == 401)
    st, _, _ = request(port, "GET", "/v1/models", headers={"Authorization": "Bearer " + KEY + "x"})
    check("key with extra characters is 401", st == 401)
    st, _, _ = request(port, "GET", "/v1/models", headers=AUTH)
    check("right API key is 200", st == 200)
    st, _, _ = request(port, "GET", "/v1/models", headers={"X-Api-Key": KEY})
    check("X-Api-Key header is accepted", st == 200)
    st, _, _ = request(port, "GET", "/health")
    check("/health needs no key", st == 200)


def routes(port):
    st, _, body = request(port, "GET", "/v1/nothing", headers=AUTH)
    check("unknown route is 404 with an error object", st == 404 and error_of(body), body)
    st, _, body = request(port, "GET", "/v1/chat/completions", headers=AUTH)
    check("GET on a POST route is 404", st == 404, body)
    st, _, body = request(port, "GET", "/../../etc/passwd", headers=AUTH)
    check("no file is served without --path", st in (400, 404) and b"root:" not in body, body)
    st, _, body = post(port, "/tokenize", {"content": "Hello world"})
    toks = json.loads(body)["tokens"]
    st2, _, body2 = post(port, "/detokenize", {"tokens": toks})
    check("tokenize / detokenize round trip", st == 200 and st2 == 200 and json.loads(body2)["content"] == "Hello world", body2)


def slow_clients(port):
    # Half a request line, then silence: the read timeout (--timeout 2) closes the connection,
    # and other clients are served meanwhile.
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
    st, _, _ = post(port, "/v1/completions", {"prompt": "Hi", "max_tokens": 2})
    check("a stalled client does not block others", st == 200)
    t0 = time.time()
    try:
        closed = s.recv(100) is not None
    except socket.timeout:
        closed = False
    check("the stalled connection is closed by the read timeout", closed and time.time() - t0 < 8)
    s.close()
    # A body trickled in slowly (but within the timeout) is still served.
    body = json.dumps({"prompt": "Hello", "max_tokens": 3}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
              b"\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
    for i in range(0, len(body), 8):
        s.sendall(body[i:i + 8])
        time.sleep(0.1)
    out = b""
    while True:
        c = s.recv(65536)
        if not c:
            break
        out += c
    s.close()
    check("a slowly sent body is served", status_of(out) == 200 and b"text_completion" in out, out[:200])
    # A client reading slowly still receives every event of its stream.
    conn_body = json.dumps({"prompt": "Hello", "max_tokens": 20, "stream": True}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
              b"\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(conn_body) + conn_body)
    out = b""
    while True:
        time.sleep(0.05)
        c = s.recv(64)
        if not c:
            break
        out += c
    s.close()
    check("a slow reader gets the whole stream", out.count(b"data: ") >= 3 and b"data: [DONE]" in out, out[-200:])


def stream_request(port, body):
    data = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
              b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data) + data)
    return s


def disconnects(port):
    m0 = harness.metrics(port)
    # Leaves after the first events of a long stream.
    s = stream_request(port, {"prompt": "Tell me a long story", "max_tokens": 2000, "stream": True, "cache_prompt": False,
                               "ignore_eos": True})
    got = b""
    while got.count(b"data: ") < 3:
        got += s.recv(4096)
    s.close()
    harness.wait_for(lambda: harness.metrics(port)["ikllm_slots_busy"] == 0, 15, "slot freed after a stream client left")
    m1 = harness.metrics(port)
    check("client leaving mid-stream frees its slot (cancelled counted)",
          m1["ikllm_requests_cancelled_total"] >= m0["ikllm_requests_cancelled_total"] + 1)
    check("its generation stopped early", m1["ikllm_generated_tokens_total"] - m0["ikllm_generated_tokens_total"] < 1900)
    # Leaves while waiting for a non-streamed answer.
    data = json.dumps({"prompt": "Another long story", "max_tokens": 2000, "cache_prompt": False, "ignore_eos": True}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
              b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data) + data)
    harness.wait_for(lambda: harness.metrics(port)["ikllm_slots_busy"] >= 1, 10, "non-streamed request running")
    s.close()
    harness.wait_for(lambda: harness.metrics(port)["ikllm_slots_busy"] == 0, 15, "slot freed after a waiting client left")
    m2 = harness.metrics(port)
    check("client leaving a non-streamed request frees its slot",
          m2["ikllm_requests_cancelled_total"] >= m1["ikllm_requests_cancelled_total"] + 1)
    st, _, _ = post(port, "/v1/completions", {"prompt": "Still alive?", "max_tokens": 2})
    check("server still serves after the disconnects", st == 200)


def full_queue(binary, model):
    with harness.Server(binary, model, "-np", "1", "--max-queue", "1", "-c", "4096", "--api-key", KEY) as srv:
        a = stream_request(srv.port, {"prompt": "A", "max_tokens": 3000, "stream": True, "ignore_eos": True})
        harness.wait_for(lambda: harness.metrics(srv.port)["ikllm_slots_busy"] == 1, 10, "slot busy")
        b = stream_request(srv.port, {"prompt": "B", "max_tokens": 5, "stream": True})
        harness.wait_for(lambda: harness.metrics(srv.port)["ikllm_queue_depth"] == 1, 10, "one request queued")
        st, hdr, body = post(srv.port, "/v1/completions", {"prompt": "C", "max_tokens": 5})
        check("a full queue answers 503 with an error object", st == 503 and error_of(body)["code"] == "server_busy", body)
        a.close()
        out = b""
        while b"[DONE]" not in out:
            c = b.recv(4096)
            if not c:
                break
            out += c
        b.close()
        check("the queued request runs once the slot is free", b"[DONE]" in out)
        harness.wait_for(lambda: harness.metrics(srv.port)["ikllm_slots_busy"] == 0, 10, "idle")


def main():
    binary, shared = sys.argv[1:3]
    model = harness.model_path(shared)
    with harness.Server(binary, model, "--api-key", KEY, "--timeout", "2", "-c", "4096", "-np", "2") as srv:
        bad_requests(srv.port)
        huge_bodies(srv.port)
        api_keys(srv.port)
        routes(srv.port)
        slow_clients(srv.port)
        disconnects(srv.port)
        raw = raw_send(srv.port, b"GARBAGE\r\n\r\n")
        check("a malformed request line is 400", status_of(raw) == 400, raw[:100])
        m = harness.metrics(srv.port)
        check("no 5xx responses for client mistakes", m['ikllm_responses_total{class="5xx"}'] == 0, m)
        check("no request left in flight", m["ikllm_requests_in_flight"] == 0, m)
        if failures:
            print(srv.output()[-3000:])
    full_queue(binary, model)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
