"""The report page's compiled templates, kept beside them as Python keeps a module's bytecode.

Jinja2 (its public ``FileSystemBytecodeCache``) checks each file against its template's source
and its own version before using it, and compiles afresh when either changed, so a file here is
never staler than the template. Loading them in place of compiling saves a run about 150 ms of
CPU, most of what the report page costs before its render (`make bench` prints that cost).

Written as Python writes bytecode: by a run whose interpreter may write it, and never when it
may not (PYTHONDONTWRITEBYTECODE, which the image sets) or where the folder is not writable
(the image's files are root's). The image's build and `make bench` write them explicitly
(``python -m app.controller.report_templates``), as they byte-compile the modules.

The files are code the controller runs: the folder is the checkout's own, as trusted as its
modules' ``__pycache__``, and no tool process can write to the checkout.
"""

from __future__ import annotations

from pathlib import Path

import jinja2
from jinja2.bccache import Bucket


class TemplateBytecode(jinja2.FileSystemBytecodeCache):
    """Compiled templates under ``directory``; written only when ``write``, and a folder that
    cannot be written leaves the run compiling its templates, as it would without one."""

    def __init__(self, directory: Path, *, write: bool) -> None:
        super().__init__(str(directory))
        self.write = write

    def load_bytecode(self, bucket: Bucket) -> None:
        # Jinja2 lets some errors of the open through (a file where the folder should be):
        # whatever keeps the file from being read, the template is compiled instead.
        try:
            super().load_bytecode(bucket)
        except OSError:
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        if not self.write:
            return
        try:
            Path(self.directory).mkdir(exist_ok=True)
            super().dump_bytecode(bucket)
            # Readable as the templates are (Jinja2 writes it for its owner alone): the image
            # is built as root and runs at another uid.
            (Path(self.directory) / (self.pattern % bucket.key)).chmod(0o644)
        except OSError:
            return
