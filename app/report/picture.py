"""The boundary picture of one run, laid out from that run's evidence.json alone.

What each role got is read by boundary_views.py; here it is laid out. The controller's box
holds what only it holds, the supplier calls it made itself and a count of those it sent
through the roles' proxies, which refused them. The hardware-isolation frame is drawn only when
the guest readings name an enclave.

The result is boxes, lines and arrows with coordinates; the template draws them as SVG, so
every text here reaches the page through the template's escaping.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from app.report.boundary_views import RoleView, control_pairs, enclave, role_views, short_path

POLICY_NAME: Final = {"bubblewrap": "argument list", "nono": "nono profile"}
WIDTH: Final = 1470
LINE: Final = 15  # px between text lines (12 px monospace)
CHAR: Final = 7.3  # px per character of 12 px monospace, a little over most fonts' advance
PAD: Final = 10

POD_X: Final = 30
CONTROLLER_X: Final = 50
CONTROLLER_W: Final = 330
ROLE_X: Final = 430
ROLE_W: Final = 520
# The column of the nono proxies, between the roles and the supplier (empty under bubblewrap).
PROXY_X: Final = 975
PROXY_W: Final = 215
OUTSIDE_X: Final = 1240
OUTSIDE_W: Final = 215


@dataclass(frozen=True)
class Text:
    text: str
    full: str  # the untruncated text, shown as the line's tooltip
    css: str = ""


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    w: float
    h: float
    css: str
    title: str
    lines: tuple[Text, ...] = ()
    name: str = ""  # what the box stands for: a role, "controller", "supplier", ...


@dataclass(frozen=True)
class Arrow:
    points: tuple[tuple[float, float], ...]
    css: str  # "call", "start", "refused", "proxied"
    label: str = ""
    label_at: tuple[float, float] = (0, 0)

    @property
    def path(self) -> str:
        return " ".join(f"{x:g},{y:g}" for x, y in self.points)


@dataclass
class Picture:
    width: int
    height: int
    frames: list[Box] = field(default_factory=list)
    boxes: list[Box] = field(default_factory=list)
    arrows: list[Arrow] = field(default_factory=list)
    note: str = ""
    roles: list[RoleView] = field(default_factory=list)


def _room(width: float) -> int:
    return max(8, int((width - 2 * PAD) / CHAR))


def _fit(text: str, width: float, css: str = "") -> Text:
    room = _room(width)
    shown = text if len(text) <= room else text[: room - 1] + "\u2026"
    return Text(shown, text, css)


def _wrap(text: str, width: float, css: str = "", indent: str = "    ") -> list[Text]:
    """The text over as many lines as it needs, broken after a space or a slash if it can."""
    room, lines, rest = _room(width), [], text
    while len(rest) > room:
        cut = max(rest.rfind(" ", 0, room), rest.rfind("/", 0, room))
        cut = cut if cut > room // 2 else room
        lines.append(Text(rest[:cut], text, css))
        rest = indent + rest[cut:].lstrip(" ")
    lines.append(Text(rest, text, css))
    return lines


# --- layout ---------------------------------------------------------------------------------


def _role_lines(view: RoleView) -> list[Text]:
    width = ROLE_W
    lines = [
        *_wrap(view.uid, width),
        *_wrap(f"namespaces: {view.namespaces}", width),
        *(line for f in view.filters for line in _wrap(f"filter: {f}", width)),
        *_wrap(f"network: {view.network}", width, "net"),
    ]
    for pair in view.route:
        lines += _wrap(f"  allowed: {pair}", width, "net")
    if view.refused:
        lines += _wrap(f"\u2717 its own TCP connect to the host: {view.refused}", width, "no")
    lines.append(Text("mounts:", "mounts:", "strong"))
    for mount in view.mounts:
        source = f" from {mount.source}" if mount.source and mount.source != mount.target else ""
        lines += _wrap(f"  {mount.glyph} {mount.target} ({mount.mode}){source}", width, "mount")
    return lines


def _controller_lines(evidence: Mapping[str, Any]) -> list[Text]:
    holds = evidence.get("controller", {})
    top = str(evidence.get("endpoints", {}).get("run_tree", ""))
    width = CONTROLLER_W
    key_file = short_path(str(holds.get("supplier_key_file", "?")), top)
    lines = [
        *_wrap(
            f"starts each role under its {POLICY_NAME[evidence['layer']]} \u2192", width, "strong"
        ),
        Text("holds, and no role holds:", "", "strong"),
        *_wrap(f"  the supplier key, {key_file}", width),
        *_wrap(f"  the AWS identity {holds.get('aws_identity', '?')}", width),
        *_wrap(f"  found through {holds.get('aws_credential_source', '?')}", width),
        Text("supplier calls it made itself:", "", "strong"),
    ]
    every = evidence.get("correlation", {}).get("calls", [])
    calls = [c for c in every if c.get("by") == "controller"]
    controls = control_pairs(every)
    for call in calls:
        pair = (call.get("method"), call.get("path"))
        if call.get("reaches_upstream") and pair not in controls:
            status = call.get("status")
            lines += _wrap(f"  {call.get('method')} {call.get('path')} \u2192 {status}", width)
    shown_controls = [
        c
        for c in calls
        if c.get("reaches_upstream") and (c.get("method"), c.get("path")) in controls
    ]
    if shown_controls:
        lines += _wrap(
            "controls: a call a role's proxy refused, made by the controller itself:",
            width,
            "strong",
        )
        for call in shown_controls:
            lines += _wrap(
                f"  control: {call.get('method')} {call.get('path')} \u2192 {call.get('status')}",
                width,
                "control",
            )
    # The rest it sent through a role's proxy, as the controls that show what the proxy
    # refuses: counted by status, each call is in the page's table of calls.
    refused = Counter(str(c.get("status")) for c in calls if not c.get("reaches_upstream"))
    if refused:
        statuses = ", ".join(f"{status} \u00d7{n}" for status, n in sorted(refused.items()))
        lines += _wrap(
            f"  and {refused.total()} through the roles' proxies, each refused before the "
            f"supplier ({statuses})",
            width,
        )
    if evidence["layer"] == "nono":
        lines += _wrap(
            "runs each online role's nono proxy, which puts the real key in place of the "
            "role's placeholder",
            width,
        )
    lines.append(Text("and, with its AWS identity:", "", "strong"))
    lines += _wrap(f"  S3 and STS at {evidence.get('endpoints', {}).get('aws', '?')}", width)
    model = evidence.get("provenance", {}).get("model", {}).get("id")
    lines += _wrap(f"  one model turn: {model}", width)
    return lines


def _height(lines: Sequence[Text]) -> float:
    return 30 + LINE * len(lines) + 6


def picture(evidence: Mapping[str, Any]) -> Picture:
    """The boxes and arrows of one run's boundary."""
    layer = evidence["layer"]
    views = role_views(evidence)
    shown = Picture(WIDTH, 0, roles=views)
    product = enclave(evidence.get("guest", {}))
    top = 70.0 if product else 30.0
    controller_lines = _controller_lines(evidence)
    controller = Box(
        CONTROLLER_X,
        top + 30,
        CONTROLLER_W,
        _height(controller_lines),
        "controller",
        "trusted controller (unconfined)",
        tuple(controller_lines),
        "controller",
    )
    y = top + 30
    role_boxes: list[Box] = []
    for view in views:
        lines = _role_lines(view)
        box = Box(
            ROLE_X,
            y,
            ROLE_W,
            _height(lines),
            "role",
            f"{view.role} ({'bwrap' if layer == 'bubblewrap' else 'nono profile'})",
            tuple(lines),
            view.role,
        )
        role_boxes.append(box)
        y += box.h + 18
    pod_bottom = max(y, controller.y + controller.h + 20) + 10
    pod = Box(
        POD_X, top, OUTSIDE_X - POD_X - 40, pod_bottom - top, "pod", "the analyst pod", (), "pod"
    )
    if product:
        shown.frames.append(
            Box(
                POD_X - 18,
                top - 40,
                pod.w + 36,
                pod.h + 58,
                "hardware",
                f"hardware-isolated sandbox: the guest names {product}",
                (),
                "hardware",
            )
        )
    else:
        product_name = evidence.get("guest", {}).get("product_name") or "none"
        shown.note = (
            "No hardware-isolation frame is drawn: this run's guest readings name no enclave "
            f"(product name: {product_name})."
        )
    shown.frames.append(pod)
    shown.boxes.append(controller)
    shown.boxes.extend(role_boxes)

    supplier_box = Box(
        OUTSIDE_X,
        top + 30,
        OUTSIDE_W,
        _height([Text("", "")] * 2),
        "service",
        "supplier API",
        (
            _fit(str(evidence.get("endpoints", {}).get("supplier", "")), OUTSIDE_W),
            _fit("outside the pod", OUTSIDE_W),
        ),
        "supplier",
    )
    aws_box = Box(
        OUTSIDE_X,
        supplier_box.y + supplier_box.h + 60,
        OUTSIDE_W,
        _height([Text("", "")] * 2),
        "service",
        "AWS: S3, STS, the model",
        (
            _fit(str(evidence.get("endpoints", {}).get("bucket", "")), OUTSIDE_W),
            _fit("the controller's alone", OUTSIDE_W),
        ),
        "aws",
    )
    shown.boxes += [supplier_box, aws_box]
    right, middle = controller.x + controller.w, controller.x + controller.w / 2
    # The controller's own calls leave the pod above and below the roles, crossing none.
    above = top + 18
    supplier_mid = supplier_box.x + supplier_box.w / 2
    shown.arrows.append(
        Arrow(
            (
                (middle, controller.y),
                (middle, above),
                (supplier_mid, above),
                (supplier_mid, supplier_box.y),
            ),
            "call",
            "TLS, with the real supplier key",
            (ROLE_X + ROLE_W / 2, above - 5),
        )
    )
    below = pod_bottom + 22
    aws_mid = aws_box.x + aws_box.w / 2
    shown.arrows.append(
        Arrow(
            (
                (middle, controller.y + controller.h),
                (middle, below),
                (aws_mid, below),
                (aws_mid, aws_box.y + aws_box.h),
            ),
            "call",
            "its own AWS identity",
            (ROLE_X + ROLE_W / 2, below - 5),
        )
    )
    for box in role_boxes:
        shown.arrows.append(Arrow(((right, controller.y + 24), (box.x, box.y + 14)), "start"))
    edge = pod.x + pod.w
    for view, box in zip(views, role_boxes, strict=True):
        if view.proxy:
            proxy_lines = [
                *_wrap(f"listens at {view.proxy}", PROXY_W),
                Text("puts the real key in place", "", ""),
                Text("of the role's placeholder;", "", ""),
                Text("forwards only:", "", "strong"),
                *(line for pair in view.route for line in _wrap(f"  {pair}", PROXY_W, "net")),
                Text("refuses every other request", "", "no"),
            ]
            proxy_box = Box(
                PROXY_X,
                box.y,
                PROXY_W,
                _height(proxy_lines),
                "proxy",
                f"{view.role}'s nono proxy",
                tuple(proxy_lines),
                f"proxy-{view.role}",
            )
            shown.boxes.append(proxy_box)
            shown.arrows.append(
                Arrow(((box.x + box.w, box.y + 30), (proxy_box.x, proxy_box.y + 30)), "proxied")
            )
            shown.arrows.append(
                Arrow(
                    (
                        (proxy_box.x + proxy_box.w, proxy_box.y + 30),
                        (supplier_box.x, supplier_box.y + supplier_box.h - 10),
                    ),
                    "proxied",
                )
            )
        if view.refused:
            y_out = box.y + box.h - 14
            # It stops at the pod's wall, labelled with what was tried and the answer.
            shown.arrows.append(
                Arrow(
                    ((box.x + box.w, y_out), (edge - 2, y_out)),
                    "refused",
                    f"\u2717 TCP to the host: {view.refused}",
                    ((box.x + box.w + edge) / 2, y_out - 5),
                )
            )
    shown.height = int(max(below, aws_box.y + aws_box.h) + 16)
    return shown
