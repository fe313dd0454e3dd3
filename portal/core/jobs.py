"""Tiny jobs for operators: `ping` proves a worker takes work from a queue."""


def ping(message: str = "") -> str:
    return f"pong: {message}"
