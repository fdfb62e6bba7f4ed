"""warpt from Python: start runs, read the history, compare runs, and
measure pytest-benchmark tests with warpt (``pytest --warpt``).

- :func:`run`: one run through warpt's run path, returning a :class:`Run`;
- :func:`history`: the stored runs (:meth:`History.runs`) and one metric
  over time (:meth:`History.metric`), as :class:`Rows` with
  ``to_pandas()`` / ``to_polars()``;
- :func:`compare`: the verdicts of ``warpt benchmark compare``;
- :class:`WarptError` / :class:`UsageError`: warpt's message and exit status;
- :mod:`warpt.pytest_plugin`: the ``benchmark`` fixture under warpt.

Everything goes through the ``warpt`` executable installed with this
package (``WARPT_BIN`` names another); docs/python.md is the reference.
"""

from warpt._compare import Comparison, Verdict, compare
from warpt._errors import UsageError, WarptError
from warpt._history import History, history
from warpt._results import Metric, Result, Run, Stats, Validation
from warpt._rows import Rows
from warpt._run import run

__all__ = [
    "Comparison",
    "History",
    "Metric",
    "Result",
    "Rows",
    "Run",
    "Stats",
    "UsageError",
    "Validation",
    "Verdict",
    "WarptError",
    "compare",
    "history",
    "run",
]
