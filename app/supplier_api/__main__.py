"""Command line of the synthetic supplier API: ``python -m app.supplier_api serve ...``."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from contextlib import suppress
from pathlib import Path
from types import FrameType

from app.supplier_api.catalog import CatalogError, load_catalog
from app.supplier_api.log import RequestLog
from app.supplier_api.server import bind, read_key_file, tls_context


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m app.supplier_api",
        description="The synthetic supplier API: HTTPS only, one key, a bounded request log of "
        "every request.",
        epilog="exit codes: 0 stopped by SIGTERM or SIGINT; 2 bad input (an option, a file, an "
        "address it cannot listen on), nothing served",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the seeded cases over HTTPS until stopped")
    serve.add_argument(
        "--case-dir",
        type=Path,
        action="append",
        required=True,
        help="a case folder (case.json, optional supplier-availability.json); repeatable",
    )
    serve.add_argument(
        "--case-dir-as",
        nargs=2,
        action="append",
        default=[],
        metavar=("ID", "DIR"),
        help="a case folder served under ID rather than the case_id its case.json holds (the "
        "AccessDenied control's case, under the id a run of the stack's case asks for); "
        "repeatable",
    )
    serve.add_argument(
        "--key-file",
        type=Path,
        required=True,
        help="file holding the API key every request must send in X-Api-Key",
    )
    serve.add_argument("--cert", type=Path, required=True, help="server certificate chain (PEM)")
    serve.add_argument("--key", type=Path, required=True, help="server private key (PEM)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument(
        "--port", type=_port, default=0, help="port to bind, 0 to 65535; 0 picks a free one"
    )
    serve.add_argument(
        "--log",
        type=Path,
        required=True,
        help="request log, one JSON line per request that carried the key or a request id of a "
        "run that did; every other request goes to LOG's .other file; each rotated at 2 MiB",
    )
    serve.add_argument(
        "--ready-file", type=Path, help="written with the bound port once the server is listening"
    )
    return parser


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number from 0 to 65535")
    return port


def _write_ready(path: Path, port: int) -> None:
    # Written then renamed, so a parent polling for the file never reads half a number.
    partial = path.with_name(path.name + ".partial")
    partial.write_text(f"{port}\n", encoding="ascii")
    os.replace(partial, path)


def case_folders(args: argparse.Namespace) -> list[tuple[Path, str | None]]:
    """Each case folder with the id it is served under (None: its case.json's own)."""
    folders: list[tuple[Path, str | None]] = [(folder, None) for folder in args.case_dir]
    return folders + [(Path(folder), case_id) for case_id, folder in args.case_dir_as]


def serve(args: argparse.Namespace) -> int:
    """Serves until SIGTERM or SIGINT; a setting it cannot use is exit 2, one line."""
    try:
        catalog = load_catalog(case_folders(args))
        key = read_key_file(args.key_file)
        tls = tls_context(args.cert, args.key)
    except (CatalogError, OSError, ValueError) as exc:
        return _cannot_start(str(exc))
    try:
        log = RequestLog(args.log)
    except OSError as exc:
        return _cannot_start(f"--log {args.log}: {exc.strerror}")
    try:
        try:
            server = bind(args.host, args.port, tls=tls, key=key, catalog=catalog, log=log)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            return _cannot_start(f"cannot listen on {args.host} port {args.port} ({reason})")
        try:
            port = server.server_address[1]
            if args.ready_file:
                try:
                    _write_ready(args.ready_file, port)
                except OSError as exc:
                    return _cannot_start(f"--ready-file {args.ready_file}: {exc.strerror}")
            _say(f"supplier API: serving {sorted(catalog)} on {args.host}:{port}")
            server.serve_forever()
        finally:
            server.server_close()
    finally:
        log.close()
    return 0


def _say(line: str) -> None:
    with suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


def _cannot_start(reason: str) -> int:
    _say(f"supplier API: cannot start: {reason}")
    return 2


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signum)


class _Stop(BaseException):
    """SIGTERM (the parent's stop, the kubelet's) or SIGINT: ends whatever the CLI is doing
    through its finally blocks, so the socket and the log are closed, not abandoned."""


def main(argv: list[str] | None = None) -> int:
    # First: a stop while the CLI starts is as clean as one while it serves.
    for each in (signal.SIGTERM, signal.SIGINT):
        signal.signal(each, _stop)
    try:
        args = parser().parse_args(argv)
        return serve(args)
    except _Stop:
        return 0


if __name__ == "__main__":
    sys.exit(main())
