"""Command line of the synthetic supplier API: ``python -m app.supplier_api serve ...``."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from app.supplier_api.catalog import CatalogError, load_catalog
from app.supplier_api.log import RequestLog
from app.supplier_api.server import bind, read_key_file, tls_context


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m app.supplier_api",
        description="The synthetic supplier API: HTTPS only, one key, an append-only request log.",
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
    serve.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one")
    serve.add_argument(
        "--log", type=Path, required=True, help="request log, one JSON line per request, appended"
    )
    serve.add_argument(
        "--ready-file", type=Path, help="written with the bound port once the server is listening"
    )
    return parser


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
    try:
        catalog = load_catalog(case_folders(args))
        key = read_key_file(args.key_file)
        tls = tls_context(args.cert, args.key)
    except (CatalogError, OSError, ValueError) as exc:
        print(f"supplier API: cannot start: {exc}", file=sys.stderr)
        return 2
    log = RequestLog(args.log)
    server = bind(args.host, args.port, tls=tls, key=key, catalog=catalog, log=log)
    port = server.server_address[1]
    if args.ready_file:
        _write_ready(args.ready_file, port)
    print(f"supplier API: serving {sorted(catalog)} on {args.host}:{port}", file=sys.stderr)
    # SIGTERM (the parent's stop, the kubelet's) ends serve_forever through the same path as
    # Ctrl-C, so the socket and the log are closed rather than abandoned.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        log.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
