"""Experiment drivers: the top layer, beside :mod:`beliefgate.cli`.

A module that plays or reads episodes of several agents to produce a result (a report, a
table, a command's output) is a driver, and lives here: it may import every layer below,
and nothing below imports it. ``eval_cli`` (``beliefgate eval run|report``),
``overforge_report`` (``beliefgate overforge run|report``), ``data_cli``
(``beliefgate data ...``, ``beliefgate eval human|bc``) and ``bc`` (the BC proxy's reward
with a scripted partner). The layer order is written in ``tests/test_structure.py``.
"""
