"""Service settings, read from the environment (prefix `REASONER_`) or a `.env` file.

Every field here is a documented knob of the deployment; `docker-compose.yml` may only set
these (a test checks it). Secrets are `SecretStr` so that they never appear in logs or reprs.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATABASE_URL = "sqlite:///./data/reasoner.db"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="REASONER_", env_file=".env", extra="ignore", frozen=True
    )

    database_url: str = Field(
        DEFAULT_DATABASE_URL,
        description="SQLAlchemy URL: SQLite (default, a file under ./data/) or PostgreSQL "
        "(`postgresql://user@host/db`; the psycopg 3 driver is used).",
    )
    program: str | None = Field(
        None,
        description="Path of a Datalog program that seeds an empty database (ignored once "
        "the database holds a program).",
    )
    spark_master: str = Field(
        "local[*]", description="Spark master for the Spark Bootstrap (`spark://host:7077`)."
    )
    bootstrap_engine: Literal["auto", "local", "spark", "reference"] = Field(
        "auto",
        description="Where Bootstrap runs: `local` (vectorized, in-process), `spark`, or "
        "`auto` (Spark when a cluster master is configured or the input is very large); "
        "`reference` is the per-tuple executor.",
    )
    switching_parameter: float = Field(
        0.2, gt=0, description="Update deadline = switching_parameter × last Bootstrap time."
    )
    read_token: SecretStr | None = Field(
        None, description="Bearer token required by read routes (the write token also reads)."
    )
    write_token: SecretStr | None = Field(None, description="Bearer token required by writes.")
    max_request_bytes: int = Field(
        256 * 1024 * 1024, gt=0, description="Larger request bodies are refused with 413."
    )
    page_size: int = Field(1000, gt=0, description="Rows per page of relation and query results.")
    query_timeout_seconds: float = Field(
        10.0, gt=0, description="Deadline of one query evaluation (a request may ask for less)."
    )
    query_max_rows: int = Field(
        1_000_000,
        gt=0,
        description="Distinct answers one query may have; a query past it is refused (400, "
        "`query_too_large`) instead of filling the memory.",
    )
    epoch_timeout_seconds: float | None = Field(
        None,
        gt=0,
        description="Deadline of one write's evaluation (Update and the Bootstrap it may fall "
        "back to): past it the evaluation is cancelled, nothing changes and the write is "
        "refused (422, `epoch_timeout`). Unset: no deadline.",
    )
    max_rules: int = Field(
        10_000,
        gt=0,
        description="Rules the program may hold, counted after disjunctions are expanded "
        "(`p(x) :- a(x) ; b(x).` counts 2); a write that would pass it is refused (400, "
        "`too_many_rules`).",
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info",
        description="Level of the service's own log (`debug` adds a line per epoch phase: "
        "committing, applying, applied). Secrets never appear in it.",
    )

    @field_validator("read_token", "write_token", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if value == "" else value

    @property
    def sqlalchemy_url(self) -> str:
        """The URL with the driver made explicit: psycopg 3 for PostgreSQL."""
        url = self.database_url
        for prefix in ("postgresql://", "postgres://"):
            if url.startswith(prefix):
                return "postgresql+psycopg://" + url[len(prefix) :]
        return url
