"""The Alembic migrations build exactly the schema the models describe, on both databases,
and the service's API description is served."""

from __future__ import annotations

import hashlib
import json

from alembic import command
from alembic.config import Config

from reasoner.io.batch import FactBatch
from service.settings import Settings
from service.store.database import MIGRATIONS_DIR, create_database_engine, upgrade
from service.store.fact_log import read_facts
from service.store.repository import DeltaRecord, Store
from tests.service.conftest import READ_TOKEN, Databases, Server


def test_migrations_match_the_models(backend: str, databases: Databases) -> None:
    url = Settings(database_url=databases.new(backend)).sqlalchemy_url
    engine = create_database_engine(url)
    try:
        upgrade(engine, "0001")  # a database of the first release, holding an epoch
        with engine.begin() as connection:
            connection.exec_driver_sql(
                "INSERT INTO epochs (number, created_at, kind, status, facts_inserted, "
                "facts_retracted, rules_added, rules_removed) "
                "VALUES (0, CURRENT_TIMESTAMP, 'initial', 'applied', 0, 0, '[]', '[]')"
            )
        upgrade(engine)
        upgrade(engine)  # idempotent: a restart migrates again
        with engine.connect() as connection:
            row = connection.exec_driver_sql("SELECT number, engine FROM epochs").one()
        assert tuple(row) == (0, None)
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS_DIR))
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.check(config)  # raises if the models and the migrated schema differ
    finally:
        engine.dispose()


def test_facts_move_into_segments_and_back(backend: str, databases: Databases) -> None:
    """A database of facts as rows (revision 0003) keeps every fact through the upgrade to
    segments, and through the downgrade back to rows."""
    url = Settings(database_url=databases.new(backend)).sqlalchemy_url
    facts = {"e": {(1, "a"), (2, "é \x00")}, "flag": {()}}
    engine = create_database_engine(url)
    try:
        upgrade(engine, "0003")
        with engine.begin() as connection:
            for relation, rows in facts.items():
                for row in rows:
                    values = json.dumps(list(row), ensure_ascii=False, separators=(",", ":"))
                    connection.exec_driver_sql(
                        'INSERT INTO facts (relation, digest, "values") VALUES (%s, %s, %s)'
                        if backend == "postgresql"
                        else 'INSERT INTO facts (relation, digest, "values") VALUES (?, ?, ?)',
                        (relation, hashlib.md5(values.encode()).hexdigest(), values),
                    )
        upgrade(engine)
        with engine.connect() as connection:
            stored = read_facts(connection)
        assert {name: set(rows) for name, rows in stored.items()} == facts
        store = Store(url)  # a write after the upgrade: a small (JSON) segment
        try:
            store.commit_delta(
                DeltaRecord(
                    1,
                    1,
                    1,
                    inserts={"e": FactBatch.of_rows([(3, "c")], ("number", "symbol"))},
                    retracts={"e": FactBatch.of_rows([(1, "a")], ("number", "symbol"))},
                )
            )
        finally:
            store.close()
        facts["e"] = {(2, "é \x00"), (3, "c")}
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS_DIR))
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0003")
        with engine.connect() as connection:
            rows = connection.exec_driver_sql('SELECT relation, "values" FROM facts').all()
        assert {(r, tuple(json.loads(v))) for r, v in rows} == {
            (name, row) for name, rows in facts.items() for row in rows
        }
    finally:
        engine.dispose()


def test_openapi_documents_the_contract(server: Server) -> None:
    with server.client(READ_TOKEN) as client:  # the description is a read (service.api.security)
        assert client.get("/docs").status_code == 200
        schema = client.get("/openapi.json").raise_for_status().json()
    paths = schema["paths"]
    for path, verbs in {
        "/v1/deltas": {"post"},
        "/v1/rules": {"get", "post"},
        "/v1/rules/{rule_id}": {"delete"},
        "/v1/facts": {"post", "delete"},
        "/v1/relations/{name}/facts": {"post", "delete"},
        "/v1/relations": {"get"},
        "/v1/relations/{name}": {"get"},
        "/v1/query": {"post"},
        "/v1/epochs": {"get"},
        "/v1/epochs/{number}": {"get"},
        "/v1/changes": {"get"},
        "/health": {"get"},
        "/ready": {"get"},
        "/metrics": {"get"},
    }.items():
        assert verbs <= set(paths[path]), path
    assert {"ProblemOut", "ChangesOut", "ChangeGroup"} <= set(schema["components"]["schemas"])
    changes = paths["/v1/changes"]["get"]
    assert {"since", "relations", "limit", "cursor"} <= {p["name"] for p in changes["parameters"]}
    assert "410" in changes["responses"]
    assert "text/event-stream" in changes["responses"]["200"]["content"]
    relation = paths["/v1/relations/{name}"]["get"]
    assert "epoch" in {p["name"] for p in relation["parameters"]}
    rules_body = paths["/v1/rules"]["post"]["requestBody"]["content"]
    assert {"application/json", "text/plain"} <= set(rules_body)
