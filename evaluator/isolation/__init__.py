"""Keeping candidate code contained: process groups with capped output, bubblewrap, cgroups, the drop from root.

Trusted parent only.
"""
