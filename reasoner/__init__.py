"""An elastic, incremental Datalog engine (see DESIGN.md).

Polars' allocator (jemalloc, configured by `_RJEM_MALLOC_CONF`) keeps the pages a frame
freed for ten seconds by default: after a bulk load the service held some 100 MB of them
beside its state. Unless the environment says otherwise, they go back to the system at once,
from a background thread (measured: no slower on a load of 3 M facts). This must be set
before Polars is first imported, which the engine's modules do. So must the size of its
thread pool, from `REASONER_JOBS` (`reasoner.support.jobs`).

NumPy's OpenBLAS starts a thread for every core but one when NumPy is imported, and they spin
while the process starts: 0.11 s of CPU in every `reasoner run` and server start, a third of a
small run's. Nothing here calls BLAS, so it gets one thread unless the environment says
otherwise; this too must come before NumPy's first import.
"""

import os
from typing import TYPE_CHECKING, Any

from reasoner.support.jobs import apply_requested_jobs

os.environ.setdefault(
    "_RJEM_MALLOC_CONF", "background_thread:true,dirty_decay_ms:0,muzzy_decay_ms:0"
)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
apply_requested_jobs()

if TYPE_CHECKING:
    from reasoner.analysis.dependencies import relation_reads
    from reasoner.analysis.model import RelationInfo
    from reasoner.analysis.negation_locals import is_internal
    from reasoner.elastic.changes import EpochChanges
    from reasoner.elastic.epoch import UNCHANGED, Delta, EpochReport
    from reasoner.elastic.group import GroupWrite, PreparedGroup, groupable
    from reasoner.elastic.program_text import RULES_FILENAME
    from reasoner.elastic.progress import BootstrapProgress, ProgressReport
    from reasoner.elastic.switch import (
        DEFAULT_MIN_UPDATE_SECONDS,
        DEFAULT_SWITCHING_PARAMETER,
        bulk_load,
    )
    from reasoner.executors.engines import (
        DEFAULT_SPARK_ITERATION,
        DEFAULT_SPARK_THRESHOLD,
        Engine,
    )
    from reasoner.executors.registry import EngineSettings
    from reasoner.io import export
    from reasoner.io.batch import FactBatch, frame_schema, parse_facts_batch
    from reasoner.io.facts import float_field, record_field
    from reasoner.materialization import Materialization
    from reasoner.reads.evaluator import Constants, QueryRelations, QueryTooLarge
    from reasoner.reads.pages import Row, RowOrder, relation_page
    from reasoner.reads.past_relations import PastRelation
    from reasoner.reads.proofs import Explainer, ExplainError
    from reasoner.reads.query import QueryResult, compile_query, evaluate_query
    from reasoner.support.allocations import charging_to
    from reasoner.support.deadline import BootstrapCancelled, Cancellation, QueryTimeout
    from reasoner.support.gc_pause import collector_paused
    from reasoner.support.jobs import JobsError, jobs_in_effect, requested_jobs, use_jobs
    from reasoner.support.polars_on_demand import pl
    from reasoner.support.process_memory import give_back_memory
    from reasoner.syntax.lexer import IDENT, Token, tokenize
    from reasoner.syntax.preprocess import preprocess
    from reasoner.values import floats
    from reasoner.values.functor_library import FunctorLibrary, FunctorLoadError
    from reasoner.values.records import (
        AdtType,
        RecordError,
        RecordTable,
        RecordType,
        ValueType,
        storage_type,
    )
    from reasoner.values.symbols import SymbolTable
    from reasoner.values.types import FLOAT, SYMBOL

