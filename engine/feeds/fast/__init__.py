# SPDX-License-Identifier: MIT
"""FAST 1.1 (FIX Adapted for STreaming) decoding, template-driven (issue 20).

* :mod:`engine.feeds.fast.templates` — template XML into :class:`TemplateSet`.
* :mod:`engine.feeds.fast.decoder` — the reference decoder into Python values.
* :mod:`engine.feeds.fast.columnar` — the template set compiled into int64 tables and
  decoded by a numba kernel (:mod:`engine.feeds.fast._kernels`) into structured arrays.
"""
