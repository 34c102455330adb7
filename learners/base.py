"""A learner is an update rule plus a query strategy.

:class:`UpdateRule` owns the model state and says how it changes when a label arrives;
:class:`QueryStrategy` maps a rule's scores to the probability of asking for a label;
:class:`Learner` joins them with the data model (dimension, classes, intercept, normalisation,
the sign(0) rule), the deterministic query coin and checkpointable state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from learners.coin import draw, record_key, record_keys
from learners.drivers import DRIVERS, plain
from learners.features import RandomFourierFeatures
from learners.hashing import DEFAULT_DIMENSION
from learners.inputs import Rows, as_row, as_rows, transform, transform_row
from learners.kernels import no_label, no_round, ready
from learners.params import Interval, Options, Parameterized
from learners.scaler import Scaler
from learners.scaling import (
    AUTO_ROWS,
    MODES,
    OBSERVE_ALL,
    OBSERVE_NONE,
    SOURCES,
    check_width,
    choose_mode,
    rescale_rows,
)
from learners.values import Decisions, Scores

__all__ = ["Learner", "QueryStrategy", "UpdateRule"]

FORMAT_VERSION = 1

# The learner's own hyper-parameters (the data model), beside those of its rule and query.
_OWN = ("seed", "bias", "normalize", "tie", "n_features", "classes", "rff_components", "rff_gamma", "rff_seed",
        "rff_lift", "rff_keep", "scale", "scale_from")
# Those a checkpoint must match exactly: they fix the meaning of every coordinate of the state.
_STRUCTURAL = ("rule", "query", "n_features", "classes", "bias", "rff_components", "rff_gamma", "rff_seed",
               "rff_lift", "rff_keep", "scale")
# What a checkpoint written before a parameter existed was made with (a rule's parameter: for the
# rules that have it).
_ABSENT = {"scale": "none", "scale_from": "labelled", "damping": 0.0, "rff_lift": 0.0, "rff_keep": False,
           "beta": 1.0, "lam": 0.0}


def _nan_if_none(a: np.ndarray | None, n: int) -> np.ndarray:
    return np.full(n, np.nan) if a is None else np.ascontiguousarray(a, dtype=np.float64)


class UpdateRule(Parameterized):
    """How the model changes when a label arrives.

    Subclasses set the two compiled kernels (signatures in :mod:`learners.kernels`), declare
    which score terms they provide, their state layout and their packed parameters. State is
    allocated once the dimension and the classes are known (:meth:`allocate`); each named array
    is then also an attribute with a trailing underscore (``rule.w_``).
    """

    provides: ClassVar[frozenset[str]] = frozenset({"p"})
    multiclass: ClassVar[bool] = False
    score_kernel: ClassVar[Any]
    update_kernel: ClassVar[Any]
    scalars: ClassVar[tuple[str, ...]] = ()  # names of the entries of the scalar state ``a``
    # True for rules whose update applies a label's importance weight (the kernels' ``weight``):
    # only those can learn under an importance-weighted query (IWAL), whose labels are unbiased
    # only once weighted by 1/q
    importance_weights: ClassVar[bool] = False
    # False for rules whose update writes coordinates outside x's non-zeros: full d×d matrices,
    # support-vector sets. The generic checks hold every other rule to O(nnz) writes.
    has_sparse_update: ClassVar[bool] = True
    # How the state moves when a feature's scale changes (learners.scaling): the power of r = s'/s
    # per named state array, read by ``rescale_kernel``; None: no move keeps the scores (refused).
    scaling: ClassVar[Mapping[str, int] | None] = {"w": 1}
    rescale_kernel: ClassVar[Any] = rescale_rows
    # False for rules that treat the two classes unequally (cost-sensitive ones): their model cannot
    # swap its classes (:meth:`flip_sign`), so they cannot learn the classes from the labels
    symmetric: ClassVar[bool] = True
    signed: ClassVar[tuple[str, ...]] = ("w",)  # the state arrays whose sign follows the labels'
    # the rules whose saved state this one loads (its own arrays filled from theirs, :meth:`load_state_dict`)
    upgrades_from: ClassVar[tuple[str, ...]] = ()

    S_: np.ndarray | None = None
    a_: np.ndarray | None = None

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        """Rows of ``S`` per named state array, for a model of this size."""
        return {"w": n_classes if self.multiclass else 1}

    def vectors(self) -> dict[str, int]:
        """Per-slot state kept in ``a`` after the scalars, by name and length (e.g. one α per
        support vector); empty for rules whose state is all per-coordinate."""
        return {}

    def initialize(self) -> None:
        """Set the initial state of freshly allocated arrays (all zero by default)."""

    def packed_params(self) -> np.ndarray:
        """Hyper-parameters as the float64 vector ``P`` the kernels read."""
        return np.empty(0)

    # -- lifecycle -------------------------------------------------------------------------
    def allocate(self, n_features: int, n_classes: int = 2) -> None:
        """Allocate zeroed state for ``n_features`` coordinates and ``n_classes`` classes."""
        shape = self.layout(n_features, n_classes)
        vectors = self.vectors()
        self.S_ = np.zeros((sum(shape.values()), n_features), dtype=np.float64)
        self.a_ = np.zeros(len(self.scalars) + sum(vectors.values()), dtype=np.float64)
        self._P = np.ascontiguousarray(self.packed_params(), dtype=np.float64)
        self._shape = shape
        self._vectors = vectors
        start = 0
        for name, rows in shape.items():
            view = self.S_[start : start + rows]
            setattr(self, name + "_", view[0] if rows == 1 and not self._keeps_2d(name) else view)
            start += rows
        start = len(self.scalars)
        for name, length in vectors.items():
            setattr(self, name + "_", self.a_[start : start + length])
            start += length
        self.initialize()

    def _keeps_2d(self, name: str) -> bool:
        return self.multiclass

    def flip_sign(self) -> None:
        """Swap a binary model's two classes: every score p becomes −p, as if each label it learnt
        had been the other class: the arrays that change sign with the labels (``signed``: weights,
        means, sums of y·x) are negated; second-order ones (covariances, sums of squares) are not.
        Refused where ``scaling`` is None (support vectors) or the rule treats the classes unequally
        (``symmetric``)."""
        if self.scaling is None or not self.symmetric:
            raise ValueError(f"{type(self).__name__} cannot swap its classes: give the classes in advance")
        for name in self.signed:
            getattr(self, name + "_")[...] *= -1.0

    @property
    def is_allocated(self) -> bool:
        return self.S_ is not None

    def kernel_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(S, a, P) as the kernels take them."""
        return self.S_, self.a_, self._P

    @property
    def score_fn(self):
        """The compiled score kernel (read from the class: a dispatcher bound to an instance
        would become a method)."""
        return ready(type(self).score_kernel)

    @property
    def update_fn(self):
        """The compiled update kernel."""
        return ready(type(self).update_kernel)

    # -- the rule's two operations -----------------------------------------------------------
    def score(self, X: Rows) -> Scores:
        """Scores of a batch of (already transformed) rows; the state is not changed."""
        rows = as_rows(X, self.S_.shape[1])
        n = rows.n
        p, gap, v = np.empty(n), np.empty(n), np.empty(n)
        top = np.empty(n, dtype=np.int64)
        plain.score_rows(rows.indptr, rows.indices, rows.data, *self.kernel_state(),
                         self.score_fn, p, gap, v, top)
        return Scores(
            p=p,
            gap=gap if "gap" in self.provides else None,
            v=v if "v" in self.provides else None,
            top=top if self.multiclass else None,
        )

    def update(self, idx: np.ndarray, val: np.ndarray, y: int, weight: float = 1.0) -> bool:
        """Apply one label: y ∈ {-1, +1} (binary) or a class index, with importance ``weight``
        (applied only by rules with ``importance_weights``). True if the model changed."""
        return bool(self.update_fn(*self.kernel_state(), idx, val, int(y), float(weight)))

    # -- state -----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, np.ndarray]:
        out = {name: getattr(self, name + "_").copy() for name in (*self._shape, *self._vectors)}
        out.update({name: np.array(self.a_[i]) for i, name in enumerate(self.scalars)})
        return out

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        for name in (*self._shape, *self._vectors):
            target = getattr(self, name + "_")
            source = np.asarray(state[name])
            if source.shape != target.shape:
                raise ValueError(f"state array {name!r} has shape {source.shape}, the model needs {target.shape}")
            target[...] = source
        for i, name in enumerate(self.scalars):
            self.a_[i] = float(state[name])


