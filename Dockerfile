# The reasoner service: Python 3.11 (slim), a Java 17 runtime for the Spark Bootstrap, run as a
# non-root user. Dependencies are installed exactly as `make install` does it (a virtualenv
# in .venv and `pip install -e '.[dev]'`), so the image runs what CI tests.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# (slim images lack man directories, which the JRE's update-alternatives step writes to)
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless make procps \
    && rm -rf /var/lib/apt/lists/* \
    && java -version

RUN groupadd --system --gid 10001 reasoner \
    && useradd --system --uid 10001 --gid reasoner --home-dir /app --shell /usr/sbin/nologin reasoner

WORKDIR /app
RUN chown reasoner:reasoner /app
USER reasoner

COPY --chown=reasoner:reasoner . /app
RUN make install PYTHON=python3 && mkdir -p /app/data

VOLUME ["/app/data"]
EXPOSE 8000

# Ready (200) once the materialization is built; a large program may take a while to load.
HEALTHCHECK --interval=10s --timeout=5s --start-period=300s --retries=3 \
    CMD [".venv/bin/python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/ready', timeout=4).status == 200 else 1)"]

CMD [".venv/bin/reasoner", "serve", "--host", "0.0.0.0", "--port", "8000"]
