"""The business work: the evaluator's offline comparison, the controller's own, and the draft."""

from __future__ import annotations

from app.controller.comparison import Comparison, compare
from app.controller.phases.identity import StoredCase
from app.core.case_files import MAX_DOCUMENT_BYTES
from app.core.draft import ExpectedDraft, draft_reference
from app.core.files import json_bytes, read_regular
from app.core.run import Run
from app.core.run_tree import stage_file
from app.tools.catalogue import controller as c
from app.tools.layer import ConfinementLayer, LayerChecks
from app.tools.output_metadata import changed_outputs


def business(
    run: Run,
    layer: ConfinementLayer,
    layer_checks: LayerChecks,
    stored: StoredCase,
    availability: dict[str, bool],
) -> Comparison:
    checks = run.checks
    checks.begin(c.business(layer_checks.submission))
    # The controller's own comparison first: with no eligible supplier the run stops here,
    # before anything is drafted.
    mine = compare(run.case, stored.proposals, availability)
    outcome = layer.run_tool(
        "evaluator",
        "evaluate",
        layer.role_path("evaluator", "in", "facts.json"),
        layer.role_path("evaluator", "out", "comparison.json"),
    )
    theirs = outcome.data["comparison"]
    checks.require(
        c.EVALUATOR_WINNER(winner=mine.winner, eligibility=_eligibility_phrase(mine)),
        theirs["winner"] == mine.winner,
        detail=f"evaluator chose {theirs['winner']!r}",
    )
    checks.require(
        c.COMPARISONS_AGREE,
        theirs == mine.facts_json(),
        detail=f"controller {mine.facts_json()}, evaluator {theirs}"
        if theirs != mine.facts_json()
        else f"the same verdict on each of the {len(mine.verdicts)} suppliers",
    )
    writer = run.paths.workspace("writer")
    staged = writer.input / "comparison.json"
    stage_file(staged, json_bytes(mine.as_json()), run.tool, tool_owned=False)
    layer.run_tool(
        "writer",
        "write-draft",
        layer.role_path("writer", "in", ""),
        layer.role_path("writer", "out", ""),
    )
    # Every role's work is read back from here on (the writer's comparison and draft): first,
    # that no output's mode, owner or attributes changed since the controller made it.
    changed = changed_outputs(run.paths, run.tool, layer.roles_reaching_output)
    checks.require(
        c.OUTPUTS_UNCHANGED(uid=run.tool.uid),
        not changed,
        detail="; ".join(changed) or "every output file and directory of the three roles",
    )
    # The writer owns its output directory: what it left there is read as a regular file of
    # bounded size, never through a link it planted.
    saved = read_regular(writer.output / "comparison.json", MAX_DOCUMENT_BYTES)
    same = saved == staged.read_bytes()
    checks.require(
        c.WRITER_SAVES,
        same,
        detail=f"writer/out/comparison.json, {len(saved)} bytes"
        + ("" if same else ", differs from what was staged"),
    )
    expected = ExpectedDraft(draft_reference(run.run_id), run.case.case_id, mine.winner)
    layer_checks.submit_draft(writer.output / "draft.txt", expected)
    return mine


def _eligibility_phrase(comparison: Comparison) -> str:
    count = len(comparison.eligible_ids())
    if count == 1:
        return "the one supplier that meets every requirement"
    return f"the lowest-priced of the {count} suppliers that meet every requirement"
