"""Helpers shared by the tests: factories, the agent replay harness, the browser driver, task-suite builders."""
