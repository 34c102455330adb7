"""Walking PromQL expressions (promql-parser): the metrics they read and the values they threshold."""

from __future__ import annotations

from collections.abc import Iterator

import promql_parser as pp

COMPARISONS = {"==", "!=", ">", "<", ">=", "<="}
SET_OPERATORS = {"and", "or", "unless"}


def children(node: object) -> list:
    if isinstance(node, pp.BinaryExpr):
        return [node.lhs, node.rhs]
    if isinstance(node, pp.AggregateExpr):
        return [node.expr] + ([node.param] if node.param is not None else [])
    if isinstance(node, pp.Call):
        return list(node.args)
    if isinstance(node, pp.ParenExpr | pp.UnaryExpr | pp.SubqueryExpr):
        return [node.expr]
    if isinstance(node, pp.MatrixSelector):
        return [node.vector_selector]
    return []


def walk(node: object) -> Iterator[object]:
    yield node
    for child in children(node):
        yield from walk(child)


def metric_names(expr: str) -> set[str]:
    return {n.name for n in walk(pp.parse(expr)) if isinstance(n, pp.VectorSelector) and n.name}


def _is_filter(node: object) -> bool:
    return (isinstance(node, pp.BinaryExpr) and str(node.op) in COMPARISONS
            and not (node.modifier is not None and node.modifier.return_bool))


def signals(expr: str) -> list[str]:
    """The operands an alert compares with its thresholds, outermost first.

    An alert expression is empty while all is well: ``x > 0.01`` filters ``x`` away. Its operands
    are not: they must return data whenever the service runs, so evaluating them proves that the
    metrics exist and that the vector matching between them works. Operands that are numbers are
    left out; set operators (``and``, ``or``, ``unless``) are looked through.
    """
    found: list[str] = []

    def visit(node: object) -> None:
        if _is_filter(node):
            for side in (node.lhs, node.rhs):
                if not isinstance(side, pp.NumberLiteral):
                    found.append(str(side))
        for child in children(node):
            visit(child)

    visit(pp.parse(expr))
    return found
