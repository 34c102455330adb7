"""A scikit-learn style face for any registry learner.

``partial_fit`` learns from labels you already have, ``query`` says which labels of a new batch
are worth asking for, ``predict`` and ``decision_function`` score. It follows scikit-learn's
conventions (``classes`` on the first ``partial_fit``, fitted attributes with a trailing
underscore, ``get_params``/``set_params``) without depending on scikit-learn.

Examples
--------
>>> import numpy as np
>>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.2], [0.1, 1.0]])
>>> clf = ActiveClassifier("paa-1").partial_fit(X, ["spam", "ham", "spam", "ham"], classes=["ham", "spam"])
>>> clf.predict(X).tolist()
['spam', 'ham', 'spam', 'ham']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from learners.base import Learner
from learners.registry import make

__all__ = ["ActiveClassifier"]


class ActiveClassifier:
    """scikit-learn style online active classifier.

    Parameters
    ----------
    learner : str, default "paa-1"
        Registry name (see ``learners.ALGORITHMS``).
    params : dict or None
        Hyper-parameters passed to :func:`learners.make`.

    Attributes
    ----------
    learner_ : Learner
        The underlying learner, built on the first ``partial_fit``/``query``.
    classes_ : ndarray
        Class labels; for a binary learner ``classes_[1]`` is the positive class.
    n_features_in_ : int
    """

    def __init__(self, learner: str = "paa-1", params: dict[str, Any] | None = None) -> None:
        self.learner = learner
        self.params = params

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"learner": self.learner, "params": self.params}

    def set_params(self, **params: Any) -> ActiveClassifier:
        for key, value in params.items():
            if key not in ("learner", "params"):
                raise ValueError(f"invalid parameter {key!r}; valid: learner, params")
            setattr(self, key, value)
        self.__dict__.pop("learner_", None)
        return self

    def _built(self, X, classes: Sequence[Any] | None) -> Learner:
        if "learner_" not in self.__dict__:
            width = X.shape[1] if hasattr(X, "shape") and len(X.shape) == 2 else None
            params = dict(self.params or {})
            if classes is not None:
                params["classes"] = list(classes)
            params.setdefault("n_features", width)
            self.learner_ = make(self.learner, **params)
            self.classes_ = np.asarray(self.learner_.classes) if self.learner_.classes is not None else None
        elif classes is not None and list(classes) != list(self.learner_.classes):
            raise ValueError(
                f"classes {list(classes)} differ from those of the first call {list(self.learner_.classes)}"
            )
        return self.learner_

    @property
    def n_features_in_(self) -> int:
        return self.learner_.n_features

    def partial_fit(self, X, y, classes: Sequence[Any] | None = None) -> ActiveClassifier:
        """Learn from labelled rows, in order. ``classes`` is required on the first call of a
        multiclass learner, and of a binary one whose labels are not -1/+1 (``(negative, positive)``)."""
        self._built(X, classes).learn_many(X, np.asarray(y), scored=False)  # rows never decided on
        return self

    def query(self, X, ids: Sequence[str | int] | None = None):
        """(predictions, query probabilities, ask mask) for a batch of unlabelled rows."""
        d = self._built(X, None).decide(X, ids)
        return d.label, d.probability, d.query

    def predict(self, X) -> np.ndarray:
        return self.learner_.predict(X)

    def decision_function(self, X) -> np.ndarray:
        """Binary: the signed margin (positive class if > 0). Multiclass: the top-1 score."""
        return self.learner_.score(X).p
