"""The deployment files agree with the code: the compose file sets only settings that exist,
its images match the pins in pyproject.toml and come from variables, nothing is open by
default, and the Dockerfile installs the runtime dependencies before the source.

(`make compose-test`, tests/compose, brings the stack up for real.)"""

from __future__ import annotations

import re
import tomllib

import yaml

from service.settings import Settings
from tests.conftest import REPO_ROOT

COMPOSE = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
DOCKERFILE = (REPO_ROOT / "Dockerfile").read_text()
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def _pin(package: str) -> str:
    """The version pyproject.toml pins, in the dependencies or an extra."""
    project = PYPROJECT["project"]
    extras = project.get("optional-dependencies", {}).values()
    for requirement in [*project["dependencies"], *(r for extra in extras for r in extra)]:
        name, _, version = requirement.partition("==")
        if name.split("[")[0].strip().lower() == package:
            return version.strip()
    raise AssertionError(f"{package} is not pinned in pyproject.toml")


def _environment(service: dict) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {key: str(value) for key, value in env.items()}


def test_service_environment_names_only_existing_settings() -> None:
    known = {
        (Settings.model_config.get("env_prefix", "") + name).upper()
        for name in Settings.model_fields
    }
    env = _environment(COMPOSE["services"]["reasoner"])
    assert env, "the service sets no settings"
    assert set(env) <= known, sorted(set(env) - known)
    assert env["REASONER_DATABASE_URL"].startswith("postgresql://")
    assert env["REASONER_SPARK_MASTER"] == "spark://spark-master:7077"
    # Values that are not interpolated from the caller's environment must validate.
    literal = {
        key[len("REASONER_") :].lower(): value
        for key, value in env.items()
        if not value.startswith("${")
    }
    Settings.model_validate(literal)


def test_secrets_come_from_the_caller() -> None:
    services = COMPOSE["services"]
    env = _environment(services["reasoner"])
    # No password in the URL, none written down: the caller must provide one.
    assert "@" in env["REASONER_DATABASE_URL"]
    assert ":" not in env["REASONER_DATABASE_URL"].split("//", 1)[1].split("@")[0]
    assert env["REASONER_DATABASE_PASSWORD"].startswith("${POSTGRES_PASSWORD:?")
    assert _environment(services["postgres"])["POSTGRES_PASSWORD"].startswith(
        "${POSTGRES_PASSWORD:?"
    )
    # A write token must be given, or anonymous writes chosen explicitly.
    assert env["REASONER_WRITE_TOKEN"].startswith("${REASONER_WRITE_TOKEN?")
    assert env["REASONER_ALLOW_ANONYMOUS_WRITES"] == "${REASONER_ALLOW_ANONYMOUS_WRITES:-false}"


def test_only_the_service_is_published() -> None:
    for name, service in COMPOSE["services"].items():
        assert bool(service.get("ports")) == (name == "reasoner"), name


def test_images_come_from_variables_and_match_the_pins() -> None:
    services = COMPOSE["services"]
    spark = _pin("pyspark")
    image = services["spark-master"]["image"]
    default = re.fullmatch(r"\$\{SPARK_IMAGE:-(.+)\}", image)
    assert default, image
    tag = default.group(1).rsplit(":", 1)[1]
    assert tag == spark or tag.startswith(spark + "-"), (image, spark)
    # The workers run the service's own image (its pyspark, hence the master's version): the
    # tasks of a decomposed recursion are the reasoner package's Python.
    worker = services["spark-worker"]
    assert (worker["image"], worker["build"]) == (
        services["reasoner"]["image"],
        services["reasoner"]["build"],
    )
    assert worker["command"].startswith("spark-class org.apache.spark.deploy.worker.Worker")
    assert services["postgres"]["image"].startswith("${POSTGRES_IMAGE:-postgres:")
    build_args = services["reasoner"]["build"]["args"]
    assert build_args["BASE_IMAGE"].startswith("${BASE_IMAGE:-python:")
    python = re.search(r"^ARG BASE_IMAGE=python:(\d+\.\d+)[-.\w]*slim", DOCKERFILE, re.M)
    assert python, "the image is built on a slim Python base by default"
    minimum = PYPROJECT["project"]["requires-python"].removeprefix(">=")
    assert tuple(map(int, python.group(1).split("."))) >= tuple(map(int, minimum.split(".")))


