# SPDX-License-Identifier: MIT
"""The qwconsole engine: everything that trades, with no Qt anywhere.

Layers (each imports only those below it)::

    client / embedded      the one interface the GUI uses (EngineClient)
    core                   the Engine: bus, clock, components, command dispatch
    fix, oms, matching,    FIX engine, order management, matching, positions,
    book, portfolio, store book kernels, tick store
    events, commands       frozen messages in and out
    bus, clock, jit,       plumbing: publish/subscribe, injected time, numba flags,
    types, enums           dtypes and integer constants
"""
