"""FLOP-count expressions of tasks (`"2*M*N*K"` in ptxbench.json), evaluated safely over axis values.

Used on both sides of the trust boundary, as a dependency only: the candidate process loads it through
evaluator/both_sides/taskdata.py; FLOP counts are computed for the verdict by the parent.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping


def evaluate_flops(expression: str, values: Mapping[str, int | float]) -> float:
    """Evaluate a FLOP-count expression such as '2*M*N*K' over axis values. Only + - * / // ** and names."""
    tree = ast.parse(expression, mode="eval")

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.Name):
            if node.id not in values:
                raise ValueError(f"unknown axis {node.id!r} in FLOP expression")
            return float(values[node.id])
        if isinstance(node, ast.BinOp):
            left, right = ev(node.left), ev(node.right)
            ops: dict[type[ast.operator], Callable[[], float]] = {
                ast.Add: lambda: left + right,
                ast.Sub: lambda: left - right,
                ast.Mult: lambda: left * right,
                ast.Div: lambda: left / right,
                ast.FloorDiv: lambda: left // right,
                ast.Pow: lambda: left**right,
            }
            for op_type, fn in ops.items():
                if isinstance(node.op, op_type):
                    return fn()
        raise ValueError(f"unsupported syntax in FLOP expression: {ast.dump(node)[:60]}")

    return ev(tree)
