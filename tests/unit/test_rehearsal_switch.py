"""The rehearsal switch in cluster mode: the offline model, said so, and nothing passed for it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from app.controller.environment import ClusterMode
from app.core import cluster_env
from app.core.catalogue import Section
from app.core.checklog import CheckLog
from app.core.cluster_settings import SettingUnusable
from app.tools.catalogue import controller as catalogue
from tests.support.cluster_settings import cluster_environment


def test_without_the_switch_the_job_uses_bedrock_and_prints_no_notice(tmp_path: Path) -> None:
    mode = ClusterMode(cluster_environment(tmp_path))
    assert not mode.rehearsal and mode.notices() == []
    model = mode._model()
    assert model.bedrock and model.description.startswith("Bedrock ")


def test_the_switch_selects_the_offline_model_and_says_so(tmp_path: Path) -> None:
    mode = ClusterMode(cluster_environment(tmp_path, **{cluster_env.REHEARSAL: "1"}))
    assert mode.rehearsal
    (notice,) = mode.notices()
    assert notice.startswith(f"REHEARSAL: {cluster_env.REHEARSAL}=1 is set")
    model = mode._model()
    assert not model.bedrock
    assert "the offline model" in model.description and cluster_env.REHEARSAL in model.description
    # Bedrock's own check stays a SKIP with the rehearsal's reason: never a PASS.
    log = CheckLog(stream=io.StringIO())
    log.begin(Section("model", catalogue.BEDROCK_USAGE))
    log.skip(catalogue.BEDROCK_USAGE, model.no_bedrock_reason)
    assert log.passed == 0 and log.skipped == 1
    assert "a rehearsal (ANALYST_REHEARSAL) uses the offline model" in log.records[0].detail


@pytest.mark.parametrize("value", ["0", "true", "yes", ""])
def test_any_other_value_is_bad_input(value: str, tmp_path: Path) -> None:
    with pytest.raises(SettingUnusable, match=cluster_env.REHEARSAL) as raised:
        ClusterMode(cluster_environment(tmp_path, **{cluster_env.REHEARSAL: value}))
    assert raised.value.exit_code == 2
