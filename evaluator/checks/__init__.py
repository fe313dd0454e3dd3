"""The holds on a measured figure: datasheet peaks and physical limits, kernel identity, integrity decisions.

Trusted parent only; mostly pure functions of what evaluator/measure/ and evaluator/arch_check/ recorded.
"""
