# The reasoner service: Python 3.11, a Java 17 runtime (the Spark Bootstrap's driver), run as a
# non-root user. Built in two stages so that a source change rebuilds one small layer:
#
#   build    the runtime dependencies of pyproject.toml (no dev or bench extras) into a
#            virtualenv; this layer depends on pyproject.toml alone and stays cached. Then the
#            compiled part (the tables, reasoner/storage, and the Update kernel,
#            reasoner/kernel: Cython) with a C compiler that stays here
#   runtime  the JRE, that virtualenv, then the source (reasoner/, service/, migrations/) and
#            the compiled modules from the build stage
#
# The base image comes from a build argument with the public name as default, so a user's
# `docker compose up` builds on python:3.11-slim-bookworm and a machine without a registry
# can pass a local stand-in (`--build-arg BASE_IMAGE=local/python:3.11-slim-bookworm`).
ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /build
COPY pyproject.toml ./
# The engine's dependencies and its service and Spark extras (pyproject.toml).
RUN python3 -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print('\n'.join(p['dependencies'] + p['optional-dependencies']['service'] + p['optional-dependencies']['spark']))" > requirements.txt \
    && python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install -r requirements.txt \
    && find /opt/venv -name __pycache__ -type d -prune -exec rm -rf {} +
# A C compiler and, where the base image lacks them (Debian's Python), the Python headers.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc libc6-dev \
    && (python3 -c "import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" \
        || DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-dev) \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/build-tools \
    && /opt/build-tools/bin/pip install "$(grep -o 'Cython==[0-9.]*' pyproject.toml)" setuptools
COPY setup.py ./
COPY reasoner/__init__.py ./reasoner/
COPY reasoner/storage/__init__.py reasoner/storage/table.pyx reasoner/storage/table.pxd \
     reasoner/storage/blocks.pxd reasoner/storage/slots.pxd reasoner/storage/claims.pxd \
     reasoner/storage/links.pxd \
     reasoner/storage/table_lanes.pyx reasoner/storage/rewind.pyx \
     reasoner/storage/compare.pyx reasoner/storage/renumber.pyx reasoner/storage/scans.pyx \
     ./reasoner/storage/
COPY reasoner/kernel/__init__.py reasoner/kernel/interpreter.pyx reasoner/kernel/plan_words.pxd \
     reasoner/kernel/count_lanes.pyx reasoner/kernel/gate.pyx reasoner/kernel/gate.pxd \
     reasoner/kernel/candidates.pxd reasoner/kernel/dedup.pxd reasoner/kernel/deferred.pxd \
     reasoner/kernel/buffers.pxd reasoner/kernel/runs.pxd reasoner/kernel/hand_over.pxd \
     reasoner/kernel/negations.pxd \
     ./reasoner/kernel/
COPY reasoner/io/__init__.py reasoner/io/fields.pxd reasoner/io/fact_read.pyx \
     reasoner/io/fact_text.pyx ./reasoner/io/
COPY reasoner/support/__init__.py reasoner/support/word_sort.pyx reasoner/support/string_ids.pyx \
     ./reasoner/support/
COPY service/__init__.py ./service/
COPY service/feed/__init__.py service/feed/socket_fanout.pyx ./service/feed/
# setup.py alone builds the extensions: a minimal pyproject.toml keeps it from needing the rest
# of the source tree (README.md, the package list; no packages, or setuptools refuses the two
# top-level ones it finds).
RUN printf '[project]\nname = "reasoner-compact"\nversion = "0"\n[tool.setuptools]\npackages = []\n' > pyproject.toml \
    && /opt/build-tools/bin/python setup.py build_ext --inplace

FROM ${BASE_IMAGE}
# PYTHONMALLOC=malloc: Python's small objects from the C library's heap, which malloc_trim hands
# back after a refused write (service/core/epoch_budget.py). Python's own allocator keeps a 1 MiB
# arena while any object in it lives: a refused write that packed a million records left
# 95-120 MB behind at a 200 MB allowance and 275 MB at 800 MB, 20 MB with this (and no
# measurable cost on a Bootstrap's CPU time).
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONMALLOC=malloc \
    PYTHONPATH=/app \
    PATH=/opt/venv/bin:$PATH

# (slim images lack man directories, which the JRE's update-alternatives step writes to)
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/* \
    && java -version \
    && groupadd --system --gid 10001 reasoner \
    && useradd --system --uid 10001 --gid reasoner --home-dir /app --shell /usr/sbin/nologin reasoner

COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY alembic.ini ./
COPY migrations ./migrations
COPY reasoner ./reasoner
COPY service ./service
COPY --from=build /build/reasoner/storage/*.so ./reasoner/storage/
COPY --from=build /build/reasoner/kernel/*.so ./reasoner/kernel/
COPY --from=build /build/reasoner/io/*.so ./reasoner/io/
COPY --from=build /build/reasoner/support/*.so ./reasoner/support/
COPY --from=build /build/service/feed/*.so ./service/feed/
# Compiled once here: the image's user cannot write __pycache__ (and PYTHONDONTWRITEBYTECODE
# forbids it), so without this every start compiled the sources again.
# ./data holds the SQLite database when no PostgreSQL URL is set (mount a volume there).
RUN python -m compileall -q reasoner service migrations \
    && mkdir -p /app/data && chown reasoner:reasoner /app/data
USER reasoner

EXPOSE 8000

# Ready (200) once the materialization is built; a large program may take a while to load.
HEALTHCHECK --interval=5s --timeout=5s --start-period=300s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/ready', timeout=4).status == 200 else 1)"]

CMD ["python", "-m", "service", "--host", "0.0.0.0", "--port", "8000"]
