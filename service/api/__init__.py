"""The v1 routers, one module per resource."""
