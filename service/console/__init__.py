"""The web console (`/console`): static pages whose script reads and writes through the
public API only, so that it shows nothing the API does not and serves as a reference client.

Layer: under `api` (the token gate leaves its files open), above `core`; it imports only the
vocabulary (`problems`). Used by the app, which mounts it unless the setting turns it off.
"""
