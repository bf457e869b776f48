"""nono-py 0.16.0: a route's upstream host is reachable through the proxy on every port.

Run with nono-py installed (pip install nono-py==0.16.0), as any user, on Linux:

    python3 nono-proxy-upstream-host.py

One route to https://localhost:9 and no allowed host. A canary HTTP server listens on
127.0.0.1 at a port no route names. Each request below is what any process given this
proxy (proxy_only(), HTTPS_PROXY) can send it. Expected: every one refused.
"""

import base64
import http.server
import os
import socket
import tempfile
import threading

import nono_py


class Canary(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "7")
        self.end_headers()
        self.wfile.write(b"canary\n")

    def log_message(self, *args: object) -> None:
        pass


canary = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Canary)
threading.Thread(target=canary.serve_forever, daemon=True).start()
port = canary.server_address[1]

key = os.path.join(tempfile.mkdtemp(), "key")
with open(key, "w") as handle:
    handle.write("real-key\n")
route = nono_py.RouteConfig(
    "svc",
    "https://localhost:9",
    credential_key=f"file://{key}",
    env_var="SVC_KEY",
    endpoint_rules=[("GET", "/only")],
)
proxy = nono_py.start_proxy(nono_py.ProxyConfig(allowed_hosts=[], routes=[route]))
token = proxy.env_vars()["NONO_PROXY_TOKEN"]
auth = "Proxy-Authorization: Basic " + base64.b64encode(f"nono:{token}".encode()).decode()


def ask(*lines: str) -> str:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as connection:
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return connection.recv(200).split(b"\r\n", 1)[0].decode()


print(f"nono-py 0.16.0; one route, upstream https://localhost:9; allowed_hosts=[]; canary :{port}")
for target in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost:9"):
    print(f"CONNECT {target:<30} no token  -> {ask(f'CONNECT {target} HTTP/1.1')}")
for url in (f"http://localhost:{port}/", f"http://127.0.0.1:{port}/"):
    for name, extra in (("no token", ()), ("token", (auth,))):
        answer = ask(f"GET {url} HTTP/1.1", "Host: x", "Connection: close", *extra)
        print(f"GET     {url:<30} {name:<9} -> {answer}")
for event in proxy.drain_audit_events():
    where = f"{event['target']}:{event['port']}"
    decided = f"{event['mode']:<8} {event['decision']:<6}"
    print(f"  audit: {decided} {where:<22} {event['denial_category']}")
proxy.shutdown()
