# pipecat-team-runner: the runner beside pipecat-manager (Kubernetes sidecar or Docker).
#
#   docker build -t pipecat-team-runner .                      # cloud providers + local ones
#   docker build --build-arg EXTRAS= -t pipecat-team-runner .  # cloud providers only (smaller)
#   docker run --network container:pipecat-manager -e RUNNER_METRICS_PORT=9090 \
#       pipecat-team-runner                                     # beside pipecat-manager
#   (on an address of its own: RUNNER_HOST=0.0.0.0 with RUNNER_API_TOKEN and
#   RUNNER_ALLOWED_HOSTS, publishing 8000 on the host's loopback; README, "Running the service")
#
# Dependencies come from pyproject.toml only: there is no second list here.
#
# The image holds the runtime only: main.py, run.py, team_flow.py, routing/ and
# teamrunner/. The simulators and the playground (the `teamrunner` command) are
# not copied, nor in the build context (.dockerignore), so setuptools' package
# discovery simply does not find them. tests/playground/test_docker_image.py
# builds the wheel from exactly what the COPY lines below copy.
FROM python:3.11-slim

ARG EXTRAS=local
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY pyproject.toml README.md ./
COPY main.py run.py team_flow.py ./
COPY routing ./routing
COPY teamrunner ./teamrunner
# The wheel's `teamrunner` command drives the playground, which the image leaves out.
# `python main.py` imports the runner from /app, which the runner's user cannot write
# to: compiled here, its modules are not compiled again at every start of the process
# (and of a pool's template): BENCHMARKS.md section 11.
RUN pip install ".${EXTRAS:+[$EXTRAS]}" \
    && rm -f /usr/local/bin/teamrunner \
    && python -m compileall -q main.py run.py team_flow.py routing teamrunner \
    && useradd --system --uid 10001 runner

USER runner
# As a sidecar the runner shares the pod's network and listens on 127.0.0.1
# (pipecat-manager calls localhost:8000); probes and Prometheus come to
# RUNNER_METRICS_PORT, which listens on every address. Listening wider than
# loopback with the API (RUNNER_HOST=0.0.0.0) calls for RUNNER_API_TOKEN.
# SSL_CERT_DIR: an HTTPS client built with httpx (the OpenAI SDK's, one per
# endpoint) then reads CA certificates lazily from the hashed directory instead of
# loading certifi's bundle. Provider sockets share one TLS context per process.
ENV RUNNER_HOST=127.0.0.1 \
    RUNNER_PORT=8000 \
    PIPECATCALL_ADDRESS=localhost:8001 \
    SSL_CERT_DIR=/etc/ssl/certs
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
    CMD python -c "import os, urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{os.environ[\"RUNNER_PORT\"]}/health', timeout=2)"
CMD ["python", "main.py"]
