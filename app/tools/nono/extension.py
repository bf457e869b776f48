"""nono-py's compiled extension, loaded alone: what the proxy host and the launch processes use.

Importing the nono_py package runs its audit module, which loads pydantic and cryptography
(some 0.3 s of CPU, measured with ``python -X importtime -c "import nono_py"``); a process that
needs only the proxy or sandboxed_exec, which the extension holds whole, starts without them.
Standard library only: the processes that use it import nothing else of the app.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path
from types import ModuleType


def nono_extension() -> ModuleType:
    """The ``nono_py._nono_py`` extension module, without its package's ``__init__``."""
    spec = importlib.util.find_spec("nono_py")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("nono-py is not installed")
    for directory in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(directory) / f"_nono_py{suffix}"
            if path.is_file():
                loader = importlib.machinery.ExtensionFileLoader("nono_py._nono_py", str(path))
                found = importlib.util.spec_from_loader("nono_py._nono_py", loader)
                assert found is not None
                module = importlib.util.module_from_spec(found)
                loader.exec_module(module)
                return module
    raise RuntimeError("nono-py's compiled extension is missing")
