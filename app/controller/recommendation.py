"""recommendation.md, the report a person reads: the checked choice as its headline, then the
model's analysis shown verbatim."""

from __future__ import annotations

from app.controller.gates import Recommendation
from app.controller.markdown import inline, verbatim
from app.core.case import Case


def render_recommendation(case: Case, supplier_id: str, answer: Recommendation) -> bytes:
    """The report: the headline from the gate-checked id, then the model's own analysis.

    Every text from the case or the model is neutralised (see markdown.py): the only Markdown
    in the report is the controller's own. Ids need nothing: the contract allows only
    [a-z0-9-], and they sit in code spans.
    """
    entry = case.supplier(supplier_id)
    return (
        "# Procurement recommendation\n\n"
        f"**Case:** {case.case_id}, {inline(case.title)}\n\n"
        f"**Recommended supplier:** {inline(entry.name)} (`{entry.id}`)\n\n"
        "## The model's analysis\n\n"
        "Shown as the model wrote it, unformatted; the recommendation above comes from the "
        "checked choice, not from this text.\n\n" + verbatim(answer.analysis)
    ).encode("utf-8")
