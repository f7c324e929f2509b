#!/usr/bin/env python3
"""Load test for ikllm-server: N concurrent streaming chat clients for T seconds (loopback only,
bounded in clients and time). Reports requests/s, time to first token p50/p99, aggregate
generated tokens/s against a single client, failed requests, whether every slot went back to idle
and the server's resident memory before and after.

  bench/server/load_test.py --server build/ikllm-server --model M.gguf [--clients 32] [--duration 60]
  bench/server/load_test.py --url http://127.0.0.1:8080 [...]      (an already running server)

Started servers listen on a free loopback port (--port 0) and are stopped at the end."""
import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

PROMPTS = [
    "Write a short poem about the sea.",
    "Explain what a hash table is.",
    "List five fruits and their colours.",
    "What is the capital of Norway? Answer briefly.",
    "Summarise the plot of a heist film in three sentences.",
    "Give me a recipe for pancakes.",
]


def metrics(host, port):
    c = http.client.HTTPConnection(host, port, timeout=30)
    c.request("GET", "/metrics")
    out = {}
    for line in c.getresponse().read().decode().splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    c.close()
    return out


def one_request(host, port, key, max_tokens, prompt_i, turn):
    """One streamed chat request. Returns (ok, ttft seconds or None, completion tokens, error)."""
    body = {
        "messages": [{"role": "user", "content": PROMPTS[prompt_i % len(PROMPTS)] + (" (turn %d)" % turn)}],
        "max_tokens": max_tokens, "stream": True, "stream_options": {"include_usage": True}, "temperature": 0.7,
    }
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    t0 = time.perf_counter()
    ttft, tokens, done = None, 0, False
    try:
        c = http.client.HTTPConnection(host, port, timeout=300)
        c.request("POST", "/v1/chat/completions", json.dumps(body), headers)
        r = c.getresponse()
        if r.status != 200:
            return False, None, 0, "HTTP %d %s" % (r.status, r.read()[:200])
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data: "):
                continue
            data = line[6:]
            if data == "[DONE]":
                done = True
                break
            ev = json.loads(data)
            if "error" in ev:
                return False, ttft, tokens, str(ev["error"])
            if ev.get("usage"):
                tokens = ev["usage"]["completion_tokens"]
            for ch in ev.get("choices", []):
                d = ch.get("delta", {})
                if ttft is None and (d.get("content") or d.get("reasoning_content") or d.get("tool_calls")):
                    ttft = time.perf_counter() - t0
        c.close()
    except Exception as e:  # noqa: BLE001 - every failure counts, whatever it is
        return False, ttft, tokens, repr(e)
    return done, ttft, tokens, None if done else "stream ended without [DONE]"


