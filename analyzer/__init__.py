# SPDX-License-Identifier: MIT
"""Trade Analyzer: data modules (Qt-free) and, in ``analyzer.views``, its Qt views."""