class QueryStrategy(Parameterized):
    """How likely we are to ask for a label, from a rule's scores.

    ``probability_kernel`` is pure; ``round_kernel`` and ``label_kernel`` advance the query's own
    scalar state (``qs_``) once per scored record and once per applied label.
    ``budget_param`` names the parameter the query rate is monotone in, if any: the one
    :func:`learners.replay.find_budget` searches to land a requested query ratio; ``knob``
    declares it (position, range, direction) for that search and the online :mod:`learners.budget`
    controller. Without a ``knob``, the rate grows with the parameter.
    """

    requires: ClassVar[frozenset[str]] = frozenset({"p"})
    # True: a label asked with probability q is learnt with importance weight 1/q (IWAL), so the
    # labelled rows stand for the whole stream; False: weight 1, as the papers' algorithms learn
    importance_weighted: ClassVar[bool] = False
    budget_param: ClassVar[str | None] = "delta"
    # the parameter the probability is monotone in, which a budget controller moves
    # (:class:`learners.values.Knob`); None: the strategy has none
    knob: ClassVar[Any] = None
    state_fields: ClassVar[tuple[str, ...]] = ()
    probability_kernel: ClassVar[Any]
    round_kernel: ClassVar[Any] = no_round
    label_kernel: ClassVar[Any] = no_label

    def _setup(self) -> None:
        self._validate()
        self._qp = np.ascontiguousarray(self.packed_params(), dtype=np.float64)
        self.reset()

    def packed_params(self) -> np.ndarray:
        return np.empty(0)

    def initial_state(self) -> np.ndarray:
        return np.zeros(len(self.state_fields))

    def reset(self) -> None:
        self.qs_ = np.ascontiguousarray(self.initial_state(), dtype=np.float64)

    def kernel_state(self) -> tuple[np.ndarray, np.ndarray]:
        return self._qp, self.qs_

    @property
    def kernels(self):
        """(probability, after_round, after_label) compiled kernels, read from the class."""
        cls = type(self)
        return ready(cls.probability_kernel), ready(cls.round_kernel), ready(cls.label_kernel)

    def probability(self, s: Scores) -> np.ndarray:
        """Query probabilities for a batch in order; pure (the query's state is not advanced)."""
        n = s.p.size
        out = np.empty(n)
        plain.probabilities(
            np.ascontiguousarray(s.p, dtype=np.float64), _nan_if_none(s.gap, n), _nan_if_none(s.v, n),
            self._qp, self.qs_.copy(), *self.kernels[:2], out,
        )
        return out

    def state_dict(self) -> dict[str, np.ndarray]:
        return {name: np.array(self.qs_[i]) for i, name in enumerate(self.state_fields)}

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        for i, name in enumerate(self.state_fields):
            self.qs_[i] = float(state[name])


# a first class whose spelling says "positive" takes the code +1 until the second class arrives
_POSITIVE_WORDS = frozenset({"1", "true", "t", "yes", "y", "positive", "pos"})


