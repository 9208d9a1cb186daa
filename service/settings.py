"""Service settings, read from the environment (prefix `REASONER_`) or a `.env` file.

Every field here is a documented knob of the deployment; `docker-compose.yml` may only set
these (a test checks it). Secrets are `SecretStr` so that they never appear in logs or reprs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, create_model, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url

from reasoner import (
    DEFAULT_MIN_UPDATE_SECONDS,
    DEFAULT_SPARK_ITERATION,
    DEFAULT_SPARK_THRESHOLD,
    DEFAULT_SWITCHING_PARAMETER,
    Engine,
    FunctorLibrary,
    use_jobs,
)

DEFAULT_DATABASE_URL = "sqlite:///./data/reasoner.db"
SECRETS_DIR = Path("/run/secrets")
"""Docker's secrets: a file named like a setting's variable, in lower case
(`/run/secrets/reasoner_write_token`), is read as that setting."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="REASONER_",
        env_file=".env",
        extra="ignore",
        frozen=True,
        secrets_dir=SECRETS_DIR if SECRETS_DIR.is_dir() else None,
    )

    database_url: str = Field(
        DEFAULT_DATABASE_URL,
        description="SQLAlchemy URL: SQLite (default, a file under ./data/) or PostgreSQL "
        "(`postgresql://user@host/db`; the psycopg 3 driver is used).",
    )
    database_password: SecretStr | None = Field(
        None,
        description="Password for the database URL's user, kept out of the URL (and so out "
        "of any listing of the environment that shows the URL).",
    )
    program: str | None = Field(
        None,
        description="Path of a Datalog program that seeds an empty database (ignored once "
        "the database holds a program).",
    )
    functors: str | None = Field(
        None,
        description="Path of a Python module whose top-level functions implement user-defined "
        "functors, by name (`.functor f(x: number): number` in a program, `@f(x)` in its "
        "rules). Programs written to the service may use only the functors the server was "
        "started with: a program never names a library.",
    )
    functor_libraries: str | None = Field(
        None,
        description="C shared libraries of user-defined functors (paths, separated by `:`), "
        "called as Soufflé's 64-bit build calls them; a function of `functors` of the same name "
        "comes first.",
    )
    spark_master: str = Field(
        "local[*]", description="Spark master for the Spark Bootstrap (`spark://host:7077`)."
    )
    bootstrap_engine: Engine = Field(
        "auto",
        description="Where Bootstrap runs: `local` (vectorized, in-process), `spark`, "
        "`reference` (the per-tuple executor, the compiled kernel), or `auto`: chosen per "
        "stratum by an estimate of its cost (its rows, and its iterations and time in the last "
        "Bootstrap): Spark for a stratum of `spark_threshold` rows or more, or one that "
        "`spark_cores` would finish sooner; in process otherwise, on the per-tuple executor "
        "under 2,000 rows.",
    )
    spark_threshold: int = Field(
        DEFAULT_SPARK_THRESHOLD,
        gt=0,
        description="Rows of a stratum from which `auto` runs it on a Spark cluster whatever "
        "the estimate of speed (where the in-process state stops fitting comfortably; not on "
        "a `local` master, whose JVM holds less than this process). A "
        "configured cluster alone does not: every Spark iteration is a job, which costs more "
        "than the in-process executors on any input that fits in this process.",
    )
    spark_cores: int = Field(
        0,
        ge=0,
        description="Cores of the Spark cluster, for `auto`'s estimate (0: the `local[N]` "
        "master's N; unknown for a cluster, which then takes only strata over "
        "`spark_threshold`).",
    )
    spark_iteration: int = Field(
        DEFAULT_SPARK_ITERATION,
        ge=0,
        description="Rows below which an iteration of a Spark Bootstrap runs in process, on "
        "the compiled kernel (0: every iteration on Spark). A Spark iteration costs jobs "
        "whatever its size; the kernel's per-tuple loop wins the small ones.",
    )
    jobs: int | None = Field(
        None,
        ge=1,
        description="Threads an evaluation may use, as Soufflé's -j (none: every core the "
        "process may run on). Polars' stages and the kernel's Bootstrap and Update use them. "
        "Read when the engine is first imported: set it in the environment, not in a .env "
        "file.",
    )
    switching_parameter: float = Field(
        DEFAULT_SWITCHING_PARAMETER,
        gt=0,
        description="Update deadline = switching_parameter × last Bootstrap time.",
    )
    min_update_seconds: float = Field(
        DEFAULT_MIN_UPDATE_SECONDS,
        ge=0,
        description="The Update deadline's floor: an Update is never abandoned sooner, so "
        "that small programs do not fall back on the noise of a millisecond Bootstrap. 0 "
        "leaves the deadline to the switching parameter alone.",
    )
    read_token: SecretStr | None = Field(
        None, description="Bearer token required by read routes (the write token also reads)."
    )
    write_token: SecretStr | None = Field(None, description="Bearer token required by writes.")
    allow_anonymous_writes: bool = Field(
        False,
        description="Serve on an interface other than the loopback without a write token. "
        "Without it the service refuses to start there: anyone who reaches the port could "
        "change the data.",
    )
    max_request_bytes: int = Field(
        64 * 1024 * 1024,
        gt=0,
        description="Larger request bodies are refused with 413 (64 MiB: about two million "
        "facts as JSON; load more in several requests).",
    )
    page_size: int = Field(1000, gt=0, description="Rows per page of relation and query results.")
    console: bool = Field(
        True,
        description="Serve the web console at /console (its pages hold no data: what it shows "
        "it reads through the API with the user's token). false: /console is 404.",
    )
    query_timeout_seconds: float = Field(
        10.0, gt=0, description="Deadline of one query evaluation (a request may ask for less)."
    )
    write_group_max: int = Field(
        256,
        gt=0,
        description="Writes of a few facts that queue up while an epoch is applied are applied "
        "together as the next epoch, at most this many (group commit: one evaluation, one "
        "transaction); each is answered alone with its own counts or its own error. 1 makes "
        "every write an epoch of its own.",
    )
    max_concurrent_reads: int = Field(
        8,
        gt=0,
        description="Relation reads and queries evaluated at once; one more is refused at "
        "once (503, `too_busy`, with `Retry-After`) instead of queueing behind them past its "
        "deadline. Probes (`/health`, `/ready`) and writes are never counted.",
    )
    max_concurrent_exports: int = Field(
        2,
        gt=0,
        description="Relation exports streaming at once (`GET /v1/relations/{name}/export`); "
        "one more is refused at once (503, `too_busy`). Exports never take reads' places.",
    )
    query_max_rows: int = Field(
        1_000_000,
        gt=0,
        description="Distinct answers one query may have; a query past it is refused (400, "
        "`query_too_large`) instead of filling the memory.",
    )
    query_cache_rows: int = Field(
        1_000_000,
        ge=0,
        description="Answers kept of the queries asked last, per (query, epoch), so that the "
        "pages of one answer evaluate it once; the least recently used go first (0: none). "
        "About 100 bytes a row of two numbers.",
    )
    epoch_timeout_seconds: float = Field(
        60.0,
        gt=0,
        description="Deadline of one write's evaluation (Update and the Bootstrap it may fall "
        "back to). Every write is evaluated before it is committed: past the deadline the "
        "evaluation is cancelled, nothing changes and the write is refused (422, "
        "`epoch_timeout`), so a program that never terminates cannot be committed.",
    )
    epoch_memory_mb: int | None = Field(
        None,
        gt=0,
        description="How much one write's evaluation may grow the process (resident memory, "
        "MiB); past it the write is refused (422, `epoch_too_large`) and nothing changes. "
        "Unset: half the memory of the machine or container. A start-up rebuild has the "
        "same allowance.",
    )
    memory_cap_mb: int | None = Field(
        None,
        gt=0,
        description="Resident memory (MiB) past which the process evaluates no write: one "
        "arriving then is refused (503, `too_busy`, with `Retry-After`) and nothing changes, "
        "and no evaluation may grow the process past it. Unset: 90 % of the memory of the "
        "machine or container.",
    )
    rebuild_timeout_seconds: float | None = Field(
        None,
        gt=0,
        description="Deadline of the start-up rebuild. A rebuild that fails (an error, the "
        "memory allowance, or this deadline) quarantines the newest epoch that changed the "
        "program and retries without it, so the service comes up at the last program it "
        "can evaluate. Unset: no deadline (a rebuild of a large state is never cut short).",
    )
    max_rules: int = Field(
        10_000,
        gt=0,
        description="Rules the program may hold, counted after disjunctions are expanded "
        "(`p(x) :- a(x) ; b(x).` counts 2); a write that would pass it is refused (400, "
        "`too_many_rules`).",
    )
    change_retention_epochs: int | None = Field(
        100_000,
        gt=0,
        description="Epochs whose change sets the feed (`GET /v1/changes`) keeps, at least; "
        "older ones are pruned every 64 epochs (or every retention, if fewer), and a read "
        "of them is refused (410, `changes_expired`). The default bounds the feed's history "
        "(at about 6.5 kB an epoch of small writes, some 650 MB) while a client that was "
        "away for days of ordinary writes still catches up from the feed; empty: kept for "
        "ever.",
    )
    epoch_history: int = Field(
        16,
        ge=0,
        description="Recent epochs a relation or a query can be read at (`?epoch=N`, "
        '`"epoch": N`, and the later pages of a read, which keep to their epoch): the last '
        "this many before the published one. Older ones are refused (410, "
        "`epoch_unavailable`), as are epochs whose change sets the retention pruned.",
    )
    feed_max_clients: int = Field(
        256,
        gt=0,
        description="Clients the live change feed serves at once, counted from the moment "
        "a request is accepted; one more is refused (503, `too_busy`, with `Retry-After`).",
    )
    feed_catch_up_concurrency: int = Field(
        2,
        gt=0,
        description="Slices of history (10,000 rows or 10,000 epochs at most) the live feed "
        "reads and renders at once for the clients catching up (`since` or `Last-Event-ID` "
        "older than the latest 64 epochs). The others wait their turn holding no worker "
        "thread and no database connection, and a slice read for one client serves every "
        "client at the same place, so reads and writes keep their pace meanwhile.",
    )
    feed_connects_per_second: float = Field(
        5.0,
        gt=0,
        description="Live-feed connections one token (or, without one, one client address) "
        "may open per second, once its burst (`feed_connect_burst`) is spent; one more is "
        "refused (429, `rate_limited`, with `Retry-After`). A client reconnecting in a loop "
        "makes the service replay history for nothing.",
    )
    feed_connect_burst: int = Field(
        300,
        gt=0,
        description="Live-feed connections one token (or client address) may open at once: "
        "enough for every client sharing a token to come back together after a restart.",
    )
    feed_heartbeat_seconds: float = Field(
        15.0,
        gt=0,
        description="An idle live feed sends a `: ping` comment this often, so that proxies "
        "and clients keep it open.",
    )
    feed_batch_milliseconds: float = Field(
        5.0,
        ge=0,
        le=1000,
        description="The live feed wakes its clients at most this often: the epochs "
        "published meanwhile go in one send to each. Longer: less of the writer's time spent "
        "on many clients' sends, each event later.",
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info",
        description="Level of the service's own log (`debug` adds a line per epoch phase: "
        "committing, applying, applied). Secrets never appear in it.",
    )

    @field_validator("read_token", "write_token", "change_retention_epochs", "jobs", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("jobs")
    @classmethod
    def _jobs_the_pool_has(cls, value: int | None) -> int | None:
        """Polars sizes its pool once: a number it cannot have any more is refused here, at
        start-up, rather than run with another (`use_jobs`)."""
        if value is not None:
            use_jobs(value)
        return value

    def user_functors(self) -> FunctorLibrary | None:
        """The functors the service runs programs with (`functors`, then
        `functor_libraries`), loaded; None without either. Raises `FunctorLoadError`."""
        paths = [path for path in (self.functor_libraries or "").split(":") if path]
        if self.functors is None and not paths:
            return None
        module = None if self.functors is None else FunctorLibrary.python_module(self.functors)
        shared = FunctorLibrary.shared_libraries(paths) if paths else None
        return FunctorLibrary.merged(module, shared)

    @property
    def sqlalchemy_url(self) -> str:
        """The URL with the driver made explicit (psycopg 3 for PostgreSQL) and the password
        of `database_password` filled in."""
        url = self.database_url
        for prefix in ("postgresql://", "postgres://"):
            if url.startswith(prefix):
                url = "postgresql+psycopg://" + url[len(prefix) :]
        if self.database_password is None:
            return url
        parsed = make_url(url).set(password=self.database_password.get_secret_value())
        return parsed.render_as_string(hide_password=False)


STORE_SETTINGS = (
    "epoch_timeout_seconds",
    "epoch_memory_mb",
    "switching_parameter",
    "min_update_seconds",
    "write_group_max",
    "max_rules",
    "query_timeout_seconds",
    "query_max_rows",
    "change_retention_epochs",
    "bootstrap_engine",
)
"""The settings a named data store may set for itself when it is made (its budgets and its
evaluation); every other one is the server's. The default store has the server's own."""

StoreSettings: type[BaseModel] = create_model(  # the fields, bounds and texts of `Settings`
    "StoreSettings",
    __config__=ConfigDict(extra="forbid"),
    **{
        name: (Settings.model_fields[name].annotation, Settings.model_fields[name])
        for name in STORE_SETTINGS
    },  # type: ignore[call-overload]
)


def store_settings(settings: Settings, overrides: dict[str, object]) -> Settings:
    """The settings of a named store: the server's, with the `StoreSettings` it set. A store
    seeds no program (the server's `program` is the default store's)."""
    given = StoreSettings.model_validate(overrides)
    update = {name: getattr(given, name) for name in given.model_fields_set}
    return settings.model_copy(update={**update, "program": None})
