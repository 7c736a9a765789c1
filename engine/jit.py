# SPDX-License-Identifier: MIT
"""The one place numba is imported and configured.

Every kernel in the project is decorated with :func:`kernel`, which compiles it in nopython
mode with ``cache=True`` (compiled code is kept on disk; a warm start loads it in well under a
second) and ``nogil=True`` (a kernel running in a worker thread never freezes the GUI).
"""

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

F = TypeVar("F", bound=Callable[..., Any])


def kernel(fn: F) -> F:
    """Compile ``fn`` in nopython mode with the project's standard flags."""
    return cast(F, numba.njit(cache=True, nogil=True)(fn))


def kernel_inline(fn: F) -> F:
    """Compile a small helper kernel that numba inlines into its callers."""
    return cast(F, numba.njit(cache=True, nogil=True, inline="always")(fn))
