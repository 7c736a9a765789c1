# SPDX-License-Identifier: MIT
"""The in-process simulator venue (``adapter``) over ``engine.sim``'s exchange."""
