"""The ``screenshot`` tool: a visual observation of the phone's screen.

The PNG goes into the content-addressed artifact store (:mod:`planner_runtime.trajectories.artifacts`) and
the feedback carries its reference twice: in the result, and as ``Observation.screenshot``
beside the screen's element list — so a text-only planner still reads the elements, a
multimodal one or a person reviewing the trajectory can look at the picture, and the
trajectory itself stays small.
"""

from __future__ import annotations

from device_farm.errors import ShellCommandError
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.tools import NoArgs, Tool, ToolContext, ToolFailure, ToolResult
from planner_runtime.trajectories.artifacts import ArtifactStore, png_size


class Screenshot(Tool):
    name = "screenshot"
    description = "Take a screenshot of the phone's screen (a picture for review, plus the screen's elements)."

    def __init__(self, artifacts: ArtifactStore | None = None) -> None:
        self._artifacts = artifacts

    @property
    def artifacts(self) -> ArtifactStore:
        if self._artifacts is None:  # read the settings on first use, not at construction
            self._artifacts = ArtifactStore.default()
        return self._artifacts

    def run(self, ctx: ToolContext, args: NoArgs) -> ToolResult:
        try:
            png = ctx.device.screenshot()
        except ShellCommandError as exc:
            raise ToolFailure(ErrorCode.action_failed, f"the phone gave no screenshot: {exc.output.strip()[:200]}") from exc
        ref = self.artifacts.put(png, "png")
        width, height = png_size(png) or (0, 0)
        ctx.observe()  # the elements of the screen the picture shows
        return ToolResult(result={"screenshot": ref, "width": width, "height": height, "bytes": len(png)}, observe=True, screenshot=ref)
