"""Two app processes behind nginx, all on 127.0.0.1: deploy/nginx.conf as written, with only the
deployment's addresses swapped for local ones (the port nginx listens on, its certificate, the app
processes' ports, the folder of the copy of Streamlit's frontend, made here by
deploy/static_files.py). Shared by tests/browser/test_proxy.py and bench/proxy_capacity.py.

nginx and openssl are Debian's (`apt-get install nginx-light openssl`); the certificate is a
throwaway self-signed one for the example's host name, which the browser maps to 127.0.0.1
(CHROMIUM_PROXY_ARGS). Only the standard library is imported here.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from tests.support.browser import PYTHON, free_port, process_tree, start_server, stop_server

ROOT = Path(__file__).resolve().parent.parent.parent
NGINX_CONF = ROOT / "deploy" / "nginx.conf"
HOST = "viz.example.edu"  # the server_name of deploy/nginx.conf
# Chromium's flags on top of browser.CHROMIUM_ARGS: the host name leads to 127.0.0.1 (and nowhere
# else), and the throwaway certificate is accepted.
CHROMIUM_PROXY_ARGS = [f"--host-resolver-rules=MAP {HOST} 127.0.0.1", "--ignore-certificate-errors"]
STICKY_COOKIE = "tv_sticky"
RUN_LOG_ENV = "TRANSFORMER_VIZ_RUN_LOG"

# What in deploy/nginx.conf names the deployment rather than describes the setup.
LISTEN = "listen 443 ssl http2;"
CERT = "ssl_certificate     /etc/ssl/certs/viz.example.edu.pem;"
KEY = "ssl_certificate_key /etc/ssl/private/viz.example.edu.key;"
# the folder that holds static/, deploy/static_files.py's copy
STATIC_ROOT = "root /var/www/transformer-viz;"
MIME_TYPES = Path("/etc/nginx/mime.types")  # Debian's, included by its nginx.conf around every site
APP_PORTS = (8501, 8502)  # its app processes, named a and b in the cookie


def nginx_binary() -> str | None:
    """Debian installs nginx in /usr/sbin, which is not on every user's PATH."""
    return (shutil.which("nginx")
            or next((p for p in ["/usr/sbin/nginx"] if os.access(p, os.X_OK)), None))


def _replace_once(text: str, old: str, new: str) -> str:
    # Fail loudly when the template changes shape, rather than quietly testing something else.
    if text.count(old) != 1:
        raise ValueError(f"{NGINX_CONF.name} no longer holds exactly one {old!r}")
    return text.replace(old, new)


def site_config(cert: Path, key: Path, app_ports: list[int] | None = None,
                listen_port: int | None = None, static_root: Path | None = None) -> str:
    """deploy/nginx.conf with the certificate swapped, and, when given, the app ports, nginx's port
    and the folder that holds the copy of Streamlit's frontend."""
    text = NGINX_CONF.read_text(encoding="utf-8")
    text = _replace_once(text, CERT, f"ssl_certificate     {cert};")
    text = _replace_once(text, KEY, f"ssl_certificate_key {key};")
    if static_root is not None:
        text = _replace_once(text, STATIC_ROOT, f"root {static_root};")
    if listen_port is not None:
        text = _replace_once(text, LISTEN, f"listen 127.0.0.1:{listen_port} ssl http2;")
    if app_ports is not None:
        if len(app_ports) != len(APP_PORTS):
            raise ValueError(f"{NGINX_CONF.name} describes {len(APP_PORTS)} app processes, "
                             f"not {len(app_ports)}")
        ports = dict(zip(map(str, APP_PORTS), map(str, app_ports)))
        # in one pass: no port renamed twice
        text, n = re.subn(r"\b(" + "|".join(ports) + r")\b", lambda m: ports[m[1]], text)
        if n < 2 * len(ports):
            raise ValueError(f"{NGINX_CONF.name} no longer names the ports {APP_PORTS}")
    return text


