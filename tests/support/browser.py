"""Headless Chromium (Debian's package) for the report tests: the rendered DOM of a page, and a
full-page screenshot at a given width with the page's own layout size.

The DOM comes from ``--dump-dom``. The screenshot is taken over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: requests on fd 3, replies on fd 4, each a JSON text ended by NUL),
which also measures the page's scroll size, so a page wider than the window is seen as cut off
rather than silently clipped. Each call uses a fresh profile directory and touches no network.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

CHROMIUM: Final = "chromium"
TIMEOUT_SECONDS: Final = 120
FLAGS: Final = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def available() -> str | None:
    return shutil.which(CHROMIUM)


@contextmanager
def _profile() -> Iterator[str]:
    directory = tempfile.mkdtemp(prefix="report-chromium-")
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def dump_dom(page: Path) -> str:
    """The DOM Chromium builds from the page, serialised after it loaded."""
    with _profile() as profile:
        done = subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@dataclass(frozen=True)
class Shot:
    png: bytes
    scroll_width: int
    scroll_height: int


class _Pipe:
    """The DevTools protocol over Chromium's pipe: one request at a time, events skipped."""

    def __init__(self, send: int, receive: int) -> None:
        self.send, self.receive, self.next_id, self.buffer = send, receive, 0, b""

    def _message(self) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            chunk = os.read(self.receive, 1 << 20)
            assert chunk, "chromium closed its DevTools pipe"
            self.buffer += chunk
        text, _, self.buffer = self.buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(text)
        return message

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        request: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            request["sessionId"] = session
        os.write(self.send, json.dumps(request).encode() + b"\0")
        while True:
            message = self._message()
            if message.get("id") == self.next_id:
                assert "error" not in message, f"{method}: {message['error']}"
                result: dict[str, Any] = message.get("result", {})
                return result

    def wait_for(self, event: str) -> None:
        while self._message().get("method") != event:
            pass


def screenshot(page: Path, width: int, scale: float = 1.0, max_height: int | None = None) -> Shot:
    """The whole page laid out at ``width`` CSS pixels (or its top ``max_height`` pixels),
    captured at ``scale`` (a quarter is enough to look at every part of it), and its scroll
    size at that width."""
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()

    def onto_fds_3_and_4() -> None:
        # Runs in the child before the descriptors outside pass_fds are closed.
        os.dup2(to_browser_r, 3)
        os.dup2(from_browser_w, 4)

    with _profile() as profile:
        browser = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe"],
            pass_fds=(3, 4),
            preexec_fn=onto_fds_3_and_4,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        pipe = _Pipe(to_browser_w, from_browser_r)
        try:
            target = pipe.call("Target.createTarget", url="about:blank")["targetId"]
            session = pipe.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            pipe.call("Page.enable", session)
            pipe.call(
                "Emulation.setDeviceMetricsOverride",
                session,
                width=width,
                height=800,
                deviceScaleFactor=1,
                mobile=False,
            )
            pipe.call("Page.navigate", session, url=page.as_uri())
            pipe.wait_for("Page.loadEventFired")
            size = pipe.call(
                "Runtime.evaluate",
                session,
                expression="[document.documentElement.scrollWidth,"
                " document.documentElement.scrollHeight]",
                returnByValue=True,
            )["result"]["value"]
            scroll_width, scroll_height = int(size[0]), int(size[1])
            height = min(scroll_height, max_height or scroll_height)
            shot = pipe.call(
                "Page.captureScreenshot",
                session,
                format="png",
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": width, "height": height, "scale": scale},
            )
            pipe.call("Browser.close")
        finally:
            os.close(to_browser_w)
            os.close(from_browser_r)
            try:
                browser.wait(timeout=TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                browser.kill()
                browser.wait()
    return Shot(base64.b64decode(shot["data"]), scroll_width, scroll_height)


# --- reading a PNG ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Pixels:
    width: int
    height: int
    channels: int
    rows: list[bytes]


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def read_png(data: bytes) -> Pixels:
    """An 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes), unfiltered."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat, header = 8, b"", b""
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    channels = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                line[x] = (line[x] + _paeth(left, up, corner)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return Pixels(width, height, channels, rows)


def inked_fraction(pixels: Pixels, step: int = 4) -> float:
    """The share of sampled pixels that are not the page's white background."""
    inked = total = 0
    for row in pixels.rows[::step]:
        for x in range(0, pixels.width * pixels.channels, pixels.channels * step):
            total += 1
            inked += row[x] < 245 or row[x + 1] < 245 or row[x + 2] < 245
    return inked / total if total else 0.0
