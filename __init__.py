"""A clone of archstudy imported from the folder above it: load the real package.

A script that runs in the folder holding a clone named ``archstudy`` finds the clone before the installed package
(Python searches the script's folder first). Without this file the clone would import as an empty namespace
package and ``archstudy.run_study`` would not exist, even when archstudy is installed; with it, the clone's own
public API (``archstudy/__init__.py``, which finds ``sampling/``, ``study/`` and ``analysis/`` beside it) takes
this module's place, so the script gets the same package as an install of the clone.
"""

import importlib.util as _util
import os as _os
import sys as _sys

_api = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "archstudy", "__init__.py")
_spec = _util.spec_from_file_location(__name__, _api, submodule_search_locations=[_os.path.dirname(_api)])
if _spec is None or _spec.loader is None:  # pragma: no cover (the file is part of every clone)
    raise ImportError(f"archstudy: cannot load the public API from {_api}")
_module = _util.module_from_spec(_spec)
# The import system returns what sys.modules holds under the name once this file has run.
_sys.modules[__name__] = _module
_spec.loader.exec_module(_module)
