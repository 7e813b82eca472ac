# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Problems with the input: one thing wrong, where it is and what to write instead, collected so that every
problem of a run is reported at once (the model, the host checks, the artifacts, the day-2 plans).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input: where it is, and what to change."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass
class Collector:
    """The problems and warnings of one check, in the order they were found."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    def error(self, where: str, message: str) -> None:
        self.problems.append(Problem(where, message))

    def warn(self, where: str, message: str) -> None:
        self.warnings.append(Problem(where, message))


class ModelError(Exception):
    """Raised with every problem found, so they can be reported at once."""

    def __init__(self, problems: list[Problem], warnings: list[Problem] | None = None):
        self.problems = problems
        self.warnings = warnings or []
        super().__init__(format_problems(problems))


def format_problems(problems: list[Problem], title: str = "") -> str:
    lines = [title] if title else []
    lines.extend(f"  - {p}" for p in problems)
    return "\n".join(lines)
