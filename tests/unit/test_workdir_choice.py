"""Which work directory a run (and doctor) uses: --workdir, else ANALYST_WORKDIR, else the
mode's, else the user's own; and what the per-user default must be to be used."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.controller.workdir import (
    WorkBase,
    WorkdirUnusable,
    check_chosen,
    choose_work_base,
    local_default,
)
from app.core.roles import Layer


def test_the_option_comes_first_then_the_variable_then_the_mode_then_the_users_own(
    tmp_path: Path,
) -> None:
    environ = {"ANALYST_WORKDIR": str(tmp_path / "from-variable")}
    given = tmp_path / "given"
    assert choose_work_base(given, environ, Path("/cluster")) == WorkBase(given)
    assert choose_work_base(None, environ, Path("/cluster")) == WorkBase(
        tmp_path / "from-variable", "ANALYST_WORKDIR="
    )
    assert choose_work_base(None, {}, Path("/cluster")) == WorkBase(
        Path("/cluster"), "the work directory"
    )
    own = choose_work_base(None, {"ANALYST_WORKDIR": ""}, None)
    assert own.own and own.named == "the default work directory"
    assert own.path == local_default({}, os.geteuid())


def test_the_users_own_default_is_their_private_runtime_directory_else_var_tmp(
    tmp_path: Path,
) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    uid = os.geteuid()
    if uid != 0:
        assert local_default({"XDG_RUNTIME_DIR": str(runtime)}, uid) == runtime / "analyst"
    # Root's tools run at another uid, which could not pass through a 0700 runtime directory.
    assert local_default({"XDG_RUNTIME_DIR": str(runtime)}, 0) == Path("/var/tmp/analyst-0")
    runtime.chmod(0o755)  # not private: not used
    assert local_default({"XDG_RUNTIME_DIR": str(runtime)}, uid) == Path(f"/var/tmp/analyst-{uid}")
    # Someone else's runtime directory, or a relative one: not used either.
    assert local_default({"XDG_RUNTIME_DIR": str(runtime)}, uid + 1) == Path(
        f"/var/tmp/analyst-{uid + 1}"
    )
    assert local_default({"XDG_RUNTIME_DIR": "run/user"}, uid) == Path(f"/var/tmp/analyst-{uid}")


@pytest.fixture
def short_base() -> Iterator[Path]:
    """A folder short enough for a run's socket path (pytest's own are too long)."""
    made = Path(tempfile.mkdtemp(prefix="wd-", dir="/var/tmp"))
    yield made
    shutil.rmtree(made, ignore_errors=True)


def test_a_default_others_may_write_is_refused_and_a_named_one_is_not(short_base: Path) -> None:
    shared = short_base / "d"
    shared.mkdir()
    shared.chmod(0o777)
    default = WorkBase(shared, "the default work directory", own=True)
    with pytest.raises(WorkdirUnusable) as refused:
        check_chosen(default, (Layer.NONO,))
    assert str(refused.value) == (
        f"the default work directory {shared}: may be written by other users (drwxrwxrwx); "
        f"chmod go-w {shared}, or remove it and let the run make it"
    )
    assert check_chosen(WorkBase(shared), (Layer.NONO,)) == shared
    shared.chmod(0o700)
    assert check_chosen(default, (Layer.NONO,)) == shared