def main_config(workdir: Path, site: Path) -> str:
    """The nginx.conf around the site: everything in `workdir`, and an access log that names, for
    every request, the cookie the browser sent, the app process(es) tried and the cookie sent
    back."""
    temp = "\n".join(f"    {name}_temp_path {workdir / name};"
                     for name in ("client_body", "proxy", "fastcgi", "uwsgi",
                                                                             "scgi"))
    # The file types as Debian's own nginx.conf has them, for the files nginx serves itself.
    mime_types = (f"    include {MIME_TYPES};\n    default_type application/octet-stream;"
                  if MIME_TYPES.exists() else "")
    # Workers run as whoever runs the tests (who owns `workdir`, where they read the copy of
    # Streamlit's frontend), not as nginx's default unprivileged user; a non-root nginx ignores the
    # line.
    return f"""user {pwd.getpwuid(os.geteuid()).pw_name};
pid {workdir / 'nginx.pid'};
error_log {workdir / 'error.log'} notice;
worker_processes 1;
events {{ worker_connections 512; }}
http {{
{mime_types}
    log_format sticky '$msec $status "$request" cookie=$cookie_tv_sticky upstream=$upstream_addr '
                      'served=$transformer_viz_served bytes=$bytes_sent';
    access_log {workdir / 'access.log'} sticky;
{temp}
    include {site};
}}
"""


def self_signed_certificate(workdir: Path) -> tuple[Path, Path]:
    """A certificate for HOST, valid for two days (browsers in the tests ignore that it is
    self-signed)."""
    cert, key = workdir / "cert.pem", workdir / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "2", "-subj", f"/CN={HOST}", "-addext",
                    f"subjectAltName=DNS:{HOST}"], check=True, capture_output=True, timeout=60)
    return cert, key


def copy_static(static_root: Path) -> None:
    """deploy/static_files.py with the app's Python: Streamlit's frontend, compressed, in
    static_root/static."""
    python = PYTHON if PYTHON.exists() else Path(sys.executable)
    subprocess.run([str(python), str(ROOT / "deploy" / "static_files.py"),
                    str(static_root / "static")],
                   check=True, capture_output=True, timeout=300)


def write_config(workdir: Path, app_ports: list[int], listen_port: int) -> Path:
    """Certificate, the copy of Streamlit's frontend (in static-root/), site and main configuration
    in `workdir`; returns the main configuration's path."""
    cert, key = self_signed_certificate(workdir)
    copy_static(workdir / "static-root")
    site = workdir / "transformer-viz.conf"
    site.write_text(site_config(cert, key, app_ports, listen_port, workdir / "static-root"),
                    encoding="utf-8")
    conf = workdir / "nginx.conf"
    conf.write_text(main_config(workdir, site), encoding="utf-8")
    return conf


def check_config(conf: Path) -> subprocess.CompletedProcess:
    """`nginx -t`: parses the configuration and loads its certificates; binds no port."""
    return subprocess.run([nginx_binary(), "-t", "-q", "-e", str(conf.parent / "error.log"),
                           "-c", str(conf)],
                          capture_output=True, text=True, timeout=60)


