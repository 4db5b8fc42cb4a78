"""planner-agent runtime: contract records, planners, harness, tasks, trajectories and the CLI.

The seams are protocols (``planner_runtime.planners.Planner``, ``device_farm.Device``); the
records every layer exchanges live in :mod:`planner_runtime.contract`.
"""

__version__ = "0.2.0"
HARNESS_RELEASE = f"harness-{__version__}"