def test_dependencies_wait_for_healthy_services() -> None:
    services = COMPOSE["services"]
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    for name, service in services.items():
        for target, condition in service.get("depends_on", {}).items():
            assert condition == {"condition": "service_healthy"}, (name, target)
            assert "healthcheck" in services[target], target
    assert set(services["reasoner"]["depends_on"]) == {"postgres", "spark-master", "spark-worker"}
    # The master binds its own hostname, not the loopback: its check must dial that name.
    assert "spark-master/7077" in " ".join(services["spark-master"]["healthcheck"]["test"])
    assert "aliveworkers" in " ".join(services["spark-worker"]["healthcheck"]["test"])
    postgres_env = _environment(services["postgres"])
    url = _environment(services["reasoner"])["REASONER_DATABASE_URL"]
    assert url.endswith(f"@postgres:5432/{postgres_env['POSTGRES_DB']}")
    assert f"//{postgres_env['POSTGRES_USER']}@" in url


def test_named_volume_for_the_database() -> None:
    volumes = COMPOSE["volumes"]
    mounts = COMPOSE["services"]["postgres"]["volumes"]
    assert any(
        m.split(":")[0] in volumes and m.endswith("/var/lib/postgresql/data") for m in mounts
    )


def test_dockerfile_installs_dependencies_then_source() -> None:
    assert "openjdk-17-jre-headless" in DOCKERFILE
    assert "[dev]" not in DOCKERFILE and "make install" not in DOCKERFILE  # runtime only
    copies = re.findall(r"^COPY (.*)$", DOCKERFILE, re.MULTILINE)
    first_source = next(i for i, c in enumerate(copies) if "reasoner" in c.split()[0])
    install = DOCKERFILE.index("pip install -r requirements.txt")
    assert copies[0].split()[0] == "pyproject.toml"
    assert install < DOCKERFILE.index(f"COPY {copies[first_source]}")
    user = re.findall(r"^USER (\S+)", DOCKERFILE, re.MULTILINE)
    assert user and user[-1] not in {"root", "0"}
    assert re.search(r"^HEALTHCHECK .*", DOCKERFILE, re.MULTILINE)
    assert "/ready" in DOCKERFILE
    assert re.search(r'^CMD \[.*"service"', DOCKERFILE, re.MULTILINE)
    lines = (REPO_ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line for line in lines if line and not line.startswith("#")]
    assert patterns[0] == "*", "the context holds only what the image needs"


def test_the_readme_documents_every_setting_with_its_default() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    rows = {
        match.group(1): match.group(2)
        for match in re.finditer(r"^\| `REASONER_(\w+)` \| ([^|]+) \|", readme, re.MULTILINE)
    }
    assert set(rows) == {name.upper() for name in Settings.model_fields}, set(rows) ^ {
        name.upper() for name in Settings.model_fields
    }
    for name, field in Settings.model_fields.items():
        documented = rows[name.upper()].strip()
        default = field.default
        if default is None:
            assert not documented.startswith("`"), (name, documented)
        elif isinstance(default, bool):
            assert documented == f"`{str(default).lower()}`", (name, documented)
        elif isinstance(default, float) and default.is_integer():
            assert documented.startswith(f"`{int(default)}`"), (name, documented)
        else:
            assert documented.startswith(f"`{default}`"), (name, documented)


def test_the_image_compiles_every_cython_source() -> None:
    """The build stage copies the compiled part file by file: a `.pyx` or a `.pxd` it leaves
    out (one that a `.pyx` cimports) breaks the image's build, which only the compose stage
    would see."""
    sources = [
        path.relative_to(REPO_ROOT).as_posix()
        for pattern in ("reasoner/**/*.pyx", "reasoner/**/*.pxd", "service/**/*.pyx")
        for path in REPO_ROOT.glob(pattern)
    ]
    assert sources
    instructions = DOCKERFILE.replace("\\\n", " ").splitlines()  # continued lines joined
    copied = " ".join(line for line in instructions if line.startswith("COPY "))
    assert [source for source in sources if source not in copied] == []
