"""The HTTP service: a FastAPI application around one live materialization.

`service.app.create_app(settings)` builds the application, `service.server.serve(host, port)`
runs it (`reasoner serve`). See DESIGN.md, "Service contract (v1)".
"""
