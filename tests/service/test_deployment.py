"""The deployment files agree with the code: the compose file sets only settings that exist,
its images match the pins in pyproject.toml, and the Dockerfile follows the Makefile."""

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
    for requirement in PYPROJECT["project"]["dependencies"]:
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


def test_images_match_the_pins() -> None:
    services = COMPOSE["services"]
    spark = _pin("pyspark")
    spark_images = [s["image"] for s in services.values() if "spark" in s.get("image", "")]
    assert len(spark_images) == 2, "a Spark master and a worker"
    for image in spark_images:
        tag = image.rsplit(":", 1)[1]
        assert tag == spark or tag.startswith(spark + "-"), (image, spark)
    python = re.search(r"^FROM python:(\d+\.\d+)[-.\w]*slim", DOCKERFILE, re.MULTILINE)
    assert python, "the image is built on a slim Python base"
    minimum = PYPROJECT["project"]["requires-python"].removeprefix(">=")
    assert tuple(map(int, python.group(1).split("."))) >= tuple(map(int, minimum.split(".")))


def test_dependencies_wait_for_healthy_services() -> None:
    services = COMPOSE["services"]
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    for name, service in services.items():
        for target, condition in service.get("depends_on", {}).items():
            assert condition == {"condition": "service_healthy"}, (name, target)
            assert "healthcheck" in services[target], target
    assert set(services["reasoner"]["depends_on"]) == {"postgres", "spark-master"}
    postgres_env = _environment(services["postgres"])
    url = _environment(services["reasoner"])["REASONER_DATABASE_URL"]
    assert url.endswith(f"@postgres:5432/{postgres_env['POSTGRES_DB']}")
    assert f"//{postgres_env['POSTGRES_USER']}:" in url


def test_named_volume_for_the_database() -> None:
    volumes = COMPOSE["volumes"]
    mounts = COMPOSE["services"]["postgres"]["volumes"]
    assert any(
        m.split(":")[0] in volumes and m.endswith("/var/lib/postgresql/data") for m in mounts
    )


def test_dockerfile() -> None:
    assert "openjdk-17-jre-headless" in DOCKERFILE
    assert "make install" in DOCKERFILE  # the Makefile's install steps, not a copy of them
    user = re.findall(r"^USER (\S+)", DOCKERFILE, re.MULTILINE)
    assert user and user[-1] not in {"root", "0"}
    assert re.search(r"^HEALTHCHECK .*", DOCKERFILE, re.MULTILINE)
    assert "/ready" in DOCKERFILE
    assert re.search(r'^CMD \[.*"serve"', DOCKERFILE, re.MULTILINE)