def run_phase(host, port, key, clients, duration, max_tokens):
    stats = {"ok": 0, "failed": 0, "tokens": 0, "ttft": [], "errors": []}
    lock = threading.Lock()
    stop_at = time.perf_counter() + duration

    def client(i):
        turn = 0
        while time.perf_counter() < stop_at:
            ok, ttft, toks, err = one_request(host, port, key, max_tokens, i, turn)
            turn += 1
            with lock:
                stats["ok" if ok else "failed"] += 1
                stats["tokens"] += toks
                if ttft is not None:
                    stats["ttft"].append(ttft)
                if err and len(stats["errors"]) < 5:
                    stats["errors"].append(err)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats["elapsed"] = time.perf_counter() - t0
    return stats


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="an already running server")
    ap.add_argument("--server", help="ikllm-server binary to start")
    ap.add_argument("--model", help="model for the started server")
    ap.add_argument("--server-args", default="-np 8 -c 8192", help="extra arguments for the started server")
    ap.add_argument("--api-key", default="")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--duration", type=float, default=60, help="seconds of the concurrent phase")
    ap.add_argument("--single-duration", type=float, default=10, help="seconds of the single-client phase")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=1,
                    help="repeat the concurrent phase; RSS after each round shows whether memory stays flat")
    a = ap.parse_args()
    if a.clients < 1 or a.clients > 256 or a.duration <= 0 or a.duration > 600:
        sys.exit("clients must be 1..256 and duration 0..600 s")

    proc = None
    if a.url:
        u = urllib.parse.urlparse(a.url)
        host, port = u.hostname, u.port or 80
    else:
        if not a.server or not a.model:
            sys.exit("give --url, or --server and --model")
        log = open("/tmp/ikllm-load-test-server.log", "w+b")
        proc = subprocess.Popen([a.server, "-m", a.model, "--host", "127.0.0.1", "--port", "0"] + a.server_args.split(),
                                stdout=log, stderr=subprocess.STDOUT)
        host, port = "127.0.0.1", None
        for _ in range(600):
            log.flush()
            m = re.search(rb"listening on http://[0-9.]+:(\d+)", open(log.name, "rb").read())
            if m:
                port = int(m.group(1))
                break
            if proc.poll() is not None:
                sys.exit("server exited: " + open(log.name).read())
            time.sleep(0.1)
        if port is None:
            sys.exit("server did not start")
    try:
        # Warm-up, then the memory baseline.
        run_phase(host, port, a.api_key, 2, 1, a.max_tokens)
        m0 = metrics(host, port)
        single = run_phase(host, port, a.api_key, 1, a.single_duration, a.max_tokens)
        rss_rounds, ok_all, failed_all = [], 0, 0
        for _ in range(max(1, a.rounds)):
            multi = run_phase(host, port, a.api_key, a.clients, a.duration, a.max_tokens)
            rss_rounds.append(metrics(host, port)["process_resident_memory_bytes"])
            ok_all += multi["ok"]
            failed_all += multi["failed"]
        idle = False
        for _ in range(100):
            m1 = metrics(host, port)
            if m1["ikllm_slots_busy"] == 0 and m1["ikllm_queue_depth"] == 0:
                idle = True
                break
            time.sleep(0.1)
        m1 = metrics(host, port)
    finally:
        if proc:
            proc.terminate()
            proc.wait(60)

    def tps(s):
        return s["tokens"] / s["elapsed"] if s["elapsed"] > 0 else 0

    rows = [
        ("clients", "1", str(a.clients)),
        ("duration (s)", "%.1f" % single["elapsed"], "%.1f" % multi["elapsed"]),
        ("requests ok / failed", "%d / %d" % (single["ok"], single["failed"]), "%d / %d" % (multi["ok"], multi["failed"])),
        ("requests/s", "%.2f" % (single["ok"] / single["elapsed"]), "%.2f" % (multi["ok"] / multi["elapsed"])),
        ("TTFT p50 (ms)", "%.1f" % (1e3 * pct(single["ttft"], 50)), "%.1f" % (1e3 * pct(multi["ttft"], 50))),
        ("TTFT p99 (ms)", "%.1f" % (1e3 * pct(single["ttft"], 99)), "%.1f" % (1e3 * pct(multi["ttft"], 99))),
        ("generated tokens/s", "%.1f" % tps(single), "%.1f" % tps(multi)),
    ]
    print("| measure | single client | concurrent |")
    print("| --- | --- | --- |")
    for r in rows:
        print("| %s | %s | %s |" % r)
    print()
    print("all rounds: %d requests ok, %d failed (the table shows the last round)" % (ok_all, failed_all))
    print("aggregate speed-up vs one client: %.2fx" % (tps(multi) / tps(single) if tps(single) else float("nan")))
    print("slots back to idle after the run: %s (busy %d, queued %d, cancelled total %d)" %
          ("yes" if idle else "NO", m1["ikllm_slots_busy"], m1["ikllm_queue_depth"], m1["ikllm_requests_cancelled_total"]))
    print("server RSS: %.1f MiB before, %.1f MiB after (after each round: %s MiB)" %
          (m0["process_resident_memory_bytes"] / 2**20, m1["process_resident_memory_bytes"] / 2**20,
           ", ".join("%.1f" % (r / 2**20) for r in rss_rounds)))
    if len(rss_rounds) > 1:
        print("(the first round touches the KV cache's pages; later rounds should not grow)")
    for e in multi["errors"] + single["errors"]:
        print("error:", e)
    return 1 if failed_all or single["failed"] or not idle else 0


if __name__ == "__main__":
    sys.exit(main())
