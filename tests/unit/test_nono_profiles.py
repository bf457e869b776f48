"""The nono profile generator: the committed files, each role's shape, and the comparison."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core.roles import ROLES
from app.core.run_tree import OUTPUT_FILES
from app.tools.nono import render
from app.tools.nono.policy import (
    COMMITTED_DIR,
    PLACEHOLDERS,
    ProfileSource,
    ProfileValues,
    committed_profiles,
    differences,
    fill,
    generate_profile,
    policy_file,
)
from tests.support import policy_changes as widened_by

RUN_VALUES = ProfileValues(
    run_dir="/var/tmp/analyst/abc/run",
    code_dir="/var/tmp/analyst/abc/code",
    key_file="/var/tmp/analyst/abc/secrets/supplier-api-key",
    ca_file="/var/tmp/analyst/abc/pki/ca.crt",
    supplier_host="localhost:8443",
    case_id="rfp-001",
)


def test_committed_profiles_are_what_the_generator_renders() -> None:
    assert render.drifted(COMMITTED_DIR) == []
    for role, profile in committed_profiles().items():
        on_disk = json.loads((COMMITTED_DIR / policy_file(role)).read_text())
        assert on_disk == profile, f"policies/nono/{policy_file(role)} differs from the generator"


def test_committed_profiles_hold_no_machine_value() -> None:
    for role in ROLES:
        text = (COMMITTED_DIR / policy_file(role)).read_text()
        for value in ("/var/tmp", "/root", "/home", "localhost", "rfp-001"):
            assert value not in text, f"{policy_file(role)} names {value}"


def test_render_check_names_a_drifted_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    render.write(tmp_path)
    assert render.main(["--check", "--dir", str(tmp_path)]) == 0
    (tmp_path / "writer.launch.json").write_text("{}\n")
    assert render.main(["--check", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "writer.launch.json" in err and "reader.launch.json" not in err


@pytest.mark.parametrize("role", ROLES)
def test_file_rules_are_the_code_the_role_input_and_usr(role: str) -> None:
    profile = generate_profile(role, RUN_VALUES)  # type: ignore[arg-type]
    assert profile["meta"] == {"name": f"analyst-{role}", "version": "1.0.0"}
    assert "workdir" not in profile
    out = f"{RUN_VALUES.run_dir}/{role}/out"
    assert profile["filesystem"] == {
        "read": ["/usr", RUN_VALUES.code_dir, f"{RUN_VALUES.run_dir}/{role}/in"],
        # Each output file, never the directory: the role can create no file of its own.
        "allow_file": [f"{out}/{name}" for name in OUTPUT_FILES[role]],  # type: ignore[index]
    }
    assert "inherit" not in profile["environment"]
    assert profile["process"] == {
        "enforcement_mode": "seccomp",
        "seccomp_filter": f"{RUN_VALUES.code_dir}/nono-baseline.bpf",
        # The baseline's rule groups that are elements: every one, in every role.
        "seccomp_groups": ["other-processes", "file-metadata", "watches"],
        # The loader's limits, from policies/tool-limits.json, the same for every role.
        "max_address_space_bytes": 256 * 1024 * 1024,
        "max_cpu_seconds": 2,
        "max_file_bytes": 1024 * 1024,
        "max_open_files": 64,
        "max_processes": 1,
    }


def test_evaluator_has_no_network_and_no_credential() -> None:
    profile = generate_profile("evaluator", RUN_VALUES)
    assert profile["network"] == {"block": True}
    assert "ANALYST_DIGEST_KEY" not in profile["environment"]["allow_vars"]


@pytest.mark.parametrize(
    ("role", "allowed"),
    [
        ("reader", [{"method": "GET", "path": "/cases/rfp-001/suppliers"}]),
        (
            "writer",
            [
                {"method": "GET", "path": "/cases/rfp-001/suppliers"},
                {"method": "POST", "path": "/cases/rfp-001/recommendations"},
            ],
        ),
    ],
)
def test_online_roles_reach_one_host_through_the_credential_route(
    role: str, allowed: list[dict[str, str]]
) -> None:
    network = generate_profile(role, RUN_VALUES)["network"]  # type: ignore[arg-type]
    # No host is listed for CONNECT tunnels: the reverse route, at the front, is the one way out.
    assert set(network) == {"custom_credentials", "proxy_front"}
    once = [{"method": "POST", "path": "/cases/rfp-001/recommendations"}]
    assert network["proxy_front"] == (
        {"max_connections": 8, "once": once} if role == "writer" else {"max_connections": 8}
    )
    assert network["custom_credentials"] == {
        "supplier": {
            "upstream": "https://localhost:8443",
            "credential_key": f"file://{RUN_VALUES.key_file}",
            "env_var": "SUPPLIER_API_KEY",
            "inject_header": "X-Api-Key",
            "credential_format": "{}",
            "tls_ca": RUN_VALUES.ca_file,
            "endpoint_policy": {"default": {"decision": "deny"}, "allow": allowed},
        }
    }


def test_no_role_may_read_the_key_file() -> None:
    for role in ROLES:
        assert RUN_VALUES.key_file not in generate_profile(role, RUN_VALUES)["filesystem"]["read"]


def test_fill_turns_the_committed_profile_into_the_live_one() -> None:
    for role, committed in committed_profiles().items():
        assert fill(committed, RUN_VALUES) == generate_profile(role, RUN_VALUES)
        assert not any(p in json.dumps(fill(committed, RUN_VALUES)) for p in PLACEHOLDERS.values())


@pytest.mark.parametrize(
    ("widening", "role", "where"),
    [
        (widened_by.READER_READS_KEY_FILE, "reader", ["filesystem.read_file"]),
        (widened_by.EVALUATOR_NETWORK, "evaluator", ["network.block"]),
        (
            widened_by.WRITER_PURCHASE_ORDERS,
            "writer",
            ["network.custom_credentials.supplier.endpoint_policy.allow"],
        ),
        (widened_by.READER_INHERITS_ENVIRONMENT, "reader", ["environment.inherit"]),
    ],
)
def test_each_widening_is_reported_where_it_differs(
    widening: ProfileSource, role: str, where: list[str]
) -> None:
    live = widening(role, RUN_VALUES)  # type: ignore[arg-type]
    assert differences(live, generate_profile(role, RUN_VALUES)) == where  # type: ignore[arg-type]
