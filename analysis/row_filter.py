"""A filter over a table's columns, written as a Python condition: ``depth > 20 and activation == "relu"``,
``log10(nlc) < 1 or norm in ("batch", "layer")``, ``not high_bias``.

The expression is parsed with Python's ``ast`` and evaluated column by column over the pandas table, from a small
grammar only: column names, numbers, strings, ``True``/``False``, lists and tuples of constants (for ``in``), the
comparisons (chained as Python chains them), ``and``/``or``/``not``, ``+ - * / **``, unary minus and the functions
``FUNCTIONS``. Nothing else is accepted (no attribute, subscript, other call or name), so a filter reads the
table and cannot run code. A comparison with a missing value (NaN, null) is false, as in pandas.
"""

from __future__ import annotations

import ast
import difflib
import operator
from typing import Any, Callable

import numpy as np
import pandas as pd

from archstudy.sampling import SpecError

FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "log10": np.log10,
    "log": np.log,
    "exp": np.exp,
    "sqrt": np.sqrt,
    "abs": np.abs,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_ARITHMETIC: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
GRAMMAR = (
    "a condition over the columns: names, numbers, strings, comparisons (== != < <= > >= in, not in), and/or/not, "
    "+ - * / ** and " + ", ".join(FUNCTIONS)
)


class _Filter:
    def __init__(self, table: pd.DataFrame, where: str, expression: str) -> None:
        self.table, self.where, self.expression = table, where, expression

    def refuse(self, why: str) -> SpecError:
        return SpecError(self.where, "where", self.expression, why)

    def column(self, name: str) -> pd.Series:
        if name in self.table.columns:
            return self.table[name]
        close = difflib.get_close_matches(name, [str(c) for c in self.table.columns], n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise self.refuse(f"{name!r} is not a column of the architectures table{hint}; docs/results.md lists them")

    def value(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
            return node.value
        if isinstance(node, ast.Name):
            return self.column(node.id)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(e) for e in node.elts]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.value(node.operand)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ~self.truth(self.value(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            return self.arithmetic(node)
        if isinstance(node, ast.BoolOp):
            parts = [self.truth(self.value(v)) for v in node.values]
            join = operator.and_ if isinstance(node.op, ast.And) else operator.or_
            out = parts[0]
            for p in parts[1:]:
                out = join(out, p)
            return out
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
            if len(node.args) != 1 or node.keywords:
                raise self.refuse(f"{node.func.id}() takes one argument")
            with np.errstate(all="ignore"):
                return FUNCTIONS[node.func.id](self.number(self.value(node.args[0])))
        raise self.refuse(f"{ast.unparse(node)!r} is not allowed: {GRAMMAR}")

    def number(self, v: Any) -> Any:
        if isinstance(v, pd.Series) and not pd.api.types.is_numeric_dtype(v):
            raise self.refuse(f"column {v.name!r} holds text, not numbers")
        if isinstance(v, pd.Series):
            return v.astype("float64")
        if isinstance(v, str):
            raise self.refuse(f"{v!r} is text, not a number")
        return v

    def arithmetic(self, node: ast.BinOp) -> Any:
        left, right = self.number(self.value(node.left)), self.number(self.value(node.right))
        with np.errstate(all="ignore"):
            return _ARITHMETIC[type(node.op)](left, right)

    def compare(self, node: ast.Compare) -> pd.Series:
        out: pd.Series | None = None
        left = self.value(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.value(right_node)
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(right, list):
                    raise self.refuse("`in` needs a list or tuple of values: activation in ('relu', 'tanh')")
                part = self.series(left).isin(right)
                part = ~part if isinstance(op, ast.NotIn) else part
            elif type(op) in _COMPARE:
                part = self.truth(_COMPARE[type(op)](self.series(left), right))
            else:
                raise self.refuse(f"the comparison {type(op).__name__} is not allowed: {GRAMMAR}")
            out = part if out is None else out & part
            left = right
        assert out is not None
        return out

    def series(self, v: Any) -> pd.Series:
        return v if isinstance(v, pd.Series) else pd.Series(v, index=self.table.index)

    def truth(self, v: Any) -> pd.Series:
        """A condition's value as booleans, a missing value false."""
        s = self.series(v)
        if not (pd.api.types.is_bool_dtype(s) or s.dtype == "boolean"):
            raise self.refuse(f"{s.name!r} is not a condition (true or false per architecture): {GRAMMAR}")
        return s.astype("boolean").fillna(False).astype(bool)


def filter_rows(table: pd.DataFrame, expression: str, where: str = "lookup") -> pd.Series:
    """The rows of ``table`` for which ``expression`` (module docstring) holds, as a boolean Series; a bad
    expression is a one-line ``SpecError`` naming what is wrong."""
    text = str(expression).strip()
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise SpecError(where, "where", text, f"is not a Python condition ({e.msg}): {GRAMMAR}") from None
    f = _Filter(table, where, text)
    return f.truth(f.value(tree.body))
