# syntax=docker/dockerfile:1
# planner-agent farm host: an adb server that sees the host's USB phones, plus the runtime and
# its device pool. Built on the runtime image:
#   docker build -f docker/runtime.Dockerfile -t planner-agent/runtime .
#   docker build -f docker/farm-host.Dockerfile -t planner-agent/farm-host .
# (compose.yaml builds both in order.)
ARG RUNTIME_IMAGE=planner-agent/runtime:latest
FROM ${RUNTIME_IMAGE}

# adb opens /dev/bus/usb/* read-write, so it runs as root. The adb key that phones have
# authorised lives in $HOME/.android (adb reads HOME, not ANDROID_USER_HOME, for its key): HOME is
# /adb so that /adb/.android can be a volume, or every container start asks each phone to
# authorise a new key.
# hadolint ignore=DL3002
USER 0

# The adb binary that ships inside the adbutils wheel (platform-tools), so no SDK download.
RUN ln -s "$(python -c 'import adbutils; print(adbutils.adb_path())')" /usr/local/bin/adb \
 && adb version

ENV PLANNER_AGENT_ADB=127.0.0.1:5037 \
    HOME=/adb
RUN mkdir -p /adb/.android
EXPOSE 5037
VOLUME ["/adb/.android"]

# Listening is enough: `adb devices` would quietly start a second server if this one were gone.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s \
  CMD ["python", "-c", "import socket; socket.create_connection(('127.0.0.1', 5037), 3).close()"]

# The adb server in the foreground is the container's main process; run the agent beside it
# (`docker compose exec farm-host planner-agent run ...`). -a listens on every interface so a
# pool on another machine can use this host's phones (`--adb farm-host:5037`): adb has no
# authentication, so publish 5037 only on a trusted network.
ENTRYPOINT []
CMD ["adb", "-a", "-P", "5037", "server", "nodaemon"]
