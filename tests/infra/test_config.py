"""The typed stack config: defaults, Pulumi.yaml's declared types and descriptions, every stack
file and every documented `pulumi config set` under the engine's own type check, refusals."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from infra.config import PROJECT, ConfigError, StackConfig, config_keys, parse_config
from tests.support.docs import all_text
from tests.support.engine_config import (
    ConfigValue,
    EngineConfigError,
    apply_config_command,
    program_config,
    project_document,
    stack_file_values,
    validate,
)
from tests.support.stack_run import (
    CREATE_MODE,
    CREATE_WORLD,
    PREBUILT,
    REPO_ROOT,
    run_failing,
    run_stack,
)

STACK_FILES = sorted(REPO_ROOT.glob("Pulumi.*.yaml"))


def _project_config() -> dict[str, dict]:
    return {key: value for key, value in project_document()["config"].items() if ":" not in key}


def _documented_config_commands() -> list[str]:
    """Every `pulumi config set|rm` of the README and docs/: code block lines and inline code."""
    text = all_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)
    lines = [
        line.strip()
        for block in blocks
        for line in block.splitlines()
        if re.match(r"\s*pulumi config (set|rm)\b", line)
    ]
    # Inline, a whole command only: prose may name `pulumi config set runtimeTarget` as what
    # sets a key, without a value.
    inline = re.findall(
        r"(?<!`)`(pulumi config (?:set (?:--path )?[^`\s]+ [^`\s][^`]*|rm [^`\s]+))`", text
    )
    return lines + inline


def _dev_config() -> dict[str, object]:  # the project's keys of the dev stack
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
        expected = (
            [getattr(item, "value", item) for item in value] if isinstance(value, tuple) else value
        )
        assert declared[key]["default"] == expected, (
            f"{key}: Pulumi.yaml and infra/config.py disagree"
        )
    assert set(declared) == set(config_keys().values()), (
        "Pulumi.yaml describes a key the code lacks"
    )
    for key, declaration in declared.items():
        assert "type" in declaration, f"Pulumi.yaml declares no type for {key}"


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
            {"imageMode": "prebuilt", "analystImage": "repo/analyst@sha256:" + "1" * 64},
            "imageMode prebuilt needs supplierImage",
        ),
        ({"clusterMode": "create"}, "clusterMode create needs vpcId"),
        (
            {"clusterMode": "create", "vpcId": "vpc-0123456789abcdef0", "subnetIds": []},
            "clusterMode create needs subnetIds: at least 2 subnets",
        ),
        ({"subnetIds": ["sub-1"]}, "procurement-analyst:subnetIds: sub-1 must match"),
        ({"vpcId": "vpc1"}, "procurement-analyst:vpcId: must be a VPC id"),
        ({"awsRoleArn": "deployer"}, "procurement-analyst:awsRoleArn: must be an IAM role ARN"),
        ({"awsProfile": "a b"}, "procurement-analyst:awsProfile: must be an AWS CLI profile"),
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


def test_the_engine_check_refuses_a_plain_string_for_a_list_key() -> None:
    # The docs once said `pulumi config set layers nono`: the CLI stores a string, and the
    # engine refuses it before the program runs. The port must refuse it the same way.
    values: dict[str, ConfigValue] = {}
    apply_config_command(values, PROJECT, "pulumi config set layers nono")
    with pytest.raises(EngineConfigError) as caught:
        validate("dev", values, project_document())
    assert str(caught.value) == (
        "Stack 'dev' with configuration key 'layers' must be of type 'array<string>'"
    )


def test_the_path_form_sets_a_list_the_engine_accepts() -> None:
    values = stack_file_values(REPO_ROOT / "Pulumi.dev.yaml")
    for command in ("pulumi config rm layers", "pulumi config set --path 'layers[0]' nono"):
        apply_config_command(values, PROJECT, command)
    seen = program_config("dev", values, project_document())
    assert seen[f"{PROJECT}:layers"] == '["nono"]'


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda path: path.name)
def test_every_stack_file_passes_the_engine_type_check_and_the_program(path: Path) -> None:
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    values = stack_file_values(path)
    seen = program_config(stack, values, project_document())
    assert seen["pulumi:disable-default-providers"] == '["*"]'
    raw = {key.removeprefix(f"{PROJECT}:"): v.content() for key, v in values.items()}
    parse_config({key: value for key, value in raw.items() if ":" not in key})


def test_every_documented_config_command_passes_the_engine_type_check() -> None:
    commands = _documented_config_commands()
    assert any("--path 'layers[0]'" in command for command in commands), (
        "the docs show no way to set the list key layers"
    )
    declared = set(_project_config())
    values = stack_file_values(REPO_ROOT / "Pulumi.dev.yaml")
    for command in commands:
        operands = [word for word in shlex.split(command, comments=True)[3:] if word[0] != "-"]
        assert operands[0].split("[")[0] in declared, f"the docs set an undeclared key: {command}"
        apply_config_command(values, PROJECT, command)
        try:
            validate("dev", values, project_document())
        except EngineConfigError as refused:
            pytest.fail(f"the engine refuses the docs' `{command}`: {refused}")


def test_the_harness_refuses_what_the_engine_refuses() -> None:
    failure = run_failing(layers="nono")
    assert "EngineConfigError: Stack 'dev' with configuration key 'layers'" in failure.stderr
    assert "must be of type 'array<string>'" in failure.stderr


def test_a_yaml_list_reaches_the_program_as_a_list() -> None:
    jobs = run_stack(layers=["nono"]).of_type("kubernetes:batch/v1:Job")
    assert [j["inputs"]["metadata"]["labels"]["procurement-analyst/layer"] for j in jobs] == [
        "nono"
    ]


# --- every value checked where it ends up, before the first resource -----------------------

BAD_VALUES: list[tuple[dict[str, object], str]] = [
    (
        {**CREATE_MODE, "clusterName": "bad name/../x"},
        "procurement-analyst:clusterName: must be an EKS cluster name",
    ),
    ({"clusterName": "bad name!"}, "procurement-analyst:clusterName: must be an EKS cluster name"),
    ({"clusterName": "c" * 300}, "(300 characters)"),
    (
        {**PREBUILT, "analystImage": "not an image ref!!"},
        "procurement-analyst:analystImage: must be an image reference",
    ),
    (
        {**PREBUILT, "supplierImage": "registry.example/supplier\nx"},
        "procurement-analyst:supplierImage: must be an image reference",
    ),
    (
        {**PREBUILT, "analystImage": "Registry/Analyst:1"},
        "procurement-analyst:analystImage: must be an image reference",
    ),
    (
        {"analystImage": PREBUILT["analystImage"]},
        "analystImage and supplierImage apply to imageMode prebuilt only",
    ),
    (
        {**CREATE_MODE, "kubernetesVersion": "01.036"},
        "procurement-analyst:kubernetesVersion: must be a MAJOR.MINOR version of at least 1.36",
    ),
    ({"namespace": "kube-system"}, "procurement-analyst:namespace: is a namespace Kubernetes"),
    ({"namespace": "default"}, "procurement-analyst:namespace: is a namespace Kubernetes"),
    ({"namespace": "n" * 64}, "procurement-analyst:namespace: must be a DNS-1123 label"),
    ({"caseID": "rfp-001"}, "procurement-analyst:caseID: unknown key; did you mean caseId?"),
    ({"regoin": "us-east-1"}, "procurement-analyst:regoin: unknown key; did you mean region?"),
    (
        {"clusterAddons": "install"},
        "clusterAddons install applies to runtimeTarget hardened-container",
    ),
]


@pytest.mark.parametrize(
    ("config", "expected"), BAD_VALUES, ids=[expected[:40] for _, expected in BAD_VALUES]
)
def test_a_bad_value_stops_the_program_before_it_registers_any_resource(
    config: dict[str, object], expected: str
) -> None:
    world = CREATE_WORLD if config.get("clusterMode") == "create" else None
    failure = run_failing(world=world, **config)
    assert "ConfigError: invalid stack configuration" in failure.stderr
    assert expected in failure.stderr
    assert "registered 0 resources before it stopped" in failure.stderr


@pytest.mark.parametrize(
    "reference",
    [
        "analyst",
        "registry.example:5000/team/analyst:v1.2",
        "111122223333.dkr.ecr.us-west-2.amazonaws.com/analyst@sha256:" + "a" * 64,
        "localhost/a_b__c---d:latest@sha256:" + "0" * 64,
    ],
)
def test_a_valid_image_reference_is_accepted(reference: str) -> None:
    config = parse_config({**PREBUILT, "analystImage": reference})
    assert config.analyst_image == reference
