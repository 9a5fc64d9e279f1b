"""dp_sklearn.__version__ (dp_sklearn/_version.py): package metadata, else the checkout's pyproject.toml."""

import os
import re
from importlib import metadata
from pathlib import Path

import dp_sklearn
from dp_sklearn import _version

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_the_installed_or_checked_out_one():
    package_dir = os.path.dirname(os.path.abspath(dp_sklearn.__file__))
    checkout = _version._checkout_version(package_dir)
    if checkout is None:  # an installed wheel or sdist: its metadata
        assert dp_sklearn.__version__ == metadata.version("dp-sklearn")
    else:  # a source checkout: its pyproject.toml, whatever an older install's metadata says
        assert dp_sklearn.__version__ == checkout
    assert re.fullmatch(r"\d+\.\d+\.\d+([.+-]\w+)*", dp_sklearn.__version__)


def test_changelog_has_a_section_for_this_version():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"\n## {dp_sklearn.__version__}\n" in changelog


def test_version_fallbacks(tmp_path, monkeypatch):
    pkg = tmp_path / "dp_sklearn"
    pkg.mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "dp-sklearn"\nversion = "9.8.7"\n\n[tool.x]\n'
                                             'version = "1.0"\n')
    assert _version.get_version(str(pkg)) == "9.8.7"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\nversion = "9.8.7"\n')

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(_version.metadata, "version", lambda name: "1.2.3" if name == "dp-sklearn" else None)
    assert _version.get_version(str(pkg)) == "1.2.3"  # another project's pyproject: the metadata
    monkeypatch.setattr(_version.metadata, "version", missing)
    assert _version.get_version(str(pkg)) == "0+unknown"
