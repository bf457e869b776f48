"""One procurement case, end to end: the single orchestrator both confinement layers run under.

Order: preflight, the layer's own checks, identity and storage, the boundary, the supplier,
the business work, one model turn with its gates, the report, correlation with the supplier
API's own log, and the key scans. A failed check stops the run with a non-zero exit.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from app.controller.case import Case, Proposal, load_case_folder, parse_case, parse_proposal
from app.controller.checks import CheckLog
from app.controller.comparison import Comparison, compare
from app.controller.context import LayerSetup, RunContext
from app.controller.correlation import correlate
from app.controller.environment import RunEnvironment, open_environment
from app.controller.gates import GateRejected, Recommendation, choice_gate, citation_gate
from app.controller.model import run_model_turn
from app.controller.report import KeyLeak, render_recommendation, scan_directory, write_scanned
from app.controller.runtime import Role, ToolIdentity, create_run
from app.controller.supplier_client import CallLog, SupplierClient, SupplierReplyError
from app.tools.layer import ConfinementLayer

LayerName = Literal["bubblewrap", "nono"]
OTHER_CASE_ID = "rfp-other"
MODEL_KEY_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "BEDROCK_API_KEY",
    "AWS_BEARER_TOKEN_BEDROCK",
)
REPORT_FILES = (
    "recommendation.md",
    "comparison.json",
    "evidence.json",
    "checks.json",
    "calls.json",
)


@dataclass(frozen=True)
class RunOptions:
    layer: LayerName
    case_dir: Path
    out_dir: Path | None = None  # exactly here; otherwise <out_parent>/<layer>/<run id>
    out_parent: Path | None = None  # default: runs/ locally, the run's volume in the cluster
    work_base: Path | None = None
    keep_workdir: bool = False


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    checks_passed: int
    out_dir: Path
    report_uri: str


def default_layer(name: LayerName) -> Callable[[LayerSetup], ConfinementLayer]:
    """The layer as shipped; tests pass their own factory to break a policy on purpose."""
    if name == "bubblewrap":
        from app.tools.bubblewrap.launcher import BubblewrapLayer

        return BubblewrapLayer
    from app.tools.nono.launcher import NonoLayer

    return NonoLayer


def _json_bytes(document: Any) -> bytes:
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _write_input(path: Path, data: bytes, tool: ToolIdentity, *, tool_owned: bool) -> None:
    path.write_bytes(data)
    os.chmod(path, 0o644)
    if tool_owned and os.geteuid() == 0:
        # The reader's case file belongs to the tool's uid, so a refused write through /input
        # is the read-only mount's doing and not the file's mode.
        os.chown(path, tool.uid, tool.gid)


class CaseRun:
    """The shared phases of one run; the layer's own checks are called at fixed points."""

    def __init__(self, ctx: RunContext, env: RunEnvironment, shipped: dict[str, bytes]) -> None:
        self.ctx = ctx
        self.env = env
        self.checks = ctx.checks
        self.shipped = shipped
        self.case: Case = ctx.case
        self.proposals: dict[str, Proposal] = {}
        self.proposal_bytes: dict[str, bytes] = {}

    # identity and storage ------------------------------------------------------------------
    def identity_and_storage(self) -> bytes:
        checks, env, case = self.checks, self.env, self.case
        checks.begin("identity")
        method = env.credential_method()
        checks.require(
            method == env.expected_credential_method,
            f"the AWS SDK takes the controller's credentials from {env.credential_source}",
            detail=f"credential method {method!r}, expected {env.expected_credential_method!r}",
        )
        arn = env.store.caller_identity()["Arn"]
        checks.require(
            env.caller_matches(arn),
            f"the caller is the analyst's role: {arn}",
            detail=f"expected {env.expected_caller}",
        )
        present = [name for name in MODEL_KEY_VARIABLES if os.environ.get(name)]
        checks.require(
            not present,
            "no model API key is in the controller's environment: "
            f"{', '.join(MODEL_KEY_VARIABLES)} are all absent",
            detail=f"present: {present}",
        )
        case_bytes = env.store.get(case.case_key())
        stored_case = parse_case(case_bytes, f"s3://{env.bucket}/{case.case_key()}")
        for entry in stored_case.suppliers:
            key = stored_case.proposal_key(entry.id)
            data = env.store.get(key)
            digest = hashlib.sha256(data).hexdigest()
            checks.require(
                digest == entry.sha256,
                f"the stored proposal {key} matches the case entry for {entry.id} "
                f"(sha256 {digest[:12]}…)",
                detail=f"sha256 {digest}, case entry {entry.sha256}",
            )
            self.proposals[entry.id] = parse_proposal(data, entry, key)
            self.proposal_bytes[entry.id] = data
        stored = {"case.json": case_bytes} | {
            f"proposals/{sid}.json": env.store.get(stored_case.proposal_key(sid))
            for sid in self.proposals
        }
        checks.require(
            stored == self.shipped and stored_case == case,
            f"the shipped case folder matches the store, byte for byte ({len(stored)} objects)",
            detail="the case folder and the store differ",
        )
        first = case.suppliers[0].id
        proposal_key = case.proposal_key(first)
        other_key = f"cases/{self.ctx.other_case_id}/case.json"
        for claim, outcome in (
            ("overwriting a source proposal", env.store.try_put(proposal_key, b"{}")),
            ("deleting a source proposal", env.store.try_delete(proposal_key)),
            ("reading another case's object", env.store.try_get(other_key)),
        ):
            checks.require(
                outcome == "AccessDenied",
                f"IAM returns AccessDenied for {claim}",
                detail=f"the store answered {outcome}",
            )
        return case_bytes

    def stage_inputs(self, case_bytes: bytes) -> None:
        paths, tool = self.ctx.paths, self.ctx.tool
        reader_in = paths.workspace("reader").input
        _write_input(reader_in / "case.json", case_bytes, tool, tool_owned=True)
        # The reader's documents: the case and, as stored, each proposal it names.
        (reader_in / "proposals").mkdir(mode=0o755)
        for supplier_id, data in self.proposal_bytes.items():
            _write_input(
                reader_in / "proposals" / f"{supplier_id}.json", data, tool, tool_owned=False
            )
        private = {"draft_reference": f"DR-{self.ctx.run_id[:8]}", "note": "writer's private notes"}
        _write_input(
            paths.workspace("writer").input / "private.json",
            _json_bytes(private),
            tool,
            tool_owned=False,
        )

    # supplier -------------------------------------------------------------------------------
    def supplier(self) -> dict[str, bool]:
        checks, client, case = self.checks, self.ctx.supplier_client, self.case
        checks.begin("supplier")
        ids = [s.id for s in case.suppliers]
        availability = checks.holds(
            "the supplier API answers the controller's authenticated read with 200, and the "
            "reply holds one true/false per supplier of the case",
            lambda: client.availability(case.case_id, ids),
            refusals=(SupplierReplyError,),
        )
        wrong = client.request(
            "GET", f"/cases/{case.case_id}/suppliers", key=b"not-the-supplier-key"
        )
        checks.expect_equal(wrong.status, 401, "the supplier API refuses an invalid key with 401")
        facts = self._facts(availability)
        staged = self.ctx.paths.workspace("evaluator").input / "facts.json"
        _write_input(staged, _json_bytes(facts), self.ctx.tool, tool_owned=False)
        reread = json.loads(staged.read_bytes())["availability"]
        checks.require(
            sorted(reread) == sorted(ids) and all(type(v) is bool for v in reread.values()),
            "the availability staged for the evaluator holds the case's own supplier ids and one "
            f"boolean each, nothing else the supplier sent: {sorted(reread)}",
            detail=f"staged {reread!r}",
        )
        return availability

    def _facts(self, availability: dict[str, bool]) -> dict[str, Any]:
        case = self.case
        return {
            "case_id": case.case_id,
            "requirements": case.requirements.model_dump(),
            "suppliers": [
                {
                    "id": p.supplier_id,
                    "price_usd": p.price_usd,
                    "delivery_days": p.delivery_days,
                    "warranty_months": p.warranty_months,
                }
                for p in (self.proposals[s.id] for s in case.suppliers)
            ],
            "availability": availability,
        }

    # business -------------------------------------------------------------------------------
    def business(
        self, availability: dict[str, bool], suite_submit: Callable[[Path], None]
    ) -> Comparison:
        checks, ctx = self.checks, self.ctx
        checks.begin("business")
        # The controller's own comparison first: with no eligible supplier the run stops here,
        # before anything is drafted.
        mine = compare(self.case, self.proposals, availability)
        outcome = ctx.layer.run(
            "evaluator",
            "evaluate",
            [self._in("evaluator", "facts.json"), self._out("evaluator", "comparison.json")],
        ).result
        theirs = outcome["comparison"]
        checks.require(
            theirs["winner"] == mine.winner and len(mine.eligible_ids()) >= 1,
            f"the evaluator's offline comparison names {theirs['winner']}, "
            f"{self._eligibility_phrase(mine)}",
            detail=f"evaluator chose {theirs['winner']!r}",
        )
        checks.require(
            theirs == mine.as_json(),
            "the controller's own comparison agrees with the evaluator's, supplier by supplier",
            detail=f"controller {mine.as_json()}, evaluator {theirs}",
        )
        staged = ctx.paths.workspace("writer").input / "comparison.json"
        _write_input(staged, _json_bytes(mine.as_json()), ctx.tool, tool_owned=False)
        ctx.layer.run("writer", "write-draft", [self._in("writer", ""), self._out("writer", "")])
        saved = ctx.paths.workspace("writer").output / "comparison.json"
        checks.require(
            saved.read_bytes() == staged.read_bytes(),
            "the writer saves the comparison in its own output directory",
            detail="writer/out/comparison.json differs from what was staged",
        )
        suite_submit(ctx.paths.workspace("writer").output / "draft.txt")
        return mine

    def _eligibility_phrase(self, comparison: Comparison) -> str:
        count = len(comparison.eligible_ids())
        if count == 1:
            return "the one supplier that meets every requirement"
        return f"the lowest-priced of the {count} suppliers that meet every requirement"

    def _in(self, role: Role, name: str) -> str:
        return self.ctx.layer.role_path(role, "in", name)

    def _out(self, role: Role, name: str) -> str:
        return self.ctx.layer.role_path(role, "out", name)

    # model ----------------------------------------------------------------------------------
    def evidence_for_model(self, comparison: Comparison) -> dict[str, Any]:
        case = self.case
        verdicts = {v.id: v for v in comparison.verdicts}
        return {
            "case_id": case.case_id,
            "title": case.title,
            "requirements": case.requirements.model_dump(),
            "suppliers": [
                {
                    "id": s.id,
                    "name": s.name,
                    "store_key": case.proposal_key(s.id),
                    "price_usd": self.proposals[s.id].price_usd,
                    "delivery_days": self.proposals[s.id].delivery_days,
                    "warranty_months": self.proposals[s.id].warranty_months,
                    "summary": self.proposals[s.id].summary,
                    "eligible": verdicts[s.id].eligible,
                    "misses": list(verdicts[s.id].misses),
                }
                for s in case.suppliers
            ],
            "comparison": comparison.as_json(),
        }

    def model(self, comparison: Comparison) -> tuple[str, Recommendation, dict[str, Any]]:
        checks, env, case = self.checks, self.env, self.case
        checks.begin("model")
        answer, record = run_model_turn(env.model(), self.evidence_for_model(comparison))
        checks.require(
            record.tool_calls == ["get_case_evidence"],
            f"the model called the evidence tool once ({env.model_description})",
            detail=f"tool calls {record.tool_calls}",
        )
        if env.bedrock:
            checks.require(
                record.input_tokens > 0 and record.output_tokens > 0,
                f"Bedrock returned a real turn with nonzero token usage on {record.model_name}",
                detail=f"{record.input_tokens} input, {record.output_tokens} output tokens",
            )
        else:
            checks.skip(
                "Bedrock returned a real turn with nonzero token usage",
                "the local run uses the offline model; this runs in the cluster",
            )
        keys = [case.proposal_key(s.id) for s in case.suppliers]
        chosen = checks.holds(
            f"the model's own choice, {answer.recommended_supplier}, "
            "matches the verified comparison",
            lambda: choice_gate(answer, comparison),
            refusals=(GateRejected,),
        )
        checks.holds(
            f"the model's analysis cites all {len(keys)} proposals by store key",
            lambda: citation_gate(answer, keys),
            refusals=(GateRejected,),
        )
        self._gate_controls(comparison, answer, keys)
        usage = {
            "model": record.model_name,
            "input_tokens": record.input_tokens,
            "output_tokens": record.output_tokens,
        }
        return chosen, answer, usage

    def _gate_controls(
        self, comparison: Comparison, answer: Recommendation, keys: list[str]
    ) -> None:
        """Each gate refuses a deliberately wrong copy of the accepted answer."""
        ineligible = [v.id for v in comparison.verdicts if not v.eligible]
        losers = [v.id for v in comparison.verdicts if v.id != comparison.winner]
        # Prefer an ineligible supplier; a case where every supplier qualifies offers a loser,
        # and a one-supplier case an id that is not in the case at all.
        wrong = (ineligible or losers or ["not-a-supplier"])[0]
        wrong_label = "an ineligible supplier" if ineligible else "a supplier it did not choose"
        choose = lambda a: choice_gate(a, comparison)  # noqa: E731
        cite = lambda a: citation_gate(a, keys)  # noqa: E731
        controls = (
            (
                "choice",
                f"an answer naming {wrong_label}, {wrong}",
                answer.model_copy(update={"recommended_supplier": wrong}),
                choose,
            ),
            (
                "choice",
                "an answer that names the supplier only in its prose",
                answer.model_copy(update={"recommended_supplier": None}),
                choose,
            ),
            (
                "citation",
                f"an answer missing the source key {keys[-1]}",
                answer.model_copy(update={"analysis": answer.analysis.replace(keys[-1], "")}),
                cite,
            ),
        )
        for gate, label, bad, check in controls:
            try:
                check(bad)
            except GateRejected as rejected:
                self.checks.require(True, f"the {gate} gate rejects {label} ({rejected})")
            else:
                self.checks.require(
                    False, f"the {gate} gate rejects {label}", detail="it was accepted"
                )

    # report, correlation, scans ---------------------------------------------------------------
    def report(self, chosen: str, answer: Recommendation, comparison: Comparison) -> None:
        checks, env, ctx = self.checks, self.env, self.ctx
        checks.begin("report")
        documents = {
            "recommendation.md": render_recommendation(self.case, chosen, answer),
            "comparison.json": _json_bytes(comparison.as_json()),
        }
        write_scanned(ctx.paths.run, documents, self.secrets())
        for name, data in documents.items():
            key = f"{self.report_prefix}{name}"
            env.store.put(key, data)
            checks.require(
                env.store.get(key) == data,
                f"the report object round-trips through the store: {name}",
                detail=f"s3://{env.bucket}/{key} differs from what was written",
            )

    def secrets(self) -> dict[str, bytes]:
        """What no file of the run may hold: the real key, and what the layer derived from it."""
        key = self.env.supplier_key
        return {"the supplier key": key} | self.ctx.layer.secrets_to_scan(key)

    @property
    def report_prefix(self) -> str:
        return f"reports/{self.case.case_id}/{self.ctx.run_id}/"

    def correlation(self, expects_refused_operation: bool) -> dict[str, Any]:
        checks, ctx = self.checks, self.ctx
        checks.begin("correlation")
        calls = ctx.supplier_client.calls.as_json()
        result = correlate(calls, ctx.supplier_client.read_log(), ctx.run_id)
        checks.require(
            not result.problems,
            f"the supplier API's own log holds every request of this run that reached it exactly "
            f"once ({result.matched} requests) and none that was refused "
            f"({result.refused_calls} refused requests never arrived)",
            detail="; ".join(result.problems),
        )
        checks.require(
            result.had_successful_read and result.had_accepted_draft,
            "the run's record includes a successful availability read and an accepted draft",
            detail=f"read {result.had_successful_read}, draft {result.had_accepted_draft}",
        )
        if expects_refused_operation:
            checks.require(
                result.had_refused_operation,
                "and at least one refused operation, so an empty upstream log could not pass this",
                detail="no call of this run was refused before the supplier",
            )
        return {
            "arrived_once": result.matched,
            "refused_never_arrived": result.refused_calls,
            "had_refused_operation": result.had_refused_operation,
        }

    def finish(self, usage: dict[str, Any], correlation: dict[str, Any]) -> list[str]:
        checks, env, ctx = self.checks, self.env, self.ctx
        evidence = ctx.evidence | {
            "run_id": ctx.run_id,
            "layer": ctx.layer_name,
            "case_id": self.case.case_id,
            "policy": ctx.layer.evidence(),
            "model": usage,
            "correlation": correlation,
            "report_prefix": f"s3://{env.bucket}/{self.report_prefix}",
        }
        documents = {
            "evidence.json": _json_bytes(evidence),
            "calls.json": _json_bytes(ctx.supplier_client.calls.as_json()),
        }
        secrets = self.secrets()
        checks.holds(
            "the report, the comparison, the evidence and the call record were scanned before "
            f"being written for {', '.join(secrets)}; the run stops if one appears",
            lambda: write_scanned(ctx.paths.run, documents, secrets),
            refusals=(KeyLeak,),
        )
        write_scanned(ctx.paths.run, {"checks.json": _json_bytes(checks.as_json())}, secrets)
        for name in ("evidence.json", "calls.json", "checks.json"):
            env.store.put(f"{self.report_prefix}{name}", (ctx.paths.run / name).read_bytes())
        # The last write is above: from here on nothing in the run directory changes.
        try:
            scanned = scan_directory(ctx.paths.run, secrets)
        except KeyLeak as leak:
            checks.require(
                False, "no file left in the run directory holds a secret", detail=str(leak)
            )
            raise
        checks.require(
            True,
            f"and so was every one of the {len(scanned)} files left in the run directory, read "
            f"back after the last write: {', '.join(scanned)}",
        )
        return scanned