def start_nginx(workdir: Path, app_ports: list[int], listen_port: int,
                timeout_s: float = 30) -> subprocess.Popen:
    """nginx in the foreground, in a process group of its own (master and worker), listening on
    127.0.0.1."""
    conf = write_config(workdir, app_ports, listen_port)
    proc = subprocess.Popen([nginx_binary(), "-e", str(workdir / "error.log"), "-c", str(conf),
                             "-g", "daemon off;"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("nginx exited "
                               f"with {proc.returncode}: "
                               f"{(workdir / 'error.log').read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", listen_port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.05)
    stop_nginx(proc)
    raise RuntimeError(f"nginx did not listen on 127.0.0.1:{listen_port} within {timeout_s} s")


def stop_nginx(proc: subprocess.Popen) -> None:
    """Stop the master, then whatever is left of its process group (a worker holding a
    websocket)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # fast shutdown: open websockets are cut
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


def access_log(workdir: Path) -> list[dict]:
    """Every request nginx logged: time, status, request line, the cookie sent, the app ports tried
    (in order; none for a file nginx served itself), the cookie sent back (the process that
    answered) and the bytes sent. A websocket is logged when it closes."""
    path = workdir / "access.log"
    if not path.exists():
        return []
    pattern = re.compile(r'^(\S+) (\d+) "([^"]*)" cookie=(\S*) upstream=(.*) served=(\S*) '
                         r'bytes=(\d+)$')
    return [{"time": float(m[1]), "status": int(m[2]), "request": m[3], "cookie": m[4],
             "ports": [int(u.rsplit(":", 1)[1]) for u in re.split(r"[,:] ", m[5]) if ":" in u],
             "served": m[6], "bytes": int(m[7])}
            for m in map(pattern.match, path.read_text(encoding="utf-8").splitlines()) if m]


@dataclass
class Cluster:
    """Two app processes (`streamlit run app.py`) and nginx in front, as docs/deployment.md §4 sets
    them up. Every process appends to one run log (TRANSFORMER_VIZ_RUN_LOG), each line naming its
    pid and session."""

    workdir: Path
    checkpoints: Path
    app_ports: list[int]
    listen_port: int
    timeout_s: float = 120
    apps: dict[int, subprocess.Popen] = field(default_factory=dict)
    nginx: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"https://{HOST}:{self.listen_port}"

    @property
    def run_log(self) -> Path:
        return self.workdir / "runs.jsonl"

    def start_app(self, port: int) -> subprocess.Popen:
        # The same cookie secret everywhere, as the docs ask (it signs cookies that any process may
        # read).
        env = {RUN_LOG_ENV: str(self.run_log),
               "STREAMLIT_SERVER_COOKIE_SECRET": "transformer-viz-test-secret"}
        self.apps[port], _, _ = start_server(self.checkpoints, port,
                                             log_path=self.workdir / f"app-{port}.log",
                                             timeout_s=self.timeout_s, env=env)
        return self.apps[port]

    def kill_app(self, port: int) -> None:
        """SIGKILL, as the kernel's out-of-memory killer would: no goodbye to any browser."""
        self.apps[port].kill()
        self.apps[port].wait(timeout=15)

    def cookie(self, port: int) -> str:
        """The sticky cookie's value that names this process (deploy/nginx.conf: a, b)."""
        return "ab"[self.app_ports.index(port)]

    def port_named(self, cookie: str) -> int:
        return self.app_ports["ab".index(cookie)]

    def port_of_pid(self, pid: int) -> int:
        return next(port for port, proc in self.apps.items() if proc.pid == pid)

    def runs(self) -> list[dict]:
        if not self.run_log.exists():
            return []
        return [json.loads(line) for line in self.run_log.read_text(encoding="utf-8").splitlines()
                if line.strip()]

    def nginx_workers(self) -> list[int]:
        return process_tree([self.nginx.pid])[1:]

    def close(self) -> None:
        try:
            if self.nginx is not None:
                stop_nginx(self.nginx)
        finally:
            for proc in self.apps.values():
                if proc.poll() is None:
                    stop_server(proc)


@contextmanager
def cluster(workdir: Path, checkpoints: Path, timeout_s: float = 120) -> Iterator[Cluster]:
    """Start both app processes and nginx; stop them all on the way out, whatever happened."""
    ports: list[int] = []
    while len(ports) < 3:  # two apps and nginx, on three different ports
        ports += [p for p in [free_port()] if p not in ports]
    c = Cluster(workdir, checkpoints, ports[:2], ports[2], timeout_s)
    try:
        for port in c.app_ports:
            c.start_app(port)
        c.nginx = start_nginx(workdir, c.app_ports, c.listen_port)
        yield c
    finally:
        c.close()
