# SPDX-License-Identifier: MIT
"""Schema-driven SBE decoding (CME MDP 3.0): schema XML, numba decoders, packet framing."""
