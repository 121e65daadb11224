"""``beliefgate serve``: run the gate service under uvicorn.

FastAPI and uvicorn are imported inside the command so ``beliefgate --help`` stays fast.
"""

from __future__ import annotations

import gc
import ipaddress
import os
import socket
import stat
from pathlib import Path
from typing import Optional

import typer

from beliefgate.console import fail as _fail, say


#: uvicorn's log levels (``uvicorn.config.LOG_LEVELS``; listed here so that --help stays fast)
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def read_token(path: Path) -> str:
    """The bearer token in ``path`` (surrounding whitespace stripped); raises ValueError."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read token file {path}: {exc}") from None
    token = text.strip()
    if not token:
        raise ValueError(f"token file {path} is empty")
    if any(c.isspace() for c in token):
        raise ValueError(f"token file {path} must hold one token without whitespace")
    return token


def _bind(host: str, port: int) -> socket.socket:
    """A listening-ready TCP socket on ``host:port`` (uvicorn's options); exit 1 if it cannot bind."""
    address = host.strip("[]")
    # proto=IPPROTO_TCP: accepted sockets inherit it, and asyncio sets TCP_NODELAY only on sockets
    # whose proto says TCP (with proto 0, Nagle held a response's second write back for the
    # client's delayed ACK: ~40 ms on every request of a kept-alive connection)
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM,
                         socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((address, port))
    except OSError as exc:
        sock.close()
        _fail(f"cannot bind {host}:{port}: {exc.strerror or exc}", code=1)
    sock.set_inheritable(True)
    return sock


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add ``beliefgate serve`` to the main app."""

    @app.command()
    def serve(
        host: str = typer.Option("127.0.0.1", help="interface to bind; anything but loopback needs --token-file"),
        port: int = typer.Option(8765, min=0, max=65535, help="TCP port (0: any free port)"),
        token_file: Optional[Path] = typer.Option(
            None, "--token-file", help="file holding the bearer token every /v1 route but healthz requires"),
        max_sessions: int = typer.Option(1000, "--max-sessions", min=1, help="live sessions at most (429 beyond)"),
        ttl: float = typer.Option(3600.0, "--ttl", min=0.0, help="idle seconds before a session expires (0: never)"),
        snapshot: Optional[Path] = typer.Option(
            None, "--snapshot", help="snapshot file: sessions are written after every change and restored at start"),
        max_body_bytes: int = typer.Option(1 << 20, "--max-body-bytes", min=1024, help="request body limit (413)"),
        body_timeout: float = typer.Option(30.0, "--body-timeout", min=0.001,
                                           help="seconds a request body may take to arrive (408 beyond)"),
        header_timeout: float = typer.Option(10.0, "--header-timeout", min=0.001,
                                             help="seconds a connection may take to send a request's headers "
                                                  "(closed beyond)"),
        access_log: bool = typer.Option(False, "--access-log", help="log every request"),
        log_level: str = typer.Option("info", "--log-level", help="uvicorn log level: " + ", ".join(LOG_LEVELS)),
        print_openapi: bool = typer.Option(False, "--print-openapi", help="print the OpenAPI document and exit"),
    ) -> None:
        """Serve the plug-in Gate over HTTP (JSON API under /v1; see docs/serve.md)."""
        if log_level.lower() not in LOG_LEVELS:
            _fail(f"--log-level {log_level!r} is not a log level; choose from {', '.join(LOG_LEVELS)}")
        try:
            from beliefgate.serve.app import ServeSettings, create_app, openapi_document
            from beliefgate.serve.sessions import SnapshotError
        except ModuleNotFoundError as exc:
            _fail(f"the service needs the 'serve' extra (pip install 'beliefgate[serve]'): {exc}")
        if print_openapi:
            print(openapi_document(), end="")
            return
        token = None
        if token_file is not None:
            try:
                token = read_token(token_file)
            except ValueError as exc:
                _fail(str(exc))
            mode = token_file.stat().st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                say("warning:", f"token file {token_file} is readable by others (mode {stat.filemode(mode)}); "
                                "consider chmod 600")
        if token is None and not is_loopback(host):
            _fail(f"refusing to serve on non-loopback host {host!r} without a token; pass --token-file "
                  "(or bind 127.0.0.1)")
        if snapshot is not None:
            parent = snapshot.parent if str(snapshot.parent) else Path(".")
            if not parent.is_dir():
                _fail(f"snapshot directory {parent} does not exist")
            if snapshot.is_dir():
                _fail(f"snapshot path {snapshot} is a directory")
            if not os.access(parent, os.W_OK):
                _fail(f"snapshot directory {parent} is not writable")
        try:
            settings = ServeSettings(token=token, max_sessions=max_sessions, ttl_s=ttl or None,
                                     max_body_bytes=max_body_bytes, snapshot_path=snapshot,
                                     body_timeout_s=body_timeout, header_timeout_s=header_timeout)
            application = create_app(settings)
        except (ValueError, SnapshotError) as exc:
            _fail(str(exc))
        from beliefgate.serve.protocol import uvicorn_config
        import uvicorn

        restored = len(application.state.store)
        sock = _bind(host, port)  # bound here so that the real port is known (--port 0)
        port = sock.getsockname()[1]
        shown = f"[{host.strip('[]')}]" if ":" in host else host
        config = uvicorn_config(application, host=host, port=port, log_level=log_level, access_log=access_log,
                                lifespan="on", timeout_graceful_shutdown=5)

        class AnnouncingServer(uvicorn.Server):
            """Says the address once the socket accepts (a client that connects on reading it is served)."""

            async def startup(self, sockets=None) -> None:
                await super().startup(sockets=sockets)
                if self.started:
                    say("", f"beliefgate serve: http://{shown}:{port}/v1  auth={'on' if token else 'off'}  "
                            f"max_sessions={max_sessions}  ttl={'never' if not ttl else f'{ttl:g}s'}  "
                            f"snapshot={snapshot or 'off'}" + (f" ({restored} session(s) restored)" if snapshot else ""))

        server = AnnouncingServer(config)
        # everything built so far lives as long as the server: move it out of the collector's
        # sight, so that a full collection scans only what requests allocate (~50 ms -> ~0)
        gc.freeze()
        server.run(sockets=[sock])
        if not server.started:
            raise typer.Exit(1)


__all__ = ["register", "is_loopback", "read_token"]
