"""Sphinx configuration for the dp_sklearn documentation.

Build (from the repository root)::

    python -m pip install ".[docs]" && python -m sphinx -W -b html docs docs/_build/html

Generated files (not committed): ``docs/_generated/`` (the estimator table,
from :mod:`dp_sklearn.linear_model._catalog`), ``docs/_build/``, ``docs/generated/`` (autosummary
stubs and gallery back-references), ``docs/auto_examples/`` (the executed gallery) and
``docs/sg_execution_times.rst`` (the gallery's timings).

Offline-safe intersphinx
------------------------
Links to the scikit-learn, NumPy, SciPy and Python docs need their ``objects.inv``
inventories, which Sphinx downloads at build time. The build machines have no network
access, and a failed download is a warning (so an error under ``-W``). The mappings are
therefore enabled only when ``DP_SKLEARN_DOCS_INTERSPHINX=1`` is set in the environment;
without it, references to those projects render as plain text and the build is fully
offline. Cross-references are checked (``nitpicky``) in both modes: offline, references
into those projects are ignored, so every reference to dp_sklearn itself is still checked;
with ``DP_SKLEARN_DOCS_INTERSPHINX=1`` (where the network is) all of them are.
"""

import os
import re
import sys
import warnings
from pathlib import Path

# The examples run with one BLAS thread, as they are timed (each < 30 s on 2 cores).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

DOCS_DIR = Path(__file__).resolve().parent
ROOT = DOCS_DIR.parent
# Document the checkout being built, even when an older copy is installed.
sys.path.insert(0, str(ROOT))

import dp_sklearn  # noqa: E402
from dp_sklearn.linear_model._catalog import estimator_table_markdown  # noqa: E402

# The "which estimator for which task" table of the user guide, generated from the
# estimators' declarations and the solver registry at every build (not committed).
ESTIMATOR_TABLE = DOCS_DIR / "_generated" / "estimators_table.md"
ESTIMATOR_TABLE.parent.mkdir(exist_ok=True)
ESTIMATOR_TABLE.write_text(estimator_table_markdown())

# -- Project -----------------------------------------------------------------------------
project = "dp_sklearn"
author = "the dp_sklearn developers"
copyright = "the dp_sklearn developers, BSD-3-Clause"
release = dp_sklearn.__version__
version = release

# -- General -----------------------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
# privacy.md, model_selection.md and design.md are pulled into user-guide pages with
# the ``include`` directive; they are not pages of their own.
exclude_patterns = [
    "_build",
    "Thumbs.db",
    ".DS_Store",
    "privacy.md",
    "model_selection.md",
    "design.md",
    "_generated/*",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.json",
    "auto_examples/*.md5",
]
default_role = "literal"
suppress_warnings = []

# -- Autodoc / autosummary / numpydoc ----------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- MyST --------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

# -- Intersphinx (offline unless DP_SKLEARN_DOCS_INTERSPHINX=1; see the module docstring) --
if os.environ.get("DP_SKLEARN_DOCS_INTERSPHINX") == "1":
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "scipy": ("https://docs.scipy.org/doc/scipy", None),
        "sklearn": ("https://scikit-learn.org/stable", None),
    }
else:
    intersphinx_mapping = {}

# Broken cross-references are errors (with -W). Offline, references into the projects
# above cannot resolve; they are ignored then, so that every reference to dp_sklearn itself
# is still checked. With DP_SKLEARN_DOCS_INTERSPHINX=1 nothing is ignored.
nitpicky = True
if not intersphinx_mapping:
    _EXTERNAL = r"(sklearn|numpy|scipy|dp_accounting|joblib|pandas|matplotlib)(\..*)?"
    nitpick_ignore_regex = [
        (r"py:.*", _EXTERNAL),
        (r"py:.*", r"(int|float|str|bool|dict|list|tuple|callable|object|None)"),
        # Glossary terms and labels of scikit-learn's docs, in docstrings that dp_sklearn's
        # estimators inherit (set_fit_request, set_output, ...).
        (r"std:term", r".*"),
        (r"std:ref", r"metadata_routing|.*_user_guide|.*_routing"),
        (r"std:ref", r"df_output_transform|sphx_glr_auto_examples_miscellaneous_.*"),
        (r"std:ref", r"r2_score|accuracy_score"),
    ]

# -- Sphinx-Gallery ----------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": "/plot_",
    "ignore_pattern": r"__init__\.py",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "show_memory": False,
    "abort_on_example_error": False,
    # "Examples using X" on each API page.
    "doc_module": ("dp_sklearn",),
    "backreferences_dir": "generated/backreferences",
    "inspect_global_variables": True,
}
# Matplotlib must not try to open a window while the examples run.
os.environ.setdefault("MPLBACKEND", "agg")
warnings.filterwarnings("ignore", message="Matplotlib is currently using agg")

# -- HTML --------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"dp_sklearn {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]  # long titles and code lines wrap
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_sidebars = {"index": []}
html_show_sourcelink = False


# -- Docstrings as the API pages show them -------------------------------------------------
_INITIAL = re.compile(r"^(\s*(?:\.\. \[[^\]]+\]\s+)?[A-Z])\.(?= )")
_PRIVACY_PATH = re.compile(r"``docs/privacy\.md``|(?<![`/\w])docs/privacy\.md(?![`\w])")


def _reference_paragraphs(lines):
    """One paragraph per entry of a References section (numpydoc joins adjacent lines).

    An entry ends at a line ending with a period when the next line starts at the
    section's own indentation (a continuation line is part of the same sentence). An
    entry starting with an initial ("A. G. Thakurta") gets its period escaped, or
    reStructuredText reads it as an enumerated list.
    """
    def underline(j):
        return j < len(lines) and set(lines[j].strip() or "x") == {"-"}

    out, in_refs, entry_start = [], False, False
    for i, line in enumerate(lines):
        if in_refs and underline(i + 1):
            in_refs = False  # the next section starts
        if in_refs and entry_start:
            line = _INITIAL.sub(r"\1\\.", line)
        out.append(line)
        stripped = line.strip()
        if stripped == "References" and underline(i + 1):
            in_refs, entry_start = True, False
            continue
        entry_start = in_refs and (underline(i) or not stripped)
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if in_refs and stripped.endswith(".") and nxt.strip() and not nxt.startswith(" ") and not underline(i + 2):
            out.append("")
            entry_start = True
    return out


def _render_docstring(app, what, name, obj, options, lines):
    """References as separate paragraphs; the privacy contract's path as a link to its page."""
    lines[:] = [_PRIVACY_PATH.sub(":doc:`docs/privacy.md </user_guide/privacy_contract>`", line)
                for line in _reference_paragraphs(list(lines))]


def setup(app):
    # before numpydoc (priority 500), which parses the sections of the raw docstring
    app.connect("autodoc-process-docstring", _render_docstring, priority=400)
