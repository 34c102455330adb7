# syntax=docker/dockerfile:1
# The activestream service image.
#
#   docker build -t activestream .
#   docker run -e ACTIVESTREAM_BOOTSTRAP_SERVERS=kafka:9092 -p 9108:9108 \
#              -v activestream-data:/var/lib/activestream activestream
#
# Configured by ACTIVESTREAM_* environment variables (docs/reference/configuration.md). Every dependency
# installs from a wheel, so neither stage has a compiler; the final stage holds the virtualenv only.
# tests/deploy/test_dockerfile.py runs this file's install steps in a fresh virtualenv and the
# service as an unprivileged user, as the image does.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    VIRTUAL_ENV=/opt/activestream
WORKDIR /src
COPY pyproject.toml README.md ./
COPY learners ./learners
COPY consumer ./consumer
# The service needs neither pip nor the packages' own test suites at run time (about 90 MB). The
# schema-registry extra: ACTIVESTREAM_FORMAT json-schema and avro (records in the registry's wire format).
RUN python -m venv "$VIRTUAL_ENV" && "$VIRTUAL_ENV/bin/pip" install ".[schema-registry]" \
 && "$VIRTUAL_ENV/bin/pip" uninstall --yes --quiet pip setuptools \
 && find "$VIRTUAL_ENV" -depth -type d -name tests -exec rm -rf {} +

FROM ${PYTHON_IMAGE}
ENV VIRTUAL_ENV=/opt/activestream \
    PATH=/opt/activestream/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    NUMBA_CACHE_DIR=/var/cache/activestream/numba \
    ACTIVESTREAM_CHECKPOINT_DIR=/var/lib/activestream \
    ACTIVESTREAM_METRICS_PORT=9108
RUN useradd --system --uid 10001 --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin activestream \
 && install -d -o 10001 -g 10001 /var/lib/activestream /var/cache/activestream/numba
COPY --from=build /opt/activestream /opt/activestream
USER 10001:10001
# Compile the learners' numba kernels into NUMBA_CACHE_DIR by running the demo (embedded broker,
# 400 records): the image is smoke-tested at build time and a container starts without a compile
# pause. Twice: with the demo's query-rate target and without one, whose decisions take other
# kernels (a service with ACTIVESTREAM_QUERY_RATE_TARGET and one without). The cache loads
# read-only too (readOnlyRootFilesystem): numba must write where it reads, so each command first
# copies it into /tmp (consumer.cli.writable_numba_cache); a different CPU model recompiles there.
RUN activestream demo --records 400 --rate 0 --label-delay 0 --json > /dev/null \
 && activestream demo --records 400 --rate 0 --label-delay 0 --query-rate-target none --json > /dev/null
VOLUME ["/var/lib/activestream"]
EXPOSE 9108
# SIGTERM: stop consuming, flush (at most 20 s), checkpoint, commit, exit 0 — inside Kubernetes'
# default 30 s grace period. The exec-form ENTRYPOINT makes the service PID 1, so it gets the signal.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 CMD ["activestream", "healthcheck"]
ENTRYPOINT ["activestream"]
CMD ["run"]
