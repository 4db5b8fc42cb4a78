"""Package layout the declarative ``pyproject.toml`` cannot state: ship ``skills/`` inside the wheel.

The skill files live in the top-level ``skills/`` folder of the repository, beside the packages,
where they are edited and reviewed. An installed wheel needs them too, so ``package_dir`` maps
that folder to the ``planner_runtime.skills`` package directory: ``pip install .``, a built wheel
and an editable install all see the same files, without a copy in the tree. Everything else about
the project is in ``pyproject.toml``.
"""

from setuptools import find_namespace_packages, setup

setup(
    # Namespace discovery so data folders such as tasks/suites count as packages, as setuptools asks.
    packages=[*find_namespace_packages(include=["planner_runtime*", "device_farm*"]), "planner_runtime.skills"],
    package_dir={"planner_runtime.skills": "skills"},
    package_data={
        "planner_runtime.skills": ["*/SKILL.md"],
        "planner_runtime.tasks.suites": ["*.yaml"],
    },
)
