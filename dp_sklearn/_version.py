"""The version of dp_sklearn: from the installed package's metadata, else from the checkout."""

from __future__ import annotations

import os
import re
from importlib import metadata

__all__ = []

_DIST = "dp-sklearn"


def _checkout_version(package_dir):
    """The ``version`` of ``pyproject.toml`` next to the package (a source checkout), or ``None``."""
    try:
        with open(os.path.join(os.path.dirname(package_dir), "pyproject.toml"), encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return None
    project = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if project is None or not re.search(rf'^name\s*=\s*"{_DIST}"', project.group(1), re.M):
        return None
    found = re.search(r'^version\s*=\s*"([^"]+)"', project.group(1), re.M)
    return found.group(1) if found else None


def get_version(package_dir=os.path.dirname(os.path.abspath(__file__))):
    """The version string of the package in ``package_dir``.

    An installed wheel or sdist reads it from its metadata (``importlib.metadata``). A
    package imported from a source checkout (``PYTHONPATH``, an editable install, whose
    metadata can be older than the checkout) reads ``pyproject.toml`` next to it. Without
    either, ``"0+unknown"``.
    """
    version = _checkout_version(package_dir)
    if version is not None:
        return version
    try:
        return metadata.version(_DIST)
    except metadata.PackageNotFoundError:
        return "0+unknown"
