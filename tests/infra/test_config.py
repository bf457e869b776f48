"""The typed stack config: defaults, Pulumi.yaml's descriptions, the dev stack, refusals."""

from __future__ import annotations

import pytest
import yaml
from stack_run import REPO_ROOT, run_failing

from infra.config import PROJECT, ConfigError, StackConfig, config_keys, parse_config


def _project_config() -> dict[str, dict]:
    return yaml.safe_load((REPO_ROOT / "Pulumi.yaml").read_text())["config"]


def _dev_config() -> dict[str, object]:
    document = yaml.safe_load((REPO_ROOT / "Pulumi.dev.yaml").read_text())
    return {key.removeprefix(f"{PROJECT}:"): value for key, value in document["config"].items()}


def test_project_file_runs_infra_with_python_in_a_virtualenv() -> None:
    project = yaml.safe_load((REPO_ROOT / "Pulumi.yaml").read_text())
    assert project["name"] == PROJECT
    assert project["main"] == "infra/"
    assert project["runtime"]["name"] == "python"
    assert project["runtime"]["options"]["virtualenv"]
    assert (REPO_ROOT / project["main"] / "__main__.py").is_file()


def test_every_key_is_described_in_the_project_file_with_the_code_default() -> None:
    declared = _project_config()
    defaults = StackConfig()
    for field, key in config_keys().items():
        assert key in declared, f"Pulumi.yaml does not describe config key {key}"
        assert declared[key].get("description"), f"Pulumi.yaml has no description for {key}"
        value = getattr(defaults, field)
        expected = [item.value for item in value] if isinstance(value, tuple) else value
        assert declared[key]["default"] == expected, (
            f"{key}: Pulumi.yaml and infra/config.py disagree"
        )
    assert set(declared) == set(config_keys().values()), (
        "Pulumi.yaml describes a key the code lacks"
    )


def test_the_dev_stack_is_valid() -> None:
    config = parse_config(_dev_config())
    assert config.layers and config.cluster_name


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"clusterMode": "borrow"},
            "procurement-analyst:clusterMode: allowed values are 'existing' or 'create'",
        ),
        (
            {"imageMode": "pull"},
            "procurement-analyst:imageMode: allowed values are 'build' or 'prebuilt'",
        ),
        (
            {"layers": ["bubblewrap", "firejail"]},
            "procurement-analyst:layers[1]: allowed values are 'bubblewrap' or 'nono'",
        ),
        (
            {"layers": []},
            "procurement-analyst:layers: must name each of bubblewrap, nono at most once",
        ),
        (
            {"layers": ["nono", "nono"]},
            "procurement-analyst:layers: must name each of bubblewrap, nono at most once",
        ),
        (
            {"bucketOnDestroy": "delete"},
            "procurement-analyst:bucketOnDestroy: allowed values are 'retain' or 'force-destroy'",
        ),
        (
            {"kubernetesVersion": "1.35"},
            "procurement-analyst:kubernetesVersion: must be a MAJOR.MINOR version of at least 1.36",
        ),
        (
            {"caseId": "rfp-404"},
            "procurement-analyst:caseId: has no folder cases/rfp-404/case.json; "
            "allowed: rfp-001, rfp-other",
        ),
        ({"caseId": "../etc"}, "procurement-analyst:caseId: must match"),
        ({"runTrigger": "Run 2"}, "procurement-analyst:runTrigger: must match"),
        ({"region": "mars-1"}, "procurement-analyst:region: must be an AWS Region name"),
        ({"namespace": "Analyst"}, "procurement-analyst:namespace: must be a DNS-1123 label"),
        (
            {"modelId": "x y"},
            "procurement-analyst:modelId: must be a Bedrock model or inference profile id",
        ),
        (
            {"bucketVersioning": "sometimes"},
            "procurement-analyst:bucketVersioning: Input should be a valid boolean",
        ),
        (
            {"imageMode": "prebuilt", "analystImage": "repo/analyst@sha256:1"},
            "imageMode prebuilt needs supplierImage",
        ),
    ],
)
def test_a_bad_value_names_its_key_and_what_it_accepts(
    raw: dict[str, object], expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw)
    assert expected in str(caught.value)


def test_the_program_stops_on_a_bad_value_before_creating_anything() -> None:
    failure = run_failing(clusterMode="borrow")
    assert failure.returncode == 2
    assert "ConfigError" in failure.stderr
    assert (
        "procurement-analyst:clusterMode: allowed values are 'existing' or 'create' (got 'borrow')"
        in failure.stderr
    )


def test_a_list_key_accepts_the_yaml_and_the_command_line_form() -> None:
    from infra.config import _as_list

    assert _as_list('["nono"]') == ["nono"]
    assert _as_list("bubblewrap, nono") == ["bubblewrap", "nono"]
