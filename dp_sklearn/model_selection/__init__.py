"""Differentially private hyperparameter selection.

:class:`DPGridSearchCV` selects hyperparameters with an accounted budget
(repeat-and-select of Papernot & Steinke, ICLR 2022, or an exhaustive
composition); :func:`sample_repetitions` draws its hidden number of runs.
"""

from ._repeat_select import sample_repetitions
from ._search import DPGridSearchCV

__all__ = ["DPGridSearchCV", "sample_repetitions"]
