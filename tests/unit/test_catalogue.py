"""The catalogue of checks: every id is well formed and names one check of a run; the check log
refuses a check its section does not plan, or a section that ends short; the accounting names
only ids a run makes; and rewording every claim changes no id, no accounting and no table."""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest

from app.core.catalogue import CatalogueError, Check, Section, each, unless, when
from app.core.checklog import CheckFailed, CheckLog
from app.tools.accounting import Watched
from app.tools.bubblewrap import accounting as bwrap_accounting
from app.tools.bubblewrap import render as bwrap_render
from app.tools.bubblewrap.checks import BubblewrapChecks
from app.tools.catalogue import bubblewrap as bwrap_catalogue
from app.tools.catalogue import files
from app.tools.catalogue import nono as nono_catalogue
from app.tools.catalogue.order import make_in_order, run_sections
from app.tools.layer import LayerChecks
from app.tools.nono import accounting as nono_accounting
from app.tools.nono import render as nono_render
from app.tools.nono.checks import NonoChecks
from tests.support.reworded import REWORDED, reworded_claims
from tests.unit import test_doc_tables

LAYERS: tuple[type[LayerChecks], ...] = (BubblewrapChecks, NonoChecks)


def facts(**chosen: Any) -> dict[str, Any]:
    """The facts sections begin with, for the sample case on this kind of machine by default."""
    return {
        "root": True,
        "suppliers": ["northstar", "harbor", "cedar"],
        "loopback": True,
        "ipv6": True,
        "refuses_upstream": False,
        # The pod's egress: probed in a cluster stack with egressPolicy.
        "bounded": True,
        "denied": ["sqs.us-west-2.amazonaws.com-443", "1.1.1.1-443"],
        **chosen,
    }


def planned(layer: type[LayerChecks], *, in_cluster: bool, **chosen: Any) -> list[str]:
    given = facts(refuses_upstream=layer.refuses_upstream, **chosen)
    return [
        made
        for section in run_sections(layer, in_cluster=in_cluster)
        for made in section.planned(given)
    ]


def every_kind_of_run() -> Iterator[tuple[type[LayerChecks], bool, dict[str, Any]]]:
    for layer, in_cluster, root, loopback, ipv6 in itertools.product(
        LAYERS, (False, True), (False, True), (False, True), (False, True)
    ):
        yield layer, in_cluster, {"root": root, "loopback": loopback, "ipv6": ipv6}


@pytest.mark.parametrize(("layer", "in_cluster", "chosen"), list(every_kind_of_run()))
def test_every_check_a_run_plans_has_an_id_of_its_own(
    layer: type[LayerChecks], in_cluster: bool, chosen: dict[str, Any]
) -> None:
    ids = planned(layer, in_cluster=in_cluster, **chosen)
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_both_layers_share_the_ids_of_the_checks_both_make() -> None:
    bwrap, nono = (set(planned(layer, in_cluster=False)) for layer in LAYERS)
    shared = bwrap & nono
    assert {"files.supplier-key.reader", "attacks.tcp", "storage.iam.overwrite"} <= shared
    assert {"process.userns.reader", "business.draft.submitted"} <= shared
    assert not {i for i in bwrap - shared if not i.startswith("bubblewrap.")}
    assert not {i for i in nono - shared if not i.startswith(("nono.", "correlation."))}


def test_a_section_knows_how_many_checks_it_makes_when_it_begins() -> None:
    checks = CheckLog(stream=io.StringIO())
    (storage,) = (
        s for s in run_sections(BubblewrapChecks, in_cluster=False) if s.name == "storage"
    )
    checks.begin(storage, suppliers=["a", "b"])
    assert checks.section_count == 2 + 1 + 3
    assert checks.planned[:2] == ("storage.proposal.a", "storage.proposal.b")


def test_both_layers_make_the_one_files_section_the_catalogue_declares() -> None:
    """A check added to the shared files section is planned by both layers' runs: neither
    layer lists that section's checks of its own, beyond bubblewrap's same-file check."""
    shared = files().planned(facts())
    assert nono_catalogue.FILES.planned(facts()) == shared
    assert [i for i in bwrap_catalogue.FILES.planned(facts()) if i not in shared] == [
        bwrap_catalogue.SAME_FILE.id
    ]


def test_a_run_that_follows_the_catalogues_order_refuses_a_section_begun_out_of_it() -> None:
    checks = CheckLog(stream=io.StringIO())
    order = run_sections(BubblewrapChecks, in_cluster=False)
    checks.follow(order)
    with pytest.raises(CatalogueError, match="section 'identity' began where the run's order"):
        checks.begin(order[1])
    checks.begin(order[0], root=True)
    assert checks.section == order[0].name


def test_a_layers_step_makes_its_sections_by_name_in_the_order_given() -> None:
    checks = CheckLog(stream=io.StringIO())
    first, second = Section("one", FIRST), Section("two")
    made: list[str] = []

    def maker(section: Section) -> None:
        made.append(section.name)
        checks.begin(section)
        if section is first:
            checks.require(FIRST, True)

    make_in_order(
        checks, (second, first), {"one": lambda: maker(first), "two": lambda: maker(second)}
    )
    assert made == ["two", "one"]
    with pytest.raises(CatalogueError, match=r"do not match: \['three'\]"):
        make_in_order(checks, (first,), {"one": lambda: None, "three": lambda: None})
    with pytest.raises(CatalogueError, match="the maker of section 'two' left section 'one'"):
        make_in_order(checks, (second,), {"two": lambda: None})


