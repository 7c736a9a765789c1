# SPDX-License-Identifier: MIT
"""FAST 1.1 (FIX Adapted for STreaming) decoding, template-driven (issue 20).

* :mod:`engine.feeds.fast.templates` — template XML into :class:`TemplateSet`.
* :mod:`engine.feeds.fast.decoder` — the reference decoder into Python values.
"""
