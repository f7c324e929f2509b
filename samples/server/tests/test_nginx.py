"""Two ikllm-server instances behind Debian's nginx (run unprivileged-style from a temporary
prefix on loopback ports): requests through nginx are served by both (each instance's /metrics
counts them), streaming passes through unbuffered. argv: SERVER_BINARY SHARED_DIR."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import harness

NGINX_CONF = """
worker_processes 1;
{user}
pid {prefix}/nginx.pid;
error_log {prefix}/error.log;
daemon off;
events {{ worker_connections 256; }}
http {{
    access_log {prefix}/access.log;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    upstream ikllm {{
        server 127.0.0.1:{p1};
        server 127.0.0.1:{p2};
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 8m;
        location / {{
            proxy_pass http://ikllm;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 600s;
        }}
    }}
}}
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    binary, shared = sys.argv[1:3]
    model = harness.model_path(shared)
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if not nginx:
        harness.skip("nginx is not installed (Debian nginx-light)")
    prefix = tempfile.mkdtemp(prefix="ikllm-nginx-")
    failures = []
    with harness.Server(binary, model, "-a", "tiny", log=prefix + "/a.log") as a, \
            harness.Server(binary, model, "-a", "tiny", log=prefix + "/b.log") as b:
        port = free_port()
        conf = os.path.join(prefix, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(prefix=prefix, p1=a.port, p2=b.port, port=port,
                                      user="user root;" if os.geteuid() == 0 else ""))
        ng = subprocess.Popen([nginx, "-p", prefix, "-c", conf, "-e", prefix + "/error.log"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            harness.wait_for(lambda: harness.request(port, "GET", "/health", timeout=2)[0] == 200
                             if _open(port) else False, 20, "nginx up")
            n = 12
            for i in range(n):
                st, _, body = harness.request(port, "POST", "/v1/completions", {"prompt": "Hi %d" % i, "max_tokens": 3})
                if st != 200:
                    failures.append("request %d through nginx: %d %r" % (i, st, body[:200]))
            st, _, raw = harness.request(port, "POST", "/v1/chat/completions",
                                         {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5, "stream": True})
            events = harness.sse_events(raw)
            if st != 200 or events[-1] != "[DONE]" or len(events) < 3:
                failures.append("streaming through nginx: %d %r" % (st, raw[:300]))
            ca = harness.metrics(a.port)['ikllm_requests_total{endpoint="completions"}']
            cb = harness.metrics(b.port)['ikllm_requests_total{endpoint="completions"}']
            print("completions served: instance A %d, instance B %d" % (ca, cb))
            if ca < 1 or cb < 1 or ca + cb != n:
                failures.append("requests not spread over both instances: %d + %d of %d" % (ca, cb, n))
        finally:
            ng.terminate()
            ng.wait(10)
    for f in failures:
        print("FAIL", f)
    if failures:
        print(open(prefix + "/error.log").read()[-2000:])
    else:
        print("ok   two instances behind nginx served requests")
    shutil.rmtree(prefix, ignore_errors=True)
    return 1 if failures else 0


def _open(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(main())
