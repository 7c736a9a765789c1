# SPDX-License-Identifier: MIT
"""What is wrong with a settings file: located problems (:class:`SettingsProblem`), the error.

Every problem names the file, the line, the key and the reason; :class:`SettingsError` carries
all the errors found in one pass (and the warnings of the same pass, for editors).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SettingsProblem:
    """One error or warning, located.

    Parameters
    ----------
    source : str
        File name.
    line : int
        1-based line (0 if the problem is about a missing key; then it is the section line).
    key : str
        Key as spelled in the file (or the missing key's canonical name; ``""`` for a line).
    reason : str
        What is wrong.
    """

    source: str
    line: int
    key: str
    reason: str

    def __str__(self) -> str:
        key = f" {self.key}:" if self.key else ""
        where = f"{self.source}:{self.line}:" if self.line else f"{self.source}:"  # 0: the file
        return f"{where}{key} {self.reason}"


class SettingsError(ValueError):
    """A settings file has errors; ``problems`` lists all of them (the message shows them).

    ``warnings`` holds the warnings found in the same pass (for editors that show both).
    """

    def __init__(
        self, problems: list[SettingsProblem], warnings: list[SettingsProblem] | None = None
    ) -> None:
        self.problems = problems
        self.warnings = warnings or []
        super().__init__("\n".join(str(p) for p in problems))
