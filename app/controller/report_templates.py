"""The report page made ready off the run's critical path: its modules and Jinja2 imported and
every template compiled in a thread of its own, started as the checks begin (from there the
run mostly waits for one tool process at a time), so the last phase only renders.

The thread's own CPU time and wall time are kept: the page costs what it costs wherever it is
paid, and `make bench` prints both parts.
"""

from __future__ import annotations

import threading
import time

from app.tools import waiting


class ReportTemplates:
    """Started at once; ``wait`` before the first render (it re-raises what the thread raised)."""

    def __init__(self) -> None:
        self.cpu_ms = 0.0
        self.wall_ms = 0.0
        self._error: BaseException | None = None
        # A daemon: a run that stops early never waits for a compile it will not use.
        self._thread = threading.Thread(target=self._prepare, name="report-templates", daemon=True)
        self._thread.start()

    def _prepare(self) -> None:
        began, cpu = time.monotonic(), time.thread_time()
        try:
            # Imported here, in this thread: the run's own thread never pays for it.
            from app.report.page import compile_templates

            compile_templates()
        except BaseException as error:
            self._error = error
        finally:
            self.wall_ms = (time.monotonic() - began) * 1000
            self.cpu_ms = (time.thread_time() - cpu) * 1000

    def wait(self) -> None:
        waiting.join(self._thread)
        if self._error is not None:
            raise self._error


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m app.controller.report_templates",
        description=(
            "Compiles the report page's templates and keeps their compiled form beside them "
            "(app/report/template_bytecode.py), whatever PYTHONDONTWRITEBYTECODE says, as "
            "compileall does for modules: the image's build and `make bench` run it."
        ),
    )
    parser.parse_args(argv)
    # Asked for explicitly: this process writes what a run would only read.
    sys.dont_write_bytecode = False
    from app.report.page import TEMPLATE_BYTECODE, compile_templates

    compile_templates()
    print(f"compiled templates kept in {TEMPLATE_BYTECODE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