def _is_class(label: Any) -> bool:
    """A label that can be a class: a string or a number (never a boolean, never NaN)."""
    return isinstance(label, (str, int, float)) and not isinstance(label, bool) and label == label


def _class_order(label: Any) -> tuple[int, Any]:
    """The order of two learnt classes: numbers by value, then strings; the greater is positive."""
    return (1, label) if isinstance(label, str) else (0, float(label))


def _looks_positive(label: Any) -> bool:
    return label.strip().lower() in _POSITIVE_WORDS if isinstance(label, str) else label > 0


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


class Learner(Parameterized):
    """An update rule, a query strategy, and the data model they share.

    Parameters
    ----------
    rule : UpdateRule
        How labels change the model.
    query : QueryStrategy
        How likely a label is requested; ``query.requires`` must be a subset of ``rule.provides``.
    seed : int, default 0
        Seed of the query coin: a record's decision is a pure function of (seed, record id).
    bias : float, default 1.0
        Value of the intercept coordinate appended to every row; 0 disables the intercept.
    normalize : bool, default False
        Scale every row to unit L2 norm before the intercept is appended.
    tie : {"negative", "positive"}, default "negative"
        Binary prediction when the margin is exactly 0 (e.g. an empty row without intercept).
    n_features : int or None
        Input dimension d. None: fixed by the first batch (or 2**20 for named features).
    classes : sequence or None
        Binary: ``(negative_label, positive_label)``, default ``(-1, 1)``; ``[]``: learnt from the
        labels (:meth:`adopt`), the greater of the two positive (numbers by value, strings in
        order: 0/1, -1/1, "false"/"true", "no"/"yes", "ham"/"spam"); a third class is refused.
        Multiclass: the class list, required.
    name : str or None
        Registry name, recorded in checkpoints.
    rff_components : int, default 0
        m > 0 puts random Fourier features in front of the rule (Rahimi & Recht 2007): the rule
        learns on z(x) ∈ R^m, approximating the kernel exp(−γ‖x − x'‖²). 0 = the raw features.
        Rows are L2-normalised (if ``normalize``) before the map, the intercept appended after it.
    rff_gamma : float > 0, default 1.0
        γ of that kernel.
    rff_seed : int, default 0
        Seed of the random map; the map is rebuilt from it, never stored in a checkpoint.
    rff_lift : float ≥ 0, default 0
        c > 0 maps each row lifted onto the unit sphere, [x, c]/‖[x, c]‖, rather than x itself: a
        one-to-one map whose distances are at most 2, so one ``rff_gamma`` suits rows of any norm.
    rff_keep : bool, default False
        The rule learns on [x, z(x)], the row's own features beside the map: every linear model
        of x, plus the kernel's.
    scale : {"none", "maxabs", "rms", "standard", "sparse-standard", "auto"}, default "none"
        Online per-feature scaling (:mod:`learners.scaling`): the rule learns on x_i / s_i, s_i the
        largest |x_i| seen (``maxabs``, Ross, Mineiro & Langford 2013) or the root mean square of
        its non-zero values (``rms``); when s_i changes, the rule's state is moved to the new
        units so scores stay consistent. ``standard``: online standardisation (x_i − μ_i)/σ_i with
        the running mean and deviation over every row, zeros included; rows become dense, so it
        is for dense inputs (refused above ``learners.scaling.STANDARD_LIMIT`` features; ``rms``
        suits sparse ones). ``sparse-standard``: standardised over the rows where each feature
        is present, absent ones left absent (named tables hashed wide). Applied before
        ``normalize``; the intercept is not scaled. ``auto``: one of them (or none) chosen
        from the first rows' shape (:func:`learners.scaling.choose_mode`,
        :data:`learners.scaling.AUTO_ROWS`), kept in the state. With random Fourier features
        the scale is applied before the map and moves no state. Refused with support-vector rules.
    scale_from : {"labelled", "scored"}, default "labelled"
        Records whose values update the scale: only labelled ones (measured equal or better on the
        paper sets, ``benchmarks/results/scaling.md``), or every record decided on. ``standard``
        always learns its mean and deviation from every record decided on (measured closer to the
        offline-standardised files than from labelled ones).

    Attributes
    ----------
    rounds_, labels_, updates_ : int
        Records decided, labels applied, labels that changed the model.
    """

    _constraints: ClassVar = {
        "seed": Interval(0, 2**64 - 1, integer=True),
        "bias": Interval(None, None),
        "tie": Options("negative", "positive"),
        "normalize": Options(True, False),
        "rff_components": Interval(0, 2**31 - 2, integer=True),
        "rff_gamma": Interval(0, None, closed="neither"),
        "rff_seed": Interval(0, 2**64 - 1, integer=True),
        "rff_lift": Interval(0, None),
        "rff_keep": Options(True, False),
        "scale": Options(*MODES, "auto"),
        "scale_from": Options(*SOURCES),
    }

    def __init__(
        self,
        rule: UpdateRule,
        query: QueryStrategy,
        *,
        seed: int = 0,
        bias: float = 1.0,
        normalize: bool = False,
        tie: str = "negative",
        n_features: int | None = None,
        classes: Sequence[Any] | None = None,
        name: str | None = None,
        rff_components: int = 0,
        rff_gamma: float = 1.0,
        rff_seed: int = 0,
        rff_lift: float = 0.0,
        rff_keep: bool = False,
        scale: str = "none",
        scale_from: str = "labelled",
    ) -> None:
        missing = query.requires - rule.provides
        if missing:
            raise ValueError(
                f"{type(query).__name__} needs {sorted(missing)}; {type(rule).__name__} provides "
                f"{sorted(rule.provides)}"
            )
        if query.importance_weighted and not rule.importance_weights:
            raise ValueError(f"{type(query).__name__} weighs each label by 1/q; {type(rule).__name__} cannot apply "
                             "an importance weight")
        self.rule, self.query = rule, query
        self.seed, self.bias, self.normalize, self.tie = seed, bias, normalize, tie
        self.n_features, self.name = n_features, name
        self.rff_components, self.rff_gamma, self.rff_seed = rff_components, rff_gamma, rff_seed
        self.rff_lift, self.rff_keep = rff_lift, rff_keep
        self.scale, self.scale_from = scale, scale_from
        self._features: RandomFourierFeatures | None = None
        self._scaler: Scaler | None = None
        self._scale_mode: str | None = None  # what scale="auto" chose
        self._auto_sample: list[Rows] = []  # the rows decided on before it chose
        if classes is None and not rule.multiclass:
            classes = (-1, 1)
        self.learns_classes = classes is not None and len(classes) == 0
        self.classes = None if classes is None else tuple(_jsonable(list(classes)))
        self._provisional = -1  # the code of the first learnt class while it is the only one
        self._validate()
        self._index_classes()
        self.rounds_ = self.labels_ = self.updates_ = 0
        self._budget = None
        if n_features is not None and classes is not None:
            self._allocate(n_features)

    # -- parameters ------------------------------------------------------------------------
    def _check_params(self) -> None:
        if self.n_features is not None:
            Interval(1, 2**31 - 2, integer=True).check("n_features", self.n_features)
        if self.learns_classes:
            if self.rule.multiclass:
                raise ValueError("classes=[] (learnt from the labels) is for binary learners: a multiclass "
                                 "learner needs its class list")
            if self.rule.scaling is None or not self.rule.symmetric:
                raise ValueError(f"classes=[]: {type(self.rule).__name__} cannot learn its classes from the labels "
                                 "(it cannot swap them when the second class shows which is positive); give them")
        elif self.classes is not None:
            if len(set(self.classes)) != len(self.classes):
                raise ValueError(f"classes must be distinct, got {list(self.classes)}")
            want = "at least 2" if self.rule.multiclass else "exactly 2"
            if len(self.classes) < 2 or (not self.rule.multiclass and len(self.classes) != 2):
                raise ValueError(f"classes must hold {want} labels, got {list(self.classes)}")
        if self.n_features is not None:
            check_width(self.scale, self.n_features)
        if not self.rff_components and (self.rff_lift or self.rff_keep):
            which = "rff_lift" if self.rff_lift else "rff_keep"
            raise ValueError(f"{which}={getattr(self, which)!r} shapes the random Fourier features, and there are "
                             "none: set rff_components > 0 as well")
        if self.scale != "none" and self.rule.scaling is None:
            raise ValueError(f"scale={self.scale!r} cannot keep the scores of {type(self.rule).__name__}, which "
                             "keeps examples rather than weights: a change of a feature's scale changes them "
                             "non-linearly; scale the features offline or use scale='none'")
        shared = set(self.rule.param_names()) & set(self.query.param_names())
        for name in shared:
            if getattr(self.rule, name) != getattr(self.query, name):
                raise ValueError(f"rule and query disagree on {name}: {getattr(self.rule, name)!r} "
                                 f"vs {getattr(self.query, name)!r}")

    def get_params(self) -> dict[str, Any]:
        """Learner-level, rule and query hyper-parameters in one flat mapping."""
        own = {k: getattr(self, k) for k in _OWN}
        if self.learns_classes:
            own["classes"] = ()  # the parameter; the classes learnt so far are state
        return {**self.rule.get_params(), **self.query.get_params(), **own}

    def clone(self, **overrides: Any) -> Learner:
        """Same hyper-parameters (with ``overrides`` routed to whichever part takes them), no state."""
        unknown = set(overrides) - set(self.get_params())
        if unknown:
            raise ValueError(f"unknown parameters {sorted(unknown)}; known: {sorted(self.get_params())}")
        pick = lambda part: {k: v for k, v in overrides.items() if k in part.param_names()}  # noqa: E731
        own = {k: overrides.get(k, v) for k, v in self.get_params().items() if k in _OWN}
        out = Learner(self.rule.clone(**pick(self.rule)), self.query.clone(**pick(self.query)),
                      name=self.name, **own)
        out.budget = None if self._budget is None else self._budget.clone()
        return out

    @property
    def budget(self):
        """The :class:`learners.budget.BudgetController` between the query's probability and the
        coin, or None. Setting one binds it to the query with fresh state; clones get a fresh copy."""
        return self._budget

    @budget.setter
    def budget(self, controller) -> None:
        self._budget = None if controller is None else controller.bind(self.query)

    @property
    def codes(self) -> Mapping[Any, int]:
        """Each known class value → its internal code (±1 for a binary learner, else its index), as
        a reader of labels encodes them (a read-only view of the current mapping)."""
        return MappingProxyType(self._codes)

    def __repr__(self) -> str:
        return f"Learner({self.name or ''!s}: {self.rule!r}, {self.query!r}, seed={self.seed}, " \
               f"bias={self.bias}, normalize={self.normalize}, tie={self.tie!r})"

    # -- data model ------------------------------------------------------------------------
    @property
    def multiclass(self) -> bool:
        return self.rule.multiclass

    @property
    def scaler(self) -> Scaler | None:
        """The online per-feature scale (None with ``scale="none"`` or before the first record)."""
        return self._scaler

    def _allocate(self, n_features: int) -> None:
        if self.classes is None:
            raise ValueError("a multiclass learner needs its class list: pass classes=[...]")
        Interval(1, 2**31 - 2, integer=True).check("n_features", int(n_features))
        check_width(self.scale, int(n_features))  # before anything is allocated
        self.n_features = int(n_features)
        width = self.n_features
        if self.rff_components:
            self._features = RandomFourierFeatures(n_components=self.rff_components, gamma=self.rff_gamma,
                                                   seed=self.rff_seed, n_features=self.n_features,
                                                   lift=self.rff_lift, keep=self.rff_keep)
            width = self._features.width
        self.rule.allocate(width + (self.bias != 0.0), 2 if self.learns_classes else len(self.classes))
        if self.scale not in ("none", "auto"):  # "auto" waits for the first batch (_resolve_scale)
            self._make_scaler(self.scale)
        self._index_classes()
        self._tie = 1 if self.tie == "positive" else -1

    def _index_classes(self) -> None:
        """The code of each known class, and the label each code decodes to (while a learner learns
        its classes: the one class known for both codes, or None before any)."""
        known = self.classes or ()
        if self.multiclass or len(known) == 2:
            self._codes = {c: (2 * i - 1 if not self.multiclass else i) for i, c in enumerate(known)}
            self._class_array = np.asarray(known)
        elif known:
            self._codes = {known[0]: self._provisional}
            self._class_array = np.asarray(known * 2)
        else:
            self._codes = {}
            self._class_array = np.array([None, None], dtype=object)

    def adopt(self, labels: Sequence[Any]) -> list[bool]:
        """Whether each of ``labels`` is one of the model's classes, taking new ones in order while the
        learner learns its classes (``classes=[]``) and knows fewer than two.

        The first class gets a provisional code (+1 if it reads as positive: a number above 0, "1",
        "true", "yes", ...); when the second arrives the two are ordered, the greater positive, and
        if that contradicts the provisional code the rule swaps its classes (:meth:`UpdateRule.flip_sign`),
        so that what it learnt from the first class is kept."""
        out = []
        for label in labels:
            label = _jsonable(label)
            known = _is_class(label) and label in self._codes
            if not known and self.learns_classes and len(self.classes) < 2 and _is_class(label):
                self._add_class(label)
                known = True
            out.append(known)
        return out

    def _add_class(self, label: Any) -> None:
        if not self.classes:
            self.classes = (label,)
            self._provisional = 1 if _looks_positive(label) else -1
        else:
            first = self.classes[0]
            self.classes = tuple(sorted((first, label), key=_class_order))
            if (1 if self.classes[1] == first else -1) != self._provisional and self.rule.is_allocated:
                self.rule.flip_sign()
        self._index_classes()

    def _make_scaler(self, mode: str) -> None:
        # Before a random feature map the scale is an input transform: no rule state is moved (a
        # change of scale moves z(x) non-linearly), and it learns from every record scored.
        source = "scored" if self._features is not None else self.scale_from
        self._scaler = Scaler(mode, source, self.n_features, self.normalize)
        if self._features is None:
            self._scaler.bind(self.rule, len(self.classes))

    def _resolve_scale(self, rows: Rows, final: bool) -> None:
        """``scale="auto"``: the mode for the stream's shape (kept in checkpoints), chosen once
        :data:`AUTO_ROWS` rows have been decided on, or at the first label (``final``), from the
        rows seen by then. Until then nothing is learnt, so the model is the prior in any units and
        no state has to move; the rows decided before are observed as the mode then would have."""
        if self.scale != "auto" or self._scale_mode is not None or not (rows.n or self._auto_sample):
            return
        earlier = self._auto_sample
        seen = sum(r.n for r in earlier) + rows.n
        if not final and seen < AUTO_ROWS:
            earlier.append(rows)
            return
        self._auto_sample = []
        self._set_scale_mode(choose_mode(Rows.vstack([*earlier, rows]) if earlier else rows))
        scaler = self._scaler
        if earlier and scaler is not None and (self._features is not None or scaler.score_level == OBSERVE_ALL):
            scaler.transform(Rows.vstack(earlier), OBSERVE_ALL)

    def _set_scale_mode(self, mode: str) -> None:
        self._scale_mode = mode
        if mode != "none":
            self._make_scaler(mode)

    @property
    def scale_mode(self) -> str | None:
        """The scale in force: ``scale``, or what ``"auto"`` chose (None until its first batch)."""
        return self._scale_mode if self.scale == "auto" else self.scale

    @property
    def _rule_scaler(self) -> Scaler | None:
        """The scaler between the rows and the rule, whose drivers run it row by row (None: the rows
        reach the rule as they are, or scaled before the map by :meth:`_mapped`)."""
        return self._scaler if self._features is None else None

    def _ensure_allocated(self, width: int | None) -> None:
        if not self.rule.is_allocated:
            self._allocate(width if width is not None else DEFAULT_DIMENSION)

    def encode(self, labels: Any) -> np.ndarray:
        """User labels → internal codes (±1 or class index); unknown labels raise ``ValueError``."""
        arr = np.asarray(labels)
        flat = arr.reshape(-1)
        if self.learns_classes and len(self.classes) < 2:
            self.adopt(list(dict.fromkeys(flat.tolist())))
            if len(self.classes) < 2:  # codes by the dictionary: one class (or none) known
                return np.array([self._code_of(label) for label in flat.tolist()], dtype=np.int64).reshape(arr.shape)
        if not self.multiclass and arr.dtype.kind in "iuf":
            # a stream's labels: two comparisons instead of a sort (np.unique) when all are known
            is_positive = flat == self.classes[1]
            if (is_positive | (flat == self.classes[0])).all():
                return np.where(is_positive, 1, -1).reshape(arr.shape)
        uniq, inverse = np.unique(flat, return_inverse=True)
        codes = np.empty(uniq.size, dtype=np.int64)
        for k, label in enumerate(uniq.tolist()):
            codes[k] = self._code_of(label)
        return codes[inverse].reshape(arr.shape)

    def code_of_prediction(self, label: Any) -> int:
        """The internal code of a prediction this model made (a label request's, a recorded one's):
        never a new class (a prediction is not a label), and None, the prediction of a model that knew
        no class yet, is 0, which no label has (:meth:`decide`)."""
        if label is None and self.learns_classes:
            return 0
        return self._code_of(label)

    def _code_of(self, label: Any) -> int:
        code = self._codes.get(_jsonable(label))
        if code is None:
            raise ValueError(f"label {label!r} is not one of the model's classes {list(self.classes)}"
                             + (" (learnt from the labels: a binary model; give every class for a multiclass one)"
                                if self.learns_classes else ""))
        return code

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Internal codes → user labels."""
        codes = np.asarray(codes)
        return self._class_array[(codes + 1) // 2 if not self.multiclass else codes]

    def _rows(self, X, level: int = OBSERVE_NONE, *, labelled: bool = False) -> Rows:
        """The rows as the rule reads them; ``level``: how much of them a scale before the map
        observes (decided records: all; scored or labelled ones: none); ``labelled``: rows about to
        be learnt (``scale="auto"`` chooses by then)."""
        rows = as_rows(X, self.n_features)
        self._ensure_allocated(rows.n_features)
        if level == OBSERVE_ALL or labelled:
            self._resolve_scale(rows, labelled)
        if self._features is None:  # with a scaler, rows are normalised after scaling, in its drivers
            return transform(rows, normalize=self.normalize and self._scaler is None, bias=self.bias)
        return transform(self._mapped(rows, level), normalize=False, bias=self.bias)

    def _mapped(self, rows: Rows, level: int, order: np.ndarray | None = None) -> Rows:
        """z(x) (or [x, z(x)]) of raw rows: scaled first if the learner scales (observed at ``level``,
        in ``order``), else unit-normalised if it normalises."""
        if self._scaler is not None:
            return self._features.transform(self._scaler.transform(rows, level, order))
        return self._features.transform(transform(rows, normalize=self.normalize, bias=0.0))

    def _rows_and_intercept(self, X, order: np.ndarray | None = None) -> tuple[Rows, float, int]:
        """:meth:`_rows` without the intercept coordinate, and (bias, the intercept's index): for the
        replay drivers, which append it to each row as they reach it instead of to a copy of the batch.
        With a scale before the map, every row is decided: observed in ``order`` (default: as given)."""
        rows = as_rows(X, self.n_features)
        self._ensure_allocated(rows.n_features)
        self._resolve_scale(rows, True)
        if self._features is None:
            view = transform(rows, normalize=self.normalize and self._scaler is None, bias=0.0)
        else:
            view = self._mapped(rows, OBSERVE_ALL, order)
        return view, float(self.bias), view.n_features

    @property
    def scales_before_map(self) -> bool:
        """Whether rows are scaled before a random feature map, so that a replay's prepared rows
        depend on the order they are replayed in."""
        return self._features is not None and self.scale != "none"

    def _row(self, x, level: int = OBSERVE_NONE, *, labelled: bool = False) -> tuple[np.ndarray, np.ndarray]:
        self._ensure_allocated(self.n_features)
        idx, val = as_row(x, self.n_features)
        if level == OBSERVE_ALL or labelled:
            self._resolve_scale(Rows.from_arrays([0, idx.size], idx, val, self.n_features), labelled)
        if self._features is None:
            return transform_row(idx, val, self.n_features, normalize=self.normalize and self._scaler is None,
                                 bias=self.bias)
        mapped = self._mapped(Rows.from_arrays([0, idx.size], idx, val, self.n_features), level)
        return transform_row(mapped.indices, mapped.data, self._features.width, normalize=False, bias=self.bias)

    # -- batches ---------------------------------------------------------------------------
    def score(self, X) -> Scores:
        """The rule's scores for a batch; nothing changes."""
        rows = self._rows(X)
        scaler = self._rule_scaler
        return self.rule.score(rows) if scaler is None else scaler.score(rows, self.rule)

    def predict(self, X) -> np.ndarray:
        """Predicted labels for a batch; nothing changes."""
        s = self.score(X)
        if self.multiclass:
            return self.decode(s.top)
        codes = np.where(s.p > 0, 1, np.where(s.p < 0, -1, self._tie))
        return self.decode(codes)

    def decide(self, X, ids: Sequence[str | int] | np.ndarray | None = None,
               times: np.ndarray | None = None) -> Decisions:
        """Predict and decide which labels to ask for, for a batch scored against one model state.

        ``ids`` are the records' ids (their coins); default: the round numbers. ``times``: the
        budget controller's clock for each record (:func:`learners.budget.advance_clock`),
        default the round numbers; unused without a budget.
        """
        rows = self._rows(X, OBSERVE_ALL)
        scaler = self._rule_scaler
        n = rows.n
        keys = (np.arange(self.rounds_, self.rounds_ + n, dtype=np.uint64) if ids is None
                else record_keys(ids))
        if keys.size != n:
            raise ValueError(f"{keys.size} ids for {n} records")
        yhat, prob = np.empty(n, dtype=np.int64), np.empty(n)
        p, gap, v = np.empty(n), np.empty(n), np.empty(n)
        query = np.empty(n, dtype=np.bool_)
        decide = DRIVERS[self._budget is not None, scaler is not None].decide
        scaling = () if scaler is None else scaler.decide_arguments()
        if self._budget is not None:
            clock = (np.arange(self.rounds_, self.rounds_ + n, dtype=np.float64) if times is None
                     else np.ascontiguousarray(times, dtype=np.float64))
            decide(
                rows.indptr, rows.indices, rows.data, keys, np.uint64(self.seed), self._tie, self.multiclass, clock,
                *self.rule.kernel_state(), self.rule.score_fn, self.query.qs_, *self.query.kernels[:2],
                *self._budget.arrays(), yhat, p, gap, v, prob, query, *scaling,
            )
        else:
            decide(
                rows.indptr, rows.indices, rows.data, keys, np.uint64(self.seed), self._tie, self.multiclass,
                *self.rule.kernel_state(), self.rule.score_fn,
                *self.query.kernel_state(), *self.query.kernels[:2],
                yhat, p, gap, v, prob, query, *scaling,
            )
        self.rounds_ += n
        if self.learns_classes and len(self.classes) < 2:
            # the class predicted is the one known (its code), or none (0, which no label has): so a
            # label for such a record counts as the mistake or the hit the prediction was
            yhat[:] = self._provisional if self.classes else 0
        scores = Scores(p, gap if "gap" in self.rule.provides else None,
                        v if "v" in self.rule.provides else None, yhat if self.multiclass else None)
        return Decisions(scores, yhat, self.decode(yhat), prob, query)

    def learn_many(self, X, y, predicted: np.ndarray | None = None, encoded: bool = False,
                   scored: bool = True, probability: np.ndarray | None = None) -> int:
        """Apply a batch of labels in order; ``predicted`` (internal codes) marks mistakes for
        adaptive queries, default: the current model's predictions. ``encoded``: ``y`` holds
        internal codes already (see :meth:`encode`). ``scored``: the rows went through
        :meth:`decide` first (with ``scale_from="scored"`` they already updated the scale; False:
        labelled rows the learner has not seen, as in ``partial_fit``). ``probability``: the query
        probability each label was asked with (:attr:`Decisions.probability`), which an
        importance-weighted query turns into the weight 1/q; default 1 (labels not asked for).
        Returns updates made."""
        rows = self._rows(X, OBSERVE_NONE if scored else OBSERVE_ALL, labelled=True)
        codes = np.ascontiguousarray(y if encoded else self.encode(y), dtype=np.int64).reshape(-1)
        if codes.size != rows.n:
            raise ValueError(f"{codes.size} labels for {rows.n} records")
        if predicted is None:
            predicted = self.encode(self.predict(X)) if rows.n else codes
        mistakes = np.ascontiguousarray(np.asarray(predicted) != codes)
        weights = self._weights(probability, rows.n)
        if self._rule_scaler is not None:
            changed = self._rule_scaler.learn_rows(rows, codes, mistakes, weights, self.rule, self.query, scored)
        else:
            changed = plain.learn_rows(
                rows.indptr, rows.indices, rows.data, np.arange(rows.n, dtype=np.int64), codes, mistakes, weights,
                *self.rule.kernel_state(), self.rule.update_fn,
                *self.query.kernel_state(), self.query.kernels[2],
            )
        self._first_update(changed)
        self.labels_ += rows.n
        self.updates_ += int(changed)
        return int(changed)

    # -- one record at a time (River-style) ------------------------------------------------
    def ask(self, x, record_id: str | int | None = None) -> tuple[Any, float, bool]:
        """(prediction, query probability, ask for the label?) for one record."""
        if self._budget is not None:  # the controller's state lives with the batch driver
            self._ensure_allocated(self.n_features)
            idx, val = as_row(x, self.n_features)
            import scipy.sparse as sp  # only this path needs it; importing it costs start-up

            row = sp.csr_matrix((val, idx, [0, idx.size]), shape=(1, self.n_features))
            d = self.decide(row, ids=None if record_id is None else [record_id])
            return d.label[0].item(), float(d.probability[0]), bool(d.query[0])
        idx, val = self._row(x, OBSERVE_ALL)
        if (scaler := self._rule_scaler) is not None:
            idx, val = scaler.scaled_row(idx, val, scaler.score_level, self.rule)
        S, a, P = self.rule.kernel_state()
        qp, qs = self.query.kernel_state()
        p, gap, v, top = self.rule.score_fn(S, a, P, idx, val)
        prob = self.query.kernels[0](p, gap, v, qp, qs)
        self.query.kernels[1](qp, qs)
        key = self.rounds_ if record_id is None else record_key(record_id)
        self.rounds_ += 1
        query = draw(np.uint64(self.seed), np.uint64(key)) < prob
        code = top if self.multiclass else (1 if p > 0 else -1 if p < 0 else self._tie)
        return self._class_array[(code + 1) // 2 if not self.multiclass else code].item(), float(prob), bool(query)

    def _weights(self, probability: np.ndarray | None, n: int) -> np.ndarray:
        """Each label's importance weight: 1/q under an importance-weighted query, else 1."""
        if probability is None or not self.query.importance_weighted:
            return np.ones(n)
        q = np.asarray(probability, dtype=np.float64).reshape(-1)
        if q.size != n:
            raise ValueError(f"{q.size} query probabilities for {n} labels")
        if not np.all((q > 0) & (q <= 1)):
            raise ValueError("a query probability must be in (0, 1] to weigh its label by 1/q")
        return np.ascontiguousarray(1.0 / q)

    def learn(self, x, y: Any, predicted: Any = None, probability: float | None = None) -> bool:
        """Apply one label. ``predicted`` is the prediction made when the label was asked for
        (default: the current model's); ``probability`` the query probability it was asked with
        (see :meth:`learn_many`). True if the model changed."""
        idx, val = self._row(x, labelled=True)
        self.adopt([y])
        code = self._code_of(y)
        if (scaler := self._rule_scaler) is not None:
            idx, val = scaler.scaled_row(idx, val, scaler.learn_level, self.rule)
        S, a, P = self.rule.kernel_state()
        if predicted is None:
            p, _, _, top = self.rule.score_fn(S, a, P, idx, val)
            guess = top if self.multiclass else (1 if p > 0 else -1 if p < 0 else self._tie)
        else:
            guess = self._codes.get(_jsonable(predicted))
        weight = float(self._weights(None if probability is None else [probability], 1)[0])
        changed = self.rule.update(idx, val, code, weight)
        if changed and self._rule_scaler is not None:
            self._rule_scaler.mark_learnt(idx)
        self.query.kernels[2](*self.query.kernel_state(), guess != code, weight)
        self._first_update(changed)
        self.labels_ += 1
        self.updates_ += changed
        return changed

    def _first_update(self, changed: int) -> None:
        """The fresh model's scores (all 0) leave the budget controller's window once the model first changes."""
        if changed and self.updates_ == 0 and self._budget is not None:
            self._budget.forget_scores()

    # -- state -----------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        """What a checkpoint must match to be loaded into this learner."""
        return {
            "learner": self.name,
            "rule": type(self.rule).__name__,
            "query": type(self.query).__name__,
            "params": {k: _jsonable(v) for k, v in self.get_params().items()},
        }

    def state_dict(self) -> dict[str, np.ndarray]:
        """Plain arrays: the rule's named state, the query's, counters, format version and meta."""
        if not self.rule.is_allocated:
            raise ValueError("the learner has no state yet: it has not seen a record")
        out: dict[str, np.ndarray] = {
            "format_version": np.array(FORMAT_VERSION),
            "meta": np.array(json.dumps(self.meta(), sort_keys=True)),
            "counters": np.array([self.rounds_, self.labels_, self.updates_], dtype=np.int64),
        }
        out.update({f"rule.{k}": v for k, v in self.rule.state_dict().items()})
        out.update({f"query.{k}": v for k, v in self.query.state_dict().items()})
        if self._budget is not None:
            out.update({f"budget.{k}": v for k, v in self._budget.state_dict().items()})
        if self._scaler is not None:
            out.update({f"scale.{k}": v for k, v in self._scaler.state_dict().items()})
        if self.scale == "auto" and self._scale_mode is not None:
            out["scale_mode"] = np.array(self._scale_mode)
        if self.learns_classes:
            out["learnt_classes"] = np.array(json.dumps({"classes": list(self.classes),
                                                         "provisional": self._provisional}))
        return out

    def follow(self, state: Mapping[str, np.ndarray]) -> None:
        """Take another learner's model (a :meth:`state_dict` of the same configuration, e.g. one a
        trainer published), keeping this learner's own query state: its round count (what its coin
        has drawn) and its budget controller, which paces what this learner asks. Where the model
        taken is the first to have learnt anything, the controller forgets the scores of the
        untrained model, as on a first update. ``ValueError`` or ``KeyError`` if it does not fit."""
        rounds, fresh = self.rounds_, self.updates_ == 0
        self.load_state_dict({k: v for k, v in state.items() if not k.startswith("budget.")}, allow_param_change=True)
        self.rounds_ = rounds
        if fresh and self.updates_ > 0 and self._budget is not None:
            self._budget.forget_scores()

    def load_state_dict(self, state: Mapping[str, np.ndarray], *, allow_param_change: bool = False) -> None:
        """Restore a :meth:`state_dict`. Refuses another format version, another learner, or
        other hyper-parameters unless ``allow_param_change`` (dimension and classes must match)."""
        version = int(state["format_version"])
        if version != FORMAT_VERSION:
            raise ValueError(f"state format version {version}, this library reads {FORMAT_VERSION}")
        theirs = json.loads(str(state["meta"]))
        mine = self.meta()
        for k, v in _ABSENT.items():
            if k in mine["params"]:
                theirs["params"].setdefault(k, v)
        if self.n_features is None:
            mine["params"]["n_features"] = theirs["params"].get("n_features")
        structural = _STRUCTURAL
        diff = sorted(k for k in set(theirs["params"]) | set(mine["params"])
                      if theirs["params"].get(k) != mine["params"].get(k))
        hard = [k for k in diff if k in structural] + [k for k in ("rule", "query") if theirs[k] != mine[k]]
        if hard == ["rule"] and theirs["rule"] in self.rule.upgrades_from:
            hard, diff = [], [*diff, "rule"]  # a state this rule grows from: allowed as a change of parameters
        if hard or (diff and not allow_param_change):
            detail = ", ".join(f"{k}: saved {theirs['params'].get(k, theirs.get(k))!r} vs "
                               f"this {mine['params'].get(k, mine.get(k))!r}" for k in (hard or diff))
            raise ValueError(f"state was made by a differently configured learner ({detail})")
        self._ensure_allocated(theirs["params"]["n_features"])
        if self.learns_classes and "learnt_classes" in state:
            learnt = json.loads(str(state["learnt_classes"]))
            self.classes, self._provisional = tuple(learnt["classes"]), int(learnt["provisional"])
            self._index_classes()
        if self.scale == "auto" and self._scale_mode is None and "scale_mode" in state:
            self._set_scale_mode(str(state["scale_mode"]))
        self.rule.load_state_dict({k[5:]: v for k, v in state.items() if k.startswith("rule.")})
        self.query.load_state_dict({k[6:]: v for k, v in state.items() if k.startswith("query.")})
        if self._budget is not None and "budget.format_version" in state:
            self._budget.load_state_dict({k[7:]: v for k, v in state.items() if k.startswith("budget.")})
        if self._scaler is not None:
            self._scaler.load_state_dict({k[6:]: v for k, v in state.items() if k.startswith("scale.")})
        self.rounds_, self.labels_, self.updates_ = (int(c) for c in state["counters"])
