"""A run keys its outcome on check ids, never on wording: with every claim reworded, a policy
element left out still stops the run at the same check, and the accounting still names it; the
report page shows the same checks, element table and attack matrix, and the layers' comparison
page pairs a reworded run's checks with the other layer's by id."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.core.roles import Layer
from app.core.run import Run
from app.report.layer_comparison import write_layer_comparison
from app.report.page import ReportInputs, render_report
from app.tools.accounting import Watched
from app.tools.bubblewrap import accounting as bwrap_accounting
from app.tools.bubblewrap.launcher import BubblewrapLayer
from app.tools.bubblewrap.policy import BubblewrapPolicy
from app.tools.nono import accounting as nono_accounting
from app.tools.nono import render
from app.tools.nono.launcher import NonoLayer
from tests.support.dom import find, inside, parse
from tests.support.elements import Shared, failing_check, shared_services
from tests.support.report_runs import REWORDED_LAYER, Runs
from tests.support.reworded import REWORDED, reworded_claims

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def shared() -> Iterator[Shared]:
    with shared_services() as services:
        yield services


def test_a_reworded_bubblewrap_run_fails_at_the_same_check(shared: Shared) -> None:
    proof = bwrap_accounting.proof_for("reader", "--unshare-net")
    assert isinstance(proof, Watched)
    policy = BubblewrapPolicy(omit_for=frozenset({("reader", "--unshare-net")}))

    def make_layer(run: Run) -> BubblewrapLayer:
        return BubblewrapLayer(run, policy=policy)

    with reworded_claims():
        failed = failing_check(shared, Layer.BUBBLEWRAP, make_layer)
    assert failed.id == proof.check == "bubblewrap.namespaces.net"
    assert failed.claim.startswith(REWORDED)


def test_a_reworded_nono_run_fails_at_the_same_check(shared: Shared, tmp_path: Path) -> None:
    element = "network.block"
    proof = nono_accounting.ACCOUNT["evaluator"][element]
    assert isinstance(proof, Watched)
    omit = frozenset({("evaluator", element)})
    committed = tmp_path / "policies"
    render.write(committed, omit=omit)

    def make_layer(run: Run) -> NonoLayer:
        return NonoLayer(run, committed_dir=committed, omit=omit)

    with reworded_claims():
        failed = failing_check(shared, Layer.NONO, make_layer)
    assert failed.id == proof.check == "nono.network.socket.evaluator"
    assert failed.claim.startswith(REWORDED)


def _keyed(page: str) -> dict[str, list[tuple[str, ...]]]:
    """What a report page shows by id, its wording left out: each check's id and status, each
    policy element's watching id and that check's status, each attack's linked checks."""
    dom = parse(page)

    def statuses(elements: list[Any]) -> tuple[str, ...]:
        return tuple(e.text for e in elements if e.attrs.get("class", "").startswith("status"))

    def row(element: Any, *keys: str) -> tuple[str, ...]:
        within = inside(dom, element)
        links = tuple(a.attrs["href"] for a in find(within, "a"))
        return (*(element.attrs.get(key, "") for key in keys), *links, *statuses(within))

    (matrix,) = find(dom, "table", id="attack-matrix")
    return {
        "checks": [
            (e.attrs["data-check-id"], e.attrs["data-status"])
            for e in find(dom, "div", data_check_id="")
        ],
        "after page": [(e.attrs["data-after-page"],) for e in find(dom, "div", data_after_page="")],
        "elements": [
            row(element, "data-element", "data-watched-by")
            for element in find(dom, "tr", data_element="")
        ],
        "attacks": [row(element, "data-probe") for element in find(inside(dom, matrix), "tr")],
    }


def test_the_report_page_shows_the_same_checks_whatever_their_wording(page_runs: Runs) -> None:
    layer = Layer.BUBBLEWRAP
    documents = [page_runs.document(layer, name) for name in ("evidence.json", "checks.json")]
    evidence, checks = documents
    comparison = page_runs.document(layer, "comparison.json")
    reworded = copy.deepcopy(checks)
    for number, record in enumerate(reworded["checks"]):
        record["claim"] = f"{REWORDED} {number}"
    as_made = render_report(ReportInputs(evidence, checks, comparison)).decode()
    rewritten = render_report(ReportInputs(evidence, reworded, comparison)).decode()
    assert checks["checks"][0]["claim"] in as_made and checks["checks"][0]["claim"] not in rewritten
    assert _keyed(rewritten) == _keyed(as_made)
    assert len(_keyed(as_made)["checks"]) == len(checks["checks"])


def test_a_reworded_run_shows_and_pairs_its_checks_by_id(page_runs: Runs) -> None:
    """The report runs' nono run was made with every claim reworded: its page shows each of its
    checks by id, and the comparison page pairs them with bubblewrap's, worded as the catalogue
    words them, by id alone."""
    made = page_runs.document(REWORDED_LAYER, "checks.json")["checks"]
    assert all(record["claim"].startswith(REWORDED) for record in made)
    page = (page_runs.out(REWORDED_LAYER) / "report.html").read_text(encoding="utf-8")
    assert _keyed(page)["checks"] == [(r["id"], r["outcome"]) for r in made]
    other = Layer.BUBBLEWRAP
    words = page_runs.document(other, "checks.json")["checks"]
    assert not {r["claim"] for r in words} & {r["claim"] for r in made}
    both = [r["id"] for r in words if r["id"] in {m["id"] for m in made}]
    assert len(both) > len(words) // 2
    page_path = write_layer_comparison([page_runs.out(layer) for layer in Layer])
    rows = find(parse(page_path.read_text(encoding="utf-8")), "tr", data_check="")
    assert [r.attrs["data-check"] for r in rows if "data-only" not in r.attrs] == both