_PUBLIC = {
    "Materialization": "reasoner.materialization",
    "Delta": "reasoner.elastic.epoch",
    "EpochReport": "reasoner.elastic.epoch",
    "GroupWrite": "reasoner.elastic.group",
    "PreparedGroup": "reasoner.elastic.group",
    "UNCHANGED": "reasoner.elastic.epoch",
    "groupable": "reasoner.elastic.group",
    "EngineSettings": "reasoner.executors.registry",
    "DEFAULT_SPARK_ITERATION": "reasoner.executors.engines",
    "DEFAULT_SPARK_THRESHOLD": "reasoner.executors.engines",
    "Engine": "reasoner.executors.engines",
    "Cancellation": "reasoner.support.deadline",
    "BootstrapCancelled": "reasoner.support.deadline",
    "RelationInfo": "reasoner.analysis.model",
    "relation_reads": "reasoner.analysis.dependencies",
    "is_internal": "reasoner.analysis.negation_locals",
    "bulk_load": "reasoner.elastic.switch",
    "DEFAULT_MIN_UPDATE_SECONDS": "reasoner.elastic.switch",
    "DEFAULT_SWITCHING_PARAMETER": "reasoner.elastic.switch",
    "EpochChanges": "reasoner.elastic.changes",
    "RULES_FILENAME": "reasoner.elastic.program_text",
    "BootstrapProgress": "reasoner.elastic.progress",
    "ProgressReport": "reasoner.elastic.progress",
    "FactBatch": "reasoner.io.batch",
    "frame_schema": "reasoner.io.batch",
    "parse_facts_batch": "reasoner.io.batch",
    "float_field": "reasoner.io.facts",
    "record_field": "reasoner.io.facts",
    "Row": "reasoner.reads.pages",
    "RowOrder": "reasoner.reads.pages",
    "relation_page": "reasoner.reads.pages",
    "PastRelation": "reasoner.reads.past_relations",
    "ExplainError": "reasoner.reads.proofs",
    "Explainer": "reasoner.reads.proofs",
    "Constants": "reasoner.reads.evaluator",
    "QueryRelations": "reasoner.reads.evaluator",
    "QueryResult": "reasoner.reads.query",
    "QueryTimeout": "reasoner.support.deadline",
    "QueryTooLarge": "reasoner.reads.evaluator",
    "compile_query": "reasoner.reads.query",
    "evaluate_query": "reasoner.reads.query",
    "charging_to": "reasoner.support.allocations",
    "collector_paused": "reasoner.support.gc_pause",
    "give_back_memory": "reasoner.support.process_memory",
    "JobsError": "reasoner.support.jobs",
    "jobs_in_effect": "reasoner.support.jobs",
    "requested_jobs": "reasoner.support.jobs",
    "use_jobs": "reasoner.support.jobs",
    "pl": "reasoner.support.polars_on_demand",
    "IDENT": "reasoner.syntax.lexer",
    "Token": "reasoner.syntax.lexer",
    "tokenize": "reasoner.syntax.lexer",
    "preprocess": "reasoner.syntax.preprocess",
    "AdtType": "reasoner.values.records",
    "RecordError": "reasoner.values.records",
    "RecordTable": "reasoner.values.records",
    "RecordType": "reasoner.values.records",
    "ValueType": "reasoner.values.records",
    "storage_type": "reasoner.values.records",
    "SymbolTable": "reasoner.values.symbols",
    "FunctorLibrary": "reasoner.values.functor_library",
    "FunctorLoadError": "reasoner.values.functor_library",
    "FLOAT": "reasoner.values.types",
    "SYMBOL": "reasoner.values.types",
}
"""The public API (`from reasoner import Materialization, Delta`): what the service, the
benchmarks and users import instead of the modules that hold it (an import-linter contract
keeps the service to it). Loaded on first use: `import reasoner` alone (the parser, the
command line's start) does not pay for Polars. Nor does a service that only starts: it names
Polars as `pl` from here too, which imports it at the first attribute read."""

_MODULES = {"floats": "reasoner.values.floats", "export": "reasoner.io.export"}
"""Modules of the public face: the float vocabulary (Soufflé's text of a float, JSON-safe
values) is a family of functions the service uses as one, and so is a relation's export in
columnar batches (a snapshot, then its frames)."""

__all__ = [
    "DEFAULT_MIN_UPDATE_SECONDS",
    "DEFAULT_SPARK_ITERATION",
    "DEFAULT_SPARK_THRESHOLD",
    "DEFAULT_SWITCHING_PARAMETER",
    "FLOAT",
    "IDENT",
    "RULES_FILENAME",
    "SYMBOL",
    "UNCHANGED",
    "AdtType",
    "BootstrapCancelled",
    "BootstrapProgress",
    "Cancellation",
    "Constants",
    "Delta",
    "Engine",
    "EngineSettings",
    "EpochChanges",
    "EpochReport",
    "ExplainError",
    "Explainer",
    "FactBatch",
    "FunctorLibrary",
    "FunctorLoadError",
    "GroupWrite",
    "JobsError",
    "Materialization",
    "PastRelation",
    "PreparedGroup",
    "ProgressReport",
    "QueryRelations",
    "QueryResult",
    "QueryTimeout",
    "QueryTooLarge",
    "RecordError",
    "RecordTable",
    "RecordType",
    "RelationInfo",
    "Row",
    "RowOrder",
    "SymbolTable",
    "Token",
    "ValueType",
    "bulk_load",
    "charging_to",
    "collector_paused",
    "compile_query",
    "evaluate_query",
    "export",
    "float_field",
    "floats",
    "frame_schema",
    "give_back_memory",
    "groupable",
    "is_internal",
    "jobs_in_effect",
    "parse_facts_batch",
    "pl",
    "preprocess",
    "record_field",
    "relation_page",
    "relation_reads",
    "requested_jobs",
    "storage_type",
    "tokenize",
    "use_jobs",
]


def __getattr__(name: str) -> Any:
    from importlib import import_module

    module = _MODULES.get(name)
    if module is not None:
        return import_module(module)
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'reasoner' has no attribute {name!r}")
    return getattr(import_module(module), name)
