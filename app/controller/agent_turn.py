"""One model turn: the agent calls the evidence tool, then answers with a structured Recommendation.

Locally the model is ``OfflineModel``, a deterministic Strands ``Model`` that asks for the
evidence and answers from it; in the cluster it is Strands' ``BedrockModel``. Both run the
same Agent, the same tool and the same structured-output path: only the model differs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel
from strands import Agent, tool
from strands.models.model import Model
from strands.types.content import Messages
from strands.types.exceptions import (
    ContextWindowOverflowException,
    EventLoopException,
    MaxTokensReachedException,
    ModelThrottledException,
    StructuredOutputException,
)
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

from app.controller.gates import MAX_ANALYSIS_CHARS, Recommendation
from app.core.errors import RunStopped

EVIDENCE_TOOL = "get_case_evidence"
# Bedrock stops a turn's output here; the structured answer is bounded again by its own shape.
MAX_OUTPUT_TOKENS = 4096
T = TypeVar("T", bound=BaseModel)

SYSTEM_PROMPT = (
    "You are a procurement analyst. Call the get_case_evidence tool once, then recommend the "
    "supplier the verified comparison names. Cite every proposal by its store key in backticks "
    "(for example `proposals/<case>/<supplier>.json`). Put the chosen supplier id in "
    "recommended_supplier; the prose is your analysis."
)


class ModelTurnFailed(RunStopped):
    """The model turn ended without an answer the gates could check: the run stops."""


# What the agent loop raises when a turn cannot produce a valid structured answer.
_TURN_FAILURES = (
    ContextWindowOverflowException,
    EventLoopException,
    MaxTokensReachedException,
    ModelThrottledException,
    StructuredOutputException,
)


@dataclass
class TurnRecord:
    """What the turn did, for the checks: the tools it called and the tokens it used."""

    tool_calls: list[str] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    model_name: str = ""


def _tool_use_events(name: str, payload: dict[str, Any]) -> list[StreamEvent]:
    tool_use_id = f"tooluse_{uuid.uuid4().hex[:16]}"
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"start": {"toolUse": {"toolUseId": tool_use_id, "name": name}}}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(payload)}}}},
        {"contentBlockStop": {}},
        {"messageStop": {"stopReason": "tool_use"}},
        {
            "metadata": {
                "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
                "metrics": {"latencyMs": 0},
            }
        },
    ]


def _latest_tool_result(messages: Messages) -> dict[str, Any] | None:
    for message in reversed(messages):
        for block in message.get("content", []):
            result = block.get("toolResult")
            if result is None:
                continue
            for item in result.get("content", []):
                if "json" in item:
                    return _as_evidence(item["json"])
                if "text" in item:
                    return _as_evidence(json.loads(item["text"]))
    return None


def _as_evidence(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("the evidence tool's result is not a JSON object")
    return value


def offline_analysis(evidence: dict[str, Any]) -> Recommendation:
    """The offline model's answer, written from the evidence alone."""
    req = evidence["requirements"]
    winner = evidence["comparison"]["winner"]
    lines = [
        f"## Analysis: {evidence['title']}",
        "",
        f"Requirements: at most {req['max_price_usd']:,} USD, delivery within "
        f"{req['max_delivery_days']} days, "
        f"at least {req['min_warranty_months']} months of warranty.",
        "",
    ]
    for supplier in evidence["suppliers"]:
        verdict = (
            "meets every requirement"
            if supplier["eligible"]
            else ("misses: " + ", ".join(supplier["misses"]))
        )
        lines.append(
            f"- **{supplier['name']}** (`{supplier['store_key']}`): {supplier['price_usd']:,} USD, "
            f"{supplier['delivery_days']} days, {supplier['warranty_months']} months; {verdict}."
        )
    lines += ["", f"The verified comparison selects `{winner}`."]
    return Recommendation(recommended_supplier=winner, analysis="\n".join(lines) + "\n")


class OfflineModel(Model):
    """A deterministic model for runs with no Bedrock: asks for the evidence, answers from it."""

    def __init__(self) -> None:
        self._config: dict[str, Any] = {"model_id": "offline"}

    def update_config(self, **model_config: Any) -> None:
        self._config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self._config

    async def structured_output(
        self,
        output_model: type[T],
        prompt: Messages,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        evidence = _latest_tool_result(prompt)
        if evidence is None:
            raise ValueError("the offline model answers only after the evidence tool has run")
        yield {"output": output_model.model_validate(offline_analysis(evidence).model_dump())}

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterable[StreamEvent]:
        names = [spec["name"] for spec in tool_specs or []]
        evidence = _latest_tool_result(messages)
        if evidence is None:
            events = _tool_use_events(EVIDENCE_TOOL, {})
        else:
            # The structured-output tool is the one tool that is not the evidence tool.
            answer_tool = next(name for name in names if name != EVIDENCE_TOOL)
            events = _tool_use_events(answer_tool, offline_analysis(evidence).model_dump())
        for event in events:
            yield event


def bedrock_model(model_id: str, region: str) -> Model:
    """Strands' Bedrock model, using the controller's own AWS identity (Pod Identity)."""
    from strands.models.bedrock import BedrockModel

    return BedrockModel(model_id=model_id, region_name=region, max_tokens=MAX_OUTPUT_TOKENS)


def run_model_turn(model: Model, evidence: dict[str, Any]) -> tuple[Recommendation, TurnRecord]:
    """Runs one agent turn with the evidence tool; returns the structured answer and a record."""
    record = TurnRecord(model_name=str(model.get_config().get("model_id", "")))

    @tool(name=EVIDENCE_TOOL)
    def get_case_evidence() -> dict[str, Any]:
        """Returns the case, every proposal with its store key, and the verified comparison."""
        record.tool_calls.append(EVIDENCE_TOOL)
        return evidence

    agent = Agent(
        model=model,
        tools=[get_case_evidence],
        system_prompt=SYSTEM_PROMPT,
        callback_handler=None,
    )
    try:
        result = agent(
            f"Recommend a supplier for case {evidence['case_id']}.",
            structured_output_model=Recommendation,
        )
    except _TURN_FAILURES as error:
        raise ModelTurnFailed(
            f"the model turn gave no usable answer ({type(error).__name__}: {error})",
            "an answer must fit the Recommendation shape, its analysis at most "
            f"{MAX_ANALYSIS_CHARS} characters",
        ) from error
    usage = result.metrics.accumulated_usage
    record.input_tokens = int(usage.get("inputTokens", 0))
    record.output_tokens = int(usage.get("outputTokens", 0))
    answer = result.structured_output
    if not isinstance(answer, Recommendation):
        raise RuntimeError("the model turn ended without a structured recommendation")
    return answer, record
