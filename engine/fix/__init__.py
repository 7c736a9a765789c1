# SPDX-License-Identifier: MIT
"""FIX engine: codec, dictionaries, session layer, stores, logs and transport."""
