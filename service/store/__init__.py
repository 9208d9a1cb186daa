"""Persistence: SQLAlchemy tables, migrations, and the repository the service writes through."""
