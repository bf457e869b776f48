"""The rehearsal switch in cluster mode: the offline model, said so, and nothing passed for it."""

from __future__ import annotations

import io

import pytest

from app.controller.environment import ClusterMode, SettingMissing
from app.core import cluster_env
from app.core.checklog import CheckLog
from tests.support.cluster_settings import CLUSTER_ENV


def test_without_the_switch_the_job_uses_bedrock_and_prints_no_notice() -> None:
    mode = ClusterMode(CLUSTER_ENV)
    assert not mode.rehearsal and mode.notices() == []
    model = mode._model()
    assert model.bedrock and model.description.startswith("Bedrock ")


def test_the_switch_selects_the_offline_model_and_says_so() -> None:
    mode = ClusterMode({**CLUSTER_ENV, cluster_env.REHEARSAL: cluster_env.REHEARSAL_ON})
    assert mode.rehearsal
    (notice,) = mode.notices()
    assert notice.startswith(f"REHEARSAL: {cluster_env.REHEARSAL}=1 is set")
    model = mode._model()
    assert not model.bedrock
    assert "the offline model" in model.description and cluster_env.REHEARSAL in model.description
    # Bedrock's own check stays a SKIP with the rehearsal's reason: never a PASS.
    log = CheckLog(stream=io.StringIO())
    log.skip("Bedrock returned a real turn with nonzero token usage", model.no_bedrock_reason)
    assert log.passed == 0 and log.skipped == 1
    assert "a rehearsal (ANALYST_REHEARSAL) uses the offline model" in log.records[0].claim


@pytest.mark.parametrize("value", ["0", "true", "yes", ""])
def test_any_other_value_is_bad_input(value: str) -> None:
    with pytest.raises(SettingMissing, match=cluster_env.REHEARSAL) as raised:
        ClusterMode({**CLUSTER_ENV, cluster_env.REHEARSAL: value})
    assert raised.value.exit_code == 2