def run_case(
    options: RunOptions,
    *,
    make_layer: Callable[[LayerSetup], ConfinementLayer] | None = None,
    stream: TextIO | None = None,
) -> RunOutcome:
    """Runs one case; raises CheckFailed (or a clear error) and leaves no report on failure."""
    out = stream or sys.stdout
    case, proposal_bytes = load_case_folder(options.case_dir)
    shipped = {"case.json": (options.case_dir / "case.json").read_bytes()} | {
        f"proposals/{sid}.json": data for sid, data in proposal_bytes.items()
    }
    tool = ToolIdentity.for_this_controller()
    checks = CheckLog(stream=out)
    with ExitStack() as stack:
        env = stack.enter_context(open_environment(options.case_dir, case, tool, options.work_base))
        paths = create_run(env.work_base, tool, env.run_id)
        if not options.keep_workdir:
            stack.callback(shutil.rmtree, paths.top, True)
        env.start_services(stack, paths)
        setup = LayerSetup(
            run_id=paths.run_id,
            case_id=case.case_id,
            other_case_id=OTHER_CASE_ID,
            paths=paths,
            tool=tool,
            supplier=env.supplier,
            aws_credential=env.aws_credential,
            aws_endpoint=env.aws_endpoint,
        )
        layer = (make_layer or default_layer(options.layer))(setup)
        stack.callback(layer.close)
        print(f"==> {options.layer}: run {paths.run_id}, case {case.case_id}", file=out, flush=True)
        layer.preflight()
        client = SupplierClient(env.supplier, env.supplier_key, CallLog(), paths.run_id)
        ctx = RunContext(
            run_id=paths.run_id,
            layer_name=options.layer,
            paths=paths,
            tool=tool,
            case=case,
            case_dir=options.case_dir,
            other_case_id=OTHER_CASE_ID,
            checks=checks,
            supplier=env.supplier,
            supplier_client=client,
            aws_credential=env.aws_credential,
            aws_endpoint=env.aws_endpoint,
            layer=layer,
        )
        suite = layer.check_suite(ctx)
        run = CaseRun(ctx, env, shipped)
        checks.begin("layer")
        suite.before_identity()
        case_bytes = run.identity_and_storage()
        run.stage_inputs(case_bytes)
        suite.boundary()
        availability = run.supplier()
        comparison = run.business(availability, suite.submit_draft)
        chosen, answer, usage = run.model(comparison)
        run.report(chosen, answer, comparison)
        correlation = run.correlation(suite.expects_refused_operation)
        run.finish(usage, correlation)
        out_parent = options.out_parent or env.default_out_parent
        copied = _copy_out(paths.run, options.out_dir or out_parent / options.layer / paths.run_id)
        report_uri = f"s3://{env.bucket}/{run.report_prefix}"
        print(f"ANALYST_COMPLETE={paths.run_id}", file=out)
        print(f"{checks.passed} checks passed", file=out)
        if checks.skipped:
            print(
                f"  {checks.skipped} skipped (listed above with the reason; not counted)", file=out
            )
        print(f"  model: {env.model_description}", file=out)
        print(f"  recommendation: {copied / 'recommendation.md'}", file=out)
        print(f"  evidence:       {copied / 'evidence.json'}", file=out)
        print(f"  store report:   {report_uri}", file=out, flush=True)
        return RunOutcome(paths.run_id, checks.passed, copied, report_uri)


def _copy_out(run_dir: Path, out_dir: Path) -> Path:
    """Copies the run's report files out, after the last scan; the target must be new."""
    target = out_dir
    target.mkdir(parents=True, exist_ok=False)
    for name in REPORT_FILES:
        shutil.copy2(run_dir / name, target / name)
    return target
