"""LaTeX spellings of exact numbers and integer polynomials, as the problem generator writes them."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction


def latex_number(value: Fraction | int) -> str:
    """The canonical answer spelling: an integer as digits (``-3``), any other rational as a reduced
    ``\\frac{p}{q}`` with the sign in front (``-\\frac{3}{4}``)."""
    value = Fraction(value)
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


def latex_operand(value: Fraction | int) -> str:
    """``latex_number(value)``, parenthesized when negative, for use inside a larger expression."""
    text = latex_number(value)
    return f"({text})" if value < 0 else text


def latex_polynomial(coefficients: Sequence[int], variable: str = "x") -> str:
    """An integer polynomial, highest power first (``[2, -3, 0, 1]`` gives ``2x^3 - 3x^2 + 1``); terms with
    a zero coefficient are left out, and the zero polynomial is ``0``."""
    degree = len(coefficients) - 1
    terms: list[str] = []
    for index, coefficient in enumerate(coefficients):
        if coefficient == 0:
            continue
        power = degree - index
        monomial = "" if power == 0 else variable if power == 1 else f"{variable}^{power}"
        magnitude = abs(coefficient)
        body = str(magnitude) if not monomial else monomial if magnitude == 1 else f"{magnitude}{monomial}"
        if not terms:
            terms.append(body if coefficient > 0 else f"-{body}")
        else:
            terms.append(f"+ {body}" if coefficient > 0 else f"- {body}")
    return " ".join(terms) if terms else "0"