FIRST = Check("test.first", "the first holds")
SECOND = Check("test.{role}.second", "the {role} holds {what}")
BROKEN = Check("test.broken", "nothing is broken", fails_only=True)
SECTION = Section("test", FIRST, each("role", ("a", "b"), SECOND), BROKEN)


def test_the_log_refuses_a_check_its_section_does_not_plan_next() -> None:
    checks = CheckLog(stream=io.StringIO())
    checks.begin(SECTION)
    with pytest.raises(CatalogueError, match=r"made test\.a\.second where it plans test\.first"):
        checks.require(SECOND(role="a", what="x"), True)


def test_the_log_refuses_a_section_that_ends_short() -> None:
    checks = CheckLog(stream=io.StringIO())
    checks.begin(SECTION)
    checks.require(FIRST, True)
    with pytest.raises(CatalogueError, match="planned 3 checks and made 1"):
        checks.close()


def test_a_failure_only_check_prints_only_as_the_fail_that_stops_the_run() -> None:
    stream = io.StringIO()
    checks = CheckLog(stream=stream)
    checks.begin(SECTION)
    with pytest.raises(CatalogueError):
        checks.require(BROKEN, True)
    with pytest.raises(CheckFailed) as failed:
        checks.fail(BROKEN, "something was broken")
    assert failed.value.check_id == "test.broken"
    assert stream.getvalue() == (
        "== test (3 checks)\nFAIL nothing is broken (something was broken) [test.broken]\n"
    )


def test_each_record_keeps_its_id_section_and_what_was_observed() -> None:
    checks = CheckLog(stream=io.StringIO())
    checks.begin(SECTION)
    checks.require(FIRST, True, detail="seen: 1")
    checks.require(SECOND(role="a", what="x"), True, detail="seen: 2")
    checks.skip(SECOND(role="b", what="y"), "not here")
    assert checks.as_json() == [
        {"id": "test.first", "outcome": "PASS", "claim": "the first holds", "section": "test",
         "detail": "seen: 1"},
        {"id": "test.a.second", "outcome": "PASS", "claim": "the a holds x", "section": "test",
         "detail": "seen: 2"},
        {"id": "test.b.second", "outcome": "SKIP", "claim": "the b holds y", "section": "test",
         "detail": "not here"},
    ]  # fmt: skip


def test_quiet_prints_only_skips_and_fails_each_under_its_sections_header() -> None:
    """--quiet: a section whose checks all pass prints nothing, not even its header; another
    prints its header, with its whole count, before its first SKIP or FAIL; every record is kept
    for checks.json all the same."""
    stream = io.StringIO()
    checks = CheckLog(stream=stream, quiet=True)
    checks.begin(Section("passing", FIRST))
    checks.require(FIRST, True, detail="seen: 1")
    checks.begin(SECTION)
    checks.require(FIRST, True, detail="seen: 1")
    checks.skip(SECOND(role="a", what="x"), "not here")
    with pytest.raises(CheckFailed):
        checks.require(SECOND(role="b", what="y"), False, detail="seen: 0")
    assert stream.getvalue().splitlines() == [
        "== test (3 checks)",
        "SKIP the a holds x \u2014 not here",
        "FAIL the b holds y (seen: 0) [test.b.second]",
    ]
    assert [r["outcome"] for r in checks.as_json()] == ["PASS", "PASS", "SKIP", "FAIL"]


def test_conditions_and_families_expand_from_the_facts() -> None:
    section = Section(
        "test", when("cluster", FIRST), unless("cluster", each("role", "roles", SECOND))
    )
    assert section.planned({"cluster": True, "roles": ["r"]}) == ["test.first"]
    assert section.planned({"cluster": False, "roles": ["r", "s"]}) == [
        "test.r.second",
        "test.s.second",
    ]


def test_an_id_is_dotted_lowercase_words() -> None:
    with pytest.raises(CatalogueError, match="is not a check id"):
        SECOND(role="Not An Id", what="x")


def test_the_accounting_names_only_checks_a_local_run_makes() -> None:
    bwrap = set(planned(BubblewrapChecks, in_cluster=False))
    nono = set(planned(NonoChecks, in_cluster=False))
    watched_bwrap = {
        proof.check
        for role in ("reader", "evaluator", "writer")
        for key in bwrap_accounting.keys_of(role)
        if isinstance(proof := bwrap_accounting.proof_for(role, key), Watched)
    }
    watched_nono = {
        proof.check
        for table in nono_accounting.ACCOUNT.values()
        for proof in table.values()
        if isinstance(proof, Watched)
    }
    assert watched_bwrap <= bwrap, watched_bwrap - bwrap
    assert watched_nono <= nono, watched_nono - nono


# --- rewording every claim ------------------------------------------------------------------


def test_rewording_every_claim_changes_no_id_no_accounting_and_no_table() -> None:
    ids = {layer: planned(layer, in_cluster=False) for layer in LAYERS}
    with reworded_claims() as checks:
        assert checks and all(check.claim.startswith(REWORDED) for check in checks)
        # The committed accounting is rendered from ids alone: the same bytes under new words.
        for render in (bwrap_render, nono_render):
            on_disk = (render.COMMITTED_DIR / "elements.json").read_text()
            assert json.loads(render.rendered()["elements.json"]) == json.loads(on_disk)
        assert {layer: planned(layer, in_cluster=False) for layer in LAYERS} == ids
        test_doc_tables.test_the_proofs_page_lists_every_attack_with_each_layers_errno()
        test_doc_tables.test_the_proofs_page_lists_every_redundant_element_with_its_reason()
