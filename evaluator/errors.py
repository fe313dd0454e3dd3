"""Exceptions for broken infrastructure. A bad kernel never raises: it gets a verdict."""


class EnvironmentProblem(RuntimeError):
    """The evaluating host cannot do what was asked (tool missing, no GPU, wrong GPU, broken package).

    The command line turns this into a non-zero exit status with the message; the portal retries elsewhere.
    """
