"""Persistence: SQLAlchemy tables, migrations, and the repository the service writes through.

Layer: the bottom of the service: SQLAlchemy models, the repository, the fact logs and their
segments; it imports no other part of the service but the settings' vocabulary. Used by
`core`, `feed` and `api`.
"""
