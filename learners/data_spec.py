"""A dataset named by a spec string, as ``activestream replay --data`` and the benchmarks take it.

A spec is a LIBSVM file's path (:mod:`learners.datasets`), a generated stream
``synthetic:sparse?n=…&d=…&nnz=…&noise=…&seed=…``, ``synthetic:shift?d=50&n=10000&switch=500&seed=S``
or ``usps-shift:PATH?switch=500&positives=5&seed=S`` (:mod:`learners.synthetic`), each optionally
behind the transforms ``ovr:LABEL:``, ``scale:`` and ``maxabs:`` (:mod:`learners.transforms`), which
compose left to right. This is the one module that knows the readers, the generators and the
transforms; none of them imports it.

>>> resolve("scale:synthetic:shift?n=20&d=3&seed=1").name
'scale:synthetic:shift?d=3&n=20&switch=500&seed=1'
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qsl

from learners import transforms
from learners.datasets import Dataset, read_libsvm
from learners.synthetic import synthetic_shift, synthetic_sparse, usps_shift

__all__ = ["is_libsvm_file", "resolve"]

_SYNTHETIC = {"sparse": synthetic_sparse, "shift": synthetic_shift}


def _query(make: Callable[..., Dataset], text: str) -> dict:
    """``k=v&…`` → keyword arguments of ``make``, naming the unknown ones."""
    known = [p for p in inspect.signature(make).parameters if p != "path"]
    kwargs = {k: (float(v) if k == "noise" else int(v)) for k, v in parse_qsl(text)}
    unknown = sorted(set(kwargs) - set(known))
    if unknown:
        raise ValueError(f"{make.__name__} takes no {', '.join(unknown)} (it takes: {', '.join(known)})")
    return kwargs


def resolve(spec: str, *, zero_based: bool = False) -> Dataset:
    """A dataset from a path, ``synthetic:KIND?key=value&…`` or ``usps-shift:PATH?key=value&…``; the
    prefixes ``ovr:LABEL:``, ``scale:`` and ``maxabs:`` transform the dataset named by the rest."""
    prefix, _, rest = spec.partition(":")
    if prefix == "ovr":
        label, _, inner = rest.partition(":")
        return transforms.one_vs_rest(resolve(inner, zero_based=zero_based), transforms.parse_label(label))
    if prefix in transforms.TRANSFORMS:
        return transforms.TRANSFORMS[prefix](resolve(rest, zero_based=zero_based))
    if spec.startswith("synthetic:"):
        kind, _, query = spec[len("synthetic:"):].partition("?")
        if kind not in _SYNTHETIC:
            raise ValueError(f"unknown synthetic dataset {kind!r} (known: {', '.join(_SYNTHETIC)})")
        return _SYNTHETIC[kind](**_query(_SYNTHETIC[kind], query))
    if spec.startswith("usps-shift:"):
        path, _, query = spec[len("usps-shift:"):].partition("?")
        return usps_shift(path, **_query(usps_shift, query))
    if not Path(spec).exists():
        raise ValueError(f"no such dataset file: {spec}")
    return read_libsvm(spec, zero_based=zero_based)


def is_libsvm_file(spec: str) -> bool:
    """Whether :func:`resolve` reads ``spec`` as a LIBSVM file (no transform, no generated stream)."""
    prefix = spec.partition(":")[0]
    if prefix in ("ovr", "synthetic", "usps-shift") or prefix in transforms.TRANSFORMS:
        return False
    return Path(spec).is_file()
